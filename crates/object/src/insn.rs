//! BPF instructions and the two units that address them.
//!
//! An instruction is 8 bytes (`struct bpf_insn`); `ld_imm64` takes two. Byte offsets (as in ELF
//! symbols and `.BTF.ext` records of an object) and instruction slots (as in verifier logs) are
//! different types, converted in exactly one place: [`ByteOffset::to_slot`].

use object::Endianness;

/// Size of one instruction slot in bytes.
pub const INSN_SIZE: u64 = 8;

/// A byte offset inside an ELF code section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteOffset(pub u64);

/// An instruction slot (8-byte unit) inside an ELF code section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Slot(pub u32);

impl ByteOffset {
    /// The slot at this offset.
    pub fn to_slot(self) -> Result<Slot, SlotError> {
        if !self.0.is_multiple_of(INSN_SIZE) {
            return Err(SlotError::Misaligned);
        }
        u32::try_from(self.0 / INSN_SIZE)
            .map(Slot)
            .map_err(|_| SlotError::TooLarge)
    }
}

/// Why a byte offset names no instruction slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotError {
    /// Not a multiple of 8.
    Misaligned,
    /// Beyond the 2^32 slots an index can name.
    TooLarge,
}

impl std::fmt::Display for SlotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SlotError::Misaligned => "is not a multiple of 8",
            SlotError::TooLarge => "is beyond the 2^32 instructions a program can have",
        })
    }
}

pub use crate::opcode::{OP_CALL, OP_LD_IMM64};
/// `src_reg` of a call to a BPF-to-BPF function (BPF_PSEUDO_CALL).
pub const PSEUDO_CALL: u8 = 1;

/// One decoded instruction slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    /// The opcode byte, as the verifier log prints it in `(xx)`.
    pub code: u8,
    /// Destination register.
    pub dst: u8,
    /// Source register (or a pseudo kind for calls and `ld_imm64`).
    pub src: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl Insn {
    /// Decodes 8 bytes in the object's byte order.
    ///
    /// The register byte holds `dst_reg:4, src_reg:4` as C bitfields: dst is the low nibble on
    /// little-endian targets and the high nibble on big-endian ones.
    pub fn decode(b: [u8; 8], endian: Endianness) -> Insn {
        let [code, regs, o0, o1, i0, i1, i2, i3] = b;
        match endian {
            Endianness::Little => Insn {
                code,
                dst: regs & 0xf,
                src: regs >> 4,
                off: i16::from_le_bytes([o0, o1]),
                imm: i32::from_le_bytes([i0, i1, i2, i3]),
            },
            Endianness::Big => Insn {
                code,
                dst: regs >> 4,
                src: regs & 0xf,
                off: i16::from_be_bytes([o0, o1]),
                imm: i32::from_be_bytes([i0, i1, i2, i3]),
            },
        }
    }

    /// Whether this is a BPF-to-BPF call (`call pc+N`).
    pub fn is_pseudo_call(&self) -> bool {
        self.code == OP_CALL && self.src == PSEUDO_CALL
    }

    /// Whether this is the first slot of a 16-byte `ld_imm64`.
    pub fn is_ld_imm64(&self) -> bool {
        self.code == OP_LD_IMM64
    }

    /// Where the verifier goes after this instruction (`do_check` in kernel/bpf/verifier.c).
    pub fn flow(&self) -> Flow {
        use crate::opcode::{CLASS_JMP as JMP, OP_MASK, class};
        let (class, op) = (class(self.code), self.code & OP_MASK);
        if !crate::opcode::is_jump_class(self.code) {
            return Flow::Next(if self.is_ld_imm64() { 2 } else { 1 });
        }
        match op {
            // `ja` takes its offset from `off`; `gotol` (BPF_JMP32 | BPF_JA) from `imm`.
            0x00 if class == JMP => Flow::Jump(i64::from(self.off)),
            0x00 => Flow::Jump(i64::from(self.imm)),
            0x80 if self.is_pseudo_call() => Flow::Call(i64::from(self.imm)),
            // Helpers and kfuncs return to the next instruction.
            0x80 => Flow::Next(1),
            0x90 => Flow::Exit,
            // Every other jump, `may_goto` included, may go either way.
            _ => Flow::Branch(i64::from(self.off)),
        }
    }
}

/// Where control goes after an instruction ([`Insn::flow`]). Offsets count instructions from the
/// next one, as in the instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// On to the instruction this many slots on (2 after an `ld_imm64`).
    Next(u64),
    /// Always to the instruction `off` after the next (`ja`, `gotol`).
    Jump(i64),
    /// To the next instruction or to the one `off` after it: a conditional jump.
    Branch(i64),
    /// Into the function `off` after the next, and back to the next (`call pc+off`).
    Call(i64),
    /// Out of the function.
    Exit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_both_byte_orders() {
        // call pc+3 (85 10 00 00 03 00 00 00) little endian: dst 0, src 1.
        let le = Insn::decode([0x85, 0x10, 0, 0, 3, 0, 0, 0], Endianness::Little);
        assert!(le.is_pseudo_call());
        assert_eq!(le.imm, 3);
        let be = Insn::decode([0x85, 0x01, 0, 0, 0, 0, 0, 3], Endianness::Big);
        assert_eq!(be, le);
        let ldx = Insn::decode([0x61, 0x21, 0xfc, 0xff, 0, 0, 0, 0], Endianness::Little);
        assert_eq!((ldx.dst, ldx.src, ldx.off), (1, 2, -4));
    }

    #[test]
    fn flow_follows_the_verifier() {
        let insn = |code, src, off, imm| Insn {
            code,
            dst: 0,
            src,
            off,
            imm,
        };
        let cases = [
            (insn(0xb7, 0, 0, 0), Flow::Next(1)),           // r0 = 0
            (insn(0x18, 0, 0, 0), Flow::Next(2)),           // ld_imm64
            (insn(0x85, 0, 0, 1), Flow::Next(1)),           // call bpf_map_lookup_elem
            (insn(0x85, 2, 0, 7), Flow::Next(1)),           // call a kfunc
            (insn(0x85, 1, 0, 5), Flow::Call(5)),           // call pc+5
            (insn(0x95, 0, 0, 0), Flow::Exit),              // exit
            (insn(0x05, 0, -3, 0), Flow::Jump(-3)),         // goto pc-3
            (insn(0x06, 0, 0, 70_000), Flow::Jump(70_000)), // gotol
            (insn(0x15, 0, 9, 0), Flow::Branch(9)),         // if r0 == 0x0 goto pc+9
            (insn(0x16, 0, 2, 0), Flow::Branch(2)),         // if w0 == 0x0 goto pc+2
            (insn(0xe5, 0, 4, 0), Flow::Branch(4)),         // may_goto pc+4
        ];
        for (insn, flow) in cases {
            assert_eq!(insn.flow(), flow, "{insn:?}");
        }
    }

    #[test]
    fn byte_offsets_convert_to_slots_only_when_aligned() {
        assert_eq!(ByteOffset(16).to_slot(), Ok(Slot(2)));
        assert_eq!(ByteOffset(12).to_slot(), Err(SlotError::Misaligned));
        assert_eq!(ByteOffset(u64::MAX - 7).to_slot(), Err(SlotError::TooLarge));
    }
}
