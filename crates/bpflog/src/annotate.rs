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
use crate::diagnostic::{CallStack, FailureTracker};
use crate::escape::write_shown;
use crate::frame::is_kernel_line;
use crate::insn_bytes::InsnBytes;
use crate::json;
use crate::locate::{InsnSource, locate};
use crate::plan::{Pending, PlanError, SegmentPlan};
use crate::select::{SelectError, Selection, Selector};
use crate::source::{SourceFiles, SourceSearch};
use crate::style::{Palette, write_location, write_styled};
use bpflog_log::{InsnHead, Line, LogInput, classify, insn_head, is_detail, split_newline};
use bpflog_object::{Flow, LineOrigin, LineRow};
use std::io::{self, Write};

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
    /// Text, or one JSON object per log line.
    pub format: OutputFormat,
    /// In a one-pass annotation that checks the fit on the way ([`crate::annotate_stream`],
    /// [`crate::annotate_file`]): stop reading at the line where a log is found not to fit the
    /// program (or any program), instead of annotating the rest of the input with it
    /// ([`crate::StreamedSegment::stopped_at`], [`crate::PlanError::written`]).
    pub stop_at_misfit: bool,
}

/// What the annotator writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OutputFormat {
    /// The log with source lines between its instructions.
    #[default]
    Text,
    /// One JSON object per line of the input (see the README for the schema): its kind, text,
    /// instruction index, program, and where an instruction comes from in the source.
    Json,
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
        let at = self.row_before_insn(program, index)?;
        program.lines.rows().get(at)
    }

    /// [`before_insn`](Self::before_insn), as the record's position in the line table.
    fn row_before_insn(&mut self, program: &Program<'_, '_>, index: u64) -> Option<usize> {
        let (at, key) = Self::record(program, index)?;
        if self.last == Some(key) {
            return None;
        }
        self.last = Some(key);
        Some(at)
    }

    /// Whether [`before_insn`](Self::before_insn) would print a record before instruction
    /// `index` (and change what was printed last).
    fn prints_before(&self, program: &Program<'_, '_>, index: u64) -> bool {
        Self::record(program, index).is_some_and(|(_, key)| self.last != Some(key))
    }

    /// The position in the line table of the record covering instruction `index`, and what the
    /// kernel compares of it with the record printed last.
    fn record(program: &Program<'_, '_>, index: u64) -> Option<(usize, (u32, u32))> {
        let at = program.lines.find_index(u32::try_from(index).ok()?)?;
        let row = program.lines.rows().get(at)?;
        Some((at, (row.file_name_off, row.line)))
    }

    /// Whether [`after_insn`](Self::after_insn) does anything with the instruction line read
    /// as `head`: only a jump's (classes BPF_JMP and BPF_JMP32) that may resume a path.
    #[inline]
    pub(crate) fn reads_after(head: &bpflog_log::InsnHead<'_>) -> bool {
        Self::is_jump(head.opcode) && head.may_resume()
    }

    /// Whether `opcode` is a jump's, the only instructions [`after_insn`](Self::after_insn)
    /// looks at.
    #[inline]
    fn is_jump(opcode: u8) -> bool {
        bpflog_object::opcode::is_jump_class(opcode)
    }

    /// What the instruction line `insn` says of a path whose text is gone.
    ///
    /// At log level 1 the kernel drops the text of a path once it ends and goes on with the one
    /// it put aside last (`pop_stack` rewinds the log to where `push_stack` was called): the
    /// instruction line of the branch is then followed by the state of the instruction it
    /// resumes at ([`InsnLine::resumed`](bpflog_log::InsnLine::resumed)). The text is gone but
    /// not the source line printed last on it (`env->prev_linfo`), which decides whether the
    /// next is printed. A conditional jump resumed at its target dropped the path that went on
    /// from the next instruction: it is followed here as far as it runs straight (through `ja`
    /// and helper calls, until an `exit`, a branch, or a call to a kfunc or a function, which
    /// clang emits alike: a kfunc may never return, as `bpf_throw`), and the source lines the
    /// kernel printed along it are taken as printed. Further than that the path is not known,
    /// and the kernel may have cut it short anywhere it found a state it had seen (`N: safe`).
    pub fn after_insn(&mut self, program: &Program<'_, '_>, insn: &bpflog_log::InsnLine<'_>) {
        if !insn.opcode.is_some_and(Self::is_jump) {
            return;
        }
        let (Some(resumed), Some(object)) = (insn.resumed(), program.object()) else {
            return;
        };
        let Ok(at) = u32::try_from(insn.index) else {
            return;
        };
        let flow = |index: u32| object.insn(&program.layout, index).map(|i| i.flow());
        match flow(at) {
            Some(Flow::Branch(off)) if i64::from(at) + 1 + off == resumed as i64 => {}
            _ => return,
        }
        let mut index = at + 1;
        // A path that runs straight is short; a bound keeps a loop of `ja` from running on.
        for _ in 0..4096 {
            if let Some(row) = program.lines.find(index) {
                self.last = Some((row.file_name_off, row.line));
            }
            let next = match flow(index) {
                Some(Flow::Next(width)) => u64::from(index) + width,
                Some(Flow::Jump(off)) => (i64::from(index) + 1 + off).max(0) as u64,
                _ => break,
            };
            match u32::try_from(next) {
                Ok(next) => index = next,
                Err(_) => break,
            }
        }
    }
}

/// What becomes of a line offered to [`SegmentAnnotator::passes`].
pub(crate) enum Pass {
    /// It goes out as it came in.
    Line,
    /// So it does, after the source line of this record of the line table.
    After(usize),
    /// It is for [`SegmentAnnotator::line`].
    No,
}

/// What annotating a log did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
}

/// Whether a log starts mid-path: its first instruction line, before any `func#N @START` or
/// `Validating` line, is not instruction 0 (kernels since 6.4 keep the tail of a log that
/// overflows its buffer: `bpf_vlog_finalize` in kernel/bpf/log.c).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CutTop {
    started: bool,
    /// The log was found to start mid-path.
    pub(crate) cut: bool,
}

impl CutTop {
    /// Whether it is decided: the log has shown where it starts.
    pub(crate) fn decided(&self) -> bool {
        self.started
    }

    /// An instruction line, of instruction `index`.
    #[inline]
    pub(crate) fn insn(&mut self, index: u64) {
        self.cut |= !self.started && index != 0;
        self.started = true;
    }

    /// Takes the next line of the log.
    pub(crate) fn observe(&mut self, kind: &Line<'_>) {
        match kind {
            Line::Insn(insn) => self.insn(insn.index),
            Line::Validating { .. } | Line::FuncStart { .. } => self.started = true,
            _ => {}
        }
    }
}

/// What a log's own annotation lines are, as far as known before reading it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExistingAnnotations {
    /// Not known: decided at the first annotation line met.
    #[default]
    Unknown,
    /// None: insert them all.
    Absent,
    /// The current kernel's (`; text @ file:line`): kept as they are, none inserted.
    Current,
    /// A pre-6.9 kernel's (`; text`): replaced by the current kernel's lines.
    Old,
}

/// Annotates the log read from `input` for `program`, writing to `output`.
///
/// The input is taken as one bare log. In kernel style every input byte is written back
/// unchanged (styled when the palette has colors), with annotation lines inserted by the kernel's
/// rule; a log whose annotation lines come from a kernel before 6.9 gets them in today's form.
pub fn annotate(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<AnnotateStats> {
    annotate_watching(program, input, output, options, false)
}

/// [`annotate`], also following the call depth without a diagnostic when `watch_depth`
/// ([`AnnotateStats::too_deep`]).
pub(crate) fn annotate_watching(
    program: &Program<'_, '_>,
    input: impl LogInput,
    mut output: impl Write,
    options: &AnnotateOptions,
    watch_depth: bool,
) -> io::Result<AnnotateStats> {
    let mut sources = SourceFiles::new(options.sources.clone());
    let mut segment =
        SegmentAnnotator::new(Some(program), options, ExistingAnnotations::Unknown, false);
    if watch_depth {
        segment = segment.watching_depth();
    }
    let mut lines = input.into_lines();
    let mut line_no = 0u64;
    while let Some(buf) = lines.next_line()? {
        line_no += 1;
        let line = LogLine::bare(line_no, buf, split_newline(buf));
        segment.line(&mut output, &mut sources, line)?;
    }
    let stats = segment.finish(&mut output, &mut sources)?;
    output.flush()?;
    Ok(stats)
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

/// The annotator of one program's log: its state between lines.
pub(crate) struct SegmentAnnotator<'p, 'o, 'd> {
    program: Option<&'p Program<'o, 'd>>,
    options: &'p AnnotateOptions,
    rule: KernelRule,
    /// A digest of the rich location printed last.
    rich_last: Option<u64>,
    /// The rich location's digest per instruction, worked out once (see [`RichKeys`]).
    rich_keys: RichKeys,
    /// The lines of each instruction's rich annotation, once put together (see
    /// [`Writer::rich_annotation`]).
    rich_lines: InsnBytes,
    /// The bytes of each record's source line, once put together (see
    /// [`annotation`](Self::annotation)).
    annotations: Vec<Option<Box<[u8]>>>,
    /// The source of each instruction record, once put together (JSON).
    json_sources: json::SourceCache,
    existing: ExistingAnnotations,
    /// Detail lines go out as they came in (see [`takes_details`](Self::takes_details)): text,
    /// no extra locations. (Colored errors and the diagnostic hold lines back: a detail line
    /// lets them go, so it is taken only while none are held.)
    details_verbatim: bool,
    /// So do all lines of a log with the kernel's current annotation lines (see
    /// [`verbatim`](Self::verbatim)): also kernel style, no colored source, no context.
    kernel_verbatim: bool,
    /// The first line is the cut end of a line the kernel dropped: pass it through untouched.
    skip_first: bool,
    pending: PendingErrors,
    failure: Option<FailureTracker>,
    /// The call depth followed without a diagnostic (see [`watching_depth`](Self::watching_depth)).
    depth: Option<CallStack>,
    /// When the program was not chosen by a first pass: what is checked on the way.
    check: Check<'p, 'o, 'd>,
    /// This line's number in the whole input.
    line_no: u64,
    /// Unrecognised unindented lines since the last instruction.
    unexplained: u64,
    /// Lines held while it is not known whether the log has the kernel's annotation lines.
    waiting: Waiting,
    cut: CutTop,
    stats: AnnotateStats,
}

impl<'p, 'o, 'd> SegmentAnnotator<'p, 'o, 'd> {
    /// An annotator for `program` (`None`: the log is passed through as it is).
    pub(crate) fn new(
        program: Option<&'p Program<'o, 'd>>,
        options: &'p AnnotateOptions,
        existing: ExistingAnnotations,
        skip_first: bool,
    ) -> Self {
        let details_verbatim = options.format == OutputFormat::Text && !options.annotate_all;
        SegmentAnnotator {
            program,
            options,
            rule: KernelRule::default(),
            rich_last: None,
            rich_keys: RichKeys::default(),
            rich_lines: InsnBytes::with_budget(RICH_LINES_HELD),
            annotations: Vec::new(),
            json_sources: json::SourceCache::default(),
            existing,
            details_verbatim,
            kernel_verbatim: details_verbatim
                && options.palette.error.is_plain()
                && !options.diagnostic
                && options.style == Style::Kernel
                && options.palette.source.is_plain()
                && options.context == 0,
            skip_first,
            pending: PendingErrors::default(),
            failure: (options.diagnostic && program.is_some()).then(FailureTracker::default),
            depth: None,
            check: Check::Nothing,
            line_no: 0,
            unexplained: 0,
            waiting: Waiting::default(),
            cut: CutTop::default(),
            stats: AnnotateStats::default(),
        }
    }

    /// Whether the log was found not to fit the program it is checked against (or, going on
    /// with a first pass, to fit no program), and the options ask to stop there
    /// ([`AnnotateOptions::stop_at_misfit`]).
    #[inline]
    pub(crate) fn halted(&self) -> bool {
        self.options.stop_at_misfit
            && match &self.check {
                Check::Nothing => false,
                Check::Fit(selector) => selector.ruled_out(),
                Check::Plan(pending, _) => pending.refused(),
            }
    }

    /// Also follows the call depth, when no diagnostic does, to tell where a log goes deeper
    /// than the kernel allows ([`AnnotateStats::too_deep`]).
    pub(crate) fn watching_depth(mut self) -> Self {
        if self.failure.is_none() && self.program.is_some() {
            self.depth = Some(CallStack::default());
        }
        self
    }

    /// Also checks, on the way, that the log fits the program.
    pub(crate) fn checking(mut self) -> Self {
        if let Some(p) = self.program {
            self.check = Check::Fit(Selector::new(vec![p]));
        }
        self
    }

    /// Also goes on with the first pass over the log, which read it up to line `after`:
    /// [`finish_planning`](Self::finish_planning) says what it concludes.
    pub(crate) fn planning(mut self, pending: Pending<'p, 'o, 'd>, after: u64) -> Self {
        self.check = Check::Plan(Box::new(pending), after);
        self
    }

    /// Whether a detail line ([`is_detail`](bpflog_log::is_detail)) would only be counted and
    /// written as it came in: then [`only_counts`](Self::only_counts) takes it, unclassified,
    /// and the caller writes it.
    #[inline]
    pub(crate) fn takes_details(&self) -> bool {
        self.details_verbatim
            && (!self.undecided() || self.waiting.is_empty())
            && self.program.is_some()
            && !self.skip_first
            && self.check.ignores_details()
            && self.pending.is_empty()
    }

    /// Whether it is not known yet whether the kernel's own annotation lines are in the log,
    /// and that matters: lines from the first instruction or annotation line on then wait, in
    /// order (see [`line`](Self::line)).
    #[inline]
    fn undecided(&self) -> bool {
        self.existing == ExistingAnnotations::Unknown
            && self.options.style == Style::Kernel
            && self.options.format == OutputFormat::Text
            && self.program.is_some()
    }

    /// Detail line `line_no`, which [`takes_details`](Self::takes_details) said it takes: what
    /// [`line`](Self::line) would do with it, but the writing.
    #[inline]
    pub(crate) fn detail(&mut self, line_no: u64) {
        self.stats.lines += 1;
        self.line_no = line_no;
        if let Some(f) = &mut self.failure {
            f.skip(1);
        }
    }

    /// One line of the log.
    pub(crate) fn line(
        &mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        line: LogLine<'_>,
    ) -> io::Result<()> {
        if self.kernel_verbatim
            && self.existing == ExistingAnnotations::Current
            && !self.skip_first
            && let Some(program) = self.program
        {
            return self.verbatim(out, line, program);
        }
        // Not knowing yet whether the kernel's own lines are in the log (a log cut at the top
        // may start with instructions whose line was printed before the cut), the first lines
        // wait for the first annotation line, or for enough instructions without one. Only
        // instruction and annotation lines go out differently either way: the lines before the
        // first of them (the liveness listing, the first state) need not wait.
        if self.undecided() {
            let kind = classify(line.payload);
            if self.waiting.is_empty() && !matches!(kind, Line::Insn(_) | Line::Annotation(_)) {
                return self.process(out, sources, line);
            }
            // A line with ` @ file:line` settles it; lines without (old kernels, or the cut end
            // of a state line that starts with `;`) only lean towards old.
            let current = matches!(kind, Line::Annotation(a) if a.location.is_some());
            self.waiting.old |= matches!(kind, Line::Annotation(a) if a.location.is_none());
            self.waiting.push(&line, matches!(kind, Line::Insn(_)));
            if current {
                return self.decide(out, sources, ExistingAnnotations::Current);
            }
            if self.waiting.is_full() {
                return self.decide(out, sources, self.waiting.verdict());
            }
            return Ok(());
        }
        self.process(out, sources, line)
    }

    /// The kernel's lines are (or are not) in the log: the waiting lines go through.
    fn decide(
        &mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        existing: ExistingAnnotations,
    ) -> io::Result<()> {
        self.existing = existing;
        let waiting = std::mem::take(&mut self.waiting);
        for line in waiting.lines() {
            self.process(out, sources, line)?;
        }
        Ok(())
    }

    /// The log has ended before it said for sure whether the kernel's lines are in it: the
    /// waiting lines go through by what they suggest.
    fn settle(&mut self, out: &mut impl Write, sources: &mut SourceFiles) -> io::Result<()> {
        if self.waiting.is_empty() {
            return Ok(());
        }
        self.decide(out, sources, self.waiting.verdict())
    }

    fn process(
        &mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        line: LogLine<'_>,
    ) -> io::Result<()> {
        let LogLine {
            line_no,
            text,
            prefix,
            payload,
            newline,
            indent,
        } = line;
        self.stats.lines += 1;
        self.line_no = line_no;
        let json = self.options.format == OutputFormat::Json;
        let Some(program) = self.program else {
            if json {
                return json::record(out, line_no, "other", payload, None, None);
            }
            return out.write_all(text);
        };
        if std::mem::take(&mut self.skip_first) {
            if json {
                return json::record(out, line_no, "cut", payload, Some(program), None);
            }
            return out.write_all(text);
        }
        let inserted_newline: &[u8] = if newline.is_empty() { b"\n" } else { newline };
        let kind = classify(payload);
        self.observe(&kind, line_no, payload);
        // Lines that may be the final error wait until the next line says whether the log ends.
        if !self.options.palette.error.is_plain() || self.failure.is_some() || json {
            let held = match kind {
                Line::Other if !payload.starts_with(b" ") => {
                    self.pending.push(line_no, prefix, payload, newline, false)
                }
                // Statistics (log level 4) may stand between the error and the summary.
                Line::Stats if !self.pending.is_empty() => {
                    self.pending.push(line_no, prefix, payload, newline, true)
                }
                _ => false,
            };
            if held {
                return Ok(());
            }
            let is_error = matches!(kind, Line::Summary);
            self.flush_pending(out, is_error)?;
        }
        if json {
            if let Line::Insn(insn) = kind {
                self.count_insn(insn.index, program);
            }
            return json::line(
                out,
                line_no,
                &kind,
                payload,
                program,
                &mut self.json_sources,
            );
        }
        let mut w = Writer {
            out,
            sources,
            options: self.options,
            program,
            indent,
            newline: inserted_newline,
        };
        match kind {
            Line::Insn(insn) => {
                self.count_insn(insn.index, program);
                match self.options.style {
                    Style::Kernel if matches!(self.existing, ExistingAnnotations::Current) => {}
                    Style::Kernel => {
                        if let Some(row) = self.kernel_source_line(program, &insn) {
                            w.kernel_annotation(&program.lines.rows()[row])?;
                        }
                    }
                    Style::Rich => {
                        let (last, keys) = (&mut self.rich_last, &mut self.rich_keys);
                        if w.rich_annotation(insn.index, last, keys, &mut self.rich_lines)? {
                            self.stats.inserted += 1;
                        }
                    }
                }
            }
            Line::Validating { .. } => self.new_pass(),
            Line::Annotation(a) => {
                if self.existing == ExistingAnnotations::Unknown {
                    self.existing = if a.location.is_some() {
                        ExistingAnnotations::Current
                    } else {
                        ExistingAnnotations::Old
                    };
                }
                if self.options.style == Style::Kernel
                    && self.existing == ExistingAnnotations::Current
                {
                    self.stats.kept += 1;
                    w.kept_annotation(prefix, payload, a.text, a.location)?;
                } else {
                    self.stats.replaced += 1;
                }
                return Ok(());
            }
            Line::MarkPrecise if self.options.annotate_all => {
                if let Some(index) = precise_index(payload) {
                    w.out.write_all(prefix)?;
                    w.out.write_all(payload)?;
                    w.trailing_location(index)?;
                    return w.out.write_all(newline);
                }
            }
            Line::LiveRegsRow { index, .. } if self.options.annotate_all => {
                w.out.write_all(prefix)?;
                w.out.write_all(payload)?;
                w.trailing_location(index)?;
                return w.out.write_all(newline);
            }
            _ => {}
        }
        out.write_all(text)
    }

    /// A line of a log whose lines all go out as they came in (kernel style, plain, the kernel's
    /// current annotation lines in the log; see [`SegmentAnnotator::kernel_verbatim`]): counted
    /// and checked, then written. Kept apart from [`process`](Self::process), whose other
    /// paths make it a large function to enter for every line.
    fn verbatim(
        &mut self,
        out: &mut impl Write,
        line: LogLine<'_>,
        program: &Program<'_, '_>,
    ) -> io::Result<()> {
        out.write_all(line.text)?;
        // As [`Writer::kept_annotation`] writes an annotation line: with a line end, also at the
        // end of the input.
        if self.count_verbatim(line.line_no, line.payload, program) && line.newline.is_empty() {
            return out.write_all(b"\n");
        }
        Ok(())
    }

    /// Whether `line` goes out as it came in (after a source line the kernel would have
    /// printed before it): a detail line [`takes_details`](Self::takes_details) takes, or a line
    /// that ends with its line end, of a log in kernel style, plain, whose annotation lines are
    /// known (see [`verbatim`](Self::verbatim)). Then it is counted and checked, and the caller
    /// writes the source line ([`annotation`](Self::annotation)) and the line. Otherwise
    /// nothing is done, and the line goes to [`line`](Self::line).
    #[inline]
    pub(crate) fn passes(&mut self, line: &LogLine<'_>) -> Pass {
        if self.only_counts(line) {
            return Pass::Line;
        }
        if !self.kernel_verbatim || self.skip_first || line.newline.is_empty() {
            return Pass::No;
        }
        let Some(program) = self.program else {
            return Pass::No;
        };
        match self.existing {
            ExistingAnnotations::Absent | ExistingAnnotations::Old => {
                self.count_inserting(line, program)
            }
            // A line of a log with the kernel's current lines was taken above.
            ExistingAnnotations::Current | ExistingAnnotations::Unknown => Pass::No,
        }
    }

    /// Whether every whole line of the log goes out as it came in, only counted and checked by
    /// [`count_whole`](Self::count_whole): a log in kernel style, plain (no diagnostic either),
    /// with the kernel's current annotation lines. Once true, it holds to the end of the log.
    #[inline]
    pub(crate) fn whole_lines_only_count(&self) -> bool {
        self.kernel_verbatim
            && self.existing == ExistingAnnotations::Current
            && !self.skip_first
            && self.program.is_some()
    }

    /// While [`whole_lines_only_count`](Self::whole_lines_only_count): counts line `line_no`
    /// (`payload`, without its line end) as [`only_counts`](Self::only_counts) would, without
    /// the tests that then hold for every line, if it is a kernel line ([`is_kernel_line`]);
    /// whether it is. An instruction line's start, parsed once for the count, tells it is one.
    #[inline]
    pub(crate) fn count_whole(&mut self, line_no: u64, payload: &[u8]) -> bool {
        let Some(program) = self.program else {
            return false;
        };
        let head = insn_head(payload);
        if head.is_none() && !is_kernel_line(payload) {
            return false;
        }
        self.count_head(head.as_ref(), line_no, payload, program);
        true
    }

    /// Whether `line` goes out as it came in with nothing before it, so that it only needs
    /// counting and checking (done, when it does): a detail line
    /// [`takes_details`](Self::takes_details) takes, or a line that ends with its line end in
    /// plain text: in kernel style, plain, any line of a log with the kernel's current
    /// annotation lines and most lines of one whose source lines are inserted (see
    /// [`count_uninserted`](Self::count_uninserted)); otherwise, with no error line held, an
    /// instruction line that gets no annotation line (see
    /// [`count_unannotated`](Self::count_unannotated)). A reader takes the lines after such a
    /// line the same way, as long as they are read already and go: most lines of most logs.
    #[inline]
    pub(crate) fn only_counts(&mut self, line: &LogLine<'_>) -> bool {
        if is_detail(line.payload) && self.takes_details() {
            self.detail(line.line_no);
            return true;
        }
        if self.skip_first || line.newline.is_empty() || !self.details_verbatim {
            return false;
        }
        let Some(program) = self.program else {
            return false;
        };
        if self.whole_lines_only_count() {
            self.count_verbatim(line.line_no, line.payload, program);
            return true;
        }
        if !self.pending.is_empty() {
            // An error line held: the next line says whether it was the error.
            return false;
        }
        if let Some(head) = insn_head(line.payload) {
            return self.count_unannotated(&head, line, program);
        }
        self.kernel_verbatim
            && matches!(
                self.existing,
                ExistingAnnotations::Absent | ExistingAnnotations::Old
            )
            && self.count_uninserted(line)
    }

    /// [`process`](Self::process) of the instruction line `head` (`line`), when it goes out as
    /// it came in with no annotation line before it, done (`true`): an instruction seen before,
    /// at the location printed last in rich style, with no source line before it in kernel
    /// style (none inserted into a log with the kernel's current lines; the kernel's rule
    /// otherwise, which must not need to read the line, see [`KernelRule::reads_after`]).
    /// `false`, and nothing done, for any other.
    fn count_unannotated(
        &mut self,
        head: &InsnHead<'_>,
        line: &LogLine<'_>,
        program: &Program<'_, '_>,
    ) -> bool {
        let annotated = match self.options.style {
            // As `Writer::rich_annotation` decides whether it writes.
            Style::Rich => {
                let key = self.rich_keys.get(program, head.index);
                key.is_some() && key != self.rich_last
            }
            Style::Kernel => match self.existing {
                ExistingAnnotations::Current => false,
                ExistingAnnotations::Absent | ExistingAnnotations::Old => {
                    KernelRule::reads_after(head) || self.rule.prints_before(program, head.index)
                }
                // Lines wait until it is known (see `line`).
                ExistingAnnotations::Unknown => true,
            },
        };
        if annotated || !self.insn_seen(head, line.line_no, line.payload, program) {
            return false;
        }
        self.stats.lines += 1;
        self.line_no = line.line_no;
        true
    }

    /// [`count_inserting`](Self::count_inserting) of a line other than an instruction's that
    /// goes out as it came in, done (`true`); `false`, and nothing done, for an old kernel's
    /// annotation line and a line that starts a verification pass (and an instruction line of
    /// libbpf's, `N: <invalid ...>`).
    fn count_uninserted(&mut self, line: &LogLine<'_>) -> bool {
        let kind = classify(line.payload);
        if matches!(
            kind,
            Line::Insn(_) | Line::Annotation(_) | Line::Validating { .. }
        ) {
            return false;
        }
        self.stats.lines += 1;
        self.line_no = line.line_no;
        self.observe(&kind, line.line_no, line.payload);
        true
    }

    /// What [`process`](Self::process) does with a line of a log whose source lines are
    /// inserted, but the writing: whether the kernel printed a source line before it.
    fn count_inserting(&mut self, line: &LogLine<'_>, program: &Program<'_, '_>) -> Pass {
        let kind = classify(line.payload);
        if matches!(kind, Line::Annotation(_)) {
            // An old kernel's line, replaced: not written at all.
            return Pass::No;
        }
        self.stats.lines += 1;
        self.line_no = line.line_no;
        self.observe(&kind, line.line_no, line.payload);
        match kind {
            Line::Insn(insn) => {
                self.count_insn(insn.index, program);
                if let Some(row) = self.kernel_source_line(program, &insn) {
                    return Pass::After(row);
                }
            }
            Line::Validating { .. } => self.new_pass(),
            _ => {}
        }
        Pass::Line
    }

    /// The record of the line table whose source line the kernel printed before the instruction
    /// line `insn`, if it printed one (counted as inserted); the kernel's rule goes on past it.
    fn kernel_source_line(
        &mut self,
        program: &Program<'_, '_>,
        insn: &bpflog_log::InsnLine<'_>,
    ) -> Option<usize> {
        let row = self.rule.row_before_insn(program, insn.index);
        self.rule.after_insn(program, insn);
        self.stats.inserted += u64::from(row.is_some());
        row
    }

    /// A verification pass starts (`Validating ...`): the source line printed last is forgotten.
    fn new_pass(&mut self) {
        self.rule.reset();
        self.rich_last = None;
    }

    /// The source line [`passes`](Self::passes) said goes before `line`: that of the line
    /// table's record `row`, as [`Writer::kernel_annotation`] writes it. The bytes of each record
    /// are put together once, from the text `.BTF` holds.
    pub(crate) fn annotation(
        &mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        row: usize,
        line: &LogLine<'_>,
    ) -> io::Result<()> {
        let Some(program) = self.program else {
            return Ok(());
        };
        let Some(record) = program.lines.rows().get(row) else {
            return Ok(());
        };
        let mut writer = |mut out: &mut dyn Write, indent, newline| {
            Writer {
                out: &mut out,
                sources: &mut *sources,
                options: self.options,
                program,
                indent,
                newline,
            }
            .kernel_annotation(record)
        };
        if program.lines.origin() == LineOrigin::Dwarf {
            // The text comes from the source file, if it is found.
            return writer(out, line.indent, line.newline);
        }
        if self.annotations.len() <= row {
            // As far as the log goes (not the whole program: each log has its own).
            self.annotations.resize(row + 1, None);
        }
        let bytes = match &mut self.annotations[row] {
            Some(bytes) => bytes,
            empty => {
                let mut bytes = Vec::new();
                writer(&mut bytes, b"", b"")?;
                empty.insert(bytes.into_boxed_slice())
            }
        };
        out.write_all(line.indent)?;
        out.write_all(bytes)?;
        out.write_all(line.newline)
    }

    /// What a line of a log that goes out as it came in does to the counts and checks; whether
    /// it is an annotation line.
    fn count_verbatim(&mut self, line_no: u64, payload: &[u8], program: &Program<'_, '_>) -> bool {
        self.count_head(insn_head(payload).as_ref(), line_no, payload, program)
    }

    /// [`count_verbatim`](Self::count_verbatim), with the line's instruction start (if any)
    /// parsed already.
    #[inline(always)]
    fn count_head(
        &mut self,
        head: Option<&InsnHead<'_>>,
        line_no: u64,
        payload: &[u8],
        program: &Program<'_, '_>,
    ) -> bool {
        self.stats.lines += 1;
        self.line_no = line_no;
        // Most lines: an instruction seen before, which the checks only count ...
        if let Some(head) = head
            && self.insn_seen(head, line_no, payload, program)
        {
            return false;
        }
        self.count_other(line_no, payload, program)
    }

    /// [`count_verbatim`](Self::count_verbatim) of a line the checks do more than count.
    #[inline(never)]
    fn count_other(&mut self, line_no: u64, payload: &[u8], program: &Program<'_, '_>) -> bool {
        // ... or a line that only details the verifier's work, which they pass over.
        if is_detail(payload) && self.check.ignores_details() {
            return false;
        }
        let kind = classify(payload);
        self.observe(&kind, line_no, payload);
        // The kernel's rule is not needed: no annotation line is inserted into such a log.
        match kind {
            Line::Insn(insn) => self.count_insn(insn.index, program),
            Line::Annotation(_) => {
                self.stats.kept += 1;
                return true;
            }
            _ => {}
        }
        false
    }

    /// What the checks and trackers take from every line of the log.
    #[inline(always)]
    fn observe(&mut self, kind: &Line<'_>, line_no: u64, payload: &[u8]) {
        self.cut.observe(kind);
        match &mut self.check {
            Check::Nothing => {}
            Check::Fit(selector) => selector.observe(kind, line_no),
            Check::Plan(pending, after) if line_no > *after => pending.observe(kind, line_no),
            Check::Plan(..) => {}
        }
        let too_deep = match (&mut self.failure, &mut self.depth) {
            (Some(f), _) => f.observe(kind, payload),
            (None, Some(calls)) => calls.observe(kind, payload),
            (None, None) => false,
        };
        if too_deep {
            self.stats.too_deep.get_or_insert(line_no);
        }
        // Unrecognised lines after the last instruction, then the summary: a rejection.
        match kind {
            Line::Insn(_) => self.unexplained = 0,
            Line::Other if !payload.starts_with(b" ") => self.unexplained += 1,
            Line::Summary => {
                self.stats.rejected |= self.unexplained > 0 && self.stats.instructions > 0
            }
            _ => {}
        }
    }

    /// What [`observe`](Self::observe) and [`count_insn`](Self::count_insn) do with the line
    /// of instruction `head` (line `line_no`, `payload` without its line end), when the checks
    /// have seen it before and only count it (see [`Selector::insn_seen`]): `false`, and
    /// nothing done, otherwise.
    #[inline(always)]
    fn insn_seen(
        &mut self,
        head: &InsnHead<'_>,
        line_no: u64,
        payload: &[u8],
        program: &Program<'_, '_>,
    ) -> bool {
        if !self.check.insn_seen(head, line_no) {
            return false;
        }
        self.cut.insn(head.index);
        let too_deep = match (&mut self.failure, &mut self.depth) {
            (Some(f), _) => f.insn(head.index, Some(head.opcode), payload),
            (None, Some(calls)) => calls.insn(head.index, Some(head.opcode)),
            (None, None) => false,
        };
        if too_deep {
            self.stats.too_deep.get_or_insert(line_no);
        }
        self.unexplained = 0;
        self.count_insn(head.index, program);
        true
    }

    #[inline]
    fn count_insn(&mut self, index: u64, program: &Program<'_, '_>) {
        self.stats.instructions += 1;
        if index >= u64::from(program.layout.len) {
            self.stats.out_of_range += 1;
        }
    }

    /// The log has ended: held lines were its error; the diagnostic follows when asked.
    pub(crate) fn finish(
        mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
    ) -> io::Result<AnnotateStats> {
        self.settle(out, sources)?;
        // A log that ends (cut) on unrecognised lines after its last instruction.
        self.stats.rejected |= self.unexplained > 0 && self.stats.instructions > 0;
        self.stats.cut = self.cut.cut;
        self.flush_pending(out, true)?;
        if self.options.format == OutputFormat::Json {
            return Ok(self.stats);
        }
        if let (Some(program), Some(failure)) = (self.program, self.failure.take())
            && let Some(report) = failure.report()
        {
            self.stats.rejected = true;
            crate::diagnostic::render(&report, program, sources, &self.options.palette, out)?;
        }
        Ok(self.stats)
    }

    /// Writes the held lines: as the verifier's error when `is_error`.
    fn flush_pending(&mut self, out: &mut impl Write, is_error: bool) -> io::Result<()> {
        if self.options.format == OutputFormat::Json {
            let program = self.program;
            for (line_no, payload, plain) in self.pending.held() {
                let kind = if is_error && !plain {
                    "error"
                } else if plain {
                    "stats"
                } else {
                    "other"
                };
                json::record(out, line_no, kind, payload, program, None)?;
            }
            self.pending.clear();
            return Ok(());
        }
        self.pending.flush(out, &self.options.palette, is_error)
    }

    /// Like [`finish`](Self::finish), also with what the check concludes when one was asked for
    /// (`None` otherwise): the program's evidence, or why the log does not fit it.
    pub(crate) fn finish_checked(
        mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
    ) -> io::Result<(AnnotateStats, Option<Result<Selection, SelectError>>)> {
        // The lines still waiting are evidence too.
        self.settle(out, sources)?;
        let fit = match std::mem::replace(&mut self.check, Check::Nothing) {
            Check::Fit(selector) => Some(selector.finish()),
            _ => None,
        };
        Ok((self.finish(out, sources)?, fit))
    }

    /// Like [`finish`](Self::finish), also with what the first pass concludes about the log
    /// when it was [`planning`](Self::planning) (`None` otherwise).
    pub(crate) fn finish_planning(
        mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
    ) -> io::Result<(AnnotateStats, Option<Result<SegmentPlan, PlanError>>)> {
        self.settle(out, sources)?;
        let plan = match std::mem::replace(&mut self.check, Check::Nothing) {
            Check::Plan(pending, _) => Some(crate::plan::close(*pending)),
            _ => None,
        };
        Ok((self.finish(out, sources)?, plan))
    }
}

/// What an annotator whose program was not chosen by a first pass checks on the way.
enum Check<'p, 'o, 'd> {
    Nothing,
    /// That the log fits the program.
    Fit(Selector<'p, 'o, 'd>),
    /// The rest of a first pass over the log, which read it up to the line given.
    Plan(Box<Pending<'p, 'o, 'd>>, u64),
}

impl Check<'_, '_, '_> {
    /// What observing the line of instruction `head` (line `line_no`) does, when the check
    /// has seen that instruction with that opcode before (see [`Selector::insn_seen`]) and has
    /// nothing more to do with it than count it: `false`, and nothing done, otherwise.
    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, line_no: u64) -> bool {
        match self {
            Check::Nothing => true,
            Check::Fit(selector) => selector.insn_seen(head),
            Check::Plan(pending, after) => line_no > *after && pending.insn_seen(head),
        }
    }

    /// Whether detail lines tell it nothing: the selector looks only at instructions, annotation
    /// and function lines; the first pass also at the first line it is given. (Once a log's
    /// annotation lines are known, the first pass has always had its first line; this holds
    /// the shortcut to what it needs, not to that.)
    #[inline]
    fn ignores_details(&self) -> bool {
        match self {
            Check::Nothing => true,
            Check::Fit(selector) => selector.ignores_details(),
            Check::Plan(pending, _) => pending.ignores_details(),
        }
    }
}

/// Writes the lines an annotator adds, for one input line.
struct Writer<'w, 'p, 'o, 'd, W> {
    out: &'w mut W,
    sources: &'w mut SourceFiles,
    options: &'p AnnotateOptions,
    program: &'p Program<'o, 'd>,
    /// Written before each added line.
    indent: &'w [u8],
    newline: &'w [u8],
}

impl<W: Write> Writer<'_, '_, '_, '_, W> {
    /// `; text @ file:line`, then context lines when asked.
    fn kernel_annotation(&mut self, row: &LineRow<'_>) -> io::Result<()> {
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
        self.out.write_all(self.indent)?;
        write_styled(self.out, p.punct, b"; ")?;
        // The object's text, escaped: no control byte but TAB is in a real source line, so
        // real logs keep the kernel's bytes.
        write_shown(self.out, p.source, text)?;
        write_styled(self.out, p.punct, b" @ ")?;
        write_location(self.out, p.location, row.basename(), row.line, 0)?;
        self.out.write_all(self.newline)?;
        self.context(row.file, row.line)
    }

    /// An annotation line that was in the log: as it was; styled when colors are on (for a
    /// terminal: then its text and file are escaped as the object's are).
    fn kept_annotation(
        &mut self,
        prefix: &[u8],
        payload: &[u8],
        text: &[u8],
        at: Option<(&[u8], u32)>,
    ) -> io::Result<()> {
        let p = self.options.palette;
        self.out.write_all(prefix)?;
        if p.source.is_plain() {
            self.out.write_all(payload)?;
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

    /// The rich annotation before instruction `index`, when its location differs from `last`.
    /// Its lines depend on the instruction alone but for their indent and line end: for a log
    /// without indent and with plain line ends, they are put together once and held in `held`.
    fn rich_annotation(
        &mut self,
        index: u64,
        last: &mut Option<u64>,
        keys: &mut RichKeys,
        held: &mut InsnBytes,
    ) -> io::Result<bool> {
        let program = self.program;
        // Most instruction lines repeat the location before them: known without locating.
        let key = keys.get(program, index);
        if key.is_none() || *last == key {
            return Ok(false);
        }
        let Ok(index) = u32::try_from(index) else {
            return Ok(false);
        };
        let written = if self.indent.is_empty() && self.newline == b"\n" {
            let (sources, options) = (&mut *self.sources, self.options);
            let make = |bytes: &mut Vec<u8>| {
                let mut w = Writer {
                    out: bytes,
                    sources,
                    options,
                    program,
                    indent: b"",
                    newline: b"\n",
                };
                w.rich_lines(index).map(drop)
            };
            held.write(self.out, index, program.layout.len, make)? > 0
        } else {
            self.rich_lines(index)?
        };
        if written {
            *last = key;
        }
        Ok(written)
    }

    /// The rich annotation lines of instruction `index`; whether it has a location (else
    /// nothing is written).
    fn rich_lines(&mut self, index: u32) -> io::Result<bool> {
        let Some(src) = locate(self.program, index) else {
            return Ok(false);
        };
        let p = self.options.palette;
        let file = self.sources.get(src.file);
        let real_line = file.as_ref().and_then(|f| f.line(src.line));
        self.out.write_all(self.indent)?;
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
            self.out.write_all(self.indent)?;
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
    fn context(&mut self, file: &[u8], line: u32) -> io::Result<()> {
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
        self.out.write_all(self.indent)?;
        write_styled(self.out, p.punct, gutter.as_bytes())?;
        write_shown(self.out, if marked { p.source } else { p.context }, text)?;
        self.out.write_all(self.newline)
    }

    /// ` // file:line` after a backtracking line or liveness row (`--annotate-all`): the
    /// kernel's record in kernel style, the rich location otherwise.
    fn trailing_location(&mut self, index: u64) -> io::Result<()> {
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

/// The most bytes of rich annotation lines a log holds (see
/// [`Writer::rich_annotation`]): with their colors they run to 60–200 bytes an instruction.
const RICH_LINES_HELD: usize = 16 << 20;

/// The digest of each instruction's rich location ([`rich_key`]), worked out on its first visit:
/// a log visits the same instructions over and over.
#[derive(Default)]
struct RichKeys {
    /// Per instruction: [`UNKNOWN`](Self::UNKNOWN), [`NOWHERE`](Self::NOWHERE) or the digest.
    keys: Vec<u64>,
}

impl RichKeys {
    const UNKNOWN: u64 = 0;
    /// The instruction has no location.
    const NOWHERE: u64 = 1;

    fn get(&mut self, program: &Program<'_, '_>, index: u64) -> Option<u64> {
        let i = u32::try_from(index).ok()?;
        if i >= program.layout.len {
            // Past the program: located (or not) every time, as it is rare.
            return locate(program, i).map(|src| rich_key(&src));
        }
        // The table grows as far as the log goes: one of the whole program for every log cost
        // a file of many logs of a large program most of its time.
        if self.keys.len() <= i as usize {
            self.keys.resize(i as usize + 1, Self::UNKNOWN);
        }
        let slot = &mut self.keys[i as usize];
        if *slot == Self::UNKNOWN {
            // A digest that falls on a reserved value moves off it.
            *slot = locate(program, i).map_or(Self::NOWHERE, |src| rich_key(&src).max(2));
        }
        (*slot != Self::NOWHERE).then_some(*slot)
    }
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
pub(crate) fn precise_index(line: &[u8]) -> Option<u64> {
    static BEFORE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b" before "));
    let at = BEFORE.find(line)? + 8;
    let rest = &line[at..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || !rest[digits..].starts_with(b": ") {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

/// Lines held until it is known whether the log carries the kernel's annotation lines.
#[derive(Default)]
struct Waiting {
    bytes: Vec<u8>,
    /// Per line: its number, where its parts end in `bytes` (prefix, payload, newline,
    /// indent).
    lines: Vec<(u64, [usize; 4])>,
    instructions: usize,
    /// An annotation line without ` @ file:line` came.
    old: bool,
}

impl Waiting {
    /// After this many instructions without an annotation line, the log has none...
    const INSTRUCTIONS: usize = 64;
    /// ...or after this many bytes.
    const BYTES: usize = 1 << 20;

    fn push(&mut self, line: &LogLine<'_>, insn: bool) {
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
    fn verdict(&self) -> ExistingAnnotations {
        if self.old {
            ExistingAnnotations::Old
        } else {
            ExistingAnnotations::Absent
        }
    }

    fn is_full(&self) -> bool {
        self.instructions >= Self::INSTRUCTIONS || self.bytes.len() >= Self::BYTES
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The held lines.
    fn lines(&self) -> impl Iterator<Item = LogLine<'_>> {
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
struct PendingErrors {
    bytes: Vec<u8>,
    /// For each held line: where its prefix, payload and newline end inside `bytes`, and
    /// whether it is never an error (statistics).
    lines: Vec<(usize, usize, usize, usize, bool)>,
    /// The input line number of each held line.
    line_nos: Vec<u64>,
}

impl PendingErrors {
    /// At most this many bytes are held; past it they are written plain.
    const LIMIT: usize = 64 * 1024;

    /// Holds a line; `false` when the buffer is full (the caller writes it plainly).
    fn push(
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

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The held lines: number, payload, whether never an error.
    fn held(&self) -> impl Iterator<Item = (u64, &[u8], bool)> {
        self.lines
            .iter()
            .zip(&self.line_nos)
            .map(|(&(_, ps, pe, _, plain), &n)| (n, &self.bytes[ps..pe], plain))
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.lines.clear();
        self.line_nos.clear();
    }

    /// Writes the held lines, styled as errors when `is_error`.
    fn flush(&mut self, out: &mut impl Write, p: &Palette, is_error: bool) -> io::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_before_the_first_instruction_do_not_wait() {
        // Until a log shows whether it carries the kernel's source lines, its lines from the
        // first instruction or annotation line on wait; the liveness listing before them (as
        // long as the program) goes out at once. What comes out in the end is the same.
        crate::testing::with_branchy(|program, log| {
            let options = AnnotateOptions::default();
            let existing = ExistingAnnotations::Unknown;
            let mut seg = SegmentAnnotator::new(Some(program), &options, existing, false);
            let mut sources = SourceFiles::new(options.sources.clone());
            let (mut out, mut head) = (Vec::new(), None);
            for (i, text) in log.split_inclusive(|&b| b == b'\n').enumerate() {
                let line = LogLine::bare(i as u64 + 1, text, split_newline(text));
                let kind = classify(line.payload);
                if head.is_none() && matches!(kind, Line::Insn(_) | Line::Annotation(_)) {
                    head = Some(out.clone());
                }
                seg.line(&mut out, &mut sources, line).unwrap();
            }
            seg.finish(&mut out, &mut sources).unwrap();
            let head = head.unwrap();
            assert!(head.starts_with(b"func#0 @0\nLive regs before insn:\n") && head.len() > 2000);
            assert!(log.starts_with(&head));
            assert!(out == log, "the log comes back as it was");
        });
    }

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
    }
}
