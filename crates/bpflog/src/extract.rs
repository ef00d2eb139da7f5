//! [`Extract`]: the logs of a file without what surrounds them, for the tools that take one log.

use crate::frame::{Deframer, SegmentStart};
use crate::sink::{Placed, Sink, read_into};
use bpflog_log::LineReader;
use std::io::{self, Read};

/// The logs of a file without what surrounds them: the kernel's lines of the chosen logs (their
/// wrappers' prefixes removed), one after another, as a [`Read`] for tools that take one log
/// (`profile`, `report`).
pub(crate) struct Extract<R> {
    lines: LineReader<R>,
    deframer: Deframer,
    taken: Extracted,
    at: usize,
}

/// The lines an [`Extract`] takes, gathered for its reader.
struct Extracted {
    /// The logs kept, by position in the file (0: the bare text before any wrapper).
    wanted: Vec<bool>,
    /// The log the reader is in, and whether it is kept.
    segment: usize,
    keeping: bool,
    out: Vec<u8>,
}

impl<R: Read> Extract<R> {
    /// The logs at the positions `wanted` marks (0: the bare text before any wrapper).
    pub(crate) fn segments(input: R, wanted: Vec<bool>) -> Self {
        Extract {
            lines: LineReader::new(input),
            deframer: Deframer::default(),
            taken: Extracted {
                keeping: wanted.first().copied().unwrap_or(false),
                wanted,
                segment: 0,
                out: Vec::new(),
            },
            at: 0,
        }
    }
}

impl Sink for Extracted {
    type Error = io::Error;

    fn start(&mut self, _: u64, _: SegmentStart) -> io::Result<()> {
        self.segment += 1;
        self.keeping = self.wanted.get(self.segment).copied().unwrap_or(false);
        Ok(())
    }

    /// The kernel's part of a line of a log kept, with a line end.
    fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
        let (payload, newline) = (line.payload, line.newline);
        if self.keeping {
            self.out.extend_from_slice(payload);
            self.out
                .extend_from_slice(if newline.is_empty() { b"\n" } else { newline });
        }
        Ok(())
    }

    /// Lines are gathered in blocks, so that a reader of large blocks makes few calls.
    fn wants_more(&self) -> bool {
        const BLOCK: usize = 256 * 1024;
        self.out.len() < BLOCK
    }
}

impl<R: Read> Read for Extract<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let out = &mut self.taken.out;
        if self.at == out.len() {
            out.clear();
            self.at = 0;
            // Lines are not numbered here.
            let mut line = 0;
            read_into(
                &mut self.lines,
                &mut self.deframer,
                &mut line,
                &mut self.taken,
            )?;
        }
        let out = &self.taken.out;
        let n = buf.len().min(out.len() - self.at);
        buf[..n].copy_from_slice(&out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
