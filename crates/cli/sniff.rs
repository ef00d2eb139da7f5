//! Whether a log is a verifier log at all.
//!
//! A user who hands bpflog an empty file, a capture where the loader printed no log, or another
//! tool's output wants to hear so: `profile` and `report` would show an empty result, and
//! `annotate` would write nothing, or the text back unchanged, as if all were well. A log is a
//! verifier log when one of its lines is one the verifier prints ([`bpflog::log::classify`],
//! inside whatever wraps it: [`bpflog::frame::Deframer`]); a real log has one among its first
//! lines, so finding it costs next to nothing.

use crate::Failure;
use bpflog::frame::Deframer;
use bpflog::log::{Line, LineReader, classify, split_newline};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Why a log is no verifier log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotALog {
    /// No bytes at all.
    Empty,
    /// Only this many blank lines.
    Blank(u64),
    /// This many lines, none of them the verifier's: loader chatter, another tool's output.
    Chatter(u64),
}

impl NotALog {
    /// Empty or blank: nothing at all to show.
    pub(crate) fn is_blank(self) -> bool {
        matches!(self, NotALog::Empty | NotALog::Blank(_))
    }
}

impl std::fmt::Display for NotALog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotALog::Empty => write!(f, "no verifier log in it (empty)"),
            NotALog::Blank(n) => write!(f, "no verifier log in it ({n} blank lines)"),
            NotALog::Chatter(n) => write!(
                f,
                "no verifier log in it (none of its {n} lines is one the verifier prints)"
            ),
        }
    }
}

/// The lines of a log, told one at a time, until one is the verifier's.
#[derive(Debug, Default)]
pub(crate) struct Sniffer {
    deframer: Deframer,
    lines: u64,
    blank: u64,
    found: bool,
}

impl Sniffer {
    /// One line (without its line end).
    fn line(&mut self, content: &[u8]) {
        if self.found {
            return;
        }
        self.lines += 1;
        if content.iter().all(u8::is_ascii_whitespace) {
            self.blank += 1;
            return;
        }
        let step = self.deframer.step(content);
        let kernel = step.prefix.and_then(|p| content.get(p..));
        self.found = kernel.is_some_and(|k| !matches!(classify(k), Line::Blank | Line::Other));
    }

    /// Whether every line told so far is blank (none at all included).
    pub(crate) fn blank_so_far(&self) -> bool {
        !self.found && self.lines == self.blank
    }

    /// Why the lines told are no verifier log; `None` when one was the verifier's.
    pub(crate) fn verdict(&self) -> Option<NotALog> {
        match (self.found, self.lines, self.blank) {
            (true, _, _) => None,
            (false, 0, _) => Some(NotALog::Empty),
            (false, n, b) if n == b => Some(NotALog::Blank(n)),
            (false, n, _) => Some(NotALog::Chatter(n)),
        }
    }
}

/// Why `log` (called `display`) is no verifier log, read from its start up to its first line of
/// the verifier's.
pub(crate) fn no_verifier_log(log: impl Read, display: &Path) -> Result<Option<NotALog>, Failure> {
    let mut lines = LineReader::with_capacity(64 * 1024, log);
    let mut sniffer = Sniffer::default();
    while !sniffer.found
        && let Some(line) = lines.next_line().map_err(|e| Failure::at(display, e))?
    {
        sniffer.line(split_newline(line).0);
    }
    Ok(sniffer.verdict())
}

/// The regular file at `path`, opened again (`None` for standard input, a pipe, a device: what
/// cannot be read twice).
pub(crate) fn reopen_file(path: Option<&Path>) -> Option<File> {
    let file = File::open(path?).ok()?;
    file.metadata().is_ok_and(|m| m.is_file()).then_some(file)
}

/// The most bytes of one line told to the sniffer: a line the verifier prints is known by its
/// start, and a line without end is not kept whole.
const LINE_MAX: usize = 64 * 1024;

/// A reader that tells the lines read through it to a [`Sniffer`] (shared: the reading may
/// happen on another thread), until one is the verifier's; from then on it only reads.
pub(crate) struct Sniffing<R> {
    inner: R,
    sniffer: Arc<Mutex<Sniffer>>,
    /// The start of a line whose end is not read yet, and whether there is one.
    partial: Vec<u8>,
    pending: bool,
    done: bool,
}

impl<R: Read> Sniffing<R> {
    /// `inner`, its lines told to `sniffer`.
    pub(crate) fn new(inner: R, sniffer: Arc<Mutex<Sniffer>>) -> Self {
        Sniffing {
            inner,
            sniffer,
            partial: Vec::new(),
            pending: false,
            done: false,
        }
    }

    fn tell(&mut self, mut bytes: &[u8], eof: bool) {
        let Ok(mut sniffer) = self.sniffer.lock() else {
            self.done = true;
            return;
        };
        while let Some(end) = line_end(bytes) {
            if self.pending {
                let room = LINE_MAX.saturating_sub(self.partial.len());
                self.partial.extend_from_slice(&bytes[..end.min(room)]);
                sniffer.line(&self.partial);
                self.partial.clear();
                self.pending = false;
            } else {
                sniffer.line(&bytes[..end.min(LINE_MAX)]);
            }
            bytes = &bytes[end + 1..];
            if sniffer.found {
                self.done = true;
                return;
            }
        }
        if !bytes.is_empty() {
            let room = LINE_MAX.saturating_sub(self.partial.len());
            self.partial
                .extend_from_slice(&bytes[..bytes.len().min(room)]);
            self.pending = true;
        }
        if eof {
            if self.pending {
                sniffer.line(&self.partial);
            }
            self.done = true;
        }
    }
}

/// Where the next line end is.
fn line_end(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

impl<R: Read> Read for Sniffing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.done {
            self.tell(&buf[..n], n == 0);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sniffing reader finds in `bytes`, read `chunk` bytes at a time.
    fn sniffed(bytes: &[u8], chunk: usize) -> Option<NotALog> {
        let sniffer = Arc::new(Mutex::new(Sniffer::default()));
        let mut reader = Sniffing::new(bytes, sniffer.clone());
        let mut buf = vec![0; chunk];
        while reader.read(&mut buf).unwrap() > 0 {}
        sniffer.lock().unwrap().verdict()
    }

    #[test]
    fn the_reader_finds_what_the_file_scan_finds() {
        let cases: [(&[u8], Option<NotALog>); 7] = [
            (b"", Some(NotALog::Empty)),
            (b"\n \n\t", Some(NotALog::Blank(3))),
            (
                b"libbpf: loading\nlibbpf: failed\n",
                Some(NotALog::Chatter(2)),
            ),
            (
                b"libbpf: loading\nlibbpf: failed",
                Some(NotALog::Chatter(2)),
            ),
            (b"libbpf: x\n0: (b7) r0 = 0\n", None),
            (
                b"processed 3 insns (limit 1000000) max_states_per_insn 0",
                None,
            ),
            (b"\tfunc#0 @0\n", Some(NotALog::Chatter(1))),
        ];
        for (bytes, expected) in cases {
            let path = std::env::temp_dir().join(format!("bpflog-sniff-{}", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            let scanned = no_verifier_log(File::open(&path).unwrap(), &path)
                .ok()
                .flatten();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(scanned, expected, "{}", String::from_utf8_lossy(bytes));
            for chunk in [1, 2, 3, 7, 4096] {
                assert_eq!(sniffed(bytes, chunk), expected, "{chunk}: {bytes:?}");
            }
        }
    }

    #[test]
    fn a_line_without_end_is_not_kept_whole() {
        let mut bytes = vec![b'x'; 10 * LINE_MAX];
        bytes.extend_from_slice(b"\n0: (b7) r0 = 0\n");
        assert_eq!(sniffed(&bytes, 4096), None);
        bytes.truncate(10 * LINE_MAX);
        assert_eq!(sniffed(&bytes, 4096), Some(NotALog::Chatter(1)));
    }
}
