//! What a rejection's error line says, read once into typed fields: the message whose help
//! says more than its class's ([`Message`]), and the registers, offsets, sizes and names it
//! gives ([`Rejection`]).

use super::*;

/// Messages whose help says more than their class's: which one an error line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    /// trusted arg0` of `r1 = 0`): set from the state the log printed, not from the line.
    NullConstant,
    /// A buffer smaller than the size passed with it (`invalid read from stack R3 off -24+8
    /// size 9` running into a dynptr's slots): set from the stack slot the log printed.
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
#[non_exhaustive]
pub struct Rejection {
    /// The class.
    pub class: &'static Class,
    /// Which message it is, when its help says more than its class's.
    pub message: Option<Message>,
    /// The error line that gave the class (the first error line for the class `unknown`).
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
    /// (`dynptr_ringbuf`, `iter_num`): set from the stack slot the log printed, not from the line.
    pub slot: Option<String>,
    /// What the register the line names holds there, as the log's state prints it
    /// (`rcu_ptr_task_struct()`, `0x7fffffff`): set from the state the log printed, not from
    /// the line.
    pub value: Option<String>,
}

impl Rejection {
    /// The rejection the error lines of a log give (`class_of_errors`), its line read.
    pub fn of(errors: &[&[u8]]) -> Rejection {
        let (class, line) = class_of_errors(errors);
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
    pub(crate) fn in_slot(mut self, slot: &str) -> Rejection {
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
    pub(crate) fn at_call(mut self, call: &str) -> Rejection {
        if self.callee.is_none() {
            self.callee = Some(call.to_owned());
        }
        self
    }

    /// The rejection, knowing the value the register it names holds where it failed, as the
    /// log's state prints it (`value`): a constant NULL passed where a valid pointer is needed
    /// (`bpf_cgroup_acquire(NULL)`) is not a maybe-NULL pointer left unchecked but the wrong
    /// argument.
    pub(crate) fn with_value(mut self, value: &str) -> Rejection {
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
mod rejection_tests {
    use super::*;

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
        assert_eq!(class_of_errors(&errors).0.id, ClassId::HelperArgumentType);
        assert_eq!(
            class_of_errors(&errors[..1]).0.id,
            ClassId::InvalidContextAccess
        );
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
