//! Whether a log is a verifier log at all.
//!
//! A user who hands bpflog an empty file, a capture where the loader printed no log, or another
//! tool's output wants to hear so: a profile or a report would be empty, and an annotation would
//! be nothing, or the text back unchanged, as if all were well. A log is a verifier log when one
//! of its lines is one the verifier prints (classified, inside whatever wraps it: the one loop,
//! `sink.rs`, places each line as every other reader does); a real log has one among its
//! first lines, so finding it costs next to nothing.
//!
//! The lines are read from a reader ([`no_verifier_log`], [`reads_like_a_log`]), told one at a
//! time ([`Sniffer::line`]), or found in the bytes some other reading passes by
//! ([`Sniffer::read`]); all go through the one loop and the same sink.

use crate::frame::Deframer;
use crate::sink::{Placed, Sink, deframe_line, read_into};
use bpflog_log::{HeldLines, Line, LineReader, Lines, classify};
use std::io::{self, Read};

/// Why a log is no verifier log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

/// The most bytes of a line [`Sniffer::read`] keeps while its end is not read yet: a line the
/// verifier prints is known by its start, and a line without end is not kept whole.
const LINE_KEPT: usize = 64 * 1024;

/// The lines of a log, told one at a time, until one is the verifier's.
#[derive(Debug, Default)]
pub struct Sniffer {
    deframer: Deframer,
    seen: SeenSoFar,
    /// The lines read so far ([`read_into`] counts them).
    line: u64,
    /// The start of a line whose end [`Sniffer::read`] has not had yet (at most [`LINE_KEPT`]
    /// bytes of it), and whether there is one.
    partial: Vec<u8>,
    pending: bool,
}

/// What the lines told so far were.
#[derive(Debug, Default)]
struct SeenSoFar {
    lines: u64,
    blank: u64,
    found: bool,
    /// The most lines to look at (`None`: all).
    limit: Option<u64>,
}

impl SeenSoFar {
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

impl Sink for SeenSoFar {
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
        !self.found && self.limit.is_none_or(|limit| self.lines < limit)
    }
}

impl Sniffer {
    /// One line (with or without its line end).
    pub fn line(&mut self, line: &[u8]) {
        if self.seen.found {
            return;
        }
        self.line += 1;
        // SeenSoFar's sink never fails.
        let _ = deframe_line(&mut self.deframer, line, self.line, &mut self.seen);
    }

    /// The next bytes of the input, as another reader reads them (`eof`: the input ends after
    /// them): their lines are told through the one loop, a line begun in bytes read before
    /// once its end is read.
    pub fn read(&mut self, bytes: &[u8], eof: bool) {
        if self.seen.found {
            return;
        }
        let mut lines = HeldLines::new(bytes, 0);
        if self.pending {
            // The line begun before: told once it ends here, kept on otherwise.
            let end = lines.next_line_span(false).ok().flatten();
            self.keep(&bytes[..end.map_or(bytes.len(), |(_, end)| end)]);
            if end.is_none() {
                // All of these bytes are the line's.
                if eof {
                    self.tell_partial();
                }
                return;
            }
            self.tell_partial();
        }
        // SeenSoFar's sink never fails.
        let _ = read_into(
            &mut lines,
            &mut self.deframer,
            &mut self.line,
            &mut self.seen,
        );
        let rest = usize::try_from(lines.offset()).map_or(&[][..], |at| &bytes[at..]);
        if !self.seen.found && !rest.is_empty() {
            self.keep(rest);
        }
        if eof && self.pending {
            self.tell_partial();
        }
    }

    /// Keeps `bytes` of a line whose end is not read yet, up to [`LINE_KEPT`] of the line.
    fn keep(&mut self, bytes: &[u8]) {
        let room = LINE_KEPT.saturating_sub(self.partial.len());
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.pending = true;
    }

    /// Tells the line kept, and forgets it.
    fn tell_partial(&mut self) {
        let line = std::mem::take(&mut self.partial);
        self.pending = false;
        self.line(&line);
        self.partial = line;
        self.partial.clear();
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
    sniff(log, None)
}

/// How much of a file [`reads_like_a_log`] looks at: its first 64 KiB, and 200 lines of them.
const HEAD_BYTES: usize = 64 * 1024;
const HEAD_LINES: u64 = 200;

/// Whether the start of `data` (a file given where something else was expected: an object)
/// reads like a log: one of its first 200 lines, in its first 64 KiB, is one the verifier
/// prints.
pub fn reads_like_a_log(data: &[u8]) -> bool {
    let head = &data[..data.len().min(HEAD_BYTES)];
    // Bytes in memory are read without failing.
    sniff(head, Some(HEAD_LINES)).is_ok_and(|not| not.is_none())
}

/// Why `log` is no verifier log, read from its start up to its first line of the verifier's or
/// its `limit`th line.
fn sniff(log: impl Read, limit: Option<u64>) -> io::Result<Option<NotALog>> {
    let mut lines = LineReader::with_capacity(64 * 1024, log);
    let mut sniffer = Sniffer::default();
    sniffer.seen.limit = limit;
    read_into(
        &mut lines,
        &mut sniffer.deframer,
        &mut sniffer.line,
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

    /// What [`Sniffer::read`] finds in `bytes` handed over `chunk` bytes at a time.
    fn read_in_chunks(bytes: &[u8], chunk: usize) -> Option<NotALog> {
        let mut sniffer = Sniffer::default();
        for part in bytes.chunks(chunk) {
            sniffer.read(part, false);
        }
        sniffer.read(&[], true);
        sniffer.verdict()
    }

    #[test]
    fn bytes_read_in_any_chunks_are_judged_as_the_file() {
        let cases: [&[u8]; 9] = [
            b"",
            b"\n \n\t",
            b"libbpf: loading\nlibbpf: failed\n",
            b"libbpf: loading\nlibbpf: failed",
            b"libbpf: x\n0: (b7) r0 = 0\n",
            b"processed 3 insns (limit 1000000) max_states_per_insn 0",
            b"\tfunc#0 @0\n",
            b"libbpf: prog 'p': -- BEGIN PROG LOAD LOG --\n0: R1=ctx() R10=fp0\n",
            b"\r\n\r\n",
        ];
        for bytes in cases {
            let file = no_verifier_log(bytes).unwrap();
            for chunk in [1, 2, 3, 7, 4096] {
                assert_eq!(read_in_chunks(bytes, chunk), file, "{chunk}: {bytes:?}");
            }
        }
        // A line longer than what is kept of it still counts as one line.
        let mut long = vec![b'x'; 10 * LINE_KEPT];
        assert_eq!(read_in_chunks(&long, 4096), Some(NotALog::Chatter(1)));
        long.extend_from_slice(b"\n0: (b7) r0 = 0\n");
        assert_eq!(read_in_chunks(&long, 4096), None);
    }

    #[test]
    fn the_head_of_a_file_reads_like_a_log_within_its_bounds() {
        assert!(reads_like_a_log(b"0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\n"));
        // Wrapped, as cilium/ebpf prints a rejection.
        assert!(reads_like_a_log(
            b"program p: load program: permission denied:\n\t0: (b7) r0 = 0\n"
        ));
        assert!(!reads_like_a_log(b"\x7fELF\x02\x01\x01\n"));
        // Past 200 lines, or past 64 KiB, it is not looked for.
        let mut late = b"x\n".repeat(200);
        late.extend_from_slice(b"0: (b7) r0 = 0\n");
        assert!(!reads_like_a_log(&late));
        let mut far = vec![b'x'; HEAD_BYTES];
        far.extend_from_slice(b"\n0: (b7) r0 = 0\n");
        assert!(!reads_like_a_log(&far));
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
