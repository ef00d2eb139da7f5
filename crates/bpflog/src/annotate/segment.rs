//! [`SegmentAnnotator`]: one log's annotation, line by line: the kernel's rule, the lines
//! that only need counting, the lines held while a question about the log is open.

use super::check::Check;
use super::held::{PendingErrors, Waiting};
use super::rich_keys::{CarriedCache, ProgramCache};
use super::rows::{AnnotatedRows, NoRows};
use super::writer::Writer;
use super::{AnnotateOptions, AnnotateStats, Disposition, LogLine, OutputFormat, Style};
use crate::Program;
use crate::checked_insns::{Fitted, FittedLines};
use crate::diagnostic::CallStack;
use crate::escape::write_log_lines;
use crate::explain::{Concluded, ExplainFormat, Explainer, JsonExplanation};
use crate::frame::LoadFailedAt;
use crate::json;
use crate::kernel_rule::KernelRule;
use crate::plan::{CutTop, ExistingAnnotations, Pending, PlanError, SegmentPlan};
use crate::profile::Profiler;
use crate::select::{SelectError, Selection, Selector};
use crate::sink::{Observer, decode_with};
use crate::source::SourceFiles;
#[cfg(not(test))]
use bpflog_log::classify;
use bpflog_log::{
    InsnHead, Line, SourceLines, insn_head, is_detail, precise_index, source_line_before_error,
    source_lines_shown,
};
use bpflog_object::LineOrigin;
use std::io::{self, Write};
#[cfg(test)]
use tests::classify;

/// The annotator of one program's log: its state between lines.
pub(crate) struct SegmentAnnotator<'p, 'o, 'd> {
    program: Option<&'p Program<'o, 'd>>,
    options: &'p AnnotateOptions,
    /// The kernel's rule, for the form of source lines [`decide`](Self::decide) settles.
    rule: KernelRule,
    /// The form of source lines a line showed while it was not known whether the kernel's
    /// lines are in the log ([`source_lines_shown`]).
    shown: Option<SourceLines>,
    /// The instruction of the last instruction line, while only empty lines followed it: a
    /// `from N to M:` line after instruction N's says the verifier dropped the path after it
    /// ([`KernelRule::resumed_after`]).
    last_insn: Option<u64>,
    /// The number of the rich location printed last (see
    /// [`RichKeys`](super::rich_keys::RichKeys)): the log's own.
    rich_last: Option<u32>,
    /// Each instruction's rich location number and annotation lines, each record's kernel
    /// source line and each instruction's JSON source member, worked out once (for the
    /// program, when the job carries them from log to log: see [`carrying`](Self::carrying)).
    rich: ProgramCache,
    /// The job's number of the program whose [`ProgramCache`] is carried, when it is.
    rich_of: Option<usize>,
    existing: ExistingAnnotations,
    /// Detail lines go out as they came in (see [`takes_details`](Self::takes_details)): text,
    /// no extra locations. (Colored errors and the diagnostic hold lines back: a detail line
    /// lets them go, so it is taken only while none are held.)
    details_verbatim: bool,
    /// So do all lines of a log with the kernel's current annotation lines (see
    /// [`only_counts`](Self::only_counts)): also kernel style, no colored source, no context.
    kernel_verbatim: bool,
    /// Every line of the log goes out as it came in, only counted and checked (see
    /// [`whole_lines_only_count`](Self::whole_lines_only_count)).
    only_counts: bool,
    /// Lines that may be the verifier's final error are held until the next line says whether
    /// the log ends there: for colored errors, the diagnostic and JSON records.
    holds_errors: bool,
    /// The kernel's annotation lines kept are written anew, not as they came in: colored, or
    /// with context lines.
    restyles_kept: bool,
    /// The first line is the cut end of a line the kernel dropped: pass it through untouched.
    skip_first: bool,
    pending: PendingErrors,
    /// What a rejection's diagnostic and explanation are made of, when they are asked for
    /// ([`AnnotateOptions::diagnostic`]): one more observer of the lines.
    failure: Option<Explainer>,
    /// Beside the diagnostic, the verifier's work counted per line, when asked for
    /// ([`AnnotateOptions::hot_lines`]).
    profiler: Option<Profiler<'p, 'o, 'd>>,
    /// The loader's line that said the log's load failed ([`SegmentStart::load_failed`](crate::frame::SegmentStart::load_failed)).
    pub(crate) load_failed: Option<LoadFailedAt>,
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
        let mut annotator = SegmentAnnotator {
            program,
            options,
            rule: KernelRule::new(options.kernel_lines.unwrap_or_default()),
            shown: None,
            last_insn: None,
            rich_last: None,
            rich: ProgramCache::default(),
            rich_of: None,
            existing,
            details_verbatim,
            kernel_verbatim: details_verbatim
                && options.palette.error.is_plain()
                && !options.diagnostic
                && options.style == Style::Kernel
                && options.palette.source.is_plain()
                && options.context == 0,
            only_counts: false,
            holds_errors: !options.palette.error.is_plain()
                || (options.diagnostic && program.is_some())
                || options.format == OutputFormat::Json,
            restyles_kept: !options.palette.source.is_plain() || options.context > 0,
            skip_first,
            pending: PendingErrors::default(),
            failure: (options.diagnostic && program.is_some()).then(|| Explainer::new(0)),
            profiler: program
                .filter(|_| options.diagnostic && options.hot_lines)
                .map(Profiler::new),
            load_failed: None,
            depth: None,
            check: Check::Nothing,
            line_no: 0,
            unexplained: 0,
            waiting: Waiting::default(),
            cut: CutTop::default(),
            stats: AnnotateStats::default(),
        };
        annotator.only_counts = annotator.only_counts();
        annotator
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

    /// Writes the kernel's source lines in `form`, as a first pass found the log to show it,
    /// unless the options name the form.
    pub(crate) fn showing(mut self, form: SourceLines) -> Self {
        if self.options.kernel_lines.is_none() {
            self.rule = KernelRule::new(form);
        }
        self
    }

    /// Also follows the call depth, when no diagnostic does, to tell where a log goes deeper
    /// than the kernel allows ([`AnnotateStats::too_deep`]).
    pub(crate) fn watching_depth(mut self) -> Self {
        if self.failure.is_none() && self.program.is_some() {
            self.depth = Some(CallStack::default());
        }
        self
    }

    /// Starts from what the rich style (and the kernel style's source lines, and JSON's
    /// source members) worked out in the job's earlier logs of the same program,
    /// the job's number `program` (taken from `carried` until [`carry_back`](Self::carry_back)).
    pub(crate) fn carrying(mut self, carried: &mut CarriedCache, program: Option<usize>) -> Self {
        if let (Some(_), Some(program)) = (self.program, program) {
            self.rich = carried.take(program);
            self.rich_of = Some(program);
        }
        self
    }

    /// Gives what the rich style worked out back to `carried`, for the job's next log, once the
    /// lines still waiting are written: nothing of the rich style is written after it.
    pub(crate) fn carry_back(
        &mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        carried: &mut CarriedCache,
    ) -> io::Result<()> {
        self.settle(out, &mut NoRows, sources)?;
        if let Some(program) = self.rich_of.take() {
            carried.keep(program, std::mem::take(&mut self.rich));
            // Its numbers are forgotten with it.
            self.rich_last = None;
        }
        Ok(())
    }

    /// Also checks, on the way, that the log fits the program, with the instruction lines that
    /// fitted it in earlier logs (taken from `fitted` until [`finish_checked`]).
    ///
    /// [`finish_checked`]: Self::finish_checked
    pub(crate) fn checking(mut self, fitted: &mut FittedLines) -> Self {
        if let Some(p) = self.program {
            let selector = Selector::new(vec![p]).remembering(vec![std::mem::take(fitted)]);
            self.check = Check::Fit(selector);
        }
        self
    }

    /// Also goes on with the first pass over the log, which read it up to line `after`:
    /// [`finish_planning`](Self::finish_planning) says what it concludes.
    pub(crate) fn planning(mut self, pending: Pending<'p, 'o, 'd>, after: u64) -> Self {
        self.check = Check::Plan(Box::new(pending), after);
        self
    }

    /// Whether a detail line ([`is_detail`]) would only be counted and written as it came in:
    /// then [`decide`](Self::decide) passes over it unclassified. Detail lines change nothing it
    /// looks at.
    #[inline]
    pub(crate) fn takes_details(&self) -> bool {
        (!self.undecided() || self.waiting.is_empty()) && self.passes_details()
    }

    /// [`takes_details`](Self::takes_details), were no lines waiting before the detail line
    /// (they go first, in order).
    #[inline]
    fn passes_details(&self) -> bool {
        self.details_verbatim && self.told_nothing_by_details()
    }

    /// Whether a detail line would tell the checks and trackers nothing now (and no line is
    /// held as a possible error).
    #[inline]
    fn told_nothing_by_details(&self) -> bool {
        self.program.is_some()
            && !self.skip_first
            && self.check.ignores_details()
            && self.pending.is_empty()
            && self.profiler.as_ref().is_none_or(Profiler::ignores_details)
            && self.failure.as_ref().is_none_or(Explainer::ignores_details)
    }

    /// Whether it is not known yet whether the kernel's own annotation lines are in the log,
    /// and that matters: lines from the first instruction or annotation line on then wait, in
    /// order (see [`decide`](Self::decide)). In kernel style it says which lines are inserted;
    /// in rich style, which `;` lines are the kernel's, replaced, and which are not
    /// ([`replaces`](Self::replaces): a log cut at the top may start with the tail of a state
    /// line that begins with `;`).
    #[inline]
    fn undecided(&self) -> bool {
        self.existing == ExistingAnnotations::Unknown
            && self.options.format == OutputFormat::Text
            && self.program.is_some()
    }

    /// Whether every line of the log goes out as it came in, only counted and checked: a log in
    /// kernel style, plain (no diagnostic either), with the kernel's current annotation lines.
    /// Once true, it holds to the end of the log.
    #[inline]
    pub(crate) fn whole_lines_only_count(&self) -> bool {
        self.only_counts
    }

    /// [`whole_lines_only_count`](Self::whole_lines_only_count), worked out: kept in
    /// `only_counts` whenever what it depends on changes (the log's annotation lines found, its
    /// first line taken).
    fn only_counts(&self) -> bool {
        self.kernel_verbatim
            && self.existing == ExistingAnnotations::Current
            && !self.skip_first
            && self.program.is_some()
    }

    /// Whether no line is held as a possible error: then a line [`decide`](Self::decide) says
    /// goes out as it came in ([`Disposition::AsIs`], [`Disposition::After`]) is written with
    /// nothing before it but its source line.
    #[inline]
    pub(crate) fn holds_no_error(&self) -> bool {
        self.pending.is_empty()
    }

    /// What line `line` of the log is to the annotator: the one question asked of each line.
    /// The line is counted and checked on the way and decoded at most once (a line that waits is
    /// held with its kind); [`write`](Self::write) writes what the answer says.
    #[inline(always)]
    pub(crate) fn decide<'a>(&mut self, line: LogLine<'a>) -> Disposition<'a> {
        if self.only_counts {
            return self.dispose(line, None);
        }
        if is_detail(line.payload) && self.takes_details() {
            return self.detail(line.line_no, None);
        }
        // Not knowing yet whether the kernel's own lines are in the log (a log cut at the top
        // may start with instructions whose line was printed before the cut), the first lines
        // wait for the first annotation line, or for enough instructions without one. Only
        // instruction and annotation lines go out differently either way: the lines before the
        // first of them (the liveness listing, the first state) need not wait.
        if self.undecided() {
            if self.shown.is_some()
                && !self.waiting.is_empty()
                && is_detail(line.payload)
                && self.passes_details()
            {
                // A detail line says nothing more: it waits unclassified, to be passed over
                // when it goes (or classified then, if it is not).
                self.waiting.push(&line, None);
                return self.held();
            }
            let kind = classify(line.payload);
            if self.shown.is_none() {
                self.shown = source_lines_shown(&kind, line.payload);
            }
            if self.waiting.is_empty() && !matches!(kind, Line::Insn(_) | Line::Annotation(_)) {
                return self.dispose(line, Some(kind));
            }
            // A line with ` @ file:line` settles it; lines without (old kernels, or the cut end
            // of a state line that starts with `;`) only lean towards old.
            let current = matches!(kind, Line::Annotation(a) if a.location.is_some());
            self.waiting.old |= matches!(kind, Line::Annotation(a) if a.location.is_none());
            self.waiting.push(&line, Some(kind));
            if current {
                self.settle_on(ExistingAnnotations::Current);
                return Disposition::Release;
            }
            return self.held();
        }
        self.dispose(line, None)
    }

    /// A line has joined the lines waiting: they go when there are enough of them to settle
    /// the question, by what they suggest.
    fn held<'a>(&mut self) -> Disposition<'a> {
        if !self.waiting.is_full() {
            return Disposition::Held;
        }
        self.settle_on(self.waiting.verdict());
        Disposition::Release
    }

    /// A detail line that [`takes_details`](Self::takes_details) passes over: only counted, it
    /// goes out as it came in (with `kind`, when it was classified already). What
    /// [`decide`](Self::decide) says of such a line, for a writer that knows it is one.
    #[inline(always)]
    pub(crate) fn detail<'a>(&mut self, line_no: u64, kind: Option<Line<'a>>) -> Disposition<'a> {
        self.stats.lines += 1;
        self.line_no = line_no;
        if let Some(f) = &mut self.failure {
            f.details(1, line_no);
        }
        Disposition::AsIs(kind)
    }

    /// What [`decide`](Self::decide) says of a line that is neither a detail line passed over
    /// nor one that waits, as it comes or when the lines waiting go (`kind`: what it was
    /// decoded as then).
    #[inline(always)]
    fn dispose<'a>(&mut self, line: LogLine<'a>, kind: Option<Line<'a>>) -> Disposition<'a> {
        let LogLine {
            line_no,
            prefix,
            payload,
            newline,
            ..
        } = line;
        self.stats.lines += 1;
        self.line_no = line_no;
        let counted = if kind.is_none() && self.only_counts {
            // Every line of the log goes out as it came in: an instruction seen before and a
            // detail line are only counted, and only an annotation line is more than counted
            // and checked (kept, below).
            let mut decoding = Decoding {
                annotator: self,
                seen: true,
                details: true,
            };
            match decode_with(
                insn_head(payload),
                payload,
                line_no,
                &mut decoding,
                classify,
            ) {
                Some(kind @ Line::Annotation(_)) => Some(kind),
                kind => return Disposition::AsIs(kind),
            }
        } else {
            None
        };
        let json = self.options.format == OutputFormat::Json;
        let Some(program) = self.program else {
            return if json {
                Disposition::Record("other")
            } else {
                Disposition::AsIs(kind)
            };
        };
        let kind = match (counted, kind) {
            (Some(kind), _) => kind,
            (None, kind) if std::mem::take(&mut self.skip_first) => {
                self.only_counts = self.only_counts();
                return if json {
                    Disposition::Record("cut")
                } else {
                    Disposition::AsIs(kind)
                };
            }
            (None, Some(kind)) => {
                self.observe(&kind, line_no, payload);
                kind
            }
            (None, None) => {
                // An instruction seen before is only counted by the checks and trackers; then,
                // in text unless it gets a source line, it is done with.
                let head = insn_head(payload);
                match head {
                    Some(h) if self.pending.is_empty() && self.insn_seen(&h, line_no, payload) => {
                        if !json && !self.annotated(&h, program) {
                            return Disposition::AsIs(None);
                        }
                        h.line()
                    }
                    // A detail line that would tell the checks and trackers nothing (JSON
                    // records, --annotate-all): only counted, and classified for what is
                    // written of it.
                    None if is_detail(payload)
                        && self.depth.is_none()
                        && self.told_nothing_by_details() =>
                    {
                        self.last_insn = None;
                        if let Some(f) = &mut self.failure {
                            f.details(1, line_no);
                        }
                        classify(payload)
                    }
                    _ => {
                        let mut decoding = Decoding {
                            annotator: self,
                            seen: false,
                            details: false,
                        };
                        match decode_with(head, payload, line_no, &mut decoding, classify) {
                            Some(kind) => kind,
                            None => return Disposition::AsIs(None),
                        }
                    }
                }
            }
        };
        // Lines that may be the final error wait until the next line says whether the log ends.
        if self.holds_errors {
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
                return Disposition::Held;
            }
        }
        if json {
            return Disposition::Json(kind);
        }
        let kernel = self.options.style == Style::Kernel;
        match kind {
            Line::Insn(insn) if kernel => {
                if self.existing != ExistingAnnotations::Current
                    && let Some(row) = self.kernel_source_line(program, &insn)
                {
                    return Disposition::After(row, kind);
                }
            }
            Line::Insn(insn) if self.rich_before(program, insn.index) => {
                return Disposition::Rich(insn.index, kind);
            }
            Line::Validating { .. } => self.new_pass(),
            Line::Other if kernel => {
                if let Some(row) = self.error_source_line(program, payload) {
                    return Disposition::After(row, kind);
                }
            }
            Line::Annotation(a) if kernel && self.existing == ExistingAnnotations::Current => {
                self.stats.kept += 1;
                if self.restyles_kept || newline.is_empty() {
                    return Disposition::Kept(a);
                }
            }
            Line::Annotation(a) if self.replaces(&a) => {
                self.stats.replaced += 1;
                return Disposition::Dropped;
            }
            Line::MarkPrecise if self.options.annotate_all => {
                if let Some(index) = precise_index(payload) {
                    return Disposition::Trailing(index, kind);
                }
            }
            Line::LiveRegsRow { index, .. } if self.options.annotate_all => {
                return Disposition::Trailing(index, kind);
            }
            _ => {}
        }
        Disposition::AsIs(Some(kind))
    }

    /// Whether instruction `head` gets source lines before it: in rich style, when its location
    /// is not the one printed last ([`rich_before`](Self::rich_before)); in kernel style, by the
    /// kernel's rule when the log has no current annotation lines of its own (a line the rule
    /// must read to go on, [`KernelRule::reads_after`], counts as one that gets them). Nothing
    /// is changed.
    fn annotated(&mut self, head: &InsnHead<'_>, program: &Program<'_, '_>) -> bool {
        match self.options.style {
            Style::Rich => {
                let key = self.rich.keys.get(program, head.index);
                key.is_some() && key != self.rich_last
            }
            Style::Kernel => {
                self.existing != ExistingAnnotations::Current
                    && (KernelRule::reads_after(head)
                        || self.rule.prints_before(program, head.index))
            }
        }
    }

    /// Whether the rich lines of instruction `index`'s location go before its line: it has a
    /// location, not the one printed last. If so they are counted as inserted, and it is the
    /// location printed last.
    fn rich_before(&mut self, program: &Program<'_, '_>, index: u64) -> bool {
        let key = self.rich.keys.get(program, index);
        if key.is_none() || key == self.rich_last {
            return false;
        }
        self.rich_last = key;
        self.stats.inserted += 1;
        true
    }

    /// The kernel's lines are (or are not) in the log, as `existing` says: the lines waiting go
    /// through next ([`Disposition::Release`]), with the form of source lines the log showed.
    fn settle_on(&mut self, existing: ExistingAnnotations) {
        self.existing = existing;
        self.only_counts = self.only_counts();
        if self.options.kernel_lines.is_none() && self.shown == Some(SourceLines::Bare) {
            self.rule = KernelRule::new(SourceLines::Bare);
        }
    }

    /// The log has ended before it said for sure whether the kernel's lines are in it: the
    /// waiting lines go through by what they suggest.
    fn settle(
        &mut self,
        out: &mut impl Write,
        rows: &mut impl AnnotatedRows,
        sources: &mut SourceFiles,
    ) -> io::Result<()> {
        if self.waiting.is_empty() {
            return Ok(());
        }
        self.settle_on(self.waiting.verdict());
        self.release(out, rows, sources)
    }

    /// The lines waiting go through, each with the kind it was decoded as when it came, and
    /// as a line that comes once the question is settled goes: a detail line passed over, an
    /// instruction seen before only counted (its start read again, not the whole line).
    fn release(
        &mut self,
        out: &mut impl Write,
        rows: &mut impl AnnotatedRows,
        sources: &mut SourceFiles,
    ) -> io::Result<()> {
        let waiting = std::mem::take(&mut self.waiting);
        for (line, kind) in waiting.lines() {
            let disposition = match kind {
                _ if is_detail(line.payload) && self.takes_details() => {
                    self.detail(line.line_no, kind)
                }
                Some(Line::Insn(insn)) if insn.opcode.is_some() => self.dispose(line, None),
                kind => self.dispose(line, kind),
            };
            self.write(disposition, line, out, rows, sources)?;
        }
        Ok(())
    }

    /// Writes what `disposition`, what [`decide`](Self::decide) said of `line`, says, handing
    /// the rows written to `rows`.
    pub(crate) fn write(
        &mut self,
        disposition: Disposition<'_>,
        line: LogLine<'_>,
        out: &mut impl Write,
        rows: &mut impl AnnotatedRows,
        sources: &mut SourceFiles,
    ) -> io::Result<()> {
        let LogLine {
            line_no,
            text,
            prefix,
            payload,
            newline,
            indent,
        } = line;
        let escape = self.options.escape_log;
        let kind = match disposition {
            Disposition::Held => return Ok(()),
            Disposition::Release => return self.release(out, rows, sources),
            Disposition::Record(kind) => {
                return json::record(out, line_no, kind, payload, self.program, None);
            }
            Disposition::Json(kind) => {
                let is_error = matches!(kind, Line::Summary);
                if is_error || !self.pending.is_empty() {
                    self.flush_pending(out, is_error)?;
                }
                let Some(program) = self.program else {
                    return Ok(());
                };
                return json::line(out, line_no, &kind, payload, program, &mut self.rich.json);
            }
            Disposition::AsIs(kind) => kind,
            Disposition::After(_, kind)
            | Disposition::Rich(_, kind)
            | Disposition::Trailing(_, kind) => Some(kind),
            Disposition::Kept(a) => Some(Line::Annotation(a)),
            Disposition::Dropped => None,
        };
        if !self.pending.is_empty() {
            let is_error = matches!(kind, Some(Line::Summary));
            self.flush_pending(out, is_error)?;
        }
        let Some(program) = self.program else {
            rows.line(kind.as_ref(), payload, line_no)?;
            return write_log_lines(out, text, escape);
        };
        let mut w = Writer {
            out,
            sources,
            options: self.options,
            program,
            indent,
            newline: if newline.is_empty() { b"\n" } else { newline },
            form: self.rule.form(),
        };
        match disposition {
            Disposition::After(row, _) => {
                if let Some(record) = program.lines.rows().get(row) {
                    rows.inserted(|text| w.kernel_line_into(text, record))?;
                }
                self.annotation(w.out, w.sources, row, &line)?;
            }
            Disposition::Rich(index, _) => w.rich_annotation(index, &mut self.rich)?,
            Disposition::Kept(a) => {
                rows.line(kind.as_ref(), payload, line_no)?;
                return w.kept_annotation(prefix, payload, a.text, a.location);
            }
            Disposition::Trailing(index, _) => {
                rows.line(kind.as_ref(), payload, line_no)?;
                write_log_lines(w.out, prefix, escape)?;
                write_log_lines(w.out, payload, escape)?;
                w.trailing_location(index)?;
                return w.out.write_all(newline);
            }
            Disposition::Dropped => return Ok(()),
            _ => {}
        }
        rows.line(kind.as_ref(), payload, line_no)?;
        write_log_lines(w.out, text, escape)
    }

    /// Whether the annotation line `a` of the log is one bpflog drops where it writes its own
    /// source lines (rich style; kernel style over an old kernel's lines): one of the kernel's,
    /// as it prints them in this log. In a log of the kernel's current lines (`; text @
    /// file:line`), a `;` line without a location is not the kernel's but a line garbled (a
    /// loader's stderr written into it by `2>&1`, the noise the fit allows): it goes out as it
    /// came, nothing of it lost.
    fn replaces(&self, a: &bpflog_log::Annotation<'_>) -> bool {
        a.location.is_some() || self.existing != ExistingAnnotations::Current
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

    /// The record of the line table whose source line the kernel printed before the error line
    /// `payload` ([`source_line_before_error`]), in a log whose source lines are inserted, if
    /// it printed one (counted as inserted).
    fn error_source_line(&mut self, program: &Program<'_, '_>, payload: &[u8]) -> Option<usize> {
        if self.existing == ExistingAnnotations::Current {
            return None;
        }
        let row = self
            .rule
            .row_before_insn(program, source_line_before_error(payload)?);
        self.stats.inserted += u64::from(row.is_some());
        row
    }

    /// A verification pass starts (`Validating ...`): the source line printed last is forgotten.
    fn new_pass(&mut self) {
        self.rule.reset();
        self.rich_last = None;
    }

    /// The source line [`Disposition::After`] puts before `line`: that of the line table's
    /// record `row`, as [`Writer::kernel_annotation`] writes it. Without context lines, the bytes
    /// of each record are put together once, from the text `.BTF` holds (for the program, when
    /// the job carries them from log to log: see [`carrying`](Self::carrying)).
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
        let newline: &[u8] = if line.newline.is_empty() {
            b"\n"
        } else {
            line.newline
        };
        let mut writer = |mut out: &mut dyn Write, indent, newline| {
            Writer {
                out: &mut out,
                sources: &mut *sources,
                options: self.options,
                program,
                indent,
                newline,
                form: self.rule.form(),
            }
            .kernel_annotation(record)
        };
        if program.lines.origin() == LineOrigin::Dwarf || self.options.context > 0 {
            // The text comes from the source file, if it is found; context lines each have
            // the indent and line end.
            return writer(out, line.indent, newline);
        }
        write_log_lines(out, line.indent, self.options.escape_log)?;
        let rows = program.lines.rows().len();
        match (u32::try_from(row), u32::try_from(rows)) {
            (Ok(row), Ok(rows)) => {
                let held = self.rich.kernel_lines(self.rule.form());
                held.write(out, row, rows, |bytes| writer(bytes, b"", b""))?;
            }
            _ => writer(out, b"", b"")?,
        }
        out.write_all(newline)
    }

    /// What the checks and trackers take from every line of the log, and the count of
    /// instruction lines.
    #[inline(always)]
    fn observe(&mut self, kind: &Line<'_>, line_no: u64, payload: &[u8]) {
        match *kind {
            Line::Insn(_) => {}
            Line::FromTo { from, to } => {
                if self.last_insn.take() == Some(from)
                    && self.existing != ExistingAnnotations::Current
                    && let Some(program) = self.program
                {
                    self.rule.resumed_after(program, from, to);
                }
            }
            Line::Blank => {}
            _ => self.last_insn = None,
        }
        self.cut.observe(kind);
        self.check.observe(kind, payload, line_no);
        if let Some(profiler) = &mut self.profiler {
            profiler.classified(kind, payload);
        }
        let too_deep = match (&mut self.failure, &mut self.depth) {
            (Some(f), _) => f.line(kind, payload, line_no),
            (None, Some(calls)) => calls.observe(kind, payload),
            (None, None) => false,
        };
        if too_deep {
            self.stats.too_deep.get_or_insert(line_no);
        }
        // Unrecognised lines after the last instruction, then the summary: a rejection.
        match kind {
            Line::Insn(insn) => {
                self.unexplained = 0;
                self.count_insn(insn.index);
            }
            Line::Other if !payload.starts_with(b" ") => self.unexplained += 1,
            Line::Summary => {
                self.stats.rejected |= self.unexplained > 0 && self.stats.instructions > 0
            }
            _ => {}
        }
    }

    /// What [`observe`](Self::observe) does with the line of instruction `head` (line
    /// `line_no`, `payload` without its line end), when the checks have seen it before and only
    /// count it (see [`Selector::insn_seen`]): `false`, and nothing done, otherwise.
    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, line_no: u64, payload: &[u8]) -> bool {
        if !self.check.insn_seen(head, payload, line_no) {
            return false;
        }
        self.cut.insn(head.index);
        if let Some(profiler) = &mut self.profiler {
            profiler.insn(head.index, head.opcode);
        }
        let too_deep = match (&mut self.failure, &mut self.depth) {
            (Some(f), _) => f.insn(head.index, Some(head.opcode), payload, line_no),
            (None, Some(calls)) => calls.insn(head.index, Some(head.opcode)),
            (None, None) => false,
        };
        if too_deep {
            self.stats.too_deep.get_or_insert(line_no);
        }
        self.unexplained = 0;
        self.count_insn(head.index);
        true
    }

    #[inline]
    fn count_insn(&mut self, index: u64) {
        self.stats.instructions += 1;
        self.last_insn = Some(index);
        if self
            .program
            .is_some_and(|p| index >= u64::from(p.layout.len))
        {
            self.stats.out_of_range += 1;
        }
    }

    /// The log has ended: held lines were its error; the diagnostic follows when asked.
    pub(crate) fn finish(
        self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
    ) -> io::Result<AnnotateStats> {
        self.finish_rows(out, &mut NoRows, sources)
    }

    /// [`finish`](Self::finish), also handing the rows written to `rows`.
    pub(crate) fn finish_rows(
        mut self,
        out: &mut impl Write,
        rows: &mut impl AnnotatedRows,
        sources: &mut SourceFiles,
    ) -> io::Result<AnnotateStats> {
        self.settle(out, rows, sources)?;
        // A log that ends (cut) on unrecognised lines after its last instruction.
        self.stats.rejected |= self.unexplained > 0 && self.stats.instructions > 0;
        self.stats.cut = self.cut.cut;
        self.flush_pending(out, true)?;
        if self.options.format == OutputFormat::Json {
            return Ok(self.stats);
        }
        let profile = self.profiler.take().map(Profiler::finish);
        let concluded = match (self.program, self.failure.take()) {
            (Some(program), Some(failure)) => failure
                .conclude(program, profile.as_ref(), self.load_failed.take())
                .map(|c| (program, c)),
            _ => None,
        };
        if let Some((_, Concluded::LoadFailed(failure))) = &concluded {
            crate::explain::write_load_failure(failure, &self.options.palette, out)?;
        }
        if let Some((program, Concluded::Rejected(explanation))) = concluded {
            self.stats.rejected = true;
            self.stats.class = Some(explanation.class().id.as_str());
            // As `explain` writes it: the diagnostic, the class, the chain and the help.
            let palette = &self.options.palette;
            crate::explain::write(
                &explanation,
                program,
                ExplainFormat::Text,
                sources,
                palette,
                out,
            )?;
        }
        Ok(self.stats)
    }

    /// Writes the held lines: as the verifier's error when `is_error`.
    fn flush_pending(&mut self, out: &mut impl Write, is_error: bool) -> io::Result<()> {
        if self.options.format == OutputFormat::Json {
            let program = self.program;
            // The first error record of a rejected log carries its explanation.
            let mut explained = match (program, is_error) {
                (Some(program), true) => {
                    let profile = self.profiler.take().map(Profiler::finish);
                    (self.failure.take()).and_then(|f| f.finish(program, profile.as_ref()))
                }
                .map(|e| (program, e)),
                _ => None,
            };
            if let Some((_, e)) = &explained {
                self.stats.class = Some(e.class().id.as_str());
            }
            for (line_no, payload, plain) in self.pending.held() {
                if is_error
                    && !plain
                    && let Some((program, e)) = explained.take()
                {
                    let json = JsonExplanation::from(&e);
                    json::explained_error(out, line_no, payload, program, &json)?;
                    continue;
                }
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
        self.pending.flush(out, self.options, is_error)
    }

    /// Like [`finish`](Self::finish), also with what the check concludes when one was asked for
    /// (`None` otherwise): the program's evidence, or why the log does not fit it. The
    /// instruction lines that fitted the program go back to `fitted`.
    pub(crate) fn finish_checked(
        mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        fitted: &mut FittedLines,
    ) -> io::Result<(AnnotateStats, Option<Result<Selection, SelectError>>)> {
        // The lines still waiting are evidence too.
        self.settle(out, &mut NoRows, sources)?;
        let fit = match std::mem::replace(&mut self.check, Check::Nothing) {
            Check::Fit(mut selector) => {
                if let Some(lines) = selector.forget().pop() {
                    fitted.keep_larger(lines);
                }
                Some(selector.finish())
            }
            _ => None,
        };
        Ok((self.finish(out, sources)?, fit))
    }

    /// Like [`finish`](Self::finish), also with what the first pass concludes about the log
    /// when it was [`planning`](Self::planning) (`None` otherwise); the instruction lines that
    /// fitted its candidates go back to `fitted`.
    pub(crate) fn finish_planning(
        mut self,
        out: &mut impl Write,
        sources: &mut SourceFiles,
        fitted: &mut Fitted,
    ) -> io::Result<(AnnotateStats, Option<Result<SegmentPlan, PlanError>>)> {
        self.settle(out, &mut NoRows, sources)?;
        let plan = match std::mem::replace(&mut self.check, Check::Nothing) {
            Check::Plan(pending, _) => Some(crate::plan::close(*pending, fitted)),
            _ => None,
        };
        Ok((self.finish(out, sources)?, plan))
    }
}

/// The annotator as the observer of a line it decodes ([`decode_with`]): an instruction seen
/// before is only counted when `seen` says it may be, a detail line passed over when `details`
/// says it may be and the checks ignore it.
struct Decoding<'a, 'p, 'o, 'd> {
    annotator: &'a mut SegmentAnnotator<'p, 'o, 'd>,
    seen: bool,
    details: bool,
}

impl Observer for Decoding<'_, '_, '_, '_> {
    #[inline(always)]
    fn ignores_details(&self) -> bool {
        self.details && self.annotator.check.ignores_details()
    }

    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, payload: &[u8], line_no: u64) -> bool {
        self.seen && self.annotator.insn_seen(head, line_no, payload)
    }

    #[inline(always)]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line_no: u64) {
        self.annotator.observe(kind, line_no, payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::split_newline;
    use std::cell::RefCell;

    thread_local! {
        /// Where the kernel's part of each line the annotator classified starts and ends (see
        /// [`classify`]).
        static CLASSIFIED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
    }

    /// [`bpflog_log::classify`], noting where the line's kernel part starts in [`CLASSIFIED`]:
    /// the annotator's classifier in tests.
    pub(super) fn classify(payload: &[u8]) -> Line<'_> {
        let at = payload.as_ptr().addr();
        CLASSIFIED.with(|c| c.borrow_mut().push((at, at + payload.len())));
        bpflog_log::classify(payload)
    }

    /// Each line of real logs is classified at most once, and where it is in the input, not in
    /// a copy (a line held while the log's `;` lines are in question is held with its kind):
    /// the logs as the kernel printed them (its current `;` lines kept), as an old kernel
    /// prints them (`;` lines without ` @ file:line`, replaced) and without `;` lines, whether
    /// that is known or not when the log starts, in kernel and rich style, through the one
    /// loop. core_fail's log has libbpf's `N: <invalid ...>` line, an instruction line
    /// without an instruction's start.
    #[test]
    fn a_line_of_a_log_is_classified_once() {
        for (object, log) in [
            ("core_fail", "raw_tp_reject_core.l2"),
            ("branchy", "xdp_branchy.l2"),
        ] {
            crate::testing::with_fixture(object, log, |program, log| {
                let lines = || log.split_inclusive(|&b| b == b'\n');
                let old: Vec<u8> = lines()
                    .flat_map(|l| match l.strip_prefix(b";") {
                        Some(_) => {
                            let at = l.windows(3).rposition(|w| w == b" @ ").unwrap();
                            [&l[..at], b"\n"].concat()
                        }
                        None => l.to_vec(),
                    })
                    .collect();
                let stripped: Vec<u8> = lines()
                    .filter(|l| !l.starts_with(b";"))
                    .flatten()
                    .copied()
                    .collect();
                let annotations = lines().filter(|l| l.starts_with(b";")).count() as u64;
                assert!(annotations > 0 && old.len() < 1 << 20, "{object}");
                if object == "core_fail" {
                    assert!(lines().any(|l| l.windows(9).any(|w| w == b"<invalid ")));
                }
                for style in [Style::Kernel, Style::Rich] {
                    let options = AnnotateOptions {
                        style,
                        ..AnnotateOptions::default()
                    };
                    let mut outputs = Vec::new();
                    for (input, existing) in [
                        (&old, ExistingAnnotations::Old),
                        (&stripped, ExistingAnnotations::Absent),
                        (&log.to_vec(), ExistingAnnotations::Current),
                        (&old, ExistingAnnotations::Unknown),
                        (&stripped, ExistingAnnotations::Unknown),
                        (&log.to_vec(), ExistingAnnotations::Unknown),
                    ] {
                        let case = format!("{object} {style:?} {existing:?}");
                        CLASSIFIED.with(|c| c.borrow_mut().clear());
                        let (mut out, mut stats) = (Vec::new(), None);
                        // The whole log in the reader's one buffer: a line's place names it.
                        crate::writing::write_logs::<_, _, _, io::Error>(
                            &input[..],
                            &mut out,
                            &options,
                            &mut (),
                            |(), _| {
                                let seg =
                                    SegmentAnnotator::new(Some(program), &options, existing, false);
                                Ok((seg, ()))
                            },
                            |(), seg, (), out, sources, _| {
                                stats = Some(seg.finish(out, sources)?);
                                Ok(())
                            },
                        )
                        .unwrap();
                        let mut classified = CLASSIFIED.with(|c| c.take());
                        let n = classified.len();
                        assert!(n > 0, "{case}: no line classified");
                        // All in the reader's one buffer, which holds the input as it is.
                        let first = classified.iter().map(|c| c.0).min().unwrap();
                        let end = classified.iter().map(|c| c.1).max().unwrap();
                        assert!(
                            end - first <= input.len(),
                            "{case}: a copy of a line classified"
                        );
                        classified.sort_unstable();
                        classified.dedup();
                        assert_eq!(classified.len(), n, "{case}: a line classified twice");
                        let stats = stats.unwrap();
                        let replaced = match (style, input == &old, input == &stripped) {
                            (_, true, _) | (Style::Rich, false, false) => annotations,
                            _ => 0,
                        };
                        assert_eq!(stats.replaced, replaced, "{case}");
                        assert_eq!(
                            stats.lines,
                            input.split_inclusive(|&b| b == b'\n').count() as u64,
                            "{case}"
                        );
                        outputs.push(out);
                    }
                    // The old kernel's lines are replaced by today's: as if they were never
                    // there; whether that was known at the start or not.
                    assert!(outputs[0] == outputs[1], "{object} {style:?}");
                    assert!(outputs[0] != stripped, "{object}: source lines inserted");
                    assert!(outputs[3..] == outputs[..3], "{object} {style:?}");
                    if style == Style::Kernel {
                        assert!(outputs[2] == log, "{object}");
                    }
                }
            });
        }
    }

    /// What annotating counts is what the dispositions say, tallied, and writing what each
    /// says gives what the one loop writes: over real logs (rejected and accepted; as the
    /// kernel printed them, as an old kernel prints them, without `;` lines) in each style,
    /// with colors, context lines, the diagnostic, `--annotate-all` and JSON, each line is
    /// decided once; the source lines inserted are the `After` and `Rich` ones, the `;` lines
    /// kept and replaced the `Kept` (or kept as they are) and `Dropped` ones.
    #[test]
    fn the_counts_are_the_dispositions_tallied() {
        let rich = |options: AnnotateOptions| AnnotateOptions {
            style: Style::Rich,
            ..options
        };
        let option_sets = [
            AnnotateOptions::default(),
            AnnotateOptions {
                palette: crate::style::Palette::new(true),
                ..AnnotateOptions::default()
            },
            AnnotateOptions {
                context: 2,
                ..AnnotateOptions::default()
            },
            AnnotateOptions {
                diagnostic: true,
                hot_lines: true,
                ..AnnotateOptions::default()
            },
            AnnotateOptions {
                annotate_all: true,
                ..AnnotateOptions::default()
            },
            AnnotateOptions {
                format: OutputFormat::Json,
                ..AnnotateOptions::default()
            },
        ];
        let mut decided = [0u64; 3];
        for (object, log) in [
            ("reject_entry", "xdp_reject_entry.l2"),
            ("branchy", "xdp_branchy.l2"),
            ("core_fail", "raw_tp_reject_core.l1"),
        ] {
            crate::testing::with_fixture(object, log, |program, log| {
                let lines = || log.split_inclusive(|&b| b == b'\n');
                let old: Vec<u8> = lines()
                    .flat_map(|l| match l.windows(3).rposition(|w| w == b" @ ") {
                        Some(at) if l.starts_with(b";") => [&l[..at], b"\n"].concat(),
                        _ => l.to_vec(),
                    })
                    .collect();
                let stripped: Vec<u8> = lines()
                    .filter(|l| !l.starts_with(b";"))
                    .flatten()
                    .copied()
                    .collect();
                let options =
                    (option_sets.iter().cloned()).chain(option_sets.iter().cloned().map(rich));
                for options in options {
                    for (input, existing) in [
                        (log, ExistingAnnotations::Current),
                        (&old[..], ExistingAnnotations::Old),
                        (&stripped[..], ExistingAnnotations::Absent),
                    ] {
                        let case = format!(
                            "{object} {existing:?} {:?} {:?} colors {} context {} diagnostic {} all {}",
                            options.style,
                            options.format,
                            !options.palette.error.is_plain(),
                            options.context,
                            options.diagnostic,
                            options.annotate_all
                        );
                        let mut seg =
                            SegmentAnnotator::new(Some(program), &options, existing, false);
                        let mut sources = SourceFiles::new(options.sources.clone());
                        let (mut out, mut n, mut inserted, mut kept, mut replaced) =
                            (Vec::new(), 0, 0, 0, 0);
                        for (i, text) in input.split_inclusive(|&b| b == b'\n').enumerate() {
                            let line = LogLine::bare(i as u64 + 1, text, split_newline(text));
                            let disposition = seg.decide(line);
                            n += 1;
                            match disposition {
                                Disposition::After(..) | Disposition::Rich(..) => inserted += 1,
                                Disposition::Kept(_) => kept += 1,
                                Disposition::AsIs(Some(Line::Annotation(_)))
                                    if options.style == Style::Kernel
                                        && existing == ExistingAnnotations::Current =>
                                {
                                    kept += 1
                                }
                                Disposition::Dropped => replaced += 1,
                                Disposition::Release => panic!("{case}: nothing waits"),
                                _ => {}
                            }
                            let d = &mut decided[match disposition {
                                Disposition::AsIs(_) => 0,
                                Disposition::Held | Disposition::Json(_) => 1,
                                _ => 2,
                            }];
                            *d += 1;
                            (seg.write(disposition, line, &mut out, &mut NoRows, &mut sources))
                                .unwrap();
                        }
                        let stats = seg.finish(&mut out, &mut sources).unwrap();
                        assert_eq!(stats.lines, n, "{case}");
                        assert_eq!(
                            (stats.inserted, stats.kept, stats.replaced),
                            (inserted, kept, replaced),
                            "{case}"
                        );
                        let insns = (input.split(|&b| b == b'\n'))
                            .filter(|l| matches!(bpflog_log::classify(l), Line::Insn(_)))
                            .count() as u64;
                        assert_eq!(stats.instructions, insns, "{case}");
                        // Through the one loop, lines that go out as they came in written as
                        // spans of the reader's bytes.
                        let mut looped = Vec::new();
                        crate::writing::write_logs::<_, _, _, io::Error>(
                            input,
                            &mut looped,
                            &options,
                            &mut (),
                            |(), _| {
                                let seg =
                                    SegmentAnnotator::new(Some(program), &options, existing, false);
                                Ok((seg, ()))
                            },
                            |(), seg, (), out, sources, _| {
                                assert_eq!(seg.finish(out, sources)?, stats, "{case}");
                                Ok(())
                            },
                        )
                        .unwrap();
                        assert!(looped == out, "{case}");
                    }
                }
            });
        }
        // Lines of every kind of disposition: as they are, JSON or held, and the others.
        assert!(decided.iter().all(|&d| d > 100), "{decided:?}");
    }

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
                let disposition = seg.decide(line);
                (seg.write(disposition, line, &mut out, &mut NoRows, &mut sources)).unwrap();
            }
            seg.finish(&mut out, &mut sources).unwrap();
            let head = head.unwrap();
            assert!(head.starts_with(b"func#0 @0\nLive regs before insn:\n") && head.len() > 2000);
            assert!(log.starts_with(&head));
            assert!(out == log, "the log comes back as it was");
        });
    }
}
