//! Searches of the decoded path beside the walk: a write a branch skipped, the call that
//! clobbered or invalidated a register, the call that opened a region, copies linked by `id=`.

use super::decoded::{Decoded, HeldValue, Item, PathInsn};
use super::facts::{Fact, Invalidation};
use super::{FoundStep, Role};
use bpflog_log::{Callee, Op, Operand};

/// The latest branch of the failing path that jumped over one of `writes` (instruction indices
/// of the failing function that write what the failure read, a stack slot or a register, in
/// ascending order): the branch's position on the path and the first write it skipped. Only
/// jumps within the failing instruction's frame count, and a write the path went through is no
/// answer.
///
/// The path is read twice, whatever the number of writes: once for the instructions it went
/// through in the frame, once back from the failure for its jumps, each looked up among the
/// writes left by a binary search.
pub(crate) fn skipped_write<'d, 'p>(
    path: &'d Decoded<'p>,
    writes: &[u64],
) -> Option<(&'d PathInsn<'p>, u64)> {
    let frame = path.last()?.frame;
    let on_path: std::collections::HashSet<u64> = (path.iter())
        .filter(|i| i.frame == frame)
        .inspect(|_| count_work(1))
        .map(|i| i.index)
        .collect();
    let mut free: Vec<u64> = (writes.iter().copied())
        .filter(|w| !on_path.contains(w))
        .collect();
    free.sort_unstable();
    let mut later = path.last()?;
    for step in path.iter().rev().skip(1) {
        count_work(1);
        if step.frame < frame {
            return None;
        }
        // A jump forward, over the instructions between.
        if step.frame == frame && later.frame == frame && later.index > step.index + 1 {
            let next = free.partition_point(|&w| w <= step.index);
            if let Some(&w) = free.get(next).filter(|&&w| w < later.index) {
                return Some((step, w));
            }
        }
        later = step;
    }
    None
}

/// Counts `n` steps of work of [`skipped_write`] on this thread, for the tests (nothing
/// otherwise).
#[inline(always)]
fn count_work(n: u64) {
    #[cfg(test)]
    super::tests::WORK.with(|w| w.set(w.get() + n));
    let _ = n;
}

/// For a register read before it was written (`R2 !read_ok`): the call on the path that
/// clobbered it (a call leaves R1-R5 unreadable), if nothing wrote it since, in its frame.
pub(crate) fn clobbered_by(path: &Decoded<'_>, reg: u8) -> Option<FoundStep> {
    if !(1..=5).contains(&reg) {
        return None;
    }
    let mut insns = path.iter().rev();
    let frame = insns.next()?.frame;
    for step in insns {
        if step.frame > frame {
            continue;
        }
        if step.frame < frame {
            return None;
        }
        if matches!(step.insn.op, Op::Call(_)) {
            return Some(FoundStep::new(
                step,
                Role::Origin,
                Some(Fact::Clobbered { reg }),
            ));
        }
        if step.insn.defines().is_some_and(|r| r.num == reg) {
            return None;
        }
    }
    None
}

/// For a rule of a region broken (`BPF_EXIT instruction in main prog cannot be used inside
/// bpf_rcu_read_lock-ed region`): the call to `opener` that opened the region still open, in any
/// frame. Regions nest, and a close ends the latest one still open: walking back from the
/// failure, each call to the closer (`bpf_rcu_read_unlock` for `bpf_rcu_read_lock`) stands for
/// one call to `opener` before it, and the first call to `opener` left over opened the region.
pub(crate) fn opened_by(path: &Decoded<'_>, opener: &str) -> Option<FoundStep> {
    let closer = region_closer(opener);
    let mut closed = 0usize;
    // The failing instruction opened nothing it breaks the rule of (a second `bpf_spin_lock`).
    path.iter().rev().skip(1).find_map(|step| {
        let Op::Call(Callee::Named { name, .. }) = step.insn.op else {
            return None;
        };
        if closer.is_some_and(|closer| name == closer.as_bytes()) {
            closed += 1;
            return None;
        }
        if name != opener.as_bytes() {
            return None;
        }
        if closed > 0 {
            closed -= 1;
            return None;
        }
        let fact = Fact::RegionOpened {
            opener: opener.to_owned(),
        };
        Some(FoundStep::new(step, Role::Origin, Some(fact)))
    })
}

/// For a rule of `bpf_spin_lock` broken: the call that took the lock held at the failing
/// instruction (the path's last), if one is held: the latest `bpf_spin_lock` before it with no
/// `bpf_spin_unlock` after it (the verifier lets a program hold one lock at a time); when none
/// is held, the `bpf_spin_unlock` that released the latest one taken on the path.
pub(crate) fn held_lock(path: &Decoded<'_>) -> Option<FoundStep> {
    path.iter()
        .rev()
        .skip(1)
        .find_map(|step| match step.insn.op {
            Op::Call(Callee::Named { name, .. }) if name == b"bpf_spin_lock" => Some((step, true)),
            Op::Call(Callee::Named { name, .. }) if name == b"bpf_spin_unlock" => {
                Some((step, false))
            }
            _ => None,
        })
        .map(|(step, held)| {
            let fact = if held {
                Fact::LockHeld
            } else {
                Fact::LockReleased
            };
            FoundStep::new(step, Role::Origin, Some(fact))
        })
}

/// The latest call on the path to a kfunc the loader left unresolved
/// ([`is_unresolved_kfunc`](crate::select::is_unresolved_kfunc)). The kernel refuses such a call
/// only once every path is verified (`invalid kernel function call not eliminated in verifier
/// pass`), after the last instruction it printed.
pub(crate) fn unresolved_call<'d, 'p>(path: &'d Decoded<'p>) -> Option<&'d PathInsn<'p>> {
    path.iter().rev().find(|step| {
        matches!(step.insn.op,
            Op::Call(callee) if crate::select::is_unresolved_kfunc(callee))
    })
}

/// The call that closes a region `opener` opens (the kernel's pairs; `None` for another name:
/// then no call is taken to close it).
fn region_closer(opener: &str) -> Option<&'static str> {
    Some(match opener {
        "bpf_rcu_read_lock" => "bpf_rcu_read_unlock",
        "bpf_preempt_disable" => "bpf_preempt_enable",
        "bpf_spin_lock" => "bpf_spin_unlock",
        "bpf_res_spin_lock" => "bpf_res_spin_unlock",
        "bpf_local_irq_save" => "bpf_local_irq_restore",
        _ => return None,
    })
}

/// How far back [`copy_of`] looks for the copy.
const MAX_COPY_DISTANCE: usize = 64;

/// The index of the instruction `copy = original` before position `at` of `path`, in its
/// frame, with neither register written in between: `copy` then holds a linked copy of
/// `original` at `at`.
pub(super) fn copy_of(path: &Decoded<'_>, at: usize, copy: u8, original: u8) -> Option<u64> {
    let frame = path.get(at)?.frame;
    for pos in (at.saturating_sub(MAX_COPY_DISTANCE)..at).rev() {
        let step = path.get(pos)?;
        if step.frame != frame {
            return None;
        }
        let insn = step.insn;
        if let Op::Alu {
            dst,
            op: b"=",
            src: Some(Operand::Reg(src)),
            ..
        } = insn.op
            && dst.num == copy
            && src.num == original
            && dst.wide
            && src.wide
        {
            return Some(step.index);
        }
        let written = insn.defines().map(|r| r.num);
        if written == Some(copy) || written == Some(original) || matches!(insn.op, Op::Call(_)) {
            return None;
        }
    }
    None
}

/// A register of the jump at position `at` of `path` (`tested`) linked to `value` (a register
/// or a stack slot) by the states' ids: `(tested, id)`.
pub(super) fn linked_test(
    path: &Decoded<'_>,
    at: usize,
    tested: [Option<u8>; 2],
    value: Item,
) -> Option<(u8, u64)> {
    let id = path.id_at(at, value)?;
    tested
        .into_iter()
        .flatten()
        .filter(|&t| Item::Reg(t) != value)
        .find(|&t| path.id_at(at, Item::Reg(t)) == Some(id))
        .map(|t| (t, id))
}

/// For a register the error says holds `held` at the failure (position `failed`), which the
/// path's states last showed holding a pointer that cannot be NULL, with no write to it since:
/// the instruction that took the pointer away, latest first, and what it was (a release, an
/// unlock, a change of the packet's data, a write to the dynptr's or iterator's slot).
///
/// At log level 1, with no states, only a release whose R1 the path shows coming from the
/// register's own origin is taken.
pub(super) fn invalidated(
    path: &Decoded<'_>,
    failed: usize,
    reg: u8,
    held: HeldValue,
) -> Option<(usize, Invalidation)> {
    if held == (HeldValue::Pointer { nullable: false }) {
        return None;
    }
    let frame = path.get(failed)?.frame;
    let slots = dynptr_slots(path, failed, frame);
    let mut latest: Option<(usize, Invalidation)> = None;
    for pos in (0..failed).rev() {
        let step = path.get(pos)?;
        if step.frame < frame {
            return None;
        }
        // A conditional jump's state is of the branch that falls through, not always the path's.
        let jump = matches!(step.insn.op, Op::Jump { cond: Some(_), .. });
        if step.frame == frame && !jump {
            let writes = step.insn.defines().is_some_and(|r| r.num == reg)
                || (reg <= 5 && matches!(step.insn.op, Op::Call(_)));
            // A full state shows the register whether or not this step changed it.
            let shown = step
                .shown(Item::Reg(reg))
                .filter(|_| writes || !step.full_state);
            if let Some(value) = shown {
                let was = HeldValue::of(value);
                let lost = matches!(was, HeldValue::Pointer { .. }) && was != held;
                return latest.filter(|_| lost);
            }
            if writes {
                // Written here, and no state says what: level 1.
                let (at, by) = latest?;
                let release = matches!(by, Invalidation::Release(_));
                return (release && same_origin(path, (at, 1), (failed, reg))).then_some((at, by));
            }
        }
        if latest.is_none() {
            latest = invalidation_at(path, pos, frame, &slots).map(|i| (pos, i));
        }
    }
    None
}

/// For a register passed at the failure (position `failed`) holding a reference that no
/// longer owns its object, or a number that was one: the step that took the ownership or the
/// reference away, followed back through the register's copies in its frame. A push or add
/// (`bpf_list_push_back_impl`, `bpf_rbtree_add_impl`) between a state of the value owning
/// its object and a later one of it not owning it (`non_own_ref`) hands the object to the
/// collection; a `bpf_spin_unlock` between a state of it not owning and a later one of a
/// number ends the non-owning reference.
pub(super) fn ownership_lost(
    path: &Decoded<'_>,
    failed: usize,
    mut reg: u8,
) -> Option<(usize, Invalidation)> {
    /// What a state's value says of the object's ownership.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Own {
        Owning,
        NonOwning,
        Number,
    }
    let own = |value: &str| match HeldValue::of(value) {
        HeldValue::Scalar => Own::Number,
        HeldValue::Pointer { .. } if value.contains("non_own_ref") => Own::NonOwning,
        HeldValue::Pointer { .. } if value.contains("ref_obj_id=") => Own::Owning,
        HeldValue::Pointer { .. } => Own::NonOwning,
    };
    let frame = path.get(failed)?.frame;
    // The latest state of the value seen going back, and the calls since it.
    let mut later: Option<Own> = None;
    let mut taker: Option<(usize, String)> = None;
    let mut unlock: Option<(usize, String)> = None;
    for pos in (0..failed).rev() {
        let step = path.get(pos)?;
        if step.frame < frame {
            return None;
        }
        if let Op::Call(Callee::Named { name, .. }) = step.insn.op {
            let name = String::from_utf8_lossy(name);
            if matches!(
                &*name,
                "bpf_list_push_front_impl" | "bpf_list_push_back_impl" | "bpf_rbtree_add_impl"
            ) {
                taker.get_or_insert((pos, name.into_owned()));
            } else if matches!(&*name, "bpf_spin_unlock" | "bpf_res_spin_unlock") {
                unlock.get_or_insert((pos, name.into_owned()));
            }
        }
        if step.frame != frame {
            continue;
        }
        let shown = step.shown(Item::Reg(reg)).map(own);
        if let (Some(then), Some(now)) = (shown, later) {
            match (then, now) {
                (Own::Owning, Own::NonOwning | Own::Number) => {
                    return taker.map(|(at, name)| (at, Invalidation::Owned(name)));
                }
                (Own::NonOwning, Own::Number) => {
                    return unlock.map(|(at, name)| (at, Invalidation::Unlock(name)));
                }
                _ => {}
            }
        }
        if shown.is_some() {
            later = shown;
            (taker, unlock) = (None, None);
        }
        match step.insn.op {
            // A copy: the value was the source's before it.
            Op::Alu {
                dst,
                op: b"=",
                src: Some(Operand::Reg(src)),
                ..
            } if dst.num == reg && dst.wide && src.wide => reg = src.num,
            _ if step.insn.defines().is_some_and(|r| r.num == reg) => return None,
            _ => {}
        }
    }
    None
}

/// For a dynptr argument that is not initialised at the failure (position `failed`), which
/// register `reg` points to (`R1=fp-16`): the latest step before it in the failing frame that
/// took the dynptr away, after the latest state that shows it: a store into its 16 bytes
/// (`BPF_DYNPTR_SIZE`), or a release of its record through it or through a clone of it (a
/// dynptr whose state shows the same `ref_id=`), which ends every clone.
pub(crate) fn dynptr_lost(path: &Decoded<'_>, failed: usize, reg: u8) -> Option<FoundStep> {
    let frame = path.get(failed)?.frame;
    let slot = stack_address(path, failed, reg)?;
    let ref_id = |value: &str| -> Option<u64> {
        let (_, after) = value.split_once("ref_id=")?;
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        after[..digits].parse().ok()
    };
    let is_dynptr = |value: &str| value.starts_with("dynptr");
    // The record the dynptr was of, as the latest state showing it says (none of a local
    // dynptr, or when no state shows it).
    let record = (path.iter().take(failed).rev())
        .filter(|step| step.frame == frame)
        .find_map(|step| {
            let (_, value) = step.slots().find(|&(s, v)| s == slot && is_dynptr(v))?;
            ref_id(value)
        });
    // A dynptr was there: a state shows it, or a dynptr's call took the slot's address.
    let was_dynptr = (path.iter().enumerate().take(failed))
        .filter(|(_, step)| step.frame == frame)
        .any(|(pos, step)| {
            step.slots().any(|(s, v)| s == slot && is_dynptr(v))
                || matches!(step.insn.op, Op::Call(Callee::Named { name, .. })
                    if name.windows(6).any(|w| w == b"dynptr")
                        && (1..=5u8).any(|arg| stack_address(path, pos, arg) == Some(slot)))
        });
    if !was_dynptr {
        return None;
    }
    for pos in (0..failed).rev() {
        let step = path.get(pos)?;
        if step.frame < frame {
            return None;
        }
        if step.frame != frame {
            continue;
        }
        match step.insn.op {
            Op::Store { mem, .. }
                if mem
                    .stack_slot()
                    .is_some_and(|at| slot <= at && at < slot + 16) =>
            {
                let by = Invalidation::SlotOverwritten { slot, by: None };
                return Some(FoundStep::new(
                    step,
                    Role::Invalidated,
                    Some(Fact::Invalidated(by)),
                ));
            }
            Op::Call(callee @ Callee::Named { .. }) => {
                let released = stack_address(path, pos, 1).is_some_and(|through| {
                    through == slot
                        || record.is_some_and(|record| {
                            path.value_at(pos.saturating_sub(1), Item::Slot(through))
                                .is_some_and(|v| is_dynptr(v) && ref_id(v) == Some(record))
                        })
                });
                if let Some(by @ Invalidation::Release(_)) = Invalidation::of_call(callee)
                    && released
                {
                    return Some(FoundStep::new(
                        step,
                        Role::Invalidated,
                        Some(Fact::Invalidated(by)),
                    ));
                }
            }
            _ => {}
        }
        if step.slots().any(|(s, v)| s == slot && is_dynptr(v)) {
            return None;
        }
    }
    None
}

/// What the instruction at `pos` takes away from the pointers of frame `frame`, if anything: a
/// call (in the frame or a callee's), a global function's call, or a write to one of `slots`,
/// the stack slots holding a dynptr or an iterator ([`dynptr_slots`]): a store, or a call that
/// builds a new one there.
fn invalidation_at(
    path: &Decoded<'_>,
    pos: usize,
    frame: usize,
    slots: &[(i64, &str)],
) -> Option<Invalidation> {
    let step = path.get(pos)?;
    // A dynptr takes 16 bytes from its slot up (`BPF_DYNPTR_SIZE`); an iterator, its slot.
    let held = |slot: i64| {
        (slots.iter())
            .find(|&&(s, kind)| {
                let size = if kind.starts_with("dynptr") { 16 } else { 1 };
                s <= slot && slot < s + size
            })
            .map(|&(_, kind)| kind)
    };
    match step.insn.op {
        Op::Call(Callee::Pc(_)) if step.frame == frame => {
            // A global function is not followed into: the path goes on in the caller's frame.
            let next = path.get(pos + 1)?;
            (next.frame == frame).then_some(Invalidation::GlobalFunction)
        }
        Op::Call(callee @ Callee::Named { name, .. }) => {
            Invalidation::of_call(callee).or_else(|| {
                let slot = (1..=5u8)
                    .filter_map(|arg| stack_address(path, pos, arg))
                    .find(|&slot| held(slot).is_some())?;
                let name = String::from_utf8_lossy(name).into_owned();
                let builds = name.contains("dynptr_from")
                    || name == "bpf_ringbuf_reserve_dynptr"
                    || (name.starts_with("bpf_iter_") && name.ends_with("_new"));
                builds.then_some(Invalidation::SlotOverwritten {
                    slot,
                    by: Some(name),
                })
            })
        }
        Op::Store { mem, .. } => {
            let slot = match mem.stack_slot() {
                Some(slot) if step.frame == frame => slot,
                Some(_) => return None,
                // A store leaves its base as it was: the state after it shows it.
                None => stack_address(path, pos + 1, mem.base)? + mem.off,
            };
            held(slot).map(|_| Invalidation::SlotOverwritten { slot, by: None })
        }
        _ => None,
    }
}

/// The stack slot of the failing frame register `reg` points to at position `pos` (before the
/// instruction there), as the states show it (`R4=fp-24`; from a callee, `R2=fp[0]-24`).
fn stack_address(path: &Decoded<'_>, pos: usize, reg: u8) -> Option<i64> {
    let value = path.value_at(pos.checked_sub(1)?, Item::Reg(reg))?;
    let off = value.strip_prefix("fp")?;
    let off = off.split_once(']').map_or(off, |(_, off)| off);
    off.parse().ok()
}

/// The stack slots of frame `frame` the path before position `before` shows holding a dynptr
/// or an iterator, with the state's name of it (`dynptr_skb`): from the states
/// (`fp-24=dynptr_local(...)`), or a pointer to the slot passed to a dynptr's or iterator's
/// call (`dynptr`).
fn dynptr_slots<'p>(path: &Decoded<'p>, before: usize, frame: usize) -> Vec<(i64, &'p str)> {
    let mut slots: Vec<(i64, &'p str)> = Vec::new();
    for (pos, step) in path.iter().enumerate().take(before) {
        if step.frame != frame {
            continue;
        }
        for (slot, value) in step.slots() {
            let kind = value.split('(').next().unwrap_or(value);
            if kind.starts_with("dynptr") || kind.starts_with("iter") {
                slots.retain(|(s, _)| *s != slot);
                slots.push((slot, kind));
            }
        }
        if let Op::Call(Callee::Named { name, .. }) = step.insn.op
            && (name.windows(6).any(|w| w == b"dynptr") || name.starts_with(b"bpf_iter_"))
        {
            for slot in (1..=5u8).filter_map(|arg| stack_address(path, pos, arg)) {
                if !slots.iter().any(|(s, _)| *s == slot) {
                    slots.push((slot, "dynptr"));
                }
            }
        }
    }
    slots
}

/// Whether register `a.1` at position `a.0` and register `b.1` at `b.0` come from the same
/// origin, walking back through moves, spills and fills alone.
fn same_origin(path: &Decoded<'_>, a: (usize, u8), b: (usize, u8)) -> bool {
    let origin = |(at, reg): (usize, u8)| {
        let mut value = Item::Reg(reg);
        let frame = path.get(at)?.frame;
        for pos in (0..at).rev() {
            let step = path.get(pos)?;
            if step.frame != frame {
                continue;
            }
            match (step.insn.op, value) {
                (
                    Op::Alu {
                        dst,
                        op: b"=",
                        src: Some(Operand::Reg(from)),
                        ..
                    },
                    Item::Reg(r),
                ) if dst.num == r => {
                    value = Item::Reg(from.num);
                }
                (Op::Load { dst, mem }, Item::Reg(r)) if dst.num == r => match mem.stack_slot() {
                    Some(slot) => value = Item::Slot(slot),
                    None => return Some(pos),
                },
                (
                    Op::Store {
                        mem,
                        src: Operand::Reg(from),
                    },
                    Item::Slot(s),
                ) if mem.stack_slot() == Some(s) => {
                    value = Item::Reg(from.num);
                }
                (Op::Call(_), Item::Reg(0)) => return Some(pos),
                (_, Item::Reg(r)) if step.insn.defines().is_some_and(|d| d.num == r) => {
                    return Some(pos);
                }
                _ => {}
            }
        }
        None
    };
    let (a, b) = (origin(a), origin(b));
    a.is_some() && a == b
}
