//! [`Writer`]: the lines an annotator adds before an input line, in kernel or rich style.

use super::rich_keys::ProgramCache;
use super::{AnnotateOptions, Style};
use crate::Program;
use crate::escape::write_log_lines;
use crate::locate::{InsnSource, locate};
use crate::source::SourceFiles;
use crate::style::write_shown;
use crate::style::{write_location, write_styled};
use bpflog_log::SourceLines;
use bpflog_object::{LineOrigin, LineRow};
use std::io::{self, Write};

/// Writes the lines an annotator adds, for one input line.
pub(super) struct Writer<'w, 'p, 'o, 'd, W> {
    pub(super) out: &'w mut W,
    pub(super) sources: &'w mut SourceFiles,
    pub(super) options: &'p AnnotateOptions,
    pub(super) program: &'p Program<'o, 'd>,
    /// Written before each added line.
    pub(super) indent: &'w [u8],
    pub(super) newline: &'w [u8],
    /// The form of kernel-style source lines.
    pub(super) form: SourceLines,
}

impl<W: Write> Writer<'_, '_, '_, '_, W> {
    /// `; text @ file:line`, then context lines when asked.
    pub(super) fn kernel_annotation(&mut self, row: &LineRow<'_>) -> io::Result<()> {
        self.kernel_line(row)?;
        self.context(row.file, row.line)
    }

    /// The line [`kernel_annotation`](Self::kernel_annotation) starts with, without indent or
    /// line end, into `text`.
    pub(super) fn kernel_line_into(
        &mut self,
        text: &mut Vec<u8>,
        row: &LineRow<'_>,
    ) -> io::Result<()> {
        Writer {
            out: text,
            sources: &mut *self.sources,
            options: self.options,
            program: self.program,
            indent: b"",
            newline: b"",
            form: self.form,
        }
        .kernel_line(row)
    }

    /// `; text @ file:line`, or `; text` ([`SourceLines::Bare`]).
    fn kernel_line(&mut self, row: &LineRow<'_>) -> io::Result<()> {
        let p = self.options.palette;
        // DWARF rows carry no text: the kernel never printed those, the real file can say.
        let from_file;
        let text = if self.program.lines.origin() == LineOrigin::Dwarf {
            from_file = self.sources.get(row.file);
            from_file
                .as_ref()
                .and_then(|f| f.line(row.line))
                .map(<[u8]>::trim_ascii_start)
                .unwrap_or_default()
        } else {
            row.trimmed_text()
        };
        write_log_lines(self.out, self.indent, self.options.escape_log)?;
        write_styled(self.out, p.punct, b"; ")?;
        // The object's text, escaped: no control byte but TAB is in a real source line, so
        // real logs keep the kernel's bytes.
        write_shown(self.out, p.source, text)?;
        if self.form == SourceLines::Located {
            write_styled(self.out, p.punct, b" @ ")?;
            write_location(self.out, p.location, row.basename(), row.line, 0)?;
        }
        self.out.write_all(self.newline)
    }

    /// An annotation line that was in the log: as it was; styled when colors are on (for a
    /// terminal: then its text and file are escaped as the object's are).
    pub(super) fn kept_annotation(
        &mut self,
        prefix: &[u8],
        payload: &[u8],
        text: &[u8],
        at: Option<(&[u8], u32)>,
    ) -> io::Result<()> {
        let p = self.options.palette;
        write_log_lines(self.out, prefix, self.options.escape_log)?;
        if p.source.is_plain() {
            write_log_lines(self.out, payload, self.options.escape_log)?;
        } else {
            write_styled(self.out, p.punct, b"; ")?;
            write_shown(self.out, p.source, text)?;
            if let Some((file, line)) = at {
                write_styled(self.out, p.punct, b" @ ")?;
                write_location(self.out, p.location, file, line, 0)?;
            }
        }
        self.out.write_all(self.newline)?;
        if self.options.context > 0
            && let Some((base, line)) = at
            && let Some(row) = self
                .program
                .lines
                .rows()
                .iter()
                .find(|r| r.basename() == base)
        {
            let file = row.file;
            self.context(file, line)?;
        }
        Ok(())
    }

    /// The rich annotation before instruction `index` (one with a location). Its lines depend on
    /// the instruction alone but for their indent and line end: for a log without indent and
    /// with plain line ends, they are put together once and held in `rich`.
    pub(super) fn rich_annotation(
        &mut self,
        index: u64,
        rich: &mut ProgramCache,
    ) -> io::Result<()> {
        let Ok(index) = u32::try_from(index) else {
            return Ok(());
        };
        if !self.indent.is_empty() || self.newline != b"\n" {
            return self.rich_lines(index).map(drop);
        }
        let (program, sources, options) = (self.program, &mut *self.sources, self.options);
        let make = |bytes: &mut Vec<u8>| {
            let mut w = Writer {
                out: bytes,
                sources,
                options,
                program,
                indent: b"",
                newline: b"\n",
                form: SourceLines::Located,
            };
            w.rich_lines(index).map(drop)
        };
        rich.lines
            .write(self.out, index, program.layout.len, make)
            .map(drop)
    }

    /// The rich annotation lines of instruction `index`; whether it has a location (else
    /// nothing is written).
    pub(super) fn rich_lines(&mut self, index: u32) -> io::Result<bool> {
        let Some(src) = locate(self.program, index) else {
            return Ok(false);
        };
        let p = self.options.palette;
        let file = self.sources.get(src.file);
        let real_line = file.as_ref().and_then(|f| f.line(src.line));
        write_log_lines(self.out, self.indent, self.options.escape_log)?;
        write_styled(self.out, p.punct, b"; ")?;
        if self.options.context == 0 {
            let text = real_line
                .or(src.btf_text)
                .map(<[u8]>::trim_ascii_start)
                .unwrap_or_default();
            write_shown(self.out, p.source, text)?;
            write_styled(self.out, p.punct, b" @ ")?;
        }
        self.place(&src)?;
        self.out.write_all(self.newline)?;
        for step in &src.inlined {
            write_log_lines(self.out, self.indent, self.options.escape_log)?;
            write_styled(self.out, p.punct, b";   inlined from ")?;
            write_shown(self.out, p.function, step.caller.as_bytes())?;
            if let Some((file, line, col)) = step.call_site {
                write_styled(self.out, p.punct, b" at ")?;
                write_location(self.out, p.inline, file, line, col)?;
            }
            self.out.write_all(self.newline)?;
        }
        if self.options.context > 0 {
            if real_line.is_some() {
                self.context(src.file, src.line)?;
            } else if let Some(text) = src.btf_text {
                // The file is not at hand: the one line BTF keeps stands in for it.
                let width = src.line.to_string().len();
                self.context_line(src.line, width, text.trim_ascii_start(), true)?;
            }
        }
        Ok(true)
    }

    /// `file:line:col in function`.
    fn place(&mut self, src: &InsnSource<'_>) -> io::Result<()> {
        let p = self.options.palette;
        write_location(self.out, p.location, src.file, src.line, src.column)?;
        write_styled(self.out, p.punct, b" in ")?;
        write_shown(self.out, p.function, src.function.as_bytes())
    }

    /// `context` lines either side of `line` of `file`, numbered, the line itself marked.
    pub(super) fn context(&mut self, file: &[u8], line: u32) -> io::Result<()> {
        let n = self.options.context;
        if n == 0 {
            return Ok(());
        }
        let Some(source) = self.sources.get(file) else {
            return Ok(());
        };
        let first = line.saturating_sub(n).max(1);
        let last = line.saturating_add(n).min(source.line_count());
        let width = last.to_string().len();
        for k in first..=last {
            if let Some(text) = source.line(k) {
                self.context_line(k, width, text, k == line)?;
            }
        }
        Ok(())
    }

    fn context_line(&mut self, k: u32, width: usize, text: &[u8], marked: bool) -> io::Result<()> {
        let p = self.options.palette;
        let gutter = format!(";{} {k:>width$} | ", if marked { " >" } else { "  " });
        write_log_lines(self.out, self.indent, self.options.escape_log)?;
        write_styled(self.out, p.punct, gutter.as_bytes())?;
        write_shown(self.out, if marked { p.source } else { p.context }, text)?;
        self.out.write_all(self.newline)
    }

    /// ` // file:line` after a backtracking line or liveness row (`--annotate-all`): the
    /// kernel's record in kernel style, the rich location otherwise.
    pub(super) fn trailing_location(&mut self, index: u64) -> io::Result<()> {
        let program = self.program;
        let p = self.options.palette;
        let Ok(index) = u32::try_from(index) else {
            return Ok(());
        };
        match self.options.style {
            Style::Kernel => {
                let Some(row) = program.lines.find(index) else {
                    return Ok(());
                };
                write_styled(self.out, p.punct, b"  // ")?;
                write_location(self.out, p.location, row.basename(), row.line, 0)
            }
            Style::Rich => {
                let Some(src) = locate(program, index) else {
                    return Ok(());
                };
                write_styled(self.out, p.punct, b"  // ")?;
                self.place(&src)
            }
        }
    }
}
