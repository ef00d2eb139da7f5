//! Lines an annotator holds back: those waiting to know whether the log carries the kernel's
//! annotation lines ([`Waiting`]), and those that may be the verifier's final error
//! ([`PendingErrors`]).

use super::{AnnotateOptions, LogLine};
use crate::escape::write_log_lines;
use crate::plan::ExistingAnnotations;
use crate::style::{write_shown, write_styled};
use bpflog_log::Line;
use std::io::{self, Write};

/// Lines held until it is known whether the log carries the kernel's annotation lines, each
/// with its decoded kind, so that it is decoded once.
#[derive(Default)]
pub(super) struct Waiting {
    pub(super) bytes: Vec<u8>,
    /// Per line: its number, where its parts end in `bytes` (prefix, payload, newline,
    /// indent), and its kind with the parts it borrows left empty (see [`Line::map_parts`]):
    /// they are in `parts`, in order (`None`: not classified, or classified by another
    /// decoder, classified when it goes if it needs to be).
    lines: Vec<(u64, [usize; 4], Option<Line<'static>>)>,
    /// Where the parts of the lines' kinds are in `bytes`: start and length.
    parts: Vec<(usize, usize)>,
    pub(super) instructions: usize,
    /// An annotation line without ` @ file:line` came.
    pub(super) old: bool,
}

impl Waiting {
    /// After this many instructions without an annotation line, the log has none...
    const INSTRUCTIONS: usize = 64;
    /// ...or after this many bytes.
    const BYTES: usize = 1 << 20;

    /// Room made at the first line held, so that the buffers do not grow line by line: a
    /// level-2 log's first 64 instructions come with their states and backtracking lines, about
    /// 200 lines of 100 bytes.
    const FIRST_LINES: usize = 256;

    /// Holds `line`, whose payload decodes as `kind` (`None`: not classified).
    pub(super) fn push<'a>(&mut self, line: &LogLine<'a>, kind: Option<Line<'a>>) {
        if self.lines.capacity() == 0 {
            self.lines.reserve(Self::FIRST_LINES);
            self.parts.reserve(Self::FIRST_LINES);
            self.bytes.reserve(Self::FIRST_LINES * 100);
        }
        let mut ends = [0; 4];
        for (k, part) in [line.prefix, line.payload, line.newline, line.indent]
            .into_iter()
            .enumerate()
        {
            self.bytes.extend_from_slice(part);
            ends[k] = self.bytes.len();
        }
        self.instructions += usize::from(matches!(kind, Some(Line::Insn(_))));
        // Each part of the kind is a slice of the payload: its place there is its place in the
        // copy. (A part from elsewhere, which `classify` does not make, is decoded again.)
        let (payload, at, held) = (line.payload, ends[0], self.parts.len());
        let mut inside = true;
        let skeleton = kind.map(|kind| {
            kind.map_parts(|part| {
                let offset = part.as_ptr().addr().wrapping_sub(payload.as_ptr().addr());
                let within =
                    (offset.checked_add(part.len())).is_some_and(|end| end <= payload.len());
                inside &= within || part.is_empty();
                self.parts
                    .push((if within { at + offset } else { at }, part.len()));
                &[]
            })
        });
        let skeleton = if inside {
            skeleton
        } else {
            self.parts.truncate(held);
            None
        };
        self.lines.push((line.line_no, ends, skeleton));
    }

    /// What the lines held say, when nothing settled it.
    pub(super) fn verdict(&self) -> ExistingAnnotations {
        if self.old {
            ExistingAnnotations::Old
        } else {
            ExistingAnnotations::Absent
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.instructions >= Self::INSTRUCTIONS || self.bytes.len() >= Self::BYTES
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The held lines, each with its kind.
    pub(super) fn lines(&self) -> impl Iterator<Item = (LogLine<'_>, Option<Line<'_>>)> {
        let mut start = 0;
        let mut parts = self.parts.iter();
        self.lines
            .iter()
            .map(move |&(line_no, [p, l, nl, ind], kind)| {
                let line = LogLine {
                    line_no,
                    text: &self.bytes[start..nl],
                    prefix: &self.bytes[start..p],
                    payload: &self.bytes[p..l],
                    newline: &self.bytes[l..nl],
                    indent: &self.bytes[nl..ind],
                };
                start = ind;
                let kind = kind.map(|kind| {
                    kind.map_parts(|_| match parts.next() {
                        // Empty parts may lie anywhere (at 0 of the payload, a copy's, or none).
                        Some(&(_, 0)) | None => &[],
                        Some(&(at, len)) => &self.bytes[at..at + len],
                    })
                });
                (line, kind)
            })
    }
}

/// Lines that may be the verifier's final error, held back (bounded) until the log says.
#[derive(Default)]
pub(super) struct PendingErrors {
    pub(super) bytes: Vec<u8>,
    /// For each held line: where its prefix, payload and newline end inside `bytes`, and
    /// whether it is never an error (statistics).
    pub(super) lines: Vec<(usize, usize, usize, usize, bool)>,
    /// The input line number of each held line.
    line_nos: Vec<u64>,
}

impl PendingErrors {
    /// At most this many bytes are held; past it they are written plain.
    const LIMIT: usize = 64 * 1024;

    /// Holds a line; `false` when the buffer is full (the caller writes it plainly).
    pub(super) fn push(
        &mut self,
        line_no: u64,
        prefix: &[u8],
        payload: &[u8],
        newline: &[u8],
        plain: bool,
    ) -> bool {
        if self.bytes.len() + prefix.len() + payload.len() + newline.len() > Self::LIMIT {
            return false;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(prefix);
        let payload_start = self.bytes.len();
        self.bytes.extend_from_slice(payload);
        let payload_end = self.bytes.len();
        self.bytes.extend_from_slice(newline);
        self.lines
            .push((start, payload_start, payload_end, self.bytes.len(), plain));
        self.line_nos.push(line_no);
        true
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The held lines: number, payload, whether never an error.
    pub(super) fn held(&self) -> impl Iterator<Item = (u64, &[u8], bool)> {
        self.lines
            .iter()
            .zip(&self.line_nos)
            .map(|(&(_, ps, pe, _, plain), &n)| (n, &self.bytes[ps..pe], plain))
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.lines.clear();
        self.line_nos.clear();
    }

    /// Writes the held lines, styled as errors when `is_error`, escaped when the options say
    /// ([`AnnotateOptions::escape_log`]).
    pub(super) fn flush(
        &mut self,
        out: &mut impl Write,
        options: &AnnotateOptions,
        is_error: bool,
    ) -> io::Result<()> {
        let escape = options.escape_log;
        for &(start, payload_start, payload_end, end, plain) in &self.lines {
            write_log_lines(out, &self.bytes[start..payload_start], escape)?;
            let payload = &self.bytes[payload_start..payload_end];
            if is_error && !plain && escape {
                write_shown(out, options.palette.error, payload)?;
            } else if is_error && !plain {
                write_styled(out, options.palette.error, payload)?;
            } else {
                write_log_lines(out, payload, escape)?;
            }
            out.write_all(&self.bytes[payload_end..end])?;
        }
        self.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::{classify, split_newline};

    #[test]
    fn held_lines_come_back_with_the_kind_they_were_decoded_as() {
        // Every line of a log (wrapped in aya's prefix, so that the payload is not the line's
        // start) held while the buffer grows and moves: each comes back as it was, with the
        // kind its bytes decode as, borrowing them from the buffer.
        crate::testing::with_fixture("reject_global", "xdp_reject_global.l2", |_, log| {
            let mut waiting = Waiting::default();
            let mut held = Vec::new();
            for (n, text) in log.split_inclusive(|&b| b == b'\n').enumerate() {
                let (payload, newline) = split_newline(text);
                let wrapped = [b"[INFO aya] ", text].concat();
                let line = LogLine {
                    line_no: n as u64 + 1,
                    text: &wrapped,
                    prefix: b"[INFO aya] ",
                    payload,
                    newline,
                    indent: b"  ",
                };
                waiting.push(&line, Some(classify(payload)));
                held.push((wrapped, payload));
            }
            let (mut lines, mut decoded) = (0, 0);
            for ((line, kind), (wrapped, payload)) in waiting.lines().zip(&held) {
                assert_eq!((line.prefix, line.payload), (&b"[INFO aya] "[..], *payload));
                assert_eq!(
                    [line.text, line.indent].concat(),
                    [&wrapped[..], b"  "].concat()
                );
                assert_eq!(kind, Some(classify(line.payload)));
                let bytes = waiting.bytes.as_ptr_range();
                kind.unwrap().map_parts(|p| {
                    assert!(p.is_empty() || bytes.contains(&p.as_ptr()), "{kind:?}");
                    decoded += usize::from(!p.is_empty());
                    p
                });
                lines += 1;
            }
            assert_eq!(lines, held.len());
            assert!(lines > 100 && decoded > 50, "{lines} {decoded}");
        });
    }

    #[test]
    fn a_kind_that_borrows_from_elsewhere_is_decoded_again() {
        // Not what `classify` makes, but what a caller could hand over: a part outside the
        // payload is not taken for one of its slices (it goes back as `None`, to be decoded);
        // an empty part may lie anywhere.
        let mut waiting = Waiting::default();
        let text = b"Validating f() func#1...\n";
        let line = LogLine::bare(1, text, split_newline(text));
        let elsewhere = Line::Validating {
            func: 1,
            name: b"f",
        };
        waiting.push(&line, Some(elsewhere));
        let empty = Line::Validating { func: 1, name: &[] };
        waiting.push(&line, Some(empty));
        let kinds: Vec<_> = waiting.lines().map(|(_, kind)| kind).collect();
        assert_eq!(kinds, [None, Some(empty)]);
    }
}
