//! The copy of a log that cannot be read twice (standard input, a pipe, a device), for the
//! commands that read a log twice or at offsets.
//!
//! The copy is a temporary file that has no name from the start (`tempfile`: `O_TMPFILE`, or
//! unlinked as soon as it is made) and is readable by its owner only: it is gone with the
//! process however that ends (SIGINT, SIGTERM, SIGKILL, a crash), and no one else reads the log
//! meanwhile. It is bounded: at most [`limits::SPOOL`] bytes (`BPFLOG_SPOOL_MAX` sets another
//! bound), and no line longer than a log's lines may be ([`MAX_LINE`]): `/dev/zero` is refused
//! after 16 MiB, not once the disk is full.

use crate::limits::{self, size};
use crate::{Failure, IO_BUFFER};
use bpflog::Growing;
use bpflog::log::{LineTooLong, MAX_LINE};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

// Each block read holds whole lines no longer than the longest allowed, but for its ends.
const _: () = assert!(IO_BUFFER <= MAX_LINE);

/// A private, nameless copy of `input` (called `display`) in the temporary directory.
pub(crate) fn spool(display: &Path, input: impl Read) -> Result<File, Failure> {
    let limit = limits::SPOOL.get()?;
    let dir = std::env::temp_dir();
    let mut file = private_file(display, &dir)?;
    copy(input, &mut file, limit, |_| ()).map_err(|e| Failure::at(display, e.say(&dir)))?;
    Ok(file)
}

/// A private, nameless copy of `input` (called `display`) in the temporary directory, made on a
/// thread of its own as `input` comes: the file, and how far it is written. Readers of the file
/// wait at its end for more ([`bpflog::Growing`]); a failed copy fails them with its message.
pub(crate) fn spool_as_it_comes(
    display: &Path,
    input: impl Read + Send + 'static,
) -> Result<(File, Arc<Growing>), Failure> {
    let limit = limits::SPOOL.get()?;
    let dir = std::env::temp_dir();
    let mut file = private_file(display, &dir)?;
    let reader = file.try_clone().map_err(|e| Failure::at(display, e))?;
    let growing = Arc::new(Growing::default());
    let told = growing.clone();
    std::thread::spawn(move || {
        let mut written = 0;
        let copied = copy(input, &mut file, limit, |n| {
            written += n as u64;
            told.grew(written);
        });
        told.done(copied.map_err(|e| io::Error::other(e.say(&dir))));
    });
    Ok((reader, growing))
}

/// A private (0600), nameless temporary file in `dir`, for a copy of the log called `display`.
fn private_file(display: &Path, dir: &Path) -> Result<File, Failure> {
    let made = tempfile::tempfile_in(dir).and_then(|file| {
        // Made with O_TMPFILE, it has the mode the umask leaves (0644 as a rule): the owner's
        // only, before the first byte is written.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    });
    made.map_err(|e| {
        Failure::at(
            display,
            format!(
                "cannot make a temporary file in {} to copy it to: {e}",
                dir.display()
            ),
        )
    })
}

/// Why a copy failed: reading (a message ready), or writing.
enum Copy {
    Read(String),
    Write(io::Error),
}

impl Copy {
    /// What to say of it, the copy being in `dir`.
    fn say(self, dir: &Path) -> String {
        match self {
            Copy::Read(message) => message,
            Copy::Write(e) => format!("copying it to a temporary file in {}: {e}", dir.display()),
        }
    }
}

/// Copies `input` to `out`, up to `limit` bytes and with no line longer than [`MAX_LINE`],
/// telling `wrote` the bytes of each block written.
fn copy(
    mut input: impl Read,
    out: &mut impl Write,
    limit: u64,
    mut wrote: impl FnMut(usize),
) -> Result<(), Copy> {
    let mut buf = vec![0; IO_BUFFER];
    // Bytes copied, line ends copied, and the bytes of the last line so far.
    let (mut total, mut lines, mut line) = (0u64, 0u64, 0usize);
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return out.flush().map_err(Copy::Write),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Copy::Read(e.to_string())),
        };
        let block = &buf[..n];
        // The lines between the first and the last line end of a block are shorter than it.
        let first = memchr::memchr(b'\n', block);
        if let Some(first) = first {
            if line + first <= MAX_LINE {
                let last = memchr::memrchr(b'\n', block).unwrap_or(first);
                lines += memchr::memchr_iter(b'\n', block).count() as u64;
                line = n - last - 1;
            } else {
                line += first;
            }
        } else {
            line += n;
        }
        if line > MAX_LINE {
            let e = LineTooLong { line: lines + 1 };
            return Err(Copy::Read(e.to_string()));
        }
        total += n as u64;
        if total > limit {
            return Err(Copy::Read(format!(
                "more than {} to copy to a temporary file (a log from a pipe or a device is \
                     copied to be read twice): save it to a file and name that, or raise \
                     {}",
                size(limit),
                limits::SPOOL.var.unwrap_or_default()
            )));
        }
        out.write_all(block).map_err(Copy::Write)?;
        wrote(n);
    }
}

/// A file read from its start at offsets of its own (`pread`): several readers of one open file
/// do not move each other.
pub(crate) struct FileAt {
    file: File,
    at: u64,
}

impl FileAt {
    /// `file` from its start.
    pub(crate) fn new(file: File) -> Self {
        FileAt { file, at: 0 }
    }
}

impl Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What copying `input` with `limit` gives: the bytes, or the error's message.
    fn copied(input: &[u8], limit: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut told = 0;
        let result = copy(input, &mut out, limit, |n| told += n);
        assert_eq!(told, out.len(), "the bytes written are told");
        match result {
            Ok(()) => Ok(out),
            Err(Copy::Read(m)) => Err(m),
            Err(Copy::Write(e)) => Err(e.to_string()),
        }
    }

    #[test]
    fn lines_up_to_the_longest_are_copied_whole_and_a_longer_one_is_refused_by_number() {
        let long = |len: usize, end: &[u8]| -> Vec<u8> {
            let mut input = b"a\nbb\n".to_vec();
            input.extend(std::iter::repeat_n(b'x', len));
            input.extend_from_slice(end);
            input
        };
        for input in [long(MAX_LINE, b"\nc\n"), long(MAX_LINE, b""), long(3, b"")] {
            assert!(copied(&input, u64::MAX) == Ok(input.clone()));
        }
        let refused = Err(LineTooLong { line: 3 }.to_string());
        assert_eq!(copied(&long(MAX_LINE + 1, b"\nc\n"), u64::MAX), refused);
        assert_eq!(copied(&long(MAX_LINE + 1, b""), u64::MAX), refused);
        // Many lines in a block, and lines across blocks, counted.
        let mut input = b"x\n".repeat(IO_BUFFER);
        input.extend(std::iter::repeat_n(b'y', MAX_LINE + 1));
        let refused = LineTooLong {
            line: IO_BUFFER as u64 + 1,
        }
        .to_string();
        assert_eq!(copied(&input, u64::MAX), Err(refused));
    }

    #[test]
    fn a_copy_stops_at_the_bound_and_a_failed_write_is_told_apart() {
        assert_eq!(copied(b"abc\n", 4), Ok(b"abc\n".to_vec()));
        let over = copied(b"abc\nd", 4).unwrap_err();
        assert!(over.starts_with("more than 4 bytes to copy"), "{over}");
        assert!(over.contains("BPFLOG_SPOOL_MAX"), "{over}");
        let mut full = [0u8; 2];
        let e = copy(&b"abc"[..], &mut &mut full[..], u64::MAX, |_| ());
        assert!(matches!(e, Err(Copy::Write(e)) if e.kind() == io::ErrorKind::WriteZero));
    }
}
