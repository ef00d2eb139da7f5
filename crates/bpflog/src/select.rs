//! Which program of an object a log belongs to.
//!
//! Every candidate program (each entry program of each object, under each loader's layout) is
//! checked against the log: each instruction line's index must lie inside the program and its
//! opcode, registers and offsets must be those of the loaded instruction there (instructions with
//! a CO-RE relocation are compared by class only, as libbpf may rewrite them, and, when the
//! kernel's BTF is known, by the field byte offset it gives them: [`Program::with_kernel_btf`]);
//! `func#N @START`
//! lines must name the layout's function starts; annotation lines already in the log must be the
//! source line the program has at the next instruction. (Later lines of an instruction are
//! compared by opcode; a first line whose opcode and text fitted the same program in an earlier
//! log of the job is not compared again: see [`crate::checked_insns`].) Candidates that fit are then
//! compared by the annotations they would produce: when they agree, any of them serves (real
//! tools ship near-identical twins); when only the loader's layout is in doubt, libbpf's is
//! preferred and the doubt reported; when different programs would annotate differently, or none
//! fits, the caller is told why — never a silent guess.
//!
//! Evidence is weighed, not taken as a veto: a real capture may have a line garbled (a loader's
//! stderr written into the middle of it by `2>&1`). A line whose text does not fit a candidate
//! (an instruction's operands, an annotation line) is *noise* when the [`NOISE_QUIET`] checks
//! after it all fit (or, at the end of the log, the [`NOISE_QUIET`] before it), and noise is
//! rare (one line per [`NOISE_PER_CHECKS`] checks, and one more): it is reported
//! ([`Evidence::noise`]), not held against the candidate. An instruction past the program, an
//! opcode or a `func#` start that differs, two lines that do not fit within [`NOISE_QUIET`]
//! checks of each other, one in a short log, or more noise than that, rule the candidate out
//! (reported at the first line that did not fit); so does any noise while another candidate fits
//! with less. A log of another program differs in its opcodes and disagrees on most lines: it is
//! refused within a few lines of its first disagreement.

use crate::Program;
use crate::checked_insns::FittedLines;
use crate::kernel_rule::KernelRule;
use bpflog_log::{
    Annotation, Callee, Insn as LogInsn, InsnHead, InsnLine, Line, Op as LogOp, SourceLines,
    global_function_name, source_lines_shown,
};
use bpflog_object::opcode::{
    self, CLASS_ALU, CLASS_ALU64, CLASS_JMP, CLASS_JMP32, CLASS_LDX, CLASS_ST, CLASS_STX,
    MODE_ATOMIC, MODE_MASK, MODE_MEM, OP_CALL, OP_CALL_BITS, OP_END, OP_EXIT, OP_EXIT_BITS,
    OP_GOTOL, OP_JA, OP_JCOND, OP_LD_IMM64, OP_MASK, OP_MOV, OP_NEG, SOURCE_REG,
};
use bpflog_object::{
    BpfObject, Insn, LineOrigin, Loader, RelocSymbol, excerpt, excerpt_name, excerpt_names,
};
use std::io;

/// Why a program does not fit a log: the first disagreement found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// 1-based line number in the log.
    pub line: u64,
    /// What disagrees.
    pub reason: String,
}

/// How many checks after (or before) a line that does not fit a candidate must fit for that
/// line to be taken as noise rather than as a disagreement (see the module docs).
pub const NOISE_QUIET: u64 = 16;

/// One noise line is allowed per this many checks (and one more): past that, a log is not one
/// garbled capture of the program but another log, however spread out its disagreements.
const NOISE_PER_CHECKS: u64 = 1024;

/// At most this many noise lines are kept per candidate ([`Evidence::noise_lines`] counts them
/// all).
const NOISE_KEPT: usize = 8;

/// What the log said about one candidate program.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Instruction, `func#` and annotation lines checked against the program.
    pub checked: u64,
    /// The disagreement that rules the program out, if any: the first line that does not fit
    /// and is not noise.
    pub mismatch: Option<Mismatch>,
    /// Lines that do not fit but are surrounded by lines that do: noise, passed through and
    /// reported (the first few of them).
    pub noise: Vec<Mismatch>,
    /// How many lines were taken as noise.
    pub noise_lines: u64,
    /// The class of the annotations the program would put into the log: two candidates that
    /// fit have the same class exactly when they would put the same lines in the same places
    /// (compared while another candidate also fitted; once no other fits there is nothing left
    /// to tell apart).
    pub output_class: u32,
}

/// A program and the evidence for it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The program's name.
    pub name: String,
    /// The loader whose layout was checked.
    pub loader: Loader,
    /// What the log said.
    pub evidence: Evidence,
}

impl Candidate {
    fn label(&self) -> String {
        if self.loader == Loader::Libbpf {
            excerpt_name(&self.name)
        } else {
            format!(
                "{} ({} layout)",
                excerpt_name(&self.name),
                self.loader.name()
            )
        }
    }
}

/// The outcome of a successful selection.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Index (into the candidates given) of the chosen program.
    pub chosen: usize,
    /// Other candidates that fit the log and would annotate it identically.
    pub equivalent: Vec<usize>,
    /// Every candidate with its evidence.
    pub candidates: Vec<Candidate>,
    /// Set when the log fits several loaders' layouts that would annotate it differently and
    /// libbpf's was taken: which others fit.
    pub layout_doubt: Option<String>,
}

/// Why no program could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The object has no entry programs.
    #[error("the object has no BPF programs")]
    NoPrograms,
    /// No program fits the log.
    #[error("the log matches no program of the object: {}", describe(.0))]
    NoneFits(Vec<Candidate>),
    /// Several programs fit but would annotate the log differently: their names, and how far
    /// their code is the same.
    #[error("the log fits several programs that would annotate it differently: {} ({})", excerpt_names(.0), .1)]
    Ambiguous(Vec<String>, Shared),
    /// Reading the log failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// What programs that all fit a log share, as [`SelectError::Ambiguous`] says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shared {
    /// The same code: instructions, constants, helpers, kfuncs and maps (relocated values by
    /// the symbol they name), and the same fields relocated by CO-RE.
    Code,
    /// The same code but for fields relocated by CO-RE: the log prints their offsets in the
    /// kernel's layout, which only the kernel's BTF ties to a field.
    CoreFields(Box<CoreFields>),
    /// The same code up to this instruction, where they first differ: the log does not tell
    /// them apart there (it does not reach it, or shows nothing of it that differs).
    Until(u32),
    /// Not known: a program comes from a loader's line info, without instructions.
    Unknown,
}

/// The first instruction where programs differ only in a field relocated by CO-RE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreFields {
    /// The loaded instruction.
    pub insn: u32,
    /// Each program's field there (`snd_cwnd of struct tcp_sock`), in the order the programs
    /// were named (the first two that differ).
    pub fields: (String, String),
    /// Whether a kernel's BTF was given (and did not settle these fields).
    pub kernel_btf: bool,
}

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shared::Code => f.write_str(
                "twins: the same instructions, constants, helpers and maps; only the kernel's source lines would tell them apart",
            ),
            Shared::CoreFields(core) => write!(
                f,
                "the same code but for fields relocated by CO-RE (instruction {}: {} vs {}), whose offsets in the log only the kernel's BTF ties to fields{}",
                core.insn,
                core.fields.0,
                core.fields.1,
                if core.kernel_btf {
                    "; the BTF given does not settle them"
                } else {
                    ""
                }
            ),
            Shared::Until(at) => write!(
                f,
                "the same code as far as the log shows; they first differ at instruction {at}"
            ),
            Shared::Unknown => f.write_str("programs from line info, without their code"),
        }
    }
}

/// What `programs` share (see [`Shared`]), comparing each with the first instruction by
/// instruction.
fn shared(programs: &[&Program<'_, '_>]) -> Shared {
    let Some((first, rest)) = programs.split_first() else {
        return Shared::Unknown;
    };
    let Some(object) = first.object() else {
        return Shared::Unknown;
    };
    let mut until = None;
    for other in rest {
        let Some(object_b) = other.object() else {
            return Shared::Unknown;
        };
        let len = first.layout.len.min(other.layout.len);
        let differ = (0..len)
            .find(|&i| insn(first, object, i) != insn(other, object_b, i))
            .or((first.layout.len != other.layout.len).then_some(len));
        until = until.min(differ).or(until).or(differ);
    }
    if let Some(at) = until {
        return Shared::Until(at);
    }
    // The same code as far as instructions go: do CO-RE relocations name other fields? (Only
    // the relocated instructions are looked at.)
    let mut first_core: Option<CoreFields> = None;
    let mine = object.core_accesses(&first.layout);
    for other in rest {
        let Some(object_b) = other.object() else {
            return Shared::Unknown;
        };
        let theirs = object_b.core_accesses(&other.layout);
        // The first index where one has a relocation the other has not, or another field.
        let differ = (0..mine.len().max(theirs.len())).find_map(|k| {
            let (a, b) = (mine.get(k), theirs.get(k));
            let i = match (a, b) {
                // The same field (or, for other kinds, the same kind) at the same place.
                (Some(x), Some(y)) if x.0 == y.0 && x.1.kind == y.1.kind && x.2 == y.2 => {
                    return None;
                }
                (Some(x), Some(y)) => x.0.min(y.0),
                (Some(x), None) | (None, Some(x)) => x.0,
                (None, None) => return None,
            };
            Some((i, field_at(a, i), field_at(b, i)))
        });
        let Some((i, a, b)) =
            differ.filter(|&(i, _, _)| first_core.as_ref().is_none_or(|c| i < c.insn))
        else {
            continue;
        };
        let field = |access: &Option<bpflog_object::FieldAccess<'_>>| match access {
            Some(a) => format!("{} of {}", a.path(), a.root()),
            None => "no field read".to_owned(),
        };
        let fields = match (&a, &b) {
            // One root: named once.
            (Some(x), Some(y)) if x.root() == y.root() => (x.path(), field(&b)),
            _ => (field(&a), field(&b)),
        };
        first_core = Some(CoreFields {
            insn: i,
            fields,
            kernel_btf: first.kernel_btf,
        });
    }
    first_core.map_or(Shared::Code, |c| Shared::CoreFields(Box::new(c)))
}

/// The field path of a CO-RE relocation entry (of [`BpfObject::core_accesses`]) when it is
/// the one of instruction `i`.
fn field_at<'d>(
    entry: Option<&(
        u32,
        bpflog_object::CoreRelo,
        Option<bpflog_object::FieldAccess<'d>>,
    )>,
    i: u32,
) -> Option<bpflog_object::FieldAccess<'d>> {
    entry.filter(|e| e.0 == i).and_then(|e| e.2.clone())
}

/// Instruction `i` of `p` as [`shared`] compares it first: relocated values are the loader's,
/// compared by the symbol named, and CO-RE-relocated instructions by class (their fields are
/// compared after).
type Compared<'a> = (u8, u8, u8, i16, i32, Option<RelocSymbol<'a>>);

/// Instruction `i` of `p` (in `object`), as [`shared`] compares it (see [`Compared`]).
fn insn<'a>(
    p: &Program<'_, '_>,
    object: &'a bpflog_object::BpfObject<'_>,
    i: u32,
) -> Option<Compared<'a>> {
    let insn = object.insn(&p.layout, i)?;
    let core = object.has_core_relo(&p.layout, i);
    Some(match (core, object.reloc_symbol(&p.layout, i)) {
        (true, _) => (opcode::class(insn.code), 0, 0, 0, 0, None),
        (false, Some(s)) => (insn.code, insn.dst, insn.src, insn.off, 0, Some(s)),
        (false, None) => (insn.code, insn.dst, insn.src, insn.off, insn.imm, None),
    })
}

/// Each candidate's evidence (the first [`bpflog_object::NAMES_MAX`]), as an error says it.
fn describe(candidates: &[Candidate]) -> String {
    let shown = candidates
        .iter()
        .filter(|c| {
            c.loader == Loader::Libbpf
                || candidates
                    .iter()
                    .all(|o| o.name != c.name || o.loader != Loader::Libbpf)
        })
        .map(|c| match &c.evidence.mismatch {
            Some(m) => format!("{}: log line {}: {}", c.label(), m.line, m.reason),
            None => format!("{}: fits", c.label()),
        });
    let mut each: Vec<String> = shown.clone().take(bpflog_object::NAMES_MAX).collect();
    let more = shown.count().saturating_sub(bpflog_object::NAMES_MAX);
    if more > 0 {
        each.push(format!("and {more} more"));
    }
    each.join("; ")
}

/// A line that did not fit a candidate, not yet known to be noise.
#[derive(Debug, Clone)]
struct Suspect {
    mismatch: Mismatch,
    /// [`Evidence::checked`] with its check counted.
    at: u64,
    /// How many checks before it fitted (since the line before it that did not fit).
    fitted_before: u64,
}

/// Per-candidate state while the log is read.
struct Tracker {
    evidence: Evidence,
    /// The last line that did not fit, while fewer than [`NOISE_QUIET`] checks after it are
    /// known to fit (whether they are is worked out at the next line that does not fit, and at
    /// the end: nothing is added to the checks of the lines that do).
    suspect: Option<Suspect>,
    /// [`Evidence::checked`] at the last line that did not fit (0: none yet).
    last_mismatch: u64,
    rule: KernelRule,
    /// The row of the line table the kernel would print before the instruction line compared
    /// last, while another candidate also fits ([`Selector::refine_classes`]).
    inserted: Option<usize>,
    /// For each instruction whose line matched: the opcode printed. Later visits compare the
    /// opcode only, without decoding the instruction again. It grows as far as the log goes (by half at a
    /// time), up to `len`: a table of the whole program for every log cost a file of many logs
    /// of a large program most of its time.
    matched: Vec<Seen>,
    /// The program's length.
    len: usize,
    /// Lines that fitted the program, in this log and earlier ones (see
    /// [`crate::checked_insns`]).
    checked: FittedLines,
}

/// What a candidate's tracker remembers of one instruction: whether a line of it matched, and
/// with which opcode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Seen {
    /// No line of this instruction matched yet (and past the end of `matched`).
    #[default]
    Not,
    /// A line without an opcode (libbpf's `<invalid ...>`) matched.
    Invalid,
    /// A line with this opcode matched.
    Opcode(u8),
}

impl From<Option<u8>> for Seen {
    /// What a matching line with `opcode` leaves (`None`: libbpf's `<invalid ...>` lines).
    #[inline]
    fn from(opcode: Option<u8>) -> Self {
        opcode.map_or(Seen::Invalid, Seen::Opcode)
    }
}

impl Tracker {
    /// A check (counted already) that did not fit: whether it rules the candidate out. A line
    /// that may be garbled (`garbled`: its text, not its instruction's index or opcode) is a
    /// suspect; one that is not rules the candidate out at once. The suspect before it is noise
    /// if the checks since it all fitted, enough of them, and noise is still rare; otherwise that
    /// suspect is the disagreement (the first one is what is reported).
    fn disagrees(&mut self, mismatch: Mismatch, garbled: bool) -> bool {
        let at = self.evidence.checked;
        if let Some(suspect) = self.suspect.take()
            && (at - 1 - suspect.at < NOISE_QUIET || !self.take_noise(suspect.mismatch.clone()))
        {
            self.evidence.mismatch = Some(suspect.mismatch);
            return true;
        }
        if !garbled {
            self.evidence.mismatch = Some(mismatch);
            return true;
        }
        self.suspect = Some(Suspect {
            mismatch,
            at,
            fitted_before: (at - 1).saturating_sub(self.last_mismatch),
        });
        self.last_mismatch = at;
        false
    }

    /// The end of the log: the suspect left is noise if enough checks fitted after it, or
    /// before it; otherwise it is the disagreement.
    fn settle(&mut self) {
        let Some(suspect) = self.suspect.take() else {
            return;
        };
        let after = self.evidence.checked - suspect.at;
        let quiet = after >= NOISE_QUIET || suspect.fitted_before >= NOISE_QUIET;
        if !(quiet && self.take_noise(suspect.mismatch.clone())) {
            self.evidence.mismatch = Some(suspect.mismatch);
        }
    }

    /// Takes `mismatch` as noise, if noise is still rare enough (see [`NOISE_PER_CHECKS`]):
    /// whether it did.
    fn take_noise(&mut self, mismatch: Mismatch) -> bool {
        if self.evidence.noise_lines > self.evidence.checked / NOISE_PER_CHECKS {
            return false;
        }
        self.evidence.noise_lines += 1;
        if self.evidence.noise.len() < NOISE_KEPT {
            self.evidence.noise.push(mismatch);
        }
        true
    }

    /// The opcode a line of instruction `index` matched with before (`None` for libbpf's
    /// `<invalid ...>` lines), if one did.
    fn seen(&self, index: u64) -> Option<Option<u8>> {
        match *self.matched.get(usize::try_from(index).ok()?)? {
            Seen::Not => None,
            Seen::Invalid => Some(None),
            Seen::Opcode(op) => Some(Some(op)),
        }
    }

    /// What `matched` holds for instruction `index` ([`Seen::Not`] past its end).
    #[inline]
    fn matched_at(&self, index: u64) -> Seen {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.matched.get(i))
            .map_or(Seen::Not, |&m| m)
    }

    /// Whether instruction `head`, not seen in this log, fitted in an earlier one: then
    /// remembered as seen.
    #[inline(never)]
    fn fitted_before(&mut self, head: &InsnHead<'_>) -> bool {
        let fitted = self.checked.fitted_head(head);
        if fitted {
            self.remember(head.index, Some(head.opcode));
        }
        fitted
    }

    fn remember(&mut self, index: u64, opcode: Option<u8>) {
        let Some(i) = usize::try_from(index).ok().filter(|&i| i < self.len) else {
            return;
        };
        if i >= self.matched.len() {
            // Logs mostly go through a program in order: grown by half its size at a time.
            let grown = (i + 1).max(self.matched.len() * 3 / 2).min(self.len);
            self.matched.resize(grown, Seen::Not);
        }
        self.matched[i] = Seen::from(opcode);
    }
}

/// `into` with what `from` saw where `into` saw nothing.
fn merge_seen(into: &mut Vec<Seen>, from: &[Seen]) {
    if into.len() < from.len() {
        into.resize(from.len(), Seen::Not);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        if *a == Seen::Not {
            *a = b;
        }
    }
}

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
    /// Rows of a liveness listing observed (see [`observe_listed`](Self::observe_listed)).
    listed: u64,
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
}

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
            listed: 0,
            programs,
            trackers,
            pending: HeldAnnotation::default(),
            classes: 0,
            form: SourceLines::Located,
            form_known: false,
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
        if self.fitting > 1 || later.listed > 0 {
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
        // A fresh start took `later`'s trackers, and their classes; otherwise at most one fits.
        self.classes = self.classes.max(later.classes);
        self.insns += later.insns;
        self.listed += later.listed;
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
        if let Line::Other = kind
            && let Some(name) = global_function_name(text)
        {
            self.observe_named(name, line_no);
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
        self.listed += 1;
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
        }
        self.refit();
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
        let candidates: Vec<Candidate> = self
            .programs
            .iter()
            .zip(&self.trackers)
            .map(|(p, t)| Candidate {
                name: p.name().to_owned(),
                loader: p.loader,
                evidence: t.evidence.clone(),
            })
            .collect();
        let fitting: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].evidence.mismatch.is_none())
            .collect();
        if fitting.is_empty() {
            return Err(SelectError::NoneFits(candidates));
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

/// Checks an annotation line against the source line the program has at `index`.
///
/// The kernel printed it from the `.BTF.ext` line info the loader passed. A program whose line
/// table is DWARF's (an object without `.BTF.ext`) has no text to compare, and its row at a
/// function's first instruction may be the line of the function's `{` where the line info
/// names the declaration before it (clang's record for a function whose first instruction has
/// no line): there the kernel's line may be any up to DWARF's. The file is compared, and
/// elsewhere the line.
fn check_annotation(
    program: &Program<'_, '_>,
    index: u64,
    a: &Annotation<'_>,
) -> Result<(), String> {
    let at = u32::try_from(index).ok();
    let row = at.and_then(|i| program.lines.find(i));
    let Some(row) = row else {
        return Err(format!(
            "an annotation precedes instruction {index}, which has no line record in the program"
        ));
    };
    let dwarf = program.lines.origin() == LineOrigin::Dwarf;
    let function_start = || {
        at.and_then(|i| program.layout.locate(i))
            .is_some_and(|(_, offset)| offset == 0)
    };
    let location_fits = a.location.is_none_or(|(file, line)| {
        file == row.basename() && (line == row.line || dwarf && line < row.line && function_start())
    });
    let text_fits = dwarf || row.trimmed_text() == a.text;
    if !text_fits || !location_fits {
        return Err(format!(
            "annotation '{}' does not match the program's source line for instruction {index} ('{}' @ {}:{})",
            excerpt(a.text),
            excerpt(row.trimmed_text()),
            excerpt(row.basename()),
            row.line
        ));
    }
    Ok(())
}

/// Why an instruction line does not fit a program.
struct Disagreement {
    reason: String,
    /// Whether the line's text may only be garbled (its operands) rather than name another
    /// instruction (its index or opcode): then it may be noise.
    garbled: bool,
}

impl From<String> for Disagreement {
    /// Another instruction than the program's.
    fn from(reason: String) -> Self {
        Disagreement {
            reason,
            garbled: false,
        }
    }
}

/// Checks an instruction line against the program's loaded instruction at its index.
///
/// `decoded` keeps the line's instruction once decoded, for the other candidates.
fn check_insn<'l>(
    program: &Program<'_, '_>,
    line: &InsnLine<'l>,
    decoded: &mut Option<LogInsn<'l>>,
) -> Result<(), Disagreement> {
    let len = program.layout.len;
    let beyond = || {
        Disagreement::from(format!(
            "instruction {} is beyond the program's {len} instructions",
            line.index
        ))
    };
    let index = u32::try_from(line.index)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(beyond)?;
    let Some(object) = program.object() else {
        // Line info from a loader: no instructions to compare.
        return Ok(());
    };
    let insn = object.insn(&program.layout, index).ok_or_else(beyond)?;
    let Some(opcode) = line.opcode else {
        return Ok(());
    };
    if opcode == OP_CALL && is_poison(decoded.get_or_insert_with(|| line.decode())) {
        // libbpf's own replacement of an instruction it could not relocate: the listing of
        // 6.15+ shows it (`fixup_log` rewrites only the lines being verified).
        return Ok(());
    }
    if let Some(id) = object.core_local_type_id(&program.layout, index)
        && opcode == insn.code
        && let LogOp::LoadImm64 { value, .. } = decoded.get_or_insert_with(|| line.decode()).op
        && let Some(printed) = hex_value(value)
        && printed != u64::from(id)
    {
        // `bpf_core_type_id_local()`: the local type's id, the object's own.
        return Err(Disagreement {
            reason: format!(
                "instruction {index} ({opcode:02x}) loads type id {printed}, but the program's local type is {id}"
            ),
            garbled: true,
        });
    }
    if object.has_core_relo(&program.layout, index) {
        // libbpf may have rewritten offset, immediate and even the load size.
        if opcode & 7 != insn.code & 7 {
            return Err(Disagreement::from(format!(
                "instruction {index} is ({opcode:02x}) in the log but ({:02x}) in the program",
                insn.code
            )));
        }
        if let Some(expected) = program.core_offset(index) {
            let decoded = *decoded.get_or_insert_with(|| line.decode());
            if let Some(printed) = core_relocated_value(opcode, &decoded)
                && printed != i64::from(expected)
            {
                let field = object
                    .core_access(&program.layout, index)
                    .map(|a| format!("{} of {}", a.path(), a.root()))
                    .unwrap_or_default();
                return Err(Disagreement {
                    reason: format!(
                        "instruction {index} ({opcode:02x}) has offset {printed}, but the kernel's BTF puts the program's field {field} at {expected}"
                    ),
                    garbled: true,
                });
            }
        }
        return Ok(());
    }
    if opcode != insn.code {
        return Err(Disagreement::from(format!(
            "instruction {index} is ({opcode:02x}) in the log but ({:02x}) in the program",
            insn.code
        )));
    }
    let garbled = |what: String| Disagreement {
        reason: format!("instruction {index} ({opcode:02x}) {what}"),
        garbled: true,
    };
    let decoded = *decoded.get_or_insert_with(|| line.decode());
    check_operands(&insn, &decoded).map_err(garbled)?;
    if let Some(Callee::Pc(off)) = decoded.callee() {
        // A subprogram call lands where a function of the layout starts.
        let target = i64::from(index) + 1 + off;
        if !(program.layout.parts.iter()).any(|p| i64::from(p.start) == target) {
            return Err(garbled(format!(
                "calls pc{off:+} (instruction {target}), where no function of the program starts"
            )));
        }
    }
    let symbol = || object.reloc_symbol(&program.layout, index);
    if insn.code == OP_CALL
        && insn.imm == -1
        && let Some(callee) = decoded.callee()
    {
        // A call the loader relocates: a kfunc (undefined), by its name, or a global function.
        match (callee, symbol()) {
            // A `__weak` kfunc this kernel lacks, left unresolved (`call #0`).
            (callee, Some(RelocSymbol::Undefined(_))) if is_unresolved_kfunc(callee) => {}
            (Callee::Named { name, .. }, Some(RelocSymbol::Undefined(kfunc))) => {
                // libbpf resolves `NAME___flavour` as NAME.
                let kfunc = kfunc.split("___").next().unwrap_or(kfunc);
                if name != kfunc.as_bytes() {
                    return Err(garbled(format!(
                        "calls {}, but the program's instruction calls {}",
                        excerpt(name),
                        excerpt(kfunc.as_bytes())
                    )));
                }
            }
            (Callee::Pc(_), Some(RelocSymbol::Undefined(kfunc))) => {
                return Err(garbled(format!(
                    "calls a subprogram, but the program's instruction calls {}",
                    excerpt(kfunc.as_bytes())
                )));
            }
            (Callee::Named { name, .. }, Some(RelocSymbol::Defined { name: function, .. })) => {
                return Err(garbled(format!(
                    "calls {}, but the program's instruction calls function {}",
                    excerpt(name),
                    excerpt(function.as_bytes())
                )));
            }
            _ => {}
        }
    }
    if let LogOp::LoadImm64 { value, .. } = decoded.op
        && insn.code == OP_LD_IMM64
        && insn.src == 0
        && symbol().is_none()
        && let Some(printed) = hex_value(value)
        && let Some(high) = object.insn(&program.layout, index + 1)
    {
        // A 64-bit constant of the program's own: its two halves.
        let own = u64::from(high.imm as u32) << 32 | u64::from(insn.imm as u32);
        if printed != own {
            return Err(garbled(format!(
                "loads {printed:#x}, but the program's instruction loads {own:#x}"
            )));
        }
    }
    if insn.code == OP_LD_IMM64
        && let Some(printed) = line.map_of(insn.dst)
        && let Some(RelocSymbol::Defined { name, section }) = symbol()
        && !map_named(printed, name, section)
    {
        return Err(garbled(format!(
            "loads map {}, but the program's instruction loads {} (in {})",
            excerpt(printed),
            excerpt(name.as_bytes()),
            excerpt(section.as_bytes())
        )));
    }
    Ok(())
}

/// The value libbpf writes into an instruction for a CO-RE field byte offset, as the log prints
/// it (libbpf's `bpf_core_patch_insn`): a memory access's offset, an ALU operation's
/// immediate, a 64-bit load's value.
fn core_relocated_value(opcode: u8, line: &LogInsn<'_>) -> Option<i64> {
    match opcode::class(opcode) {
        CLASS_LDX | CLASS_ST | CLASS_STX => line.memory().map(|m| m.off),
        CLASS_ALU | CLASS_ALU64 if opcode & SOURCE_REG == 0 => line.immediate(),
        _ if opcode == OP_LD_IMM64 => match line.op {
            LogOp::LoadImm64 { value, .. } => hex_value(value).and_then(|v| i64::try_from(v).ok()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a map the kernel names `printed` is the one a relocation against `symbol` in
/// `section` makes: a map of `.maps` by its symbol, a global variable's by its section
/// (`<object>.bss`, or a custom section's own name, `.data.arr2`), as libbpf names them and
/// the kernel keeps them, in 15 bytes (`BPF_OBJ_NAME_LEN`).
fn map_named(printed: &[u8], symbol: &str, section: &str) -> bool {
    const NAME_MAX: usize = 15;
    if section == ".maps" {
        // A section symbol names no map of its own.
        let symbol = symbol.as_bytes();
        return symbol == section.as_bytes() || printed == symbol.get(..NAME_MAX).unwrap_or(symbol);
    }
    let section = section.as_bytes();
    section.starts_with(printed)
        || memchr::memchr(b'.', printed)
            .is_some_and(|dot| dot > 0 && section.starts_with(&printed[dot..]))
}

/// The value of a 64-bit load as the log prints it (`0x104`), when a number.
fn hex_value(value: &[u8]) -> Option<u64> {
    let digits = std::str::from_utf8(value.strip_prefix(b"0x")?).ok()?;
    u64::from_str_radix(digits, 16).ok()
}

/// libbpf's `POISON_CALL_KFUNC_BASE`: a `__weak` kfunc it found nowhere is called as
/// `call unknown#N` from this number on (libbpf 1.2 and later).
const POISON_CALL_KFUNC_BASE: i64 = 2_002_000_000;

/// Whether a call calls a `__weak` kfunc the loader found nowhere: libbpf's poisoned call
/// (`call unknown#2002000000` on), or the call a libbpf before 1.2 leaves without a BTF id,
/// which the kernel prints `call #0`. The kernel refuses either once every path is verified.
pub(crate) fn is_unresolved_kfunc(callee: Callee<'_>) -> bool {
    match callee {
        Callee::Named { name: b"", id: 0 } => true,
        Callee::Named {
            name: b"unknown",
            id,
        } => id >= POISON_CALL_KFUNC_BASE,
        Callee::Named { .. } | Callee::Pc(_) => false,
    }
}

/// Whether `insn` is a call libbpf writes in place of an instruction it could not relocate:
/// `call unknown#195896080` (0xbad2310, a failed CO-RE relocation) or a number from 2001000000
/// on (a map or a weak kfunc not found: `POISON_LDIMM64_MAP_BASE`, `POISON_CALL_KFUNC_BASE`).
fn is_poison(insn: &LogInsn<'_>) -> bool {
    matches!(insn.callee(), Some(Callee::Named { name: b"unknown", id })
        if id == 0xbad2310 || id >= 2_001_000_000)
}

/// Compares what the log prints of `insn` (decoded in `line`) with its fields: the registers,
/// the memory or jump offset, the immediate of an ALU operation, a store or a conditional jump,
/// and what a call calls (a helper's number; a subprogram for a call the object resolves
/// itself). Relocated values are left out: a 64-bit load's value (a map, a variable, a BTF id:
/// the loader's), a kfunc's BTF id and the offset of a call the loader lays out.
fn check_operands(insn: &Insn, line: &LogInsn<'_>) -> Result<(), String> {
    let class = opcode::class(insn.code);
    let is_call_or_exit = insn.code == OP_CALL || insn.code == OP_EXIT;
    let checks_registers = matches!(
        class,
        CLASS_LDX | CLASS_ST | CLASS_STX | CLASS_ALU | CLASS_ALU64 | CLASS_JMP | CLASS_JMP32
    ) && !is_call_or_exit;
    if checks_registers {
        // Atomic compare-and-exchange uses r0 implicitly.
        let implicit_r0 = class == CLASS_STX && insn.code & MODE_MASK == MODE_ATOMIC;
        for reg in line.registers() {
            if reg != insn.dst && reg != insn.src && !(implicit_r0 && reg == 0) {
                return Err(format!(
                    "names r{reg}, but the program's instruction uses r{} and r{}",
                    insn.dst, insn.src
                ));
            }
        }
        // Each in its place: `if r0 != r2` is not `if r2 != r0`.
        if let Some((dst, src)) = line.fields()
            && (dst != insn.dst || src.is_some_and(|s| s != insn.src))
        {
            return Err(format!(
                "has r{dst}{} where the program's instruction has r{} and r{}",
                src.map(|s| format!(" and r{s}")).unwrap_or_default(),
                insn.dst,
                insn.src
            ));
        }
    }
    if let LogOp::Alu { width: printed, .. } = line.op
        && matches!(class, CLASS_ALU | CLASS_ALU64)
    {
        // A sign-extending move takes its width from the offset (8, 16, 32; 1 is an address
        // space cast, 0 a plain move), a byte swap from the immediate.
        let own = match insn.code & OP_MASK {
            OP_MOV if insn.code & SOURCE_REG != 0 => {
                matches!(insn.off, 8 | 16 | 32).then_some(i64::from(insn.off))
            }
            OP_END => Some(i64::from(insn.imm)),
            _ => None,
        };
        if printed.map(i64::from) != own {
            return Err(format!(
                "has width {} bits, but the program's instruction {}",
                printed.unwrap_or(0),
                own.unwrap_or(0)
            ));
        }
    }
    let printed_off = match class {
        CLASS_LDX | CLASS_ST | CLASS_STX => line.memory().map(|m| m.off),
        // gotol (JMP32 | JA) jumps by its immediate, not its offset.
        CLASS_JMP | CLASS_JMP32 if !is_call_or_exit && insn.code != OP_GOTOL => line.jump_offset(),
        _ => None,
    };
    if let Some(off) = printed_off
        && off != i64::from(insn.off)
    {
        return Err(format!(
            "has offset {off}, but the program's instruction has {}",
            insn.off
        ));
    }
    if let (Some(printed), Some(own)) = (line.immediate(), own_immediate(insn))
        && printed != own
    {
        return Err(format!(
            "has immediate {printed}, but the program's instruction has {own}"
        ));
    }
    if insn.code == OP_CALL {
        check_callee(insn, line.callee())?;
    }
    Ok(())
}

/// The immediate of `insn` as the log prints it, when it is the instruction's own: an ALU
/// operation's with an immediate operand (decimal), a conditional jump's (its 32 bits), a
/// store's (decimal). Not of byte swaps and negations (their immediate is no operand).
fn own_immediate(insn: &Insn) -> Option<i64> {
    let op = insn.code & OP_MASK;
    let immediate_source = insn.code & SOURCE_REG == 0;
    match opcode::class(insn.code) {
        CLASS_ALU | CLASS_ALU64 if immediate_source && op != OP_END && op != OP_NEG => {
            Some(i64::from(insn.imm))
        }
        CLASS_JMP | CLASS_JMP32
            if immediate_source
                && !matches!(op, OP_JA | OP_CALL_BITS | OP_EXIT_BITS | OP_JCOND) =>
        {
            // Printed as `0x%x`.
            Some(i64::from(insn.imm as u32))
        }
        CLASS_ST if insn.code & MODE_MASK == MODE_MEM => Some(i64::from(insn.imm)),
        _ => None,
    }
}

/// Compares a call's callee in the log with the program's call: a helper call (source 0) names
/// its helper's number; a call the object resolves itself (source 1, immediate set) calls a
/// subprogram (`pc+N`, laid out by the loader). A call whose immediate is -1 is relocated by
/// the loader (a kfunc, or a global function): anything goes.
fn check_callee(insn: &Insn, callee: Option<Callee<'_>>) -> Result<(), String> {
    match (insn.src, callee) {
        (0, Some(Callee::Named { id, name })) if id != i64::from(insn.imm) => Err(format!(
            "calls {}#{id}, but the program's instruction calls helper #{}",
            excerpt(name),
            insn.imm
        )),
        (0, Some(Callee::Pc(_))) => Err(format!(
            "calls a subprogram, but the program's instruction calls helper #{}",
            insn.imm
        )),
        (1, Some(Callee::Named { name, .. })) if insn.imm != -1 => Err(format!(
            "calls {}, but the program's instruction calls a subprogram",
            excerpt(name)
        )),
        _ => Ok(()),
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

    /// `check_operands` of a log's instruction text.
    fn operands(insn: &Insn, text: &[u8]) -> Result<(), String> {
        check_operands(insn, &LogInsn::decode(text))
    }

    fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    #[test]
    fn operands_must_agree() {
        let ldx = insn(0x61, 2, 1, 4, 0);
        assert!(operands(&ldx, b"r2 = *(u32 *)(r1 +4)").is_ok());
        assert!(operands(&ldx, b"r3 = *(u32 *)(r1 +4)").is_err());
        assert!(operands(&ldx, b"r2 = *(u32 *)(r1 +8)").is_err());
        let jmp = insn(0x2d, 3, 2, 28, 0);
        assert!(operands(&jmp, b"if r3 > r2 goto pc+28").is_ok());
        assert!(operands(&jmp, b"if r3 > r2 goto pc+27").is_err());
        let call = insn(0x85, 0, 1, 0, 9);
        assert!(operands(&call, b"call pc+7").is_ok());
    }

    #[test]
    fn immediates_must_agree_where_they_are_the_instructions_own() {
        // `r0 = 1` is not `r0 = 0` (test_sk_lookup's lookup_pass and lookup_drop).
        let mov = insn(0xb7, 0, 0, 0, 1);
        assert!(operands(&mov, b"r0 = 1").is_ok());
        assert!(operands(&mov, b"r0 = 0").is_err());
        let add = insn(0x07, 2, 0, 0, -12);
        assert!(operands(&add, b"r2 += -12").is_ok());
        assert!(operands(&add, b"r2 += 12").is_err());
        // A jump prints its immediate's 32 bits in hex.
        let jgt = insn(0x25, 1, 0, 3, -1);
        assert!(operands(&jgt, b"if r1 > 0xffffffff goto pc+3").is_ok());
        assert!(operands(&jgt, b"if r1 > 0xfffffffe goto pc+3").is_err());
        let st = insn(0x62, 10, 0, -4, 7);
        assert!(operands(&st, b"*(u32 *)(r10 -4) = 7").is_ok());
        assert!(operands(&st, b"*(u32 *)(r10 -4) = 8").is_err());
        // A byte swap's immediate is its width, printed in its name.
        assert!(operands(&insn(0xdc, 1, 0, 0, 16), b"r1 = be16 r1").is_ok());
        // A 64-bit load's value is the loader's (a map's address here).
        let ld = insn(0x18, 1, 0, 0, 0);
        assert!(operands(&ld, b"r1 = 0xffff888102b7e000").is_ok());
    }

    #[test]
    fn registers_must_be_in_their_places_and_widths_agree() {
        // verifier_bounds_deduction_non_const: `if r0 != r2` and `if r2 != r0`.
        let jne = insn(0x5d, 0, 2, 1, 0);
        assert!(operands(&jne, b"if r0 != r2 goto pc+1").is_ok());
        assert!(operands(&jne, b"if r2 != r0 goto pc+1").is_err());
        let ldx = insn(0x61, 2, 1, 4, 0);
        assert!(operands(&ldx, b"r1 = *(u32 *)(r2 +4)").is_err());
        // verifier_movsx: `(s8)` and `(s16)`; verifier_bswap: `bswap16` and `bswap32`.
        let movsx = insn(0xbc, 0, 0, 8, 0);
        assert!(operands(&movsx, b"w0 = (s8)w0").is_ok());
        assert!(operands(&movsx, b"w0 = (s16)w0").is_err());
        assert!(operands(&insn(0xbc, 0, 1, 0, 0), b"w0 = (s8)w1").is_err());
        let bswap = insn(0xd7, 0, 0, 0, 16);
        assert!(operands(&bswap, b"r0 = bswap16 r0").is_ok());
        assert!(operands(&bswap, b"r0 = bswap32 r0").is_err());
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

    #[test]
    fn a_helper_call_names_its_helper() {
        let lookup = insn(0x85, 0, 0, 0, 1);
        assert!(operands(&lookup, b"call bpf_map_lookup_elem#1").is_ok());
        assert!(operands(&lookup, b"call bpf_map_update_elem#2").is_err());
        assert!(operands(&lookup, b"call pc+3").is_err());
        // The object's own call of a subprogram; a kfunc's or a global function's, relocated.
        assert!(operands(&insn(0x85, 0, 1, 0, 3), b"call bpf_throw#65988").is_err());
        assert!(operands(&insn(0x85, 0, 1, 0, -1), b"call bpf_throw#65988").is_ok());
        assert!(operands(&insn(0x85, 0, 1, 0, -1), b"call pc+2").is_ok());
    }
}
