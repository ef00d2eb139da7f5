//! The failing path decoded: each instruction's operation (`print_bpf_insn`'s text, decoded by
//! [`PrintedInsn`]) and the state the verifier printed after it (`print_insn_state`: the
//! registers and stack slots it wrote or read, `R6=sock(ref_obj_id=2)`, `fp-8=scalar(id=1)`),
//! decoded once for every walk of one rejected log.

use super::kept::KeptLine;
use bpflog_log::{Line, PrintedInsn, classify};

/// One instruction of the failing path, decoded.
#[derive(Debug, Clone)]
pub(crate) struct PathInsn<'p> {
    /// The instruction index.
    pub(crate) index: u64,
    /// The call frame it was verified in (0: the entry program's).
    pub(crate) frame: usize,
    /// The number of the log line it was read at, as the reader numbers lines.
    pub(crate) read_at: u64,
    /// A comparison of two registers, one of them the packet's end (`if r2 > r3 goto pc+35 ;
    /// R2=pkt(off=14,r=14) R3=pkt_end()`): a bound of the packet pointers.
    pub(crate) packet_check: bool,
    /// The instruction's line as the log prints it (the kernel's part), cut at [`MAX_LINE`](super::kept::MAX_LINE).
    pub(crate) line: &'p [u8],
    /// The instruction's text (`r1 = r0`), without the state after it.
    pub(crate) text: &'p [u8],
    /// The instruction.
    pub(crate) insn: PrintedInsn<'p>,
    /// The line was cut at [`MAX_LINE`](super::kept::MAX_LINE): its state is taken to show nothing, and a register's
    /// `id=` past the cut is not guessed at ([`Decoded::id_at`] stops there).
    pub(crate) cut: bool,
    /// The state printed after it: `(name, value)` of each item (`("R6", "sock(ref_obj_id=2)")`),
    /// liveness marks dropped; empty at log level 1.
    state: Vec<(&'p str, &'p str)>,
    /// The state is every register's, printed on a line of its own after it (Linux 5.10 at
    /// level 2), not only those it wrote: a register it shows need not have changed here.
    pub(crate) full_state: bool,
}

impl<'p> PathInsn<'p> {
    /// Decodes what the path kept of a line (`kept`, its bytes `line`).
    pub(super) fn decode(kept: &KeptLine, line: &'p [u8]) -> Self {
        let kind = classify(line);
        let (text, insn) = match &kind {
            Line::Insn(insn) => (insn.text(), insn.decode()),
            _ => (line, PrintedInsn::decode(line)),
        };
        let state = match std::str::from_utf8(line) {
            Ok(line) if !kept.cut => bpflog_log::state::decode(line, &kind)
                .map(|s| s.regs.iter().map(|r| (r.name, r.value)).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        PathInsn {
            index: kept.index,
            frame: kept.frame,
            read_at: kept.read_at,
            packet_check: kept.packet_check,
            line,
            text,
            insn,
            cut: kept.cut,
            full_state: kept.full_state,
            state,
        }
    }

    /// The instruction's text as a string.
    pub(crate) fn text_string(&self) -> String {
        String::from_utf8_lossy(self.text).into_owned()
    }

    /// What the state after it says of `item` (a register or a stack slot), if it shows it.
    pub(crate) fn shown(&self, item: Item) -> Option<&'p str> {
        (self.state.iter())
            .find(|(name, _)| item.is(name))
            .map(|&(_, value)| value)
    }

    /// The stack slots whose state shows them, with their values.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (i64, &'p str)> + '_ {
        (self.state.iter()).filter_map(|&(name, value)| {
            let off = name.strip_prefix("fp")?.parse().ok()?;
            Some((off, value))
        })
    }
}

/// A register or a stack slot of the frame, as a state names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item {
    /// `R6`.
    Reg(u8),
    /// `fp-8`: a stack slot by its offset from r10.
    Slot(i64),
}

impl Item {
    /// Whether a state's name (`R6`, `fp-8`) is this item's.
    fn is(self, name: &str) -> bool {
        match self {
            Item::Reg(reg) => name
                .strip_prefix('R')
                .and_then(|n| n.parse::<u8>().ok())
                .is_some_and(|n| n == reg),
            Item::Slot(off) => name
                .strip_prefix("fp")
                .and_then(|n| n.parse::<i64>().ok())
                .is_some_and(|n| n == off),
        }
    }
}

/// What a state's value says a register holds (`scalar(...)`, `42`, `P0`: a number; anything
/// else that names a type, `map_value(...)`, `fp-16`, `ctx()`, `sock_or_null(...)`: a pointer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeldValue {
    /// A number.
    Scalar,
    /// A pointer the verifier tracks; `nullable` when it may still be NULL (`_or_null`).
    Pointer {
        /// The pointer may be NULL.
        nullable: bool,
    },
}

impl HeldValue {
    /// What `value` (a state's value) says: read as [`Value`](bpflog_log::state::Value), so
    /// that 5.10's `inv` is a number too.
    pub(crate) fn of(value: &str) -> HeldValue {
        let kind = bpflog_log::state::Value::read(value).kind;
        if kind == "scalar" {
            return HeldValue::Scalar;
        }
        HeldValue::Pointer {
            nullable: kind.contains("or_null"),
        }
    }
}

/// The `id=` inside a state's value (`scalar(id=3,smin=...)`, `sock_or_null(id=2,ref_obj_id=2)`):
/// the number the verifier gives a value and its copies (`ref_obj_id=` is not it).
pub(crate) fn id_in(value: &str) -> Option<u64> {
    let (_, inner) = value.split_once('(')?;
    let inner = inner.rsplit_once(')').map_or(inner, |(inner, _)| inner);
    inner
        .split(',')
        .find_map(|field| field.strip_prefix("id="))
        .and_then(|id| {
            // `id=1+2`: a linked copy with a constant added (`sync_linked_regs`).
            let digits = id.bytes().take_while(u8::is_ascii_digit).count();
            id.get(..digits)?.parse().ok()
        })
}

/// The failing path's instructions, decoded, first kept first.
#[derive(Debug)]
pub(crate) struct Decoded<'p> {
    pub(super) insns: Vec<PathInsn<'p>>,
    /// Instructions of the path were dropped: its first kept instruction is not where it
    /// started.
    pub(crate) cut: bool,
}

/// How far back [`Decoded::value_at`] looks for a state showing an item.
const MAX_STATE_DISTANCE: usize = 256;

impl<'p> Decoded<'p> {
    /// How many instructions it holds.
    pub(crate) fn len(&self) -> usize {
        self.insns.len()
    }

    /// The instruction at position `at` (0: the first kept).
    pub(crate) fn get(&self, at: usize) -> Option<&PathInsn<'p>> {
        self.insns.get(at)
    }

    /// The instructions, first kept first.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, PathInsn<'p>> {
        self.insns.iter()
    }

    /// The first instruction kept.
    pub(crate) fn first(&self) -> Option<&PathInsn<'p>> {
        self.insns.first()
    }

    /// The latest instruction.
    pub(crate) fn last(&self) -> Option<&PathInsn<'p>> {
        self.insns.last()
    }

    /// The latest instruction with index `index`.
    pub(crate) fn last_of(&self, index: u64) -> Option<&PathInsn<'p>> {
        self.insns.iter().rev().find(|i| i.index == index)
    }

    /// What the latest state at or before position `at`, in its frame, says of `item`; `None`
    /// when no state near enough shows it, or a line cut short comes first.
    pub(crate) fn value_at(&self, at: usize, item: Item) -> Option<&'p str> {
        let frame = self.get(at)?.frame;
        for pos in (at.saturating_sub(MAX_STATE_DISTANCE)..=at).rev() {
            let step = self.get(pos)?;
            if step.frame != frame || step.cut {
                return None;
            }
            if let Some(value) = step.shown(item) {
                return Some(value);
            }
        }
        None
    }

    /// The `id=` of `item` at position `at` ([`value_at`](Self::value_at)).
    pub(crate) fn id_at(&self, at: usize, item: Item) -> Option<u64> {
        id_in(self.value_at(at, item)?)
    }

    /// What `item` holds at position `at`, as the latest state says.
    pub(crate) fn held_at(&self, at: usize, item: Item) -> Option<HeldValue> {
        self.value_at(at, item).map(HeldValue::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_state_says_a_register_holds() {
        for scalar in [
            "scalar()",
            "scalar(id=1)",
            "42",
            "-1",
            "P0",
            "Pscalar(umax=7)",
            // Linux 5.10.
            "inv",
            "inv2",
            "invP(id=0,umax_value=3)",
        ] {
            assert_eq!(HeldValue::of(scalar), HeldValue::Scalar, "{scalar}");
        }
        for pointer in [
            "fp-16",
            "ctx()",
            "map_value(map=m,ks=4,vs=8)",
            "pkt(r=0)",
            "mem(sz=4)",
        ] {
            assert_eq!(
                HeldValue::of(pointer),
                HeldValue::Pointer { nullable: false },
                "{pointer}"
            );
        }
        let nullable = "sock_or_null(id=2,ref_obj_id=2)";
        assert_eq!(
            HeldValue::of(nullable),
            HeldValue::Pointer { nullable: true }
        );
        assert_eq!(id_in(nullable), Some(2));
        assert_eq!(id_in("mem(ref_obj_id=2,sz=32)"), None);
        assert_eq!(id_in("scalar(id=3,smin=0)"), Some(3));
        // verifier_iterating_callbacks.check_add_const_3regs: `r2 = r0; r2 += 2`.
        assert_eq!(id_in("scalar(id=1+2,smin=umin=2)"), Some(1));
    }
}
