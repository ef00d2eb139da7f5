//! The annotator: the kernel's `verbose_linfo` rule, applied to a log as a stream.
//!
//! Before an instruction line `N: (op) ...` the kernel prints `; <text> @ <file>:<line>` for the
//! line record covering N, unless it is the record printed last or lies on the same file and line
//! (kernel/bpf/log.c, `verbose_linfo`). The "printed last" record is reset when a verification
//! pass starts (`do_check_common`): at the top of the log and at `Validating f() func#N...`.
//!
//! A log that already carries the kernel's annotation lines keeps them as they are and gets no new
//! ones: at log level 1 the kernel rewinds the log when a path ends, but not its memory of the last
//! printed record, so only the kernel's own lines are exact there. A log without annotations gets
//! them inserted; for a level-2 log (nothing rewound) that is exactly what the kernel printed.

use crate::Program;
use crate::style::{Palette, write_styled};
use bpflog_log::{Line, classify, split_newline};
use bpflog_object::LineRow;
use std::io::{self, BufRead, Write};

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
    pub fn before_insn<'t, 'data>(
        &mut self,
        program: &'t Program<'_, 'data>,
        index: u64,
    ) -> Option<&'t LineRow<'data>> {
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
    /// Annotation lines that were already in the log and kept.
    pub kept: u64,
}

/// How to annotate.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnnotateOptions {
    /// The colors to use; [`Palette::default`] for plain output.
    pub palette: Palette,
}

/// Writes one annotation line for `row` in the kernel's format.
pub(crate) fn write_annotation(
    out: &mut impl Write,
    p: &Palette,
    row: &LineRow<'_>,
    newline: &[u8],
) -> io::Result<()> {
    write_styled(out, p.punct, b"; ")?;
    write_styled(out, p.source, row.trimmed_text())?;
    write_styled(out, p.punct, b" @ ")?;
    let mut location = row.basename().to_vec();
    location.push(b':');
    location.extend_from_slice(row.line.to_string().as_bytes());
    write_styled(out, p.location, &location)?;
    out.write_all(newline)
}

/// Re-styles an annotation line that was already in the log (only when colors are on).
fn write_existing_annotation(
    out: &mut impl Write,
    p: &Palette,
    content: &[u8],
    text: &[u8],
    location: Option<(&[u8], u32)>,
) -> io::Result<()> {
    if p.source.is_plain() {
        return out.write_all(content);
    }
    write_styled(out, p.punct, b"; ")?;
    write_styled(out, p.source, text)?;
    if let Some((file, line)) = location {
        write_styled(out, p.punct, b" @ ")?;
        let mut loc = file.to_vec();
        loc.push(b':');
        loc.extend_from_slice(line.to_string().as_bytes());
        write_styled(out, p.location, &loc)?;
    }
    Ok(())
}

/// Annotates the log read from `input` for `program`, writing to `output`.
///
/// Every input byte is written back unchanged (styled when the palette has colors); annotation
/// lines are inserted before instruction lines by the kernel's rule.
pub fn annotate(
    program: &Program<'_, '_>,
    mut input: impl BufRead,
    mut output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<AnnotateStats> {
    let p = &options.palette;
    let color = !p.error.is_plain();
    let mut rule = KernelRule::default();
    let mut stats = AnnotateStats::default();
    let mut already_annotated = false;
    let mut buf = Vec::with_capacity(4096);
    // With colors on, lines that may be the final error message wait here until the next line
    // tells whether the log ends (then they are the error) or goes on.
    let mut pending = PendingErrors::default();
    loop {
        buf.clear();
        if input.read_until(b'\n', &mut buf)? == 0 {
            pending.flush(&mut output, p, true)?;
            break;
        }
        stats.lines += 1;
        let (content, newline) = split_newline(&buf);
        let kind = classify(content);
        if color {
            if matches!(kind, Line::Other)
                && !content.starts_with(b" ")
                && pending.push(content, newline)
            {
                continue;
            }
            pending.flush(&mut output, p, matches!(kind, Line::Summary))?;
        }
        match kind {
            Line::Insn(insn) => {
                stats.instructions += 1;
                if !already_annotated && let Some(row) = rule.before_insn(program, insn.index) {
                    write_annotation(
                        &mut output,
                        p,
                        row,
                        if newline.is_empty() { b"\n" } else { newline },
                    )?;
                    stats.inserted += 1;
                }
            }
            Line::Validating { .. } => rule.reset(),
            Line::Annotation(a) => {
                already_annotated = true;
                stats.kept += 1;
                write_existing_annotation(&mut output, p, content, a.text, a.location)?;
                output.write_all(newline)?;
                continue;
            }
            _ => {}
        }
        output.write_all(&buf)?;
    }
    output.flush()?;
    Ok(stats)
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

    /// Writes the held lines, styled as errors when `is_error`.
    fn flush(&mut self, out: &mut impl Write, p: &Palette, is_error: bool) -> io::Result<()> {
        for &(start, end, nl_end) in &self.lines {
            let content = self.bytes.get(start..end).unwrap_or_default();
            if is_error {
                write_styled(out, p.error, content)?;
            } else {
                out.write_all(content)?;
            }
            out.write_all(self.bytes.get(end..nl_end).unwrap_or_default())?;
        }
        self.bytes.clear();
        self.lines.clear();
        Ok(())
    }
}
