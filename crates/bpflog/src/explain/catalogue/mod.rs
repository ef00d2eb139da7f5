//! The catalogue of rejections: the verifier's final error text mapped to a stable class.
//!
//! The messages are the kernel's own, taken from `kernel/bpf/verifier.c` of Linux 6.12
//! (`check_mem_region_access`, `__check_mem_access`, `check_ctx_access`, `check_stack_range_initialized`,
//! `check_reg_arg`, `check_reference_leak`, `check_return_code`, `check_reg_type`,
//! `check_helper_call`, `is_state_visited`, `visit_insn`, `do_check`) and from the selftests'
//! `__msg(...)` in `tools/testing/selftests/bpf/progs/verifier_*.c`; older wordings still seen in
//! the field (`unknown func`, `invalid stack off=`, `invalid indirect read from stack`) are kept
//! beside the current ones. A class id is stable: tools match on it (`[class]` in gcc output,
//! `ruleId`), so an id is never renamed, only added.

mod entries;
mod rejection;

use entries::{ENTRIES, Pattern, StackRead, in_frame, stack_read, stack_read_parts};
pub use rejection::{Message, Rejection};

/// The stable id of a class of rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ClassId {
    /// `nullable-dereference`
    NullableDereference,
    /// `map-value-out-of-range`
    MapValueOutOfRange,
    /// `packet-out-of-range`
    PacketOutOfRange,
    /// `stack-out-of-range`
    StackOutOfRange,
    /// `invalid-context-access`
    InvalidContextAccess,
    /// `max-out-of-range`
    MaxOutOfRange,
    /// `min-negative`
    MinNegative,
    /// `unbounded-access`
    UnboundedAccess,
    /// `uninitialized-register`
    UninitializedRegister,
    /// `uninitialized-stack`
    UninitializedStack,
    /// `unreleased-reference`
    UnreleasedReference,
    /// `bad-return-value`
    BadReturnValue,
    /// `helper-argument-type`
    HelperArgumentType,
    /// `too-complex`
    TooComplex,
    /// `infinite-loop`
    InfiniteLoop,
    /// `helper-not-allowed`
    HelperNotAllowed,
    /// `pointer-leak`
    PointerLeak,
    /// `pointer-arithmetic`
    PointerArithmetic,
    /// `division-by-zero`
    DivisionByZero,
    /// `misaligned-access`
    MisalignedAccess,
    /// `access-not-allowed`
    AccessNotAllowed,
    /// `invalid-field-access`
    InvalidFieldAccess,
    /// `spin-lock-rule`
    SpinLockRule,
    /// `locked-region-rule`
    LockedRegionRule,
    /// `not-a-pointer`
    NotAPointer,
    /// `core-relocation-failed`
    CoreRelocationFailed,
    /// `mixed-pointer-types`
    MixedPointerTypes,
    /// `missing-kernel-symbol`
    MissingKernelSymbol,
    /// `stack-size`
    StackSize,
    /// `invalid-program`
    InvalidProgram,
    /// `unknown`
    Unknown,
}

impl ClassId {
    /// The kebab-case id tools match on (`nullable-dereference`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ClassId::NullableDereference => "nullable-dereference",
            ClassId::MapValueOutOfRange => "map-value-out-of-range",
            ClassId::PacketOutOfRange => "packet-out-of-range",
            ClassId::StackOutOfRange => "stack-out-of-range",
            ClassId::InvalidContextAccess => "invalid-context-access",
            ClassId::MaxOutOfRange => "max-out-of-range",
            ClassId::MinNegative => "min-negative",
            ClassId::UnboundedAccess => "unbounded-access",
            ClassId::UninitializedRegister => "uninitialized-register",
            ClassId::UninitializedStack => "uninitialized-stack",
            ClassId::UnreleasedReference => "unreleased-reference",
            ClassId::BadReturnValue => "bad-return-value",
            ClassId::HelperArgumentType => "helper-argument-type",
            ClassId::TooComplex => "too-complex",
            ClassId::InfiniteLoop => "infinite-loop",
            ClassId::HelperNotAllowed => "helper-not-allowed",
            ClassId::PointerLeak => "pointer-leak",
            ClassId::PointerArithmetic => "pointer-arithmetic",
            ClassId::DivisionByZero => "division-by-zero",
            ClassId::MisalignedAccess => "misaligned-access",
            ClassId::AccessNotAllowed => "access-not-allowed",
            ClassId::InvalidFieldAccess => "invalid-field-access",
            ClassId::SpinLockRule => "spin-lock-rule",
            ClassId::LockedRegionRule => "locked-region-rule",
            ClassId::NotAPointer => "not-a-pointer",
            ClassId::CoreRelocationFailed => "core-relocation-failed",
            ClassId::MixedPointerTypes => "mixed-pointer-types",
            ClassId::MissingKernelSymbol => "missing-kernel-symbol",
            ClassId::StackSize => "stack-size",
            ClassId::InvalidProgram => "invalid-program",
            ClassId::Unknown => "unknown",
        }
    }

    /// Its class.
    pub const fn class(self) -> &'static Class {
        match self {
            ClassId::NullableDereference => &NULLABLE_DEREFERENCE,
            ClassId::MapValueOutOfRange => &MAP_VALUE_OUT_OF_RANGE,
            ClassId::PacketOutOfRange => &PACKET_OUT_OF_RANGE,
            ClassId::StackOutOfRange => &STACK_OUT_OF_RANGE,
            ClassId::InvalidContextAccess => &CONTEXT_ACCESS,
            ClassId::MaxOutOfRange => &MAX_OUT_OF_RANGE,
            ClassId::MinNegative => &NEGATIVE_OFFSET,
            ClassId::UnboundedAccess => &UNBOUNDED_ACCESS,
            ClassId::UninitializedRegister => &UNINITIALIZED_REGISTER,
            ClassId::UninitializedStack => &UNINITIALIZED_STACK,
            ClassId::UnreleasedReference => &UNRELEASED_REFERENCE,
            ClassId::BadReturnValue => &BAD_RETURN_VALUE,
            ClassId::HelperArgumentType => &HELPER_ARGUMENT,
            ClassId::TooComplex => &TOO_COMPLEX,
            ClassId::InfiniteLoop => &INFINITE_LOOP,
            ClassId::HelperNotAllowed => &HELPER_NOT_ALLOWED,
            ClassId::PointerLeak => &POINTER_LEAK,
            ClassId::PointerArithmetic => &POINTER_ARITHMETIC,
            ClassId::DivisionByZero => &DIVISION_BY_ZERO,
            ClassId::MisalignedAccess => &MISALIGNED_ACCESS,
            ClassId::AccessNotAllowed => &ACCESS_NOT_ALLOWED,
            ClassId::InvalidFieldAccess => &FIELD_ACCESS,
            ClassId::SpinLockRule => &SPIN_LOCK,
            ClassId::LockedRegionRule => &LOCKED_REGION,
            ClassId::NotAPointer => &NOT_A_POINTER,
            ClassId::CoreRelocationFailed => &CORE_RELOCATION,
            ClassId::MixedPointerTypes => &MIXED_POINTERS,
            ClassId::MissingKernelSymbol => &MISSING_KERNEL_SYMBOL,
            ClassId::StackSize => &STACK_SIZE,
            ClassId::InvalidProgram => &INVALID_PROGRAM,
            ClassId::Unknown => &UNKNOWN,
        }
    }
}

impl std::fmt::Display for ClassId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ClassId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One class of rejection: what it is called and what the verifier requires. What to change
/// is built for each rejection from what its error line and the program say
/// (`explain/help.rs`).
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Class {
    /// The stable id.
    pub id: ClassId,
    /// A one-line title.
    pub title: &'static str,
    /// What the verifier requires, in plain words.
    pub requires: &'static str,
}

/// A NULL-able pointer (a map lookup's result, ...) used before a NULL check.
pub const NULLABLE_DEREFERENCE: Class = Class {
    id: ClassId::NullableDereference,
    title: "a pointer that may be NULL is used without a NULL check",
    requires: "a pointer whose type ends in `_or_null` must be compared with NULL on the path before it is dereferenced or passed on",
};

/// A read or write past the end (or before the start) of a map value.
pub const MAP_VALUE_OUT_OF_RANGE: Class = Class {
    id: ClassId::MapValueOutOfRange,
    title: "an access outside the map value",
    requires: "every access through a map value pointer must lie within `value_size` bytes of the value, for every value the offset can take",
};

/// A packet access not covered by a check against `data_end`.
pub const PACKET_OUT_OF_RANGE: Class = Class {
    id: ClassId::PacketOutOfRange,
    title: "a packet access not proven to lie before data_end",
    requires: "every byte read or written through a packet pointer must be proven to lie before `data_end` by a comparison on the path",
};

/// A stack access out of the frame, or at an offset the verifier cannot bound.
pub const STACK_OUT_OF_RANGE: Class = Class {
    id: ClassId::StackOutOfRange,
    title: "a stack access outside the frame or at an unbounded offset",
    requires: "a stack access must lie within the 512-byte frame, at an offset the verifier can bound on every path",
};

/// A context access at an offset or size the program type does not allow.
pub const CONTEXT_ACCESS: Class = Class {
    id: ClassId::InvalidContextAccess,
    title: "an access to the program's context the program type does not allow",
    requires: "the context may be read only at the offsets and sizes of the fields the program type exposes, through the context pointer itself",
};

/// A variable offset whose upper bound is too large for the memory.
pub const MAX_OUT_OF_RANGE: Class = Class {
    id: ClassId::MaxOutOfRange,
    title: "the largest value of an offset reaches past the memory",
    requires: "the largest value a variable offset can take, plus the access size, must stay within the memory it points into",
};

/// A variable offset whose lower bound is negative.
pub const NEGATIVE_OFFSET: Class = Class {
    id: ClassId::MinNegative,
    title: "an offset that may be negative",
    requires: "an offset added to a pointer must be known to be non-negative",
};

/// A variable offset with no bound at all.
pub const UNBOUNDED_ACCESS: Class = Class {
    id: ClassId::UnboundedAccess,
    title: "an access at an offset with no bound",
    requires: "a variable offset must be bounded above and below on the path before it is used to access memory",
};

/// A register read before anything was written to it.
pub const UNINITIALIZED_REGISTER: Class = Class {
    id: ClassId::UninitializedRegister,
    title: "a register is read before it is written",
    requires: "every register must be written on every path before it is read (R1-R5 are clobbered by each call)",
};

/// A stack slot read before anything was written to it.
pub const UNINITIALIZED_STACK: Class = Class {
    id: ClassId::UninitializedStack,
    title: "stack memory is read before it is written",
    requires: "every byte of the stack read (also by a helper reading a buffer) must have been written on the path first (for a loader without CAP_PERFMON; with it, stack never written reads as it is)",
};

/// A reference (socket, ringbuf record, kptr, ...) still held at exit.
pub const UNRELEASED_REFERENCE: Class = Class {
    id: ClassId::UnreleasedReference,
    title: "a reference is not released on some path",
    requires: "every acquired reference must be released (or stored) on every path before the program exits",
};

/// The program's return value is outside what the hook allows.
pub const BAD_RETURN_VALUE: Class = Class {
    id: ClassId::BadReturnValue,
    title: "the program returns a value its hook does not allow",
    requires: "R0 at exit must be a known scalar within the range the program type and attach point allow",
};

/// A helper or kfunc argument of the wrong type.
pub const HELPER_ARGUMENT: Class = Class {
    id: ClassId::HelperArgumentType,
    title: "a helper, kfunc or function argument of the wrong type or size",
    requires: "each argument register must hold the type the helper's prototype asks for (a map pointer, a stack pointer, a non-NULL pointer, ...)",
};

/// The verifier gave up: too many instructions or states.
pub const TOO_COMPLEX: Class = Class {
    id: ClassId::TooComplex,
    title: "the program is too complex for the verifier",
    requires: "the verifier must finish within 1 million processed instructions and 8192 pending branches",
};

/// A loop the verifier found no way out of.
pub const INFINITE_LOOP: Class = Class {
    id: ClassId::InfiniteLoop,
    title: "a loop the verifier cannot prove to end",
    requires: "every loop must end within a bound the verifier can see (or use `bpf_loop`, open-coded iterators or `may_goto`)",
};

/// A helper or kfunc the program type may not call.
pub const HELPER_NOT_ALLOWED: Class = Class {
    id: ClassId::HelperNotAllowed,
    title: "a helper, kfunc, map or feature this program type does not allow",
    requires: "a program may call only the helpers and kfuncs, and use only the maps and features, its program type, attach point, license and context (sleepable, callback, locked region) allow on this kernel",
};

/// A kernel pointer written where user space or the return value can see it.
pub const POINTER_LEAK: Class = Class {
    id: ClassId::PointerLeak,
    title: "a kernel address would leak",
    requires: "a pointer may not be stored into maps, memory or context, or returned, where an unprivileged reader could see it",
};

/// Arithmetic on a pointer the verifier does not allow.
pub const POINTER_ARITHMETIC: Class = Class {
    id: ClassId::PointerArithmetic,
    title: "arithmetic on a pointer the verifier does not allow",
    requires: "a pointer may only be moved by adding or subtracting a bounded scalar, within the object it points into, and only for pointer types that allow it",
};

/// A division or modulo by a constant zero.
pub const DIVISION_BY_ZERO: Class = Class {
    id: ClassId::DivisionByZero,
    title: "a division by a constant zero",
    requires: "a division or modulo by an immediate must not divide by zero",
};

/// An access at an offset the type's alignment forbids.
pub const MISALIGNED_ACCESS: Class = Class {
    id: ClassId::MisalignedAccess,
    title: "a misaligned memory access",
    requires: "stack, map value and packet accesses must be aligned to their size where the verifier checks alignment",
};

/// A read or write the memory does not allow at all.
pub const ACCESS_NOT_ALLOWED: Class = Class {
    id: ClassId::AccessNotAllowed,
    title: "a read or write the memory does not allow",
    requires: "read-only memory (the frame pointer, read-only maps, `const` data) is never written, write-only memory never read",
};

/// A field of a kernel object accessed in a way its type does not allow.
pub const FIELD_ACCESS: Class = Class {
    id: ClassId::InvalidFieldAccess,
    title: "an access to a kernel object's field that is not allowed",
    requires: "fields of sockets and other kernel objects may be read only where the verifier allows, with their own size",
};

/// A rule of `bpf_spin_lock` broken.
pub const SPIN_LOCK: Class = Class {
    id: ClassId::SpinLockRule,
    title: "a rule of bpf_spin_lock is broken",
    requires: "a `bpf_spin_lock`-ed region must unlock the same lock, on every path, and call nothing but what the verifier allows inside it",
};

/// A rule of an RCU read-side or non-preemptible region broken.
pub const LOCKED_REGION: Class = Class {
    id: ClassId::LockedRegionRule,
    title: "a rule of an RCU read-side or non-preemptible region is broken",
    requires: "a region opened by `bpf_rcu_read_lock` or `bpf_preempt_disable` must be closed on every path before the program exits, and may not call what sleeps, throws or tail-calls inside it",
};

/// A memory access through a register that holds no pointer the access may use.
pub const NOT_A_POINTER: Class = Class {
    id: ClassId::NotAPointer,
    title: "memory accessed through a value that is not a usable pointer",
    requires: "memory may be accessed only through a pointer the verifier tracks (not a scalar, not a pointer of a type that cannot be dereferenced)",
};

/// A CO-RE relocation the kernel's BTF could not satisfy.
pub const CORE_RELOCATION: Class = Class {
    id: ClassId::CoreRelocationFailed,
    title: "a CO-RE relocation the kernel cannot resolve",
    requires: "each field or type a CO-RE relocation names must exist in the running kernel's BTF, unless guarded by `bpf_core_field_exists`",
};

/// One load or store instruction reached with pointers to different kinds of memory.
pub const MIXED_POINTERS: Class = Class {
    id: ClassId::MixedPointerTypes,
    title: "one instruction reached with pointers to different kinds of memory",
    requires: "a load or store instruction must access the same kind of memory (the context, the stack, a map value, the packet, ...) on every path that reaches it: the verifier rewrites context accesses in place",
};

/// A kfunc or `__ksym` variable the running kernel does not have.
pub const MISSING_KERNEL_SYMBOL: Class = Class {
    id: ClassId::MissingKernelSymbol,
    title: "a kfunc or kernel symbol the running kernel does not have",
    requires: "every kfunc called and every `__ksym` variable used must exist in the running kernel, unless the program checks for it first",
};

/// The frames of a chain of calls take more stack than the kernel allows, or nest too deep.
pub const STACK_SIZE: Class = Class {
    id: ClassId::StackSize,
    title: "the call stack is too large",
    requires: "the stack frames of a chain of calls (each function's stack rounded up to 32 bytes) may take at most 512 bytes together, calls may nest at most 8 frames deep, and a function that tail-calls may be called with at most 256 bytes of stack below it",
};

/// Bytecode that breaks a rule the verifier checks before it follows any path.
pub const INVALID_PROGRAM: Class = Class {
    id: ClassId::InvalidProgram,
    title: "the bytecode breaks a structural rule the verifier checks before any state",
    requires: "every instruction must be reachable, every jump must land inside the program, the last instruction must be an exit or a jump, and every opcode (and each `ld_imm64` pair) must be one the kernel knows",
};

/// What no entry of the catalogue matches.
pub const UNKNOWN: Class = Class {
    id: ClassId::Unknown,
    title: "a rejection bpflog does not know",
    requires: "see the verifier's message",
};

/// Every class, `unknown` last.
pub const CLASSES: &[&Class] = &[
    &NULLABLE_DEREFERENCE,
    &MAP_VALUE_OUT_OF_RANGE,
    &PACKET_OUT_OF_RANGE,
    &STACK_OUT_OF_RANGE,
    &CONTEXT_ACCESS,
    &MAX_OUT_OF_RANGE,
    &NEGATIVE_OFFSET,
    &UNBOUNDED_ACCESS,
    &UNINITIALIZED_REGISTER,
    &UNINITIALIZED_STACK,
    &UNRELEASED_REFERENCE,
    &BAD_RETURN_VALUE,
    &HELPER_ARGUMENT,
    &TOO_COMPLEX,
    &INFINITE_LOOP,
    &HELPER_NOT_ALLOWED,
    &POINTER_LEAK,
    &POINTER_ARITHMETIC,
    &DIVISION_BY_ZERO,
    &MISALIGNED_ACCESS,
    &ACCESS_NOT_ALLOWED,
    &FIELD_ACCESS,
    &SPIN_LOCK,
    &LOCKED_REGION,
    &NOT_A_POINTER,
    &CORE_RELOCATION,
    &MIXED_POINTERS,
    &MISSING_KERNEL_SYMBOL,
    &STACK_SIZE,
    &INVALID_PROGRAM,
    &UNKNOWN,
];

/// The class of one error line, if the catalogue knows it.
pub fn class_of(line: &[u8]) -> Option<&'static Class> {
    let text = String::from_utf8_lossy(line);
    ENTRIES.iter().find_map(|(pattern, class)| {
        let hit = match pattern {
            Pattern::Contains(needle) => text.contains(needle),
            Pattern::Then(first, second) => text
                .find(first)
                .is_some_and(|at| text[at + first.len()..].contains(second)),
            Pattern::ReadInFrame => {
                text.contains(" stack R") && text.contains(" off=") && {
                    stack_read(&text).is_some_and(in_frame)
                }
            }
        };
        hit.then_some(*class)
    })
}

/// The class of a rejection and the error line that gave it: the first of `errors` the
/// catalogue knows, or [`UNKNOWN`] with the first line.
pub(crate) fn class_of_errors<'e>(errors: &[&'e [u8]]) -> (&'static Class, Option<&'e [u8]>) {
    let (class, line) = errors
        .iter()
        .find_map(|line| class_of(line).map(|class| (class, Some(*line))))
        .unwrap_or((&UNKNOWN, errors.first().copied()));
    // The context passed to a global function's plain memory argument: the access the
    // argument's check refused is the context's (`invalid bpf_context access off=3 size=1`,
    // then `Caller passes invalid args into func#1`).
    let passed = |e: &&[u8]| CALLER_PASSES.find(e).is_some();
    if class.id == ClassId::InvalidContextAccess && errors.iter().any(passed) {
        return (&HELPER_ARGUMENT, line);
    }
    (class, line)
}

/// btf_check_subprog_call's error: a global function's argument refused.
static CALLER_PASSES: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"Caller passes invalid args"));

#[cfg(test)]
mod tests {
    use super::*;

    /// Error lines as the kernel printed them: the fixture logs (`tests/fixtures/logs`) and the
    /// selftests' `__msg(...)` of Linux 6.12 (`tools/testing/selftests/bpf/progs/verifier_*.c`).
    const REAL: &[(&str, &str)] = &[
        (
            "invalid indirect access to stack R3 off=-513 size=8",
            "stack-out-of-range",
        ),
        (
            "value -4294967168 makes map_value pointer be out of bounds",
            "pointer-arithmetic",
        ),
        ("type=sock_or_null expected=sock", "nullable-dereference"),
        ("unlock of different lock", "spin-lock-rule"),
        (
            "tail_call would lead to reference leak",
            "unreleased-reference",
        ),
        (
            "variable ctx access var_off=(0x0; 0x4)",
            "invalid-context-access",
        ),
        ("the call stack of 8 frames is too deep !", "stack-size"),
        (
            "tracing progs cannot use bpf_timer yet",
            "helper-not-allowed",
        ),
        (
            "invalid write to stack R1 off=-79992 size=8",
            "stack-out-of-range",
        ),
        (
            "R0 tried to subtract pointer from scalar",
            "pointer-arithmetic",
        ),
        ("R0 pointer += pointer prohibited", "pointer-arithmetic"),
        (
            "math between map_value pointer and 4294967295 is not allowed",
            "pointer-arithmetic",
        ),
        ("div by zero", "division-by-zero"),
        (
            "misaligned stack access off 0+-10+8 size 8",
            "misaligned-access",
        ),
        ("frame pointer is read only", "access-not-allowed"),
        (
            "R1 invalid sock access off=0 size=8",
            "invalid-field-access",
        ),
        (
            "R0 has smin=1 smax=1 should have been in [-4095, 0]",
            "bad-return-value",
        ),
        (
            "At callback return the register R0 has smin=1001 should have been in [0, 1]",
            "bad-return-value",
        ),
        (
            "R4 invalid zero-sized read: u64=[0,0]",
            "helper-argument-type",
        ),
        (
            "R1 must be referenced when passed to release function",
            "helper-argument-type",
        ),
        (
            "function calls are not allowed while holding a lock",
            "spin-lock-rule",
        ),
        // reject_subprog.xdp_reject_subprog.l1.log
        (
            "R1 invalid mem access 'map_value_or_null'",
            "nullable-dereference",
        ),
        // reject_global.xdp_reject_global.l1.log
        (
            "R3 invalid mem access 'mem_or_null'",
            "nullable-dereference",
        ),
        // reject_entry.xdp_reject_entry.l1.log
        (
            "invalid access to packet, off=20 size=1, R1(id=0,off=20,r=14)",
            "packet-out-of-range",
        ),
        ("R1 offset is outside of the packet", "packet-out-of-range"),
        // reject_dropped.xdp_reject_dropped.l1.log
        (
            "invalid bpf_context access off=4096 size=4",
            "invalid-context-access",
        ),
        // reject_callback.xdp_reject_callback.l1.log
        (
            "invalid unbounded variable-offset write to stack R2",
            "stack-out-of-range",
        ),
        // core_fail.raw_tp_reject_core.l1.log
        (
            "failed to resolve CO-RE relocation <byte_off> [18] struct task_struct___missing.no_such_field_in_any_kernel (0:0 @ offset 0)",
            "core-relocation-failed",
        ),
        // selftests
        (
            "invalid access to map value, value_size=48 off=4 size=49",
            "map-value-out-of-range",
        ),
        (
            "R0 max value is outside of the allowed memory range",
            "max-out-of-range",
        ),
        (
            "R0 min value is outside of the allowed memory range",
            "max-out-of-range",
        ),
        (
            "R1 min value is negative, either use unsigned index or do a if (index >=0) check.",
            "min-negative",
        ),
        (
            "R1 unbounded memory access, make sure to bounds check any such access",
            "unbounded-access",
        ),
        // Inside the frame: below what the path wrote, refused to a loader without CAP_PERFMON
        // (verifier_raw_stack.c `__msg_unpriv`); outside it (verifier_int_ptr.c,
        // verifier_raw_stack.c): out of range.
        (
            "invalid read from stack R6 off=-8 size=8",
            "uninitialized-stack",
        ),
        (
            "invalid indirect access to stack R1 off=-8 size=8",
            "uninitialized-stack",
        ),
        (
            "invalid indirect access to stack R4 off=-4 size=8",
            "stack-out-of-range",
        ),
        (
            "invalid indirect access to stack R3 off=-513 size=8",
            "stack-out-of-range",
        ),
        (
            "invalid write to stack R1 off=-8 size=8",
            "stack-out-of-range",
        ),
        ("R2 !read_ok", "uninitialized-register"),
        (
            "invalid read from stack R2 off -8+0 size 8",
            "uninitialized-stack",
        ),
        (
            "invalid read from stack off -8+0 size 8",
            "uninitialized-stack",
        ),
        (
            "Unreleased reference id=2 alloc_insn=7",
            "unreleased-reference",
        ),
        (
            "At program exit the register R0 has smin=64 smax=64 should have been in [0, 1]",
            "bad-return-value",
        ),
        (
            "At program exit the register R0 has value (0x40; 0x0) should have been in (0x0; 0x1)",
            "bad-return-value",
        ),
        ("R1 type=scalar expected=fp", "helper-argument-type"),
        (
            "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value, mem, ringbuf_mem, buf, trusted_ptr_",
            "helper-argument-type",
        ),
        (
            "BPF program is too large. Processed 1000001 insn",
            "too-complex",
        ),
        ("The sequence of 8193 jumps is too complex.", "too-complex"),
        ("infinite loop detected at insn 2", "infinite-loop"),
        ("back-edge from insn 1 to 0", "infinite-loop"),
        ("unknown func bpf_trace_printk#6", "helper-not-allowed"),
        (
            "program of this type cannot use helper bpf_ktime_get_coarse_ns#160",
            "helper-not-allowed",
        ),
        ("R0 invalid mem access 'scalar'", "not-a-pointer"),
        ("R0 leaks addr as return value", "pointer-leak"),
        (
            "Possibly NULL pointer passed to trusted arg0",
            "nullable-dereference",
        ),
        (
            "R2 pointer arithmetic on map_value_or_null prohibited, null-check it first",
            "nullable-dereference",
        ),
    ];

    /// Error lines of the selftests' rejected logs on Linux 6.18 (tests/sweeps/explain.py)
    /// the catalogue first left `unknown`.
    const SWEPT: &[(&str, &str)] = &[
        (
            "same insn cannot be used with different pointers",
            "mixed-pointer-types",
        ),
        (
            "kfunc 'bpf_nonexistent_kfunc' is referenced but wasn't resolved",
            "missing-kernel-symbol",
        ),
        (
            "ldimm64 failed to find the address for kernel symbol 'bpf_prog_active'.",
            "missing-kernel-symbol",
        ),
        (
            "Expected an initialized dynptr as arg #0",
            "helper-argument-type",
        ),
        ("cannot overwrite referenced dynptr", "unreleased-reference"),
        (
            "BPF_EXIT instruction in main prog cannot be used inside bpf_preempt_disable-ed region",
            "locked-region-rule",
        ),
        (
            "bpf_throw cannot be used inside bpf_rcu_read_lock-ed region",
            "locked-region-rule",
        ),
        (
            "tail_call cannot be used inside bpf_spin_lock-ed region",
            "spin-lock-rule",
        ),
        (
            "bpf_throw kfunc (insn 8) cannot be called from callback subprog 2",
            "helper-not-allowed",
        ),
        (
            "get_local_storage() doesn't support non-zero flags",
            "helper-argument-type",
        ),
        ("arg 1 is an unacquired reference", "helper-argument-type"),
        (
            "cannot pass in dynptr at an offset=-8",
            "helper-argument-type",
        ),
        (
            "bpf_list_head not found at offset=0",
            "helper-argument-type",
        ),
        (
            "BPF_ATOMIC stores into R1 ctx is not allowed",
            "invalid-context-access",
        ),
        (
            "combined stack size of 2 calls is 544. Too large",
            "stack-size",
        ),
        (
            "arg#0 pointer type STRUCT cgroup must point to scalar, or struct with scalar",
            "helper-argument-type",
        ),
        ("R2 must be a rcu pointer", "helper-argument-type"),
        (
            "potential write to dynptr at off=-16 disallowed",
            "access-not-allowed",
        ),
        (
            "direct access to bpf_list_head is disallowed",
            "invalid-field-access",
        ),
        (
            "variable ptr_ access var_off=(0x0; 0x7) disallowed",
            "invalid-field-access",
        ),
        (
            "access beyond the end of member comm (mend:16) in struct task_struct with off 16 size 1",
            "invalid-field-access",
        ),
        (
            "release kernel function bpf_task_release expects refcounted PTR_TO_BTF_ID",
            "helper-argument-type",
        ),
        (
            "helper call might sleep in a non-sleepable prog",
            "helper-not-allowed",
        ),
        (
            "R1 doesn't have constant offset. bpf_list_head has to be at the constant offset",
            "helper-argument-type",
        ),
        (
            "R3 does not point to a readonly map'",
            "helper-argument-type",
        ),
        (
            "bpf_probe_read_kernel() may write into memory pointed by R1 type=trusted_ptr_",
            "access-not-allowed",
        ),
        (
            "no write support to nf_conn at off 176",
            "invalid-field-access",
        ),
        (
            "dereference of modified dynptr_ptr ptr R1 off=8 disallowed",
            "pointer-arithmetic",
        ),
        (
            "dereference of modified ctx ptr R1 off=4 disallowed",
            "invalid-context-access",
        ),
        ("can't spin_{lock,unlock} in rbtree cb", "spin-lock-rule"),
        (
            "insn 3 cannot call exception cb directly",
            "helper-not-allowed",
        ),
        (
            "arg#1 offset=0, but expected bpf_list_node at offset=48 in struct foo",
            "helper-argument-type",
        ),
    ];

    #[test]
    fn swept_error_lines_get_their_class() {
        for (line, id) in SWEPT {
            let class = class_of(line.as_bytes()).map_or("unknown", |c| c.id.as_str());
            assert_eq!(class, *id, "{line}");
        }
    }

    #[test]
    fn real_error_lines_get_their_class() {
        for (line, id) in REAL {
            let class = class_of(line.as_bytes()).map_or("unknown", |c| c.id.as_str());
            assert_eq!(class, *id, "{line}");
        }
    }

    #[test]
    fn the_first_known_line_classifies() {
        let errors: [&[u8]; 2] = [b"some preamble", b"R1 offset is outside of the packet"];
        let (class, line) = class_of_errors(&errors);
        assert_eq!(class.id, ClassId::PacketOutOfRange);
        assert_eq!(line, Some(errors[1]));
        let (class, line) = class_of_errors(&[b"a message no kernel printed"]);
        assert_eq!(
            (class.id.as_str(), line),
            ("unknown", Some(&b"a message no kernel printed"[..]))
        );
    }

    /// `requires` is printed as it is (and is the SARIF rule's full description, the same for
    /// every program): it has no `{...}` to fill in.
    #[test]
    fn requirements_need_no_filling() {
        for class in CLASSES {
            assert!(!class.requires.contains('{'), "{}", class.id);
        }
    }

    #[test]
    fn ids_are_kebab_case_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for class in CLASSES {
            assert!(
                class
                    .id
                    .as_str()
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{}",
                class.id
            );
            assert!(seen.insert(class.id.as_str()), "{}", class.id);
            assert_eq!(class.id.class(), *class);
        }
    }
}
