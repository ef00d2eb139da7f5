//! Why the verifier said no: the class of the rejection, where the offending value came from,
//! and what to change.
//!
//! The explainer is one more consumer of the decoded lines (the library's one loop, `sink.rs`):
//! it reads the file once through the deframer and the one decode, keeps what the end of a
//! rejection needs (the failure tracker the rustc-style diagnostic is built from), the
//! failing path's instructions with the registers' ids, and, beside it on the same lines, the
//! profiler's counts (the complexity limit is explained by where the verifier spent its work).
//! At the end of each rejected log it classifies the verifier's error (`catalogue`), walks
//! the offending register back to its origin, and places every step in the C source
//! ([`locate`](crate::locate())). The renderers write it as text (the diagnostic
//! plus the chain and the help), JSON lines, or gcc-style lines for editors' quickfix lists;
//! [`write_sarif`] writes all of a run's as one SARIF log.
//!
//! `annotate` explains in its own loop, not in a second read: where it shows a diagnostic, the
//! annotator's observer of each line is this explainer (it holds the diagnostic's failure
//! tracker), and the diagnostic is the text renderer here; its JSON carries the same object as
//! `--format json`. Kernel style without a diagnostic has no explainer: keeping the failing
//! path costs each instruction line a copy of its first bytes (decoded only at the end of a
//! rejected log, for the walk back).

mod catalogue;
mod chain;
mod finish;
mod help;
mod sarif;

pub use catalogue::{CLASSES, Class, ClassId, Message, Rejection};
pub(crate) use chain::Fact;
pub use chain::Role;
pub use sarif::{SarifPaths, write_sarif};

use crate::Program;
use crate::diagnostic::{FailureTracker, Report};
use crate::frame::{Deframer, LoadFailedAt, SegmentStart};
use crate::input::{Input, LogData};
use crate::profile::{Profile, Profiler};
use crate::select::SelectError;
use crate::sink::{Both, Observer, Placed, Sink, decode, read_into};
use crate::source::SourceFiles;
use crate::style::{Palette, write_styled};
use crate::take::{JobError, Note, READ_AHEAD, take};
use bpflog_log::state::Resumes;
use bpflog_log::{InsnHead, Line, LogInput};
use chain::Path;
use std::io::{self, Write};

/// Where an instruction comes from in the source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Location {
    /// The instruction index.
    pub insn: u64,
    /// The source file as the debug info names it (`None`: no line info for it).
    pub file: Option<String>,
    /// The line (1-based; 0 when unknown).
    pub line: u32,
    /// The column (1-based; 0 when unknown).
    pub column: u32,
}

/// One step of a chain, from the origin to the failure.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub struct Step {
    /// Where it is.
    #[serde(flatten)]
    pub location: Location,
    /// The source line's text, trimmed (the instruction's when the line is not known).
    pub source: String,
    /// The instruction as the log prints it.
    pub instruction: String,
    /// What it does with the value.
    pub role: Role,
    /// What more it says (`bpf_map_lookup_elem returns it, and may return NULL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The line its instruction was read at on the failing path, numbered as the lines were
    /// handed to the explainer (in [`explain`], the input's line from 1); `None` when the path
    /// kept no such line.
    #[serde(skip)]
    pub read_at: Option<u64>,
    /// What the walk found at this step, as data (the note is made from it).
    #[serde(skip)]
    pub(crate) fact: Option<Fact>,
}

/// A rejected log, explained.
#[derive(Debug)]
pub struct Explanation {
    /// The rejection: its class and what the verifier's error line that gave it says.
    pub rejection: Rejection,
    /// Where it failed.
    pub location: Location,
    /// Where the offending value came from, origin first, the failing instruction last.
    pub chain: Vec<Step>,
    /// What to change, filled in with the program's own lines.
    pub help: String,
    /// The line of the input the log started at (from 1).
    pub log_line: u64,
    /// What the diagnostic is rendered from.
    pub(crate) report: Report,
}

/// Explains each rejected log of `program` in `input`, read as it is: for the tests of the
/// explainer itself (feature `testing`); [`explain`] is the entry point.
#[cfg(feature = "testing")]
pub fn explain_bare(
    program: &Program<'_, '_>,
    input: impl LogInput,
) -> io::Result<Vec<Explanation>> {
    let mut explanations = Vec::new();
    read(program, input, None, None, &mut |e| {
        explanations.push(e);
        Ok(())
    })?;
    Ok(explanations)
}

/// Which program the logs in a file are of, how many were explained, and what the user should
/// hear ([`explain`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct Explained {
    /// The program the logs are of (an index into the programs given).
    pub program: usize,
    /// How many rejected logs were explained.
    pub explained: u64,
    /// The logs without a rejection whose load failed all the same, in the file's order.
    pub load_failures: Vec<LoadFailure>,
    /// What to tell the user, in order.
    pub notes: Vec<Note>,
}

/// A log with no rejection in it of a load that failed: the loader said so before the log
/// (libbpf's `libbpf: prog 'p': BPF program load failed: REASON`). The verifier accepted the
/// program, and its file descriptor, the JIT or the loader failed after; or the log was cut
/// before its end (a buffer too small: `No space left on device`). The deframer gives the
/// loader's line to the log of the program it names (`SegmentStart::load_failed`), whatever
/// the number of programs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadFailure {
    /// The line of the input the log started at (from 1).
    pub log_line: u64,
    /// Whether the log ends in the verifier's summary with no error: the verifier accepted
    /// the program.
    pub accepted: bool,
    /// The loader's line that says the load failed: its number in the input (from 1) ...
    pub line: u64,
    /// ... and its text, cut and escaped for a message.
    pub text: String,
}

impl std::fmt::Display for LoadFailure {
    /// `the verifier accepted the program (its log from line M), but the load failed: TEXT`
    /// (the caller names the file and [`line`](Self::line)).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let verdict = if self.accepted {
            "the verifier accepted the program (its log from line"
        } else {
            "no rejection in the log, cut before its summary (from line"
        };
        write!(
            f,
            "{verdict} {}), but the load failed: {}",
            self.log_line, self.text
        )
    }
}

/// Explains each rejected log of `input` (bare or wrapped as tools print them; logs a wrapper
/// names for another program are passed over), handing each explanation to `each` with its
/// program as its log ends (memory does not grow with the number of logs; an error of `each`
/// ends the read with it). Accepted logs give nothing.
///
/// The only program's log is read once, the fit checked on the way (a log that does not fit is
/// [`JobError::Unfit`], found at the end, unless the program is named, as by [`Input::of`]:
/// then a [`Note::Misfit`]); of several, the program's logs are taken out of the file first
/// (`take`, which reads it twice: a stream is [`JobError::NeedsFile`]).
pub fn explain<'p, 'o, 'd, R: LogInput>(
    input: Input<'p, 'o, 'd, R>,
    mut each: impl FnMut(&'p Program<'o, 'd>, Explanation) -> io::Result<()>,
) -> Result<Explained, JobError> {
    input.check()?;
    let mut explained = 0;
    let Input {
        programs,
        prog,
        log,
    } = input;
    if let [program] = programs {
        let selector = crate::Selector::new(vec![program]);
        let mut each = |e| {
            explained += 1;
            each(program, e)
        };
        let read = match log {
            LogData::Stream(stream) => read(program, stream, Some(selector), None, &mut each),
            LogData::File(file) => {
                let (stream, _) = file.read_ahead(READ_AHEAD)?;
                read(program, stream, Some(selector), None, &mut each)
            }
        }?;
        let fit = (read.selector).map_or(Err(SelectError::NoPrograms), crate::Selector::fit);
        let notes = Note::of_fit(program, fit, prog).map_err(JobError::Unfit)?;
        return Ok(Explained {
            program: 0,
            explained,
            load_failures: read.load_failures,
            notes,
        });
    }
    let LogData::File(file) = log else {
        return Err(JobError::NeedsFile);
    };
    let taken = take(programs, file, prog)?;
    let program = programs.get(taken.program).ok_or(JobError::NoPrograms)?;
    // The logs alone: what the loader printed around them is not taken, but which of them its
    // load failed for is.
    let read = read(
        program,
        taken.logs,
        None,
        Some(taken.load_failed),
        &mut |e| {
            explained += 1;
            each(program, e)
        },
    )?;
    Ok(Explained {
        program: taken.program,
        explained,
        load_failures: read.load_failures,
        notes: taken.notes,
    })
}

/// What reading the logs of a file found besides the explanations.
struct Read<'p, 'o, 'd> {
    load_failures: Vec<LoadFailure>,
    selector: Option<crate::Selector<'p, 'o, 'd>>,
}

/// Explains the logs of `program` in `input`, read once, with `selector` checking the fit on
/// the way when given: each explanation handed to `each` as its log ends. `taken`: the input is
/// logs taken out of a file ([`take`]), and this is, for each in order, the loader's line that
/// said its load failed.
fn read<'p, 'o, 'd>(
    program: &'p Program<'o, 'd>,
    input: impl LogInput,
    selector: Option<crate::Selector<'p, 'o, 'd>>,
    taken: Option<Vec<Option<LoadFailedAt>>>,
    each: &mut dyn FnMut(Explanation) -> io::Result<()>,
) -> io::Result<Read<'p, 'o, 'd>> {
    let mut lines = input.into_lines();
    let mut deframer = Deframer::default();
    let mut taken = taken.map(Vec::into_iter);
    let mut logs = ExplainLogs {
        program,
        current: Some((Explainer::new(1), Profiler::new(program))),
        selector,
        each,
        current_load_failed: taken.as_mut().and_then(|t| t.next().flatten()),
        taken,
        load_failures: Vec::new(),
    };
    let mut line = 0;
    read_into(&mut lines, &mut deframer, &mut line, &mut logs)?;
    logs.close()?;
    Ok(Read {
        load_failures: logs.load_failures,
        selector: logs.selector,
    })
}

/// The logs of a file, as the deframer splits it.
struct ExplainLogs<'e, 'p, 'o, 'd> {
    program: &'p Program<'o, 'd>,
    /// The open log, unless it is another program's, and its profile (for the complexity
    /// limit).
    current: Option<(Explainer, Profiler<'p, 'o, 'd>)>,
    /// What checks that the logs are the program's, when asked to.
    selector: Option<crate::Selector<'p, 'o, 'd>>,
    /// Takes each explanation.
    each: &'e mut dyn FnMut(Explanation) -> io::Result<()>,
    /// The loader's line that said the open log's load failed (`SegmentStart::load_failed`).
    current_load_failed: Option<LoadFailedAt>,
    /// Logs taken out of a file: the loader's line of each log after the open one, which the
    /// taking left out.
    taken: Option<std::vec::IntoIter<Option<LoadFailedAt>>>,
    load_failures: Vec<LoadFailure>,
}

impl ExplainLogs<'_, '_, '_, '_> {
    fn close(&mut self) -> io::Result<()> {
        let failed = self.current_load_failed.take();
        let Some((explainer, profiler)) = self.current.take() else {
            return Ok(());
        };
        let profile = profiler.finish();
        match explainer.conclude(self.program, Some(&profile), failed) {
            Some(Concluded::Rejected(explanation)) => (self.each)(*explanation)?,
            Some(Concluded::LoadFailed(failure)) => self.load_failures.push(failure),
            None => {}
        }
        Ok(())
    }
}

impl Sink for ExplainLogs<'_, '_, '_, '_> {
    type Error = io::Error;

    fn end(&mut self, _: u64) -> io::Result<()> {
        self.close()
    }

    fn start(&mut self, line: u64, start: SegmentStart) -> io::Result<()> {
        self.close()?;
        let ours = start
            .program
            .as_deref()
            .is_none_or(|name| name == self.program.name());
        self.current = ours.then(|| (Explainer::new(line), Profiler::new(self.program)));
        self.current_load_failed = match &mut self.taken {
            Some(taken) => taken.next().flatten(),
            None => start.load_failed.map(|f| f.at(line)),
        }
        .filter(|_| ours);
        Ok(())
    }

    fn payload(&mut self, placed: &Placed<'_>) -> io::Result<()> {
        let (payload, line) = (placed.payload, placed.line_no);
        match (&mut self.current, &mut self.selector) {
            (Some((explainer, profiler)), Some(selector)) => {
                decode(
                    payload,
                    line,
                    &mut Both(selector, &mut Both(explainer, profiler)),
                );
            }
            (Some((explainer, profiler)), None) => {
                decode(payload, line, &mut Both(explainer, profiler));
            }
            (None, _) => {}
        }
        Ok(())
    }
}

/// What one log showed, kept for its explanation: the failure tracker the rustc-style
/// diagnostic is built from, and the failing path. One more observer of the lines of a log,
/// in `explain`'s loop ([`explain`]) and in the annotator's (its diagnostic).
pub(crate) struct Explainer {
    tracker: FailureTracker,
    path: Path,
    /// Where a path resumes that no `from X to Y` line heads.
    resumes: Resumes,
    /// The last line taken was an instruction line with no state after it: a state line next
    /// (bookkeeping and source lines aside) is the state after it.
    stateless_insn: bool,
    /// The registers that instruction compares, when it is a jump comparing two.
    jump_regs: Option<(u8, u8)>,
    /// That instruction is a conditional jump, and no line has been taken since: an indented
    /// state next is the state after it.
    jump_state_next: bool,
    /// The line the log started at (0: not known yet, the first line it is told of).
    log_line: u64,
    /// The log's summary line (`processed N insns ...`) was read.
    summary: bool,
}

/// How a log ended, as its explanation says: rejected, or no rejection but the load failed.
pub(crate) enum Concluded {
    /// The verifier rejected the program.
    Rejected(Box<Explanation>),
    /// No rejection in the log, and the loader said the load failed.
    LoadFailed(LoadFailure),
}

impl Explainer {
    /// The explainer of a log that starts on line `log_line` (0: the first line it takes).
    pub(crate) fn new(log_line: u64) -> Self {
        Explainer {
            tracker: FailureTracker::default(),
            path: Path::default(),
            resumes: Resumes::default(),
            stateless_insn: false,
            jump_regs: None,
            jump_state_next: false,
            log_line,
            summary: false,
        }
    }

    /// Takes line `line` (`payload`, the kernel's part), classified. `true` when it shows more
    /// call frames than the kernel allows ([`FailureTracker::observe`]).
    #[inline]
    pub(crate) fn line(&mut self, kind: &Line<'_>, payload: &[u8], line: u64) -> bool {
        if self.log_line == 0 {
            self.log_line = line;
        }
        if let Line::Insn(insn) = kind {
            return self.insn(insn.index, insn.opcode, payload, line);
        }
        // Another log of logs read one after another: its own path, from its own first line.
        if self.tracker.starts_another(Some(kind)) {
            self.path.clear();
            self.resumes = Resumes::default();
            self.log_line = line;
            self.summary = false;
        }
        // The call stack's view of the frame a line is in: the same tracker as the diagnostic.
        let too_deep = self.tracker.observe(kind, payload);
        match kind {
            Line::FromTo { from, .. } => self.path.resume(*from),
            Line::Validating { .. } => self.path.clear(),
            Line::Summary => self.summary = true,
            _ => {}
        }
        let resumed = self.resumes.after(kind, payload);
        if let Some(to) = resumed {
            self.path.resume_at(to);
        }
        // Only the line right after the jump is its state.
        let jump_state = std::mem::take(&mut self.jump_state_next);
        match kind {
            Line::State { .. } if self.stateless_insn && resumed.is_none() => {
                if let Some(at) = memchr::memmem::find(payload, b": ") {
                    let state = &payload[at + 2..];
                    let check = self
                        .jump_regs
                        .is_some_and(|regs| holds_packet_end(state, regs));
                    self.path.state_after_last(state, check);
                }
                self.stateless_insn = false;
            }
            // 5.10 prints the state after a conditional jump on an indented line of its own.
            Line::Other if jump_state && payload.starts_with(b" ") => {
                let state = payload.trim_ascii_start();
                let check = self
                    .jump_regs
                    .is_some_and(|regs| holds_packet_end(state, regs));
                self.path.state_after_last(state, check);
                self.tracker.state_after_insn(state);
                self.stateless_insn = false;
            }
            Line::Annotation(_) | Line::MarkPrecise | Line::Trace | Line::Other => {}
            _ => self.stateless_insn = false,
        }
        too_deep
    }

    /// Takes line `line` (`payload`), the line of instruction `index` with `opcode`: what
    /// [`line`](Self::line) does with it, from the line's start alone ([`InsnHead`]). `true`
    /// when it shows more call frames than the kernel allows.
    #[inline]
    pub(crate) fn insn(
        &mut self,
        index: u64,
        opcode: Option<u8>,
        payload: &[u8],
        line: u64,
    ) -> bool {
        if self.log_line == 0 {
            self.log_line = line;
        }
        // Another log of logs read one after another: its own path, from its own first line.
        if self.tracker.starts_another(None) {
            self.path.clear();
            self.resumes = Resumes::default();
            self.log_line = line;
        }
        let too_deep = self.tracker.insn(index, opcode, payload);
        self.resumes.insn(opcode);
        self.stateless_insn = !self.tracker.insn_printed_state();
        self.jump_state_next = self.stateless_insn && opcode.is_some_and(is_conditional_jump);
        self.jump_regs = None;
        if self.stateless_insn && opcode.is_some_and(is_register_jump) {
            self.jump_regs = jump_registers(payload);
        }
        let check = opcode.is_some_and(is_register_jump) && PKT_END.find(payload).is_some();
        self.path
            .push(index, self.tracker.depth(), payload, check, line);
        too_deep
    }

    /// Whether a detail line ([`is_detail`](bpflog_log::is_detail)) would tell it nothing: all
    /// but the indented state 5.10 prints after a conditional jump that shows no state on its
    /// line.
    #[inline]
    pub(crate) fn ignores_details(&self) -> bool {
        !self.jump_state_next
    }

    /// Counts `lines` detail lines ([`is_detail`](bpflog_log::is_detail)), the last of them
    /// line `line`: they tell it nothing.
    #[inline]
    pub(crate) fn details(&mut self, lines: u64, line: u64) {
        if self.log_line == 0 {
            self.log_line = line;
        }
        self.tracker.skip(lines);
    }

    /// What the log ended in: its rejection explained ([`finish`](Self::finish)); else, when
    /// the loader said its load failed (`failed`, the deframer's
    /// [`SegmentStart::load_failed`]), that. The verifier accepted the program when the
    /// profile's verdict says so, or without one when the log reached its summary line.
    pub(crate) fn conclude(
        self,
        program: &Program<'_, '_>,
        profile: Option<&Profile>,
        failed: Option<LoadFailedAt>,
    ) -> Option<Concluded> {
        let accepted = profile.map_or(self.summary, |p| {
            p.summary.verdict == crate::profile::Verdict::Accepted
        });
        if let Some(explanation) = self.finish(program, profile) {
            return Some(Concluded::Rejected(Box::new(explanation)));
        }
        let LoadFailedAt {
            log_line,
            line,
            text,
        } = failed?;
        Some(Concluded::LoadFailed(LoadFailure {
            log_line,
            accepted,
            line,
            text,
        }))
    }
}

/// The explainer of `explain`'s own loop; the annotator asks the same of it through
/// [`Explainer::line`] and [`Explainer::details`].
impl Observer for Explainer {
    fn ignores_details(&self) -> bool {
        Explainer::ignores_details(self)
    }

    fn insn_seen(&mut self, head: &InsnHead<'_>, payload: &[u8], line: u64) -> bool {
        // What it keeps of an instruction line needs no more than its start: taken unclassified.
        let _too_deep = self.insn(head.index, Some(head.opcode), payload, line);
        true
    }

    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line: u64) {
        let _too_deep = self.line(kind, payload, line);
    }
}

/// The state's name of the packet's end, searched for on the lines of register comparisons.
static PKT_END: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"pkt_end"));

/// The two registers the conditional jump of instruction line `payload` compares.
fn jump_registers(payload: &[u8]) -> Option<(u8, u8)> {
    let Line::Insn(insn) = bpflog_log::classify(payload) else {
        return None;
    };
    match insn.decode().op {
        bpflog_log::Op::Jump {
            cond: Some((dst, _, bpflog_log::Operand::Reg(src))),
            ..
        } => Some((dst.num, src.num)),
        _ => None,
    }
}

/// Whether the state `printed` shows one of the registers `regs` holding the packet's end.
fn holds_packet_end(printed: &[u8], (a, b): (u8, u8)) -> bool {
    let Ok(printed) = std::str::from_utf8(printed) else {
        return false;
    };
    let Some(state) = bpflog_log::state::decode_printed(printed, true) else {
        return false;
    };
    state.regs.iter().any(|r| {
        let num = r.name.strip_prefix('R').and_then(|n| n.parse::<u8>().ok());
        num.is_some_and(|n| n == a || n == b)
            && bpflog_log::state::Value::read(r.value).kind == "pkt_end"
    })
}

/// Whether `opcode` is a conditional jump comparing two registers.
fn is_register_jump(opcode: u8) -> bool {
    is_conditional_jump(opcode) && opcode & bpflog_object::opcode::SOURCE_REG != 0
}

/// Whether `opcode` is a conditional jump.
fn is_conditional_jump(opcode: u8) -> bool {
    use bpflog_object::opcode::{
        CLASS_JMP, CLASS_JMP32, OP_CALL_BITS, OP_EXIT_BITS, OP_JA, OP_MASK, class,
    };
    matches!(class(opcode), CLASS_JMP | CLASS_JMP32)
        && !matches!(opcode & OP_MASK, OP_JA | OP_CALL_BITS | OP_EXIT_BITS)
}

/// How an explanation is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExplainFormat {
    /// The rustc-style diagnostic, the chain and the help.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
    /// `file:line:col: error: message [class]`, then a `note:` per step.
    Gcc,
}

/// Writes `explanation` of a log of `program` to `out` in `format` (`sources` and `palette`
/// serve the text).
pub fn write(
    explanation: &Explanation,
    program: &Program<'_, '_>,
    format: ExplainFormat,
    sources: &mut SourceFiles,
    palette: &Palette,
    out: &mut impl Write,
) -> io::Result<()> {
    match format {
        ExplainFormat::Text => write_text(explanation, program, sources, palette, out),
        ExplainFormat::Json => write_json(explanation, out),
        ExplainFormat::Gcc => write_gcc(explanation, out),
    }
}

/// A load that failed with no rejection, after its log in an annotated log or a report:
/// `note: line N: ` and what [`LoadFailure`] says.
pub(crate) fn write_load_failure(
    failure: &LoadFailure,
    p: &Palette,
    out: &mut impl Write,
) -> io::Result<()> {
    write_styled(out, p.location, b"note")?;
    writeln!(out, ": line {}: {failure}", failure.line)
}

/// The diagnostic, then the chain and the help.
fn write_text(
    e: &Explanation,
    program: &Program<'_, '_>,
    sources: &mut SourceFiles,
    p: &Palette,
    out: &mut impl Write,
) -> io::Result<()> {
    crate::diagnostic::render(&e.report, program, sources, p, out)?;
    // Under the diagnostic's `=`, which is indented by the width of the line number.
    let width = if e.location.file.is_some() {
        e.location.line.to_string().len()
    } else {
        1
    };
    let eq = format!("{} = ", " ".repeat(width));
    write_styled(out, p.gutter, eq.as_bytes())?;
    writeln!(out, "class: {} [{}]", e.class().title, e.class().id)?;
    write_styled(out, p.gutter, eq.as_bytes())?;
    writeln!(out, "requires: {}", e.class().requires)?;
    if e.chain.len() > 1 {
        write_styled(out, p.gutter, eq.as_bytes())?;
        writeln!(out, "where the value came from:")?;
        for s in &e.chain {
            let at = match &s.location.file {
                Some(file) => format!(
                    "{}:{}:{}",
                    file.rsplit('/').next().unwrap_or(file),
                    s.location.line,
                    s.location.column
                ),
                None => "?".to_owned(),
            };
            write!(
                out,
                "      {:>8}  insn {:<5} {}  {}  [{}]",
                s.role.as_str(),
                s.location.insn,
                // The file name is the object's: shown safely, as the rest of the step.
                crate::escape::escape_controls_str(&at),
                crate::escape::escape_controls_str(&s.source),
                crate::escape::escape_controls_str(&s.instruction)
            )?;
            if let Some(note) = &s.note {
                write!(out, "  ({})", crate::escape::escape_controls_str(note))?;
            }
            writeln!(out)?;
        }
    }
    write_styled(out, p.gutter, eq.as_bytes())?;
    write_styled(out, p.location, b"help")?;
    writeln!(out, ": {}", crate::escape::escape_controls_str(&e.help))
}

/// The JSON object of an explanation: a line of `explain --format json`, and the
/// `explanation` member of `annotate --format json`'s record of the error.
#[derive(serde::Serialize)]
pub(crate) struct JsonExplanation<'e> {
    class: ClassId,
    error: &'e str,
    location: &'e Location,
    chain: &'e [Step],
    help: &'e str,
}

impl Explanation {
    /// The class of the rejection.
    pub fn class(&self) -> &'static Class {
        self.rejection.class
    }

    /// The verifier's error line that gave the class (the first error line for `unknown`).
    pub fn error(&self) -> &str {
        &self.rejection.error
    }

    /// The JSON object `--format json` writes for it, as a value.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(JsonExplanation::from(self)).unwrap_or_default()
    }
}

impl<'e> From<&'e Explanation> for JsonExplanation<'e> {
    fn from(e: &'e Explanation) -> Self {
        JsonExplanation {
            class: e.class().id,
            error: e.error(),
            location: &e.location,
            chain: &e.chain,
            help: &e.help,
        }
    }
}

fn write_json(e: &Explanation, out: &mut impl Write) -> io::Result<()> {
    crate::json::write(
        out,
        crate::json::JsonLayout::Compact,
        &JsonExplanation::from(e),
    )?;
    out.write_all(b"\n")
}

fn write_gcc(e: &Explanation, out: &mut impl Write) -> io::Result<()> {
    // The file name is the object's: shown safely, as the rest of the line.
    // A column of 0 (unknown) is left out, as gcc does.
    let at = |l: &Location| match &l.file {
        Some(file) if l.column == 0 => {
            format!("{}:{}", crate::escape::escape_controls_str(file), l.line)
        }
        Some(file) => format!(
            "{}:{}:{}",
            crate::escape::escape_controls_str(file),
            l.line,
            l.column
        ),
        None => format!("insn {}", l.insn),
    };
    let error = crate::escape::escape_controls_str(e.error());
    writeln!(
        out,
        "{}: error: {error} [{}]",
        at(&e.location),
        e.class().id
    )?;
    for s in &e.chain {
        let what = match &s.note {
            Some(note) => format!("{}: {note}", s.role.as_str()),
            None => s.role.as_str().to_owned(),
        };
        writeln!(
            out,
            "{}: note: {} (insn {}: {})",
            at(&s.location),
            crate::escape::escape_controls_str(&what),
            s.location.insn,
            crate::escape::escape_controls_str(&s.instruction)
        )?;
    }
    writeln!(
        out,
        "{}: note: help: {}",
        at(&e.location),
        crate::escape::escape_controls_str(&e.help)
    )
}
