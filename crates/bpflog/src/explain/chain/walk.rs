//! The walk back from the failure to the value's origin, one function per operation met on
//! the way: a move or arithmetic ([`Walk::alu`]), a load or fill ([`Walk::load`]), a spill
//! ([`Walk::store`]), a call ([`Walk::call`]), a conditional jump that bounds the value
//! ([`Walk::jump`]), and the frame's edges (a callee's `exit`, the call that entered the frame).

use super::decoded::{Decoded, HeldValue, Item, PathInsn};
use super::facts::{
    Bound, Cmp, Fact, Invalidation, Narrowing, Via, may_return_null, returns_address_as_number,
};
use super::search::{copy_of, invalidated, linked_test, ownership_lost};
use super::{Follow, FoundStep, MAX_STEPS, Role};
use bpflog_log::{Callee, Op, Operand, Reg};

/// What is followed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Followed {
    Reg(u8),
    /// A stack slot of the frame, by its offset from r10.
    Slot(i64),
}

impl Followed {
    fn item(self) -> Item {
        match self {
            Followed::Reg(r) => Item::Reg(r),
            Followed::Slot(s) => Item::Slot(s),
        }
    }
}

/// Where a walk starts: the register at the failing instruction (the path's last), how to
/// follow it, and what the verifier says it holds there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start {
    /// The register.
    pub(crate) reg: u8,
    /// How arithmetic is followed.
    pub(crate) follow: Follow,
    /// The path is a global function's own pass, whose arguments are what any caller could
    /// pass.
    pub(crate) global: bool,
    /// What the error says the register holds at the failure (`invalid mem access 'scalar'`),
    /// when it says.
    pub(crate) held: Option<HeldValue>,
}

/// Whether the walk goes on past a step.
enum Next {
    On,
    Stop,
}

/// A walk in progress: the value followed, in which frame, and the steps found so far (latest
/// first).
struct Walk<'d, 'p> {
    path: &'d Decoded<'p>,
    start: Start,
    frame: usize,
    value: Followed,
    /// A step already narrowed the value (only the last test counts).
    narrowed: bool,
    /// The instruction that took the pointer away, and its position.
    invalidated: Option<(usize, Invalidation)>,
    steps: Vec<FoundStep>,
}

/// The chain of `start.reg` at the last instruction of `path` (the failing one, frame `path`'s
/// last), back to its origin, latest step first, without the failing instruction.
pub(crate) fn walk(path: &Decoded<'_>, start: Start) -> Vec<FoundStep> {
    let Some(last) = path.len().checked_sub(1) else {
        return Vec::new();
    };
    let Some(failed) = path.get(last) else {
        return Vec::new();
    };
    let mut walk = Walk {
        path,
        start,
        frame: failed.frame,
        value: Followed::Reg(start.reg),
        narrowed: false,
        invalidated: match start.held {
            Some(held) => invalidated(path, last, start.reg, held),
            None if start.follow == Follow::Pointer => ownership_lost(path, last, start.reg),
            None => None,
        },
        steps: Vec::new(),
    };
    for pos in (0..last).rev() {
        if walk.steps.len() == MAX_STEPS {
            return walk.steps;
        }
        let Some(step) = path.get(pos) else {
            return walk.steps;
        };
        if let Some((at, by)) = &walk.invalidated
            && *at == pos
        {
            let fact = Fact::Invalidated(by.clone());
            walk.push(step, Role::Invalidated, fact);
            continue;
        }
        if let Next::Stop = walk.step(pos, step) {
            return walk.steps;
        }
    }
    walk.path_start();
    walk.steps
}

impl<'p> Walk<'_, 'p> {
    /// A step found at `step`.
    fn push(&mut self, step: &PathInsn<'p>, role: Role, fact: Fact) {
        self.steps.push(FoundStep::new(step, role, Some(fact)));
    }

    /// A step without a fact of its own (a move, arithmetic, a spill or a fill).
    fn push_plain(&mut self, step: &PathInsn<'p>, role: Role) {
        self.steps.push(FoundStep::new(step, role, None));
    }

    /// One instruction of the path, at position `pos`, walking back.
    fn step(&mut self, pos: usize, step: &PathInsn<'p>) -> Next {
        if step.frame > self.frame {
            return self.in_callee(step);
        }
        if step.frame < self.frame {
            return self.out_to_caller(step);
        }
        if self.start.follow == Follow::Packet && !self.narrowed && step.packet_check {
            self.narrowed = true;
            self.push(step, Role::Narrowed, Fact::PacketChecked);
            return Next::On;
        }
        match (step.insn.op, self.value) {
            (Op::Call(callee), Followed::Reg(r)) => self.call(step, callee, r),
            (Op::Alu { dst, op, src, .. }, Followed::Reg(r)) if dst.num == r => {
                self.alu(pos, step, dst, op, src)
            }
            (Op::Load { dst, mem }, Followed::Reg(r)) if dst.num == r => {
                self.load(pos, step, mem.stack_slot())
            }
            (Op::LoadImm64 { dst, .. }, Followed::Reg(r)) if dst.num == r => {
                self.steps.push(FoundStep::new(step, Role::Origin, None));
                Next::Stop
            }
            (Op::Store { mem, src }, Followed::Slot(slot)) if mem.stack_slot() == Some(slot) => {
                self.store(step, src)
            }
            (
                Op::Jump {
                    cond: Some(cond),
                    off,
                },
                _,
            ) => self.jump(pos, step, cond, off),
            _ => Next::On,
        }
    }

    /// A callee's instruction, walking back into it from after its return: its `exit` returns
    /// what R0 holds.
    fn in_callee(&mut self, step: &PathInsn<'p>) -> Next {
        if step.frame == self.frame + 1
            && matches!(step.insn.op, Op::Exit)
            && self.value == Followed::Reg(0)
        {
            self.push_plain(step, Role::Returned);
            self.frame = step.frame;
        }
        Next::On
    }

    /// Out of the frame, to the call that entered it: R1-R5 are its arguments.
    fn out_to_caller(&mut self, step: &PathInsn<'p>) -> Next {
        match (step.insn.op, self.value) {
            (Op::Call(Callee::Pc(_)), Followed::Reg(arg @ 1..=5))
                if step.frame + 1 == self.frame =>
            {
                self.push(step, Role::Passed, Fact::Passed { arg });
                self.frame = step.frame;
                Next::On
            }
            // A callback's argument: the helper that calls it passes it.
            (Op::Call(Callee::Named { name, .. }), Followed::Reg(arg @ 1..=5)) => {
                let helper = String::from_utf8_lossy(name).into_owned();
                self.push(step, Role::Origin, Fact::CallbackArgument { helper, arg });
                Next::Stop
            }
            // A stack slot of another frame: not followed.
            _ => Next::Stop,
        }
    }

    /// A call: R0 is its result; R1-R5 it clobbers, so what is followed was written after it,
    /// or never.
    fn call(&mut self, step: &PathInsn<'p>, callee: Callee<'_>, reg: u8) -> Next {
        match (callee, reg) {
            (Callee::Named { name, .. }, 0) => {
                let callee = String::from_utf8_lossy(name).into_owned();
                let fact = if returns_address_as_number(name) {
                    Fact::ReturnedAsNumber { callee }
                } else {
                    Fact::Returned {
                        callee,
                        may_null: may_return_null(name),
                    }
                };
                self.push(step, Role::Origin, fact);
                Next::Stop
            }
            // Returned by a subprogram whose instructions the path does not show.
            (Callee::Pc(_), 0) => {
                self.push(step, Role::Origin, Fact::SubprogramReturned);
                Next::Stop
            }
            (_, 1..=5) => Next::Stop,
            _ => Next::On,
        }
    }

    /// `dst OP src` writing the register followed.
    fn alu(
        &mut self,
        pos: usize,
        step: &PathInsn<'p>,
        dst: Reg,
        op: &[u8],
        src: Option<Operand>,
    ) -> Next {
        match (op, src) {
            (b"=", Some(Operand::Reg(from))) if from.num == 10 => {
                self.push(step, Role::Origin, Fact::FramePointer);
                Next::Stop
            }
            (b"=", Some(Operand::Reg(from))) => {
                self.push_plain(step, Role::Moved);
                self.value = Followed::Reg(from.num);
                Next::On
            }
            (b"=", Some(Operand::Imm(_))) => {
                self.push(step, Role::Origin, Fact::Constant);
                Next::Stop
            }
            (_, Some(Operand::Reg(with))) if self.start.follow == Follow::Offset => {
                self.push_plain(step, Role::Computed);
                self.value = Followed::Reg(offset_operand(self.path, pos, dst.num, with.num));
                Next::On
            }
            _ => {
                self.push_plain(step, Role::Computed);
                Next::On
            }
        }
    }

    /// A load into the register followed: a fill of a stack slot (followed on), or the origin.
    fn load(&mut self, pos: usize, step: &PathInsn<'p>, slot: Option<i64>) -> Next {
        if let Some(slot) = slot {
            self.push_plain(step, Role::Filled);
            self.value = Followed::Slot(slot);
            return Next::On;
        }
        let fact = if self.loaded_as_number(pos, step) {
            Fact::LoadedAsNumber
        } else {
            Fact::Loaded
        };
        self.push(step, Role::Origin, fact);
        Next::Stop
    }

    /// Whether the load at `pos` (of the register followed) gave a number: its state says so
    /// (level 2); without one, the error says the register holds a number at the failure and
    /// no call between could have taken a pointer away.
    fn loaded_as_number(&self, pos: usize, step: &PathInsn<'p>) -> bool {
        let Followed::Reg(reg) = self.value else {
            return false;
        };
        match step.shown(Item::Reg(reg)) {
            Some(value) => HeldValue::of(value) == HeldValue::Scalar,
            None => {
                self.start.held == Some(HeldValue::Scalar)
                    && self.invalidated.is_none()
                    && self.path.iter().skip(pos + 1).all(|later| {
                        !matches!(later.insn.op, Op::Call(callee)
                            if matches!(callee, Callee::Pc(_))
                                || Invalidation::of_call(callee).is_some())
                    })
            }
        }
    }

    /// A store to the slot followed: a spill (the register stored is followed on), or a
    /// constant.
    fn store(&mut self, step: &PathInsn<'p>, src: Operand) -> Next {
        match src {
            Operand::Reg(from) => {
                self.push_plain(step, Role::Spilled);
                self.value = Followed::Reg(from.num);
                Next::On
            }
            Operand::Imm(_) => {
                self.push(step, Role::Origin, Fact::Constant);
                Next::Stop
            }
        }
    }

    /// A conditional jump: for an offset, the last test that bounds it (of its register, of a
    /// copy linked by `id=`, or at level 1 of a plain copy made just before) is the step that
    /// narrowed it. A test against 0 with `==` or `!=` (a NULL test) is no bound, nor a test
    /// of a register the state shows holding a pointer.
    fn jump(
        &mut self,
        pos: usize,
        step: &PathInsn<'p>,
        (left, op, right): (Reg, &[u8], Operand),
        off: i64,
    ) -> Next {
        if self.start.follow != Follow::Offset || self.narrowed {
            return Next::On;
        }
        let Some(cmp) = Cmp::parse(op) else {
            return Next::On;
        };
        if matches!(cmp, Cmp::Eq | Cmp::Ne) && right == Operand::Imm(0) {
            return Next::On;
        }
        let right_reg = match right {
            Operand::Reg(r) => Some(r.num),
            Operand::Imm(_) => None,
        };
        let followed = match self.value {
            Followed::Reg(r) => Some(r),
            Followed::Slot(_) => None,
        };
        let (tested, via) = if let Some(r) = followed
            && (left.num == r || right_reg == Some(r))
        {
            (r, Via::Itself)
        } else if let Some((tested, id)) = linked_test(
            self.path,
            pos,
            [Some(left.num), right_reg],
            self.value.item(),
        ) {
            (tested, Via::Linked(id))
        } else if let Followed::Reg(r) = self.value
            && let Some(at) = copy_of(self.path, pos, left.num, r)
        {
            (left.num, Via::Copy(at))
        } else {
            return Next::On;
        };
        if self
            .path
            .held_at(pos, Item::Reg(tested))
            .is_some_and(|h| h != HeldValue::Scalar)
        {
            return Next::On;
        }
        // The tested register on the right: the comparison seen from its side.
        let (op, other) = if tested == left.num {
            (cmp, right)
        } else {
            (cmp.swapped(), Operand::Reg(left))
        };
        let known = match other {
            Operand::Reg(r) => self
                .path
                .value_at(pos, Item::Reg(r.num))
                .and_then(|v| v.trim_start_matches('P').parse().ok()),
            Operand::Imm(_) => None,
        };
        let next = self.path.get(pos + 1);
        let taken = next.is_some_and(|n| {
            i64::try_from(n.index).ok() == i64::try_from(step.index).ok().map(|i| i + 1 + off)
                && off != 0
        });
        self.narrowed = true;
        let fact = Fact::Narrowed(Narrowing {
            tested,
            followed,
            via,
            op,
            bound: Bound::of(other, known),
            taken,
        });
        self.push(step, Role::Narrowed, fact);
        Next::On
    }

    /// The path's start, the value not written on it: a global function's argument, or the
    /// entry program's context (R1 at instruction 0).
    fn path_start(&mut self) {
        let Some(first) = self.path.first() else {
            return;
        };
        let fact = match self.value {
            Followed::Reg(r @ 1..=5) if self.start.global => Fact::GlobalArgument(r),
            Followed::Reg(1) if first.index == 0 => Fact::Context,
            _ => return,
        };
        if self.path.cut
            || self.steps.len() >= MAX_STEPS
            || self.frame != 0
            || self.steps.last().is_some_and(|s| s.role == Role::Origin)
        {
            return;
        }
        match self.steps.last_mut() {
            // The function's first instruction moved it already: that step is the origin.
            Some(last) if last.index == first.index => {
                last.role = Role::Origin;
                last.note = Some(fact.note());
                last.fact = Some(fact);
            }
            _ => self
                .steps
                .push(FoundStep::new(first, Role::Origin, Some(fact))),
        }
    }
}

/// Of `dst` and `src` of pointer arithmetic at position `pos` (`dst += src`), the operand that
/// is the offset: the one the states before it show holding a number while the other holds a
/// pointer; without states, `dst` when `src` is the frame pointer or a 64-bit immediate's
/// address (`r1 = map[...]`), else `src`.
pub(crate) fn offset_operand(path: &Decoded<'_>, pos: usize, dst: u8, src: u8) -> u8 {
    let before = |reg| {
        pos.checked_sub(1)
            .and_then(|p| path.held_at(p, Item::Reg(reg)))
    };
    match (before(dst), before(src)) {
        (Some(HeldValue::Scalar), Some(HeldValue::Pointer { .. })) => return dst,
        (Some(HeldValue::Pointer { .. }), Some(HeldValue::Scalar)) => return src,
        _ => {}
    }
    if src == 10 {
        return dst;
    }
    let frame = path.get(pos).map(|p| p.frame);
    let def = (0..pos)
        .rev()
        .map_while(|p| path.get(p))
        .take_while(|p| Some(p.frame) == frame);
    for step in def {
        if step.insn.defines().is_some_and(|r| r.num == src) {
            return match step.insn.op {
                Op::LoadImm64 { .. } => dst,
                Op::Alu {
                    op: b"=",
                    src: Some(Operand::Reg(from)),
                    ..
                } if from.num == 10 => dst,
                _ => src,
            };
        }
    }
    src
}
