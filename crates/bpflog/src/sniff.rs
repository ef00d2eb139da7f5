//! Whether a log is a verifier log at all.
//!
//! A user who hands bpflog an empty file, a capture where the loader printed no log, or another
//! tool's output wants to hear so: a profile or a report would be empty, and an annotation would
//! be nothing, or the text back unchanged, as if all were well. A log is a verifier log when one
//! of its lines is one the verifier prints (classified, inside whatever wraps it: the one loop,
//! `sink.rs`, places each line as every other reader does); a real log has one among its
//! first lines, so finding it costs next to nothing.
//!
//! The lines are told either from a reader ([`no_verifier_log`]) or one at a time as some other
//! reading passes them by ([`Sniffer::line`]); both go through the same sink.

use crate::frame::Deframer;
use crate::sink::{Placed, Sink, deframe_line, read_into};
use bpflog_log::{Line, LineReader, classify};
use std::io::{self, Read};

/// Why a log is no verifier log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotALog {
    /// No bytes at all.
    Empty,
    /// Only this many blank lines.
    Blank(u64),
    /// This many lines, none of them the verifier's: loader chatter, another tool's output.
    Chatter(u64),
}

impl NotALog {
    /// Empty or blank: nothing at all to show.
    pub fn is_blank(self) -> bool {
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
pub struct Sniffer {
    deframer: Deframer,
    seen: Seen,
}

/// What the lines told so far were.
#[derive(Debug, Default)]
struct Seen {
    lines: u64,
    blank: u64,
    found: bool,
}

impl Seen {
    /// A line whose part to look at is `text` (the kernel's part in a log, else the line).
    fn line(&mut self, text: &[u8], in_log: bool) {
        self.lines += 1;
        if text.iter().all(u8::is_ascii_whitespace) {
            self.blank += 1;
        } else if in_log {
            self.found = !matches!(classify(text), Line::Blank | Line::Other);
        }
    }
}

impl Sink for Seen {
    type Error = io::Error;

    fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
        self.line(line.payload, true);
        Ok(())
    }

    fn outside(&mut self, line: &Placed<'_>) -> io::Result<()> {
        self.line(line.payload, false);
        Ok(())
    }

    fn wants_more(&self) -> bool {
        !self.found
    }
}

impl Sniffer {
    /// One line (with or without its line end).
    pub fn line(&mut self, line: &[u8]) {
        if self.seen.found {
            return;
        }
        let n = self.seen.lines + 1;
        // Seen's sink never fails.
        let _ = deframe_line(&mut self.deframer, line, n, &mut self.seen);
    }

    /// Whether a line told was the verifier's.
    pub fn found(&self) -> bool {
        self.seen.found
    }

    /// Whether every line told so far is blank (none at all included).
    pub fn blank_so_far(&self) -> bool {
        !self.seen.found && self.seen.lines == self.seen.blank
    }

    /// Why the lines told are no verifier log; `None` when one was the verifier's.
    pub fn verdict(&self) -> Option<NotALog> {
        match (self.seen.found, self.seen.lines, self.seen.blank) {
            (true, _, _) => None,
            (false, 0, _) => Some(NotALog::Empty),
            (false, n, b) if n == b => Some(NotALog::Blank(n)),
            (false, n, _) => Some(NotALog::Chatter(n)),
        }
    }
}

/// Why `log` is no verifier log, read from its start up to its first line of the verifier's;
/// `None` when it is one.
pub fn no_verifier_log(log: impl Read) -> io::Result<Option<NotALog>> {
    let mut lines = LineReader::with_capacity(64 * 1024, log);
    let mut sniffer = Sniffer::default();
    let mut line = 0;
    read_into(
        &mut lines,
        &mut sniffer.deframer,
        &mut line,
        &mut sniffer.seen,
    )?;
    Ok(sniffer.verdict())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_told_and_a_file_read_are_judged_alike() {
        let cases: [(&[u8], Option<NotALog>); 8] = [
            (b"", Some(NotALog::Empty)),
            (b"\n \n\t", Some(NotALog::Blank(3))),
            (
                b"libbpf: loading\nlibbpf: failed\n",
                Some(NotALog::Chatter(2)),
            ),
            (b"libbpf: x\n0: (b7) r0 = 0\n", None),
            (
                b"processed 3 insns (limit 1000000) max_states_per_insn 0",
                None,
            ),
            (b"\tfunc#0 @0\n", Some(NotALog::Chatter(1))),
            // Wrapped as test_progs prints a log: the kernel's part is what counts.
            (
                b"libbpf: prog 'p': -- BEGIN PROG LOAD LOG --\n0: R1=ctx() R10=fp0\n",
                None,
            ),
            (b"\r\n\r\n", Some(NotALog::Blank(2))),
        ];
        for (bytes, expected) in cases {
            let what = String::from_utf8_lossy(bytes);
            assert_eq!(no_verifier_log(bytes).unwrap(), expected, "{what}");
            let mut sniffer = Sniffer::default();
            bytes
                .split_inclusive(|&b| b == b'\n')
                .for_each(|l| sniffer.line(l));
            assert_eq!(sniffer.verdict(), expected, "told: {what}");
        }
    }

    #[test]
    fn lines_after_the_first_of_the_verifier_are_not_looked_at() {
        let mut bytes = b"0: (b7) r0 = 0\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 1 << 20));
        let mut sniffer = Sniffer::default();
        sniffer.line(&bytes[..15]);
        assert!(sniffer.found());
        // Lines told after the first of the verifier's are not looked at.
        sniffer.line(b"\n");
        assert!(!sniffer.blank_so_far());
        assert_eq!(no_verifier_log(&bytes[..]).unwrap(), None);
    }
}
