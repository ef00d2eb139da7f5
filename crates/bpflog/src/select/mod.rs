//! Which program of an object a log belongs to.
//!
//! Every candidate program (each entry program of each object, under each loader's layout) is
//! checked against the log: each instruction line's index must lie inside the program and its
//! opcode, registers and offsets must be those of the loaded instruction there (instructions with a
//! CO-RE relocation are compared by class only, as libbpf may rewrite them, and, when the kernel's
//! BTF is known, by the field byte offset it gives them:
//! [`Program::with_kernel_btf`](crate::Program::with_kernel_btf)); a 64-bit load of a variable or
//! a constant must take the offset into its section the register's state shows
//! (`R1=map_value(map=iters.rodata,ks=4,vs=906,off=25)`), and a subprogram call land where the
//! layout puts the function called; `func#N @START` lines must name the layout's function
//! starts; annotation lines already in the log must be the source line the program has at the
//! next instruction. (Later lines of an instruction are compared by opcode; a
//! first line whose opcode and text fitted the same program in an earlier log of the job is not
//! compared again: see [`crate::checked_insns`].) Candidates that fit are then compared by the
//! annotations they would produce, after those whose function the log shows the verifier
//! stepping into (`caller:` after a `call pc+N` line) is a global one are left out, while
//! another fits: when they agree, any of them serves (real tools ship
//! near-identical twins); when only the loader's layout is in doubt, libbpf's is preferred and the
//! doubt reported; when different programs would annotate differently, or none fits, the caller is
//! told why — never a silent guess.
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

mod check;
mod selector;
mod shared;
mod tracker;

pub(crate) use check::is_unresolved_kfunc;
pub use selector::Selector;
pub use shared::{CoreFields, Shared};

use bpflog_object::{Loader, excerpt_name, excerpt_names};
use std::io;

/// Why a program does not fit a log: the first disagreement found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
