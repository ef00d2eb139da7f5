//! [`Selector`]: the candidates weighed line by line (instruction lines, `func#` lines,
//! annotation lines, a liveness listing's rows), and the choice among those that fit.

use super::check::{check_annotation, check_failed_core, check_insn, failed_core};
use super::shared::shared;
use super::tracker::{Seen, Tracker, merge_seen};
use super::{Candidate, Evidence, Mismatch, SelectError, Selection};
use crate::Program;
use crate::checked_insns::FittedLines;
use crate::kernel_rule::KernelRule;
use bpflog_log::{
    Annotation, Callee, InsnHead, InsnLine, Line, SourceLines, global_function_name,
    source_lines_shown,
};
use bpflog_object::opcode::OP_CALL;
use bpflog_object::{BpfObject, Loader, excerpt, excerpt_name};

/// An annotation line of the log, held until the instruction it precedes. Its buffers are
/// reused from one annotation line to the next.
#[derive(Default)]
struct HeldAnnotation {
    /// Whether an annotation line is held.
    held: bool,
    text: Vec<u8>,
    file: Vec<u8>,
    /// The line number after `@ file:`, when the annotation has one.
    at: Option<u32>,
    line: u64,
}

impl HeldAnnotation {
    fn hold(&mut self, a: &Annotation<'_>, line: u64) {
        self.held = true;
        self.text.clear();
        self.text.extend_from_slice(a.text);
        self.file.clear();
        self.at = a.location.map(|(file, at)| {
            self.file.extend_from_slice(file);
            at
        });
        self.line = line;
    }

    /// The held annotation, released.
    fn take(&mut self) -> Option<(Annotation<'_>, u64)> {
        if !std::mem::take(&mut self.held) {
            return None;
        }
        let a = Annotation {
            text: &self.text,
            location: self.at.map(|at| (&self.file[..], at)),
        };
        Some((a, self.line))
    }
}

/// Weighs the candidates line by line; [`finish`](Selector::finish) chooses.
pub struct Selector<'c, 'o, 'd> {
    programs: Vec<&'c Program<'o, 'd>>,
    trackers: Vec<Tracker>,
    /// How many trackers have no mismatch.
    fitting: usize,
    /// No tracker before this one fits ([`refit`](Self::refit) keeps it so).
    first_fitting: usize,
    /// Instruction lines observed.
    insns: u64,
    /// Whether a row of a liveness listing was observed (see
    /// [`observe_listed`](Self::observe_listed)).
    listed: bool,
    pending: HeldAnnotation,
    /// The last [`Evidence::output_class`] given out.
    classes: u32,
    /// The form of the kernel's source lines, which says which candidates would print alike:
    /// [`SourceLines::Bare`] once a line in the log's first instructions says so
    /// ([`source_lines_shown`]).
    form: SourceLines,
    /// The form is known: [`SourceLines::Bare`] was found, or a line of the kernel's in the
    /// located form was read.
    form_known: bool,
    /// What the lines after an instruction line say of it, while two candidates fit: made at
    /// the first call or libbpf rewrite compared then.
    entries: Option<Box<Entries>>,
}

/// What the lines after an instruction line say of it: the functions a log shows the verifier
/// stepping into (see [`Selector::observe_entry`]), the relocation libbpf could not resolve.
#[derive(Default)]
struct Entries {
    /// The function start the instruction line compared last calls (`call pc+N`).
    called: Option<u64>,
    /// Each function start stepped into, with the line that shows it (the first).
    entered: Vec<(u64, u64)>,
    /// The instruction the line compared last is libbpf's rewrite of (`N: <invalid CO-RE
    /// relocation>`).
    rewritten: Option<u32>,
}

impl Entries {
    /// Keeps function start `start` as stepped into at line `line_no`.
    fn enter(&mut self, start: u64, line_no: u64) {
        if self.entered.len() < ENTERED_MAX && self.entered.iter().all(|e| e.0 != start) {
            self.entered.push((start, line_no));
        }
    }
}

/// At most this many functions stepped into are kept (see [`Selector::observe_entry`]).
const ENTERED_MAX: usize = 64;

/// The instruction lines of a log in which [`Selector`] looks for a line that tells the form
/// of the kernel's source lines: a kernel before 6.12 prints its states from the first.
const FORM_WINDOW: u64 = 64;

impl<'c, 'o, 'd> Selector<'c, 'o, 'd> {
    /// A selector among `programs`; [`Selection`]'s indices are positions in it.
    pub fn new(programs: Vec<&'c Program<'o, 'd>>) -> Self {
        let trackers = programs
            .iter()
            .map(|p| Tracker {
                evidence: Evidence::default(),
                suspect: None,
                last_mismatch: 0,
                rule: KernelRule::default(),
                inserted: None,
                matched: Vec::new(),
                len: p.layout.len as usize,
                checked: FittedLines::default(),
            })
            .collect();
        Selector {
            fitting: programs.len(),
            first_fitting: 0,
            insns: 0,
            listed: false,
            programs,
            trackers,
            pending: HeldAnnotation::default(),
            classes: 0,
            form: SourceLines::Located,
            form_known: false,
            entries: None,
        }
    }

    /// The form of the kernel's source lines, as the log's lines so far show it.
    pub(crate) fn source_lines(&self) -> SourceLines {
        self.form
    }

    /// The selector, with the instruction lines that fitted each candidate in earlier logs
    /// (`fitted`, in the order of the candidates; see [`crate::checked_insns`]): a line of an
    /// instruction with the same opcode and text fits without being compared again.
    pub(crate) fn remembering(mut self, fitted: Vec<FittedLines>) -> Self {
        for (t, lines) in self.trackers.iter_mut().zip(fitted) {
            t.checked = lines;
        }
        self
    }

    /// The instruction lines that fitted each candidate, this log's with those it was given
    /// ([`remembering`](Self::remembering)), for the next log's selector; none are left here.
    pub(crate) fn forget(&mut self) -> Vec<FittedLines> {
        (self.trackers.iter_mut())
            .map(|t| std::mem::take(&mut t.checked))
            .collect()
    }

    /// Whether [`join`](Self::join) can say what observing on would have given: not with an
    /// annotation line held at the seam. Before its first instruction line this selector has
    /// compared nothing that later lines depend on (a liveness listing's rows are compared on
    /// their own), and `later`'s comparisons are its own.
    /// Otherwise, not while two candidates fit (their classes would start over), nor when
    /// `later` saw a listing (this selector would have ignored it); and for each
    /// candidate: once this selector saw it mismatch, nothing later counts; otherwise `later`
    /// must have seen no mismatch and the same opcode wherever both matched an instruction (a
    /// later line that matched only by opcode would then have matched here too).
    pub(crate) fn joinable(&self, later: &Selector<'c, 'o, 'd>) -> bool {
        if self.pending.held || self.trackers.len() != later.trackers.len() {
            return false;
        }
        // Lines that did not fit (noise, or perhaps noise) are weighed by the lines around
        // them: not across a seam.
        let unsure = |t: &Tracker| t.suspect.is_some() || t.evidence.noise_lines > 0;
        if self
            .trackers
            .iter()
            .zip(&later.trackers)
            .any(|(t, l)| t.evidence.mismatch.is_none() && (unsure(t) || unsure(l)))
        {
            return false;
        }
        if self.insns == 0 {
            return true;
        }
        // A listing after this selector's instruction lines is one it would have ignored.
        if self.fitting > 1 || later.listed {
            return false;
        }
        self.trackers.iter().zip(&later.trackers).all(|(t, l)| {
            t.evidence.mismatch.is_some()
                || (l.evidence.mismatch.is_none()
                    && t.matched
                        .iter()
                        .zip(&l.matched)
                        .all(|(&a, &b)| a == Seen::Not || b == Seen::Not || a == b))
        })
    }

    /// This selector followed by `later`, which observed the lines after this one's from a fresh
    /// start, numbering them from 1 where this one's line `lines` is line 0: what observing on
    /// would have given, in place. Only when [`joinable`](Self::joinable).
    pub(crate) fn join(&mut self, mut later: Selector<'c, 'o, 'd>, lines: u64) {
        let fresh = self.insns == 0;
        later.pending.line += lines;
        for (t, mut l) in self.trackers.iter_mut().zip(later.trackers) {
            // Both read logs of the candidate: the lines that fitted either are as good.
            t.checked.keep_larger(std::mem::take(&mut l.checked));
            if t.evidence.mismatch.is_some() {
                continue;
            }
            if fresh {
                if let Some(m) = &mut l.evidence.mismatch {
                    m.line += lines;
                }
                l.evidence.checked += t.evidence.checked;
                l.checked = std::mem::take(&mut t.checked);
                *t = l;
                continue;
            }
            t.evidence.checked += l.evidence.checked;
            merge_seen(&mut t.matched, &l.matched);
        }
        self.pending = later.pending;
        if let Some(later) = later.entries {
            let entries = self.entries.get_or_insert_with(Box::default);
            entries.called = later.called;
            entries.rewritten = later.rewritten;
            for (start, line) in later.entered {
                entries.enter(start, line + lines);
            }
        }
        // A fresh start took `later`'s trackers, and their classes; otherwise at most one fits.
        self.classes = self.classes.max(later.classes);
        self.insns += later.insns;
        self.listed |= later.listed;
        self.fitting = (self.trackers.iter())
            .filter(|t| t.evidence.mismatch.is_none())
            .count();
        self.refit();
    }

    /// Whether every candidate is ruled out already: nothing the rest of the log says can
    /// change that.
    pub(crate) fn ruled_out(&self) -> bool {
        self.fitting == 0 && !self.trackers.is_empty()
    }

    /// The candidates (positions) that fit the log so far.
    pub(crate) fn fitting(&self) -> impl Iterator<Item = usize> + '_ {
        (self.trackers.iter().enumerate())
            .filter(|(_, t)| t.evidence.mismatch.is_none())
            .map(|(i, _)| i)
    }

    /// Takes one classified line of the log, `line_no` counting from 1.
    #[inline(always)]
    pub fn observe(&mut self, kind: &Line<'_>, line_no: u64) {
        // Most lines say nothing about the candidates: only these are looked at.
        match kind {
            Line::Insn(insn) => self.observe_insn(insn, line_no),
            Line::Annotation(a) => self.pending.hold(a, line_no),
            Line::FuncStart { func, start } => self.observe_func(*func, *start, line_no),
            Line::CallerCallee => self.observe_entry(line_no),
            Line::Validating { func, name } => {
                self.trackers.iter_mut().for_each(|t| t.rule.reset());
                self.observe_name(*func, name, line_no);
            }
            Line::GlobalFunc {
                func,
                name: Some(name),
            } => self.observe_name(*func, name, line_no),
            Line::LiveRegsRow {
                insn: Some(insn), ..
            } if !self.listing_read() => self.observe_listed(insn, line_no),
            _ => {}
        }
    }

    /// [`observe`](Self::observe), with the line's text: a line that names a function without
    /// its number (`Global function f() doesn't return scalar...`, see
    /// [`global_function_name`]) needs it.
    #[inline(always)]
    pub(crate) fn observe_text(&mut self, kind: &Line<'_>, text: &[u8], line_no: u64) {
        if !self.form_known && self.insns < FORM_WINDOW {
            self.look_for_form(kind, text);
        }
        if let Line::Other = kind {
            if let Some(name) = global_function_name(text) {
                self.observe_named(name, line_no);
            } else if let Some(failed) = failed_core(text) {
                let at = self.entries.as_ref().and_then(|e| e.rewritten);
                self.check_functions(line_no, true, |program, object| {
                    check_failed_core(program, object, failed, at)
                });
            }
        }
        self.observe(kind, line_no);
    }

    /// What the line `kind` (`text`) says of the form of the kernel's source lines, if anything.
    #[inline(never)]
    fn look_for_form(&mut self, kind: &Line<'_>, text: &[u8]) {
        let Some(form) = source_lines_shown(kind, text) else {
            return;
        };
        self.form_known = true;
        if form == SourceLines::Bare {
            self.form = form;
            for t in &mut self.trackers {
                t.rule = KernelRule::new(form);
            }
        }
    }

    /// A line naming a function of the program without its number: some function of each
    /// candidate's layout must have that name (a name garbled may be noise).
    #[inline(never)]
    fn observe_named(&mut self, name: &[u8], line_no: u64) {
        self.check_functions(line_no, true, |program, object| {
            let mut names =
                (program.layout.parts.iter()).map(|p| object.function(p.function).name.as_bytes());
            (!names.any(|n| n == name)).then(|| {
                format!(
                    "the log names function {}, which the program does not have",
                    excerpt(name)
                )
            })
        });
    }

    /// Whether [`observe`](Self::observe) would do nothing with detail lines
    /// ([`bpflog_log::is_detail`]): once an instruction line came, or fewer than two candidates
    /// fit. Before that, the rows of a 6.15+ log's liveness listing list every instruction of the
    /// loaded program (see [`observe_listed`](Self::observe_listed)) and tell the candidates
    /// apart; one candidate alone is checked by the lines verified, as in any log, and a file
    /// of many logs of one program costs what it did.
    /// Before [`FORM_WINDOW`] instruction lines, a log that has not shown the form of its
    /// kernel's source lines may show it in a detail line (5.10 at level 1 prints a state only
    /// as one, after a branch): then they are observed too.
    #[inline]
    pub(crate) fn ignores_details(&self) -> bool {
        self.listing_read() && (self.insns >= FORM_WINDOW || self.form_known)
    }

    /// Whether the liveness listing can tell the candidates apart no more (see
    /// [`ignores_details`](Self::ignores_details)).
    #[inline]
    fn listing_read(&self) -> bool {
        self.insns > 0 || self.fitting < 2
    }

    /// A row of the liveness listing (`Live regs before insn:`, Linux 6.15+), which lists the
    /// loaded program before its first instruction is verified: compared with each candidate
    /// that still fits as an instruction line is, without the annotation and output checks of
    /// lines being verified. The whole program is so compared in the log's first lines; the
    /// instruction lines after them are compared as in a log without a listing (the first line
    /// of each instruction by its text, later ones by opcode), so that a listing changes
    /// nothing they say.
    #[inline(never)]
    fn observe_listed(&mut self, insn: &InsnLine<'_>, line_no: u64) {
        self.listed = true;
        let mut decoded = None;
        for (program, t) in self.programs.iter().zip(&mut self.trackers) {
            if t.evidence.mismatch.is_some() {
                continue;
            }
            t.evidence.checked += 1;
            // A row whose text fitted as an instruction line in an earlier log fits (rows are
            // not remembered: they show no state, and a 64-bit load's map is in its state).
            if let Some(opcode) = insn.opcode
                && t.checked.fitted(insn.index, opcode, insn.text())
            {
                continue;
            }
            if let Err(d) = check_insn(program, insn, &mut decoded) {
                let mismatch = Mismatch {
                    line: line_no,
                    reason: d.reason,
                };
                if t.disagrees(mismatch, d.garbled) {
                    self.fitting -= 1;
                }
            }
        }
        self.refit();
    }

    /// An instruction line: compared with each candidate that still fits.
    #[inline]
    fn observe_insn(&mut self, insn: &InsnLine<'_>, line_no: u64) {
        if !self.count_seen(insn.index, insn.opcode, None) {
            self.compare_insn(insn, line_no);
        }
    }

    /// [`observe_insn`](Self::observe_insn) of most lines, which only counts: no annotation line
    /// held, at most one candidate fitting, and an instruction whose line matched with this
    /// opcode before, or whose opcode and text fitted the candidate in an earlier log. `false`,
    /// and nothing done, for the other lines.
    #[inline(always)]
    pub(crate) fn insn_seen(&mut self, head: &InsnHead<'_>) -> bool {
        self.count_seen(head.index, Some(head.opcode), Some(head))
    }

    /// [`insn_seen`](Self::insn_seen), also for lines without an opcode, and without looking
    /// at earlier logs' lines when `head` is `None`.
    #[inline(always)]
    fn count_seen(&mut self, index: u64, opcode: Option<u8>, head: Option<&InsnHead<'_>>) -> bool {
        if self.pending.held {
            return false;
        }
        match self.fitting {
            0 => {}
            1 => {
                let Some(t) = self.trackers.get_mut(self.first_fitting) else {
                    return false;
                };
                // Matched with this opcode before, or not seen and fitted in an earlier log.
                let matched = t.matched_at(index);
                let seen = matched == Seen::from(opcode);
                if !(seen || (matched == Seen::Not && head.is_some_and(|h| t.fitted_before(h)))) {
                    return false;
                }
                t.evidence.checked += 1;
            }
            _ => return false,
        }
        self.insns += 1;
        true
    }

    /// Moves [`first_fitting`](Self::first_fitting) on past the trackers that no longer fit:
    /// after trackers found a mismatch.
    fn refit(&mut self) {
        let rest = self.trackers.get(self.first_fitting..).unwrap_or_default();
        self.first_fitting += (rest.iter())
            .position(|t| t.evidence.mismatch.is_none())
            .unwrap_or(rest.len());
    }

    /// Splits the candidates that fit into classes by the row each would print before the
    /// instruction line just compared ([`Tracker::inserted`]): two in the same class before
    /// stay together only when they print the same file, line and text, or both nothing.
    fn refine_classes(&mut self) {
        // (class before, class after, the first candidate of the class after)
        let mut split: Vec<(u32, u32, usize)> = Vec::new();
        for i in 0..self.trackers.len() {
            if self.trackers[i].evidence.mismatch.is_some() {
                continue;
            }
            let before = self.trackers[i].evidence.output_class;
            let alike = (split.iter()).find(|s| s.0 == before && self.prints_alike(s.2, i));
            let after = match alike {
                Some(&(_, after, _)) => after,
                None => {
                    // The first of its class keeps the class; one that prints otherwise than
                    // the others of its class so far gets a class of its own.
                    let after = if split.iter().any(|s| s.0 == before) {
                        self.classes += 1;
                        self.classes
                    } else {
                        before
                    };
                    split.push((before, after, i));
                    after
                }
            };
            self.trackers[i].evidence.output_class = after;
        }
    }

    /// Whether candidates `a` and `b` would print the same row before the instruction line just
    /// compared (or both none).
    fn prints_alike(&self, a: usize, b: usize) -> bool {
        let row = |i: usize| {
            let at = self.trackers[i].inserted?;
            self.programs[i].lines.rows().get(at)
        };
        match (row(a), row(b)) {
            (None, None) => true,
            (Some(x), Some(y)) => {
                (self.form == SourceLines::Bare || x.line == y.line && x.basename() == y.basename())
                    && x.trimmed_text() == y.trimmed_text()
            }
            _ => false,
        }
    }

    /// [`observe_insn`](Self::observe_insn), all of it.
    #[inline(never)]
    fn compare_insn(&mut self, insn: &InsnLine<'_>, line_no: u64) {
        self.insns += 1;
        let annotation = self.pending.take();
        // The annotations each would insert tell fitting candidates apart: needed while two fit.
        let alone = self.fitting < 2;
        let mut decoded = None;
        for (program, t) in self.programs.iter().zip(&mut self.trackers) {
            if t.evidence.mismatch.is_some() {
                continue;
            }
            t.evidence.checked += 1;
            // A log visits an instruction many times: it is compared with the program
            // once, later lines with that first line's opcode.
            let check = match (t.seen(insn.index), insn.opcode) {
                (Some(opcode), _) if opcode == insn.opcode || insn.opcode.is_none() => Ok(()),
                // Not seen in this log: perhaps in an earlier one.
                (None, Some(opcode)) => {
                    let line = decoded.get_or_insert_with(|| insn.decode()).text;
                    if t.checked.fitted(insn.index, opcode, line) {
                        Ok(())
                    } else {
                        let check = check_insn(program, insn, &mut decoded);
                        if check.is_ok() {
                            t.checked
                                .fits(insn.index, program.layout.len, opcode, insn, line);
                        }
                        check
                    }
                }
                _ => check_insn(program, insn, &mut decoded),
            };
            if check.is_ok() {
                t.remember(insn.index, insn.opcode);
            }
            let mut mismatch = check.err().map(|d| {
                let m = Mismatch {
                    line: line_no,
                    reason: d.reason,
                };
                (m, d.garbled)
            });
            if mismatch.is_none()
                && let Some((a, line)) = &annotation
            {
                t.evidence.checked += 1;
                mismatch = check_annotation(program, insn.index, a)
                    .err()
                    .map(|reason| {
                        (
                            Mismatch {
                                line: *line,
                                reason,
                            },
                            true,
                        )
                    });
            }
            if let Some((mismatch, garbled)) = mismatch {
                if t.disagrees(mismatch, garbled) {
                    self.fitting -= 1;
                }
                continue;
            }
            if alone {
                continue;
            }
            t.inserted = t.rule.row_before_insn(program, insn.index);
            t.rule.after_insn(program, insn);
        }
        if !alone {
            self.refine_classes();
            let called = match insn.opcode {
                Some(OP_CALL) => match decoded.unwrap_or_else(|| insn.decode()).callee() {
                    Some(Callee::Pc(off)) => insn.index.checked_add_signed(off + 1),
                    _ => None,
                },
                _ => None,
            };
            let rewritten = insn.opcode.map_or(u32::try_from(insn.index).ok(), |_| None);
            if called.is_some() || rewritten.is_some() || self.entries.is_some() {
                let entries = self.entries.get_or_insert_with(Box::default);
                entries.called = called;
                entries.rewritten = rewritten;
            }
        }
        self.refit();
    }

    /// `caller:` (or `callee:`): right after a `call pc+N` line, the verifier stepped into the
    /// function called, which it does only for a static function (`check_func_call`: a global
    /// one is verified on its own, `Func#N ('f') is global and assumed valid.`). Kept, while
    /// two candidates fit, for [`finish`](Self::finish).
    #[inline(never)]
    fn observe_entry(&mut self, line_no: u64) {
        if self.fitting > 1
            && let Some(entries) = &mut self.entries
            && let Some(start) = entries.called.take()
        {
            entries.enter(start, line_no);
        }
    }

    /// Why candidate `i` does not fit a function the log shows stepped into: the function that
    /// starts there is one every loader hands the kernel as global, with its BTF
    /// ([`Function::exported`](bpflog_object::Function::exported), and a function info record).
    fn entered_global(&self, i: usize) -> Option<Mismatch> {
        let program = self.programs[i];
        let object = program.object()?;
        let rows = object.func_rows(&program.layout);
        let entered = self.entries.as_ref().map_or(&[][..], |e| &e.entered[..]);
        entered.iter().find_map(|&(start, line)| {
            let part = (program.layout.parts.iter()).find(|p| u64::from(p.start) == start)?;
            let function = object.function(part.function);
            let described = rows.iter().any(|r| u64::from(r.insn) == start);
            (function.exported && described).then(|| Mismatch {
                line,
                reason: format!(
                    "the verifier steps into the function at instruction {start}, but the program's there is global ({})",
                    excerpt_name(&function.name)
                ),
            })
        })
    }

    /// Checks every candidate built from an object that still fits (line info from a loader
    /// says nothing of functions) against a line about its functions: `check` says why one does
    /// not fit, if it does not. A disagreement in a name may be noise (`text`); one in a
    /// function's start is the layout's, which no garbled line changes.
    fn check_functions(
        &mut self,
        line_no: u64,
        text: bool,
        check: impl Fn(&Program<'_, '_>, &BpfObject<'_>) -> Option<String>,
    ) {
        for (program, t) in self.programs.iter().zip(&mut self.trackers) {
            if t.evidence.mismatch.is_some() {
                continue;
            }
            let Some(object) = program.object() else {
                continue;
            };
            t.evidence.checked += 1;
            if let Some(reason) = check(program, object)
                && t.disagrees(
                    Mismatch {
                        line: line_no,
                        reason,
                    },
                    text,
                )
            {
                self.fitting -= 1;
            }
        }
        self.refit();
    }

    /// A `func#N @START` line: the function must start there in each candidate's layout.
    fn observe_func(&mut self, func: u64, start: u64, line_no: u64) {
        self.check_functions(line_no, false, |program, _| {
            let part = usize::try_from(func)
                .ok()
                .and_then(|f| program.layout.parts.get(f));
            match part {
                None => Some(format!(
                    "func#{func} does not exist: the program has {} functions",
                    program.layout.parts.len()
                )),
                Some(p) if u64::from(p.start) != start => Some(format!(
                    "func#{func} starts at {start} in the log but at {} in the program",
                    p.start
                )),
                Some(_) => None,
            }
        });
    }

    /// A line naming function `func` (`Validating f() func#2...`, `Func#2 ('f') is global`):
    /// that function of each candidate's layout must have that name (a name garbled may be
    /// noise).
    fn observe_name(&mut self, func: u64, name: &[u8], line_no: u64) {
        self.check_functions(line_no, true, |program, object| {
            let part = usize::try_from(func)
                .ok()
                .and_then(|f| program.layout.parts.get(f));
            match part.map(|p| object.function(p.function).name.as_bytes()) {
                Some(own) if own == name => None,
                Some(own) => Some(format!(
                    "func#{func} is {} in the log but {} in the program",
                    excerpt(name),
                    excerpt(own)
                )),
                None => Some(format!(
                    "func#{func} does not exist: the program has {} functions",
                    program.layout.parts.len()
                )),
            }
        });
    }

    /// For a selector of one program checked on the way: its evidence, or why the log does not
    /// fit it.
    pub(crate) fn fit(self) -> Result<Evidence, SelectError> {
        self.finish()
            .map(|mut s| s.candidates.swap_remove(s.chosen).evidence)
    }

    /// Chooses among the candidates by what the log said.
    pub fn finish(mut self) -> Result<Selection, SelectError> {
        if self.programs.is_empty() {
            return Err(SelectError::NoPrograms);
        }
        self.trackers.iter_mut().for_each(Tracker::settle);
        // A candidate with more noise than another that fits fits worse: its first noise line
        // is then the disagreement.
        let least_noise = (self.trackers.iter())
            .filter(|t| t.evidence.mismatch.is_none())
            .map(|t| t.evidence.noise_lines)
            .min();
        for t in &mut self.trackers {
            if t.evidence.mismatch.is_none() && Some(t.evidence.noise_lines) > least_noise {
                t.evidence.mismatch = t.evidence.noise.first().cloned();
            }
        }
        let mut candidates: Vec<Candidate> = self
            .programs
            .iter()
            .zip(&self.trackers)
            .map(|(p, t)| Candidate {
                name: p.name().to_owned(),
                loader: p.loader,
                evidence: t.evidence.clone(),
            })
            .collect();
        let mut fitting: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].evidence.mismatch.is_none())
            .collect();
        if fitting.is_empty() {
            return Err(SelectError::NoneFits(candidates));
        }
        // Between candidates that fit, the functions the verifier stepped into: a candidate
        // whose function there is global does not fit, unless none would be left (a loader
        // that passed no BTF makes every function static).
        if fitting.len() > 1 && self.entries.as_ref().is_some_and(|e| !e.entered.is_empty()) {
            let out: Vec<(usize, Mismatch)> = (fitting.iter())
                .filter_map(|&i| self.entered_global(i).map(|m| (i, m)))
                .collect();
            if out.len() < fitting.len() {
                for (i, m) in out {
                    candidates[i].evidence.mismatch = Some(m);
                    fitting.retain(|&f| f != i);
                }
            }
        }
        // Prefer libbpf's layout, then aya's, then cilium/ebpf's; otherwise the order given.
        let rank = |i: usize| {
            Loader::ALL
                .iter()
                .position(|&l| l == candidates[i].loader)
                .unwrap_or(0)
        };
        let chosen = *fitting
            .iter()
            .min_by_key(|&&i| (rank(i), i))
            .unwrap_or(&fitting[0]);
        let class = candidates[chosen].evidence.output_class;
        let differing: Vec<usize> = fitting
            .iter()
            .copied()
            .filter(|&i| candidates[i].evidence.output_class != class)
            .collect();
        let mut layout_doubt = None;
        if !differing.is_empty() {
            let same_program = differing
                .iter()
                .all(|&i| candidates[i].name == candidates[chosen].name);
            if !same_program {
                let mut names: Vec<String> =
                    fitting.iter().map(|&i| candidates[i].label()).collect();
                names.dedup();
                let programs: Vec<&Program<'_, '_>> =
                    fitting.iter().map(|&i| self.programs[i]).collect();
                return Err(SelectError::Ambiguous(names, shared(&programs)));
            }
            let others: Vec<&str> = differing
                .iter()
                .map(|&i| candidates[i].loader.name())
                .collect();
            layout_doubt = Some(format!(
                "the log fits the {} layout of {} as well as the {} one; chose {}",
                others.join(" and "),
                excerpt_name(&candidates[chosen].name),
                candidates[chosen].loader.name(),
                candidates[chosen].loader.name()
            ));
        }
        let equivalent = fitting
            .iter()
            .copied()
            .filter(|&i| i != chosen && candidates[i].evidence.output_class == class)
            .collect();
        Ok(Selection {
            chosen,
            equivalent,
            candidates,
            layout_doubt,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::select;
    use bpflog_log::classify;

    #[test]
    fn a_line_of_an_instruction_seen_before_is_compared_by_its_opcode() {
        // A later line of an instruction that matched is taken on its opcode alone: the same
        // passes without decoding it again, another is a mismatch, found at its line.
        crate::testing::with_branchy(|program, log| {
            // The log twice: each instruction line of the second copy comes the second time.
            let twice = [log, log].concat();
            let fits = select(std::slice::from_ref(program), &twice[..]).unwrap();
            assert!(fits.candidates[0].evidence.mismatch.is_none());
            // In the second copy, instruction 4's line with another opcode (`0f`: `r2 += r1`).
            let line = b"\n4: (07) r2 += 14 ";
            let at = log.len() + memchr::memmem::find(log, line).unwrap() + 1;
            let mut changed = twice.clone();
            changed[at + 4..at + 6].copy_from_slice(b"0f");
            let line_no = 1 + changed[..at].iter().filter(|&&b| b == b'\n').count() as u64;
            match select(std::slice::from_ref(program), &changed[..]) {
                Err(SelectError::NoneFits(c)) => {
                    let m = c[0].evidence.mismatch.as_ref().unwrap();
                    assert_eq!(m.line, line_no, "{}", m.reason);
                }
                other => panic!("{other:?}"),
            }
        });
    }

    #[test]
    fn a_line_remembered_as_fitting_is_not_compared_again() {
        // Instruction 4's line with another immediate (`r2 += 15`): it does not fit the program.
        // Given as a line that fitted in an earlier log, it is taken without being compared.
        crate::testing::with_branchy(|program, log| {
            let line = b"\n4: (07) r2 += 14 ";
            let at = memchr::memmem::find(log, line).unwrap() + 1;
            let mut changed = log.to_vec();
            changed[at + 15] = b'5';
            let read = |mut selector: Selector<'_, '_, '_>| {
                for (n, text) in changed.split(|&b| b == b'\n').enumerate() {
                    selector.observe_text(&classify(text), text, n as u64 + 1);
                }
                let lines = selector.forget();
                let evidence = match selector.finish() {
                    Ok(mut s) => s.candidates.swap_remove(0).evidence,
                    Err(SelectError::NoneFits(mut c)) => c.swap_remove(0).evidence,
                    Err(e) => panic!("{e}"),
                };
                (evidence, lines)
            };
            let (compared, lines) = read(Selector::new(vec![program]));
            assert!(compared.mismatch.is_some() || compared.noise_lines == 1);
            // What the log left: its lines that fitted, this one not among them.
            let Line::Insn(insn) = classify(b"4: (07) r2 += 15") else {
                unreachable!()
            };
            assert!(!lines[0].fitted(4, 0x07, insn.text()));
            let mut earlier = FittedLines::default();
            earlier.fits(4, program.layout.len, 0x07, &insn, insn.text());
            let (taken, _) = read(Selector::new(vec![program]).remembering(vec![earlier]));
            assert_eq!(taken.mismatch, None);
            assert_eq!(taken.noise_lines, 0);
        });
    }

    /// `log` with loader output written into the middle of its annotation lines, after the
    /// `skip`th, on every `every`th, `count` of them (as `2>&1` does); and the lines changed.
    fn garbled(log: &[u8], skip: usize, every: usize, count: usize) -> (Vec<u8>, Vec<u64>) {
        let mut out = Vec::new();
        let mut changed = Vec::new();
        let mut seen = 0;
        for (n, line) in log.split_inclusive(|&b| b == b'\n').enumerate() {
            if line.starts_with(b"; ") && changed.len() < count {
                if seen >= skip && (seen - skip).is_multiple_of(every) {
                    let half = line.len() / 2;
                    out.extend_from_slice(&line[..half]);
                    out.extend_from_slice(b"libbpf: prog 'x': failed to load");
                    out.extend_from_slice(&line[half..]);
                    changed.push(n as u64 + 1);
                    seen += 1;
                    continue;
                }
                seen += 1;
            }
            out.extend_from_slice(line);
        }
        (out, changed)
    }

    #[test]
    fn a_garbled_line_among_lines_that_fit_is_noise_and_noise_stays_rare() {
        crate::testing::with_branchy(|program, log| {
            let programs = std::slice::from_ref(program);
            // One annotation line garbled, far from the log's ends: noise.
            let (one, lines) = garbled(log, 40, 1, 1);
            let fits = select(programs, &one[..]).unwrap();
            let evidence = &fits.candidates[0].evidence;
            assert!(evidence.mismatch.is_none());
            assert_eq!(
                (evidence.noise_lines, evidence.noise[0].line),
                (1, lines[0])
            );
            // Two in a row: a disagreement, at the first.
            let (two, lines) = garbled(log, 40, 1, 2);
            match select(programs, &two[..]) {
                Err(SelectError::NoneFits(c)) => {
                    assert_eq!(c[0].evidence.mismatch.as_ref().unwrap().line, lines[0]);
                }
                other => panic!("{other:?}"),
            }
            // Spread out (every 10th annotation line): each alone, but too many for the checks
            // around them; ruled out at a line past what is allowed.
            let (spread, lines) = garbled(log, 10, 10, 8);
            match select(programs, &spread[..]) {
                Err(SelectError::NoneFits(c)) => {
                    let at = c[0].evidence.mismatch.as_ref().unwrap().line;
                    assert!(lines.contains(&at) && at != lines[0], "{at} {lines:?}");
                }
                other => panic!("{other:?}"),
            }
        });
    }

    #[test]
    fn a_function_named_by_the_log_must_be_the_layouts() {
        crate::testing::with_fixture("xdp_subprogs", "xdp_parse.l2", |program, log| {
            let programs = std::slice::from_ref(program);
            let fits = select(programs, log).unwrap();
            assert_eq!(fits.candidates[0].evidence.noise_lines, 0);
            // Another name for func#2 (`Validating classify_proto() func#2...`): a line that does not
            // fit, among lines that do (noise, named).
            let renamed = String::from_utf8(log.to_vec()).unwrap().replacen(
                "Validating classify_proto()",
                "Validating classify_other()",
                1,
            );
            let fits = select(programs, renamed.as_bytes()).unwrap();
            let evidence = &fits.candidates[0].evidence;
            assert_eq!(evidence.noise_lines, 1);
            assert!(
                evidence.noise[0]
                    .reason
                    .contains("func#2 is classify_other"),
                "{:?}",
                evidence.noise
            );
        });
    }

    #[test]
    fn a_subprogram_call_lands_on_a_function() {
        crate::testing::with_fixture("xdp_subprogs", "xdp_parse.l2", |program, log| {
            // The first call line verified, one instruction further: noise, named.
            let at = memchr::memmem::find(log, b": (85) call pc+").unwrap();
            let digits = at + b": (85) call pc+".len();
            let mut moved = log.to_vec();
            moved[digits] += 1;
            let fits = select(std::slice::from_ref(program), &moved[..]).unwrap();
            let evidence = &fits.candidates[0].evidence;
            assert_eq!(evidence.noise_lines, 1, "{:?}", evidence.noise);
            assert!(
                evidence.noise[0]
                    .reason
                    .contains("where no function of the program starts"),
                "{:?}",
                evidence.noise
            );
        });
    }

    #[test]
    fn a_subprogram_call_lands_on_the_function_it_calls() {
        crate::testing::with_fixture("xdp_subprogs", "xdp_parse.l2", |program, log| {
            // Instruction 43 calls func#2 (@74); its first line verified sent to func#1 (@52):
            // a function starts there, but not the one called. Noise, named.
            let moved = String::from_utf8(log.to_vec()).unwrap().replacen(
                "\n43: (85) call pc+30",
                "\n43: (85) call pc+8",
                1,
            );
            let fits = select(std::slice::from_ref(program), moved.as_bytes()).unwrap();
            let evidence = &fits.candidates[0].evidence;
            assert_eq!(evidence.noise_lines, 1, "{:?}", evidence.noise);
            assert!(
                evidence.noise[0]
                    .reason
                    .contains("calls pc+8 (instruction 52), but the program's instruction calls")
                    && evidence.noise[0].reason.ends_with("at instruction 74"),
                "{:?}",
                evidence.noise
            );
        });
    }

    #[test]
    fn what_libbpf_could_not_relocate_must_be_the_programs() {
        // `11: <invalid CO-RE relocation>` and the line after it, `failed to resolve CO-RE
        // relocation <byte_off> [18] struct task_struct___missing...`: instruction 11 has that
        // CO-RE relocation.
        crate::testing::with_fixture("core_fail", "raw_tp_reject_core.l2", |program, log| {
            let programs = std::slice::from_ref(program);
            let fits = select(programs, log).unwrap();
            assert_eq!(fits.candidates[0].evidence.noise_lines, 0);
            let text = String::from_utf8(log.to_vec()).unwrap();
            for (from, to, said) in [
                (
                    "\n11: <invalid CO-RE relocation>",
                    "\n12: <invalid CO-RE relocation>",
                    "instruction 12 is <invalid CO-RE relocation> in the log, but the program's instruction has no CO-RE relocation",
                ),
                (
                    "\n11: <invalid CO-RE relocation>",
                    "\n11: <invalid kfunc call>",
                    "instruction 11 is <invalid kfunc call> in the log, but the program's instruction calls no kfunc",
                ),
                (
                    "<byte_off> [18] struct",
                    "<byte_off> [17] struct",
                    "libbpf failed a CO-RE relocation <byte_off> of local type [17] (0:0), which no CO-RE relocation of the program is",
                ),
                (
                    "<byte_off> [18] struct",
                    "<byte_sz> [18] struct",
                    "libbpf failed a CO-RE relocation <byte_sz> of local type [18] (0:0), which no CO-RE relocation of the program is",
                ),
                (
                    "no_such_field_in_any_kernel (0:0 @",
                    "no_such_field_in_any_kernel (0:1 @",
                    "libbpf failed a CO-RE relocation <byte_off> of local type [18] (0:1), which no CO-RE relocation of the program is",
                ),
            ] {
                // A line that does not fit: noise, or in a log this short, a misfit.
                let changed = text.replacen(from, to, 1);
                let evidence = match select(programs, changed.as_bytes()) {
                    Ok(mut s) => s.candidates.swap_remove(0).evidence,
                    Err(SelectError::NoneFits(mut c)) => c.swap_remove(0).evidence,
                    Err(e) => panic!("{e}"),
                };
                let found = evidence.mismatch.iter().chain(&evidence.noise).next();
                assert_eq!(found.map(|m| &m.reason[..]), Some(said), "{to}");
            }
        });
    }

    #[test]
    fn a_64_bit_constant_of_the_programs_own_must_agree() {
        crate::testing::with_fixture("tc_prog", "tc_count.l2", |program, log| {
            let programs = std::slice::from_ref(program);
            assert_eq!(
                select(programs, log).unwrap().candidates[0]
                    .evidence
                    .noise_lines,
                0
            );
            // `56: (18) r0 = 0xffffffff` (no relocation: the program's own constant) loading
            // another: noise, named. Map addresses (20, 33, 45) are the loader's and never are.
            let changed = String::from_utf8(log.to_vec()).unwrap().replacen(
                "\n56: (18) r0 = 0xffffffff",
                "\n56: (18) r0 = 0xfffffffe",
                1,
            );
            let fits = select(programs, changed.as_bytes()).unwrap();
            let evidence = &fits.candidates[0].evidence;
            assert_eq!(evidence.noise_lines, 1, "{:?}", evidence.noise);
            assert!(
                evidence.noise[0]
                    .reason
                    .contains("loads 0xfffffffe, but the program's instruction loads 0xffffffff"),
                "{:?}",
                evidence.noise
            );
        });
    }
}
