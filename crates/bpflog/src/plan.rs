//! Planning: a first pass over a file that finds each program's log in it and chooses the
//! program for each, so that the second pass ([`annotate_planned`]) can stream.
//!
//! For every log (see [`crate::frame`]) the plan records the candidates that fit (restricted to
//! the program the wrapper names, or to `--prog`), whether the kernel's annotation lines are in
//! it and in which form (6.9+ `; text @ file:line` or older `; text`), and whether the log was
//! cut at the top (kernels since 6.4 keep the tail of a log that overflows its buffer): then its
//! first line may be the end of a line the kernel dropped, and its first instruction is not 0.

use crate::Program;
use crate::annotate::{
    AnnotateOptions, AnnotateStats, CutTop, ExistingAnnotations, LogLine, Pass, SegmentAnnotator,
};
use crate::frame::{Deframer, SegmentStart, Wrapper};
use crate::select::{SelectError, Selection, Selector};
use crate::source::SourceFiles;
use bpflog_log::{InsnHead, Line, LineReader, LogInput, classify, is_detail, split_newline};
use bpflog_object::{excerpt, excerpt_names};
use std::io::{self, Read, Write};

/// What the first pass found about one program's log.
#[derive(Debug, Clone)]
pub struct SegmentPlan {
    /// Line number (from 1) where the log, or its wrapper, starts.
    pub line: u64,
    /// How the log is wrapped.
    pub wrapper: Wrapper,
    /// The program the wrapper names.
    pub named: Option<String>,
    /// The chosen program (index into the programs planned with); `None` when no program's
    /// annotations would change the log (no instruction lines) and none was named.
    pub program: Option<usize>,
    /// Set when the program was forced (named by the caller) but the log does not fit it: why.
    pub misfit: Option<String>,
    /// Lines of the log that do not fit the chosen program but are surrounded by lines that do
    /// (the first few): noise, passed through as they are (see [`crate::Evidence::noise`]).
    pub noise: Vec<crate::Mismatch>,
    /// How many lines were taken as noise.
    pub noise_lines: u64,
    /// When several layouts fit: which, and which was taken.
    pub layout_doubt: Option<String>,
    /// Instruction lines in the log.
    pub instructions: u64,
    /// The annotation lines the log already has.
    pub existing: ExistingAnnotations,
    /// The log starts mid-path: the kernel kept only its tail.
    pub truncated: bool,
    /// Its first line is the cut end of a longer line (passed through untouched).
    pub partial_first_line: bool,
}

/// The logs of a file, in order; the first is the (possibly empty) bare text before any wrapper.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// One entry per log.
    pub segments: Vec<SegmentPlan>,
}

/// Why a file could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The log starting at `line` fits no program, or several that would annotate it differently.
    #[error("{}{source}", wrapper_words(*wrapper, named, *line))]
    Segment {
        /// Where the log starts.
        line: u64,
        /// How it is wrapped.
        wrapper: Wrapper,
        /// The program its wrapper names.
        named: Option<String>,
        /// Why no program was chosen.
        source: SelectError,
        /// From a one-pass annotation ([`crate::annotate_file`]): how many of the input's lines
        /// (from the first) the output holds when the error is found, annotated, and nothing
        /// after them; `None` from a first pass ([`plan`]), which writes nothing.
        written: Option<u64>,
    },
    /// The wrapper names a program no object has.
    #[error("line {line}: the {} log is for program '{}', which no object has (programs: {})", wrapper.name(), excerpt(name.as_bytes()), excerpt_names(available))]
    UnknownName {
        /// Where the log starts.
        line: u64,
        /// How it is wrapped.
        wrapper: Wrapper,
        /// The name.
        name: String,
        /// The programs there are.
        available: Vec<String>,
        /// As for [`PlanError::Segment`].
        written: Option<u64>,
    },
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

fn wrapper_words(wrapper: Wrapper, named: &Option<String>, line: u64) -> String {
    match (wrapper, named) {
        (Wrapper::Bare, _) => String::new(),
        (w, Some(name)) => format!(
            "line {line}: the {} log of program '{}': ",
            w.name(),
            excerpt(name.as_bytes())
        ),
        (w, None) => format!("line {line}: the {} log: ", w.name()),
    }
}

/// One log while the first pass reads it.
pub(crate) struct Pending<'c, 'o, 'd> {
    plan: SegmentPlan,
    /// Indices (into all programs) of the candidates, and their selector.
    candidates: Vec<usize>,
    selector: Selector<'c, 'o, 'd>,
    forced: bool,
    first_payload: bool,
    cut: CutTop,
}

/// Reads the whole file once and plans each log in it.
///
/// `forced` restricts every log to the programs of that name (`--prog`); then a log that does not
/// fit is still annotated with it, and the plan says why it does not fit.
pub fn plan(
    programs: &[Program<'_, '_>],
    input: impl LogInput,
    forced: Option<&str>,
) -> Result<Plan, PlanError> {
    let mut pass = FirstPass::new(programs, forced)?;
    let mut segments = Vec::new();
    let mut lines = input.into_lines();
    while let Some(buf) = lines.next_line()? {
        segments.extend(pass.line(buf)?);
    }
    segments.extend(pass.finish()?);
    Ok(Plan { segments })
}

/// The first pass, line by line: each log of the file is opened where it starts, observed, and
/// concluded about where it ends.
pub(crate) struct FirstPass<'c, 'o, 'd, 'f> {
    programs: &'c [Program<'o, 'd>],
    forced: Option<&'f str>,
    deframer: Deframer,
    current: Option<Pending<'c, 'o, 'd>>,
    line_no: u64,
}

impl<'c, 'o, 'd, 'f> FirstPass<'c, 'o, 'd, 'f> {
    /// A pass from the top of a file, inside its first (bare) log.
    pub(crate) fn new(
        programs: &'c [Program<'o, 'd>],
        forced: Option<&'f str>,
    ) -> Result<Self, PlanError> {
        Ok(FirstPass {
            programs,
            forced,
            deframer: Deframer::default(),
            current: Some(open(programs, 1, Wrapper::Bare, None, forced)?),
            line_no: 0,
        })
    }

    /// Takes the next line; the plan of the log it ends, if it ends one.
    pub(crate) fn line(&mut self, buf: &[u8]) -> Result<Option<SegmentPlan>, PlanError> {
        self.line_no += 1;
        let (content, _) = split_newline(buf);
        // Most lines are the open log's own and change nothing in the framing.
        if let Some(seg) = self.current.as_mut()
            && self.deframer.quiet(content)
        {
            observe(seg, content, self.line_no);
            return Ok(None);
        }
        let step = self.deframer.step(content);
        let ended = match self.current.take() {
            Some(done) if step.ends => Some(close(done)?),
            current => {
                self.current = current;
                None
            }
        };
        if let Some(start) = step.starts {
            self.current = Some(open(
                self.programs,
                self.line_no,
                start.wrapper,
                start.program,
                self.forced,
            )?);
        }
        if let (Some(prefix), Some(seg)) = (step.prefix, self.current.as_mut()) {
            observe(seg, content.get(prefix..).unwrap_or_default(), self.line_no);
        }
        Ok(ended)
    }

    /// The log being read.
    pub(crate) fn current(&self) -> Option<&Pending<'c, 'o, 'd>> {
        self.current.as_ref()
    }

    /// The end of the file: the plan of the log it ends.
    pub(crate) fn finish(self) -> Result<Option<SegmentPlan>, PlanError> {
        self.current.map(close).transpose()
    }
}

pub(crate) fn open<'c, 'o, 'd>(
    programs: &'c [Program<'o, 'd>],
    line: u64,
    wrapper: Wrapper,
    named: Option<String>,
    forced: Option<&str>,
) -> Result<Pending<'c, 'o, 'd>, PlanError> {
    let wanted = forced.or(named.as_deref());
    let candidates: Vec<usize> = (0..programs.len())
        .filter(|&i| wanted.is_none_or(|w| programs[i].name() == w))
        .collect();
    if candidates.is_empty()
        && let Some(name) = wanted
    {
        let mut available: Vec<String> = programs.iter().map(|p| p.name().to_owned()).collect();
        available.dedup();
        return Err(PlanError::UnknownName {
            line,
            wrapper,
            name: name.to_owned(),
            available,
            written: None,
        });
    }
    let selector = Selector::new(candidates.iter().map(|&i| &programs[i]).collect());
    Ok(Pending {
        plan: SegmentPlan {
            line,
            wrapper,
            named,
            program: None,
            misfit: None,
            noise: Vec::new(),
            noise_lines: 0,
            layout_doubt: None,
            instructions: 0,
            existing: ExistingAnnotations::Absent,
            truncated: false,
            partial_first_line: false,
        },
        candidates,
        selector,
        forced: forced.is_some(),
        first_payload: true,
        cut: CutTop::default(),
    })
}

/// Takes the kernel's part of a line of the log (a detail line it ignores, unclassified).
pub(crate) fn observe(seg: &mut Pending<'_, '_, '_>, payload: &[u8], line_no: u64) {
    if seg.ignores_details() && is_detail(payload) {
        return;
    }
    seg.observe(&classify(payload), line_no);
}

impl PlanError {
    /// How many of the input's lines the output held when a one-pass annotation found the error
    /// (see [`PlanError::Segment`]'s `written`).
    pub fn written(&self) -> Option<u64> {
        match self {
            PlanError::Segment { written, .. } | PlanError::UnknownName { written, .. } => *written,
            PlanError::Io(_) => None,
        }
    }

    /// The error, found by a one-pass annotation when the output held the input's first
    /// `lines` lines (see [`PlanError::Segment`]'s `written`).
    pub(crate) fn with_written(mut self, lines: u64) -> Self {
        match &mut self {
            PlanError::Segment { written, .. } | PlanError::UnknownName { written, .. } => {
                *written = Some(lines);
            }
            PlanError::Io(_) => {}
        }
        self
    }
}

impl<'c, 'o, 'd> Pending<'c, 'o, 'd> {
    /// Takes a line of the log, classified.
    pub(crate) fn observe(&mut self, kind: &Line<'_>, line_no: u64) {
        if std::mem::take(&mut self.first_payload) && *kind == Line::Other {
            // Kept aside until the log turns out to start mid-path (then it is a cut line).
            self.plan.partial_first_line = true;
        }
        self.cut.observe(kind);
        match kind {
            Line::Insn(_) => self.plan.instructions += 1,
            Line::Annotation(a) => {
                self.plan.existing = match (self.plan.existing, a.location.is_some()) {
                    (ExistingAnnotations::Current, _) | (_, true) => ExistingAnnotations::Current,
                    _ => ExistingAnnotations::Old,
                };
            }
            _ => {}
        }
        self.selector.observe(kind, line_no);
    }

    /// What [`observe`](Self::observe) does with the line of instruction `head`, when it only
    /// counts it (see [`Selector::insn_seen`]): `false`, and nothing done, when it does more.
    #[inline(always)]
    pub(crate) fn insn_seen(&mut self, head: &InsnHead<'_>) -> bool {
        if self.first_payload || !self.selector.insn_seen(head) {
            return false;
        }
        self.cut.insn(head.index);
        self.plan.instructions += 1;
        true
    }

    /// Whether [`observe`](Self::observe) ignores detail lines
    /// ([`is_detail`](bpflog_log::is_detail)): all but the first line of its log that the
    /// selector ignores ([`Selector::ignores_details`]).
    pub(crate) fn ignores_details(&self) -> bool {
        !self.first_payload && self.selector.ignores_details()
    }

    /// Whether the first pass will refuse the log whatever its rest says: no program was
    /// named and every candidate is ruled out.
    pub(crate) fn refused(&self) -> bool {
        !self.forced && self.selector.ruled_out()
    }

    /// The program [`close`] will choose, once the rest of the log can no longer change that
    /// (only make the log fit none): when the caller named the program, its first candidate once
    /// no other fits; otherwise the one candidate that still fits, once the log has shown an
    /// instruction or its wrapper named the program.
    pub(crate) fn settled(&self) -> Option<usize> {
        let mut fitting = self.selector.fitting();
        let (first, more) = (fitting.next(), fitting.next().is_some());
        match first {
            _ if self.forced => match (first, more) {
                (None, _) | (Some(0), false) => self.candidates.first().copied(),
                _ => None,
            },
            Some(i) if !more && (self.plan.instructions > 0 || self.plan.named.is_some()) => {
                self.candidates.get(i).copied()
            }
            _ => None,
        }
    }

    /// What the log's plan will say of its own annotation lines and of its first line, once the
    /// rest of the log can no longer change it: the kernel's current lines were seen (they stay
    /// the log's), and where the log starts is decided.
    pub(crate) fn settled_annotations(&self) -> Option<(ExistingAnnotations, bool)> {
        (self.cut.decided() && self.plan.existing == ExistingAnnotations::Current).then_some((
            ExistingAnnotations::Current,
            self.plan.partial_first_line && self.cut.cut,
        ))
    }

    /// Whether [`join`](Self::join) can say what observing on would have given: `later`
    /// observed the lines after this one's as a log of its own, and this one has decided where
    /// it starts (see [`CutTop`]) and its selector can be joined.
    pub(crate) fn joinable(&self, later: &Pending<'c, 'o, 'd>) -> bool {
        self.cut.decided()
            && !self.first_payload
            && self.candidates == later.candidates
            && self.forced == later.forced
            && self.selector.joinable(&later.selector)
    }

    /// This log followed by the lines `later` observed, numbered from 1 after this one's line
    /// `lines`: what observing on would have given. Only when [`joinable`](Self::joinable).
    pub(crate) fn join(&mut self, later: Pending<'c, 'o, 'd>, lines: u64) {
        self.plan.instructions += later.plan.instructions;
        self.plan.existing = match (self.plan.existing, later.plan.existing) {
            (ExistingAnnotations::Current, _) | (_, ExistingAnnotations::Current) => {
                ExistingAnnotations::Current
            }
            (ExistingAnnotations::Old, _) | (_, ExistingAnnotations::Old) => {
                ExistingAnnotations::Old
            }
            (existing, _) => existing,
        };
        self.selector.join(later.selector, lines);
    }
}

/// What the first pass concludes about a log once it has ended.
pub(crate) fn close(seg: Pending<'_, '_, '_>) -> Result<SegmentPlan, PlanError> {
    let mut plan = seg.plan;
    plan.truncated = seg.cut.cut;
    plan.partial_first_line &= plan.truncated;
    if seg.candidates.is_empty() {
        return Ok(plan);
    }
    match seg.selector.finish() {
        Ok(Selection {
            chosen,
            layout_doubt,
            mut candidates,
            ..
        }) => {
            // A log without instructions gets nothing from any program: choose one only when named.
            if plan.instructions > 0 || plan.named.is_some() || seg.forced {
                plan.program = Some(seg.candidates[chosen]);
            }
            plan.layout_doubt = layout_doubt;
            if let Some(c) = candidates.get_mut(chosen) {
                plan.noise = std::mem::take(&mut c.evidence.noise);
                plan.noise_lines = c.evidence.noise_lines;
            }
            Ok(plan)
        }
        Err(e) if seg.forced => {
            plan.misfit = Some(e.to_string());
            // The user named the program: annotate with its first layout (libbpf's when offered).
            plan.program = seg.candidates.first().copied();
            Ok(plan)
        }
        Err(source) => Err(PlanError::Segment {
            line: plan.line,
            wrapper: plan.wrapper,
            named: plan.named,
            source,
            written: None,
        }),
    }
}

/// Annotates a planned file: each log with its program, everything else passed through.
///
/// `input` must read the same bytes [`plan`] read.
pub fn annotate_planned(
    plan: &Plan,
    programs: &[Program<'_, '_>],
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<Vec<AnnotateStats>> {
    let mut next = plan.segments.iter();
    let mut stats = Vec::with_capacity(plan.segments.len());
    drive::<_, _, io::Error>(
        input,
        output,
        options,
        |_| {
            let annotator = match next.next() {
                Some(s) => SegmentAnnotator::new(
                    s.program.and_then(|p| programs.get(p)),
                    options,
                    s.existing,
                    s.partial_first_line,
                ),
                None => SegmentAnnotator::new(None, options, ExistingAnnotations::Unknown, false),
            };
            Ok((annotator, ()))
        },
        |seg, (), out, sources, _| {
            stats.push(seg.finish(out, sources)?);
            Ok(())
        },
    )?;
    Ok(stats)
}

/// What annotating one log in a single pass found.
#[derive(Debug)]
pub struct StreamedSegment {
    /// Line number (from 1) where the log, or its wrapper, starts.
    pub line: u64,
    /// How the log is wrapped.
    pub wrapper: Wrapper,
    /// The program the wrapper names.
    pub named: Option<String>,
    /// What annotating it did.
    pub stats: AnnotateStats,
    /// Why the log does not fit the program, when it does not.
    pub misfit: Option<SelectError>,
    /// Lines that do not fit the program but are surrounded by lines that do (the first few):
    /// noise, passed through as they are (see [`crate::Evidence::noise`]).
    pub noise: Vec<crate::Mismatch>,
    /// How many lines were taken as noise.
    pub noise_lines: u64,
    /// Where reading stopped, with [`AnnotateOptions::stop_at_misfit`] and a log that does not
    /// fit: the output holds the input's lines up to this one (from 1), annotated, and nothing
    /// after.
    pub stopped_at: Option<u64>,
}

/// Annotates a file in one pass, every log in it with `program` (the caller knows the program:
/// `--prog`, or the object has only one), checking on the way that each log fits it.
///
/// Without a first pass, the first lines of a log wait (in memory, up to 64 instructions) until
/// an annotation line says whether the kernel's lines are in it. In text output the bytes are
/// those of [`plan`] and [`annotate_planned`] for every log that fits (tested over every fixture,
/// whole, stripped and cut at the top); what a misfit means for output already written is the
/// caller's choice. [`annotate_stream_each`] hands each log over as it ends instead of keeping
/// them all.
pub fn annotate_stream(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<Vec<StreamedSegment>> {
    let mut done = Vec::new();
    annotate_stream_each(program, input, output, options, |s, _| {
        done.push(s);
        Ok(())
    })?;
    Ok(done)
}

/// [`annotate_stream`], handing each log to `each` as it ends, with the output written so far
/// (memory stays bounded however many logs the file holds). An error from `each` stops it.
pub fn annotate_stream_each<W: Write>(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: W,
    options: &AnnotateOptions,
    mut each: impl FnMut(StreamedSegment, &mut W) -> io::Result<()>,
) -> io::Result<()> {
    drive::<_, _, io::Error>(
        input,
        output,
        options,
        |opened| {
            let annotator =
                SegmentAnnotator::new(Some(program), options, ExistingAnnotations::Unknown, false)
                    .checking();
            Ok((annotator, (opened.line, opened.start.cloned())))
        },
        |seg, (line, start), out, sources, closed| {
            let (stats, fit) = seg.finish_checked(out, sources)?;
            let (wrapper, named) = start.map_or((Wrapper::Bare, None), |s| (s.wrapper, s.program));
            let (misfit, evidence) = match fit {
                Some(Ok(mut selection)) => {
                    let chosen = selection.candidates.swap_remove(selection.chosen);
                    (None, chosen.evidence)
                }
                Some(Err(e)) => (Some(e), crate::Evidence::default()),
                None => (None, crate::Evidence::default()),
            };
            let segment = StreamedSegment {
                line,
                wrapper,
                named,
                stats,
                misfit,
                noise: evidence.noise,
                noise_lines: evidence.noise_lines,
                stopped_at: closed.halted.then_some(closed.written),
            };
            each(segment, out)
        },
    )
}

/// How a log's reading ends, for [`drive`]'s `close`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed {
    /// How many of the input's lines (from the first) were written when the log is closed: all
    /// its own lines, and none after them.
    pub(crate) written: u64,
    /// Its annotator [halted](SegmentAnnotator::halted): nothing more is read.
    pub(crate) halted: bool,
}

/// A log that starts: where, and what a reader that looks ahead in it needs to go on from there.
pub(crate) struct Opened<'a> {
    /// The line (from 1) where the log, or its wrapper, starts.
    pub(crate) line: u64,
    /// Its wrapper, for a wrapped log.
    pub(crate) start: Option<&'a SegmentStart>,
    /// The kernel's part of the line it starts on, when that line is in the log.
    pub(crate) payload: Option<&'a [u8]>,
    /// The lines read so far (that line included, for all but the first log) ...
    pub(crate) lines_read: u64,
    /// ... the offset in the input just after them ...
    pub(crate) offset: u64,
    /// ... the deframer after them ...
    pub(crate) deframer: &'a Deframer,
    /// ... and the bytes after them the reader holds already.
    pub(crate) rest: &'a [u8],
}

/// Reads a file line by line, splitting it into logs (see [`crate::frame`]): `open` makes the
/// annotator of each log as it starts, with what the caller keeps for it, and `close` takes both
/// when it ends; lines outside any log are passed through. An annotator that
/// [halts](SegmentAnnotator::halted) stops the reading: it is closed with the number of the last
/// line read (all of them written), and nothing more is read.
///
/// When the input would make it wait ([`LineReader::would_wait`]: a pipe that pauses), what is
/// written so far is flushed first, so that a live log flows.
pub(crate) fn drive<'p, 'o: 'p, 'd: 'o, W: Write, T, E: From<io::Error>>(
    input: impl LogInput,
    mut output: W,
    options: &AnnotateOptions,
    mut open: impl FnMut(&Opened<'_>) -> Result<(SegmentAnnotator<'p, 'o, 'd>, T), E>,
    mut close: impl FnMut(
        SegmentAnnotator<'p, 'o, 'd>,
        T,
        &mut W,
        &mut SourceFiles,
        Closed,
    ) -> Result<(), E>,
) -> Result<(), E> {
    let mut sources = SourceFiles::new(options.sources.clone());
    let mut deframer = Deframer::default();
    let mut current = Some(open(&Opened {
        line: 1,
        start: None,
        payload: None,
        lines_read: 0,
        offset: 0,
        deframer: &deframer,
        rest: b"",
    })?);
    let mut lines = input.into_lines();
    let mut line_no = 0u64;
    let mut offset = 0u64;
    let mut passed = Passed::default();
    loop {
        if current.as_ref().is_some_and(|(seg, _)| seg.halted()) {
            passed.write(lines.buffered(), &mut output)?;
            if let Some((seg, kept)) = current.take() {
                let closed = Closed {
                    written: line_no,
                    halted: true,
                };
                close(seg, kept, &mut output, &mut sources, closed)?;
            }
            return Ok(output.flush()?);
        }
        let span = match lines.next_line_span(false)? {
            Some(span) => span,
            None => {
                passed.write(lines.buffered(), &mut output)?;
                if lines.would_wait() {
                    output.flush()?;
                }
                match lines.next_line_span(true)? {
                    Some(span) => span,
                    None => break,
                }
            }
        };
        let bytes = lines.buffered();
        let (buf, rest) = (&bytes[span.0..span.1], &bytes[span.1..]);
        line_no += 1;
        offset += buf.len() as u64;
        let (content, newline) = split_newline(buf);
        // Most lines are the open log's own and change nothing in the framing.
        if let Some((seg, _)) = current.as_mut()
            && deframer.quiet(content)
        {
            let line = LogLine::bare(line_no, buf, (content, newline));
            match seg.passes(&line) {
                Pass::Line => {
                    passed.add(span, bytes, &mut output)?;
                    // Most lines go out as they came in, only counted: the lines that only
                    // detail the verifier's work (a precision-tracking walk back, a callee's
                    // states), and every line of a log that carries the kernel's own source
                    // lines. The lines after this one that are read already and go the same
                    // way are taken as one run.
                    let first = line_no;
                    let (run, n) = if seg.whole_lines_only_count() {
                        // `deframer.quiet`, its framing's part asked once.
                        let quiet = deframer.quiet_framing();
                        lines.next_run(|text| {
                            let (content, newline) = split_newline(text);
                            let taken = quiet
                                && !newline.is_empty()
                                && !content.ends_with(b":")
                                && seg.count_whole(line_no + 1, content);
                            line_no += u64::from(taken);
                            taken
                        })
                    } else {
                        // Detail lines change nothing `takes_details` looks at: asked again
                        // only after another line.
                        let mut details = seg.takes_details();
                        lines.next_run(|text| {
                            let (content, newline) = split_newline(text);
                            if !deframer.quiet(content) {
                                return false;
                            }
                            let taken = if details && is_detail(content) {
                                seg.detail(line_no + 1);
                                true
                            } else {
                                let line = LogLine::bare(line_no + 1, text, (content, newline));
                                let taken = seg.only_counts(&line);
                                details = seg.takes_details();
                                taken
                            };
                            line_no += u64::from(taken);
                            taken
                        })
                    };
                    debug_assert_eq!(line_no - first, n);
                    if n > 0 {
                        offset += (run.1 - run.0) as u64;
                        passed.add(run, lines.buffered(), &mut output)?;
                    }
                }
                Pass::After(row) => {
                    passed.write(bytes, &mut output)?;
                    seg.annotation(&mut output, &mut sources, row, &line)?;
                    passed.add(span, bytes, &mut output)?;
                }
                Pass::No => {
                    passed.write(bytes, &mut output)?;
                    seg.line(&mut output, &mut sources, line)?;
                }
            }
            continue;
        }
        passed.write(bytes, &mut output)?;
        let step = deframer.step(content);
        if step.ends
            && let Some((seg, kept)) = current.take()
        {
            let closed = Closed {
                written: line_no - 1,
                halted: false,
            };
            close(seg, kept, &mut output, &mut sources, closed)?;
        }
        let payload = step.prefix.map(|prefix| {
            let prefix = prefix.min(content.len());
            (&content[..prefix], &content[prefix..])
        });
        if let Some(start) = &step.starts {
            current = Some(open(&Opened {
                line: line_no,
                start: Some(start),
                payload: payload.map(|(_, p)| p),
                lines_read: line_no,
                offset,
                deframer: &deframer,
                rest,
            })?);
        }
        match (payload, current.as_mut()) {
            (Some((prefix, payload)), Some((seg, _))) => {
                let line = LogLine {
                    line_no,
                    text: buf,
                    prefix,
                    payload,
                    newline,
                    indent: step.indent,
                };
                seg.line(&mut output, &mut sources, line)?;
            }
            _ => outside(&mut output, options, line_no, content, newline)?,
        }
    }
    passed.write(lines.buffered(), &mut output)?;
    if let Some((seg, kept)) = current.take() {
        let closed = Closed {
            written: line_no,
            halted: false,
        };
        close(seg, kept, &mut output, &mut sources, closed)?;
    }
    Ok(output.flush()?)
}

/// Lines that go out as they came in, not written yet, to be written together: their span in
/// the reader's bytes. They are written before anything else is, and before the reader reads
/// on (the bytes move then).
#[derive(Default)]
struct Passed(Option<(usize, usize)>);

impl Passed {
    /// Adds the line (or lines) at `span` of `bytes`.
    fn add(&mut self, span: (usize, usize), bytes: &[u8], out: &mut impl Write) -> io::Result<()> {
        match &mut self.0 {
            Some((_, end)) if *end == span.0 => *end = span.1,
            _ => {
                self.write(bytes, out)?;
                self.0 = Some(span);
            }
        }
        Ok(())
    }

    /// Writes them.
    fn write(&mut self, bytes: &[u8], out: &mut impl Write) -> io::Result<()> {
        match self.0.take() {
            Some((start, end)) => out.write_all(&bytes[start..end]),
            None => Ok(()),
        }
    }
}

/// A line around the logs: as it is, or as a JSON record.
fn outside(
    out: &mut impl Write,
    options: &AnnotateOptions,
    line_no: u64,
    content: &[u8],
    newline: &[u8],
) -> io::Result<()> {
    if options.format == crate::annotate::OutputFormat::Json {
        return crate::json::record(out, line_no, "outside", content, None, None);
    }
    out.write_all(content)?;
    out.write_all(newline)
}

/// The logs of a file without what surrounds them: the kernel's lines of the chosen logs (their
/// wrappers' prefixes removed), one after another, as a [`Read`] for tools that take one log
/// (`profile`, `report`).
pub struct Extract<R> {
    lines: LineReader<R>,
    deframer: Deframer,
    keep: Keep,
    /// The log the reader is in (0: the bare text before any wrapper), and whether it is kept.
    segment: usize,
    keeping: bool,
    out: Vec<u8>,
    at: usize,
}

/// Which logs an [`Extract`] keeps.
enum Keep {
    All,
    /// By position in the file.
    Segments(Vec<bool>),
}

impl<R: Read> Extract<R> {
    /// The lines of every log.
    pub fn all(input: R) -> Self {
        Extract::new(input, Keep::All)
    }

    /// The logs of `plan` whose program is `program` (an index into the programs planned with).
    pub fn of_program(input: R, plan: &Plan, program: usize) -> Self {
        Extract::new(
            input,
            Keep::Segments(
                plan.segments
                    .iter()
                    .map(|s| s.program == Some(program))
                    .collect(),
            ),
        )
    }

    /// The logs at the positions `wanted` marks (0: the bare text before any wrapper).
    pub fn segments(input: R, wanted: Vec<bool>) -> Self {
        Extract::new(input, Keep::Segments(wanted))
    }

    fn new(input: R, keep: Keep) -> Self {
        let keeping = match &keep {
            Keep::Segments(w) => w.first().copied().unwrap_or(false),
            Keep::All => true,
        };
        Extract {
            lines: LineReader::new(input),
            deframer: Deframer::default(),
            keep,
            segment: 0,
            keeping,
            out: Vec::new(),
            at: 0,
        }
    }
}

impl<R: Read> Read for Extract<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Lines are gathered in blocks, so that a reader of large blocks makes few calls.
        const BLOCK: usize = 256 * 1024;
        if self.at == self.out.len() {
            self.out.clear();
            self.at = 0;
            while self.out.len() < BLOCK {
                let Some(line) = self.lines.next_line()? else {
                    break;
                };
                let (content, newline) = split_newline(line);
                let step = self.deframer.step(content);
                if step.starts.is_some() {
                    self.segment += 1;
                    self.keeping = match &self.keep {
                        Keep::All => true,
                        Keep::Segments(w) => w.get(self.segment).copied().unwrap_or(false),
                    };
                }
                match (step.prefix, self.keeping) {
                    // A whole line of the log: as it is.
                    (Some(0), true) if !newline.is_empty() => self.out.extend_from_slice(line),
                    (Some(prefix), true) => {
                        self.out
                            .extend_from_slice(content.get(prefix..).unwrap_or_default());
                        self.out.extend_from_slice(if newline.is_empty() {
                            b"\n"
                        } else {
                            newline
                        });
                    }
                    _ => {}
                }
            }
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
