//! Finding and reading the C source files that debug info names, only where the user vouches.
//!
//! Debug info comes from whoever built the object, and it can name any file: `/etc/shadow`,
//! `/proc/self/environ`, `../../../../etc/passwd`. Shown as source, such a file would leak into
//! a terminal, a report page or a flame graph; read, `/proc/self/pagemap` never ends. So a file
//! is read only when its real path (symbolic links and `..` resolved) lies under a *root*: each
//! `--source-dir`, each `--source-map` target, and each of [`SourceSearch::roots`] (the CLI adds
//! the objects' directories and the current directory). A path the DWARF compilation directory
//! makes absolute counts only when it lies under a root too. Under `/proc`, `/sys` and `/dev`
//! nothing is read unless a root the user named (a `--source-dir`, a `--source-map` target) lies
//! inside them: a root of `/` does not open them, nor does an implied one inside them.
//! [`SourceSearch::any_source`] lifts the roots, not what follows. Only regular files are read,
//! at most [`SourceLimits::file`] bytes whatever `stat` says (a larger file is refused, not cut),
//! and no more than [`SourceLimits::total`] bytes are held over all files.
//!
//! The check is made on the file that is read, not only on its name: the real path is vetted,
//! opened without following a last symbolic link and without blocking (a FIFO would wait for a
//! writer), and the opened file must be a regular file that is still where it was vetted
//! (`/proc/self/fd`, or its device and inode). Files are cached by that identity, so one file
//! named many ways (`a//b`, `./a/b`, `a/../a/b`) is read once; a name that finds nothing is
//! remembered too. A refused file is recorded once in [`SourceSearch::refusals`] for the caller
//! to report (nothing here prints); like a missing file, it leaves the caller with the line text
//! stored in BTF.
//!
//! A file name from DWARF or BTF (`./prog.c`, `/build/bpf/prog.c`, `bpf/prog.c`) is looked for,
//! in order: rewritten by each `--source-map FROM=TO` whose FROM is a prefix of it; as it is
//! (absolute, or relative to the current directory); and under each `--source-dir`, first with
//! its relative path, then by its base name. The first candidate that may be read is.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The most bytes read of one source file (a C file of 64 MiB is not a source file).
pub const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// The most bytes of source text and line index held over all files.
pub const MAX_HELD_BYTES: u64 = 256 << 20;

/// Directories of the kernel's making, never read through a root above them.
const SYSTEM_DIRS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// How much is read: [`SourceLimits::default`] (`MAX_SOURCE_BYTES`, `MAX_HELD_BYTES`), then a
/// method per field that differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceLimits {
    /// The most bytes read of one file; a larger one is refused.
    pub file: u64,
    /// The most bytes (text and line index) held over all files; files past it are refused.
    pub total: u64,
}

setters!(SourceLimits {
    file: u64,
    total: u64,
});

impl Default for SourceLimits {
    fn default() -> Self {
        SourceLimits {
            file: MAX_SOURCE_BYTES,
            total: MAX_HELD_BYTES,
        }
    }
}

/// Where to look for source files, and which may be read: [`SourceSearch::default`], then a
/// method per field that differs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SourceSearch {
    /// Directories to search (`--source-dir`); each is a root.
    pub dirs: Vec<PathBuf>,
    /// Prefix rewrites `(from, to)` (`--source-map FROM=TO`), tried in order; each target is a
    /// root (TO itself when it is a directory or ends in `/`, else the directory it is in).
    pub maps: Vec<(String, String)>,
    /// Further directories whose files may be read, though not searched (the CLI's: each
    /// object's directory and the current directory).
    pub roots: Vec<PathBuf>,
    /// Read a file wherever it is (`--any-source`); it must still be a regular file within the
    /// limits.
    pub any_source: bool,
    /// How much is read.
    pub limits: SourceLimits,
    /// Where refused files are recorded; clones of a search share it, so a caller keeps one to
    /// read them after a run.
    pub refusals: SourceRefusals,
    /// The files read, shared the same way: a caller about to write a file asks whether it is
    /// one of them ([`SourcesRead::holds`]).
    pub read: SourcesRead,
}

setters!(SourceSearch {
    dirs: Vec<PathBuf>,
    maps: Vec<(String, String)>,
    roots: Vec<PathBuf>,
    any_source: bool,
    limits: SourceLimits,
    refusals: SourceRefusals,
    read: SourcesRead,
});

impl SourceSearch {
    /// `name` rewritten by each `--source-map FROM=TO` whose FROM is a prefix of it, in order.
    pub fn mapped<'a>(&'a self, name: &'a str) -> impl Iterator<Item = String> + 'a {
        (self.maps.iter()).filter_map(move |(from, to)| {
            Some(format!("{to}{}", name.strip_prefix(from.as_str())?))
        })
    }
}

/// The files a search read, by identity, shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct SourcesRead(Arc<Mutex<HashSet<FileId>>>);

impl SourcesRead {
    /// Whether the file at `path` (through links) is one of the files read.
    pub fn holds(&self, path: &Path) -> bool {
        let Ok(real) = std::fs::canonicalize(path) else {
            return false;
        };
        let Ok(meta) = std::fs::metadata(&real) else {
            return false;
        };
        let id = file_id(&meta, &real);
        (self.0.lock().unwrap_or_else(PoisonError::into_inner)).contains(&id)
    }

    fn add(&self, id: FileId) {
        (self.0.lock().unwrap_or_else(PoisonError::into_inner)).insert(id);
    }
}

/// Why a file that debug info leads to was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefusalReason {
    /// Its real path lies under no root.
    OutsideRoots,
    /// It lies under `/proc`, `/sys` or `/dev` (the one named), and no root inside it.
    SystemDir(&'static str),
    /// It is no regular file (a FIFO, a device, a socket).
    NotRegular,
    /// It holds more than the limit of one file.
    TooLarge {
        /// [`SourceLimits::file`].
        limit: u64,
    },
    /// Holding it would take the files read past the limit of all.
    OverTotal {
        /// [`SourceLimits::total`].
        limit: u64,
    },
}

impl fmt::Display for RefusalReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RefusalReason::OutsideRoots => f.write_str("outside the source roots"),
            RefusalReason::SystemDir(dir) => write!(f, "under {dir}"),
            RefusalReason::NotRegular => f.write_str("not a regular file"),
            RefusalReason::TooLarge { limit } => write!(f, "larger than {}", size(*limit)),
            RefusalReason::OverTotal { limit } => {
                write!(
                    f,
                    "the source files read would hold more than {}",
                    size(*limit)
                )
            }
        }
    }
}

/// `n` bytes, in MiB when whole.
fn size(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// A file not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SourceRefusal {
    /// The name debug info gives it.
    pub name: Vec<u8>,
    /// Its real path.
    pub path: PathBuf,
    /// Why it was not read.
    pub reason: RefusalReason,
}

/// The refusals of a search, shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct SourceRefusals(Arc<Mutex<Vec<SourceRefusal>>>);

impl SourceRefusals {
    /// The refusals recorded since the last call, in the order they were made.
    pub fn take(&self) -> Vec<SourceRefusal> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn push(&self, refusal: SourceRefusal) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(refusal);
    }
}

/// One source file, split into lines.
#[derive(Debug)]
pub struct SourceFile {
    /// Where it was found.
    pub path: PathBuf,
    bytes: Vec<u8>,
    /// Start of each line in `bytes`.
    starts: Vec<usize>,
}

impl SourceFile {
    /// A source file from its bytes.
    pub fn new(path: PathBuf, bytes: Vec<u8>) -> Self {
        let mut starts = Vec::with_capacity(line_count(&bytes));
        starts.push(0);
        starts.extend(
            memchr::memchr_iter(b'\n', &bytes)
                .map(|i| i + 1)
                .filter(|&i| i < bytes.len()),
        );
        SourceFile {
            path,
            bytes,
            starts,
        }
    }

    /// Line `n` (1-based) without its line terminator.
    pub fn line(&self, n: u32) -> Option<&[u8]> {
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        let start = *self.starts.get(i)?;
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        let line = self.bytes.get(start..end)?;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }

    /// Number of lines.
    pub fn line_count(&self) -> u32 {
        u32::try_from(self.starts.len()).unwrap_or(u32::MAX)
    }

    /// The bytes it holds: text and line index.
    fn held(&self) -> u64 {
        held(self.bytes.len(), self.starts.len())
    }
}

/// The lines of `bytes`: one more than its line ends, but for one that ends the last line.
fn line_count(bytes: &[u8]) -> usize {
    let ends = memchr::memchr_iter(b'\n', bytes).count();
    1 + ends - usize::from(bytes.last() == Some(&b'\n'))
}

/// The bytes a source file of `len` bytes and `lines` lines holds: its text and its line index
/// (a start a line), known before the index is built.
fn held(len: usize, lines: usize) -> u64 {
    let index = lines.saturating_mul(std::mem::size_of::<usize>());
    u64::try_from(len.saturating_add(index)).unwrap_or(u64::MAX)
}

/// What a real path led to.
#[derive(Debug, Clone)]
enum Outcome {
    Found(Arc<SourceFile>),
    Refused(RefusalReason),
    /// Not there, not a file, not readable, or changed while it was opened.
    Missing,
}

/// A file's identity: device and inode where there are such.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(not(unix))]
    Path(PathBuf),
}

/// Source files by the name debug info gives them, looked up once each.
#[derive(Debug, Default)]
pub struct SourceFiles {
    search: SourceSearch,
    /// The roots, real paths.
    roots: Vec<PathBuf>,
    /// Those the user named (`dirs`, `maps` targets): only they open `/proc`, `/sys`, `/dev`.
    named_roots: Vec<PathBuf>,
    by_name: HashMap<Vec<u8>, Option<Arc<SourceFile>>>,
    by_path: HashMap<PathBuf, Outcome>,
    by_id: HashMap<FileId, Arc<SourceFile>>,
    /// Real paths whose refusal is recorded.
    reported: HashSet<PathBuf>,
    /// Bytes held by the files read.
    held: u64,
}

impl SourceFiles {
    /// The search it makes (its [`SourceSearch::read`] says which files it read).
    pub fn search(&self) -> &SourceSearch {
        &self.search
    }

    /// A cache searching `search`; its roots are resolved now (those that are no directory are
    /// dropped).
    pub fn new(search: SourceSearch) -> Self {
        let real = |dirs: &mut dyn Iterator<Item = PathBuf>| -> Vec<PathBuf> {
            let mut real: Vec<PathBuf> = dirs
                .filter_map(|dir| std::fs::canonicalize(dir).ok())
                .filter(|dir| dir.is_dir())
                .collect();
            real.sort();
            real.dedup();
            real
        };
        let named = &mut (search.dirs.iter().cloned())
            .chain(search.maps.iter().map(|(_, to)| map_root(to)));
        let named_roots = real(named);
        let mut roots = real(&mut search.roots.iter().cloned());
        roots.extend(named_roots.iter().cloned());
        roots.sort();
        roots.dedup();
        SourceFiles {
            search,
            roots,
            named_roots,
            ..SourceFiles::default()
        }
    }

    /// The file debug info calls `name`, if it can be found and may be read.
    pub fn get(&mut self, name: &[u8]) -> Option<Arc<SourceFile>> {
        if let Some(found) = self.by_name.get(name) {
            return found.clone();
        }
        let mut found = None;
        let mut refused = None;
        for candidate in self.candidates(name) {
            let Ok(real) = std::fs::canonicalize(&candidate) else {
                continue;
            };
            let outcome = match self.by_path.get(&real) {
                Some(outcome) => outcome.clone(),
                None => {
                    let outcome = self.read(&candidate, &real);
                    self.by_path.insert(real.clone(), outcome.clone());
                    outcome
                }
            };
            match outcome {
                Outcome::Found(file) => {
                    found = Some(file);
                    break;
                }
                Outcome::Refused(reason) => {
                    refused.get_or_insert((real, reason));
                }
                Outcome::Missing => {}
            }
        }
        // A refusal matters only when nothing else was found, and is said once per file.
        if found.is_none()
            && let Some((path, reason)) = refused
            && self.reported.insert(path.clone())
        {
            self.search.refusals.push(SourceRefusal {
                name: name.to_vec(),
                path,
                reason,
            });
        }
        self.by_name.insert(name.to_vec(), found.clone());
        found
    }

    /// The paths tried for `name`, in order.
    pub fn candidates(&self, name: &[u8]) -> Vec<PathBuf> {
        let name = String::from_utf8_lossy(name);
        let mut out: Vec<PathBuf> = self.search.mapped(&name).map(PathBuf::from).collect();
        let path = Path::new(name.as_ref());
        out.push(path.to_path_buf());
        let relative = path.strip_prefix("/").unwrap_or(path);
        for dir in &self.search.dirs {
            out.push(dir.join(relative));
            if let Some(base) = path.file_name() {
                out.push(dir.join(base));
            }
        }
        out.dedup();
        out
    }

    /// Whether the file at real path `real` may be read.
    fn allowed(&self, real: &Path) -> Result<(), RefusalReason> {
        if self.search.any_source {
            return Ok(());
        }
        let system = SYSTEM_DIRS.iter().copied().find(|d| real.starts_with(d));
        let mut holding = self.roots.iter().filter(|root| real.starts_with(root));
        let mut named = self
            .named_roots
            .iter()
            .filter(|root| real.starts_with(root));
        match system {
            None if holding.next().is_some() => Ok(()),
            None => Err(RefusalReason::OutsideRoots),
            // An object read from /dev/stdin, or a current directory in /proc, vouches for
            // nothing there: only a root the user named inside it does.
            Some(dir) if named.any(|root| root.starts_with(dir)) => Ok(()),
            Some(dir) => Err(RefusalReason::SystemDir(dir)),
        }
    }

    /// Whether the file at real path `real` may be opened to read; what it leads to if not.
    fn vet(&self, real: &Path) -> Result<(), Outcome> {
        self.allowed(real).map_err(Outcome::Refused)?;
        // Nothing but a regular file is even opened (opening a device can do things).
        match std::fs::metadata(real) {
            Ok(meta) if meta.is_file() => Ok(()),
            Ok(meta) if meta.is_dir() => Err(Outcome::Missing),
            Ok(_) => Err(Outcome::Refused(RefusalReason::NotRegular)),
            Err(_) => Err(Outcome::Missing),
        }
    }

    /// The file [`get`](Self::get) reads for `name`, as found, without reading any: the first
    /// of its [`candidates`](Self::candidates) that may be read (one that proves past the
    /// limits when read leaves `get` to try the next).
    pub fn find(&self, name: &[u8]) -> Option<PathBuf> {
        self.candidates(name).into_iter().find(|candidate| {
            std::fs::canonicalize(candidate).is_ok_and(|real| self.vet(&real).is_ok())
        })
    }

    /// Vets, opens and reads the file at real path `real` (found as `shown`).
    fn read(&mut self, shown: &Path, real: &Path) -> Outcome {
        if let Err(outcome) = self.vet(real) {
            return outcome;
        }
        let Ok(file) = open_vetted(real) else {
            return Outcome::Missing;
        };
        let Ok(meta) = file.metadata() else {
            return Outcome::Missing;
        };
        // It may have changed since it was vetted: what counts is what was opened.
        if !meta.is_file() {
            return Outcome::Refused(RefusalReason::NotRegular);
        }
        if !self.opened_where_vetted(&file, &meta, real) {
            return Outcome::Missing;
        }
        let id = file_id(&meta, real);
        if let Some(found) = self.by_id.get(&id) {
            return Outcome::Found(found.clone());
        }
        let limits = self.search.limits;
        if meta.len() > limits.file {
            return Outcome::Refused(RefusalReason::TooLarge { limit: limits.file });
        }
        let room = limits.total.saturating_sub(self.held);
        let most = limits.file.min(room);
        // `stat` says nothing of files such as /proc's: one byte past what may be kept tells,
        // or an error at that point (/proc/self/pagemap refuses reads of less than 8 bytes).
        let (mut bytes, read) = read_at_most(&file, most, meta.len());
        let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if len > most || (read.is_err() && len == most) {
            return Outcome::Refused(if most == limits.file {
                RefusalReason::TooLarge { limit: limits.file }
            } else {
                RefusalReason::OverTotal {
                    limit: limits.total,
                }
            });
        }
        if read.is_err() {
            return Outcome::Missing;
        }
        // The line index counts too, and is known before it is built (a file of line ends
        // would make an index eight times its size).
        let held = held(bytes.len(), line_count(&bytes));
        if held > room {
            return Outcome::Refused(RefusalReason::OverTotal {
                limit: limits.total,
            });
        }
        bytes.shrink_to_fit();
        let source = SourceFile::new(shown.to_path_buf(), bytes);
        debug_assert_eq!(source.held(), held);
        self.held += held;
        let source = Arc::new(source);
        self.search.read.add(id.clone());
        self.by_id.insert(id, source.clone());
        Outcome::Found(source)
    }

    /// Whether `file`, opened at real path `real`, is the file that was vetted there: its own
    /// path (`/proc/self/fd`) may be read, or else it is what `real` names now.
    fn opened_where_vetted(&self, file: &File, meta: &std::fs::Metadata, real: &Path) -> bool {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let link = format!("/proc/self/fd/{}", file.as_raw_fd());
            if let Ok(opened) = std::fs::read_link(link) {
                return opened == real || self.allowed(&opened).is_ok();
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let _ = file;
            std::fs::metadata(real)
                .is_ok_and(|now| now.dev() == meta.dev() && now.ino() == meta.ino())
        }
        #[cfg(not(unix))]
        {
            let _ = (file, meta, real);
            true
        }
    }
}

/// Up to `most` bytes of `reader` and one more if there are (room made for `hint` first, but
/// never more than `most`: a size a file claims does not make memory), and how reading ended:
/// a reader whose size says nothing (`/dev/zero`, a FIFO, `/proc`'s files) is read one byte past
/// what may be kept, and no further.
pub fn read_at_most(reader: impl Read, most: u64, hint: u64) -> (Vec<u8>, io::Result<usize>) {
    let mut bytes = Vec::with_capacity(usize::try_from(hint.min(most)).unwrap_or(0));
    let read = reader.take(most.saturating_add(1)).read_to_end(&mut bytes);
    (bytes, read)
}

/// The root a `--source-map` target stands for: the directory it names, or the one it ends in.
fn map_root(to: &str) -> PathBuf {
    let path = Path::new(to);
    if to.is_empty() {
        return PathBuf::from(".");
    }
    if to.ends_with('/') || path.is_dir() {
        return path.to_path_buf();
    }
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Opens `path` to read, without following a last symbolic link or blocking on a FIFO.
fn open_vetted(path: &Path) -> io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// The identity of the file `meta` describes, found at real path `real`.
fn file_id(meta: &std::fs::Metadata, real: &Path) -> FileId {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let _ = real;
        FileId::Inode(meta.dev(), meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        FileId::Path(real.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_one_without_terminators() {
        let f = SourceFile::new("a.c".into(), b"int a;\r\nint b;\n\nlast".to_vec());
        assert_eq!(f.line(1), Some(&b"int a;"[..]));
        assert_eq!(f.line(2), Some(&b"int b;"[..]));
        assert_eq!(f.line(3), Some(&b""[..]));
        assert_eq!(f.line(4), Some(&b"last"[..]));
        assert_eq!(f.line(5), None);
        assert_eq!(f.line(0), None);
        assert_eq!(f.line_count(), 4);
    }

    #[test]
    fn maps_then_the_name_then_each_directory() {
        let files = SourceFiles::new(SourceSearch {
            dirs: vec!["/src".into()],
            maps: vec![("/build/".into(), "/home/me/".into())],
            ..SourceSearch::default()
        });
        let tried = files.candidates(b"/build/bpf/prog.c");
        let expected: Vec<PathBuf> = [
            "/home/me/bpf/prog.c",
            "/build/bpf/prog.c",
            "/src/build/bpf/prog.c",
            "/src/prog.c",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(tried, expected);
        // `/src/./prog.c` and `/src/prog.c` are one path: tried once.
        let tried = files.candidates(b"./prog.c");
        assert_eq!(
            tried,
            [PathBuf::from("./prog.c"), PathBuf::from("/src/prog.c")]
        );
    }

    #[test]
    fn devices_and_directories_are_not_sources() {
        let mut files = SourceFiles::new(SourceSearch {
            any_source: true,
            ..SourceSearch::default()
        });
        assert!(files.get(b"/dev/zero").is_none());
        assert!(files.get(b"/").is_none());
    }

    #[test]
    fn missing_files_are_remembered() {
        let mut files = SourceFiles::new(SourceSearch::default());
        assert!(files.get(b"/nonexistent/x.c").is_none());
        assert!(files.by_name.contains_key(&b"/nonexistent/x.c"[..]));
    }

    /// A fresh directory for one test (its real path), removed when the test ends, passed or
    /// failed.
    struct Scratch(PathBuf);

    impl std::ops::Deref for Scratch {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(test: &str) -> Scratch {
        let name = format!("bpflog-source-{}-{test}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(std::fs::canonicalize(dir).unwrap())
    }

    fn in_dir(dir: &Path) -> SourceSearch {
        SourceSearch {
            dirs: vec![dir.to_path_buf()],
            ..SourceSearch::default()
        }
    }

    fn name(path: &Path) -> Vec<u8> {
        path.as_os_str().as_encoded_bytes().to_vec()
    }

    #[test]
    fn one_file_named_many_ways_is_read_once() {
        let dir = scratch("many-names");
        std::fs::create_dir(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/b.c"), "int b;\n").unwrap();
        std::fs::hard_link(dir.join("a/b.c"), dir.join("a/hard.c")).unwrap();
        std::os::unix::fs::symlink("b.c", dir.join("a/soft.c")).unwrap();
        let mut files = SourceFiles::new(in_dir(&dir));
        let d = dir.display();
        let names = [
            format!("{d}/a/b.c"),
            format!("{d}//a//b.c"),
            format!("{d}/./a/b.c"),
            format!("{d}/a/../a/b.c"),
            // Relative: under the --source-dir.
            "./a/b.c".to_owned(),
            "a//b.c".to_owned(),
            format!("{d}/a/hard.c"),
            format!("{d}/a/soft.c"),
        ];
        let first = files.get(names[0].as_bytes()).unwrap();
        assert_eq!(first.line(1), Some(&b"int b;"[..]));
        for name in &names {
            let again = files.get(name.as_bytes()).unwrap();
            assert!(Arc::ptr_eq(&first, &again), "{name}");
        }
        assert_eq!(files.held, first.held(), "read once");
        assert!(files.search.refusals.take().is_empty());
    }

    #[test]
    fn find_names_the_file_get_reads_without_reading_it() {
        let dir = scratch("find");
        std::fs::write(dir.join("x.c"), "x\n").unwrap();
        let mut files = SourceFiles::new(in_dir(&dir));
        let found = files.find(b"./x.c");
        assert_eq!(found, Some(dir.join("x.c")));
        assert!(files.find(b"/etc/passwd").is_none(), "outside the roots");
        assert_eq!((files.held, files.search.refusals.take().len()), (0, 0));
        assert_eq!(files.get(b"./x.c").map(|f| f.path.clone()), found);
    }

    #[test]
    fn nothing_is_read_outside_the_roots() {
        let dir = scratch("outside");
        let (root, outside) = (dir.join("root"), dir.join("outside"));
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(root.join("ok.c"), "ok\n").unwrap();
        std::fs::write(outside.join("secret.c"), "secret\n").unwrap();
        std::os::unix::fs::symlink(outside.join("secret.c"), root.join("link.c")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("dirlink")).unwrap();
        let mut files = SourceFiles::new(in_dir(&root));
        assert!(files.get(&name(&root.join("ok.c"))).is_some());
        let secret = outside.join("secret.c");
        let names = [
            name(&secret),
            name(&root.join("../outside/secret.c")),
            name(&root.join("link.c")),
            name(&root.join("dirlink/secret.c")),
            b"link.c".to_vec(),
            b"dirlink/secret.c".to_vec(),
            b"../outside/secret.c".to_vec(),
        ];
        for n in &names {
            assert!(files.get(n).is_none(), "{}", String::from_utf8_lossy(n));
        }
        // One refusal for the one file, however it was named.
        let refusals = files.search.refusals.take();
        let expected = SourceRefusal {
            name: names[0].clone(),
            path: secret.clone(),
            reason: RefusalReason::OutsideRoots,
        };
        assert_eq!(refusals, [expected]);
        // Widened, it is read.
        let mut files = SourceFiles::new(SourceSearch {
            any_source: true,
            ..in_dir(&root)
        });
        let read = files.get(b"link.c").unwrap();
        assert_eq!(read.line(1), Some(&b"secret"[..]));
    }

    #[test]
    fn map_targets_are_roots() {
        let dir = scratch("maps");
        std::fs::write(dir.join("x.c"), "x\n").unwrap();
        std::fs::write(dir.join("reject_x.c"), "x\n").unwrap();
        // TO a directory, or the front of a name in one.
        for to in [
            format!("{}/", dir.display()),
            format!("{}/reject_", dir.display()),
        ] {
            let mut files = SourceFiles::new(SourceSearch {
                maps: vec![("reject_".to_owned(), to.clone())],
                ..SourceSearch::default()
            });
            assert!(files.get(b"reject_x.c").is_some(), "{to}");
        }
        // Without the map, the same file is not read.
        let mut files = SourceFiles::new(SourceSearch::default());
        assert!(files.get(&name(&dir.join("reject_x.c"))).is_none());
        assert_eq!(files.search.refusals.take().len(), 1);
    }

    #[test]
    fn proc_sys_and_dev_only_through_a_root_inside_them() {
        let dir = scratch("system");
        std::fs::write(dir.join("x.c"), "x\n").unwrap();
        let mut files = SourceFiles::new(SourceSearch {
            roots: vec!["/".into()],
            ..SourceSearch::default()
        });
        assert!(files.get(&name(&dir.join("x.c"))).is_some(), "under /");
        assert!(files.get(b"/proc/self/environ").is_none());
        assert!(files.get(b"/sys/kernel/uevent_seqnum").is_none());
        let reasons: Vec<RefusalReason> = files
            .search
            .refusals
            .take()
            .into_iter()
            .map(|r| r.reason)
            .collect();
        let mut expected = vec![RefusalReason::SystemDir("/proc")];
        if Path::new("/sys/kernel/uevent_seqnum").exists() {
            expected.push(RefusalReason::SystemDir("/sys"));
        }
        assert_eq!(reasons, expected);
        // A root the user named inside /proc opens it; one implied (an object's directory, the
        // current directory: an object read from /dev/stdin) does not.
        let mut files = SourceFiles::new(SourceSearch {
            roots: vec!["/proc/self".into(), "/dev".into()],
            ..SourceSearch::default()
        });
        assert!(files.get(b"/proc/self/environ").is_none());
        assert!(files.get(b"/dev/zero").is_none());
        let mut files = SourceFiles::new(SourceSearch {
            dirs: vec!["/proc/self".into()],
            ..SourceSearch::default()
        });
        assert!(files.get(b"/proc/self/environ").is_some());
    }

    #[test]
    fn a_file_past_the_limit_is_refused_not_cut() {
        let dir = scratch("limit");
        std::fs::write(dir.join("ten.c"), "123456789\n").unwrap();
        std::fs::write(dir.join("eleven.c"), "1234567890\n").unwrap();
        let limits = SourceLimits {
            file: 10,
            total: MAX_HELD_BYTES,
        };
        let mut files = SourceFiles::new(SourceSearch {
            limits,
            ..in_dir(&dir)
        });
        assert!(files.get(b"ten.c").is_some());
        assert!(files.get(b"eleven.c").is_none());
        let refusals = files.search.refusals.take();
        assert_eq!(refusals.len(), 1);
        assert_eq!(refusals[0].reason, RefusalReason::TooLarge { limit: 10 });
    }

    #[test]
    fn an_endless_file_is_read_up_to_the_limit() {
        // /proc/self/pagemap: 0 bytes by `stat`, endless by `read` (and no reads under 8 bytes).
        let limits = SourceLimits {
            file: 1 << 20,
            total: MAX_HELD_BYTES,
        };
        let mut files = SourceFiles::new(SourceSearch {
            any_source: true,
            limits,
            ..SourceSearch::default()
        });
        assert!(files.get(b"/proc/self/pagemap").is_none());
        let refusals = files.search.refusals.take();
        assert_eq!(refusals.len(), 1);
        assert_eq!(
            refusals[0].reason,
            RefusalReason::TooLarge { limit: 1 << 20 }
        );
        assert_eq!(files.held, 0);
    }

    /// An endless file that fails the test when read much past `limit` bytes.
    struct Endless {
        served: u64,
        limit: u64,
    }

    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            assert!(
                self.served <= self.limit,
                "read on past {} bytes",
                self.limit
            );
            buf.fill(b'x');
            self.served += buf.len() as u64;
            Ok(buf.len())
        }
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        let endless = Endless {
            served: 0,
            limit: 4 << 20,
        };
        let (bytes, read) = read_at_most(endless, 1 << 20, 0);
        assert_eq!(bytes.len(), (1 << 20) + 1);
        assert!(read.is_ok());
        let (bytes, _) = read_at_most(&b"short"[..], 1 << 20, u64::MAX);
        assert_eq!(bytes, b"short");
    }

    #[test]
    fn the_bytes_held_over_all_files_are_bounded() {
        let dir = scratch("total");
        std::fs::write(dir.join("a.c"), "a\n".repeat(50)).unwrap();
        std::fs::write(dir.join("b.c"), "b\n".repeat(50)).unwrap();
        let one = SourceFile::new("a.c".into(), "a\n".repeat(50).into_bytes()).held();
        let limits = SourceLimits {
            file: MAX_SOURCE_BYTES,
            total: one + one / 2,
        };
        let mut files = SourceFiles::new(SourceSearch {
            limits,
            ..in_dir(&dir)
        });
        assert!(files.get(b"a.c").is_some());
        assert!(files.get(b"b.c").is_none());
        let refusals = files.search.refusals.take();
        let limit = limits.total;
        assert_eq!(refusals.len(), 1);
        assert_eq!(refusals[0].reason, RefusalReason::OverTotal { limit });
        assert_eq!(files.held, one);
    }

    #[test]
    fn a_fifo_is_refused_and_opening_one_does_not_wait() {
        let dir = scratch("fifo");
        let fifo = dir.join("f.c");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let mut files = SourceFiles::new(in_dir(&dir));
        assert!(files.get(b"f.c").is_none());
        let refusals = files.search.refusals.take();
        assert_eq!(refusals.len(), 1);
        assert_eq!(refusals[0].reason, RefusalReason::NotRegular);
        // Swapped in after the check, a FIFO is opened without waiting for a writer, and then
        // refused for what it is.
        let (sent, received) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let opened = open_vetted(&path).and_then(|f| f.metadata());
            let _ = sent.send(opened.map(|m| m.is_file()));
        });
        let opened = received.recv_timeout(std::time::Duration::from_secs(10));
        assert!(matches!(opened, Ok(Ok(false))), "{opened:?}");
        // A symbolic link in the last place is not followed.
        std::os::unix::fs::symlink("f.c", dir.join("link.c")).unwrap();
        assert!(open_vetted(&dir.join("link.c")).is_err());
    }
}
