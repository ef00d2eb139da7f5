//! Which class an error line is of: the catalogue's entries, each a fixed part of a kernel
//! format string, most specific first.

use super::*;

/// How a message is recognised.
pub(super) enum Pattern {
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
pub(super) fn stack_read(error: &str) -> Option<(i64, i64)> {
    match stack_read_parts(error)? {
        StackRead::Bytes { off, size } => Some((off, size)),
        StackRead::Unwritten { off, written } => Some((off + written, 1)),
    }
}

/// What an error about a read of the stack says of the bytes read ([`stack_read`]).
pub(super) enum StackRead {
    /// `off=%d size=%d`: the bytes read.
    Bytes { off: i64, size: i64 },
    /// `off %d+%d size %d`: the read's start, and how many bytes from it were written.
    Unwritten { off: i64, written: i64 },
}

/// The numbers of an error about a read of the stack ([`stack_read`]).
pub(super) fn stack_read_parts(error: &str) -> Option<StackRead> {
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
pub(super) fn in_frame((off, size): (i64, i64)) -> bool {
    off >= -512 && size > 0 && off + size <= 0
}

/// The catalogue, most specific first: the first entry whose pattern matches an error line
/// gives its class. Each pattern is a fixed part of a kernel format string.
pub(super) const ENTRIES: &[(Pattern, &Class)] = &[
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
