//! BPF opcode bytes: the classes, modes and opcodes the crates look at, in one place.
//!
//! An opcode byte (`code`, printed by the verifier as `(xx)`) holds the instruction class in its
//! low 3 bits; for loads and stores the mode in its top 3, for ALU and jumps the operation in its
//! top 4 (include/uapi/linux/bpf.h, include/uapi/linux/bpf_common.h).

/// `BPF_LD`: loads of immediates (`ld_imm64`).
pub const CLASS_LD: u8 = 0x00;
/// `BPF_LDX`: loads from memory.
pub const CLASS_LDX: u8 = 0x01;
/// `BPF_ST`: stores of immediates.
pub const CLASS_ST: u8 = 0x02;
/// `BPF_STX`: stores of registers, atomics.
pub const CLASS_STX: u8 = 0x03;
/// `BPF_ALU`: 32-bit arithmetic.
pub const CLASS_ALU: u8 = 0x04;
/// `BPF_JMP`: 64-bit jumps, calls, exit.
pub const CLASS_JMP: u8 = 0x05;
/// `BPF_JMP32`: 32-bit jumps, `gotol`.
pub const CLASS_JMP32: u8 = 0x06;
/// `BPF_ALU64`: 64-bit arithmetic.
pub const CLASS_ALU64: u8 = 0x07;

/// The mode bits of a load or store.
pub const MODE_MASK: u8 = 0xe0;
/// `BPF_ATOMIC` mode: atomic operations (compare-and-exchange uses r0 implicitly).
pub const MODE_ATOMIC: u8 = 0xc0;
/// `BPF_MEM` mode: a load or store at a register plus an offset.
pub const MODE_MEM: u8 = 0x60;

/// `BPF_X`: an ALU operation's or jump's second operand is a register (`BPF_K`, 0: the
/// immediate).
pub const SOURCE_REG: u8 = 0x08;

/// The operation bits of an ALU or jump instruction.
pub const OP_MASK: u8 = 0xf0;
/// `BPF_JA`: an unconditional jump.
pub const OP_JA: u8 = 0x00;
/// `BPF_CALL`'s operation bits.
pub const OP_CALL_BITS: u8 = 0x80;
/// `BPF_EXIT`'s operation bits.
pub const OP_EXIT_BITS: u8 = 0x90;
/// `BPF_JCOND`'s operation bits (`may_goto`).
pub const OP_JCOND: u8 = 0xe0;
/// `BPF_NEG`'s operation bits (ALU): no second operand.
pub const OP_NEG: u8 = 0x80;
/// `BPF_MOV`'s operation bits (ALU): with `BPF_X` and an offset of 8, 16 or 32, a
/// sign-extending move.
pub const OP_MOV: u8 = 0xb0;
/// `BPF_END`'s operation bits (ALU byte swaps): the immediate is the width.
pub const OP_END: u8 = 0xd0;

/// Opcode of `call` (BPF_JMP | BPF_CALL).
pub const OP_CALL: u8 = 0x85;
/// Opcode of `exit` (BPF_JMP | BPF_EXIT).
pub const OP_EXIT: u8 = 0x95;
/// Opcode of `gotol` (BPF_JMP32 | BPF_JA): jumps by its immediate, not its offset.
pub const OP_GOTOL: u8 = 0x06;
/// Opcode of `ld_imm64` (BPF_LD | BPF_IMM | BPF_DW), which takes two slots.
pub const OP_LD_IMM64: u8 = 0x18;

/// The bytes a load or store of opcode `code` moves (`BPF_SIZE`: `W`, `H`, `B`, `DW`).
#[inline]
pub fn size_bytes(code: u8) -> u8 {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

/// Whether `code` stores to memory (`BPF_ST` or `BPF_STX` in `BPF_MEM` mode; atomics aside).
#[inline]
pub fn is_store(code: u8) -> bool {
    matches!(class(code), CLASS_ST | CLASS_STX) && code & MODE_MASK == MODE_MEM
}

/// The class of opcode `code`.
#[inline]
pub fn class(code: u8) -> u8 {
    code & 0x07
}

/// Whether `code` is of a jump class (`BPF_JMP` or `BPF_JMP32`: jumps, calls, exit).
#[inline]
pub fn is_jump_class(code: u8) -> bool {
    matches!(class(code), CLASS_JMP | CLASS_JMP32)
}
