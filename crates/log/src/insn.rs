//! The instruction of an instruction line, decoded from its text.
//!
//! The verifier prints each instruction with `print_bpf_insn` (kernel/bpf/disasm.c): the
//! operation, its registers, its memory access, its immediate, its jump offset and, for a call,
//! the helper's or kfunc's name and number (or `pc+N` for a call of a subprogram). Everything
//! that tells two programs apart is there, so the text is decoded into one typed value, on
//! demand ([`InsnLine::decode`](crate::InsnLine::decode)): the classifier itself only finds the
//! index and opcode, which is all most readers need. Text the decoder does not know (a form of a
//! later kernel) is [`Op::Unknown`], never an error.

/// A register as the log names it: `r3` (64 bits) or `w3` (its low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    /// The register number, 0 to 10 (up to 99 is read).
    pub num: u8,
    /// Whether it is named `r` (all 64 bits) rather than `w`.
    pub wide: bool,
}

/// The second operand of an ALU operation, a store or a conditional jump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A register.
    Reg(Reg),
    /// An immediate, as printed: decimal for ALU operations and stores (`r0 = -1`), hexadecimal
    /// for jumps (`if r1 > 0xffffffff`, the immediate's 32 bits).
    Imm(i64),
}

/// A memory access `*(u32 *)(r10 -4)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mem {
    /// Its size in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// Whether a load sign-extends (`s8`, `s16`, `s32`).
    pub signed: bool,
    /// The base register.
    pub base: u8,
    /// The offset added to the base.
    pub off: i64,
}

impl Mem {
    /// The stack slot accessed (its offset from the frame pointer, `r10`), if the access is one.
    pub fn stack_slot(&self) -> Option<i64> {
        (self.base == 10).then_some(self.off)
    }
}

/// What a `call` calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee<'a> {
    /// `call pc+N`: a subprogram, `N` instructions after the next one.
    Pc(i64),
    /// `call NAME#N`: a helper (its number) or a kfunc (its BTF id) by name.
    Named {
        /// The helper's or kfunc's name (`unknown` for a number the kernel does not know).
        name: &'a [u8],
        /// The number after `#`.
        id: i64,
    },
}

/// The operation of an instruction, with its operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// `dst OP src` of an ALU instruction: `r3 += 14`, `w1 = w2`, `r1 s/= 3`, `r1 = (s8)r2`.
    /// The forms whose second operand is neither a register nor a number (`r1 = -r1`,
    /// `r1 = be16 r1`, `addr_space_cast`) have `src: None`.
    Alu {
        /// The register written.
        dst: Reg,
        /// The operator: `=`, `+=`, `s>>=`, ...
        op: &'a [u8],
        /// The second operand, when it is a register or a number.
        src: Option<Operand>,
        /// The width in bits of a sign-extending move's source (`(s8)r2`: 8) or of a byte swap
        /// (`be16 r1`: 16).
        width: Option<u8>,
    },
    /// `dst = *(size *)(base +off)`.
    Load {
        /// The register loaded.
        dst: Reg,
        /// Where from.
        mem: Mem,
    },
    /// `*(size *)(base +off) = src`.
    Store {
        /// Where to.
        mem: Mem,
        /// What is stored.
        src: Operand,
    },
    /// An atomic operation (`lock *(u64 *)(r0 +0) += r1`, `r0 = atomic64_fetch_add(...)`,
    /// `load_acquire`, `store_release`).
    Atomic {
        /// The memory it works on.
        mem: Mem,
    },
    /// `dst = VALUE` of a 64-bit immediate load: a number, or a map, a variable or a BTF id the
    /// loader and the kernel put there (`0xffff888102b7e000`, `map[id:7][0]+0`).
    LoadImm64 {
        /// The register loaded.
        dst: Reg,
        /// The value as printed.
        value: &'a [u8],
    },
    /// `goto`, `gotol`, `may_goto` or `if dst OP src goto`: a jump by `off`.
    Jump {
        /// The condition, for a conditional jump: its registers, operator and second operand.
        cond: Option<(Reg, &'a [u8], Operand)>,
        /// The jump's offset (`pc+N`).
        off: i64,
    },
    /// `call ...`.
    Call(Callee<'a>),
    /// `exit`.
    Exit,
    /// A form the decoder does not know: legacy packet loads, `nospec`, a later kernel's.
    Unknown,
}

/// An instruction as the log prints it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrintedInsn<'a> {
    /// The text it was decoded from.
    pub text: &'a [u8],
    /// What it does.
    pub op: Op<'a>,
}

impl<'a> PrintedInsn<'a> {
    /// Decodes an instruction's text (what follows `(xx) `, without any state after it).
    pub fn decode(text: &'a [u8]) -> Self {
        PrintedInsn {
            text,
            op: decode(text).unwrap_or(Op::Unknown),
        }
    }

    /// The register it writes, if one (a call writes `r0`).
    pub fn defines(&self) -> Option<Reg> {
        match self.op {
            Op::Alu { dst, .. } | Op::Load { dst, .. } | Op::LoadImm64 { dst, .. } => Some(dst),
            Op::Call(_) => Some(Reg { num: 0, wide: true }),
            _ => None,
        }
    }

    /// The memory it reads or writes, if any.
    pub fn memory(&self) -> Option<Mem> {
        match self.op {
            Op::Load { mem, .. } | Op::Store { mem, .. } | Op::Atomic { mem } => Some(mem),
            _ => None,
        }
    }

    /// The immediate it carries, as printed, when the instruction's own (not a loader's): that of
    /// an ALU operation, a store or a conditional jump. A 64-bit load's value is the loader's and
    /// is not one.
    pub fn immediate(&self) -> Option<i64> {
        match self.op {
            Op::Alu {
                src: Some(Operand::Imm(imm)),
                ..
            }
            | Op::Store {
                src: Operand::Imm(imm),
                ..
            }
            | Op::Jump {
                cond: Some((_, _, Operand::Imm(imm))),
                ..
            } => Some(imm),
            _ => None,
        }
    }

    /// The jump's offset (`pc+N`), of a jump.
    pub fn jump_offset(&self) -> Option<i64> {
        match self.op {
            Op::Jump { off, .. } => Some(off),
            _ => None,
        }
    }

    /// What it calls, of a call.
    pub fn callee(&self) -> Option<Callee<'a>> {
        match self.op {
            Op::Call(callee) => Some(callee),
            _ => None,
        }
    }

    /// The registers in the instruction's `dst` and `src` fields, where its form shows them: the
    /// register written or the base of a store, and the second operand or a load's base
    /// (`None` where the form has no register there). `None` for atomics, calls, unknown forms.
    pub fn fields(&self) -> Option<(u8, Option<u8>)> {
        let reg = |o: Option<Operand>| match o {
            Some(Operand::Reg(r)) => Some(r.num),
            _ => None,
        };
        match self.op {
            Op::Alu { dst, src, .. } => Some((dst.num, reg(src))),
            Op::Load { dst, mem } => Some((dst.num, Some(mem.base))),
            Op::Store { mem, src } => Some((mem.base, reg(Some(src)))),
            Op::Jump {
                cond: Some((left, _, right)),
                ..
            } => Some((left.num, reg(Some(right)))),
            Op::LoadImm64 { dst, .. } => Some((dst.num, None)),
            _ => None,
        }
    }

    /// Every register its text names (`r1`, `w2`, ...), in order: what it uses and defines.
    pub fn registers(&self) -> impl Iterator<Item = u8> + 'a {
        registers(self.text)
    }
}

/// Register numbers named in an instruction's text (`r1`, `w2`, ...), in order.
fn registers(text: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    (0..text.len()).filter_map(move |i| {
        let c = text[i];
        if !(c == b'r' || c == b'w') || (i > 0 && is_word(text[i - 1])) {
            return None;
        }
        let digits = text[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = i + 1 + digits;
        if digits == 0 || digits > 2 || text.get(end).is_some_and(|&b| is_word(b)) {
            return None;
        }
        Some(text[i + 1..end].iter().fold(0, |n, d| n * 10 + (d - b'0')))
    })
}

/// The decoder: `None` for a text it does not know.
fn decode(text: &[u8]) -> Option<Op<'_>> {
    if text == b"exit" {
        return Some(Op::Exit);
    }
    if let Some(callee) = text.strip_prefix(b"call ") {
        return callee_of(callee).map(Op::Call);
    }
    for jump in [&b"goto "[..], b"gotol ", b"may_goto "] {
        if let Some(rest) = text.strip_prefix(jump) {
            return Some(Op::Jump {
                cond: None,
                off: whole(pc(rest)?)?,
            });
        }
    }
    if let Some(rest) = text.strip_prefix(b"if ") {
        // `if r1 > 0x8 goto pc+3`
        let (left, rest) = reg(rest)?;
        let (op, rest) = word(rest.strip_prefix(b" ")?)?;
        let (right, rest) = word(rest)?;
        let right = match reg(right) {
            Some((r, b"")) => Operand::Reg(r),
            _ => Operand::Imm(hex(right)?),
        };
        let off = whole(pc(rest.strip_prefix(b"goto ")?)?)?;
        return Some(Op::Jump {
            cond: Some((left, op, right)),
            off,
        });
    }
    if text.starts_with(b"*(") {
        // `*(u32 *)(r10 -4) = r1` or `= 7`
        let (mem, rest) = mem(text)?;
        let src = rest.strip_prefix(b" = ")?;
        let src = match reg(src) {
            Some((r, b"")) => Operand::Reg(r),
            _ => Operand::Imm(whole(decimal(src)?)?),
        };
        return Some(Op::Store { mem, src });
    }
    if let Some(rest) = text.strip_prefix(b"lock ") {
        return Some(Op::Atomic { mem: mem(rest)?.0 });
    }
    if let Some(rest) = text.strip_prefix(b"store_release(") {
        return Some(Op::Atomic { mem: mem(rest)?.0 });
    }
    // `dst OP src`: an ALU operation, a load, an atomic with a result, a 64-bit immediate.
    let (dst, rest) = reg(text)?;
    let (op, rest) = word(rest.strip_prefix(b" ")?)?;
    if op == b"=" {
        if rest.starts_with(b"*(") {
            let (mem, rest) = mem(rest)?;
            return rest.is_empty().then_some(Op::Load { dst, mem });
        }
        if let Some(open) = memchr::memchr(b'(', rest)
            && (rest.starts_with(b"atomic") || rest.starts_with(b"load_acquire"))
        {
            return Some(Op::Atomic {
                mem: mem(rest.get(open + 1..)?)?.0,
            });
        }
        if rest.starts_with(b"0x") || rest.starts_with(b"map[") || rest.starts_with(b"map_") {
            return Some(Op::LoadImm64 { dst, value: rest });
        }
    }
    // `(s8)r2`: a sign-extending move; `be16 r1`, `le32 r1`, `bswap64 r1`: a byte swap.
    let swap = [&b"be"[..], b"le", b"bswap"]
        .iter()
        .find_map(|p| rest.strip_prefix(*p))
        .filter(|r| r.first().is_some_and(u8::is_ascii_digit));
    let (width, rest) = if let Some(cast) = rest.strip_prefix(b"(s") {
        let close = memchr::memchr(b')', cast)?;
        let bits = u8::try_from(number(&cast[..close])?).ok()?;
        (Some(bits), &cast[close + 1..])
    } else if let Some(swap) = swap {
        let bits = u8::try_from(number(swap)?).ok()?;
        let digits = swap.iter().take_while(|b| b.is_ascii_digit()).count();
        // The register swapped is the one written: no second operand.
        (
            Some(bits),
            swap.get(digits..).and_then(|r| r.strip_prefix(b" "))?,
        )
    } else {
        (None, rest)
    };
    if swap.is_some() {
        return Some(Op::Alu {
            dst,
            op,
            src: None,
            width,
        });
    }
    let src = match reg(rest) {
        Some((r, b"")) => Some(Operand::Reg(r)),
        _ => decimal(rest).and_then(whole).map(Operand::Imm),
    };
    Some(Op::Alu {
        dst,
        op,
        src,
        width,
    })
}

/// `NAME#N` or `pc+N`, what follows `call `.
fn callee_of(text: &[u8]) -> Option<Callee<'_>> {
    if let Some(off) = pc(text) {
        return Some(Callee::Pc(whole(off)?));
    }
    let hash = memchr::memrchr(b'#', text)?;
    let (name, id) = (&text[..hash], &text[hash + 1..]);
    let id = whole(decimal(id)?)?;
    Some(Callee::Named { name, id })
}

/// A register (`r3`, `w10`) at the start of `text`, and the rest.
fn reg(text: &[u8]) -> Option<(Reg, &[u8])> {
    let wide = match text.first()? {
        b'r' => true,
        b'w' => false,
        _ => return None,
    };
    let digits = text[1..].iter().take_while(|b| b.is_ascii_digit()).count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let num = text[1..1 + digits]
        .iter()
        .fold(0u8, |n, d| n * 10 + (d - b'0'));
    let rest = &text[1 + digits..];
    if rest
        .first()
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
    {
        return None;
    }
    Some((Reg { num, wide }, rest))
}

/// The word at the start of `text` (up to a space), and what follows the space.
fn word(text: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = memchr::memchr(b' ', text).unwrap_or(text.len());
    let w = &text[..end];
    (!w.is_empty()).then(|| (w, text.get(end + 1..).unwrap_or_default()))
}

/// `*(u32 *)(r10 -4)` or `(u32 *)(r10 -4)` at the start of `text`, and the rest.
fn mem(text: &[u8]) -> Option<(Mem, &[u8])> {
    let text = text.strip_prefix(b"*").unwrap_or(text);
    let text = text.strip_prefix(b"(")?;
    let (signed, text) = match text.first()? {
        b'u' => (false, &text[1..]),
        b's' => (true, &text[1..]),
        _ => return None,
    };
    let bits = number(text)?;
    let text = &text[text.iter().take_while(|b| b.is_ascii_digit()).count()..];
    let size = match bits {
        8 => 1,
        16 => 2,
        32 => 4,
        64 => 8,
        _ => return None,
    };
    let text = text.strip_prefix(b" *)(")?;
    let (base, text) = reg(text)?;
    let text = text.strip_prefix(b" ")?;
    let close = memchr::memchr(b')', text)?;
    let off = whole(signed_decimal(&text[..close])?)?;
    Some((
        Mem {
            size,
            signed,
            base: base.num,
            off,
        },
        &text[close + 1..],
    ))
}

/// `pc+N` or `pc-N`: `(N, what follows)`.
fn pc(text: &[u8]) -> Option<(i64, &[u8])> {
    let text = text.strip_prefix(b"pc")?;
    let digits = 1 + text
        .get(1..)?
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    Some((
        whole(signed_decimal(text.get(..digits)?)?)?,
        &text[digits..],
    ))
}

/// A number with nothing after it.
fn whole((n, rest): (i64, &[u8])) -> Option<i64> {
    rest.is_empty().then_some(n)
}

/// A decimal, signed or not, at the start of `text`: `(value, what follows)`.
fn decimal(text: &[u8]) -> Option<(i64, &[u8])> {
    let (neg, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    let n = i64::try_from(number(&digits[..len])?).ok()?;
    Some((if neg { -n } else { n }, &digits[len..]))
}

/// A signed decimal with its sign (`+4`, `-8`), all of `text`.
fn signed_decimal(text: &[u8]) -> Option<(i64, &[u8])> {
    matches!(text.first(), Some(b'+' | b'-'))
        .then(|| decimal(text))
        .flatten()
}

/// `0x...`, all of `text`.
fn hex(text: &[u8]) -> Option<i64> {
    let digits = text.strip_prefix(b"0x")?;
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let n = u64::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
    i64::try_from(n).ok()
}

/// The decimal digits at the start of `text` (at most 19 of them).
fn number(text: &[u8]) -> Option<u64> {
    let digits = text.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    std::str::from_utf8(&text[..digits]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: fn(u8) -> Reg = |num| Reg { num, wide: true };
    const W: fn(u8) -> Reg = |num| Reg { num, wide: false };

    fn op(text: &str) -> Op<'_> {
        PrintedInsn::decode(text.as_bytes()).op
    }

    fn mem(size: u8, base: u8, off: i64) -> Mem {
        Mem {
            size,
            signed: false,
            base,
            off,
        }
    }

    // Every text below is from a real 6.18 log (tests/fixtures/logs and the selftests sweep).

    #[test]
    fn alu_operations_with_registers_and_immediates() {
        let alu = |dst, o: &'static str, src| Op::Alu {
            dst,
            op: o.as_bytes(),
            src,
            width: None,
        };
        assert_eq!(op("r0 = 1"), alu(R(0), "=", Some(Operand::Imm(1))));
        assert_eq!(op("r2 += -12"), alu(R(2), "+=", Some(Operand::Imm(-12))));
        assert_eq!(op("w1 = 5"), alu(W(1), "=", Some(Operand::Imm(5))));
        assert_eq!(op("r3 = r7"), alu(R(3), "=", Some(Operand::Reg(R(7)))));
        assert_eq!(op("r6 s>>= 32"), alu(R(6), "s>>=", Some(Operand::Imm(32))));
        assert_eq!(op("r4 |= r3"), alu(R(4), "|=", Some(Operand::Reg(R(3)))));
        assert_eq!(
            op("r1 = be16 r1"),
            Op::Alu {
                dst: R(1),
                op: b"=",
                src: None,
                width: Some(16)
            }
        );
        assert!(matches!(
            op("r0 = bswap32 r0"),
            Op::Alu {
                width: Some(32),
                ..
            }
        ));
        assert_eq!(op("r0 = -r0"), alu(R(0), "=", None));
        assert_eq!(
            op("w0 = (s16)w0"),
            Op::Alu {
                dst: W(0),
                op: b"=",
                src: Some(Operand::Reg(W(0))),
                width: Some(16)
            }
        );
        assert_eq!(PrintedInsn::decode(b"w1 = 5").immediate(), Some(5));
        assert_eq!(PrintedInsn::decode(b"w1 = w5").immediate(), None);
        // The fields: `if r0 != r2` is not `if r2 != r0`.
        assert_eq!(
            PrintedInsn::decode(b"if r0 != r2 goto pc+1").fields(),
            Some((0, Some(2)))
        );
        assert_eq!(
            PrintedInsn::decode(b"r2 = *(u32 *)(r1 +4)").fields(),
            Some((2, Some(1)))
        );
        assert_eq!(
            PrintedInsn::decode(b"*(u64 *)(r10 -8) = r1").fields(),
            Some((10, Some(1)))
        );
        assert_eq!(PrintedInsn::decode(b"r0 = -r0").fields(), Some((0, None)));
        assert_eq!(PrintedInsn::decode(b"call pc+2").fields(), None);
    }

    #[test]
    fn loads_stores_and_atomics_with_their_memory() {
        assert_eq!(
            op("r2 = *(u32 *)(r1 +80)"),
            Op::Load {
                dst: R(2),
                mem: mem(4, 1, 80)
            }
        );
        let signed = PrintedInsn::decode(b"r1 = *(s8 *)(r2 -3)")
            .memory()
            .unwrap();
        assert!(signed.signed && signed.size == 1 && signed.off == -3);
        assert_eq!(
            op("*(u32 *)(r10 -12) = r2"),
            Op::Store {
                mem: mem(4, 10, -12),
                src: Operand::Reg(R(2))
            }
        );
        let st = PrintedInsn::decode(b"*(u64 *)(r10 -8) = 7");
        assert_eq!(st.immediate(), Some(7));
        assert_eq!(st.memory().unwrap().stack_slot(), Some(-8));
        assert_eq!(
            op("lock *(u64 *)(r0 +0) += r1"),
            Op::Atomic { mem: mem(8, 0, 0) }
        );
        assert_eq!(
            op("r0 = atomic64_cmpxchg((u64 *)(r1 +0), r0, r2)"),
            Op::Atomic { mem: mem(8, 1, 0) }
        );
    }

    #[test]
    fn immediates_of_a_64_bit_load_are_the_loaders() {
        let ld = PrintedInsn::decode(b"r1 = 0xffff888102b7e000");
        assert_eq!(
            ld.op,
            Op::LoadImm64 {
                dst: R(1),
                value: b"0xffff888102b7e000"
            }
        );
        assert_eq!(ld.immediate(), None);
        assert!(matches!(op("r1 = map[id:7][0]+0"), Op::LoadImm64 { .. }));
    }

    #[test]
    fn jumps_calls_and_exit() {
        assert_eq!(
            op("if r4 != 0x8 goto pc+44"),
            Op::Jump {
                cond: Some((R(4), b"!=", Operand::Imm(8))),
                off: 44
            }
        );
        assert_eq!(
            op("if w3 > w10 goto pc-7"),
            Op::Jump {
                cond: Some((W(3), b">", Operand::Reg(W(10)))),
                off: -7
            }
        );
        assert_eq!(
            PrintedInsn::decode(b"if r1 s> 0xffffffff goto pc+2").immediate(),
            Some(0xffff_ffff)
        );
        assert_eq!(PrintedInsn::decode(b"goto pc+9").jump_offset(), Some(9));
        assert_eq!(
            PrintedInsn::decode(b"gotol pc-300").jump_offset(),
            Some(-300)
        );
        assert_eq!(op("call pc+30"), Op::Call(Callee::Pc(30)));
        assert_eq!(
            op("call bpf_map_lookup_elem#1"),
            Op::Call(Callee::Named {
                name: b"bpf_map_lookup_elem",
                id: 1
            })
        );
        assert_eq!(
            PrintedInsn::decode(b"call bpf_throw#65988").callee(),
            Some(Callee::Named {
                name: b"bpf_throw",
                id: 65988
            })
        );
        assert_eq!(op("exit"), Op::Exit);
        assert_eq!(
            PrintedInsn::decode(b"call bpf_loop#181").defines(),
            Some(R(0))
        );
    }

    #[test]
    fn unknown_forms_are_unknown_not_errors() {
        assert_eq!(op("r0 = *(u8 *)skb[12]"), Op::Unknown);
        assert_eq!(op("nospec"), Op::Unknown);
        assert_eq!(op(""), Op::Unknown);
        assert_eq!(op("if r1 > 0x goto pc+1"), Op::Unknown);
        assert_eq!(op("r1 = *(u128 *)(r1 +0)"), Op::Unknown);
        assert_eq!(op("goto pc+"), Op::Unknown);
    }

    #[test]
    fn registers_are_every_register_named() {
        let regs = |t: &'static [u8]| PrintedInsn::decode(t).registers().collect::<Vec<_>>();
        assert_eq!(regs(b"r2 = *(u32 *)(r1 +4)"), [2, 1]);
        assert_eq!(regs(b"if w3 > w10 goto pc-7"), [3, 10]);
        assert_eq!(regs(b"r1 = map[id:7][0]+0"), [1]);
    }
}
