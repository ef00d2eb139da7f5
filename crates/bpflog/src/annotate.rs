//! The annotator: source lines interleaved into a verifier log, as a stream.
//!
//! Kernel style follows the kernel's `verbose_linfo` (kernel/bpf/log.c) exactly: before an
//! instruction line `N: (op) ...` it prints `; <text> @ <file>:<line>` for the line record
//! covering N, unless that record lies on the file and line printed last. "Printed last" is reset
//! when a verification pass starts (`do_check_common`): at the top of the log and at
//! `Validating f() func#N...`. A log that already carries the kernel's annotation lines keeps
//! them as they are and gets no new ones: at log level 1 the kernel rewinds the log when a path
//! ends, but not its memory of the last printed record, so only its own lines are exact there.
//!
//! Rich style replaces those lines with `file:line:col`, the enclosing function and the chain of
//! inlined calls (from DWARF when the object has it), optionally with source context, and ends a
//! rejected log with a diagnostic block pointing into the source.

use crate::Program;
use crate::diagnostic::FailureTracker;
use crate::locate::{InsnSource, locate};
use crate::source::{SourceFiles, SourceSearch};
use crate::style::{Palette, write_styled};
use bpflog_log::{Line, classify, split_newline};
use bpflog_object::{LineOrigin, LineRow};
use std::io::{self, BufRead, Write};

/// How annotation lines look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Style {
    /// Exactly the kernel's `; text @ file:line` lines.
    #[default]
    Kernel,
    /// `file:line:col`, function and inline chain, from DWARF when present.
    Rich,
}

/// How to annotate.
#[derive(Debug, Clone, Default)]
pub struct AnnotateOptions {
    /// Annotation style.
    pub style: Style,
    /// The colors to use; [`Palette::default`] for plain output.
    pub palette: Palette,
    /// Source lines to show before and after each annotated line (0: none).
    pub context: u32,
    /// End a rejected log with a diagnostic block.
    pub diagnostic: bool,
    /// Also resolve the indices of `mark_precise: ... before N:` lines and liveness rows.
    pub annotate_all: bool,
    /// Where to look for source files.
    pub sources: SourceSearch,
}

/// The kernel's choice of when to print a source line, as a state machine.
#[derive(Debug, Clone, Default)]
pub struct KernelRule {
    /// `(file_name_off, line)` of the record printed last.
    last: Option<(u32, u32)>,
}

impl KernelRule {
    /// Forgets the record printed last, as the kernel does when a verification pass starts.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The record the kernel prints before instruction `index`, if it prints one; remembered as
    /// printed.
    pub fn before_insn<'t, 'o>(
        &mut self,
        program: &'t Program<'o, '_>,
        index: u64,
    ) -> Option<&'t LineRow<'o>> {
        let row = program.lines.find(u32::try_from(index).ok()?)?;
        let key = (row.file_name_off, row.line);
        if self.last == Some(key) {
            return None;
        }
        self.last = Some(key);
        Some(row)
    }
}

/// What annotating a log did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnnotateStats {
    /// Lines read.
    pub lines: u64,
    /// Instruction lines among them.
    pub instructions: u64,
    /// Annotation lines inserted.
    pub inserted: u64,
    /// Annotation lines that were already in the log and kept (kernel style).
    pub kept: u64,
    /// Annotation lines that were already in the log and replaced (rich style).
    pub replaced: u64,
    /// Whether the log ended in a rejection (error lines after the last instruction).
    pub rejected: bool,
}

/// Annotates the log read from `input` for `program`, writing to `output`.
///
/// In kernel style every input byte is written back unchanged (styled when the palette has
/// colors), with annotation lines inserted by the kernel's rule.
pub fn annotate(
    program: &Program<'_, '_>,
    mut input: impl BufRead,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<AnnotateStats> {
    let mut a = Annotator {
        program,
        options,
        out: output,
        rule: KernelRule::default(),
        rich_last: None,
        already_annotated: false,
        sources: SourceFiles::new(options.sources.clone()),
        pending: PendingErrors::default(),
        failure: options.diagnostic.then(FailureTracker::default),
        stats: AnnotateStats::default(),
    };
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        a.line(&buf)?;
    }
    a.finish()
}

/// The annotator's state between lines.
struct Annotator<'p, 'o, 'd, W> {
    program: &'p Program<'o, 'd>,
    options: &'p AnnotateOptions,
    out: W,
    rule: KernelRule,
    /// A digest of the rich location printed last.
    rich_last: Option<u64>,
    already_annotated: bool,
    sources: SourceFiles,
    pending: PendingErrors,
    failure: Option<FailureTracker>,
    stats: AnnotateStats,
}

impl<W: Write> Annotator<'_, '_, '_, W> {
    fn line(&mut self, raw: &[u8]) -> io::Result<()> {
        self.stats.lines += 1;
        let (content, newline) = split_newline(raw);
        let newline: &[u8] = if newline.is_empty() { b"\n" } else { newline };
        let kind = classify(content);
        if let Some(f) = &mut self.failure {
            f.observe(&kind, content);
        }
        // Lines that may be the final error wait until the next line says whether the log ends.
        if !self.options.palette.error.is_plain() || self.failure.is_some() {
            let raw_newline = split_newline(raw).1;
            if matches!(kind, Line::Other)
                && !content.starts_with(b" ")
                && self.pending.push(content, raw_newline)
            {
                return Ok(());
            }
            let is_error = matches!(kind, Line::Summary);
            self.stats.rejected |= is_error && !self.pending.is_empty();
            self.pending
                .flush(&mut self.out, &self.options.palette, is_error)?;
        }
        match kind {
            Line::Insn(insn) => {
                self.stats.instructions += 1;
                match self.options.style {
                    Style::Kernel if !self.already_annotated => {
                        if let Some(row) = self.rule.before_insn(self.program, insn.index) {
                            let row = *row;
                            self.write_kernel_annotation(&row, newline)?;
                            self.stats.inserted += 1;
                        }
                    }
                    Style::Kernel => {}
                    Style::Rich => self.rich_before(insn.index, newline)?,
                }
            }
            Line::Validating { .. } => {
                self.rule.reset();
                self.rich_last = None;
            }
            Line::Annotation(a) => {
                self.already_annotated = true;
                match self.options.style {
                    Style::Kernel => {
                        self.stats.kept += 1;
                        self.write_kept_annotation(content, a.text, a.location, newline)?;
                    }
                    Style::Rich => self.stats.replaced += 1,
                }
                return Ok(());
            }
            Line::MarkPrecise if self.options.annotate_all => {
                if let Some(index) = precise_index(content) {
                    self.out.write_all(content)?;
                    self.write_trailing_location(index)?;
                    return self.out.write_all(split_newline(raw).1);
                }
            }
            Line::LiveRegsRow { index } if self.options.annotate_all => {
                self.out.write_all(content)?;
                self.write_trailing_location(index)?;
                return self.out.write_all(split_newline(raw).1);
            }
            _ => {}
        }
        self.out.write_all(raw)
    }

    fn finish(mut self) -> io::Result<AnnotateStats> {
        self.stats.rejected |= !self.pending.is_empty();
        self.pending
            .flush(&mut self.out, &self.options.palette, true)?;
        if let Some(failure) = self.failure.take()
            && let Some(report) = failure.report()
        {
            self.stats.rejected = true;
            crate::diagnostic::render(
                &report,
                self.program,
                &mut self.sources,
                &self.options.palette,
                &mut self.out,
            )?;
        }
        self.out.flush()?;
        Ok(self.stats)
    }

    /// `; text @ file:line`, then context lines when asked.
    fn write_kernel_annotation(&mut self, row: &LineRow<'_>, newline: &[u8]) -> io::Result<()> {
        let p = self.options.palette;
        // DWARF rows carry no text: the kernel never printed those, the real file can say.
        let from_file;
        let text = if self.program.lines.origin() == LineOrigin::Dwarf {
            from_file = self.sources.get(row.file);
            from_file
                .as_ref()
                .and_then(|f| f.line(row.line))
                .map(trim_start)
                .unwrap_or_default()
        } else {
            row.trimmed_text()
        };
        write_styled(&mut self.out, p.punct, b"; ")?;
        write_styled(&mut self.out, p.source, text)?;
        write_styled(&mut self.out, p.punct, b" @ ")?;
        write_styled(
            &mut self.out,
            p.location,
            &location(row.basename(), row.line, 0),
        )?;
        self.out.write_all(newline)?;
        self.write_context(row.file, row.line, newline)
    }

    /// An annotation line that was in the log: as it was (styled when colors are on).
    fn write_kept_annotation(
        &mut self,
        content: &[u8],
        text: &[u8],
        at: Option<(&[u8], u32)>,
        newline: &[u8],
    ) -> io::Result<()> {
        let p = self.options.palette;
        if p.source.is_plain() {
            self.out.write_all(content)?;
        } else {
            write_styled(&mut self.out, p.punct, b"; ")?;
            write_styled(&mut self.out, p.source, text)?;
            if let Some((file, line)) = at {
                write_styled(&mut self.out, p.punct, b" @ ")?;
                write_styled(&mut self.out, p.location, &location(file, line, 0))?;
            }
        }
        self.out.write_all(newline)?;
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
            self.write_context(file, line, newline)?;
        }
        Ok(())
    }

    /// The rich annotation before instruction `index`, when its location differs from the last.
    fn rich_before(&mut self, index: u64, newline: &[u8]) -> io::Result<()> {
        let program = self.program;
        let Some(src) = u32::try_from(index).ok().and_then(|i| locate(program, i)) else {
            return Ok(());
        };
        let key = rich_key(&src);
        if self.rich_last == Some(key) {
            return Ok(());
        }
        self.rich_last = Some(key);
        self.stats.inserted += 1;
        let p = self.options.palette;
        let file = self.sources.get(src.file);
        let real_line = file.as_ref().and_then(|f| f.line(src.line));
        if self.options.context == 0 {
            let text = real_line
                .or(src.btf_text)
                .map(trim_start)
                .unwrap_or_default();
            write_styled(&mut self.out, p.punct, b"; ")?;
            write_styled(&mut self.out, p.source, text)?;
            write_styled(&mut self.out, p.punct, b" @ ")?;
        } else {
            write_styled(&mut self.out, p.punct, b"; ")?;
        }
        write_styled(
            &mut self.out,
            p.location,
            &location(src.file, src.line, src.column),
        )?;
        write_styled(&mut self.out, p.punct, b" in ")?;
        write_styled(&mut self.out, p.function, src.function.as_bytes())?;
        self.out.write_all(newline)?;
        for step in &src.inlined {
            write_styled(&mut self.out, p.punct, b";   inlined from ")?;
            write_styled(&mut self.out, p.function, step.caller.as_bytes())?;
            if let Some((file, line, col)) = step.call_site {
                write_styled(&mut self.out, p.punct, b" at ")?;
                write_styled(&mut self.out, p.inline, &location(file, line, col))?;
            }
            self.out.write_all(newline)?;
        }
        if self.options.context > 0 {
            if real_line.is_some() {
                self.write_context(src.file, src.line, newline)?;
            } else if let Some(text) = src.btf_text {
                // The file is not at hand: the one line BTF keeps stands in for it.
                let width = src.line.to_string().len();
                self.write_context_line(src.line, width, trim_start(text), true, newline)?;
            }
        }
        Ok(())
    }

    /// `context` lines either side of `line` of `file`, numbered, the line itself marked.
    fn write_context(&mut self, file: &[u8], line: u32, newline: &[u8]) -> io::Result<()> {
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
                self.write_context_line(k, width, text, k == line, newline)?;
            }
        }
        Ok(())
    }

    fn write_context_line(
        &mut self,
        k: u32,
        width: usize,
        text: &[u8],
        marked: bool,
        newline: &[u8],
    ) -> io::Result<()> {
        let p = self.options.palette;
        let gutter = format!(";{} {k:>width$} | ", if marked { " >" } else { "  " });
        write_styled(&mut self.out, p.punct, gutter.as_bytes())?;
        write_styled(
            &mut self.out,
            if marked { p.source } else { p.context },
            text,
        )?;
        self.out.write_all(newline)
    }

    /// ` // file:line` after a backtracking line or liveness row (`--annotate-all`): the
    /// kernel's record in kernel style, the rich location otherwise.
    fn write_trailing_location(&mut self, index: u64) -> io::Result<()> {
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
                write_styled(&mut self.out, p.punct, b"  // ")?;
                write_styled(
                    &mut self.out,
                    p.location,
                    &location(row.basename(), row.line, 0),
                )
            }
            Style::Rich => {
                let Some(src) = locate(program, index) else {
                    return Ok(());
                };
                write_styled(&mut self.out, p.punct, b"  // ")?;
                write_styled(
                    &mut self.out,
                    p.location,
                    &location(src.file, src.line, src.column),
                )?;
                write_styled(&mut self.out, p.punct, b" in ")?;
                write_styled(&mut self.out, p.function, src.function.as_bytes())
            }
        }
    }
}

/// `file:line` or `file:line:col` (column 0 is left out).
pub(crate) fn location(file: &[u8], line: u32, col: u32) -> Vec<u8> {
    let mut out = file.to_vec();
    out.extend_from_slice(format!(":{line}").as_bytes());
    if col > 0 {
        out.extend_from_slice(format!(":{col}").as_bytes());
    }
    out
}

/// The text without leading whitespace.
pub(crate) fn trim_start(text: &[u8]) -> &[u8] {
    let start = text
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(text.len());
    &text[start..]
}

/// A digest of what the rich style prints for a location (columns aside, like the kernel).
fn rich_key(src: &InsnSource<'_>) -> u64 {
    let mut h = crate::digest::Digest::default();
    h.add(src.file);
    h.add(&src.line.to_le_bytes());
    h.add(src.function.as_bytes());
    for step in &src.inlined {
        h.add(step.caller.as_bytes());
        if let Some((file, line, col)) = step.call_site {
            h.add(file);
            h.add(&line.to_le_bytes());
            h.add(&col.to_le_bytes());
        }
    }
    h.finish()
}

/// The `N` of `mark_precise: ... before N: (op) ...`.
fn precise_index(line: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(line, b" before ")? + 8;
    let rest = &line[at..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || !rest[digits..].starts_with(b": ") {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Lines that may be the verifier's final error, held back (bounded) until the log says.
#[derive(Default)]
struct PendingErrors {
    bytes: Vec<u8>,
    /// Start and end of each held line's content inside `bytes`, and its newline's end.
    lines: Vec<(usize, usize, usize)>,
}

impl PendingErrors {
    /// At most this many bytes are held; past it they are written plain.
    const LIMIT: usize = 64 * 1024;

    /// Holds a line; `false` when the buffer is full (the caller writes it plainly).
    fn push(&mut self, content: &[u8], newline: &[u8]) -> bool {
        if self.bytes.len() + content.len() + newline.len() > Self::LIMIT {
            return false;
        }
        let start = self.bytes.len();
        self.bytes.extend_from_slice(content);
        let end = self.bytes.len();
        self.bytes.extend_from_slice(newline);
        self.lines.push((start, end, self.bytes.len()));
        true
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Writes the held lines, styled as errors when `is_error`.
    fn flush(&mut self, out: &mut impl Write, p: &Palette, is_error: bool) -> io::Result<()> {
        for &(start, end, nl_end) in &self.lines {
            let content = &self.bytes[start..end];
            if is_error {
                write_styled(out, p.error, content)?;
            } else {
                out.write_all(content)?;
            }
            out.write_all(&self.bytes[end..nl_end])?;
        }
        self.bytes.clear();
        self.lines.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtracking_lines_name_their_instruction() {
        assert_eq!(
            precise_index(b"mark_precise: frame0: regs=r1 stack= before 9: (b7) r4 = 0"),
            Some(9)
        );
        assert_eq!(
            precise_index(b"mark_precise: frame0: last_idx 11 first_idx 11 subseq_idx -1"),
            None
        );
        assert_eq!(location(b"a.c", 3, 0), b"a.c:3");
        assert_eq!(location(b"a.c", 3, 7), b"a.c:3:7");
    }
}
