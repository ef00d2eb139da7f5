//! The files bpflog writes (`report -o`, `profile --flamegraph`, `man --dir`): never a file it
//! reads, and never half-written.
//!
//! An output that is an input is refused before anything is read or written: the same file by
//! device and inode, so also through a symlink or a hard link (`report OBJ LOG -o LOG` would
//! otherwise read an empty log, or replace the log with its report). Standard output is checked
//! the same way when it is a regular file: `annotate OBJ LOG >> LOG` would read its own output
//! without end.
//!
//! A file is written to a temporary file in the same directory ([`NewFile`]) and renamed onto
//! its name once complete: an error, or SIGINT, SIGTERM or SIGHUP, leaves the file as it was,
//! and the temporary file is removed (on a signal, by a thread that waits for them once the
//! first temporary file exists). What is not a regular file (`/dev/stdout`, a FIFO) is written
//! in place: there is nothing to rename onto.

use crate::Failure;
use std::fs::{self, File, Metadata};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, PoisonError};
use tempfile::NamedTempFile;

/// A file a command reads: what it is to the command ("the log", "the object") and its path
/// (`None`: standard input).
pub(crate) type Input<'a> = (&'a str, Option<&'a Path>);

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

/// Refuses to go on when an output (`None`: standard output) is one of the `inputs`.
pub(crate) fn refuse_overwrite(
    inputs: &[Input<'_>],
    outputs: &[Option<&Path>],
) -> Result<(), Failure> {
    let read: Vec<(Identity, &str, String)> = inputs
        .iter()
        .filter_map(|&(what, path)| {
            let (meta, name) = match path {
                Some(path) => (fs::metadata(path).ok()?, path.display().to_string()),
                None => (stdio_metadata(io::stdin().as_fd())?, "<stdin>".to_owned()),
            };
            Some((Identity::of(&meta)?, what, name))
        })
        .collect();
    for &output in outputs {
        let meta = match output {
            Some(path) => fs::metadata(path).ok(),
            None => stdio_metadata(io::stdout().as_fd()),
        };
        let Some(id) = meta.as_ref().and_then(Identity::of) else {
            continue;
        };
        if let Some((_, what, name)) = read.iter().find(|(i, ..)| *i == id) {
            let output = match output {
                Some(path) => format!("{}: the output is", path.display()),
                None => "standard output is".to_owned(),
            };
            return Err(Failure::Error(format!(
                "{output} the same file as {what} {name} (bpflog never writes over a file it reads)"
            )));
        }
    }
    Ok(())
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
    sink: Sink,
}

enum Sink {
    /// A temporary file to rename onto `target` (the path given, symlinks followed).
    Temp {
        file: NamedTempFile,
        target: PathBuf,
    },
    InPlace(File),
    /// Committed.
    Done,
}

impl NewFile {
    /// Starts writing the file at `path`. A temporary file is made in its directory (that
    /// directory must exist and be writable); an existing file's permissions pass to the new one.
    pub(crate) fn create(path: &Path) -> Result<NewFile, Failure> {
        let fail = |e: io::Error| Failure::at(path, e);
        // The permissions of an existing file, to give to the new one.
        let (target, permissions) = match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => return Err(Failure::at(path, "is a directory")),
            Ok(meta) if !meta.is_file() => {
                let file = File::options().write(true).open(path).map_err(fail)?;
                return Ok(NewFile {
                    path: path.to_owned(),
                    sink: Sink::InPlace(file),
                });
            }
            // Renamed onto the file a symlink names, not onto the symlink.
            Ok(meta) => (
                fs::canonicalize(path).map_err(fail)?,
                Some(meta.permissions()),
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (path.to_owned(), None),
            Err(e) => return Err(fail(e)),
        };
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
            // The target's mode from the start (never more open than the file it replaces), or
            // what File::create gives: the umask applies.
            .permissions((permissions.clone()).unwrap_or_else(|| fs::Permissions::from_mode(0o666)))
            .tempfile_in(dir)
            .map_err(|e| {
                // Without tempfile's note of the temporary file's name.
                let message = e.to_string();
                let message = message.split(" at path \"").next().unwrap_or_default();
                Failure::at(path, format!("cannot make a file beside it: {message}"))
            })?;
        if let Some(permissions) = permissions {
            file.as_file().set_permissions(permissions).map_err(fail)?;
        }
        pending.push(file.path().to_owned());
        Ok(NewFile {
            path: path.to_owned(),
            sink: Sink::Temp { file, target },
        })
    }

    /// The name given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the file written in place of the old one.
    pub(crate) fn commit(mut self) -> Result<(), Failure> {
        let sink = std::mem::replace(&mut self.sink, Sink::Done);
        match sink {
            Sink::Temp { file, target } => {
                let temp = file.path().to_owned();
                let persisted = file.persist(&target);
                forget(&temp);
                persisted
                    .map(drop)
                    .map_err(|e| Failure::at(&self.path, e.error))
            }
            Sink::InPlace(mut file) => file.flush().map_err(|e| Failure::at(&self.path, e)),
            Sink::Done => Ok(()),
        }
    }
}

impl Write for NewFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Temp { file, .. } => file.as_file_mut().write(data),
            Sink::InPlace(file) => file.write(data),
            Sink::Done => Ok(0),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Temp { file, .. } => file.as_file_mut().flush(),
            Sink::InPlace(file) => file.flush(),
            Sink::Done => Ok(()),
        }
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let Sink::Temp { file, .. } = std::mem::replace(&mut self.sink, Sink::Done) {
            let temp = file.path().to_owned();
            // Removed, then forgotten: a signal meanwhile removes it again, harmlessly.
            drop(file);
            forget(&temp);
        }
    }
}

/// The temporary files that exist, to remove on a signal.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Forgets a temporary file that is renamed or removed.
fn forget(temp: &Path) {
    let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
    pending.retain(|p| p != temp);
}

/// Removes the temporary files on SIGINT, SIGTERM and SIGHUP, then ends the process as the signal
/// would have.
fn watch_signals() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        // A signal ignored from the start (`nohup`, `&` in a script) stays ignored.
        let ignored = ignored_signals();
        let watched = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| ignored & (1 << (s - 1)) == 0);
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
