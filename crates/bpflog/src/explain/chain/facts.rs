//! What a step of the chain found, as data: how a bound was set ([`Narrowing`]), what took a
//! pointer away ([`Invalidation`]), where a value came from. The notes the outputs print are
//! made from these ([`Fact::note`]), and the help reads them.

use bpflog_log::{Callee, Operand};

/// What a step of the chain says of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fact {
    /// A helper or kfunc returns it.
    Returned {
        /// Its name.
        callee: String,
        /// Its prototype says it may return NULL (`RET_PTR_TO_*_OR_NULL`).
        may_null: bool,
    },
    /// A helper returns it as a number, though it is a kernel address (`bpf_get_current_task`):
    /// no pointer the verifier tracks.
    ReturnedAsNumber {
        /// The helper.
        callee: String,
    },
    /// A subprogram whose instructions the path does not show returns it.
    SubprogramReturned,
    /// The frame pointer (`r10`).
    FramePointer,
    /// A constant.
    Constant,
    /// Loaded from memory (not a stack slot the path spilled it to), as a pointer or not known.
    Loaded,
    /// Loaded from memory as a number (a scalar): no pointer the verifier tracks, whatever the
    /// C source casts it to.
    LoadedAsNumber,
    /// A helper passes it to the callback as argument `arg`.
    CallbackArgument {
        /// The helper.
        helper: String,
        /// The argument (1-5).
        arg: u8,
    },
    /// Passed to a BPF-to-BPF call as argument `arg`.
    Passed {
        /// The argument (1-5).
        arg: u8,
    },
    /// A conditional jump that set a bound of it.
    Narrowed(Narrowing),
    /// The last comparison with the packet's end on the path.
    PacketChecked,
    /// An instruction took the pointer it held away.
    Invalidated(Invalidation),
    /// R1 at the program's entry: its context.
    Context,
    /// Argument `arg` of a global function, checked as any caller could pass it.
    GlobalArgument(u8),
    /// A call left R1-R5 unreadable, `reg` among them.
    Clobbered {
        /// The register read.
        reg: u8,
    },
    /// The `bpf_spin_lock` call that took the lock held at the failure.
    LockHeld,
    /// The `bpf_spin_unlock` call that released the lock the failure needs held.
    LockReleased,
    /// A call that opens a region (`bpf_rcu_read_lock`), still open at the failure.
    RegionOpened {
        /// The call.
        opener: String,
    },
}

impl Fact {
    /// The value is a number the program uses as a pointer: loaded from memory as one, or a
    /// kernel address a helper returns as one. Reading what it points to takes
    /// `bpf_probe_read_kernel`.
    pub fn is_number_as_pointer(&self) -> bool {
        matches!(self, Fact::LoadedAsNumber | Fact::ReturnedAsNumber { .. })
    }

    /// The note the outputs print for it.
    pub fn note(&self) -> String {
        match self {
            Fact::Returned { callee, may_null } if *may_null => {
                format!("{callee} returns it, and may return NULL")
            }
            Fact::Returned { callee, .. } => format!("{callee} returns it"),
            Fact::ReturnedAsNumber { callee } => {
                format!("{callee} returns it: an address, as a number (a scalar)")
            }
            Fact::SubprogramReturned => "a subprogram returns it".into(),
            Fact::FramePointer => "the frame pointer: a pointer into the stack".into(),
            Fact::Constant => "a constant".into(),
            Fact::Loaded => "loaded from memory".into(),
            Fact::LoadedAsNumber => "loaded from memory, as a number (a scalar)".into(),
            Fact::CallbackArgument { helper, arg } => {
                format!("{helper} passes it to the callback as argument {arg}")
            }
            Fact::Passed { arg } => format!("as argument {arg}"),
            Fact::Narrowed(n) => n.note(),
            Fact::PacketChecked => "the last comparison with the packet's end on the path".into(),
            Fact::Invalidated(i) => i.note(),
            Fact::Context => "R1 at the program's entry: its context (`ctx`)".into(),
            Fact::GlobalArgument(arg) => format!(
                "argument {arg} of the global function, checked as any caller could pass it (a pointer may be NULL)"
            ),
            Fact::Clobbered { reg } => {
                format!("a call leaves R1-R5 unreadable: R{reg} is not kept across it")
            }
            Fact::LockHeld => "takes the lock held here".into(),
            Fact::LockReleased => "the lock was released here: it is not held after it".into(),
            Fact::RegionOpened { opener } => format!("{opener} opens the region, still open here"),
        }
    }
}

/// A comparison of a conditional jump (`if r1 > 0x8 goto ...`), as the log prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `s>`
    SGt,
    /// `s>=`
    SGe,
    /// `s<`
    SLt,
    /// `s<=`
    SLe,
    /// `&`: some bit set.
    Set,
    /// No bit of the mask set: `&` not taken.
    Clear,
}

impl Cmp {
    /// The comparison of an operator as the log prints it.
    pub fn parse(op: &[u8]) -> Option<Cmp> {
        Some(match op {
            b"==" => Cmp::Eq,
            b"!=" => Cmp::Ne,
            b">" => Cmp::Gt,
            b">=" => Cmp::Ge,
            b"<" => Cmp::Lt,
            b"<=" => Cmp::Le,
            b"s>" => Cmp::SGt,
            b"s>=" => Cmp::SGe,
            b"s<" => Cmp::SLt,
            b"s<=" => Cmp::SLe,
            b"&" => Cmp::Set,
            _ => return None,
        })
    }

    /// The operator as C writes it (`s>` as `>`: signedness is the operands' type).
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Gt | Cmp::SGt => ">",
            Cmp::Ge | Cmp::SGe => ">=",
            Cmp::Lt | Cmp::SLt => "<",
            Cmp::Le | Cmp::SLe => "<=",
            Cmp::Set => "&",
            Cmp::Clear => "& ... == 0",
        }
    }

    /// The operator as the log prints it (`s<=`).
    pub fn printed(self) -> &'static str {
        match self {
            Cmp::SGt => "s>",
            Cmp::SGe => "s>=",
            Cmp::SLt => "s<",
            Cmp::SLe => "s<=",
            other => other.as_str(),
        }
    }

    /// What holds where the jump is not taken.
    pub fn negated(self) -> Cmp {
        match self {
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
            Cmp::Gt => Cmp::Le,
            Cmp::Le => Cmp::Gt,
            Cmp::Ge => Cmp::Lt,
            Cmp::Lt => Cmp::Ge,
            Cmp::SGt => Cmp::SLe,
            Cmp::SLe => Cmp::SGt,
            Cmp::SGe => Cmp::SLt,
            Cmp::SLt => Cmp::SGe,
            Cmp::Set => Cmp::Clear,
            Cmp::Clear => Cmp::Set,
        }
    }

    /// The same comparison with its operands swapped (`a > b` is `b < a`).
    pub fn swapped(self) -> Cmp {
        match self {
            Cmp::Gt => Cmp::Lt,
            Cmp::Lt => Cmp::Gt,
            Cmp::Ge => Cmp::Le,
            Cmp::Le => Cmp::Ge,
            Cmp::SGt => Cmp::SLt,
            Cmp::SLt => Cmp::SGt,
            Cmp::SGe => Cmp::SLe,
            Cmp::SLe => Cmp::SGe,
            other => other,
        }
    }

    /// Whether it compares as signed numbers.
    pub fn signed(self) -> bool {
        matches!(self, Cmp::SGt | Cmp::SGe | Cmp::SLt | Cmp::SLe)
    }
}

/// What a register is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A constant.
    Imm(i64),
    /// Another register, and its value where the state shows it is a known number.
    Reg {
        /// The register.
        reg: u8,
        /// Its value, when known.
        value: Option<i64>,
    },
}

impl Bound {
    /// The bound's value, when it is a known number.
    pub fn value(self) -> Option<i64> {
        match self {
            Bound::Imm(n) => Some(n),
            Bound::Reg { value, .. } => value,
        }
    }

    /// The operand of a jump as a bound (`value`: a register's known number).
    pub(crate) fn of(operand: Operand, value: Option<i64>) -> Bound {
        match operand {
            Operand::Imm(n) => Bound::Imm(n),
            Operand::Reg(r) => Bound::Reg { reg: r.num, value },
        }
    }
}

/// How the jump's register relates to the value followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Via {
    /// The jump tests the value's register itself.
    Itself,
    /// A copy sharing its `id=` in the states (`sync_linked_regs` bounds both).
    Linked(u64),
    /// A plain copy made by instruction `at`, neither written since (level 1).
    Copy(u64),
}

/// A conditional jump that set a bound of the value followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Narrowing {
    /// The register the jump tests.
    pub tested: u8,
    /// The register followed back (the value's, at the jump); `None` when the value is in a
    /// stack slot there (spilled, and filled again later).
    pub followed: Option<u8>,
    /// How the two relate.
    pub via: Via,
    /// The comparison as printed, the tested register on its left.
    pub op: Cmp,
    /// What it is compared with.
    pub bound: Bound,
    /// The path took the jump (else it fell through).
    pub taken: bool,
}

impl Narrowing {
    /// What holds of the tested register on the path: the comparison, negated where the jump
    /// was not taken.
    pub fn holds(&self) -> Cmp {
        if self.taken {
            self.op
        } else {
            self.op.negated()
        }
    }

    /// The largest value the path lets the tested register reach, when the check gives one
    /// (`<= 8` or `< 9`: 8).
    pub fn max(&self) -> Option<i64> {
        let n = self.bound.value()?;
        match self.holds() {
            Cmp::Le | Cmp::SLe | Cmp::Eq => Some(n),
            Cmp::Lt | Cmp::SLt => n.checked_sub(1),
            _ => None,
        }
    }

    /// The help's words for it, `test` naming the check (``the test `if r1 > 0x8 goto pc+5`
    /// (prog.c:12: `...`)``): what it lets through, and the comparison that keeps the value
    /// below the bound.
    pub fn advice(&self, test: &str) -> String {
        let reg = self.tested;
        let holds = self.holds();
        match (self.max(), holds) {
            (Some(max), Cmp::Le | Cmp::SLe) => {
                // `if r1 > 8 goto out` fallen through, or `if r1 <= 8 goto in` taken.
                let better = if self.taken { "<" } else { ">=" };
                let signed = if holds.signed() {
                    "; it compares as signed numbers, so a negative value passes too"
                } else {
                    ""
                };
                format!(
                    "{test} lets R{reg} reach {max}: where it compares with `{}`, use `{better}` so that {max} is refused{signed}",
                    self.op.as_str()
                )
            }
            (Some(max), _) if holds.signed() => format!(
                "{test} lets R{reg} reach {max} but compares as signed numbers: a negative value passes; compare it as unsigned, or also check that it is not negative"
            ),
            (Some(max), _) => format!("{test} lets R{reg} reach {max}"),
            (None, _) if holds.signed() => format!(
                "{test} compares as signed numbers: a negative value passes; compare it as unsigned, or also check that it is not negative"
            ),
            (None, _) => format!("{test} sets no upper bound the access can use"),
        }
    }

    /// The note the outputs print.
    fn note(&self) -> String {
        let Narrowing {
            tested, followed, ..
        } = *self;
        let test = match self.via {
            Via::Itself => format!("the last test of R{tested}"),
            Via::Linked(id) => match followed {
                Some(r) => format!("the last test of R{tested}, linked to R{r} (id={id})"),
                None => {
                    format!("the last test of R{tested}, linked to the spilled value (id={id})")
                }
            },
            Via::Copy(at) => format!(
                "the last test of R{tested}, a copy of R{} (instruction {at})",
                followed.unwrap_or(tested)
            ),
        };
        let bound = match self.bound {
            Bound::Imm(n) => n.to_string(),
            Bound::Reg {
                reg,
                value: Some(n),
            } => format!("R{reg} ({n})"),
            Bound::Reg { reg, value: None } => format!("R{reg}"),
        };
        let branch = if self.taken { "taken" } else { "not taken" };
        format!(
            "{test}: on this path ({branch}) R{tested} {} {bound}",
            self.holds().printed()
        )
    }
}

/// What took away the pointer a register held, without writing the register.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Invalidation {
    /// A call that releases the reference the pointer was of (`bpf_sk_release`, `bpf_obj_drop`,
    /// `bpf_ringbuf_submit`, an iterator's `_destroy`).
    Release(String),
    /// A call that releases a lock (`bpf_spin_unlock`): references that do not own their object
    /// end with it.
    Unlock(String),
    /// A call that hands an object to a collection (`bpf_list_push_back_impl`,
    /// `bpf_rbtree_add_impl`): the program keeps a reference that does not own it.
    Owned(String),
    /// A helper that may change the packet's data (the kernel's
    /// `bpf_helper_changes_pkt_data`): every pointer into the packet ends.
    PacketChange(String),
    /// A call of a global function, which may change the packet's data.
    GlobalFunction,
    /// A tail call, which may change the packet's data.
    TailCall,
    /// A write to the stack slot of the dynptr or iterator the pointer was taken from
    /// (`fp-16`: its offset from r10; `at`: the instruction, when a call wrote it).
    SlotOverwritten {
        /// The slot's offset from r10 (of the frame that writes it).
        slot: i64,
        /// The call that wrote it, when one did.
        by: Option<String>,
    },
}

impl Invalidation {
    /// The helper or kfunc that did it, when a named call did (a tail call's is
    /// `bpf_tail_call`).
    pub fn callee(&self) -> Option<&str> {
        match self {
            Invalidation::Release(name)
            | Invalidation::Unlock(name)
            | Invalidation::Owned(name)
            | Invalidation::PacketChange(name) => Some(name),
            Invalidation::SlotOverwritten { by, .. } => by.as_deref(),
            Invalidation::TailCall => Some("bpf_tail_call"),
            Invalidation::GlobalFunction => None,
        }
    }

    /// What a call does to the pointers the program holds, by its callee.
    pub(crate) fn of_call(callee: Callee<'_>) -> Option<Invalidation> {
        let name = match callee {
            Callee::Pc(_) => return None,
            Callee::Named { name, .. } => String::from_utf8_lossy(name).into_owned(),
        };
        let n = name.as_str();
        if n == "bpf_tail_call" {
            return Some(Invalidation::TailCall);
        }
        if PACKET_CHANGES.contains(&n) {
            return Some(Invalidation::PacketChange(name));
        }
        if matches!(n, "bpf_spin_unlock" | "bpf_res_spin_unlock") {
            return Some(Invalidation::Unlock(name));
        }
        let release = RELEASES.contains(&n)
            || n.ends_with("_release")
            || n.ends_with("_drop_impl")
            || (n.starts_with("bpf_iter_") && n.ends_with("_destroy"));
        release.then_some(Invalidation::Release(name))
    }

    /// The note the outputs print.
    fn note(&self) -> String {
        match self {
            Invalidation::Release(name) => {
                format!("{name} releases the reference: pointers to its object are no longer valid")
            }
            Invalidation::Unlock(name) => format!(
                "{name} releases the lock: references that do not own their object (after a push or add) are no longer valid"
            ),
            Invalidation::Owned(name) => format!(
                "{name} hands the object to the collection, which owns it now: the program keeps a reference that does not own it, valid until the lock is released"
            ),
            Invalidation::PacketChange(name) => format!(
                "{name} may change the packet's data: every pointer into the packet is no longer valid; check the bounds again after it"
            ),
            Invalidation::GlobalFunction => "a global function may change the packet's data: every pointer into the packet is no longer valid; load ctx->data again after it".into(),
            Invalidation::TailCall => "a tail call may change the packet's data: every pointer into the packet is no longer valid; load ctx->data again after it".into(),
            Invalidation::SlotOverwritten { slot, by: Some(call) } => format!(
                "{call} writes fp{slot}, the dynptr or iterator the pointer was taken from: its slices are no longer valid"
            ),
            Invalidation::SlotOverwritten { slot, by: None } => format!(
                "writes fp{slot}, the dynptr or iterator the pointer was taken from: its slices are no longer valid"
            ),
        }
    }
}

/// Helpers that may change the packet's data, as the log names them: the kernel's
/// `bpf_helper_changes_pkt_data` (net/core/filter.c), and `bpf_dynptr_write`, which through a
/// dynptr of the packet invalidates its slices.
const PACKET_CHANGES: &[&str] = &[
    "bpf_dynptr_write",
    "bpf_store_hdr_opt",
    "bpf_skb_vlan_push",
    "bpf_skb_vlan_pop",
    "bpf_skb_store_bytes",
    "bpf_skb_change_proto",
    "bpf_skb_change_head",
    "bpf_skb_change_tail",
    "bpf_skb_adjust_room",
    "bpf_skb_pull_data",
    "bpf_clone_redirect",
    "bpf_l3_csum_replace",
    "bpf_l4_csum_replace",
    "bpf_xdp_adjust_head",
    "bpf_xdp_adjust_meta",
    "bpf_xdp_adjust_tail",
    "bpf_msg_pull_data",
    "bpf_msg_push_data",
    "bpf_msg_pop_data",
    "bpf_lwt_push_encap",
    "bpf_lwt_seg6_store_bytes",
    "bpf_lwt_seg6_adjust_srh",
    "bpf_lwt_seg6_action",
];

/// Calls that release a reference, besides the `_release`, `_drop_impl` and iterators'
/// `_destroy` kfuncs: the helpers whose argument is `OBJ_RELEASE`, the kfuncs that take an
/// owning reference into a collection, and `bpf_key_put`, `bpf_put_file`.
const RELEASES: &[&str] = &[
    "bpf_sk_release",
    "bpf_ringbuf_submit",
    "bpf_ringbuf_discard",
    "bpf_ringbuf_submit_dynptr",
    "bpf_ringbuf_discard_dynptr",
    "bpf_list_push_front_impl",
    "bpf_list_push_back_impl",
    "bpf_rbtree_add_impl",
    "bpf_key_put",
    "bpf_put_file",
];

/// Helpers that return a kernel address as a number (`RET_INTEGER`): a pointer cast from it is
/// no pointer the verifier tracks.
pub(crate) fn returns_address_as_number(name: &[u8]) -> bool {
    name == b"bpf_get_current_task"
}

/// Helpers whose result may be NULL, as their prototypes say (`RET_PTR_TO_*_OR_NULL`).
pub(crate) fn may_return_null(name: &[u8]) -> bool {
    name.ends_with(b"lookup_elem")
        || name.starts_with(b"bpf_sk_lookup")
        || name.starts_with(b"bpf_skc_lookup")
        || name.starts_with(b"bpf_ringbuf_reserve")
        || name.ends_with(b"_storage_get")
        || name.starts_with(b"bpf_get_listener_sock")
        || name.starts_with(b"bpf_sk_fullsock")
        || name.starts_with(b"bpf_tcp_sock")
        || name.starts_with(b"bpf_skc_to_")
        || name.starts_with(b"bpf_dynptr_data")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `if r1 > 0x8 goto error` fallen through lets R1 reach 8: `>=` refuses it.
    #[test]
    fn what_a_check_lets_through() {
        let n = Narrowing {
            tested: 1,
            followed: Some(1),
            via: Via::Itself,
            op: Cmp::Gt,
            bound: Bound::Imm(8),
            taken: false,
        };
        assert_eq!((n.holds(), n.max()), (Cmp::Le, Some(8)));
        assert_eq!(
            n.advice("the test at a.c:7"),
            "the test at a.c:7 lets R1 reach 8: where it compares with `>`, use `>=` so that 8 is refused"
        );
        // `if r1 < 8 goto ok`, taken: 7 at most.
        let n = Narrowing {
            op: Cmp::Lt,
            taken: true,
            ..n
        };
        assert_eq!(n.max(), Some(7));
        // Signed: a negative value passes.
        let n = Narrowing {
            op: Cmp::SGt,
            taken: false,
            ..n
        };
        assert!(
            n.advice("a.c:7").contains("signed"),
            "{}",
            n.advice("a.c:7")
        );
    }

    #[test]
    fn calls_that_invalidate() {
        let named = |name: &'static str| Callee::Named {
            name: name.as_bytes(),
            id: 0,
        };
        assert_eq!(
            Invalidation::of_call(named("bpf_sk_release")),
            Some(Invalidation::Release("bpf_sk_release".into()))
        );
        assert_eq!(
            Invalidation::of_call(named("bpf_iter_num_destroy")),
            Some(Invalidation::Release("bpf_iter_num_destroy".into()))
        );
        assert_eq!(
            Invalidation::of_call(named("bpf_skb_pull_data")),
            Some(Invalidation::PacketChange("bpf_skb_pull_data".into()))
        );
        assert_eq!(
            Invalidation::of_call(named("bpf_tail_call")),
            Some(Invalidation::TailCall)
        );
        assert_eq!(Invalidation::of_call(named("bpf_map_lookup_elem")), None);
        assert_eq!(Invalidation::of_call(Callee::Pc(3)), None);
    }
}
