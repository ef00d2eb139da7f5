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

/// The stable id of a class of rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// How a message is recognised.
enum Pattern {
    /// The text holds this.
    Contains(&'static str),
    /// The text holds the first, then the second after it.
    Then(&'static str, &'static str),
    /// A read of stack bytes that lie inside the 512-byte frame ([`stack_read`]).
    ReadInFrame,
}

/// The frame bytes an error about a read of the stack names, `(offset, size)` from the frame
/// pointer: `invalid read from stack R10 off=-4 size=4`, `invalid indirect access to stack R1
/// off=-8 size=8` (check_stack_access_within_bounds), `invalid read from stack off -8+2 size 8`,
/// `invalid indirect read from stack R2 off -16+0 size 16` (the first byte not written:
/// check_stack_read_fixed_off, check_stack_range_initialized). `None` for a write, a variable
/// offset, or another message.
fn stack_read(error: &str) -> Option<(i64, i64)> {
    match stack_read_parts(error)? {
        StackRead::Bytes { off, size } => Some((off, size)),
        StackRead::Unwritten { off, written } => Some((off + written, 1)),
    }
}

/// What an error about a read of the stack says of the bytes read ([`stack_read`]).
enum StackRead {
    /// `off=%d size=%d`: the bytes read.
    Bytes { off: i64, size: i64 },
    /// `off %d+%d size %d`: the read's start, and how many bytes from it were written.
    Unwritten { off: i64, written: i64 },
}

/// The numbers of an error about a read of the stack ([`stack_read`]).
fn stack_read_parts(error: &str) -> Option<StackRead> {
    let reads = ["read from stack", "indirect access to stack"];
    let at = reads
        .iter()
        .find_map(|r| error.find(r).map(|at| at + r.len()))?;
    let rest = &error[at..];
    if error.contains("variable-offset") {
        return None;
    }
    let number = |s: &str| -> Option<(i64, usize)> {
        let len = s
            .char_indices()
            .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && c == '-'))
            .count();
        Some((s[..len].parse().ok()?, len))
    };
    if let Some((_, after)) = rest.split_once(" off=") {
        let (off, len) = number(after)?;
        let (size, _) = number(after[len..].strip_prefix(" size=")?)?;
        return Some(StackRead::Bytes { off, size });
    }
    let (_, after) = rest.split_once(" off ")?;
    let (off, len) = number(after)?;
    let (written, _) = number(after[len..].strip_prefix('+')?)?;
    Some(StackRead::Unwritten { off, written })
}

/// Whether the frame bytes `(offset, size)` lie inside the 512-byte frame (`MAX_BPF_STACK`).
fn in_frame((off, size): (i64, i64)) -> bool {
    off >= -512 && size > 0 && off + size <= 0
}

/// The catalogue, most specific first: the first entry whose pattern matches an error line
/// gives its class. Each pattern is a fixed part of a kernel format string.
const ENTRIES: &[(Pattern, &Class)] = &[
    // check_mem_access: `R%d invalid mem access '%s'` with a `..._or_null` type.
    (
        Pattern::Then("invalid mem access '", "or_null"),
        &NULLABLE_DEREFERENCE,
    ),
    // adjust_ptr_min_max_vals: `R%d pointer arithmetic on %s prohibited, null-check it first`.
    (
        Pattern::Then("pointer arithmetic on ", "_or_null"),
        &NULLABLE_DEREFERENCE,
    ),
    (
        Pattern::Contains("Possibly NULL pointer passed to"),
        &NULLABLE_DEREFERENCE,
    ),
    // check_reg_type: `R1 type=sock_or_null expected=sock, ...`, `type=ptr_or_null_ expected=`:
    // a maybe-NULL pointer where the call takes a non-NULL one.
    (Pattern::Then("type=", "or_null"), &NULLABLE_DEREFERENCE),
    (Pattern::Contains("invalid mem access"), &NOT_A_POINTER),
    (
        Pattern::Contains("invalid access to map value"),
        &MAP_VALUE_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("pointer arithmetic of map value goes out of range"),
        &MAP_VALUE_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("invalid access to packet"),
        &PACKET_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("offset is outside of the packet"),
        &PACKET_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("invalid bpf_context access"),
        &CONTEXT_ACCESS,
    ),
    (
        Pattern::Contains("negative offset ctx ptr"),
        &CONTEXT_ACCESS,
    ),
    // check_atomic: `BPF_ATOMIC stores into R%d %s is not allowed` (ctx, pkt, flow_keys, ...).
    (
        Pattern::Then("BPF_ATOMIC stores into R", " is not allowed"),
        &CONTEXT_ACCESS,
    ),
    (
        Pattern::Contains("dereference of modified ctx ptr"),
        &CONTEXT_ACCESS,
    ),
    (
        Pattern::Contains("max value is outside of the allowed memory range"),
        &MAX_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("min value is outside of the allowed memory range"),
        &MAX_OUT_OF_RANGE,
    ),
    (Pattern::Contains("min value is negative"), &NEGATIVE_OFFSET),
    (
        Pattern::Contains("unbounded memory access"),
        &UNBOUNDED_ACCESS,
    ),
    (Pattern::Contains("unbounded min value"), &UNBOUNDED_ACCESS),
    // check_stack_access_within_bounds: `invalid%s stack R%d off=%d size=%d` (` read from`,
    // ` indirect access to`) of bytes inside the frame: refused because they lie below what
    // the path has written (check_stack_slot_within_bounds, for a loader without CAP_PERFMON;
    // a privileged one may read stack never written).
    (Pattern::ReadInFrame, &UNINITIALIZED_STACK),
    // The same message outside the frame (and ` write to`); older `invalid stack off=`.
    (Pattern::Then("stack R", " off="), &STACK_OUT_OF_RANGE),
    (
        Pattern::Contains("invalid write to stack"),
        &STACK_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("variable-offset write to stack"),
        &STACK_OUT_OF_RANGE,
    ),
    (
        Pattern::Contains("variable-offset read from stack"),
        &STACK_OUT_OF_RANGE,
    ),
    (Pattern::Contains("invalid stack off"), &STACK_OUT_OF_RANGE),
    (
        Pattern::Contains("stack pointer arithmetic goes out of range"),
        &STACK_OUT_OF_RANGE,
    ),
    // check_stack_range_initialized / check_stack_read: uninitialised bytes read
    // (`invalid%s read from stack R%d off %d+%d size %d`, `invalid read from stack off %d+%d`).
    (
        Pattern::Contains("invalid read from stack"),
        &UNINITIALIZED_STACK,
    ),
    (
        Pattern::Contains("invalid indirect read from stack"),
        &UNINITIALIZED_STACK,
    ),
    // check_stack_read_fixed_off: a spilled register read back in parts.
    (
        Pattern::Contains("invalid size of register fill"),
        &ACCESS_NOT_ALLOWED,
    ),
    (Pattern::Then("invalid", "stack R"), &STACK_OUT_OF_RANGE),
    (Pattern::Contains("!read_ok"), &UNINITIALIZED_REGISTER),
    (
        Pattern::Contains("Unreleased reference"),
        &UNRELEASED_REFERENCE,
    ),
    // check_return_code: 6.x `... has smin=.. smax=.. should have been in [a, b]`, older
    // `... has value (0x..; 0x..) should have been in (0x..; 0x..)`; the selftests match the
    // tail alone (`R0 has smin=1 smax=1 should have been in [-4095, 0]`).
    (Pattern::Contains("should have been in"), &BAD_RETURN_VALUE),
    (Pattern::Contains("is not a known value"), &BAD_RETURN_VALUE),
    (Pattern::Contains("leaks addr"), &POINTER_LEAK),
    (Pattern::Contains("pointer arithmetic"), &POINTER_ARITHMETIC),
    (Pattern::Then("pointer ", "= pointer"), &POINTER_ARITHMETIC),
    (
        Pattern::Contains("tried to subtract pointer"),
        &POINTER_ARITHMETIC,
    ),
    (Pattern::Contains("bitwise operator"), &POINTER_ARITHMETIC),
    (
        Pattern::Contains("subtraction from stack pointer"),
        &POINTER_ARITHMETIC,
    ),
    (Pattern::Contains("math between"), &POINTER_ARITHMETIC),
    (Pattern::Contains("div by zero"), &DIVISION_BY_ZERO),
    (Pattern::Contains("misaligned"), &MISALIGNED_ACCESS),
    (
        Pattern::Contains("frame pointer is read only"),
        &ACCESS_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("write into map forbidden"),
        &ACCESS_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("read from map forbidden"),
        &ACCESS_NOT_ALLOWED,
    ),
    (Pattern::Contains("cannot write into"), &ACCESS_NOT_ALLOWED),
    (
        Pattern::Contains("only read is supported"),
        &ACCESS_NOT_ALLOWED,
    ),
    (Pattern::Contains("sock access"), &FIELD_ACCESS),
    // check_ptr_to_btf_access, btf_struct_access: fields of kernel objects.
    (Pattern::Contains("variable ptr_ access"), &FIELD_ACCESS),
    (
        Pattern::Contains("access beyond the end of member"),
        &FIELD_ACCESS,
    ),
    (
        Pattern::Then("direct access to ", " is disallowed"),
        &FIELD_ACCESS,
    ),
    (Pattern::Contains("sock_common access"), &FIELD_ACCESS),
    (
        Pattern::Contains("cannot be accessed directly"),
        &FIELD_ACCESS,
    ),
    // `tracing progs cannot use bpf_spin_lock yet` (also bpf_timer, bpf_wq, list and rbtree
    // roots): a feature the program type does not allow, not a rule of the lock.
    (Pattern::Contains("progs cannot use"), &HELPER_NOT_ALLOWED),
    (
        Pattern::Contains("calls are not allowed while holding a lock"),
        &SPIN_LOCK,
    ),
    (
        Pattern::Contains("spin_{lock,unlock} in rbtree cb"),
        &SPIN_LOCK,
    ),
    // process_spin_lock: `off 48 doesn't point to 'struct bpf_spin_lock' that is at 40`: the
    // argument is not the lock.
    (
        Pattern::Contains("doesn't point to 'struct "),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("bpf_spin_lock"), &SPIN_LOCK),
    (Pattern::Contains("bpf_spin_unlock"), &SPIN_LOCK),
    // `... cannot be used inside bpf_rcu_read_lock-ed region` (also `bpf_preempt_disable-ed`),
    // `sleepable helper %s#%d in rcu_read_lock region`, `... in non-preemptible region`,
    // `global function calls are not allowed with preemption disabled`.
    (Pattern::Contains("-ed region"), &LOCKED_REGION),
    (Pattern::Contains("rcu_read_lock region"), &LOCKED_REGION),
    (Pattern::Contains("non-preemptible region"), &LOCKED_REGION),
    (Pattern::Contains("preemption disabled"), &LOCKED_REGION),
    (Pattern::Then(" type=", " expected="), &HELPER_ARGUMENT),
    (Pattern::Contains("expected pointer to"), &HELPER_ARGUMENT),
    (
        Pattern::Contains("expected an initialized"),
        &HELPER_ARGUMENT,
    ),
    // process_dynptr_func, check_kfunc_args, process_kptr_func and friends.
    (
        Pattern::Contains("Expected an initialized"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("expected uninitialized"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("has to be an uninitialized"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("has to be at a constant offset"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("has to be at the constant offset"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("does not point to a readonly map"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("string is not zero-terminated"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("cannot pass in dynptr at an offset"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("cannot release unowned const"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("is an unacquired reference"),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("expects refcounted"), &HELPER_ARGUMENT),
    (Pattern::Contains("must be a rcu pointer"), &HELPER_ARGUMENT),
    (Pattern::Contains("has no valid kptr"), &HELPER_ARGUMENT),
    (
        Pattern::Contains("must be a known constant"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("is not a known constant"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("must point to scalar, or struct with scalar"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Then("Unsupported reg type ", " for "),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("doesn't support non-zero flags"),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("type ID argument must"), &HELPER_ARGUMENT),
    (Pattern::Contains(" not found at offset="), &HELPER_ARGUMENT),
    (
        Pattern::Then("expects arg#", " at offset="),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Then(" offset=", ", but expected "),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("can only take non-owning"),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("must be referenced"), &HELPER_ARGUMENT),
    (Pattern::Contains("has not been acquired"), &HELPER_ARGUMENT),
    (
        Pattern::Contains("Caller passes invalid args"),
        &HELPER_ARGUMENT,
    ),
    // check_map_func_compatibility: `cannot pass map_type %d into func %s#%d`, a map this
    // helper (or this program type with it) does not allow.
    (
        Pattern::Contains("cannot pass map_type"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("invalid zero-sized read"),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("program is too large"), &TOO_COMPLEX),
    (Pattern::Contains("jumps is too complex"), &TOO_COMPLEX),
    // check_max_stack_depth_subprog: `combined stack size of %d calls is %d. Too large`,
    // `stack size of subprog %d is %d. Too large`, `tail_calls are not allowed when call stack
    // of previous frames is %d bytes. Too large`; `the call stack of %d frames is too deep`.
    (Pattern::Contains("stack size of "), &STACK_SIZE),
    (
        Pattern::Contains("call stack of previous frames"),
        &STACK_SIZE,
    ),
    (
        Pattern::Then("the call stack of ", " is too deep"),
        &STACK_SIZE,
    ),
    // check_cfg, check_subprogs, do_check, resolve_pseudo_ldimm64: the program's shape.
    (Pattern::Contains("unreachable insn "), &INVALID_PROGRAM),
    (
        Pattern::Contains("jump out of range from insn"),
        &INVALID_PROGRAM,
    ),
    (
        Pattern::Contains("last insn is not an exit or jmp"),
        &INVALID_PROGRAM,
    ),
    (
        Pattern::Contains("invalid BPF_LD_IMM insn"),
        &INVALID_PROGRAM,
    ),
    (Pattern::Contains("unknown opcode "), &INVALID_PROGRAM),
    (Pattern::Contains("loop detected"), &INFINITE_LOOP),
    (Pattern::Contains("back-edge from insn"), &INFINITE_LOOP),
    (
        Pattern::Contains("program of this type cannot use helper"),
        &HELPER_NOT_ALLOWED,
    ),
    (Pattern::Contains("unknown func "), &HELPER_NOT_ALLOWED),
    (
        Pattern::Contains("GPL-restricted function"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("metadata kfuncs require device-bound"),
        &HELPER_NOT_ALLOWED,
    ),
    // check_reg_type for a helper's BTF-typed argument: `R%d is of type %s but %s is expected`.
    (
        Pattern::Then(" is of type ", " is expected"),
        &HELPER_ARGUMENT,
    ),
    (
        Pattern::Contains("does not allow writes to packet data"),
        &ACCESS_NOT_ALLOWED,
    ),
    // check_mem_reg / check_buffer_access: `R%d invalid variable buffer offset: off=%d, var_off=%s`.
    (
        Pattern::Contains("invalid variable buffer offset"),
        &UNBOUNDED_ACCESS,
    ),
    (
        Pattern::Contains("might sleep in a non-sleepable"),
        &HELPER_NOT_ALLOWED,
    ),
    // Exceptions: `bpf_throw kfunc (insn %d) cannot be called from callback subprog %d`,
    // `insn %d cannot call exception cb directly`.
    (
        Pattern::Contains("cannot be called from callback"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("cannot call exception cb"),
        &HELPER_NOT_ALLOWED,
    ),
    (Pattern::Then("invalid func ", "#"), &HELPER_NOT_ALLOWED),
    (
        Pattern::Contains("calling kernel function"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("calls are not allowed"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("helper call is not allowed"),
        &HELPER_NOT_ALLOWED,
    ),
    (
        Pattern::Contains("failed to resolve CO-RE relocation"),
        &CORE_RELOCATION,
    ),
    // btf_prepare_func_args: the exception callback's signature.
    (
        Pattern::Contains("exception cb only supports single integer argument"),
        &HELPER_ARGUMENT,
    ),
    // check_kfunc_args (`bpf_obj_drop` and friends): the compiler merged two calls whose
    // arguments have different types into one instruction.
    (
        Pattern::Contains("same call cannot be used with different types"),
        &MIXED_POINTERS,
    ),
    // save_aux_ptr_type: one instruction, the context on one path and other memory on another.
    (
        Pattern::Contains("same insn cannot be used with different pointers"),
        &MIXED_POINTERS,
    ),
    // A `__weak` kfunc left unresolved by the loader and called anyway: the kernel's words
    // (fixup_kfunc_call), and libbpf's in their place (its log fixup, libbpf 1.2 and later); a
    // `__ksym` variable (check_pseudo_btf_id).
    (
        Pattern::Contains("invalid kernel function call not eliminated"),
        &MISSING_KERNEL_SYMBOL,
    ),
    (
        Pattern::Then("kfunc '", "' is referenced but wasn't resolved"),
        &MISSING_KERNEL_SYMBOL,
    ),
    (
        Pattern::Contains("failed to find the address for kernel symbol"),
        &MISSING_KERNEL_SYMBOL,
    ),
    // The selftests' fragments and rarer messages (all fixed parts of verifier.c's formats).
    (Pattern::Then("type=", " expected="), &HELPER_ARGUMENT),
    (Pattern::Contains("release func"), &HELPER_ARGUMENT),
    (
        Pattern::Contains("helper access to the packet"),
        &HELPER_ARGUMENT,
    ),
    (Pattern::Contains("reference leak"), &UNRELEASED_REFERENCE),
    // destroy_if_dynptr_stack_slot: the write would lose the reference the dynptr holds.
    (
        Pattern::Contains("cannot overwrite referenced"),
        &UNRELEASED_REFERENCE,
    ),
    (
        Pattern::Contains("potential write to dynptr"),
        &ACCESS_NOT_ALLOWED,
    ),
    // check_func_arg_reg_off: a helper writing into memory only readable.
    (
        Pattern::Contains("may write into memory pointed by"),
        &ACCESS_NOT_ALLOWED,
    ),
    (Pattern::Contains("no write support to"), &FIELD_ACCESS),
    // __check_ptr_off_reg for pointers other than the context (matched above):
    // `negative offset %s ptr R%d off=%d disallowed`, `dereference of modified %s ptr R%d ...`.
    (
        Pattern::Then("negative offset ", " ptr R"),
        &POINTER_ARITHMETIC,
    ),
    (
        Pattern::Then("dereference of modified ", " ptr R"),
        &POINTER_ARITHMETIC,
    ),
    // Calls not allowed in a callback of bpf_rbtree_add.
    (Pattern::Contains("in rbtree cb"), &HELPER_NOT_ALLOWED),
    (Pattern::Contains(" pointer and "), &POINTER_ARITHMETIC),
    (Pattern::Contains("pointer offset"), &POINTER_ARITHMETIC),
    (
        Pattern::Contains("pointer be out of bounds"),
        &POINTER_ARITHMETIC,
    ),
    (
        Pattern::Contains("is outside of the allowed memory range"),
        &MAX_OUT_OF_RANGE,
    ),
    (Pattern::Contains("unlock is missing"), &SPIN_LOCK),
    (Pattern::Contains("unlock of different lock"), &SPIN_LOCK),
    (Pattern::Contains("without taking a lock"), &SPIN_LOCK),
    (Pattern::Contains("only read from"), &ACCESS_NOT_ALLOWED),
    (Pattern::Contains("invalid negative access"), &FIELD_ACCESS),
    (Pattern::Contains("ctx access"), &CONTEXT_ACCESS),
    (Pattern::Contains("is too deep"), &TOO_COMPLEX),
    // `invalid access to map value` without its head (`value_size=8 off=1073741825`), last:
    // `write into map forbidden, value_size=` is matched above.
    (Pattern::Contains("value_size="), &MAP_VALUE_OUT_OF_RANGE),
];

/// Every class, [`UNKNOWN`] last.
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
pub fn classify<'e>(errors: &[&'e [u8]]) -> (&'static Class, Option<&'e [u8]>) {
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

/// Messages whose help says more than their class's: which one an error line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// `bpf_spin_lock at off=%d must be held for bpf_list_head`.
    LockMustBeHeld,
    /// `bpf_spin_unlock of different lock`.
    DifferentLock,
    /// `bpf_spin_unlock without taking a lock`.
    UnlockWithoutLock,
    /// `function calls are not allowed while holding a lock`.
    CallWhileLocked,
    /// `can't spin_{lock,unlock} in rbtree cb`.
    LockInRbtreeCallback,
    /// `... cannot be used inside bpf_spin_lock-ed region` (an exit, a tail call, ...).
    InsideLockedRegion,
    /// `tracing progs cannot use bpf_timer yet`.
    ProgsCannotUse,
    /// `cannot call GPL-restricted function from non-GPL compatible program`.
    GplOnly,
    /// `R4 invalid zero-sized read: u64=[0,0]`.
    ZeroSizedRead,
    /// `R3 must be a known constant`.
    KnownConstant,
    /// `Expected an initialized dynptr as arg #0`, `expected an initialized iter_num as arg #0`.
    InitializedExpected,
    /// `expected uninitialized iter_num as arg #0`, `Dynptr has to be an uninitialized dynptr`.
    UninitializedExpected,
    /// `arg 1 is an unacquired reference`, `R1 must be referenced when passed to release
    /// function`, `release kernel function bpf_task_release expects refcounted PTR_TO_BTF_ID`.
    NotAcquired,
    /// `R1 must be referenced or trusted`.
    NotTrusted,
    /// `R1 must be a rcu pointer`.
    NotRcu,
    /// `R1 must have zero offset when passed to release func or trusted arg to kfunc`.
    ReleaseAtOffset,
    /// `direct access to bpf_list_head is disallowed`, `bpf_spin_lock cannot be accessed
    /// directly by load/store`.
    DirectAccess,
    /// `cannot overwrite referenced dynptr`.
    OverwriteDynptr,
    /// `invalid size of register fill`.
    RegisterFill,
    /// `the call stack of 9 frames is too deep !`.
    CallsTooDeep,
    /// `R1 pointer += pointer prohibited`.
    PointerPlusPointer,
    /// `R3 pointer arithmetic on pkt_end prohibited` (a type whose pointers may not move).
    ArithmeticOn,
    /// `math between fp pointer and 2147483647 is not allowed`, `fp pointer offset 1073741822
    /// is not allowed`: the frame pointer moved out of any frame.
    FramePointerMoved,
    /// `dereference of modified dynptr_ptr ptr R1 off=8 disallowed`, `negative offset ctx ptr R1
    /// off=-1 disallowed`: a pointer that must be used as it was given.
    ModifiedPointer,
    /// `invalid bpf_context access off=76 size=4`.
    ContextAccess,
    /// `write into map forbidden, value_size=4 off=0 size=4`: a map the program may only read.
    MapReadOnly,
    /// `read from map forbidden, value_size=4 off=0 size=4`: a map the program may only write.
    MapWriteOnly,
    /// `frame pointer is read only`.
    FramePointerWrite,
    /// `potential write to dynptr at off=-16 disallowed`.
    DynptrOverlap,
    /// `bpf_probe_read_kernel() may write into memory pointed by R1 type=trusted_ptr_`.
    HelperWritesInto,
    /// `R1 cannot write into sock`, `cannot write into packet`, `only read is supported`, `the
    /// prog does not allow writes to packet data`.
    ReadOnly,
    /// `calling kernel function bpf_task_acquire is not allowed`.
    KfuncNotAllowed,
    /// `cannot pass map_type 15 into func bpf_map_delete_elem#3`.
    MapTypeNotAllowed,
    /// `access beyond the end of member comm (mend:16) in struct task_struct with off 16 size 1`.
    BeyondMember,
    /// `cannot release unowned const bpf_dynptr`.
    UnownedDynptr,
    /// `kernel function bpf_ct_insert_entry args#0 expected pointer to STRUCT nf_conn___init
    /// but R1 has a pointer to STRUCT nf_conn`.
    WrongStruct,
    /// `arg#1 expected pointer to allocated object`.
    NotAllocated,
    /// `bpf_rbtree_remove can only take non-owning or refcounted bpf_rb_node pointer`.
    NodeReferenceOnly,
    /// `operation on bpf_list_head expects arg#1 bpf_list_node at offset=48 in struct foo, but
    /// arg is at offset=0 in struct bar`.
    WrongNodeType,
    /// `kfunc bpf_rdonly_cast type ID argument must be of a struct or void`.
    TypeNotStruct,
    /// `no write support to nf_conn at off 176`.
    NoWriteSupport,
    /// `bpf_throw kfunc (insn 16) cannot be called from callback subprog 1`.
    ThrowInCallback,
    /// `exception cb only supports single integer argument`.
    ExceptionCallbackArgs,
    /// `same call cannot be used with different types`.
    SameCallTypes,
    /// `off 48 doesn't point to 'struct bpf_spin_lock' that is at 40`.
    NotTheLock,
    /// A constant NULL where the call takes a valid pointer (`Possibly NULL pointer passed to
    /// trusted arg0` of `r1 = 0`): set by [`Rejection::with_value`], not from the line.
    NullConstant,
    /// A buffer smaller than the size passed with it (`invalid read from stack R3 off -24+8
    /// size 9` running into a dynptr's slots): set by [`Rejection::in_slot`].
    SizePastBuffer,
    /// `value -2147483646 makes ctx pointer be out of bounds`.
    ContextIndexed,
    /// `math between map_value pointer and register with unbounded min value is not allowed`.
    UnboundedMin,
}

/// Each [`Message`] by a fixed part of its kernel format string.
const MESSAGES: &[(&str, Message)] = &[
    (" must be held for ", Message::LockMustBeHeld),
    ("unlock of different lock", Message::DifferentLock),
    ("unlock without taking a lock", Message::UnlockWithoutLock),
    (
        "calls are not allowed while holding a lock",
        Message::CallWhileLocked,
    ),
    (
        "spin_{lock,unlock} in rbtree cb",
        Message::LockInRbtreeCallback,
    ),
    (
        "inside bpf_spin_lock-ed region",
        Message::InsideLockedRegion,
    ),
    ("progs cannot use", Message::ProgsCannotUse),
    ("cannot be called from callback", Message::ThrowInCallback),
    ("exception cb only supports", Message::ExceptionCallbackArgs),
    (
        "same call cannot be used with different types",
        Message::SameCallTypes,
    ),
    ("doesn't point to 'struct ", Message::NotTheLock),
    (
        "makes ctx pointer be out of bounds",
        Message::ContextIndexed,
    ),
    ("with unbounded min value", Message::UnboundedMin),
    ("GPL-restricted function", Message::GplOnly),
    ("invalid zero-sized read", Message::ZeroSizedRead),
    ("must be a known constant", Message::KnownConstant),
    ("is not a known constant", Message::KnownConstant),
    ("xpected an initialized", Message::InitializedExpected),
    ("xpected uninitialized", Message::UninitializedExpected),
    ("has to be an uninitialized", Message::UninitializedExpected),
    ("is an unacquired reference", Message::NotAcquired),
    (
        "must be referenced when passed to release",
        Message::NotAcquired,
    ),
    ("expects refcounted", Message::NotAcquired),
    ("must be referenced or trusted", Message::NotTrusted),
    ("must be a rcu pointer", Message::NotRcu),
    (
        "must have zero offset when passed to release",
        Message::ReleaseAtOffset,
    ),
    ("direct access to ", Message::DirectAccess),
    ("cannot be accessed directly", Message::DirectAccess),
    (
        "cannot overwrite referenced dynptr",
        Message::OverwriteDynptr,
    ),
    ("invalid size of register fill", Message::RegisterFill),
    ("the call stack of ", Message::CallsTooDeep),
    ("pointer += pointer", Message::PointerPlusPointer),
    ("pointer arithmetic on ", Message::ArithmeticOn),
    ("math between fp pointer", Message::FramePointerMoved),
    ("fp pointer offset", Message::FramePointerMoved),
    ("dereference of modified ", Message::ModifiedPointer),
    ("negative offset ", Message::ModifiedPointer),
    ("invalid bpf_context access", Message::ContextAccess),
    ("write into map forbidden", Message::MapReadOnly),
    ("read from map forbidden", Message::MapWriteOnly),
    ("frame pointer is read only", Message::FramePointerWrite),
    ("potential write to dynptr", Message::DynptrOverlap),
    (
        "may write into memory pointed by",
        Message::HelperWritesInto,
    ),
    ("cannot write into ", Message::ReadOnly),
    ("only read is supported", Message::ReadOnly),
    ("only read from ", Message::ReadOnly),
    ("does not allow writes to packet data", Message::ReadOnly),
    ("calling kernel function ", Message::KfuncNotAllowed),
    ("cannot pass map_type ", Message::MapTypeNotAllowed),
    ("access beyond the end of member ", Message::BeyondMember),
    ("cannot release unowned const", Message::UnownedDynptr),
    ("has a pointer to STRUCT ", Message::WrongStruct),
    (
        "expected pointer to allocated object",
        Message::NotAllocated,
    ),
    (", but arg is at offset=", Message::WrongNodeType),
    (
        " can only take non-owning or refcounted ",
        Message::NodeReferenceOnly,
    ),
    (
        "type ID argument must be of a struct",
        Message::TypeNotStruct,
    ),
    ("no write support to ", Message::NoWriteSupport),
];

/// A rejection: its class and what its error line says, read once from the line. Nothing
/// after [`Rejection::of`] reads the error's text again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The class.
    pub class: &'static Class,
    /// Which message it is, when its help says more than its class's.
    pub message: Option<Message>,
    /// The error line that gave the class (the first error line for [`UNKNOWN`]).
    pub error: String,
    /// The first register the line names (`R1 invalid mem access`, `..., R4(id=0,...)`,
    /// `... stack R2`).
    pub reg: Option<u8>,
    /// The first argument of a call the line names by its number, from 0 (`arg#0`, `arg0`).
    pub arg: Option<u8>,
    /// The offset of the access (`off=%d`, or `off %d+%d`'s sum).
    pub off: Option<i64>,
    /// The size of the access (`size=%d`, `size %d`).
    pub size: Option<i64>,
    /// The offset is variable (`variable-offset`, `var_off=`): [`off`](Self::off) is its fixed
    /// part.
    pub variable: bool,
    /// The bytes of the packet proven to lie before its end, from the pointer's base (`r=%d`).
    pub checked: Option<i64>,
    /// The size of the memory accessed (`value_size=%d`, `mem_size=%d`).
    pub mem_size: Option<u64>,
    /// The frame bytes a read of the stack names, `(offset, size)` from the frame pointer:
    /// the bytes read (`off=%d size=%d`), or the first byte not written (`off %d+%d`).
    pub stack_read: Option<(i64, i64)>,
    /// How many bytes from the start of a stack read were written before the first that was
    /// not (`off -24+8 size 9`: 8).
    pub stack_written: Option<i64>,
    /// The range a value should have been in (`... should have been in [0, 1]`).
    pub range: Option<String>,
    /// The instruction that acquired an unreleased reference (`alloc_insn=%d`).
    pub alloc_insn: Option<u64>,
    /// The first instruction the line names (`unreachable insn 5`, `from insn 2 to 9`).
    pub insn: Option<u64>,
    /// The kfunc that opens the region the line names (`bpf_rcu_read_lock`,
    /// `bpf_preempt_disable`, ... from `... inside bpf_rcu_read_lock-ed region`).
    pub region: Option<String>,
    /// The type a register had (`type=%s`, `invalid mem access '%s'`) ...
    pub actual: Option<String>,
    /// ... and the types it should have had (`expected=%s`).
    pub expected: Option<String>,
    /// The helper or kfunc the line names (`program of this type cannot use helper
    /// bpf_get_retval#123`, `calling kernel function bpf_task_acquire is not allowed`,
    /// `release kernel function bpf_task_release expects ...`).
    pub callee: Option<String>,
    /// The kind of object an argument or a lock is about (`iter_num` of `expected an
    /// initialized iter_num as arg #0`, `dynptr`, `bpf_list_head` of `... must be held for
    /// bpf_list_head`).
    pub object: Option<String>,
    /// The frames of a call chain (`combined stack size of 2 calls`, `the call stack of 9
    /// frames`) ...
    pub frames: Option<u64>,
    /// ... and the stack they take, in bytes (`... is 544. Too large`, `previous frames is
    /// 288 bytes`).
    pub stack_bytes: Option<u64>,
    /// What the read stack slot holds, as the state the log printed last for it says
    /// (`dynptr_ringbuf`, `iter_num`): set by [`Rejection::in_slot`], not from the line.
    pub slot: Option<String>,
    /// What the register the line names holds there, as the log's state prints it
    /// (`rcu_ptr_task_struct()`, `0x7fffffff`): set by [`Rejection::with_value`], not from
    /// the line.
    pub value: Option<String>,
}

impl Rejection {
    /// The rejection the error lines of a log give ([`classify`]), its line read.
    pub fn of(errors: &[&[u8]]) -> Rejection {
        let (class, line) = classify(errors);
        Rejection::read(class, &String::from_utf8_lossy(line.unwrap_or_default()))
    }

    /// Error line `error` of class `class`, read.
    pub fn read(class: &'static Class, error: &str) -> Rejection {
        let types = error.find("type=").and_then(|at| {
            let rest = &error[at + "type=".len()..];
            let (actual, expected) = rest.split_once(" expected=")?;
            Some((actual.to_owned(), expected.trim_end().to_owned()))
        });
        let (actual, expected) = types.unzip();
        // `... expected pointer to STRUCT %s but R%d has a pointer to STRUCT %s`, `... %s at
        // offset=%d in struct %s, but arg is at offset=%d in struct %s`.
        let word = |rest: &str| -> String {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let expected = expected.or_else(|| {
            let (_, after) = error
                .split_once("expected pointer to STRUCT ")
                .or_else(|| error.split_once(" in struct "))?;
            Some(word(after))
        });
        let actual = actual.or_else(|| {
            let (_, after) = error.split_once("has a pointer to STRUCT ").or_else(|| {
                error
                    .rsplit_once(" in struct ")
                    .filter(|_| error.contains(", but arg is"))
            })?;
            Some(word(after))
        });
        // `R%d invalid mem access '%s'`: the type the register had.
        let actual = actual.or_else(|| {
            let (_, after) = error.split_once("invalid mem access '")?;
            Some(after.split_once('\'')?.0.to_owned())
        });
        // Linux 5.10 calls a scalar `inv` (`type=inv expected=fp`, `invalid mem access 'inv'`).
        let actual = actual.map(|t| bpflog_log::state::Value::read(&t).kind.to_owned());
        Rejection {
            class,
            message: (MESSAGES.iter())
                .find(|(needle, _)| error.contains(needle))
                .map(|&(_, message)| message),
            error: error.to_owned(),
            reg: register_in(error),
            // `bpf_rbtree_remove can only take non-owning or refcounted bpf_rb_node pointer`:
            // the node, the second argument of each kfunc that says it (`bpf_rbtree_remove`,
            // `bpf_rbtree_left`, `bpf_rbtree_right`: root, node).
            arg: argument_in(error).or_else(|| {
                error
                    .contains(" can only take non-owning or refcounted ")
                    .then_some(1)
            }),
            off: stack_read(error)
                .map(|(off, _)| off)
                .or_else(|| signed_after(error, "off=")),
            size: signed_after(error, "size=").or_else(|| signed_after(error, "size ")),
            mem_size: number_after(error, "value_size=")
                .or_else(|| number_after(error, "mem_size="))
                .or_else(|| number_after(error, "(mend:")),
            stack_read: stack_read(error),
            stack_written: match stack_read_parts(error) {
                Some(StackRead::Unwritten { written, .. }) => Some(written),
                _ => None,
            },
            variable: error.contains("variable-offset") || error.contains("var_off="),
            checked: signed_after(error, "r="),
            range: error
                .split_once("should have been in ")
                .map(|(_, range)| read_range(range.trim())),
            alloc_insn: number_after(error, "alloc_insn="),
            insn: number_after(error, "insn "),
            region: region_opener(error).map(str::to_owned),
            actual,
            expected,
            callee: callee_in(error),
            object: object_in(error),
            frames: number_after(error, "stack size of ")
                .or_else(|| number_after(error, "call stack of ")),
            stack_bytes: number_after(error, " calls is ")
                .or_else(|| number_after(error, "previous frames is "))
                .or_else(|| {
                    let (_, after) = error.split_once("stack size of subprog ")?;
                    number_after(after, " is ")
                }),
            slot: None,
            value: None,
        }
    }

    /// The rejection, knowing what the stack slot the error reads holds (`slot`, as the log's
    /// state names it): reading a dynptr's or an iterator's slot directly
    /// (`invalid read from stack off -16+0 size 4` of `fp-16=dynptr_ringbuf(...)`) is not a
    /// read of uninitialised stack but of memory only their kfuncs may touch.
    pub fn in_slot(mut self, slot: &str) -> Rejection {
        if self.class.id == ClassId::UninitializedStack
            && (slot.starts_with("dynptr") || slot.starts_with("iter"))
        {
            // Written bytes first, then the dynptr's (`off -24+8 size 9` into `fp-16=dynptr`):
            // a buffer smaller than the size passed with it, run into the next local.
            if self.stack_written.is_some_and(|w| w > 0) {
                self.class = &HELPER_ARGUMENT;
                self.message = Some(Message::SizePastBuffer);
            } else {
                self.class = &ACCESS_NOT_ALLOWED;
            }
        }
        self.slot = Some(slot.to_owned());
        self
    }

    /// The rejection, knowing the helper or kfunc the failing instruction calls (`call`), when
    /// the line does not name it (`R1 must be referenced or trusted`).
    pub fn at_call(mut self, call: &str) -> Rejection {
        if self.callee.is_none() {
            self.callee = Some(call.to_owned());
        }
        self
    }

    /// The rejection, knowing the value the register it names holds where it failed, as the
    /// log's state prints it (`value`): a constant NULL passed where a valid pointer is needed
    /// (`bpf_cgroup_acquire(NULL)`) is not a maybe-NULL pointer left unchecked but the wrong
    /// argument.
    pub fn with_value(mut self, value: &str) -> Rejection {
        if self.class.id == ClassId::NullableDereference
            && self.error.contains("Possibly NULL pointer passed")
            && value == "0"
        {
            self.class = &HELPER_ARGUMENT;
            self.message = Some(Message::NullConstant);
        }
        self.value = Some(value.to_owned());
        self
    }

    /// The class's id.
    pub fn id(&self) -> ClassId {
        self.class.id
    }
}

/// The helper or kfunc an error line names: `helper NAME#N`, `func NAME#N`, `kernel function
/// NAME`, `kfunc NAME`, `NAME() is not allowed`, `NAME kfunc (insn N)` (check_helper_call, check_kfunc_call,
/// check_func_arg).
fn callee_in(error: &str) -> Option<String> {
    let word = |rest: &str| -> Option<String> {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    };
    for key in ["helper ", "func ", "kernel function ", "kfunc "] {
        if let Some(at) = error.find(key)
            && let Some(name) = word(&error[at + key.len()..])
            && name.starts_with("bpf_")
        {
            return Some(name);
        }
    }
    let (before, _) = error
        .split_once("() ")
        .or_else(|| error.split_once(" kfunc (insn "))?;
    word(before.rsplit(' ').next()?)
}

/// The kind of object an error line is about: `expected an initialized X as arg`, `expected
/// uninitialized X as arg`, `must be held for X`, `X has to be an uninitialized`, the map
/// field of `tracing progs cannot use X yet`.
fn object_in(error: &str) -> Option<String> {
    let word = |rest: &str| -> Option<String> {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        (!name.is_empty()).then_some(name)
    };
    for key in [
        "xpected an initialized ",
        "xpected uninitialized ",
        "must be held for ",
        "pointer arithmetic on ",
        "dereference of modified ",
        "negative offset ",
        "end of member ",
        "cannot write into ",
        "no write support to ",
    ] {
        if let Some(at) = error.find(key) {
            return word(&error[at + key.len()..]);
        }
    }
    // `tracing progs cannot use bpf_{list_head,rb_root} yet`: the field, braces and all.
    if let Some((_, after)) = error.split_once("progs cannot use ") {
        let field = after
            .split_once(" yet")
            .map_or(after, |(field, _)| field)
            .trim();
        return (!field.is_empty()).then(|| field.to_owned());
    }
    let (before, _) = error.split_once(" has to be an uninitialized")?;
    word(before.rsplit(' ').next()?).map(|w| w.to_lowercase())
}

/// The first register an error line names (`R1 invalid mem access`, `..., R4(id=0,...)`,
/// `... stack R2`).
fn register_in(error: &str) -> Option<u8> {
    let bytes = error.as_bytes();
    (0..bytes.len()).find_map(|i| {
        let before_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if bytes[i] != b'R' || !before_ok {
            return None;
        }
        let digits: &[u8] = &bytes[i + 1..];
        let n = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let after = digits.get(n).copied();
        if n == 0 || n > 2 || after.is_some_and(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        std::str::from_utf8(&digits[..n])
            .ok()?
            .parse()
            .ok()
            .filter(|&r: &u8| r <= 10)
    })
}

/// The first argument of a call an error line names by its number, from 0 (`arg#0 pointer type
/// STRUCT cgroup must point to ...`, `Possibly NULL pointer passed to trusted arg0`: the
/// kernel's kfunc argument checks); an argument past the five a call takes is none.
fn argument_in(error: &str) -> Option<u8> {
    let bytes = error.as_bytes();
    (0..bytes.len()).find_map(|i| {
        let before_ok = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let rest = bytes[i..].strip_prefix(b"arg").filter(|_| before_ok)?;
        let rest = rest.strip_prefix(b"#").unwrap_or(rest);
        let digit = *rest.first().filter(|b| (b'0'..=b'4').contains(b))?;
        let after = rest.get(1).copied();
        (!after.is_some_and(|b| b.is_ascii_alphanumeric())).then_some(digit - b'0')
    })
}

/// The kfunc that opens the region an error about a locked region names: `... inside
/// bpf_rcu_read_lock-ed region` (also `bpf_preempt_disable-ed`, `bpf_local_irq_save-ed`),
/// `sleepable helper %s#%d in rcu_read_lock region`, `... in non-preemptible region`, `...
/// with preemption disabled` (check_resource_leak, check_helper_call, check_kfunc_call).
fn region_opener(error: &str) -> Option<&str> {
    if let Some((before, _)) = error.split_once("-ed region") {
        return before.rsplit(' ').next().filter(|name| !name.is_empty());
    }
    if error.contains("rcu_read_lock") {
        Some("bpf_rcu_read_lock")
    } else if error.contains("preempt") {
        Some("bpf_preempt_disable")
    } else {
        None
    }
}

/// Where `key` first starts a word of `text` (`size=` in `off=4 size=49`, not in
/// `value_size=48`; a key that starts with a space anywhere): the offset after it.
fn word_after(text: &str, key: &str) -> Option<usize> {
    text.match_indices(key)
        .find(|&(at, _)| {
            key.starts_with(' ')
                || !text[..at]
                    .bytes()
                    .next_back()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
        .map(|(at, _)| at + key.len())
}

/// The number after `key` in `text` (`alloc_insn=7`).
fn number_after(text: &str, key: &str) -> Option<u64> {
    let at = word_after(text, key)?;
    let digits = text[at..].bytes().take_while(u8::is_ascii_digit).count();
    text[at..at + digits].parse().ok()
}

/// The number, maybe negative, after `key` in `text` (`off=-8`).
fn signed_after(text: &str, key: &str) -> Option<i64> {
    let rest = &text[word_after(text, key)?..];
    let sign = usize::from(rest.starts_with('-'));
    let digits = rest[sign..].bytes().take_while(u8::is_ascii_digit).count();
    rest[..sign + digits].parse().ok()
}

/// The range a return value should have been in, as 6.2 and later print it (`[0, 1]`): Linux
/// 5.10 and 6.1 print the tnum the range was made into (`(0x0; 0x1)`).
fn read_range(range: &str) -> String {
    match bpflog_log::state::tnum(range).and_then(bpflog_log::state::tnum_interval) {
        Some((least, greatest)) => format!("[{least}, {greatest}]"),
        None => range.to_owned(),
    }
}

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
        let (class, line) = classify(&errors);
        assert_eq!(class.id, ClassId::PacketOutOfRange);
        assert_eq!(line, Some(errors[1]));
        let (class, line) = classify(&[b"a message no kernel printed"]);
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

    #[test]
    fn the_register_or_argument_an_error_names() {
        // As the kernel words them (the selftests' logs).
        assert_eq!(
            register_in("R1 invalid mem access 'map_value_or_null'"),
            Some(1)
        );
        assert_eq!(
            register_in("invalid read from stack R3 off -16+0 size 16"),
            Some(3)
        );
        assert_eq!(
            register_in("Possibly NULL pointer passed to trusted arg0"),
            None
        );
        assert_eq!(
            argument_in("Possibly NULL pointer passed to trusted arg0"),
            Some(0)
        );
        assert_eq!(
            argument_in("arg#1 pointer type STRUCT cgroup must point to scalar"),
            Some(1)
        );
        assert_eq!(
            argument_in("arg#0 expected pointer to stack or const struct bpf_dynptr"),
            Some(0)
        );
        // Not an argument's number: a word that only contains `arg`, more than five
        // arguments, more digits.
        assert_eq!(argument_in("invalid target arg3x"), None);
        assert_eq!(
            argument_in("bpf_spin_lock at off=40 must be held for bpf_list_head"),
            None
        );
        assert_eq!(argument_in("margin arg7 past the calling convention"), None);
        assert_eq!(argument_in("arg12 too many"), None);
    }
}

#[cfg(test)]
mod rejection_tests {
    use super::*;

    /// Real error lines of the selftests' rejected logs (Linux 6.12's selftests on 6.18), read
    /// into their fields.
    #[test]
    fn error_lines_are_read_into_their_fields() {
        let read = |line: &str| Rejection::read(class_of(line.as_bytes()).unwrap(), line);
        let r = read("invalid access to map value, value_size=48 off=4 size=49");
        assert_eq!((r.off, r.size, r.mem_size), (Some(4), Some(49), Some(48)));
        let r = read("invalid access to packet, off=-1 size=1, R1(id=0,off=-1,r=14)");
        assert_eq!((r.reg, r.off, r.size), (Some(1), Some(-1), Some(1)));
        let r = read("invalid read from stack off -16+0 size 4");
        assert_eq!(
            (r.stack_read, r.off, r.size),
            (Some((-16, 1)), Some(-16), Some(4))
        );
        let r = read("Unreleased reference id=4 alloc_insn=21");
        assert_eq!(
            (r.alloc_insn, r.id()),
            (Some(21), ClassId::UnreleasedReference)
        );
        let r = read("R0 has smin=1 smax=1 should have been in [-4095, 0]");
        assert_eq!(r.range.as_deref(), Some("[-4095, 0]"));
        // Linux 5.10 and 6.1 print the range as a tnum.
        let r = read(
            "At program exit the register R0 has value (0x2; 0x0) should have been in (0x0; 0x1)",
        );
        assert_eq!(r.range.as_deref(), Some("[0, 1]"));
        let r = read("R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value");
        assert_eq!(r.actual.as_deref(), Some("scalar"));
        assert_eq!(
            r.expected.as_deref(),
            Some("fp, pkt, pkt_meta, map_key, map_value")
        );
        // Linux 5.10's name of a scalar.
        let r = read("R2 type=inv expected=fp, pkt, pkt_meta, map_value");
        assert_eq!(r.actual.as_deref(), Some("scalar"));
        let r = read("R6 invalid mem access 'inv'");
        assert_eq!(r.actual.as_deref(), Some("scalar"));
        let r = read("R1 invalid mem access 'scalar'");
        assert_eq!((r.reg, r.actual.as_deref()), (Some(1), Some("scalar")));
        let r = read("bpf_spin_lock at off=32 must be held for bpf_list_head");
        assert_eq!(r.message, Some(Message::LockMustBeHeld));
        assert_eq!(
            (r.off, r.object.as_deref()),
            (Some(32), Some("bpf_list_head"))
        );
        let r = read("expected an initialized iter_num as arg #1");
        assert_eq!(r.message, Some(Message::InitializedExpected));
        assert_eq!((r.object.as_deref(), r.arg), (Some("iter_num"), None));
        let r = read("Dynptr has to be an uninitialized dynptr");
        assert_eq!(r.message, Some(Message::UninitializedExpected));
        assert_eq!(r.object.as_deref(), Some("dynptr"));
        let r = read("program of this type cannot use helper bpf_get_retval#186");
        assert_eq!(r.callee.as_deref(), Some("bpf_get_retval"));
        let r = read("calling kernel function bpf_task_acquire is not allowed");
        assert_eq!(r.callee.as_deref(), Some("bpf_task_acquire"));
        let r = read("release kernel function bpf_task_release expects refcounted PTR_TO_BTF_ID");
        assert_eq!(r.message, Some(Message::NotAcquired));
        assert_eq!(r.callee.as_deref(), Some("bpf_task_release"));
        let r = read("combined stack size of 2 calls is 544. Too large");
        assert_eq!(
            (r.id(), r.frames, r.stack_bytes),
            (ClassId::StackSize, Some(2), Some(544))
        );
        let r = read("the call stack of 9 frames is too deep !");
        assert_eq!(
            (r.message, r.frames),
            (Some(Message::CallsTooDeep), Some(9))
        );
        let r = read("stack size of subprog 1 is 544. Too large");
        assert_eq!((r.frames, r.stack_bytes), (None, Some(544)));
        let r = read("unreachable insn 5");
        assert_eq!((r.id(), r.insn), (ClassId::InvalidProgram, Some(5)));
        let r =
            read("BPF_EXIT instruction in main prog cannot be used inside bpf_spin_lock-ed region");
        assert_eq!(r.region.as_deref(), Some("bpf_spin_lock"));
        assert_eq!(r.message, Some(Message::InsideLockedRegion));
    }

    /// The classes by message agreed for issue 34: real lines of the selftests and the kernel's
    /// formats (verifier.c of Linux 6.12) with their numbers filled in.
    #[test]
    fn classes_by_message() {
        for (line, id) in [
            (
                "function calls are not allowed while holding a lock",
                ClassId::SpinLockRule,
            ),
            (
                "global function calls are not allowed while holding a lock,",
                ClassId::SpinLockRule,
            ),
            (
                "tracing progs cannot use bpf_spin_lock yet",
                ClassId::HelperNotAllowed,
            ),
            (
                "tracing progs cannot use bpf_timer yet",
                ClassId::HelperNotAllowed,
            ),
            (
                "tracing progs cannot use bpf_{list_head,rb_root} yet",
                ClassId::HelperNotAllowed,
            ),
            (
                "cannot call GPL-restricted function from non-GPL compatible program",
                ClassId::HelperNotAllowed,
            ),
            (
                "metadata kfuncs require device-bound program",
                ClassId::HelperNotAllowed,
            ),
            (
                "cannot pass map_type 15 into func bpf_map_delete_elem#3",
                ClassId::HelperNotAllowed,
            ),
            ("invalid size of register fill", ClassId::AccessNotAllowed),
            (
                "R2 is of type task_struct but cgroup is expected",
                ClassId::HelperArgumentType,
            ),
            (
                "the prog does not allow writes to packet data",
                ClassId::AccessNotAllowed,
            ),
            (
                "R1 invalid variable buffer offset: off=0, var_off=(0x0; 0xff)",
                ClassId::UnboundedAccess,
            ),
            (
                "combined stack size of 2 calls is 576. Too large",
                ClassId::StackSize,
            ),
            (
                "stack size of subprog 1 is 544. Too large",
                ClassId::StackSize,
            ),
            (
                "tail_calls are not allowed when call stack of previous frames is 288 bytes. Too large",
                ClassId::StackSize,
            ),
            (
                "the call stack of 9 frames is too deep !",
                ClassId::StackSize,
            ),
            ("unreachable insn 2", ClassId::InvalidProgram),
            (
                "jump out of range from insn 0 to 4",
                ClassId::InvalidProgram,
            ),
            ("last insn is not an exit or jmp", ClassId::InvalidProgram),
            ("invalid BPF_LD_IMM insn", ClassId::InvalidProgram),
            ("unknown opcode 8d", ClassId::InvalidProgram),
            ("back-edge from insn 1 to 0", ClassId::InfiniteLoop),
            (
                "R1 type=ptr_or_null_ expected=ptr_, trusted_ptr_, rcu_ptr_",
                ClassId::NullableDereference,
            ),
            (
                "R0 invalid mem access 'ptr_or_null_'",
                ClassId::NullableDereference,
            ),
            (
                "off 48 doesn't point to 'struct bpf_spin_lock' that is at 40",
                ClassId::HelperArgumentType,
            ),
            (
                "exception cb only supports single integer argument",
                ClassId::HelperArgumentType,
            ),
            (
                "same call cannot be used with different types",
                ClassId::MixedPointerTypes,
            ),
        ] {
            assert_eq!(class_of(line.as_bytes()).map(|c| c.id), Some(id), "{line}");
        }
    }

    /// The context refused as a global function's memory argument is the argument's fault.
    #[test]
    fn the_context_passed_as_memory_is_a_wrong_argument() {
        let errors: [&[u8]; 2] = [
            b"invalid bpf_context access off=3 size=1",
            b"Caller passes invalid args into func#1 ('subprog_user_anon_mem')",
        ];
        assert_eq!(classify(&errors).0.id, ClassId::HelperArgumentType);
        assert_eq!(classify(&errors[..1]).0.id, ClassId::InvalidContextAccess);
    }

    /// A constant NULL passed where a trusted pointer is needed is the wrong argument, not a
    /// maybe-NULL pointer left unchecked.
    #[test]
    fn a_constant_null_is_a_wrong_argument() {
        let line = "Possibly NULL pointer passed to trusted arg0";
        let r = Rejection::read(class_of(line.as_bytes()).unwrap(), line);
        assert_eq!(r.id(), ClassId::NullableDereference);
        assert_eq!(r.clone().with_value("0").id(), ClassId::HelperArgumentType);
        let id = r.with_value("ptr_or_null_cgroup(id=2)").id();
        assert_eq!(id, ClassId::NullableDereference);
    }

    /// A read that starts in written bytes and runs into a dynptr's slots: the buffer is
    /// smaller than the size passed with it.
    #[test]
    fn a_read_past_a_buffer_into_a_dynptr_is_a_size() {
        let line = "invalid read from stack R3 off -24+8 size 9";
        let r = Rejection::read(class_of(line.as_bytes()).unwrap(), line);
        let r = r.in_slot("dynptr_skb");
        assert_eq!(r.id(), ClassId::HelperArgumentType);
        assert_eq!(r.message, Some(Message::SizePastBuffer));
    }

    /// A read of a dynptr's or an iterator's stack slot is not one of uninitialised stack.
    #[test]
    fn a_read_of_a_dynptr_slot_is_not_allowed() {
        let line = "invalid read from stack off -16+0 size 4";
        let r = Rejection::read(class_of(line.as_bytes()).unwrap(), line);
        assert_eq!(r.id(), ClassId::UninitializedStack);
        assert_eq!(
            r.clone().in_slot("dynptr_ringbuf").id(),
            ClassId::AccessNotAllowed
        );
        assert_eq!(
            r.clone().in_slot("iter_num").id(),
            ClassId::AccessNotAllowed
        );
        assert_eq!(r.in_slot("mmmmmmmm").id(), ClassId::UninitializedStack);
    }
}
