//! The annotator: source lines interleaved into a verifier log, as a stream.
//!
//! Kernel style follows the kernel's `verbose_linfo` (kernel/bpf/log.c) exactly: before an
//! instruction line `N: (op) ...` it prints `; <text> @ <file>:<line>` for the line record
//! covering N, unless that record lies on the file and line printed last (kernels before 6.12
//! print `; <text>` unless the record is the one printed last: [`SourceLines`]). "Printed last" is reset
//! when a verification pass starts (`do_check_common`): at the top of the log and at
//! `Validating f() func#N...`. A log that already carries the kernel's annotation lines keeps
//! them as they are and gets no new ones: at log level 1 the kernel rewinds the log when a path
//! ends, but not its memory of the last printed record, so only its own lines are exact there.
//!
//! Rich style replaces those lines with `file:line:col`, the enclosing function and the chain of
//! inlined calls (from DWARF when the object has it), optionally with source context, and ends a
//! rejected log with a diagnostic block pointing into the source, followed by the explanation
//! of the rejection ([`crate::explain`]: its class, where the value came from, the help).

mod check;
mod held;
mod rich_keys;
mod rows;
mod segment;
mod writer;

pub(crate) use rich_keys::CarriedCache;
pub(crate) use rows::{AnnotatedRows, NoRows};
pub(crate) use segment::SegmentAnnotator;

use crate::Program;
use crate::frame::Deframer;
use crate::plan::ExistingAnnotations;
use crate::sink::{Placed, Sink, read_input_into};
use crate::source::{SourceFiles, SourceSearch};
use crate::style::Palette;
use bpflog_log::{Annotation, Line, LogInput, SourceLines};
use std::io::{self, Write};

/// How annotation lines look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Style {
    /// Exactly the kernel's `; text @ file:line` lines.
    #[default]
    Kernel,
    /// `file:line:col`, function and inline chain, from DWARF when present.
    Rich,
}

/// How to annotate: [`AnnotateOptions::default`], then a method per field that differs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AnnotateOptions {
    /// Annotation style.
    pub style: Style,
    /// The colors to use; [`Palette::default`] for plain output.
    pub palette: Palette,
    /// Source lines to show before and after each annotated line (0: none).
    pub context: u32,
    /// End a rejected log with a diagnostic block and its explanation (as `explain` writes
    /// it); in JSON, the first `error` record of a rejected log carries the explanation.
    pub diagnostic: bool,
    /// With the diagnostic, also count the verifier's work on each line (a profile beside it,
    /// as `explain` keeps), so that the help of a rejection by the complexity limit names the
    /// lines where the verifier spent it (`bpflog verify` asks for it); a count per instruction
    /// line more. Without it that help points at `bpflog profile`.
    pub hot_lines: bool,
    /// Also resolve the indices of `mark_precise: ... before N:` lines and liveness rows.
    pub annotate_all: bool,
    /// Where to look for source files.
    pub sources: SourceSearch,
    /// Text, or one JSON object per log line.
    pub format: OutputFormat,
    /// In an [`annotate`](crate::annotate()), which checks the fit on the way: stop reading
    /// where a log is found not to fit the program (or any program), instead of annotating the
    /// rest of the input with it: at that line, or, when it is among lines only counted as the
    /// line before them, at the end of those the reader holds
    /// ([`crate::StreamedSegment::stopped_at`], [`crate::PlanError::written`]).
    pub stop_at_misfit: bool,
    /// Write the log's own lines (those the kernel or the loader printed, which carry the
    /// object's texts and names) with their control bytes escaped, as bpflog's own lines always
    /// are ([`escape_controls`](crate::escape_controls)); off, they are written as read, byte for
    /// byte. For output a terminal shows: the CLI turns it on when standard output is one.
    pub escape_log: bool,
    /// The form of the kernel's source lines written in kernel style, and when each is written
    /// ([`SourceLines`]); `None`: as the log shows (a log whose lines or states are those of
    /// a kernel before 6.12, see [`bpflog_log::source_lines_shown`], gets its
    /// kernel's bare lines; any other, 6.12's).
    pub kernel_lines: Option<SourceLines>,
}

setters!(AnnotateOptions {
    style: Style,
    palette: Palette,
    context: u32,
    diagnostic: bool,
    hot_lines: bool,
    annotate_all: bool,
    sources: SourceSearch,
    format: OutputFormat,
    stop_at_misfit: bool,
    escape_log: bool,
    kernel_lines: Option<SourceLines>,
});

impl AnnotateOptions {
    /// Whether annotating logs of `programs` may read source files: text with rich lines,
    /// context lines or the diagnostic, or kernel lines from a DWARF line table (which keeps no
    /// text). Otherwise the text BTF keeps, or the log's own, is all that is written.
    pub fn reads_sources(&self, programs: &[Program<'_, '_>]) -> bool {
        self.format == OutputFormat::Text
            && (self.style == Style::Rich
                || self.context > 0
                || self.diagnostic
                || (programs.iter()).any(|p| p.lines.origin() == bpflog_object::LineOrigin::Dwarf))
    }
}

/// What the annotator writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputFormat {
    /// The log with source lines between its instructions.
    #[default]
    Text,
    /// One JSON object per line of the input (its schema: `docs/annotate.md`): its kind, text,
    /// instruction index, program, and where an instruction comes from in the source.
    Json,
}

/// What a line of a log is to its annotator: [`SegmentAnnotator::decide`]'s answer, the line
/// counted and checked on the way. What is written for it follows from it alone
/// ([`SegmentAnnotator::write`]; a writer that keeps the lines that go out as they came in as
/// spans of its reader's bytes writes those itself).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Disposition<'a> {
    /// It goes out as it came in: its kind, when it was classified (not a detail line passed
    /// over, nor an instruction seen before, only counted).
    AsIs(Option<Line<'a>>),
    /// It goes out as it came in, after the kernel's source line of this record of the line
    /// table (an instruction's, or the one an error line names).
    After(usize, Line<'a>),
    /// An instruction line (of this instruction), after the rich lines of its location.
    Rich(u64, Line<'a>),
    /// One of the kernel's annotation lines the log carries, kept but written anew: styled,
    /// with context lines, or with the line end the input's last line lacks.
    Kept(Annotation<'a>),
    /// A `mark_precise` line or a liveness row, with the location of this instruction after it
    /// ([`AnnotateOptions::annotate_all`]).
    Trailing(u64, Line<'a>),
    /// An annotation line in place of which bpflog writes its own (an old kernel's; any in rich
    /// style): counted, and not written.
    Dropped,
    /// A JSON record of the line, of this kind.
    Json(Line<'a>),
    /// A JSON record of the line, not classified, of this kind: `cut`, the cut end of a line the
    /// kernel dropped; `other`, a line of a log of no program.
    Record(&'static str),
    /// Held back, nothing written yet: the line waits to know whether the log carries the
    /// kernel's source lines, or it may be the verifier's error.
    Held,
    /// The line settles whether the log carries the kernel's source lines: the lines waiting,
    /// it the last, go out.
    Release,
}

/// What annotating a log did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnnotateStats {
    /// Lines read.
    pub lines: u64,
    /// Instruction lines among them.
    pub instructions: u64,
    /// Instruction lines naming an instruction past the end of the program: the log is not
    /// the program's (or not under this loader's layout).
    pub out_of_range: u64,
    /// Annotation lines inserted.
    pub inserted: u64,
    /// Annotation lines that were already in the log and kept (kernel style).
    pub kept: u64,
    /// Annotation lines that were already in the log and replaced (rich style, old kernels).
    pub replaced: u64,
    /// Whether the log ended in a rejection (error lines after the last instruction).
    pub rejected: bool,
    /// Whether the log starts mid-path: the kernel kept only the tail of a log that overflowed
    /// its buffer.
    pub cut: bool,
    /// The first line (its number in the input) that showed more call frames than the kernel
    /// allows ([`MAX_CALL_FRAMES`](crate::MAX_CALL_FRAMES)): the call stack is not followed
    /// deeper. Known where call stacks are followed: with the diagnostic.
    pub too_deep: Option<u64>,
    /// The class id of the rejection ([`crate::explain::Class`]), when the diagnostic
    /// ([`AnnotateOptions::diagnostic`]) explained it.
    pub class: Option<&'static str>,
}

/// Annotates the log read from `input` for `program`, writing to `output`: the input taken as
/// one bare log, neither split at wrappers nor checked to fit. For the tests of the annotator
/// itself (feature `testing`); [`crate::annotate()`] is the entry point.
#[cfg(feature = "testing")]
pub fn annotate_bare(
    program: &Program<'_, '_>,
    input: impl LogInput,
    mut output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<AnnotateStats> {
    let segment =
        SegmentAnnotator::new(Some(program), options, ExistingAnnotations::Unknown, false);
    run(segment, input, &mut output, &mut rows::NoRows, options)
}

/// Annotates the log read from `input` for `program` in kernel style, as plain text, handing
/// the rows to `rows` (nothing is written), and follows the call depth
/// ([`AnnotateStats::too_deep`]).
pub(crate) fn annotate_rows(
    program: &Program<'_, '_>,
    input: impl LogInput,
    rows: &mut impl AnnotatedRows,
) -> io::Result<AnnotateStats> {
    let options = AnnotateOptions::default();
    let segment =
        SegmentAnnotator::new(Some(program), &options, ExistingAnnotations::Unknown, false)
            .watching_depth();
    run(segment, input, &mut io::sink(), rows, &options)
}

/// The lines of `input`, one bare log, through `segment`.
fn run(
    segment: SegmentAnnotator<'_, '_, '_>,
    input: impl LogInput,
    output: &mut impl Write,
    rows: &mut impl AnnotatedRows,
    options: &AnnotateOptions,
) -> io::Result<AnnotateStats> {
    let mut whole = Whole {
        segment,
        output,
        rows,
        sources: SourceFiles::new(options.sources.clone()),
    };
    read_input_into(input, &mut Deframer::whole(), &mut 0, &mut whole)?;
    let Whole {
        segment,
        output,
        rows,
        mut sources,
    } = whole;
    let stats = segment.finish_rows(output, rows, &mut sources)?;
    output.flush()?;
    Ok(stats)
}

/// One bare log's annotator, as the sink of the one loop: every line is the log's own
/// ([`Deframer::whole`]).
struct Whole<'s, 'p, 'o, 'd, W, R> {
    segment: SegmentAnnotator<'p, 'o, 'd>,
    output: &'s mut W,
    rows: &'s mut R,
    sources: SourceFiles,
}

impl<W: Write, R: AnnotatedRows> Sink for Whole<'_, '_, '_, '_, W, R> {
    type Error = io::Error;

    fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
        let line = LogLine::from(line);
        let disposition = self.segment.decide(line);
        let (output, rows) = (&mut *self.output, &mut *self.rows);
        (self.segment).write(disposition, line, output, rows, &mut self.sources)
    }
}

/// One line of a log as the annotator takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogLine<'a> {
    /// Its number in the whole input, from 1.
    pub(crate) line_no: u64,
    /// The whole line: prefix, payload and terminator, one after another.
    pub(crate) text: &'a [u8],
    /// The wrapper's part of the line (cilium/ebpf's tab, aya's message).
    pub(crate) prefix: &'a [u8],
    /// The kernel's part.
    pub(crate) payload: &'a [u8],
    /// Its terminator (empty at the end of the input).
    pub(crate) newline: &'a [u8],
    /// Written before each line the annotator inserts here.
    pub(crate) indent: &'a [u8],
}

impl<'a> From<&Placed<'a>> for LogLine<'a> {
    #[inline]
    fn from(line: &Placed<'a>) -> Self {
        LogLine {
            line_no: line.line_no,
            text: line.text,
            prefix: line.prefix,
            payload: line.payload,
            newline: line.newline,
            indent: line.indent,
        }
    }
}

#[cfg(test)]
impl<'a> LogLine<'a> {
    /// Line `line_no` of a bare log: `text`, split into its `payload` and `newline`.
    pub(crate) fn bare(
        line_no: u64,
        text: &'a [u8],
        (payload, newline): (&'a [u8], &'a [u8]),
    ) -> Self {
        LogLine {
            line_no,
            text,
            prefix: b"",
            payload,
            newline,
            indent: b"",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_fixture;
    use std::path::Path;

    /// [`AnnotateOptions::reads_sources`] says what annotating does: over rejected logs of an
    /// object with `.BTF.ext` and of one with DWARF alone, each style, context, diagnostic and
    /// format, a source file is read exactly when it says one may be.
    #[test]
    fn reads_sources_says_whether_a_source_file_is_read() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/src");
        for object in ["reject_entry", "reject_entry.nobtfext"] {
            with_fixture(object, "xdp_reject_entry.l2", |program, log| {
                for (style, context, diagnostic, format) in combinations() {
                    let options = AnnotateOptions {
                        style,
                        context,
                        diagnostic,
                        format,
                        sources: SourceSearch {
                            dirs: vec![src.clone()],
                            ..SourceSearch::default()
                        },
                        ..AnnotateOptions::default()
                    };
                    let read = options.sources.read.clone();
                    annotate_bare(program, log, io::sink(), &options).unwrap();
                    let case = format!("{object} {style:?} {context} {diagnostic} {format:?}");
                    assert_eq!(
                        read.holds(&src.join("reject_entry.c")),
                        options.reads_sources(std::slice::from_ref(program)),
                        "{case}"
                    );
                }
            });
        }
    }

    /// Every combination of style, context, diagnostic and format.
    fn combinations() -> Vec<(Style, u32, bool, OutputFormat)> {
        let mut all = Vec::new();
        for style in [Style::Kernel, Style::Rich] {
            for context in [0, 2] {
                for diagnostic in [false, true] {
                    for format in [OutputFormat::Text, OutputFormat::Json] {
                        all.push((style, context, diagnostic, format));
                    }
                }
            }
        }
        all
    }
}
