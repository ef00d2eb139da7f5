//! The diagnostic block for a rejected log, in the manner of rustc's.
//!
//! While the log streams by, [`FailureTracker`] keeps what the end of a rejection needs: the last
//! instruction verified, the register state printed last, the verification pass, the error lines
//! after the last instruction, and the BPF-to-BPF call stack of the current path — a call
//! instruction followed by an instruction other than the next one entered a subprogram or
//! callback; an `exit` followed by the instruction after the innermost call returned from it; a
//! `from X to Y` path resumes the stack recorded at the branch X.

use crate::Program;
use crate::escape::escape_controls;
use crate::locate::locate;
use crate::source::SourceFiles;
use crate::style::write_shown;
use crate::style::{Palette, write_location, write_styled};
use arrayvec::ArrayVec;
use bpflog_log::Line;
use memchr::memmem::Finder;
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::LazyLock;

use bpflog_object::opcode::{OP_CALL, OP_CALL_BITS, OP_EXIT, OP_EXIT_BITS, OP_JA, OP_MASK};

/// At most this many error lines after the last instruction are kept (the kernel's are a few).
const MAX_ERROR_LINES: usize = 64;
/// At most this many bytes of each.
const MAX_ERROR_BYTES: usize = 4096;

/// Error lines, each with its ordinal among the lines observed (from 0).
pub(crate) type ErrorLines = Vec<(u64, Vec<u8>)>;

/// What the log showed up to now, kept for the diagnostic.
#[derive(Debug, Default)]
pub(crate) struct FailureTracker {
    /// The text of the last instruction line.
    last_line: Vec<u8>,
    /// The register state printed last and the instruction it was printed at.
    state: Option<u64>,
    /// Where that state's text is: after this offset of `last_line`, when it was printed on the
    /// last instruction line (most are: kept with no copy of their own), or else in
    /// `state_text`.
    state_in_line: Option<usize>,
    state_text: Vec<u8>,
    /// The last state printed on a line of its own (`22: R0=scalar() fp-24=dynptr_local(...)`,
    /// `from 7 to 13: ...`), which shows every slot, and the instruction it was printed at;
    /// `state_is_full`: it is the state printed last.
    full_state: Vec<u8>,
    full_at: Option<u64>,
    state_is_full: bool,
    /// The BPF-to-BPF call stack of the current path.
    calls: CallStack,
    /// Lines observed so far (the ordinal of the next line, from 0).
    seen: u64,
    /// Unrecognised unindented lines since the last instruction, with their ordinals.
    errors: Vec<(u64, Vec<u8>)>,
    /// Those lines as they stood at the summary line.
    final_errors: Option<Vec<(u64, Vec<u8>)>>,
    /// The `Validating f() func#N...` line of the current pass.
    pass: Option<Vec<u8>>,
}

/// The failure a rejected log ends with.
#[derive(Debug)]
pub(crate) struct Report {
    /// The error lines, each with its ordinal among the lines observed (from 0).
    pub(crate) errors: Vec<(u64, Vec<u8>)>,
    /// The last instruction verified.
    pub(crate) index: u64,
    /// Its line.
    pub(crate) insn_line: Vec<u8>,
    /// The call instructions of its path, outermost first.
    pub(crate) stack: Vec<u64>,
    /// The register state printed last, and the instruction it was printed at.
    pub(crate) state: Option<(u64, Vec<u8>)>,
    /// The last state printed on a line of its own (every slot shown), and the instruction it
    /// was printed at.
    pub(crate) full_state: Option<(u64, Vec<u8>)>,
    /// The `Validating ...` line of the pass, when a global function was verified on its own.
    pub(crate) pass: Option<Vec<u8>>,
}

fn is_conditional_jump(opcode: u8) -> bool {
    bpflog_object::opcode::is_jump_class(opcode)
        && !matches!(opcode & OP_MASK, OP_JA | OP_CALL_BITS | OP_EXIT_BITS)
}

/// The kernel's limit on call frames (`MAX_CALL_FRAMES`, include/linux/bpf_verifier.h): the
/// entry program's frame 0 and at most 7 frames of calls and callbacks above it. A log that
/// shows more was not printed by a kernel; call stacks are followed no deeper.
pub const MAX_CALL_FRAMES: usize = 8;

/// Calls a path can be inside of: one per frame above the entry program's.
const MAX_CALLS: usize = MAX_CALL_FRAMES - 1;

/// The kernel's limit on a program's length (`BPF_COMPLEXITY_LIMIT_INSNS`): a larger index is
/// no instruction of a program, and is not followed as a call or remembered as a branch.
const MAX_INSNS: u64 = 1_000_000;

/// Call instructions of a path, outermost first: as many as the kernel allows, held inline.
pub(crate) type Calls = ArrayVec<u32, MAX_CALLS>;

/// The BPF-to-BPF call stack of the path being verified, followed along the log.
///
/// A call instruction followed by an instruction other than the next one entered a subprogram
/// or callback; an `exit` followed by the instruction after the innermost call returned from it;
/// a `from X to Y` path resumes the stack recorded at the branch X (a `frameN:` state one deeper
/// than that stack is a callback of the call at X); a verification pass starts with none, and so
/// does the next log of logs read one after another (a path's line after the summary line).
///
/// The stack holds at most [`MAX_CALL_FRAMES`]` - 1` calls, and a branch's record no more: a
/// log that goes deeper (or prints a `frameN:` state with N past the limit) shows a depth no
/// kernel reaches, which [`observe`](Self::observe) reports instead of following. So each line
/// costs the same whatever the nesting, and the memory is bounded by the kernel's program size.
#[derive(Debug, Default, Clone)]
pub(crate) struct CallStack {
    /// The last instruction line: index and opcode.
    last: Option<(u64, Option<u8>)>,
    /// Call instructions of the current path, outermost first.
    stack: Calls,
    /// The stack at each conditional jump or call that had one (keyed by instruction index,
    /// looked up on every jump line: foldhash's fast hasher, seeded per process).
    snapshots: HashMap<u32, Calls, foldhash::fast::RandomState>,
    /// The summary line (`processed N insns ...`) was read: the verification it ends is over,
    /// and its stack stays for the diagnostic until a line of another log's path.
    ended: bool,
}

impl CallStack {
    /// Whether line `kind` starts another verification: a line of a path (an instruction, a
    /// state, `from X to Y`, `func#N`, `Validating ...`) after the summary line, in logs read
    /// one after another. The stack starts again with no calls
    /// ([`observe`](Self::observe) does).
    pub(crate) fn starts_another(&self, kind: &Line<'_>) -> bool {
        self.ended()
            && matches!(
                kind,
                Line::Insn(_)
                    | Line::State { .. }
                    | Line::FromTo { .. }
                    | Line::FuncStart { .. }
                    | Line::Validating { .. }
            )
    }

    /// Whether the summary line ended the verification: the next line of a path
    /// ([`starts_another`](Self::starts_another)), an instruction's among them, is another
    /// log's.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Starts again with no calls, nothing recorded at any branch.
    fn restart(&mut self) {
        self.stack.clear();
        self.snapshots.clear();
        self.last = None;
        self.ended = false;
    }

    /// Takes one classified line (`content`: the line without its terminator). `true` when the
    /// line shows more call frames than the kernel allows (the call is not followed).
    pub(crate) fn observe(&mut self, kind: &Line<'_>, content: &[u8]) -> bool {
        self.observe_state(kind, state_of(kind, content))
    }

    /// [`observe`](Self::observe), with the state the line prints found already
    /// ([`state_of`]).
    fn observe_state(&mut self, kind: &Line<'_>, state: Option<&[u8]>) -> bool {
        if self.starts_another(kind) {
            self.restart();
        }
        match kind {
            Line::Insn(insn) => self.insn(insn.index, insn.opcode),
            Line::FromTo { from, to } => {
                match self.last {
                    Some((p, Some(OP_EXIT)))
                        if p == *from
                            && self.stack.last().is_some_and(|&c| *to == u64::from(c) + 1) =>
                    {
                        self.stack.pop();
                    }
                    _ => match u32::try_from(*from)
                        .ok()
                        .and_then(|f| self.snapshots.get(&f))
                    {
                        Some(saved) => self.stack.clone_from(saved),
                        None => self.stack.clear(),
                    },
                }
                self.last = None;
                let Some(state) = state else {
                    return false;
                };
                // `from 18 to 41: frame1: ...`: a callback of the call at 18, one frame down.
                match frame_of(state) {
                    Some(n) if n >= MAX_CALL_FRAMES => true,
                    Some(n) if n == self.stack.len() + 1 => self.push(*from),
                    _ => false,
                }
            }
            // `12: frame9: R1=...`: a frame past the limit.
            Line::State { .. } => state
                .and_then(frame_of)
                .is_some_and(|n| n >= MAX_CALL_FRAMES),
            Line::Validating { .. } => {
                self.stack.clear();
                self.last = None;
                false
            }
            Line::Summary => {
                self.ended = true;
                false
            }
            _ => false,
        }
    }

    /// What [`observe`](Self::observe) does with the line of instruction `i` with `opcode`.
    #[inline]
    pub(crate) fn insn(&mut self, i: u64, opcode: Option<u8>) -> bool {
        // An instruction line is a path's line ([`starts_another`](Self::starts_another)).
        if self.ended() {
            self.restart();
        }
        let mut too_deep = false;
        match self.last {
            Some((p, Some(OP_CALL))) if i != p + 1 => too_deep = self.push(p),
            Some((_, Some(OP_EXIT)))
                if self.stack.last().is_some_and(|&c| i == u64::from(c) + 1) =>
            {
                self.stack.pop();
            }
            _ => {}
        }
        // Paths resume at branches, and callbacks are verified as paths from their call.
        if opcode.is_some_and(|op| is_conditional_jump(op) || op == OP_CALL)
            && let Some(at) = index(i)
        {
            if self.stack.is_empty() {
                self.snapshots.remove(&at);
            } else {
                // Reuse the entry: no allocation once every jump has one.
                let saved = self.snapshots.entry(at).or_default();
                if *saved != self.stack {
                    saved.clone_from(&self.stack);
                }
            }
        }
        self.last = Some((i, opcode));
        too_deep
    }

    /// Enters the call at instruction `at`: `true` when the stack is as deep as the kernel
    /// allows already, and the call is not followed.
    fn push(&mut self, at: u64) -> bool {
        match index(at) {
            Some(at) => self.stack.try_push(at).is_err(),
            None => false,
        }
    }

    /// The call instructions of the current path, outermost first.
    pub(crate) fn calls(&self) -> &Calls {
        &self.stack
    }

    /// The last instruction line: index and opcode (`None` after a path or pass starts).
    pub(crate) fn last(&self) -> Option<(u64, Option<u8>)> {
        self.last
    }
}

/// Where the state printed after an instruction starts on its line: the first ` ; `. Found
/// from its `;`, a byte an instruction's text has no other use for (cheaper, on a short line,
/// than a substring search).
fn state_start(line: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b';', line)
        .filter_map(|i| i.checked_sub(1))
        .find(|&i| line.get(i) == Some(&b' ') && line.get(i + 2) == Some(&b' '))
}

/// Instruction `i`, if a program can have it.
fn index(i: u64) -> Option<u32> {
    u32::try_from(i).ok().filter(|&i| u64::from(i) < MAX_INSNS)
}

/// Searchers for what every line is searched for, built once.
static COLON: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b": "));

/// The state a state line (`12: R1=...`) or a `from X to Y: R1=...` line prints, after its
/// first `: `; `None` for other lines.
fn state_of<'a>(kind: &Line<'_>, content: &'a [u8]) -> Option<&'a [u8]> {
    match kind {
        Line::State { .. } | Line::FromTo { .. } => {
            COLON.find(content).map(|at| &content[at + 2..])
        }
        _ => None,
    }
}

impl FailureTracker {
    /// Takes one classified line. `true` when it shows more call frames than the kernel allows
    /// ([`CallStack::observe`]).
    pub(crate) fn observe(&mut self, kind: &Line<'_>, content: &[u8]) -> bool {
        if let Line::Insn(insn) = kind {
            return self.insn(insn.index, insn.opcode, content);
        }
        let ordinal = self.seen;
        self.seen += 1;
        if self.calls.starts_another(kind) {
            self.restart();
        }
        // Searched for once, for the call stack and for the state kept.
        let state = state_of(kind, content);
        let too_deep = self.calls.observe_state(kind, state);
        match kind {
            Line::State { index } => {
                if let Some(text) = state {
                    self.set_state(*index, text);
                }
            }
            Line::FromTo { to, .. } => {
                if let Some(text) = state
                    && text != b"safe"
                {
                    self.set_state(*to, text);
                }
            }
            Line::Validating { .. } => {
                self.pass = Some(content.to_vec());
            }
            // Bounded: a log that ends in megabytes of garbage is not held whole.
            Line::Other
                if !content.starts_with(b" ")
                    && !content.starts_with(b"\t")
                    && self.errors.len() < MAX_ERROR_LINES =>
            {
                let kept = content.get(..MAX_ERROR_BYTES).unwrap_or(content);
                self.errors.push((ordinal, kept.to_vec()))
            }
            Line::Summary => self.final_errors = Some(std::mem::take(&mut self.errors)),
            _ => {}
        }
        too_deep
    }

    /// What [`observe`](Self::observe) does with the line of instruction `index` with `opcode`
    /// (`content`: the line without its terminator).
    pub(crate) fn insn(&mut self, index: u64, opcode: Option<u8>, content: &[u8]) -> bool {
        self.seen += 1;
        if self.calls.ended() {
            self.restart();
        }
        let too_deep = self.calls.insn(index, opcode);
        let state = state_start(content);
        if state.is_none()
            && let Some(from) = self.state_in_line.take()
        {
            // The state printed last stays; the line it is on goes.
            self.state_text.clear();
            (self.state_text).extend_from_slice(self.last_line.get(from..).unwrap_or_default());
            self.state_is_full = false;
        }
        self.last_line.clear();
        self.last_line.extend_from_slice(content);
        self.errors.clear();
        if let Some(at) = state {
            self.state = Some(index);
            self.state_in_line = Some(at + 3);
        }
        too_deep
    }

    /// Another log starts (logs read one after another: [`CallStack::starts_another`]): what
    /// the last one showed is dropped, but the lines counted. The call stack starts again
    /// itself.
    fn restart(&mut self) {
        self.state = None;
        self.state_in_line = None;
        self.state_text.clear();
        self.full_state.clear();
        self.full_at = None;
        self.state_is_full = false;
        self.errors.clear();
        self.final_errors = None;
        self.pass = None;
    }

    /// Whether line `kind` starts another log's verification ([`CallStack::starts_another`];
    /// for an instruction line, [`CallStack::ended`]).
    pub(crate) fn starts_another(&self, kind: Option<&Line<'_>>) -> bool {
        match kind {
            Some(kind) => self.calls.starts_another(kind),
            None => self.calls.ended(),
        }
    }

    fn set_state(&mut self, at: u64, text: &[u8]) {
        self.state = Some(at);
        self.state_in_line = None;
        self.full_state.clear();
        self.full_state.extend_from_slice(text);
        self.full_at = Some(at);
        self.state_is_full = true;
    }

    /// Whether the last line taken was an instruction line that printed its state after it
    /// (` ; R1=...`).
    pub(crate) fn insn_printed_state(&self) -> bool {
        self.state_in_line.is_some()
    }

    /// The state printed after the last instruction on an indented line of its own (Linux
    /// 5.10, after a conditional jump: every register of the branch that falls through).
    pub(crate) fn state_after_insn(&mut self, text: &[u8]) {
        if let Some((index, _)) = self.calls.last() {
            self.set_state(index, text);
        }
    }

    /// Counts `lines` lines that tell it nothing: detail lines ([`is_detail`](bpflog_log::is_detail)),
    /// which [`observe`](Self::observe) would only count.
    pub(crate) fn skip(&mut self, lines: u64) {
        self.seen += lines;
    }

    /// The calls the path is inside of after the last line observed: 0 in the entry
    /// program's frame.
    pub(crate) fn depth(&self) -> usize {
        self.calls.calls().len()
    }

    /// The error lines of a log rejected where no instruction was being verified, with the
    /// last instruction line seen (empty: none). Before the first instruction the verifier
    /// checks maps, the control flow graph and BTF (`check_cfg`, `resolve_pseudo_ldimm64`,
    /// `check_map_prog_compatibility`); between two paths it checks the complexity limit (`BPF
    /// program is too large` after a `safe` or an `exit`). `None` without errors, or when an
    /// instruction was being verified ([`report`](Self::report) has it).
    pub(crate) fn rejected_between_insns(&self) -> Option<(ErrorLines, &[u8])> {
        if self.calls.last().is_some() {
            return None;
        }
        let errors = self.final_errors.as_ref().unwrap_or(&self.errors);
        (!errors.is_empty()).then(|| (errors.clone(), &self.last_line[..]))
    }

    /// The register state printed last: the instruction it was printed at, and its text.
    fn last_state(&self) -> Option<(u64, &[u8])> {
        let text = match self.state_in_line {
            Some(from) => self.last_line.get(from..).unwrap_or_default(),
            None if self.state_is_full => &self.full_state[..],
            None => &self.state_text[..],
        };
        self.state.map(|at| (at, text))
    }

    /// The failure, if the log ended in one.
    pub(crate) fn report(self) -> Option<Report> {
        let state = self.last_state().map(|(at, text)| (at, text.to_vec()));
        let full_state = self.full_at.map(|at| (at, self.full_state));
        let errors = self.final_errors.unwrap_or(self.errors);
        if errors.is_empty() {
            return None;
        }
        let (index, _) = self.calls.last()?;
        Some(Report {
            errors,
            index,
            insn_line: self.last_line,
            stack: self.calls.stack.iter().map(|&c| u64::from(c)).collect(),
            state,
            full_state,
            pass: self.pass,
        })
    }
}

/// Writes the diagnostic block for `report`.
pub(crate) fn render(
    report: &Report,
    program: &Program<'_, '_>,
    sources: &mut SourceFiles,
    p: &Palette,
    out: &mut impl Write,
) -> io::Result<()> {
    let src = u32::try_from(report.index)
        .ok()
        .and_then(|i| locate(program, i));
    out.write_all(b"\n")?;
    for (k, (_, error)) in report.errors.iter().enumerate() {
        write_styled(out, p.error, if k == 0 { b"error" } else { b"     " })?;
        write_styled(out, p.punct, if k == 0 { b": " } else { b"  " })?;
        // The verifier's message, repeated by bpflog: its bytes are the log's, shown safely.
        write_shown(out, p.error, error)?;
        out.write_all(b"\n")?;
    }
    let width = src.as_ref().map_or(1, |s| s.line.to_string().len());
    let pad = " ".repeat(width);
    let note = |out: &mut dyn Write, what: &[u8]| -> io::Result<()> {
        write_styled(out, p.gutter, format!("{pad} = ").as_bytes())?;
        write_styled(out, p.gutter, b"note: ")?;
        out.write_all(what)
    };
    if let Some(src) = &src {
        write_styled(out, p.gutter, format!("{pad}--> ").as_bytes())?;
        write_location(out, p.location, src.file, src.line, src.column)?;
        out.write_all(b"\n")?;
        let file = sources.get(src.file);
        let text = file
            .as_ref()
            .and_then(|f| f.line(src.line).map(<[u8]>::to_vec))
            .or_else(|| src.btf_text.map(<[u8]>::to_vec));
        if let Some(text) = text {
            write_styled(out, p.gutter, format!("{pad} |\n").as_bytes())?;
            write_styled(out, p.gutter, format!("{} | ", src.line).as_bytes())?;
            // The object's text (or a file it names), escaped; the caret goes under the
            // column as shown.
            out.write_all(&escape_controls(&text))?;
            out.write_all(b"\n")?;
            write_styled(out, p.gutter, format!("{pad} | ").as_bytes())?;
            let column = if src.column > 0 {
                src.column as usize - 1
            } else {
                text.len() - text.trim_ascii_start().len()
            };
            let before = text.get(..column).unwrap_or(&text);
            let indent: Vec<u8> = escape_controls(before)
                .iter()
                .map(|&b| if b == b'\t' { b'\t' } else { b' ' })
                .collect();
            out.write_all(&indent)?;
            write_styled(out, p.caret, b"^")?;
            out.write_all(b"\n")?;
        }
        write_styled(out, p.gutter, format!("{pad} |\n").as_bytes())?;
    }
    let insn = report
        .insn_line
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default();
    // The notes repeat the log's text (the instruction, the pass, the state): shown safely.
    note(out, b"instruction ")?;
    out.write_all(&escape_controls(insn.trim_ascii_end()))?;
    out.write_all(b"\n")?;
    if let Some(src) = &src {
        note(out, b"in ")?;
        write_shown(out, p.function, src.function.as_bytes())?;
        out.write_all(b"\n")?;
        for step in &src.inlined {
            note(out, b"inlined from ")?;
            write_shown(out, p.function, step.caller.as_bytes())?;
            if let Some((file, line, col)) = step.call_site {
                out.write_all(b" at ")?;
                write_location(out, p.inline, file, line, col)?;
            }
            out.write_all(b"\n")?;
        }
    }
    for &call in report.stack.iter().rev() {
        note(out, b"called from ")?;
        match u32::try_from(call).ok().and_then(|i| locate(program, i)) {
            Some(site) => {
                write_shown(out, p.function, site.function.as_bytes())?;
                out.write_all(b" at ")?;
                write_location(out, p.location, site.file, site.line, site.column)?;
            }
            None => out.write_all(b"an unknown place")?,
        }
        out.write_all(format!(" (instruction {call})\n").as_bytes())?;
    }
    if let Some(pass) = &report.pass {
        note(out, b"verified on its own as a global function: ")?;
        out.write_all(&escape_controls(pass))?;
        out.write_all(b"\n")?;
    }
    if let Some((at, state)) = &report.state {
        note(
            out,
            format!("registers as printed at instruction {at}: ").as_bytes(),
        )?;
        out.write_all(&escape_controls(state))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// N of a state that starts `frameN: `.
fn frame_of(state: &[u8]) -> Option<usize> {
    let rest = state.strip_prefix(b"frame")?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) != Some(&b':') {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bpflog_log::{classify, split_newline};

    fn fixtures() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// The state printed last, line after line of every fixture log (level 1: few instruction
    /// lines carry one; level 2: most), is the text after the first ` ; ` of the last
    /// instruction line that has one, or after `: ` of a state line or a `from X to Y` line
    /// (but `safe`), whichever came last.
    #[test]
    fn the_state_printed_last_is_kept() {
        let (mut logs, mut kept_apart) = (0, 0);
        for entry in std::fs::read_dir(fixtures().join("logs")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "log") {
                continue;
            }
            let log = std::fs::read(&path).unwrap();
            let mut tracker = FailureTracker::default();
            let mut model: Option<(u64, Vec<u8>)> = None;
            for raw in log.split_inclusive(|&b| b == b'\n') {
                let (content, _) = split_newline(raw);
                let kind = classify(content);
                let after = |sep: &[u8]| {
                    let at = memchr::memmem::find(content, sep)?;
                    Some(content[at + sep.len()..].to_vec())
                };
                match kind {
                    Line::Insn(insn) => {
                        if let Some(text) = after(b" ; ") {
                            model = Some((insn.index, text));
                        } else if tracker.state_in_line.is_some() {
                            kept_apart += 1;
                        }
                    }
                    Line::State { index } => model = after(b": ").map(|t| (index, t)).or(model),
                    Line::FromTo { to, .. } => {
                        model = after(b": ")
                            .filter(|t| t != b"safe")
                            .map(|t| (to, t))
                            .or(model)
                    }
                    _ => {}
                }
                tracker.observe(&kind, content);
                let expected = model.as_ref().map(|(at, t)| (*at, &t[..]));
                assert_eq!(tracker.last_state(), expected, "{}", path.display());
            }
            logs += 1;
        }
        assert!(logs > 50 && kept_apart > 100, "{logs} logs, {kept_apart}");
        // A `;` not between spaces does not start the state.
        assert_eq!(state_start(b"1: (85) call x;y ; R0=1"), Some(16));
        assert_eq!(state_start(b"1: (85) call x; ;y"), None);
        assert_eq!(state_start(b"; R0=1"), None);
    }

    /// Follows `log` line by line: the deepest stack held, the most branch records held, and the
    /// lines (from 1) that showed a depth past the kernel's.
    fn follow(log: &[u8]) -> (usize, usize, Vec<u64>) {
        let mut calls = CallStack::default();
        let (mut deepest, mut records, mut too_deep) = (0, 0, Vec::new());
        for (n, raw) in log.split_inclusive(|&b| b == b'\n').enumerate() {
            let (content, _) = split_newline(raw);
            if calls.observe(&classify(content), content) {
                too_deep.push(n as u64 + 1);
            }
            deepest = deepest.max(calls.calls().len());
            records = records.max(calls.snapshots.len());
            assert!(calls.snapshots.values().all(|s| s.len() < MAX_CALL_FRAMES));
        }
        (deepest, records, too_deep)
    }

    /// reject_subprog's level-2 log with its call of `update_flow` (the `27: (85) call pc+7`
    /// line through the callee's first instruction line) repeated `times` times: each repeat
    /// enters the callee again without leaving it, one frame deeper.
    pub(crate) fn nested(times: usize) -> (Vec<u8>, u64) {
        let log = std::fs::read_to_string(
            fixtures().join("logs/reject_subprog.xdp_reject_subprog.l2.log"),
        )
        .unwrap();
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        let call = lines
            .iter()
            .position(|l| l.starts_with("27: (85) call pc+7"))
            .unwrap();
        let entered = lines
            .iter()
            .position(|l| l.starts_with("35: (bf)"))
            .unwrap();
        let block = lines[call..=entered].concat();
        let mut out = lines[..call].concat();
        out.push_str(&block.repeat(times));
        out.push_str(&lines[entered + 1..].concat());
        // The 8th entry into the callee, frame 8, is the first the kernel would not make.
        let line =
            (call + (MAX_CALL_FRAMES - 1) * (entered - call + 1) + entered - call + 1) as u64;
        (out.into_bytes(), line)
    }

    /// The last state printed on a line of its own outlives the instruction lines' states
    /// after it (dynptr_fail.invalid_helper1: `22: R0=scalar() fp-24=dynptr_local(...)`, then
    /// states that show only the registers written, then the call that fails).
    #[test]
    fn the_last_full_state_is_kept() {
        let path = fixtures().join("selftests/logs/dynptr_fail.invalid_helper1.l2.log");
        let log = std::fs::read(path).unwrap();
        let mut tracker = FailureTracker::default();
        for raw in log.split_inclusive(|&b| b == b'\n') {
            let (content, _) = split_newline(raw);
            tracker.observe(&classify(content), content);
        }
        let report = tracker.report().unwrap();
        let (at, full) = report.full_state.unwrap();
        assert_eq!(at, 22);
        assert!(memchr::memmem::find(&full, b"fp-24=dynptr_local").is_some());
        let (_, last) = report.state.unwrap();
        assert!(memchr::memmem::find(&last, b"fp-24").is_none());
    }

    #[test]
    fn the_fixture_logs_stay_within_the_kernels_frames() {
        let mut deepest = 0;
        for entry in std::fs::read_dir(fixtures().join("logs")).unwrap() {
            let path = entry.unwrap().path();
            let (depth, _, too_deep) = follow(&std::fs::read(&path).unwrap());
            assert_eq!(too_deep, [] as [u64; 0], "{}", path.display());
            deepest = deepest.max(depth);
        }
        // Not vacuous: calls and callbacks are followed.
        assert!(deepest >= 1, "{deepest}");
    }

    #[test]
    fn nesting_past_the_kernels_frames_is_reported_and_not_followed() {
        let (log, first) = nested(10_000);
        let (deepest, records, too_deep) = follow(&log);
        assert_eq!(deepest, MAX_CALL_FRAMES - 1);
        assert_eq!(too_deep.first(), Some(&first));
        // Each entry past the limit is one.
        assert_eq!(too_deep.len(), 10_000 - (MAX_CALL_FRAMES - 1));
        assert!(records <= 8, "{records}");
        // The rejection's stack is as deep as the kernel allows, no deeper.
        let mut tracker = FailureTracker::default();
        for raw in log.split_inclusive(|&b| b == b'\n') {
            let (content, _) = split_newline(raw);
            let _ = tracker.observe(&classify(content), content);
        }
        let report = tracker.report().unwrap();
        assert_eq!(report.stack, [27; MAX_CALL_FRAMES - 1]);
    }

    #[test]
    fn a_frame_past_the_kernels_is_reported() {
        let log = b"0: (85) call pc+1\n2: frame1: R1=ctx()\n2: (95) exit\nfrom 0 to 5: frame8: R1=0\n5: frame8: R1=0\n";
        let (deepest, _, too_deep) = follow(log);
        assert_eq!(deepest, 1);
        assert_eq!(too_deep, [4, 5]);
    }
}
