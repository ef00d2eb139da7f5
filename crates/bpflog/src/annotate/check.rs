//! What an annotator checks on the way when its program was not chosen by a first pass: that
//! the log fits the program ([`Check::Fit`]), or the rest of a first pass ([`Check::Plan`]).

use crate::plan::Pending;
use crate::select::Selector;
use crate::sink::Observer;
use bpflog_log::{InsnHead, Line};

/// What an annotator whose program was not chosen by a first pass checks on the way.
pub(super) enum Check<'p, 'o, 'd> {
    Nothing,
    /// That the log fits the program.
    Fit(Selector<'p, 'o, 'd>),
    /// The rest of a first pass over the log, which read it up to the line given.
    Plan(Box<Pending<'p, 'o, 'd>>, u64),
}

/// The checks observe the lines the annotator takes.
impl Observer for Check<'_, '_, '_> {
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

    /// When the check has seen that instruction with that opcode before (see
    /// [`Selector::insn_seen`]) and has nothing more to do with it than count it.
    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, payload: &[u8], line_no: u64) -> bool {
        match self {
            Check::Nothing => true,
            Check::Fit(selector) => Observer::insn_seen(selector, head, payload, line_no),
            Check::Plan(pending, after) => {
                line_no > *after && pending.insn_seen(head, payload, line_no)
            }
        }
    }

    #[inline]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line_no: u64) {
        match self {
            Check::Nothing => {}
            Check::Fit(selector) => Observer::observe(selector, kind, payload, line_no),
            Check::Plan(pending, after) if line_no > *after => {
                pending.observe(kind, payload, line_no);
            }
            Check::Plan(..) => {}
        }
    }
}
