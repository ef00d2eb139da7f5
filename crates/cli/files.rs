//! The files bpflog writes (`report -o`, `profile --flamegraph`, `verify --log-dir`, `man
//! --dir`): never a file it reads, and never half-written.
//!
//! Whether an output is an input is decided in one place, [`refuse_overwrite`], for every
//! command: each passes every file it reads ([`InputFile`]: objects, logs, `--btf`, tables, the
//! files of a directory it reads logs from) and every file it writes ([`Output`]: standard
//! output when it is a regular file, `-o`, `--flamegraph`, the files of `--log-dir`), before
//! anything is read or written. The same file is the same device and inode, so also through a
//! symlink or a hard link (`report OBJ LOG -o LOG` would otherwise read an empty log, or replace
//! the log with its report; `annotate OBJ LOG >> LOG` would read its own output without end).
//! The source files a command may read are inputs too ([`InputFile::Sources`], through
//! [`refuse_over_sources`] once the programs are known and before anything is written: the
//! files the library's search would find, found without reading them); a source file is
//! refused again as an output file once the sources read are known ([`refuse_source`]).
//!
//! A file is written to a temporary file made anew in the same directory ([`NewFile`]) and
//! renamed onto its name once complete: an error, or any signal that ends the process, leaves
//! the file as it was, and the temporary file is removed (on a signal, by a thread that waits
//! for them once the first temporary file exists). [`NewFile::create`] writes the file a name
//! leads to (through symlinks, even one naming no file yet); [`NewFile::replace`] gives the
//! name itself a new file, whatever is there (`--log-dir`: a symlink or hard link planted there
//! is replaced, not written through). What is not a regular file (`/dev/stdout`, a FIFO) is
//! written in place by [`NewFile::create`]: there is nothing to rename onto.

use crate::Failure;
use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, PoisonError};
use tempfile::NamedTempFile;

/// A file a command reads.
#[derive(Clone, Copy)]
pub(crate) enum InputFile<'a> {
    /// What it is to the command ("the object", "the log", "the kernel's BTF", "the table") and
    /// its path (`None`: standard input).
    File(&'a str, Option<&'a Path>),
    /// Each file directly in a directory the command reads files from, what the directory is to
    /// it ("the --logs directory") and its path.
    Dir(&'a str, &'a Path),
    /// The source files the command may read, as [`bpflog::source_paths`] finds them: asked
    /// only when an output is a regular file.
    Sources(&'a dyn Fn() -> Vec<PathBuf>),
}

impl<'a> InputFile<'a> {
    /// The kernel's BTF `--btf` names, if any.
    pub(crate) fn btf(args: &'a crate::args::KernelBtfArgs) -> Option<InputFile<'a>> {
        args.btf
            .as_deref()
            .map(|path| InputFile::File("the kernel's BTF", Some(path)))
    }
}

/// A file a command writes.
#[derive(Clone, Copy)]
pub(crate) enum Output<'a> {
    /// Standard output.
    Stdout,
    /// A file written through its name ([`NewFile::create`]: `-o`, `--flamegraph`).
    File(&'a Path),
    /// A name given a new file ([`NewFile::replace`]: `--log-dir`): the file the name is now,
    /// not one a symlink there names.
    #[cfg_attr(
        not(feature = "load"),
        allow(dead_code, reason = "`verify --log-dir` only")
    )]
    Name(&'a Path),
}

/// Refuses to write `output` over a source file the command read (debug info may name any
/// file under the source roots, the output's directory among them).
pub(crate) fn refuse_source(output: &Path, read: &bpflog::SourcesRead) -> Result<(), Failure> {
    if read.holds(output) {
        return Err(Failure::at(
            output,
            "the output is a source file that was read (bpflog never writes over a file it reads)",
        ));
    }
    Ok(())
}

/// Refuses to write `outputs` over a source file the command may read (`reads`: whether it
/// reads any), [`bpflog::source_paths`] of `programs` through `search`, as [`refuse_overwrite`]
/// decides: once the programs are known, before anything is written.
pub(crate) fn refuse_over_sources(
    reads: bool,
    programs: &[bpflog::Program<'_, '_>],
    search: &bpflog::SourceSearch,
    outputs: &[Output<'_>],
) -> Result<(), Failure> {
    if !reads {
        return Ok(());
    }
    let paths = || bpflog::source_paths(programs, search);
    refuse_overwrite(&[InputFile::Sources(&paths)], outputs)
}

/// Whether an output is an input, for every command: refuses to go on when one of `outputs` is
/// the same file (device and inode: through a symlink or a hard link too) as one of `inputs`.
pub(crate) fn refuse_overwrite(
    inputs: &[InputFile<'_>],
    outputs: &[Output<'_>],
) -> Result<(), Failure> {
    // Each output that is a regular file, and how it is named; with none (a terminal, a pipe,
    // files not made yet) no input is looked at.
    let mut written: Vec<(Identity, String)> = Vec::new();
    for output in outputs {
        let meta = match *output {
            Output::Stdout => stdio_metadata(io::stdout().as_fd()),
            Output::File(path) => fs::metadata(path).ok(),
            Output::Name(path) => fs::symlink_metadata(path).ok(),
        };
        if let Some(id) = meta.as_ref().and_then(Identity::of) {
            let name = match *output {
                Output::File(path) | Output::Name(path) => {
                    format!("{}: the output is", path.display())
                }
                Output::Stdout => "standard output is".to_owned(),
            };
            written.push((id, name));
        }
    }
    if written.is_empty() {
        return Ok(());
    }
    // Each input's identity, and what it is said to be.
    let mut read: Vec<(Identity, String)> = Vec::new();
    for input in inputs {
        match *input {
            InputFile::File(what, path) => {
                let (meta, name) = match path {
                    Some(path) => (fs::metadata(path).ok(), path.display().to_string()),
                    None => (stdio_metadata(io::stdin().as_fd()), "<stdin>".to_owned()),
                };
                if let Some(id) = meta.as_ref().and_then(Identity::of) {
                    read.push((id, format!("{what} {name}")));
                }
            }
            InputFile::Dir(what, dir) => {
                for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
                    let path = entry.path();
                    if let Some(id) = fs::metadata(&path).ok().as_ref().and_then(Identity::of) {
                        read.push((id, format!("{} in {what}", path.display())));
                    }
                }
            }
            InputFile::Sources(paths) => {
                for path in paths() {
                    if let Some(id) = fs::metadata(&path).ok().as_ref().and_then(Identity::of) {
                        // Found by a name from debug info: quoted as input is (`a/./b` as
                        // `a/b`).
                        let path: PathBuf = path.components().collect();
                        let name = bpflog::object::excerpt(path.as_os_str().as_encoded_bytes());
                        read.push((id, format!("the source file {name}")));
                    }
                }
            }
        }
    }
    for (id, output) in &written {
        if let Some((_, input)) = read.iter().find(|(i, _)| i == id) {
            return Err(Failure::Error(format!(
                "{output} the same file as {input} (bpflog never writes over a file it reads)"
            )));
        }
    }
    Ok(())
}

/// Whether two paths are the same regular file (device and inode), symlinks followed.
#[cfg_attr(
    not(feature = "load"),
    allow(dead_code, reason = "`verify --log-dir` only")
)]
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    let id = |p: &Path| fs::metadata(p).ok().as_ref().and_then(Identity::of);
    id(a).is_some_and(|a| Some(a) == id(b))
}

/// Standard input's or output's file.
fn stdio_metadata(fd: std::os::fd::BorrowedFd<'_>) -> Option<Metadata> {
    File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
}

/// A regular file's device and inode (writing to anything else destroys no input).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Identity(u64, u64);

impl Identity {
    fn of(meta: &Metadata) -> Option<Identity> {
        meta.is_file().then(|| Identity(meta.dev(), meta.ino()))
    }
}

/// A file being written: in a temporary file beside it until [`commit`](NewFile::commit), or in
/// place when it is not a regular file. Dropped uncommitted, it leaves the file as it was.
pub(crate) struct NewFile {
    /// The name given, for messages.
    path: PathBuf,
    sink: NewFileWrite,
}

enum NewFileWrite {
    /// A temporary file to rename onto `target` (the file the name leads to, or the name).
    Temp {
        file: NamedTempFile,
        target: PathBuf,
    },
    InPlace(File),
    /// Committed.
    Done,
}

impl NewFile {
    /// Starts writing the file at `path`, through symlinks: the file a symlink names is
    /// replaced, or made when it does not exist yet. A temporary file is made in its directory
    /// (that directory must exist and be writable); an existing file's permissions pass to the
    /// new one. What is not a regular file (`/dev/stdout`, a FIFO) is written in place.
    pub(crate) fn create(path: &Path) -> Result<NewFile, Failure> {
        let fail = |e: io::Error| Failure::at(path, e);
        match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => Err(Failure::at(path, "is a directory")),
            Ok(meta) if !meta.is_file() => {
                let file = File::options().write(true).open(path).map_err(fail)?;
                Ok(NewFile {
                    path: path.to_owned(),
                    sink: NewFileWrite::InPlace(file),
                })
            }
            // Renamed onto the file a symlink names, not onto the symlink.
            Ok(meta) => {
                let target = fs::canonicalize(path).map_err(fail)?;
                NewFile::beside(path, target, Some(meta.permissions()))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                NewFile::beside(path, dangling_target(path).map_err(fail)?, None)
            }
            Err(e) => Err(fail(e)),
        }
    }

    /// Starts writing a new file to put at `path` itself: whatever is there (a file, a hard
    /// link to another, a symlink, a FIFO) is replaced by it, never written through. A
    /// directory there is an error.
    #[cfg_attr(
        not(feature = "load"),
        allow(dead_code, reason = "`verify --log-dir` only")
    )]
    pub(crate) fn replace(path: &Path) -> Result<NewFile, Failure> {
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => Err(Failure::at(path, "is a directory")),
            Ok(_) => NewFile::beside(path, path.to_owned(), None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                NewFile::beside(path, path.to_owned(), None)
            }
            Err(e) => Err(Failure::at(path, e)),
        }
    }

    /// A temporary file in `target`'s directory, to rename onto `target` (`path`: the name
    /// given), with `permissions` from the start, or what `File::create` gives (the umask
    /// applies). It is made anew (`O_CREAT | O_EXCL`): no link is followed and no existing file
    /// written.
    fn beside(
        path: &Path,
        target: PathBuf,
        permissions: Option<fs::Permissions>,
    ) -> Result<NewFile, Failure> {
        let dir = match target.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        watch_signals();
        let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
        use std::os::unix::fs::PermissionsExt;
        let file = tempfile::Builder::new()
            .prefix(".bpflog-")
            .suffix(".tmp")
            // The target's mode from the start (never more open than the file it replaces).
            .permissions((permissions.clone()).unwrap_or_else(|| fs::Permissions::from_mode(0o666)))
            .tempfile_in(dir)
            .map_err(|e| {
                // Without tempfile's note of the temporary file's name.
                let message = e.to_string();
                let message = message.split(" at path \"").next().unwrap_or_default();
                Failure::at(path, format!("cannot make a file beside it: {message}"))
            })?;
        if let Some(permissions) = permissions {
            file.as_file()
                .set_permissions(permissions)
                .map_err(|e| Failure::at(path, e))?;
        }
        pending.push(file.path().to_owned());
        Ok(NewFile {
            path: path.to_owned(),
            sink: NewFileWrite::Temp { file, target },
        })
    }

    /// The name given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the file written in place of the old one.
    pub(crate) fn commit(mut self) -> Result<(), Failure> {
        let sink = std::mem::replace(&mut self.sink, NewFileWrite::Done);
        match sink {
            NewFileWrite::Temp { file, target } => {
                let temp = file.path().to_owned();
                let persisted = file.persist(&target);
                forget(&temp);
                persisted
                    .map(drop)
                    .map_err(|e| Failure::at(&self.path, e.error))
            }
            NewFileWrite::InPlace(mut file) => file.flush().map_err(|e| Failure::at(&self.path, e)),
            NewFileWrite::Done => Ok(()),
        }
    }
}

impl Write for NewFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            NewFileWrite::Temp { file, .. } => file.as_file_mut().write(data),
            NewFileWrite::InPlace(file) => file.write(data),
            NewFileWrite::Done => Ok(0),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            NewFileWrite::Temp { file, .. } => file.as_file_mut().flush(),
            NewFileWrite::InPlace(file) => file.flush(),
            NewFileWrite::Done => Ok(()),
        }
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let NewFileWrite::Temp { file, .. } =
            std::mem::replace(&mut self.sink, NewFileWrite::Done)
        {
            let temp = file.path().to_owned();
            // Removed, then forgotten: a signal meanwhile removes it again, harmlessly.
            drop(file);
            forget(&temp);
        }
    }
}

/// Where a path that does not name an existing file is to be made: the path, or, when it is a
/// symlink (or a chain of them) naming no file, the path the last one names.
fn dangling_target(path: &Path) -> io::Result<PathBuf> {
    let mut at = path.to_owned();
    // Linux's own bound on the links followed in one path (ELOOP past it).
    for _ in 0..40 {
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) => dir.join(link),
                    None => link,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::from_raw_os_error(40))
}

/// The temporary files that exist, to remove on a signal.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Forgets a temporary file that is renamed or removed.
fn forget(temp: &Path) {
    let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
    pending.retain(|p| p != temp);
}

/// The signals whose default action ends the process, but for those a fault raises in the
/// thread that caused it (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS: the handler would
/// return to the faulting instruction) and the two no process can handle (SIGKILL, SIGSTOP);
/// SIGPIPE is ignored by every Rust program. The real-time signals are added where they are
/// watched.
const ENDING: [i32; 15] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGABRT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGTERM,
    libc::SIGSTKFLT,
    libc::SIGXCPU,
    libc::SIGXFSZ,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
];

/// Removes the temporary files on any signal that ends the process ([`ENDING`], and SIGRTMIN to
/// SIGRTMAX), then ends the process as the signal would have (with status 128 + the signal
/// where `signal_hook` cannot emulate its default action: SIGSTKFLT, SIGIO, SIGPWR, the
/// real-time signals).
fn watch_signals() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // A signal ignored from the start (`nohup`, `&` in a script) stays ignored.
        let ignored = ignored_signals();
        let watched = ENDING
            .into_iter()
            .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
            .filter(|&s| s < 65 && ignored & (1 << (s - 1)) == 0);
        let Ok(mut signals) = signal_hook::iterator::Signals::new(watched) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Held to the end: no temporary file is made meanwhile. (One being renamed into
                // place is either still there to remove, or the target already.)
                let pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
                for temp in pending.iter() {
                    let _ = fs::remove_file(temp);
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    });
}

/// The signals this process ignores, a bit each (bit `n - 1` for signal `n`), as Linux tells
/// them in `/proc/self/status`; none where it does not.
fn ignored_signals() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}
