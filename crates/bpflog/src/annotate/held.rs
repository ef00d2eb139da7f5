//! Lines an annotator holds back: those waiting to know whether the log carries the kernel's
//! annotation lines ([`Waiting`]), and those that may be the verifier's final error
//! ([`PendingErrors`]).

use super::LogLine;
use crate::plan::ExistingAnnotations;
use crate::style::{Palette, write_styled};
use std::io::{self, Write};

/// Lines held until it is known whether the log carries the kernel's annotation lines.
#[derive(Default)]
pub(super) struct Waiting {
    pub(super) bytes: Vec<u8>,
    /// Per line: its number, where its parts end in `bytes` (prefix, payload, newline,
    /// indent).
    pub(super) lines: Vec<(u64, [usize; 4])>,
    pub(super) instructions: usize,
    /// An annotation line without ` @ file:line` came.
    pub(super) old: bool,
}

impl Waiting {
    /// After this many instructions without an annotation line, the log has none...
    const INSTRUCTIONS: usize = 64;
    /// ...or after this many bytes.
    const BYTES: usize = 1 << 20;

    pub(super) fn push(&mut self, line: &LogLine<'_>, insn: bool) {
        let mut ends = [0; 4];
        for (k, part) in [line.prefix, line.payload, line.newline, line.indent]
            .into_iter()
            .enumerate()
        {
            self.bytes.extend_from_slice(part);
            ends[k] = self.bytes.len();
        }
        self.lines.push((line.line_no, ends));
        self.instructions += usize::from(insn);
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

    /// The held lines.
    pub(super) fn lines(&self) -> impl Iterator<Item = LogLine<'_>> {
        let mut start = 0;
        self.lines.iter().map(move |&(line_no, [p, l, nl, ind])| {
            let line = LogLine {
                line_no,
                text: &self.bytes[start..nl],
                prefix: &self.bytes[start..p],
                payload: &self.bytes[p..l],
                newline: &self.bytes[l..nl],
                indent: &self.bytes[nl..ind],
            };
            start = ind;
            line
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

    /// Writes the held lines, styled as errors when `is_error`.
    pub(super) fn flush(
        &mut self,
        out: &mut impl Write,
        p: &Palette,
        is_error: bool,
    ) -> io::Result<()> {
        for &(start, payload_start, payload_end, end, plain) in &self.lines {
            out.write_all(&self.bytes[start..payload_start])?;
            let payload = &self.bytes[payload_start..payload_end];
            if is_error && !plain {
                write_styled(out, p.error, payload)?;
            } else {
                out.write_all(payload)?;
            }
            out.write_all(&self.bytes[payload_end..end])?;
        }
        self.clear();
        Ok(())
    }
}
