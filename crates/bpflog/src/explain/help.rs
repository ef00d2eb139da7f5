//! What to change: the help of a rejection, built from its typed fields ([`Rejection`]) and
//! what the walk back found in the program, by one function per class.

use super::catalogue::{ClassId, Rejection};

/// What the help of one rejection is built from: the rejection and the program's own words
/// for the places the explanation names, each already written out.
pub(crate) struct Facts<'a> {
    /// The rejection.
    pub rejection: &'a Rejection,
    /// The register followed back (`R1`), or `the register`.
    pub reg: String,
    /// The failing line (`prog.c:12`, or `instruction N`).
    pub line: String,
    /// The chain's origin, named (``the value of `r0 = ...` (prog.c:9: `...`)``), or `the
    /// value`.
    pub origin: String,
    /// The chain's last test of the value, named, or what to say for none.
    pub narrowed: String,
    /// The lines where the verifier spent its work (for the complexity limit).
    pub hot: String,
    /// A write of the stack the failing path jumps over: the test's line and the write's.
    pub skipped: Option<(String, String)>,
    /// What the chain's narrowing check lets through, and the comparison that refuses it
    /// ([`Narrowing::advice`](super::Narrowing::advice)), when the chain has one.
    pub narrowing: Option<String>,
    /// The instruction that took the pointer away (its chain step, named, and why), when the
    /// chain has one.
    pub invalidated: Option<String>,
    /// The value is a number used as a pointer: loaded as one, or an address a helper returns
    /// as one ([`Fact::is_number_as_pointer`](super::Fact::is_number_as_pointer)).
    pub number_as_pointer: bool,
}

impl<'a> Facts<'a> {
    /// The facts of a rejection known by its class alone, in general words (the help of a
    /// SARIF rule, the same for every program).
    pub(crate) fn general(rejection: &'a Rejection) -> Facts<'a> {
        Facts {
            rejection,
            reg: "the register".to_owned(),
            line: "the failing line".to_owned(),
            origin: "the value".to_owned(),
            narrowed: "the last check on the path".to_owned(),
            hot: "the lines `bpflog profile` lists".to_owned(),
            skipped: None,
            narrowing: None,
            invalidated: None,
            number_as_pointer: false,
        }
    }
}

/// The help of a rejection.
pub(crate) fn help(f: &Facts<'_>) -> String {
    let build = match f.rejection.id() {
        ClassId::NullableDereference => nullable_dereference,
        ClassId::MapValueOutOfRange => map_value_out_of_range,
        ClassId::PacketOutOfRange => packet_out_of_range,
        ClassId::StackOutOfRange => stack_out_of_range,
        ClassId::InvalidContextAccess => invalid_context_access,
        ClassId::MaxOutOfRange => max_out_of_range,
        ClassId::MinNegative => min_negative,
        ClassId::UnboundedAccess => unbounded_access,
        ClassId::UninitializedRegister => uninitialized_register,
        ClassId::UninitializedStack => uninitialized_stack,
        ClassId::UnreleasedReference => unreleased_reference,
        ClassId::BadReturnValue => bad_return_value,
        ClassId::HelperArgumentType => helper_argument_type,
        ClassId::TooComplex => too_complex,
        ClassId::InfiniteLoop => infinite_loop,
        ClassId::HelperNotAllowed => helper_not_allowed,
        ClassId::PointerLeak => pointer_leak,
        ClassId::PointerArithmetic => pointer_arithmetic,
        ClassId::DivisionByZero => division_by_zero,
        ClassId::MisalignedAccess => misaligned_access,
        ClassId::AccessNotAllowed => access_not_allowed,
        ClassId::InvalidFieldAccess => invalid_field_access,
        ClassId::SpinLockRule => spin_lock_rule,
        ClassId::LockedRegionRule => locked_region_rule,
        ClassId::NotAPointer => not_a_pointer,
        ClassId::CoreRelocationFailed => core_relocation_failed,
        ClassId::MixedPointerTypes => mixed_pointer_types,
        ClassId::MissingKernelSymbol => missing_kernel_symbol,
        ClassId::StackSize => stack_size,
        ClassId::InvalidProgram => invalid_program,
        ClassId::Unknown => unknown,
    };
    build(f)
}

fn nullable_dereference(f: &Facts<'_>) -> String {
    let help = format!(
        "check {} for NULL before using it (`if (!p) return ...;`), on every path to {}",
        f.origin, f.line
    );
    match &f.invalidated {
        Some(by) => format!("{help}; {by}"),
        None => help,
    }
}

fn map_value_out_of_range(f: &Facts<'_>) -> String {
    if let Some(narrowing) = &f.narrowing {
        return format!(
            "{narrowing}, and the access at {} must stay within the value",
            f.line
        );
    }
    format!(
        "bound the index so that the access at {} stays within the value: {} lets it reach past the end (e.g. `if (idx >= ARRAY_SIZE(v->arr)) return ...;`)",
        f.line, f.narrowed
    )
}

fn packet_out_of_range(f: &Facts<'_>) -> String {
    format!(
        "the last bound of the packet, {}, does not cover the bytes read at {}: compare the pointer plus the size read with `data_end` (`if ((void *)(p + 1) > data_end) return ...;`) before the access",
        f.narrowed, f.line
    )
}

fn stack_out_of_range(f: &Facts<'_>) -> String {
    if let Some(narrowing) = &f.narrowing {
        return format!(
            "{narrowing}, and the access at {} must stay within the buffer",
            f.line
        );
    }
    format!(
        "bound the index used with {} (`if (i >= ARRAY_SIZE(buf)) return ...;` or `i &= MASK`) before the access at {}",
        f.reg, f.line
    )
}

fn invalid_context_access(f: &Facts<'_>) -> String {
    format!(
        "read only fields of the context structure of this program type, with their own size, directly through the `ctx` argument at {}",
        f.line
    )
}

fn max_out_of_range(f: &Facts<'_>) -> String {
    if let Some(narrowing) = &f.narrowing {
        return format!(
            "{narrowing}, and the access at {} must stay within the memory",
            f.line
        );
    }
    format!(
        "tighten the bound of the offset before {}: {} lets it reach past the end; a check such as `if (idx >= N)` must exclude every index past it",
        f.line, f.narrowed
    )
}

fn min_negative(f: &Facts<'_>) -> String {
    format!(
        "make the index unsigned or check `if (idx < 0) return ...;` before {}",
        f.line
    )
}

fn unbounded_access(f: &Facts<'_>) -> String {
    format!(
        "bound {} before {}: `if (idx >= N) return ...;` or `idx &= N - 1`",
        f.reg, f.line
    )
}

fn uninitialized_register(f: &Facts<'_>) -> String {
    match &f.skipped {
        Some((branch, write)) => format!(
            "give the variable held in {} a value on every path to {}: the test at {branch} jumps over {write}, where it is written; write it on that path too (or before the test)",
            f.reg, f.line
        ),
        None => format!(
            "give the variable held in {} a value on every path to {}, or keep it in a variable that survives the call",
            f.reg, f.line
        ),
    }
}

fn uninitialized_stack(f: &Facts<'_>) -> String {
    let help = format!(
        "initialise the local variable or buffer completely (`= {{}}` or `__builtin_memset`) before {}",
        f.line
    );
    match &f.skipped {
        Some((branch, write)) => format!(
            "{help}, or also write it on the path where the test at {branch} jumps over {write}"
        ),
        None => help,
    }
}

fn unreleased_reference(f: &Facts<'_>) -> String {
    format!(
        "release what {} acquired (`bpf_sk_release`, `bpf_ringbuf_submit`/`discard`, ...) on every path to exit, including early returns",
        f.origin
    )
}

fn bad_return_value(f: &Facts<'_>) -> String {
    let range = f.rejection.range.as_deref().unwrap_or("the allowed range");
    format!(
        "return a value within {range}, what this hook allows, on every path to {}: {} is returned",
        f.line, f.origin
    )
}

fn helper_argument_type(f: &Facts<'_>) -> String {
    format!(
        "pass {} as the type the helper expects at {} (for a pointer into the stack, the address of a local variable)",
        f.reg, f.line
    )
}

fn too_complex(f: &Facts<'_>) -> String {
    format!(
        "reduce the paths the verifier walks where it spent its work, {}: bound loops with a small constant, move work into a `bpf_loop` callback or a global function, cut branches in loops",
        f.hot
    )
}

fn infinite_loop(f: &Facts<'_>) -> String {
    format!(
        "give the loop at {} a constant bound the verifier can see, or use `bpf_loop`/`bpf_for`",
        f.line
    )
}

fn helper_not_allowed(f: &Facts<'_>) -> String {
    format!(
        "call a helper this program type allows at {}, or load the program as a type that allows this one",
        f.line
    )
}

fn pointer_leak(f: &Facts<'_>) -> String {
    format!(
        "store or return a scalar at {}, not the pointer held in {}",
        f.line, f.reg
    )
}

fn pointer_arithmetic(f: &Facts<'_>) -> String {
    format!(
        "compute an index as a number and add it to the pointer once it is bounded, at {}; do not combine two pointers or mask a pointer",
        f.line
    )
}

fn division_by_zero(f: &Facts<'_>) -> String {
    format!("divide by a non-zero constant at {}", f.line)
}

fn misaligned_access(f: &Facts<'_>) -> String {
    format!(
        "read the field at {} with its own alignment (`__builtin_memcpy` into a local, or an aligned struct layout)",
        f.line
    )
}

fn access_not_allowed(f: &Facts<'_>) -> String {
    format!(
        "do not write to (or read from) the memory at {}; copy it to a local variable first",
        f.line
    )
}

fn invalid_field_access(f: &Facts<'_>) -> String {
    format!(
        "read only an allowed field at {}, with its own size, or use a helper (`bpf_probe_read_kernel`, `bpf_skc_to_*`)",
        f.line
    )
}

fn spin_lock_rule(f: &Facts<'_>) -> String {
    format!(
        "keep the region locked at {} short: no calls inside it, and `bpf_spin_unlock` of the same lock on every path",
        f.line
    )
}

fn locked_region_rule(f: &Facts<'_>) -> String {
    format!(
        "close the region (`bpf_rcu_read_unlock`, `bpf_preempt_enable`) on every path before {line}, or move what {line} does (an exit, a tail call, a call that may sleep) out of it",
        line = f.line
    )
}

fn not_a_pointer(f: &Facts<'_>) -> String {
    if let Some(by) = &f.invalidated {
        return format!(
            "{} no longer holds a pointer at {}: {by}; use the pointer only before it, or get it again after it",
            f.reg, f.line
        );
    }
    if f.number_as_pointer {
        return format!(
            "{} is a number, which the verifier does not take as a pointer at {}: read what it points to with `bpf_probe_read_kernel` (or `BPF_CORE_READ`), or get the pointer from a helper, kfunc or field the verifier types (`bpf_get_current_task_btf`)",
            f.origin, f.line
        );
    }
    format!(
        "dereference a pointer the verifier knows at {}: {} holds no pointer the verifier can use there",
        f.line, f.reg
    )
}

fn core_relocation_failed(f: &Facts<'_>) -> String {
    format!(
        "guard the access at {} with `bpf_core_field_exists()`/`bpf_core_type_exists()` or fix the field's name",
        f.line
    )
}

fn mixed_pointer_types(f: &Facts<'_>) -> String {
    format!(
        "{} points to different kinds of memory on the paths that reach {} (the context on one, the stack or a map value on another), and the compiler merged their accesses into one instruction: read each into a local variable on its own branch, or keep the accesses apart (`barrier_var(ptr)` from bpf_helpers.h before the access)",
        f.reg, f.line
    )
}

fn missing_kernel_symbol(_: &Facts<'_>) -> String {
    "the running kernel lacks a kfunc or `__ksym` variable this program uses: declare it `__weak` and test it before each use (`if (bpf_ksym_exists(name))`, libbpf 1.2 and later), or load on a kernel that has it (`bpftool btf dump file /sys/kernel/btf/vmlinux | grep name` lists what this one has)".to_owned()
}

fn stack_size(f: &Facts<'_>) -> String {
    format!(
        "use less stack in the functions called on the way to {}: move large local buffers into a per-CPU array map, or mark a callee `__noinline` only where its frame is small (each frame is rounded up to 32 bytes)",
        f.line
    )
}

fn invalid_program(f: &Facts<'_>) -> String {
    format!(
        "the bytecode itself is malformed at {}: rebuild the object with clang's BPF target; hand-written or inline assembly must jump only inside the program, reach every instruction and end in `exit`",
        f.line
    )
}

fn unknown(f: &Facts<'_>) -> String {
    format!("read the verifier's message at {}", f.line)
}
