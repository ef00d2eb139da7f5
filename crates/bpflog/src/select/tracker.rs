//! The evidence for one candidate while the log is read: the checks that fitted, the line that
//! did not fit and whether it is noise, the instructions seen and their opcodes.

use super::{Evidence, Mismatch, NOISE_KEPT, NOISE_PER_CHECKS, NOISE_QUIET};
use crate::checked_insns::FittedLines;
use crate::kernel_rule::KernelRule;
use bpflog_log::InsnHead;

/// A line that did not fit a candidate, not yet known to be noise.
#[derive(Debug, Clone)]
pub(super) struct Suspect {
    pub(super) mismatch: Mismatch,
    /// [`Evidence::checked`] with its check counted.
    pub(super) at: u64,
    /// How many checks before it fitted (since the line before it that did not fit).
    pub(super) fitted_before: u64,
}

/// Per-candidate state while the log is read.
pub(super) struct Tracker {
    pub(super) evidence: Evidence,
    /// The last line that did not fit, while fewer than [`NOISE_QUIET`] checks after it are
    /// known to fit (whether they are is worked out at the next line that does not fit, and at
    /// the end: nothing is added to the checks of the lines that do).
    pub(super) suspect: Option<Suspect>,
    /// [`Evidence::checked`] at the last line that did not fit (0: none yet).
    pub(super) last_mismatch: u64,
    pub(super) rule: KernelRule,
    /// The row of the line table the kernel would print before the instruction line compared
    /// last, while another candidate also fits
    /// ([`Selector::refine_classes`](super::Selector::refine_classes)).
    pub(super) inserted: Option<usize>,
    /// For each instruction whose line matched: the opcode printed. Later visits compare the
    /// opcode only, without decoding the instruction again. It grows as far as the log goes (by
    /// half at a time), up to `len`: a table of the whole program made for every log costs a
    /// file of many logs of a large program most of its time.
    pub(super) matched: Vec<Seen>,
    /// The program's length.
    pub(super) len: usize,
    /// Lines that fitted the program, in this log and earlier ones (see
    /// [`crate::checked_insns`]).
    pub(super) checked: FittedLines,
}

/// What a candidate's tracker remembers of one instruction: whether a line of it matched, and
/// with which opcode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Seen {
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
    pub(super) fn disagrees(&mut self, mismatch: Mismatch, garbled: bool) -> bool {
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
    pub(super) fn settle(&mut self) {
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
    pub(super) fn take_noise(&mut self, mismatch: Mismatch) -> bool {
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
    pub(super) fn seen(&self, index: u64) -> Option<Option<u8>> {
        match *self.matched.get(usize::try_from(index).ok()?)? {
            Seen::Not => None,
            Seen::Invalid => Some(None),
            Seen::Opcode(op) => Some(Some(op)),
        }
    }

    /// What `matched` holds for instruction `index` ([`Seen::Not`] past its end).
    #[inline]
    pub(super) fn matched_at(&self, index: u64) -> Seen {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.matched.get(i))
            .map_or(Seen::Not, |&m| m)
    }

    /// Whether instruction `head`, not seen in this log, fitted in an earlier one: then
    /// remembered as seen.
    #[inline(never)]
    pub(super) fn fitted_before(&mut self, head: &InsnHead<'_>) -> bool {
        let fitted = self.checked.fitted_head(head);
        if fitted {
            self.remember(head.index, Some(head.opcode));
        }
        fitted
    }

    pub(super) fn remember(&mut self, index: u64, opcode: Option<u8>) {
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
pub(super) fn merge_seen(into: &mut Vec<Seen>, from: &[Seen]) {
    if into.len() < from.len() {
        into.resize(from.len(), Seen::Not);
    }
    for (a, &b) in into.iter_mut().zip(from) {
        if *a == Seen::Not {
            *a = b;
        }
    }
}
