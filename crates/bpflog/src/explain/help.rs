//! What to change: the help of a rejection, built from its typed fields ([`Rejection`]) and
//! what the walk back found in the program, by one function per class.

use super::catalogue::{ClassId, Message, Rejection};

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
    /// The helper or kfunc the chain's origin calls (`bpf_ringbuf_reserve`).
    pub origin_call: Option<String>,
    /// The line of the chain's origin, and its source (`prog.c:9: `...``).
    pub origin_line: Option<String>,
    /// The instruction that took the pointer away, from the chain's `invalidated` step
    /// ([`Invalidation`](super::chain::Invalidation)): the call (or the instruction) and its line.
    pub invalidated: Option<(String, String)>,
    /// What the chain's narrowing check lets through, and the comparison that refuses it
    /// (`Narrowing::advice`), when the chain has one.
    pub narrowing: Option<String>,
    /// The value is a number used as a pointer: loaded from memory as one, or an address a
    /// helper returns as one ([`Fact::is_number_as_pointer`](super::Fact::is_number_as_pointer)).
    pub number_as_pointer: bool,
    /// The `bpf_spin_lock` call held where the rule is broken, named by its source.
    pub held: Option<String>,
    /// The stack each function of the program uses at least, by name, as its instructions
    /// show (for a call stack too large).
    pub frames: Vec<(String, i64)>,
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
            origin_call: None,
            origin_line: None,
            invalidated: None,
            held: None,
            narrowing: None,
            number_as_pointer: false,
            frames: Vec::new(),
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
    if let Some(kptr) = rcu_released(f) {
        return kptr;
    }
    format!(
        "check {} for NULL before using it (`if (!p) return ...;`), on every path to {}",
        f.origin, f.line
    )
}

fn map_value_out_of_range(f: &Facts<'_>) -> String {
    let r = f.rejection;
    let over = match (r.size, r.off, r.mem_size) {
        (Some(size), Some(off), Some(mem)) => format!(
            "{} at offset {off} exceed the {mem}-byte map value at {}",
            bytes(size),
            f.line
        ),
        _ => format!("the access at {} leaves the map value", f.line),
    };
    if let Some(narrowing) = &f.narrowing {
        return format!("{over}: {narrowing}");
    }
    format!(
        "{over}: bound the index ({}) so that the access stays within the value, on the path before it ({} lets it reach past the end; e.g. `if (idx >= ARRAY_SIZE(v->arr)) return ...;`)",
        f.origin, f.narrowed
    )
}

/// `1 byte`, `N bytes`.
fn bytes(n: i64) -> String {
    if n == 1 {
        "1 byte".to_owned()
    } else {
        format!("{n} bytes")
    }
}

fn packet_out_of_range(f: &Facts<'_>) -> String {
    let r = f.rejection;
    if let (Some(off), Some(size), Some(checked)) = (r.off, r.size, r.checked) {
        let end = off + size;
        return format!(
            "the read at {} ({} at offset {off} from the packet pointer's base) reaches byte {end}, but the checks on the path prove only {checked} bytes before `data_end` (the last: {}): compare `base + {end}` with `data_end` before the access, so that every byte read is checked, or read within the {checked} checked bytes",
            f.line,
            bytes(size),
            f.narrowed
        );
    }
    format!(
        "the last bound of the packet, {}, does not cover the bytes read at {}: compare the pointer plus the size read with `data_end` (`if ((void *)(p + 1) > data_end) return ...;`) before the access",
        f.narrowed, f.line
    )
}

fn stack_out_of_range(f: &Facts<'_>) -> String {
    let r = f.rejection;
    if let (false, Some(off), Some(size)) = (r.variable, r.off, r.size) {
        return format!(
            "the {} at fp{off:+} (at {}) lie outside the stack frame, the 512 bytes below the frame pointer (fp-512 up to fp-1): keep every stack access within the frame, at a negative offset from r10 (a buffer of {size} bytes starts at fp-{size} at the highest)",
            bytes(size),
            f.line
        );
    }
    if let Some(narrowing) = &f.narrowing {
        return format!("the access at {} leaves the buffer: {narrowing}", f.line);
    }
    format!(
        "bound the index used with {} (`if (i >= ARRAY_SIZE(buf)) return ...;` or `i &= MASK`) before the access at {}",
        f.reg, f.line
    )
}

fn invalid_context_access(f: &Facts<'_>) -> String {
    let r = f.rejection;
    match (r.message, r.off, r.size) {
        (Some(Message::ContextAccess), Some(off), Some(size)) => format!(
            "the context may not be read or written with {size} bytes at offset {off} (at {}): access only the fields of this program type's context structure, by name through the `ctx` argument and with the field's own size (a pointer field such as `sk` or `data_end` whole, as 8 bytes)",
            f.line
        ),
        (Some(Message::ModifiedPointer), ..) => format!(
            "access the context at {} through the `ctx` pointer as the program got it, at a constant field offset (`ctx->field`): a context pointer moved by a variable or computed offset may not be dereferenced",
            f.line
        ),
        _ => format!(
            "read only fields of the context structure of this program type, with their own size, directly through the `ctx` argument at {}",
            f.line
        ),
    }
}

/// The help of a release kfunc given an RCU-protected pointer read from a field (`rcu_ptr_`,
/// `rcu_ptr_or_null_` as the state prints what the register holds): not a reference the
/// program owns.
fn rcu_released(f: &Facts<'_>) -> Option<String> {
    let r = f.rejection;
    let callee = r.callee.as_deref().filter(|c| c.ends_with("_release"))?;
    r.value.as_deref().filter(|v| v.starts_with("rcu_ptr_"))?;
    Some(format!(
        "{} at {} holds an RCU-protected pointer read from a field (a `__kptr` in a map value, or a kernel object's field), which the program does not own and `{callee}` may not release: to release an object stored in a map, take it out with `bpf_kptr_xchg(&v->field, NULL)`, check the result for NULL, then release that",
        f.reg, f.line
    ))
}

fn max_out_of_range(f: &Facts<'_>) -> String {
    let r = f.rejection;
    // `invalid access to memory, mem_size=8 off=51966 size=8`: the sizes the line gives.
    let over = match (r.size, r.off, r.mem_size) {
        (Some(size), Some(off), Some(mem)) if off.saturating_add(size) > 0 => Some(format!(
            "{} at offset {off} reach past the {mem}-byte memory at {}",
            bytes(size),
            f.line
        )),
        _ => None,
    };
    if let Some(narrowing) = &f.narrowing {
        return format!(
            "the offset at {} reaches past the end of the memory: {narrowing}",
            f.line
        );
    }
    if let Some(over) = over {
        return format!(
            "{over}: keep the offset added to the pointer within the size (of the reservation, allocation or value) so that every byte accessed lies inside it; {} lets it reach past the end",
            f.narrowed
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
    // A constant (`R4=0x7fffffff`): not unbounded but too large.
    let constant = (f.rejection.value.as_deref())
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains('('));
    if let Some(n) = constant {
        return format!(
            "{} at {} is the constant {n}, larger than any memory the access may reach: pass a size or offset within the buffer (a stack buffer has at most 512 bytes), such as `sizeof(buf)`",
            f.reg, f.line
        );
    }
    if f.rejection.message == Some(Message::UnboundedMin) {
        return format!(
            "{} added to the pointer at {} has no lower bound, so it may be negative (a signed value, or checked only against its upper end): make the index unsigned (`__u32`), or also reject `idx < 0`, before the addition",
            f.reg, f.line
        );
    }
    format!(
        "bound {} before {}: `if (idx >= N) return ...;` or `idx &= N - 1`",
        f.reg, f.line
    )
}

fn uninitialized_register(f: &Facts<'_>) -> String {
    if let Some(call) = &f.origin_call {
        let at = f.origin_line.as_deref().unwrap_or("the call");
        return if invalidates(call) {
            format!(
                "`{call}` ({at}) clobbers R1-R5 and also invalidates the pointers the program got before it: compute {} again after the call (load the pointers again from the context and check them again) before {}",
                f.reg, f.line
            )
        } else {
            format!(
                "`{call}` ({at}) clobbers R1-R5, so {} read at {} holds nothing: set it again after the call, or keep the value in a variable that lives across it",
                f.reg, f.line
            )
        };
    }
    if let Some((branch, write)) = &f.skipped {
        return format!(
            "give the variable held in {} a value on every path to {}: the test at {branch} jumps over {write}, where it is written; write it on that path too (or before the test)",
            f.reg, f.line
        );
    }
    format!(
        "give the variable held in {} a value on every path to {}, or keep it in a variable that survives the call",
        f.reg, f.line
    )
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
    if f.rejection.message == Some(Message::OverwriteDynptr) {
        return format!(
            "the dynptr written over at {} still holds a reference (a ring buffer record from `bpf_ringbuf_reserve_dynptr`): submit or discard it first (`bpf_ringbuf_submit_dynptr`/`bpf_ringbuf_discard_dynptr`), and do not write to its stack slots while it is live",
            f.line
        );
    }
    let release = f.origin_call.as_deref().and_then(release_of);
    match (&f.origin_call, release) {
        (Some(call), Some(release)) => format!(
            "release what `{call}` acquired ({}) with {release} on every path to exit, including early returns and error paths",
            f.origin_line.as_deref().unwrap_or("its call")
        ),
        _ => format!(
            "every reference acquired must be released (or handed on) before the program exits, on every path: release what {} acquired with the call that matches it (`bpf_ringbuf_reserve` with `bpf_ringbuf_submit`/`bpf_ringbuf_discard`, `bpf_sk_lookup_*` with `bpf_sk_release`, `bpf_obj_new` with `bpf_obj_drop`, a kfunc `*_acquire` with its `*_release`), including early returns",
            f.origin
        ),
    }
}

/// How the reference `acquirer` returns is released: the kernel's pairs (Linux 6.12,
/// `kernel/bpf/helpers.c`, `cpumask.c`, `crypto.c`, `net/core/filter.c`, nf_conntrack_bpf.c),
/// in words; `None` for a call that acquires nothing bpflog knows.
pub(crate) fn release_of(acquirer: &str) -> Option<String> {
    let name = acquirer.strip_suffix("_impl").unwrap_or(acquirer);
    let pair = |a: &str, b: &str| Some(format!("`{a}` (or `{b}`)"));
    let one = |a: &str| Some(format!("`{a}`"));
    match name {
        "bpf_ringbuf_reserve" => pair("bpf_ringbuf_submit", "bpf_ringbuf_discard"),
        "bpf_ringbuf_reserve_dynptr" => {
            pair("bpf_ringbuf_submit_dynptr", "bpf_ringbuf_discard_dynptr")
        }
        "bpf_sk_lookup_tcp" | "bpf_sk_lookup_udp" | "bpf_skc_lookup_tcp" => one("bpf_sk_release"),
        "bpf_task_acquire" | "bpf_task_from_pid" | "bpf_task_from_vpid" => {
            one("bpf_task_release")
        }
        "bpf_cgroup_acquire" | "bpf_cgroup_from_id" | "bpf_cgroup_ancestor"
        | "bpf_task_get_cgroup1" => one("bpf_cgroup_release"),
        "bpf_cpumask_create" | "bpf_cpumask_acquire" => one("bpf_cpumask_release"),
        "bpf_crypto_ctx_create" | "bpf_crypto_ctx_acquire" => one("bpf_crypto_ctx_release"),
        "bpf_obj_new" | "bpf_refcount_acquire" | "bpf_list_pop_front" | "bpf_list_pop_back"
        | "bpf_rbtree_remove" => Some(
            "`bpf_obj_drop` (or hand it to a collection: `bpf_list_push_front`/`back`, `bpf_rbtree_add`, or a map's kptr with `bpf_kptr_xchg`)"
                .to_owned(),
        ),
        "bpf_percpu_obj_new" => Some(
            "`bpf_percpu_obj_drop` (or store it in a map's kptr with `bpf_kptr_xchg`)".to_owned(),
        ),
        "bpf_xdp_ct_alloc" | "bpf_skb_ct_alloc" => pair("bpf_ct_insert_entry", "bpf_ct_release"),
        "bpf_xdp_ct_lookup" | "bpf_skb_ct_lookup" | "bpf_ct_insert_entry" => {
            one("bpf_ct_release")
        }
        "bpf_lookup_user_key" | "bpf_lookup_system_key" => one("bpf_key_put"),
        "bpf_get_task_exe_file" => one("bpf_put_file"),
        _ => {
            let iter = name.strip_prefix("bpf_iter_")?.strip_suffix("_new")?;
            Some(format!("`bpf_iter_{iter}_destroy`"))
        }
    }
}

/// Whether a call to helper or kfunc `name` leaves pointers the program got before it invalid
/// (the verifier makes them scalars): the chain's decision,
/// [`Invalidation::of_call`](super::chain::Invalidation::of_call).
pub(crate) fn invalidates(name: &str) -> bool {
    let callee = bpflog_log::Callee::Named {
        name: name.as_bytes(),
        id: 0,
    };
    super::chain::Invalidation::of_call(callee).is_some()
}

fn bad_return_value(f: &Facts<'_>) -> String {
    let range = f.rejection.range.as_deref().unwrap_or("the allowed range");
    format!(
        "return a value within {range}, what this hook allows, on every path to {}: {} is returned",
        f.line, f.origin
    )
}

fn helper_argument_type(f: &Facts<'_>) -> String {
    let r = f.rejection;
    let (reg, line) = (&f.reg, &f.line);
    let object = r.object.as_deref().unwrap_or("object");
    let iter = object.strip_prefix("iter_");
    match r.message {
        Some(Message::ZeroSizedRead) => {
            return format!(
                "the size passed in {reg} at {line} may be 0: bound it to 1..sizeof(buffer) on the path before the call (`if (len == 0 || len > sizeof(buf)) return ...;`), or pass a constant size"
            );
        }
        Some(Message::KnownConstant) => {
            return format!(
                "{reg} at {line} must be a constant the verifier knows (a literal or a `sizeof`), not a variable, even a bounded one"
            );
        }
        Some(Message::InitializedExpected) => {
            return match iter {
                Some(iter) => format!(
                    "the iterator passed at {line} is not initialised on this path: create it with `bpf_iter_{iter}_new` first, and do not use it after `bpf_iter_{iter}_destroy`"
                ),
                None if f.invalidated.is_some() => {
                    let (what, at) = f
                        .invalidated
                        .as_ref()
                        .map(|(w, a)| (w.as_str(), a.as_str()))
                        .unwrap_or_default();
                    if what.starts_with("*(") {
                        format!(
                            "the dynptr passed at {line} was destroyed by the store `{what}` at {at}, which writes over its own stack bytes (a `memcpy` or assignment into `&ptr`): do not write into the `struct bpf_dynptr`; write data through `bpf_dynptr_write`, or keep the value in a variable of its own"
                        )
                    } else {
                        format!(
                            "the dynptr passed at {line} was released at {at} by `{what}`: a submit or discard through the dynptr or any clone of it (`bpf_dynptr_clone`) ends the record they share, and every clone with it; use the dynptr before that call"
                        )
                    }
                }
                None => format!(
                    "the dynptr passed at {line} is not initialised on this path: initialise it first (`bpf_dynptr_from_mem`, `bpf_ringbuf_reserve_dynptr`, `bpf_dynptr_from_skb`, ...), and do not use it after it was released (`bpf_ringbuf_submit_dynptr`/`discard_dynptr`) or invalidated by a write to its stack slots"
                ),
            };
        }
        Some(Message::UninitializedExpected) => {
            return match iter {
                Some(iter) => format!(
                    "the iterator passed at {line} is already initialised: destroy it with `bpf_iter_{iter}_destroy` first, or use another, new iterator variable"
                ),
                None => format!(
                    "the dynptr passed at {line} must be a new, uninitialised `struct bpf_dynptr` (a local of its own), not one initialised already or handed in by the kernel"
                ),
            };
        }
        Some(Message::NotAcquired) => {
            let release = r
                .callee
                .as_deref()
                .map_or_else(|| "the release".to_owned(), |c| format!("`{c}`"));
            return format!(
                "{release} at {line} must be given a reference the program acquired (from an acquiring call such as `bpf_*_acquire`, a lookup, or `bpf_kptr_xchg`) and still holds: {reg} was not acquired on this path, or was released already; do not release what was not acquired"
            );
        }
        Some(Message::NotTrusted) => {
            if let Some(kptr) = rcu_released(f) {
                return kptr;
            }
            let value = r.value.as_deref().unwrap_or_default();
            let callee = r.callee.as_deref().unwrap_or_default();
            if callee.starts_with("bpf_cpumask_") && value.contains("ptr_cpumask") {
                return format!(
                    "{reg} at {line} is a kernel object's `struct cpumask` (such as `task->cpus_ptr`), not a `struct bpf_cpumask` the program made: create one with `bpf_cpumask_create` and `bpf_cpumask_copy` into it, or pass the kernel's mask to the read-only cpumask kfuncs (those taking `const struct cpumask *`) directly"
                );
            }
            return format!(
                "{reg} at {line} must be a referenced or trusted pointer of the type the kfunc takes (a program argument, or an object from an acquiring kfunc), not one walked from another object, loaded from a map, or of another type"
            );
        }
        Some(Message::NotRcu) => {
            return format!(
                "{reg} at {line} must be an RCU-protected pointer: use it between `bpf_rcu_read_lock()` and `bpf_rcu_read_unlock()` as read from an RCU-protected field, or pass a trusted (referenced) one"
            );
        }
        Some(Message::WrongStruct) => {
            let (want, got) = (
                r.expected.as_deref().unwrap_or("?"),
                r.actual.as_deref().unwrap_or("?"),
            );
            let callee = r
                .callee
                .as_deref()
                .map_or_else(|| "the kfunc".to_owned(), |c| format!("`{c}`"));
            let why = if want.ends_with("___init") || got.ends_with("___init") {
                " (a connection from `bpf_xdp_ct_alloc`/`bpf_skb_ct_alloc` is a `nf_conn___init` until `bpf_ct_insert_entry`: set it up with the `bpf_ct_set_*` kfuncs before the insert; after it, or from a lookup, it is a `nf_conn` for the `bpf_ct_change_*` kfuncs)"
            } else {
                ""
            };
            return format!(
                "{callee} at {line} takes a `struct {want} *`, and {reg} points to a `struct {got}`: pass an object of the type it takes{why}"
            );
        }
        Some(Message::NotAllocated) => {
            return format!(
                "the node passed at {line} must be an object the program owns: fresh from `bpf_obj_new` (or taken back with `bpf_list_pop_*`/`bpf_rbtree_remove`); after a push or add the collection owns it and the program keeps only a non-owning reference, so push or add each object only once, and allocate another with `bpf_obj_new` for another collection"
            );
        }
        Some(Message::NodeReferenceOnly) => {
            let lost = f
                .invalidated
                .as_ref()
                .map_or_else(String::new, |(call, at)| {
                    format!(" (the path lost the reference at {at}, by `{call}`)")
                });
            return format!(
                "the node passed in {reg} at {line} is not a reference to a node in the collection{lost}: after `bpf_rbtree_add` or a list push the program keeps a non-owning reference valid only until `bpf_spin_unlock`, so use it within the same critical section as the add, find the node again with `bpf_rbtree_first` once the lock is taken again, or keep a reference of its own with `bpf_refcount_acquire`"
            );
        }
        Some(Message::WrongNodeType) => {
            let (want, got) = (
                r.expected.as_deref().unwrap_or("?"),
                r.actual.as_deref().unwrap_or("?"),
            );
            return format!(
                "the list or tree at {line} holds `struct {want}` (as its `__contains({want}, ...)` declares), and the node passed is in a `struct {got}`: add the node field `__contains` names, of a `struct {want}`"
            );
        }
        Some(Message::TypeNotStruct) => {
            let callee = r
                .callee
                .as_deref()
                .map_or_else(|| "this kfunc".to_owned(), |c| format!("`{c}`"));
            return format!(
                "the type given to {callee} at {line} must be a struct (for `bpf_rdonly_cast`, a struct or void), not a scalar type: cast to or allocate a `struct ...`"
            );
        }
        Some(Message::UnownedDynptr) => {
            return format!(
                "the dynptr released at {line} is not the program's: a callback's dynptr (from `bpf_user_ringbuf_drain`) belongs to the kernel, which releases the sample itself after the callback returns; do not submit or discard it"
            );
        }
        Some(Message::NullConstant) => {
            let callee = r
                .callee
                .as_deref()
                .map_or_else(|| "the call".to_owned(), |c| format!("`{c}`"));
            return format!(
                "{reg} at {line} is the constant NULL, and {callee} takes a valid, trusted pointer there: pass the object itself (a program argument, or one from an acquiring kfunc), not NULL"
            );
        }
        Some(Message::SizePastBuffer) => {
            return format!(
                "the size passed at {line} is larger than the stack buffer passed with it, so the read runs past its end into the next local: make the buffer at least as large as the size, or pass `sizeof(buffer)`"
            );
        }
        Some(Message::ExceptionCallbackArgs) => {
            return format!(
                "the exception callback (at {line}) must take exactly one integer argument, the cookie `bpf_throw` passes: `int exception_cb(u64 cookie)`"
            );
        }
        Some(Message::NotTheLock) => {
            return format!(
                "{reg} at {line} points into its object at another offset than the object's `struct bpf_spin_lock`: pass the lock field itself (`&obj->lock`); from a pointer to a node or another field, get the object with `container_of` first"
            );
        }
        Some(Message::ContextAccess) => {
            return format!(
                "the program's context is passed at {line} to a global function's argument that is plain memory (a pointer to a struct or buffer), which may not be the context: copy the data into a local variable (stack) or a map value and pass its address, or declare the argument as the context's type"
            );
        }
        Some(Message::ReleaseAtOffset) => {
            return format!(
                "pass {reg} at {line} as the acquiring call returned it, pointing to the start of the object, not into one of its fields (use `container_of` to get back to the object)"
            );
        }
        _ => {}
    }
    if let (Some(actual), Some(expected)) = (&r.actual, &r.expected) {
        let advice = if actual.ends_with("_or_null") || actual.ends_with("or_null_") {
            "it may be NULL: check it for NULL first".to_owned()
        } else if expected.contains("percpu") {
            "this call takes a per-CPU object (`__percpu_kptr`, from `bpf_percpu_obj_new`)"
                .to_owned()
        } else if actual.starts_with("untrusted") || actual.starts_with("rdonly_untrusted") {
            "an untrusted pointer (walked from another object) is passed where a trusted one is needed: pass the object the program got as an argument or from an acquiring kfunc".to_owned()
        } else if actual == "scalar" && expected.starts_with("fp") {
            "pass a pointer: the address of a local variable or buffer (`&key`), a map value or packet data, not a number".to_owned()
        } else {
            format!(
                "pass one of those types instead ({} comes from {})",
                reg, f.origin
            )
        };
        return format!(
            "{reg} at {line} holds a `{actual}`, where this call takes one of: {expected}; {advice}"
        );
    }
    format!(
        "pass {reg} as the type the helper expects at {line} (for a pointer into the stack, the address of a local variable)"
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
    let r = f.rejection;
    match r.message {
        Some(Message::ProgsCannotUse) => {
            return format!(
                "tracing programs (kprobe, tracepoint, perf_event, raw tracepoint) may not use this map field or helper, at {}: use it from another program type (fentry/fexit, tc, xdp, ...) or do without it",
                f.line
            );
        }
        Some(Message::KfuncNotAllowed) => {
            let kfunc = r.callee.as_deref().unwrap_or("this kfunc");
            return format!(
                "the kfunc `{kfunc}` is not available to this program type (at {}): kfuncs are registered per program type; those taking kernel objects (a task, a cgroup, a cpumask) are for BTF-typed programs (tp_btf, fentry/fexit, LSM, struct_ops), not kprobes or raw tracepoints, whose arguments are plain numbers; those of packets for the packet programs (tc, xdp): call it from a program type that has it",
                f.line
            );
        }
        Some(Message::MapTypeNotAllowed) => {
            let callee = r
                .callee
                .as_deref()
                .map_or_else(|| "this helper".to_owned(), |c| format!("`{c}`"));
            return format!(
                "this map's type may not be passed to {callee} at {} from this program type or context: each map type allows only some helpers, and some only from some program types (a sockmap or sockhash is updated or deleted from tc, xdp, socket filters, sock_ops, sk_lookup, sk_reuseport and iterators); call it where it is allowed, or use another map type",
                f.line
            );
        }
        Some(Message::ThrowInCallback) => {
            let callee = r.callee.as_deref().unwrap_or("bpf_throw");
            return format!(
                "`{callee}` may not be called from a callback (a timer, `bpf_loop` or for-each callback, or what it calls), as at {}: return an error value from the callback instead, and throw, if at all, in the program's own code after the call that runs it",
                f.line
            );
        }
        Some(Message::GplOnly) => {
            return format!(
                "the call at {} is to a GPL-only helper: declare the program's license GPL-compatible (`char LICENSE[] SEC(\"license\") = \"GPL\";`) or do not call it",
                f.line
            );
        }
        _ => {}
    }
    let callee = r
        .callee
        .as_deref()
        .map_or_else(|| "this helper".to_owned(), |c| format!("`{c}`"));
    format!(
        "{callee} may not be called at {} from this program type, attach point or context: call one this program allows, or load the program as a type (or attach point) that allows it",
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
    let r = f.rejection;
    let line = &f.line;
    match r.message {
        Some(Message::PointerPlusPointer) => format!(
            "{line} adds two pointers: only a number (a scalar) may be added to a pointer; do not add the other pointer, add an offset computed as a number"
        ),
        Some(Message::ArithmeticOn) => {
            let kind = r.object.as_deref().unwrap_or("this");
            format!(
                "a `{kind}` pointer may not be moved at all (no arithmetic on it, at {line}): use it unchanged, as it was given or returned (compare a packet pointer plus the size with the unmodified `data_end`)"
            )
        }
        Some(Message::FramePointerMoved) => format!(
            "the frame pointer is moved out of the stack frame at {line}: stack addresses are r10 plus a negative offset within the 512-byte frame (`r1 += -8`), reached by one bounded addition"
        ),
        Some(Message::ModifiedPointer) => {
            let kind = r.object.as_deref().unwrap_or("this");
            format!(
                "a `{kind}` pointer must be used unmodified, as it was given (at {line}): do not add an offset to it; for a dynptr, read at an offset with `bpf_dynptr_read`/`bpf_dynptr_data` instead"
            )
        }
        Some(Message::ContextIndexed) => format!(
            "the context is indexed with a variable at {line}: read its fields by name (`ctx->field`), each at its constant offset, not through `(u8 *)ctx + n`"
        ),
        _ => format!(
            "compute an index as a number and add it to the pointer once it is bounded, at {line}; do not combine two pointers or mask a pointer"
        ),
    }
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
    let r = f.rejection;
    if let Some(slot) = &r.slot
        && (slot.starts_with("dynptr") || slot.starts_with("iter"))
    {
        let kfuncs = if slot.starts_with("dynptr") {
            "read its data with `bpf_dynptr_read`, `bpf_dynptr_data` or `bpf_dynptr_slice`"
        } else {
            "use it only through its `bpf_iter_*` kfuncs"
        };
        return format!(
            "the stack bytes read at {} hold a {slot}, which the program may not read or pass as memory itself: {kfuncs}",
            f.line
        );
    }
    let line = &f.line;
    match r.message {
        Some(Message::RegisterFill) => {
            return format!(
                "a register spilled to the stack is read back at {line} in parts: read it whole, with the size it was stored with (a pointer is 8 bytes)"
            );
        }
        Some(Message::MapReadOnly) => {
            return format!(
                "the map written at {line} is read-only for the program (a `const` global, frozen in `.rodata`, or a map created with `BPF_F_RDONLY_PROG`): keep data the program changes in a writable global (without `const`: `.data`/`.bss`) or a writable map"
            );
        }
        Some(Message::MapWriteOnly) => {
            return format!(
                "the map read at {line} is write-only for the program (created with `BPF_F_WRONLY_PROG`): read it from user space, or create it without that flag"
            );
        }
        Some(Message::FramePointerWrite) => {
            return format!(
                "r10, the frame pointer, may not be written (at {line}): copy it (`r1 = r10`) and move the copy"
            );
        }
        Some(Message::DynptrOverlap) => {
            return format!(
                "the memory written at {line} overlaps the stack slots of a live `struct bpf_dynptr`: write into a separate buffer of its own, not one that shares (a union with) the dynptr's bytes"
            );
        }
        Some(Message::HelperWritesInto) => {
            let callee = r
                .callee
                .as_deref()
                .map_or_else(|| "the helper".to_owned(), |c| format!("`{c}`"));
            return format!(
                "{callee} writes into the memory it is given at {line}, and {} points to a kernel object the program may not write: give it a buffer of the program's own, on the stack or in a map value",
                f.reg
            );
        }
        Some(Message::ReadOnly) => {
            let what = r
                .object
                .as_deref()
                .map_or_else(|| "this memory".to_owned(), |o| format!("a `{o}`"));
            return format!(
                "{what} may only be read by this program (at {line}): do not write to it; write to a copy of your own (on the stack or in a map value), or use the helper this program type has for changing it"
            );
        }
        _ => {}
    }
    format!(
        "do not write to (or read from) the memory at {}; copy it to a local variable first",
        f.line
    )
}

fn invalid_field_access(f: &Facts<'_>) -> String {
    if f.rejection.message == Some(Message::NoWriteSupport) {
        let object = f.rejection.object.as_deref().unwrap_or("this object");
        let how = if object == "nf_conn" {
            " (`bpf_ct_change_status`/`bpf_ct_set_status`, `bpf_ct_change_timeout`/`bpf_ct_set_timeout`)"
        } else {
            ""
        };
        return format!(
            "this field of `{object}` may not be written directly (at {}): change it through its kfuncs{how}; only the fields the kernel allows (such as `mark`) are written by store",
            f.line
        );
    }
    if f.rejection.message == Some(Message::BeyondMember) {
        let member = f.rejection.object.as_deref().unwrap_or("the field");
        let size = f
            .rejection
            .mem_size
            .map_or_else(String::new, |n| format!(" ({n} bytes)"));
        return format!(
            "the access at {} reaches past the end of the field `{member}`{size}: keep it within the field (`sizeof(obj->{member})`), for a helper's length too",
            f.line
        );
    }
    if f.rejection.message == Some(Message::DirectAccess) {
        return format!(
            "a `bpf_spin_lock`, `bpf_list_head`, `bpf_list_node`, `bpf_rb_root` or `bpf_rb_node` field may not be read or written by load or store (at {}): use it only through its kfuncs (`bpf_spin_lock`/`bpf_spin_unlock`, the `bpf_list_*` and `bpf_rbtree_*` kfuncs)",
            f.line
        );
    }
    let at = match (f.rejection.off, f.rejection.size) {
        (Some(off), Some(size)) => format!(" ({size} bytes at offset {off} is not one)"),
        _ => String::new(),
    };
    format!(
        "read a field of the kernel object at {} by name, with its own size{at}: only the fields the verifier allows for this object type may be read (or written), each whole; for another view of a socket use `bpf_skc_to_*`",
        f.line
    )
}

fn spin_lock_rule(f: &Facts<'_>) -> String {
    let held = f.held.as_deref().map_or_else(String::new, |held| {
        format!(" (the lock held was taken at {held})")
    });
    match f.rejection.message {
        Some(Message::LockMustBeHeld) => {
            let root = f.rejection.object.as_deref().unwrap_or("collection");
            let off = f
                .rejection
                .off
                .map_or_else(String::new, |off| format!(" at offset {off}"));
            format!(
                "take the `bpf_spin_lock`{off} that guards this {root}, in the same object (map value, allocation or global section) as the {root}, with `bpf_spin_lock(&lock)` before the call at {} and `bpf_spin_unlock` after it{held}",
                f.line
            )
        }
        Some(Message::DifferentLock) => format!(
            "`bpf_spin_unlock` at {} must unlock the same lock that was taken: pass it the lock the matching `bpf_spin_lock` held{held}",
            f.line
        ),
        Some(Message::UnlockWithoutLock) => format!(
            "`bpf_spin_unlock` at {} is reached on a path where no lock is held: take the lock with `bpf_spin_lock` first on every path, or unlock only where it was taken",
            f.line
        ),
        Some(Message::CallWhileLocked) => format!(
            "move the call at {} before the `bpf_spin_lock` or after the `bpf_spin_unlock`: inside a locked region only the lock's own kfuncs (`bpf_spin_unlock`, the list and rbtree kfuncs) may be called{held}",
            f.line
        ),
        Some(Message::LockInRbtreeCallback) => format!(
            "the `less` callback of `bpf_rbtree_add` runs with the tree's lock held: take and release no lock in it (at {}), and unlock only after `bpf_rbtree_add` returns",
            f.line
        ),
        Some(Message::InsideLockedRegion) => format!(
            "call `bpf_spin_unlock` before {}: an exit, a tail call or a packet load may not happen while the lock is held{held}",
            f.line
        ),
        _ => format!(
            "a region between `bpf_spin_lock` and `bpf_spin_unlock` at {} must unlock the same lock on every path and call nothing else inside{held}",
            f.line
        ),
    }
}

fn locked_region_rule(f: &Facts<'_>) -> String {
    format!(
        "close the region (`bpf_rcu_read_unlock`, `bpf_preempt_enable`) on every path before {line}, or move what {line} does (an exit, a tail call, a call that may sleep) out of it",
        line = f.line
    )
}

fn not_a_pointer(f: &Facts<'_>) -> String {
    if let Some((call, at)) = &f.invalidated {
        let again = if call == "bpf_sk_release"
            || call.ends_with("_release")
            || call.contains("drop")
            || call.contains("ringbuf")
        {
            "use the object before it is released: move the release after the last access"
        } else if call == "bpf_spin_unlock" {
            "a node added to a list or rbtree may be used only while the lock is held: read what you need before the unlock (save it in a local)"
        } else {
            "get the pointer again after the call: reload `data`/`data_end` and check the bounds again (for a dynptr, call `bpf_dynptr_slice` again and check its result)"
        };
        return format!(
            "{} at {} was a pointer that `{call}` at {at} made invalid (the verifier turns pointers it invalidates into plain numbers): {again}",
            f.reg, f.line
        );
    }
    if f.rejection.actual.as_deref() == Some("scalar") {
        let (reg, line) = (&f.reg, &f.line);
        match f.origin_call.as_deref() {
            // Helpers returning a kernel address as a number (`u64`).
            Some("bpf_get_current_task") => {
                return format!(
                    "{reg} at {line} holds the number `bpf_get_current_task` returns, a kernel address the verifier does not track as a pointer: call `bpf_get_current_task_btf()` instead, which returns a `struct task_struct *` it tracks, or read through the address with `bpf_probe_read_kernel` (`BPF_CORE_READ`)"
                );
            }
            // Helpers calling back with the context argument they were given.
            Some(
                call @ ("bpf_user_ringbuf_drain"
                | "bpf_loop"
                | "bpf_for_each_map_elem"
                | "bpf_find_vma"),
            ) => {
                return format!(
                    "{reg} at {line} is the callback's context argument, which is what `{call}` was given as its context ({}), and that is not a pointer: pass a pointer there (the address of a stack variable or map value), or do not dereference the context in the callback",
                    f.origin
                );
            }
            _ => {}
        }
        if f.number_as_pointer {
            return format!(
                "{reg} at {line} holds a number loaded from memory ({}), which the verifier does not track as a pointer, whatever the C source casts it to: read what it points to with `bpf_probe_read_kernel` (`BPF_CORE_READ`), or get the pointer from a helper, kfunc or field the verifier types",
                f.origin
            );
        }
        // Not a pointer on this path, and no call bpflog knows between made it one no more.
        return format!(
            "{reg} at {line} holds a number (a scalar), not a pointer the verifier tracks ({}): memory may be accessed only through pointers it knows. A value loaded or computed as an integer (a pointer cast to one) is not one; and a pointer is turned into a number by a call on the path that invalidates it (a release, or a helper, subprogram or tail call that may change packet data): then get it again after that call (load `data`/`data_end` again and check the bounds again)",
            f.origin
        );
    }
    format!(
        "{} at {} is not a pointer this access may use: memory may be accessed only through pointers the verifier tracks, of a type that may be dereferenced",
        f.reg, f.line
    )
}

fn core_relocation_failed(f: &Facts<'_>) -> String {
    format!(
        "guard the access at {} with `bpf_core_field_exists()`/`bpf_core_type_exists()` or fix the field's name",
        f.line
    )
}

fn mixed_pointer_types(f: &Facts<'_>) -> String {
    if f.rejection.message == Some(Message::SameCallTypes) {
        return format!(
            "the compiler merged calls whose arguments have different types into the one call at {}: keep them separate calls, by inlining the static function that holds the call or marking it `__attribute__((nomerge))`",
            f.line
        );
    }
    format!(
        "{} points to different kinds of memory on the paths that reach {} (the context on one, the stack or a map value on another), and the compiler merged their accesses into one instruction: read each into a local variable on its own branch, or keep the accesses apart (`barrier_var(ptr)` from bpf_helpers.h before the access)",
        f.reg, f.line
    )
}

fn missing_kernel_symbol(_: &Facts<'_>) -> String {
    "the running kernel lacks a kfunc or `__ksym` variable this program uses: declare it `__weak` and test it before each use (`if (bpf_ksym_exists(name))`, libbpf 1.2 and later), or load on a kernel that has it (`bpftool btf dump file /sys/kernel/btf/vmlinux | grep name` lists what this one has)".to_owned()
}

fn stack_size(f: &Facts<'_>) -> String {
    let r = f.rejection;
    if r.message == Some(Message::CallsTooDeep) {
        let frames = r
            .frames
            .map_or_else(String::new, |n| format!(" ({n} frames)"));
        return format!(
            "the calls at {} nest deeper than the 8 frames the kernel allows{frames}: BPF functions may not recurse; turn recursion into a bounded loop (or `bpf_loop`), and flatten deep call chains",
            f.line
        );
    }
    let what = match (r.frames, r.stack_bytes) {
        (Some(frames), Some(bytes)) => {
            format!(
                "the {frames} frames of the call chain to {} take {bytes} bytes of stack together, past the 512 allowed",
                f.line
            )
        }
        (None, Some(bytes)) => format!(
            "{bytes} bytes of stack are used below the call at {}, past what is allowed",
            f.line
        ),
        _ => format!(
            "the call chain to {} takes more stack than the kernel allows",
            f.line
        ),
    };
    let mut frames: Vec<&(String, i64)> = f.frames.iter().filter(|(_, bytes)| *bytes > 0).collect();
    frames.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
    let each = frames
        .iter()
        .take(MAX_FRAMES)
        .map(|(name, bytes)| format!("`{name}` {bytes}"))
        .collect::<Vec<_>>();
    let each = if each.is_empty() {
        String::new()
    } else {
        format!(
            " (the stack its functions use, from their instructions, at least: {} bytes)",
            each.join(", ")
        )
    };
    format!(
        "{what}{each}: make the large local buffers of these functions smaller, or move them into a per-CPU array map (one entry, looked up at the start) or a ring buffer record"
    )
}

/// At most this many functions' stack are named.
const MAX_FRAMES: usize = 5;

fn invalid_program(f: &Facts<'_>) -> String {
    format!(
        "the bytecode itself is malformed at {}: rebuild the object with clang's BPF target; hand-written or inline assembly must jump only inside the program, reach every instruction and end in `exit`",
        f.line
    )
}

fn unknown(f: &Facts<'_>) -> String {
    format!("read the verifier's message at {}", f.line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::catalogue::class_of;

    /// The help of real error line `line` (the selftests'), in general words but for `with`.
    fn help_of(line: &str, with: impl FnOnce(&mut Facts<'_>)) -> String {
        let rejection = Rejection::read(class_of(line.as_bytes()).unwrap(), line);
        let mut facts = Facts::general(&rejection);
        facts.line = "prog.c:7".to_owned();
        facts.reg = rejection
            .reg
            .map_or("the register".to_owned(), |r| format!("R{r}"));
        with(&mut facts);
        help(&facts)
    }

    /// The help of a message says what the register held there and what was called.
    fn help_at(line: &str, value: &str, call: &str) -> String {
        let rejection = Rejection::read(class_of(line.as_bytes()).unwrap(), line)
            .with_value(value)
            .at_call(call);
        let mut facts = Facts::general(&rejection);
        facts.line = "prog.c:7".to_owned();
        facts.reg = "R1".to_owned();
        help(&facts)
    }

    #[test]
    fn help_by_what_the_register_held() {
        let trusted = "R1 must be referenced or trusted";
        // A kptr read from a map value, released (task_kfunc_failure.task_kfunc_release_in_map).
        let h = help_at(trusted, "rcu_ptr_task_struct()", "bpf_task_release");
        assert!(h.contains("bpf_kptr_xchg"), "{h}");
        let maybe_null = "Possibly NULL pointer passed to trusted arg0";
        let h = help_at(
            maybe_null,
            "rcu_ptr_or_null_task_struct(id=10)",
            "bpf_task_release",
        );
        assert!(h.contains("bpf_kptr_xchg"), "{h}");
        // A kernel object's mask (cpumask_failure.test_acquire_wrong_cpumask).
        let h = help_at(trusted, "rcu_ptr_cpumask()", "bpf_cpumask_acquire");
        assert!(h.contains("bpf_cpumask_create"), "{h}");
        // Not released, not a cpumask kfunc: the general help.
        let h = help_at(trusted, "ptr_task_struct()", "bpf_task_acquire");
        assert!(
            !h.contains("bpf_kptr_xchg") && !h.contains("cpumask"),
            "{h}"
        );
        // A constant size past any buffer (verifier_raw_stack.load_bytes_invalid_access_5).
        let unbounded = "R4 unbounded memory access, use 'var &= const' or 'if (var < const)'";
        let h = help_at(unbounded, "0x7fffffff", "bpf_skb_load_bytes");
        assert!(
            h.contains("constant 0x7fffffff") && h.contains("512"),
            "{h}"
        );
        let h = help_at(unbounded, "scalar(umax=0xffffffff)", "bpf_skb_load_bytes");
        assert!(h.contains("bound"), "{h}");
        // No lower bound (explain/reject_signed): negative values.
        let min =
            "math between map_value pointer and register with unbounded min value is not allowed";
        let h = help_at(min, "scalar(smax=0x7ffffffffffffffc)", "");
        assert!(h.contains("unsigned") && h.contains("idx < 0"), "{h}");
        // The context indexed (exceptions_assert.check_assert_range_s64).
        let h = help_at(
            "value -2147483646 makes ctx pointer be out of bounds",
            "ctx()",
            "",
        );
        assert!(h.contains("ctx->field"), "{h}");
    }

    #[test]
    fn each_acquiring_call_has_its_release() {
        for (acquirer, release) in [
            (
                "bpf_ringbuf_reserve",
                "`bpf_ringbuf_submit` (or `bpf_ringbuf_discard`)",
            ),
            (
                "bpf_ringbuf_reserve_dynptr",
                "`bpf_ringbuf_submit_dynptr` (or `bpf_ringbuf_discard_dynptr`)",
            ),
            ("bpf_sk_lookup_tcp", "`bpf_sk_release`"),
            ("bpf_skc_lookup_tcp", "`bpf_sk_release`"),
            ("bpf_task_acquire", "`bpf_task_release`"),
            ("bpf_task_from_pid", "`bpf_task_release`"),
            ("bpf_cgroup_from_id", "`bpf_cgroup_release`"),
            ("bpf_cpumask_create", "`bpf_cpumask_release`"),
            ("bpf_crypto_ctx_create", "`bpf_crypto_ctx_release`"),
            ("bpf_iter_num_new", "`bpf_iter_num_destroy`"),
            ("bpf_iter_task_vma_new", "`bpf_iter_task_vma_destroy`"),
        ] {
            assert_eq!(release_of(acquirer).as_deref(), Some(release), "{acquirer}");
        }
        // The kfunc behind the bpf_obj_new() macro, and bpf_refcount_acquire's.
        for acquirer in ["bpf_obj_new_impl", "bpf_refcount_acquire_impl"] {
            assert!(release_of(acquirer).unwrap().starts_with("`bpf_obj_drop`"));
        }
        assert_eq!(release_of("bpf_map_lookup_elem"), None);
        assert_eq!(release_of("bpf_iter_num_next"), None);
    }

    #[test]
    fn calls_that_invalidate_pointers() {
        for name in [
            "bpf_sk_release",
            "bpf_task_release",
            "bpf_obj_drop_impl",
            "bpf_skb_pull_data",
            "bpf_xdp_adjust_head",
            "bpf_dynptr_write",
            "bpf_spin_unlock",
            "bpf_tail_call",
        ] {
            assert!(invalidates(name), "{name}");
        }
        for name in [
            "bpf_map_lookup_elem",
            "bpf_sk_lookup_tcp",
            "bpf_spin_lock",
            "bpf_ktime_get_ns",
        ] {
            assert!(!invalidates(name), "{name}");
        }
    }

    #[test]
    fn the_help_of_each_message() {
        let h = help_of("Unreleased reference id=2 alloc_insn=6", |f| {
            f.origin_call = Some("bpf_ringbuf_reserve".to_owned());
            f.origin_line = Some("prog.c:5: `rec = bpf_ringbuf_reserve(&rb, 8, 0);`".to_owned());
        });
        assert!(
            h.contains("`bpf_ringbuf_submit` (or `bpf_ringbuf_discard`)"),
            "{h}"
        );
        assert!(!h.contains("bpf_sk_release"), "{h}");
        let h = help_of("R4 invalid zero-sized read: u64=[0,0]", |_| {});
        assert!(h.contains("R4") && h.contains("1..sizeof(buffer)"), "{h}");
        let h = help_of("R3 must be a known constant", |_| {});
        assert!(h.contains("constant") && !h.contains("&="), "{h}");
        let h = help_of(
            "bpf_spin_lock at off=32 must be held for bpf_list_head",
            |_| {},
        );
        assert!(
            h.contains("`bpf_spin_lock` at offset 32 that guards this bpf_list_head"),
            "{h}"
        );
        let h = help_of("bpf_spin_unlock of different lock", |f| {
            f.held = Some("prog.c:3: `bpf_spin_lock(&v->lock);`".to_owned());
        });
        assert!(h.contains("same lock") && h.contains("prog.c:3"), "{h}");
        let h = help_of(
            "function calls are not allowed while holding a lock",
            |_| {},
        );
        assert!(
            h.contains("before the `bpf_spin_lock` or after the `bpf_spin_unlock`"),
            "{h}"
        );
        let h = help_of("expected an initialized iter_num as arg #1", |_| {});
        assert!(h.contains("`bpf_iter_num_new`"), "{h}");
        let h = help_of("expected uninitialized iter_num as arg #1", |_| {});
        assert!(h.contains("`bpf_iter_num_destroy`"), "{h}");
        let h = help_of("the call stack of 9 frames is too deep !", |_| {});
        assert!(h.contains("recurs") && !h.contains("smaller"), "{h}");
        let h = help_of("combined stack size of 2 calls is 544. Too large", |f| {
            f.frames = vec![
                ("main".to_owned(), 256),
                ("cb".to_owned(), 264),
                ("leaf".to_owned(), 0),
            ];
        });
        assert!(h.contains("2 frames") && h.contains("544 bytes"), "{h}");
        assert!(h.contains("at least: `cb` 264, `main` 256 bytes)"), "{h}");
        let h = help_of(
            "R2 type=scalar expected=fp, pkt, pkt_meta, map_key, map_value",
            |_| {},
        );
        assert!(
            h.contains("holds a `scalar`") && h.contains("`&key`"),
            "{h}"
        );
        let h = help_of(
            "R1 type=map_value expected=percpu_ptr_, percpu_rcu_ptr_",
            |_| {},
        );
        assert!(h.contains("per-CPU"), "{h}");
        let h = help_of("tracing progs cannot use bpf_timer yet", |_| {});
        assert!(h.starts_with("tracing programs"), "{h}");
        // Not a pointer: what invalidated it, when the path shows the call; else the rule, with
        // no fix guessed at (no bpf_probe_read_kernel, no NULL check).
        let h = help_of("R7 invalid mem access 'scalar'", |f| {
            f.invalidated = Some(("bpf_sk_release".to_owned(), "prog.c:6".to_owned()));
        });
        assert!(
            h.contains("`bpf_sk_release` at prog.c:6") && h.contains("before it is released"),
            "{h}"
        );
        let h = help_of("R6 invalid mem access 'scalar'", |f| {
            f.invalidated = Some(("bpf_skb_pull_data".to_owned(), "prog.c:6".to_owned()));
        });
        assert!(h.contains("reload `data`/`data_end`"), "{h}");
        let h = help_of("R1 invalid mem access 'scalar'", |_| {});
        assert!(
            !h.contains("probe_read") && !h.to_lowercase().contains("null"),
            "{h}"
        );
        let h = help_of("R6 invalid mem access 'scalar'", |f| {
            f.origin_call = Some("bpf_get_current_task".to_owned());
        });
        assert!(h.contains("bpf_get_current_task_btf"), "{h}");
    }

    /// Accesses out of their memory, from the numbers of the error line.
    #[test]
    fn the_help_of_an_access_says_its_bytes() {
        let h = help_of(
            "invalid access to map value, value_size=32 off=32 size=4",
            |_| {},
        );
        assert!(
            h.starts_with("4 bytes at offset 32 exceed the 32-byte map value"),
            "{h}"
        );
        let h = help_of(
            "invalid access to packet, off=4 size=8, R1(id=0,off=4,r=8)",
            |_| {},
        );
        assert!(
            h.contains("reaches byte 12") && h.contains("only 8 bytes"),
            "{h}"
        );
        let h = help_of("invalid write to stack R1 off=-64 size=65", |_| {});
        assert!(h.contains("65 bytes at fp-64") && h.contains("512"), "{h}");
        let h = help_of(
            "invalid variable-offset read from stack R2 var_off=(0x0; 0x7) off=-8 size=8",
            |_| {},
        );
        assert!(h.starts_with("bound the index"), "{h}");
        let h = help_of("invalid bpf_context access off=76 size=4", |_| {});
        assert!(
            h.contains("4 bytes at offset 76") && h.contains("8 bytes"),
            "{h}"
        );
        let h = help_of("R3 pointer arithmetic on pkt_end prohibited", |_| {});
        assert!(h.starts_with("a `pkt_end` pointer may not be moved"), "{h}");
        let h = help_of("R1 pointer += pointer prohibited", |_| {});
        assert!(h.contains("adds two pointers"), "{h}");
        let h = help_of("fp pointer offset 1073741822 is not allowed", |_| {});
        assert!(h.contains("512-byte frame"), "{h}");
        let h = help_of(
            "dereference of modified dynptr_ptr ptr R1 off=8 disallowed",
            |_| {},
        );
        assert!(
            h.contains("`dynptr_ptr` pointer must be used unmodified"),
            "{h}"
        );
        let h = help_of(
            "write into map forbidden, value_size=4 off=0 size=4",
            |_| {},
        );
        assert!(
            h.contains("read-only") && h.contains("`.data`/`.bss`"),
            "{h}"
        );
        let h = help_of("frame pointer is read only", |_| {});
        assert!(h.contains("`r1 = r10`"), "{h}");
        let h = help_of("potential write to dynptr at off=-16 disallowed", |_| {});
        assert!(
            h.contains("separate buffer") && !h.contains("memset"),
            "{h}"
        );
        let h = help_of(
            "bpf_probe_read_kernel() may write into memory pointed by R1 type=trusted_ptr_",
            |_| {},
        );
        assert!(
            h.starts_with("`bpf_probe_read_kernel` writes") && h.contains("stack"),
            "{h}"
        );
        let h = help_of("R1 cannot write into sock", |_| {});
        assert!(h.starts_with("a `sock` may only be read"), "{h}");
        let h = help_of(
            "calling kernel function bpf_cgroup_acquire is not allowed",
            |_| {},
        );
        assert!(
            h.contains("`bpf_cgroup_acquire`") && h.contains("tp_btf"),
            "{h}"
        );
        let h = help_of(
            "cannot pass map_type 15 into func bpf_map_delete_elem#3",
            |_| {},
        );
        assert!(
            h.contains("`bpf_map_delete_elem`") && h.contains("program type"),
            "{h}"
        );
        let h = help_of(
            "access beyond the end of member comm (mend:16) in struct task_struct with off 16 size 1",
            |_| {},
        );
        assert!(
            h.contains("`comm` (16 bytes)") && h.contains("sizeof(obj->comm)"),
            "{h}"
        );
        let h = help_of(
            "kernel function bpf_ct_insert_entry args#0 expected pointer to STRUCT nf_conn___init but R1 has a pointer to STRUCT nf_conn",
            |_| {},
        );
        assert!(h.starts_with("`bpf_ct_insert_entry` at prog.c:7 takes a `struct nf_conn___init *`, and R1 points to a `struct nf_conn`"), "{h}");
        assert!(h.contains("`bpf_ct_set_*`"), "{h}");
        let h = help_of("arg#1 expected pointer to allocated object", |_| {});
        assert!(
            h.contains("only once") && h.contains("`bpf_obj_new`"),
            "{h}"
        );
        let h = help_of(
            "operation on bpf_list_head expects arg#1 bpf_list_node at offset=48 in struct foo, but arg is at offset=0 in struct bar",
            |_| {},
        );
        assert!(
            h.contains("holds `struct foo`") && h.contains("in a `struct bar`"),
            "{h}"
        );
        let h = help_of(
            "kfunc bpf_rdonly_cast type ID argument must be of a struct or void",
            |_| {},
        );
        assert!(
            h.contains("`bpf_rdonly_cast`") && h.contains("struct"),
            "{h}"
        );
        let h = help_of("no write support to nf_conn at off 176", |_| {});
        assert!(
            h.contains("`nf_conn`") && h.contains("`bpf_ct_change_status`"),
            "{h}"
        );
        let h = help_of("cannot release unowned const bpf_dynptr", |_| {});
        assert!(h.contains("do not submit or discard it"), "{h}");
        let h = help_of("R3 !read_ok", |f| {
            f.origin_call = Some("bpf_xdp_adjust_meta".to_owned());
        });
        assert!(h.contains("load the pointers again"), "{h}");
    }
}
