//! Planning: a first pass over a file that finds each program's log in it and chooses the program
//! for each, so that the second pass (`annotate_planned`) can stream.
//!
//! For every log (see [`crate::frame`]) the plan records the candidates that fit (restricted to
//! the program the wrapper names, or to `--prog`), whether the kernel's annotation lines are in
//! it and in which form (6.9+ `; text @ file:line` or older `; text`), and whether the log was
//! cut at the top (kernels since 6.4 keep the tail of a log that overflows its buffer): then its
//! first line may be the end of a line the kernel dropped, and its first instruction is not 0.

use crate::Program;
use crate::checked_insns::Fitted;
use crate::frame::{Deframer, SegmentStart, Wrapper};
use crate::select::{SelectError, Selection, Selector};
use crate::sink::{Both, Observer, Placed, Sink, decode, observe_whole, read_into};
use bpflog_log::{InsnHead, Line, Lines, LogInput};
use bpflog_object::{excerpt, excerpt_names};
use std::io;

/// What the first pass found about one program's log.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// The form of its kernel's source lines, as the log shows it (see
    /// [`bpflog_log::source_lines_shown`]).
    pub source_lines: bpflog_log::SourceLines,
    /// The log starts mid-path: the kernel kept only its tail.
    pub truncated: bool,
    /// Its first line is the cut end of a longer line (passed through untouched).
    pub partial_first_line: bool,
    /// The loader's line before it that said the load of its program failed.
    pub(crate) load_failed: Option<crate::frame::LoadFailedAt>,
    /// No line of the log was read (a wrapper with nothing in it; the loader's lines before
    /// the first log).
    pub empty: bool,
}

/// The logs of a file, in order; the first is the (possibly empty) bare text before any wrapper.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Plan {
    /// One entry per log.
    pub segments: Vec<SegmentPlan>,
}

/// Which program's logs a tool that takes one program's log (`profile`, `report`) takes from
/// a planned file ([`Plan::choose`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The program (an index into the programs planned with).
    pub program: usize,
    /// The logs taken, by position in the plan (for
    /// [`Extract::segments`](crate::extract::Extract::segments)).
    pub taken: Vec<bool>,
    /// No log has an instruction line to tell its program by (an accepted program's level-1
    /// log is its summary alone): every program would read it alike, as twins do, and the first
    /// was taken. A caller says so.
    pub guessed: bool,
}

/// Why no program's logs are taken out of a file (`take`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChoiceError {
    /// The file holds the logs of several programs (their names), and none was named.
    #[error("the file holds the logs of several programs ({}); choose one with --prog", excerpt_names(.0))]
    Several(Vec<String>),
    /// The program named has no log in the file.
    #[error("no verifier log of {} in it", bpflog_object::excerpt_name(.0))]
    NoLog(String),
}

impl Plan {
    /// The program whose logs a tool that takes one program's log reads, and which logs: the
    /// one named (`forced`, which the plan was made with), or the only one whose logs the file
    /// holds. The logs that fit it are taken; when none of them has an instruction line and
    /// the program was named, the logs planned for it that do not fit (unless their wrapper
    /// names another program) are, as asked; with no instruction line anywhere and no name,
    /// every log, as the first program's ([`Choice::guessed`]).
    pub(crate) fn choose(
        &self,
        programs: &[Program<'_, '_>],
        forced: Option<&str>,
    ) -> Result<Choice, ChoiceError> {
        // The programs whose logs the file holds (a log without instructions names none); with
        // a name, the logs that fit it.
        let mut found: Vec<usize> = Vec::new();
        for s in self.segments.iter().filter(|s| s.misfit.is_none()) {
            if let Some(p) = s.program.filter(|p| !found.contains(p)) {
                found.push(p);
            }
        }
        let named = forced.and_then(|name| programs.iter().position(|p| p.name() == name));
        let program = match (named, &found[..]) {
            (Some(p), _) => p,
            (None, [p]) => *p,
            (None, []) => 0,
            (None, _) => {
                let names = found.iter().map(|&p| programs[p].name().to_owned());
                return Err(ChoiceError::Several(names.collect()));
            }
        };
        let name = programs.get(program).map_or("", |p| p.name());
        let fitting: Vec<bool> = (self.segments.iter())
            .map(|s| s.program == Some(program) && s.misfit.is_none())
            .collect();
        // Named, the logs planned for it though they do not fit it (unless their wrapper names
        // another program): taken as asked.
        let forced: Vec<bool> = (self.segments.iter())
            .map(|s| {
                let own = (s.named.as_deref()).is_none_or(|n| n == name);
                named.is_some() && own && s.program == Some(program) && s.instructions > 0
            })
            .collect();
        let with_instructions = |taken: &[bool]| {
            (self.segments.iter().zip(taken)).any(|(s, t)| *t && s.instructions > 0)
        };
        let (taken, guessed) =
            if with_instructions(&fitting) || (fitting.contains(&true) && named.is_none()) {
                (fitting, false)
            } else if forced.contains(&true) {
                (forced, false)
            } else if fitting.contains(&true) {
                // Logs without instructions (a load refused before any was checked).
                (fitting, false)
            } else if named.is_none() {
                (vec![true; self.segments.len()], true)
            } else {
                return Err(ChoiceError::NoLog(name.to_owned()));
            };
        Ok(Choice {
            program,
            taken,
            guessed,
        })
    }
}

/// Why a file could not be planned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
        /// From a one-pass annotation ([`crate::annotate()`]): how many of the input's lines
        /// (from the first) the output holds when the error is found, annotated, and nothing
        /// after them; `None` from a first pass (`plan`), which writes nothing.
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
    let mut pass = FirstPass::plans(programs, forced)?;
    pass.read(&mut input.into_lines())?;
    Ok(Plan {
        segments: pass.finish()?.ended,
    })
}

/// Reads a whole (bare) log and chooses the program of `programs` it belongs to.
pub fn select(
    programs: &[Program<'_, '_>],
    input: impl LogInput,
) -> Result<Selection, SelectError> {
    select_among(programs.iter().collect(), input)
}

/// [`select`] among programs held elsewhere ([`Selection::chosen`] indexes `programs`).
pub(crate) fn select_among(
    programs: Vec<&Program<'_, '_>>,
    input: impl LogInput,
) -> Result<Selection, SelectError> {
    let mut selector = Selector::new(programs);
    observe_whole(input, &mut selector)?;
    selector.finish()
}

/// The first pass over a file's logs: each log opened where it starts (its candidates, with the
/// lines that fitted them in the logs before: [`open`]), observed together with what `E`
/// observes beside it, and handed to `E` where it ends. [`plan`] keeps each log's
/// [`SegmentPlan`] ([`Plans`]); the planned profile also profiles each log
/// (`profile/planned.rs`).
pub(crate) struct FirstPass<'c, 'o, 'd, 'f, E: Ends<'c, 'o, 'd>> {
    pub(crate) deframer: Deframer,
    pub(crate) line_no: u64,
    pub(crate) logs: FirstPassLogs<'c, 'o, 'd, 'f, E>,
}

/// What the first pass knows of the logs: the one open, and what became of those that ended.
pub(crate) struct FirstPassLogs<'c, 'o, 'd, 'f, E: Ends<'c, 'o, 'd>> {
    programs: &'c [Program<'o, 'd>],
    /// The instruction lines that fitted each program in the logs so far.
    pub(crate) fitted: Fitted,
    forced: Option<&'f str>,
    pub(crate) current: Option<OpenLog<'c, 'o, 'd, E::Beside>>,
    /// What takes the logs that ended.
    pub(crate) ends: E,
}

/// A log the first pass has open: its first pass, and what observes its lines beside it.
pub(crate) struct OpenLog<'c, 'o, 'd, B> {
    pub(crate) pending: Pending<'c, 'o, 'd>,
    pub(crate) beside: B,
}

/// What becomes of the logs of a [`FirstPass`].
pub(crate) trait Ends<'c, 'o, 'd> {
    /// What observes a log's lines beside its first pass (`()`: nothing).
    type Beside: Observer;
    /// What stops the pass.
    type Error: From<io::Error>;

    /// What observes a log that opens.
    fn beside(&mut self) -> Self::Beside;

    /// A log could not be opened: it names no program (then it has no first pass).
    fn refused(&mut self, error: PlanError) -> Result<(), Self::Error>;

    /// A log has ended; the lines that fitted its candidates go back to `fitted` ([`close`]).
    fn ended(
        &mut self,
        log: OpenLog<'c, 'o, 'd, Self::Beside>,
        fitted: &mut Fitted,
    ) -> Result<(), Self::Error>;

    /// Whether the pass reads on, with `open` the first pass over the log open.
    fn wants_more(&self, open: Option<&Pending<'c, 'o, 'd>>) -> bool;
}

impl<'c, 'o, 'd, 'f, E: Ends<'c, 'o, 'd>> FirstPass<'c, 'o, 'd, 'f, E> {
    /// A pass over `programs` from the top of a file, as `deframer` is, its first log (the bare
    /// text before any wrapper) not yet opened ([`open_first`](Self::open_first)).
    pub(crate) fn new(
        programs: &'c [Program<'o, 'd>],
        forced: Option<&'f str>,
        deframer: Deframer,
        ends: E,
    ) -> Self {
        let logs = FirstPassLogs {
            programs,
            fitted: Fitted::new(programs.len()),
            forced,
            current: None,
            ends,
        };
        FirstPass {
            deframer,
            line_no: 0,
            logs,
        }
    }

    /// Opens the first log, on line 1.
    pub(crate) fn open_first(&mut self) -> Result<(), E::Error> {
        self.logs.open(1, None)
    }

    /// Reads on to the end of `lines`, or until `E` wants no more.
    pub(crate) fn read(&mut self, lines: &mut impl Lines) -> Result<(), E::Error> {
        read_into(lines, &mut self.deframer, &mut self.line_no, &mut self.logs)
    }

    /// The end of the file: the log still open ends here.
    pub(crate) fn finish(self) -> Result<E, E::Error> {
        let mut logs = self.logs;
        logs.end(0)?;
        Ok(logs.ends)
    }
}

impl<'c, 'o, 'd, E: Ends<'c, 'o, 'd>> FirstPassLogs<'c, 'o, 'd, '_, E> {
    /// Opens the log that starts on line `line` (see [`open`]).
    fn open(&mut self, line: u64, start: Option<SegmentStart>) -> Result<(), E::Error> {
        let (programs, forced) = (self.programs, self.forced);
        match open(programs, &mut self.fitted, line, start, forced) {
            Ok(pending) => {
                let beside = self.ends.beside();
                self.current = Some(OpenLog { pending, beside });
                Ok(())
            }
            Err(error) => {
                self.current = None;
                self.ends.refused(error)
            }
        }
    }
}

impl<'c, 'o, 'd, E: Ends<'c, 'o, 'd>> Sink for FirstPassLogs<'c, 'o, 'd, '_, E> {
    type Error = E::Error;

    fn end(&mut self, _line: u64) -> Result<(), E::Error> {
        match self.current.take() {
            Some(log) => self.ends.ended(log, &mut self.fitted),
            None => Ok(()),
        }
    }

    fn start(&mut self, line: u64, start: SegmentStart) -> Result<(), E::Error> {
        self.open(line, Some(start))
    }

    #[inline(always)]
    fn payload(&mut self, line: &Placed<'_>) -> Result<(), E::Error> {
        if let Some(log) = self.current.as_mut() {
            let both = &mut Both(&mut log.pending, &mut log.beside);
            decode(line.payload, line.line_no, both);
        }
        Ok(())
    }

    fn wants_more(&self) -> bool {
        self.ends
            .wants_more(self.current.as_ref().map(|log| &log.pending))
    }
}

/// What [`plan`] keeps of the logs: each one's plan.
#[derive(Default)]
pub(crate) struct Plans {
    pub(crate) ended: Vec<SegmentPlan>,
    /// Reading stops at the first program known: a log's settled, or an ended log's.
    settling: bool,
}

impl Plans {
    /// The program of a log that ended with one, or of the open log (`open`), once settled.
    fn known(&self, open: Option<&Pending<'_, '_, '_>>) -> Option<usize> {
        (self.ended.iter().find_map(|plan| plan.program))
            .or_else(|| open.and_then(Pending::settled))
    }
}

impl<'c, 'o, 'd> Ends<'c, 'o, 'd> for Plans {
    type Beside = ();
    type Error = PlanError;

    fn beside(&mut self) {}

    fn refused(&mut self, error: PlanError) -> Result<(), PlanError> {
        Err(error)
    }

    fn ended(
        &mut self,
        log: OpenLog<'c, 'o, 'd, ()>,
        fitted: &mut Fitted,
    ) -> Result<(), PlanError> {
        self.ended.push(close(log.pending, fitted)?);
        Ok(())
    }

    fn wants_more(&self, open: Option<&Pending<'c, 'o, 'd>>) -> bool {
        !self.settling || self.known(open).is_none()
    }
}

/// The first pass of [`plan`].
pub(crate) type PlanPass<'c, 'o, 'd, 'f> = FirstPass<'c, 'o, 'd, 'f, Plans>;

impl<'c, 'o, 'd, 'f> PlanPass<'c, 'o, 'd, 'f> {
    /// A first pass from the top of a file, inside its first (bare) log, that plans each log.
    pub(crate) fn plans(
        programs: &'c [Program<'o, 'd>],
        forced: Option<&'f str>,
    ) -> Result<Self, PlanError> {
        let mut pass = FirstPass::new(programs, forced, Deframer::default(), Plans::default());
        pass.open_first()?;
        Ok(pass)
    }

    /// Reads on until a program is known: that of the first log that ends with one, or of the
    /// log whose first lines settle it (see [`Pending::settled`]); at the end of `lines`, that of
    /// the log they end, if any.
    pub(crate) fn settle(mut self, lines: &mut impl Lines) -> Result<Option<usize>, PlanError> {
        self.logs.ends.settling = true;
        self.read(lines)?;
        let open = self.logs.current.as_ref().map(|log| &log.pending);
        if let Some(known) = self.logs.ends.known(open) {
            return Ok(Some(known));
        }
        Ok(self.finish()?.ended.last().and_then(|plan| plan.program))
    }
}

/// The first pass over a log that starts on line `line` as the deframer says (`start`; `None`:
/// the bare text before any wrapper): its candidates (the programs of the name forced or
/// named, else all), each with the lines that fitted it in earlier logs, taken from `fitted`
/// until the log is [closed](close).
pub(crate) fn open<'c, 'o, 'd>(
    programs: &'c [Program<'o, 'd>],
    fitted: &mut Fitted,
    line: u64,
    start: Option<SegmentStart>,
    forced: Option<&str>,
) -> Result<Pending<'c, 'o, 'd>, PlanError> {
    let (wrapper, named, load_failed) = start.map_or((Wrapper::Bare, None, None), |s| {
        (s.wrapper, s.program, s.load_failed.map(|f| f.at(line)))
    });
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
    let selector = Selector::new(candidates.iter().map(|&i| &programs[i]).collect())
        .remembering(fitted.take(&candidates));
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
            source_lines: bpflog_log::SourceLines::Located,
            truncated: false,
            partial_first_line: false,
            load_failed,
            empty: true,
        },
        candidates,
        selector,
        forced: forced.is_some(),
        first_payload: true,
        cut: CutTop::default(),
    })
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

/// The first pass over one log observes its lines: where it starts, how many instructions and
/// which annotation lines it has, and whether it fits its candidates.
impl Observer for Pending<'_, '_, '_> {
    /// All but the first line of its log that the selector ignores
    /// ([`Selector::ignores_details`]).
    #[inline]
    fn ignores_details(&self) -> bool {
        !self.first_payload && self.selector.ignores_details()
    }

    /// See [`Selector::insn_seen`].
    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        if self.first_payload || !self.selector.insn_seen(head) {
            return false;
        }
        self.cut.insn(head.index);
        self.plan.instructions += 1;
        true
    }

    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line_no: u64) {
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
        self.selector.observe_text(kind, payload, line_no);
    }
}

impl<'c, 'o, 'd> Pending<'c, 'o, 'd> {
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

/// What the first pass concludes about a log once it has ended; the instruction lines that
/// fitted its candidates go back to `fitted`.
pub(crate) fn close(
    mut seg: Pending<'_, '_, '_>,
    fitted: &mut Fitted,
) -> Result<SegmentPlan, PlanError> {
    fitted.give_back(&seg.candidates, seg.selector.forget());
    let mut plan = seg.plan;
    plan.empty = seg.first_payload;
    plan.source_lines = seg.selector.source_lines();
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
    /// An older kernel's (`; text`): replaced by the lines of the form the log shows
    /// ([`SegmentPlan::source_lines`]; the same lines, for a log of Linux 5.10 or 6.1).
    Old,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::LineReader;

    #[test]
    fn a_log_lends_the_lines_that_fitted_its_candidates_and_gives_them_back_at_its_end() {
        crate::testing::with_branchy(|program, log| {
            let programs = std::slice::from_ref(program);
            let mut pass = FirstPass::plans(programs, None).unwrap();
            pass.read(&mut LineReader::new(log)).unwrap();
            // While the log is open, its selector holds them.
            assert!(!pass.logs.fitted.take(&[0])[0].fitted(4, 0x07, b"r2 += 14"));
            pass.logs.end(0).unwrap();
            // The log ended: they are the job's, for the next log.
            let lines = pass.logs.fitted.take(&[0]);
            assert!(lines[0].fitted(4, 0x07, b"r2 += 14"));
            assert!(!lines[0].fitted(4, 0x07, b"r2 += 15"));
        });
    }
}
