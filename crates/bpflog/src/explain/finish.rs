//! An explanation made at the end of a rejected log: the failure placed in the source, the
//! chain's start chosen by class (the walk back along the register the error names, or the
//! search that fits the class: the write a branch skipped, the acquiring call, the call that
//! opened a region or clobbered a register, the deepest stack of calls), each step placed, and
//! the facts the help is made from.

use super::catalogue::{ClassId, Message, Rejection};
use super::chain::{self, Decoded, Fact, Follow, Role};
use super::{Explainer, Explanation, Location, Step, help};
use crate::Program;
use crate::diagnostic::{FailureTracker, Report};
use crate::locate::locate;
use crate::profile::Profile;
use bpflog_log::Line;

impl Explainer {
    /// The explanation, if the log ended in a rejection; `profile`, the log's profile, names
    /// the lines where the verifier spent its work when it gave up (without it, the help
    /// points at `bpflog profile`).
    pub(crate) fn finish(
        mut self,
        program: &Program<'_, '_>,
        profile: Option<&Profile>,
    ) -> Option<Explanation> {
        let tracker = std::mem::take(&mut self.tracker);
        // The failing path, decoded once for every search of it below.
        let path = self.path.decode();
        let (report, rejection, failed) = placed(program, tracker, &path)?;
        // What the stack slot read holds, as the log last printed it.
        let state = report
            .state
            .as_ref()
            .map(|(at, text)| (*at, text.as_slice()));
        let full = report
            .full_state
            .as_ref()
            .map(|(at, text)| (*at, text.as_slice()));
        let slot = (rejection.stack_read).and_then(|(off, _)| slot_in(&path, [state, full], off));
        let rejection = match slot {
            Some(slot) => rejection.in_slot(&slot),
            None => rejection,
        };
        // What the register the error names (a call's argument by its number) holds there.
        let reg = (rejection.reg).or_else(|| rejection.arg.map(|arg| arg + 1));
        let value = reg.and_then(|reg| {
            let printed = (report.full_state.as_ref())
                .filter(|(at, _)| *at == report.index)
                .and_then(|(at, text)| state_item(*at, text, &format!("R{reg}")));
            printed.or_else(|| {
                let failed = failed?;
                let at = path.iter().rposition(|i| std::ptr::eq(i, failed))?;
                path.value_at(at, chain::Item::Reg(reg)).map(str::to_owned)
            })
        });
        let rejection = match value {
            Some(value) => rejection.with_value(&value),
            None => rejection,
        };
        let rejection = match failed.and_then(|f| called(f.text)) {
            Some(call) => rejection.at_call(&call),
            None => rejection,
        };
        let ChainStart {
            mut chain,
            followed,
            skipped,
        } = start(
            program,
            &path,
            &rejection,
            report.index,
            failed,
            report.pass.is_some(),
        );
        let failed_text = failed.map_or_else(
            || String::from_utf8_lossy(&report.insn_line).into_owned(),
            |f| f.text_string(),
        );
        let at = (report.index, failed.map(|f| f.read_at));
        chain.push(step(program, at, failed_text, Role::Failed, None));
        let help = help::help(&facts(
            program,
            &rejection,
            &chain,
            (followed, report.index),
            skipped,
            profile,
        ));
        Some(Explanation {
            location: place(program, report.index),
            rejection,
            chain,
            help,
            log_line: self.log_line,
            report,
        })
    }
}

/// The chain's start, by class: for stack read before it was written, the test that
/// jumped over the write; for an unreleased reference, the acquiring call; for a locked
/// region, the call that opened it; for a register read before it was written, the call
/// that clobbered it; for a kfunc a callback may not call, the call that ran the callback;
/// else the walk back from the failing instruction `failed`
/// (instruction `index`) along the register the error names. `global`: the failing path
/// is a global function's.
fn start(
    program: &Program<'_, '_>,
    path: &Decoded<'_>,
    rejection: &Rejection,
    index: u64,
    failed: Option<&chain::PathInsn<'_>>,
    global: bool,
) -> ChainStart {
    match rejection.id() {
        ClassId::UninitializedStack => skipped_write_start(program, path, rejection, index),
        ClassId::UnreleasedReference => acquired_start(program, path, rejection),
        ClassId::LockedRegionRule => {
            let found =
                (rejection.region.as_deref()).and_then(|opener| chain::opened_by(path, opener));
            ChainStart::of(found.map(|f| found_step(program, f)).into_iter().collect())
        }
        // The lock held where the rule is broken (none: nothing is held there).
        // For a lock that must be held and is not, the unlock that released it.
        ClassId::SpinLockRule => {
            let must_hold = matches!(
                rejection.message,
                Some(Message::LockMustBeHeld | Message::UnlockWithoutLock)
            );
            let found = chain::held_lock(path)
                .filter(|f| must_hold || f.fact != Some(chain::Fact::LockReleased));
            ChainStart::of(found.map(|f| found_step(program, f)).into_iter().collect())
        }
        ClassId::StackSize => stack_chain_start(program, rejection),
        ClassId::HelperNotAllowed if rejection.message == Some(Message::ThrowInCallback) => {
            ChainStart::of(registered_by(program, path, index).into_iter().collect())
        }
        id => failed.map_or_else(ChainStart::default, |failed| {
            walked_start(program, path, rejection, id, failed, global)
        }),
    }
}

/// The call that hands over the callback instruction `index` is in (`bpf_timer_set_callback`,
/// `bpf_loop`): the first call after the first `ld_imm64` of the callback's address, from the
/// object's instructions in the loaded layout (the verifier checks the callback after every
/// path, so the failing path does not lead there).
fn registered_by(program: &Program<'_, '_>, path: &Decoded<'_>, index: u64) -> Option<Step> {
    use bpflog_object::opcode::OP_CALL;
    let object = program.object()?;
    let layout = &program.layout;
    let (part, _) = layout.locate(u32::try_from(index).ok()?)?;
    let taken = *object.callback_references(layout, part.function).first()?;
    let (taker, _) = layout.locate(taken)?;
    let end = taker.start.saturating_add(taker.len);
    let call = (taken..end)
        .find(|&i| {
            object
                .insn(layout, i)
                .is_some_and(|insn| insn.code == OP_CALL)
        })
        .unwrap_or(taken);
    let call = u64::from(call);
    let kept = path.last_of(call);
    let text = kept.map_or_else(
        || source_text(program, call).unwrap_or_default(),
        chain::PathInsn::text_string,
    );
    Some(step(
        program,
        (call, kept.map(|k| k.read_at)),
        text,
        Role::Origin,
        Some("hands over the callback".into()),
    ))
}

/// The start of the chain of a stack read before it was written: the branch the failing
/// path took over a write of the bytes read.
fn skipped_write_start(
    program: &Program<'_, '_>,
    path: &Decoded<'_>,
    rejection: &Rejection,
    index: u64,
) -> ChainStart {
    let Some(read) = rejection.stack_read else {
        return ChainStart::default();
    };
    let Some((branch, write)) = chain::skipped_write(path, &stack_writes(program, index, read))
    else {
        return ChainStart::default();
    };
    let note = format!(
        "jumps over insn {write} ({}: `{}`), which writes fp{}: on this path nothing \
         writes it before the read",
        line_name(program, write),
        source_text(program, write).unwrap_or_default(),
        read.0
    );
    let text = branch.text_string();
    ChainStart {
        chain: vec![step(
            program,
            (branch.index, Some(branch.read_at)),
            text,
            Role::Origin,
            Some(note),
        )],
        followed: None,
        skipped: Some((branch.index, write)),
    }
}

/// The start of the chain of an unreleased reference: the acquiring call
/// (`alloc_insn=%d`).
fn acquired_start(
    program: &Program<'_, '_>,
    path: &Decoded<'_>,
    rejection: &Rejection,
) -> ChainStart {
    let Some((at, insn)) = rejection
        .alloc_insn
        .and_then(|at| Some((at, path.last_of(at)?)))
    else {
        return ChainStart::default();
    };
    let text = insn.text_string();
    ChainStart::of(vec![step(
        program,
        (at, Some(insn.read_at)),
        text,
        Role::Origin,
        Some("acquires the reference".into()),
    )])
}

/// The chain walked back from the failing instruction along the register the error names
/// (a call's argument by its number: `arg#0` is R1); else the base of the access; else,
/// for pointer arithmetic the verifier refused (`math between map_value pointer and
/// register with unbounded min value`), the offset added.
fn walked_start(
    program: &Program<'_, '_>,
    path: &Decoded<'_>,
    rejection: &Rejection,
    id: ClassId,
    failed: &chain::PathInsn<'_>,
    global: bool,
) -> ChainStart {
    let insn = failed.insn;
    let reg = rejection
        .reg
        .or_else(|| {
            let call = matches!(insn.op, bpflog_log::Op::Call(_));
            rejection.arg.filter(|_| call).map(|arg| arg + 1)
        })
        .or_else(|| dynptr_argument(path, rejection))
        .or_else(|| insn.memory().map(|m| m.base))
        .or(match insn.op {
            bpflog_log::Op::Alu {
                src: Some(bpflog_log::Operand::Reg(src)),
                ..
            } => Some(src.num),
            _ => None,
        });
    let follow = match id {
        ClassId::MaxOutOfRange
        | ClassId::MinNegative
        | ClassId::UnboundedAccess
        | ClassId::MapValueOutOfRange
        | ClassId::StackOutOfRange => Follow::Offset,
        ClassId::PacketOutOfRange => Follow::Packet,
        _ => Follow::Pointer,
    };
    // Pointer arithmetic refused (`r6 += r1`): of the two, the offset is followed.
    let reg = match (follow, insn.op, reg) {
        (
            Follow::Offset,
            bpflog_log::Op::Alu {
                dst,
                src: Some(bpflog_log::Operand::Reg(src)),
                ..
            },
            Some(r),
        ) if r == dst.num || r == src.num => {
            let at = path.len().saturating_sub(1);
            Some(chain::offset_operand(path, at, dst.num, src.num))
        }
        _ => reg,
    };
    // What the error says the register holds (`invalid mem access 'scalar'`).
    let held = match id {
        ClassId::NotAPointer | ClassId::NullableDereference => {
            rejection.actual.as_deref().map(chain::HeldValue::of)
        }
        _ => None,
    };
    let mut skipped = None;
    let chain = match reg {
        Some(reg) if id == ClassId::UninitializedRegister => {
            let found = chain::clobbered_by(path, reg);
            let branch = found
                .is_none()
                .then(|| chain::skipped_write(path, &reg_writes(program, failed.index, reg)))
                .flatten();
            match branch {
                // Written on one side of a branch only: the branch whose path skipped it.
                Some((branch, write)) => {
                    let note = format!(
                        "jumps over insn {write} ({}: `{}`), which writes R{reg}: on this path \
                         nothing writes it before the read",
                        line_name(program, write),
                        source_text(program, write).unwrap_or_default(),
                    );
                    skipped = Some((branch.index, write));
                    let at = (branch.index, Some(branch.read_at));
                    let text = branch.text_string();
                    vec![step(program, at, text, Role::Origin, Some(note))]
                }
                None => found.map(|f| found_step(program, f)).into_iter().collect(),
            }
        }
        Some(reg) => {
            let start = chain::Start {
                reg,
                follow,
                global,
                held,
            };
            let mut found = chain::walk(path, start);
            // A dynptr not initialised: what took it away (a store over it, a release of its
            // record), in path order among the walk's steps.
            if rejection.message == Some(Message::InitializedExpected)
                && let Some(lost) = chain::dynptr_lost(path, path.len().saturating_sub(1), reg)
            {
                let at = found.iter().position(|f| f.line < lost.line);
                found.insert(at.unwrap_or(found.len()), lost);
            }
            found
                .into_iter()
                .rev()
                .map(|f| found_step(program, f))
                .collect()
        }
        None => Vec::new(),
    };
    ChainStart {
        chain,
        followed: reg,
        skipped,
    }
}

/// The register of the dynptr an `Expected an initialized dynptr as arg #N` names: this kernel
/// counts `N` from 0, older ones from 1, so of R(N+1) and RN, the one the path shows pointing
/// to a dynptr taken away before the failure ([`chain::dynptr_lost`]).
fn dynptr_argument(path: &Decoded<'_>, rejection: &Rejection) -> Option<u8> {
    if rejection.message != Some(Message::InitializedExpected) {
        return None;
    }
    let (_, after) = rejection.error.split_once("arg #")?;
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    let n: u8 = after[..digits].parse().ok()?;
    let failed = path.len().checked_sub(1)?;
    [n.checked_add(1)?, n]
        .into_iter()
        .filter(|r| (1..=5).contains(r))
        .find(|&r| chain::dynptr_lost(path, failed, r).is_some())
}

/// The instructions of the function of instruction `failed` that write register `reg` (an ALU
/// operation, a load, a 64-bit immediate into it), from the object's code.
fn reg_writes(program: &Program<'_, '_>, failed: u64, reg: u8) -> Vec<u64> {
    use bpflog_object::opcode::{CLASS_ALU, CLASS_ALU64, CLASS_LD, CLASS_LDX, class};
    let (Some(object), Ok(failed)) = (program.object(), u32::try_from(failed)) else {
        return Vec::new();
    };
    let Some((part, _)) = program.layout.locate(failed) else {
        return Vec::new();
    };
    (part.start..part.start.saturating_add(part.len))
        .filter(|&i| {
            object.insn(&program.layout, i).is_some_and(|insn| {
                let writes = matches!(
                    class(insn.code),
                    CLASS_ALU | CLASS_ALU64 | CLASS_LD | CLASS_LDX
                );
                writes && insn.dst == reg
            })
        })
        .map(u64::from)
        .collect()
}

/// The diagnostic's report (from the failure `tracker` of a log whose failing path is
/// `path`) of the rejection and the rejection its error lines give; the
/// report placed where the rejection is: at the instruction being verified; with none, at
/// the instruction the error names (`unreachable insn 5`, `jump out of range from insn 2
/// to 9`), else at the last one verified (the complexity limit, checked between paths),
/// else, for a map field the program type may not use (`tracing progs cannot use bpf_timer
/// yet`, refused while the kernel resolves the map's address), at its first use
/// ([`first_use`]), else at the program's first (rejected before any); a kfunc the kernel refuses once
/// every path is verified, at the call the loader left unresolved; a `bpf_throw` in a
/// callback, found once every path is verified, at the call the error names. With them, the failing
/// instruction on the path the walk back starts from: the path's last, or that call.
fn placed<'d, 'p>(
    program: &Program<'_, '_>,
    tracker: FailureTracker,
    path: &'d Decoded<'p>,
) -> Option<(Report, Rejection, Option<&'d chain::PathInsn<'p>>)> {
    let between = tracker
        .rejected_between_insns()
        .map(|(errors, last)| (errors, last.to_vec()));
    let report = match (tracker.report(), between) {
        (Some(report), _) => report,
        (None, Some((errors, last))) => {
            let last_index = match bpflog_log::classify(&last) {
                Line::Insn(insn) => Some(insn.index),
                _ => None,
            };
            let lines: Vec<&[u8]> = errors.iter().map(|(_, e)| e.as_slice()).collect();
            let rejection = Rejection::of(&lines);
            let index = (rejection.insn.or(last_index))
                .or_else(|| first_use(program, &rejection))
                .unwrap_or(0);
            let insn_line = if last_index == Some(index) {
                last
            } else {
                format!("{index} (not verified: rejected before any instruction)").into_bytes()
            };
            Report {
                errors,
                index,
                insn_line,
                stack: Vec::new(),
                state: None,
                full_state: None,
                pass: None,
            }
        }
        (None, None) => return None,
    };
    let lines: Vec<&[u8]> = report.errors.iter().map(|(_, e)| e.as_slice()).collect();
    let rejection = Rejection::of(&lines);
    // Not the call's state and calls: those of the last instruction verified.
    let unresolved = chain::unresolved_call(path).filter(|call| {
        rejection.id() == ClassId::MissingKernelSymbol && call.index != report.index
    });
    let report = match unresolved {
        Some(call) => Report {
            index: call.index,
            insn_line: call.line.to_vec(),
            stack: Vec::new(),
            state: None,
            full_state: None,
            ..report
        },
        None => report,
    };
    // An error about another instruction than the one verified last, raised once every path
    // is verified (check_max_stack_depth: `bpf_throw kfunc (insn 16) cannot be called from
    // callback subprog 1`): at that one.
    let named = (rejection.insn)
        .filter(|&n| n != report.index && unresolved.is_none())
        .filter(|_| rejection.message == Some(Message::ThrowInCallback))
        .map(|n| (n, path.last_of(n)));
    let (report, named) = match named {
        Some((index, insn)) => {
            let insn_line = insn.map_or_else(
                || format!("{index} (the instruction the error names)").into_bytes(),
                |i| i.line.to_vec(),
            );
            let report = Report {
                index,
                insn_line,
                stack: Vec::new(),
                state: None,
                full_state: None,
                ..report
            };
            (report, insn)
        }
        None => (report, None),
    };
    let failed = (unresolved.or(named)).or_else(|| path.last().filter(|f| f.index == report.index));
    Some((report, rejection, failed))
}

/// Where the program first uses the map field a program type may not use
/// (`tracing progs cannot use bpf_timer yet`, [`Message::ProgsCannotUse`]), from the object's
/// instructions in the loaded layout: the first call of a helper or kfunc that works on the
/// field (`bpf_spin_lock`, `bpf_timer_init`, `bpf_wq_init`, `bpf_list_push_front`, ...), else
/// the first reference to a map (where the kernel refused it).
fn first_use(program: &Program<'_, '_>, rejection: &Rejection) -> Option<u64> {
    use bpflog_object::{RelocSymbol, opcode::OP_CALL};
    if rejection.message != Some(Message::ProgsCannotUse) {
        return None;
    }
    let object = program.object()?;
    let layout = &program.layout;
    // The helpers (by number) and kfuncs (by the start of their name) that use the field.
    let (helpers, kfuncs): (&[i32], &[&str]) = match rejection.object.as_deref()? {
        "bpf_spin_lock" => (&[93], &[]),
        // bpf_timer_init, bpf_timer_set_callback, bpf_timer_start, bpf_timer_cancel.
        "bpf_timer" => (&[169, 170, 171, 172], &[]),
        "bpf_wq" => (&[], &["bpf_wq_"]),
        field if field.contains("list_head") || field.contains("rb_root") => {
            (&[], &["bpf_list_", "bpf_rbtree_"])
        }
        _ => (&[], &[]),
    };
    let uses = |i: u32| {
        let Some(insn) = object.insn(layout, i).filter(|insn| insn.code == OP_CALL) else {
            return false;
        };
        match insn.src {
            0 => helpers.contains(&insn.imm),
            // BPF_PSEUDO_KFUNC_CALL: the relocation names the kfunc.
            2 => matches!(object.reloc_symbol(layout, i),
                Some(RelocSymbol::Undefined(name)) if kfuncs.iter().any(|k| name.starts_with(k))),
            _ => false,
        }
    };
    let map = |i: u32| {
        object
            .insn(layout, i)
            .is_some_and(|insn| insn.is_ld_imm64())
            && matches!(object.reloc_symbol(layout, i),
                Some(RelocSymbol::Defined { section, .. }) if section == ".maps")
    };
    (0..layout.len)
        .find(|&i| uses(i))
        .or_else(|| (0..layout.len).find(|&i| map(i)))
        .map(u64::from)
}

/// The start of a chain, before the failing step: its steps, the register followed back,
/// and the write of the stack the failing path jumped over (the branch's instruction and the
/// write's).
#[derive(Default)]
struct ChainStart {
    chain: Vec<Step>,
    followed: Option<u8>,
    skipped: Option<(u64, u64)>,
}

impl ChainStart {
    fn of(chain: Vec<Step>) -> ChainStart {
        ChainStart {
            chain,
            ..ChainStart::default()
        }
    }
}
/// Where instruction `index` of `program` is.
fn place(program: &Program<'_, '_>, index: u64) -> Location {
    let src = u32::try_from(index).ok().and_then(|i| locate(program, i));
    Location {
        insn: index,
        file: src
            .as_ref()
            .map(|s| String::from_utf8_lossy(s.file).into_owned()),
        line: src.as_ref().map_or(0, |s| s.line),
        column: src.as_ref().map_or(0, |s| s.column),
    }
}

/// The trimmed text of the source line of instruction `index`, from the line table.
fn source_text(program: &Program<'_, '_>, index: u64) -> Option<String> {
    let row = program.lines.find(u32::try_from(index).ok()?)?;
    let text = row.trimmed_text();
    (!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
}

/// A step of the chain, placed: instruction `index`, read at line `read_at`.
fn step(
    program: &Program<'_, '_>,
    (index, read_at): (u64, Option<u64>),
    instruction: String,
    role: Role,
    note: Option<String>,
) -> Step {
    Step {
        location: place(program, index),
        source: source_text(program, index).unwrap_or_else(|| instruction.clone()),
        instruction,
        role,
        note,
        read_at,
        fact: None,
    }
}

/// The step of what the walk back found.
fn found_step(program: &Program<'_, '_>, f: chain::FoundStep) -> Step {
    Step {
        fact: f.fact,
        ..step(program, (f.index, Some(f.line)), f.insn, f.role, f.note)
    }
}

/// At most this many lines are named where the verifier spent its work.
const HOT_LINES: usize = 3;

/// The source lines where the verifier spent most of its work, hottest first (the profile's,
/// as `bpflog profile` counts them), for the help of the complexity limit.
fn hot_lines(profile: Option<&Profile>) -> String {
    let Some(profile) = profile else {
        return "the lines `bpflog profile` lists".to_owned();
    };
    let total = profile.totals.insn_lines;
    let hot: Vec<String> = profile
        .lines
        .iter()
        .filter(|l| l.counts.visits > 0)
        .take(HOT_LINES)
        .map(|l| {
            format!(
                "{}:{} `{}` ({} of {total} instructions verified)",
                l.basename(),
                l.line,
                l.source,
                l.counts.visits
            )
        })
        .collect();
    if hot.is_empty() {
        "the lines `bpflog profile` lists".to_owned()
    } else {
        hot.join(", ")
    }
}

/// The instructions of the function of instruction `failed` that store to the stack bytes
/// `(offset, size)` from the frame pointer (`*(u32 *)(r10 -4) = ...`), from the object's code.
/// Writes through another register holding a stack address, and by helpers, are not seen.
fn stack_writes(program: &Program<'_, '_>, failed: u64, (off, size): (i64, i64)) -> Vec<u64> {
    use bpflog_object::opcode::{is_store, size_bytes};
    let (Some(object), Ok(failed)) = (program.object(), u32::try_from(failed)) else {
        return Vec::new();
    };
    let Some((part, _)) = program.layout.locate(failed) else {
        return Vec::new();
    };
    (part.start..part.start.saturating_add(part.len))
        .filter(|&i| {
            object.insn(&program.layout, i).is_some_and(|insn| {
                let (at, len) = (i64::from(insn.off), i64::from(size_bytes(insn.code)));
                is_store(insn.code) && insn.dst == 10 && at < off + size && off < at + len
            })
        })
        .map(u64::from)
        .collect()
}

/// The stack each function of `program` uses at least, in bytes, as its instructions show
/// ([`deepest_stack`]), each function by its name, the entry program first. What helpers
/// reach through a pointer past it, and the kernel's rounding, are not seen.
fn frame_sizes(program: &Program<'_, '_>) -> Vec<(String, i64)> {
    let Some(object) = program.object() else {
        return Vec::new();
    };
    let layout = &program.layout;
    layout
        .parts
        .iter()
        .map(|part| {
            let (bytes, _) = deepest_stack(object, layout, part);
            (object.function(part.function).name.clone(), bytes)
        })
        .collect()
}

/// The stack function `part` uses at least, in bytes, and the instruction that reaches
/// deepest (the first such): the deepest byte below the frame pointer it loads, stores, or
/// takes the address of (`r1 = r10; r1 += -256`).
fn deepest_stack(
    object: &bpflog_object::BpfObject<'_>,
    layout: &bpflog_object::Layout,
    part: &bpflog_object::Part,
) -> (i64, Option<u32>) {
    use bpflog_object::opcode::{
        CLASS_ALU64, CLASS_LDX, CLASS_ST, CLASS_STX, OP_MASK, OP_MOV, SOURCE_REG, class,
    };
    let mut deepest = (0i64, None);
    let mut copy_of_fp: Option<u8> = None;
    for i in part.start..part.start.saturating_add(part.len) {
        let Some(insn) = object.insn(layout, i) else {
            continue;
        };
        let (code, off) = (insn.code, i64::from(insn.off));
        let reached = match class(code) {
            CLASS_ST | CLASS_STX if insn.dst == 10 => Some(off),
            CLASS_LDX if insn.src == 10 => Some(off),
            CLASS_ALU64 if code & OP_MASK == OP_MOV && code & SOURCE_REG != 0 => {
                copy_of_fp = (insn.src == 10).then_some(insn.dst);
                continue;
            }
            // `rX += -N` right after `rX = r10`.
            CLASS_ALU64 if code == 0x07 && copy_of_fp == Some(insn.dst) => {
                Some(i64::from(insn.imm))
            }
            _ => None,
        };
        if let Some(at) = reached.filter(|&at| -at > deepest.0) {
            deepest = (-at, Some(i));
        }
        copy_of_fp = None;
    }
    deepest
}

/// An instruction of the shapes the stack-size chain names, as the log prints them: `rX +=
/// -N`, a load or store at `r10`.
fn stack_insn_text(insn: &bpflog_object::Insn) -> String {
    use bpflog_object::opcode::{CLASS_LDX, CLASS_ST, CLASS_STX, class, size_bytes};
    let size = format!("u{}", u32::from(size_bytes(insn.code)) * 8);
    match class(insn.code) {
        CLASS_ST => format!("*({size} *)(r{} {:+}) = {}", insn.dst, insn.off, insn.imm),
        CLASS_STX => format!("*({size} *)(r{} {:+}) = r{}", insn.dst, insn.off, insn.src),
        CLASS_LDX => format!("r{} = *({size} *)(r{} {:+})", insn.dst, insn.src, insn.off),
        _ => format!("r{} += {}", insn.dst, insn.imm),
    }
}

/// Frames deeper than this the kernel refuses (`MAX_CALL_FRAMES`).
const MAX_CALL_FRAMES: usize = 8;

/// The stack the kernel counts for a function that uses `bytes` (`round_up_stack_depth`, with
/// the JIT: to 16 bytes).
fn rounded_stack(bytes: i64) -> i64 {
    (bytes + 15) / 16 * 16
}

/// One call chain the kernel's stack check walks (`check_max_stack_depth_subprog`): each
/// frame's part, with the call that entered it (none for the chain's root), and the stack
/// the frames take together.
struct CallChain {
    frames: Vec<(usize, Option<u32>)>,
    bytes: i64,
}

/// Every call chain of `program`'s code in the loaded layout, in the order the kernel's stack
/// check walks them: from the entry program, then from each asynchronous callback (one whose
/// address is handed to `bpf_timer_set_callback` or a `*_set_callback*` kfunc); a callback
/// passed by address counts as a frame of its caller unless it is asynchronous. A chain stops
/// at [`MAX_CALL_FRAMES`] frames.
fn call_chains(program: &Program<'_, '_>) -> Vec<CallChain> {
    use bpflog_object::opcode::OP_CALL;
    /// `BPF_PSEUDO_KFUNC_CALL`.
    const PSEUDO_KFUNC_CALL: u8 = 2;
    /// `BPF_FUNC_timer_set_callback`.
    const TIMER_SET_CALLBACK: i32 = 170;
    /// Walked chains beyond this many are not looked at.
    const MAX_CHAINS: usize = 4096;
    let Some(object) = program.object() else {
        return Vec::new();
    };
    let layout = &program.layout;
    let part_at = |index: u32| -> Option<usize> {
        let used = object.function_used_at(layout, program.loader, index)?;
        layout.parts.iter().position(|p| p.function == used)
    };
    // Each part's calls and callback references: (instruction, callee part, asynchronous).
    let edges: Vec<Vec<(u32, usize, bool)>> = layout
        .parts
        .iter()
        .map(|part| {
            let end = part.start.saturating_add(part.len);
            let mut out = Vec::new();
            for i in part.start..end {
                let Some(insn) = object.insn(layout, i) else {
                    continue;
                };
                if insn.is_pseudo_call() {
                    if let Some(callee) = part_at(i) {
                        out.push((i, callee, false));
                    }
                } else if insn.is_ld_imm64() {
                    let Some(callee) = part_at(i) else {
                        continue;
                    };
                    // The first call after it takes the callback.
                    let asynchronous = (i + 2..end)
                        .filter_map(|j| object.insn(layout, j).map(|c| (j, c)))
                        .find(|(_, c)| c.code == OP_CALL)
                        .is_some_and(|(j, c)| match c.src {
                            0 => c.imm == TIMER_SET_CALLBACK,
                            PSEUDO_KFUNC_CALL => {
                                object.reloc_symbol(layout, j).is_some_and(|s| match s {
                                    bpflog_object::RelocSymbol::Undefined(name)
                                    | bpflog_object::RelocSymbol::Defined { name, .. } => {
                                        name.contains("set_callback")
                                    }
                                })
                            }
                            _ => false,
                        });
                    out.push((i, callee, asynchronous));
                }
            }
            out
        })
        .collect();
    let stack: Vec<i64> = layout
        .parts
        .iter()
        .map(|p| rounded_stack(deepest_stack(object, layout, p).0))
        .collect();
    let roots = std::iter::once(0).chain(
        (0..layout.parts.len()).filter(|&p| edges.iter().flatten().any(|&(_, c, a)| a && c == p)),
    );
    let mut chains = Vec::new();
    for root in roots {
        if root >= stack.len() {
            continue;
        }
        // Depth first, each part's calls in instruction order.
        let mut todo = vec![vec![(root, None)]];
        while let Some(frames) = todo.pop() {
            if chains.len() >= MAX_CHAINS {
                return chains;
            }
            let bytes = frames.iter().map(|&(p, _)| stack[p]).sum();
            let &(last, _) = frames.last().unwrap_or(&(root, None));
            if frames.len() < MAX_CALL_FRAMES {
                for &(at, callee, asynchronous) in edges[last].iter().rev() {
                    if !asynchronous {
                        let mut next = frames.clone();
                        next.push((callee, Some(at)));
                        todo.push(next);
                    }
                }
            }
            chains.push(CallChain { frames, bytes });
        }
    }
    chains
}

/// The chain of a call stack too large or too deep: the call chain the kernel's check
/// stopped at, from the object's code (a log has no instruction of it), outermost first; in
/// each frame the instruction that takes its deepest stack address, then the call to the
/// next. A chain too deep ends at the first call of a function already on it (recursion).
fn stack_chain_start(program: &Program<'_, '_>, rejection: &Rejection) -> ChainStart {
    let Some(object) = program.object() else {
        return ChainStart::default();
    };
    let chains = call_chains(program);
    let chosen = if rejection.message == Some(Message::CallsTooDeep) {
        chains.iter().find(|c| c.frames.len() == MAX_CALL_FRAMES)
    } else {
        let Some(frames) = rejection.frames.and_then(|n| usize::try_from(n).ok()) else {
            return ChainStart::default();
        };
        let bytes = rejection.stack_bytes.and_then(|b| i64::try_from(b).ok());
        let of_len = || chains.iter().filter(|c| c.frames.len() == frames);
        of_len()
            .find(|c| Some(c.bytes) == bytes)
            .or_else(|| of_len().find(|c| c.bytes > 512))
    };
    let Some(chosen) = chosen else {
        return ChainStart::default();
    };
    let layout = &program.layout;
    let text = |index: u32| {
        object
            .insn(layout, index)
            .map(|insn| stack_insn_text(&insn))
            .unwrap_or_default()
    };
    // A call as the log prints it, relative in the loaded layout.
    let call_text = |index: u32, part: usize| {
        let to = i64::from(layout.parts[part].start) - i64::from(index) - 1;
        format!("call pc{to:+}")
    };
    let mut steps = Vec::new();
    let mut seen = Vec::new();
    for &(part, call) in &chosen.frames {
        let function = &object.function(layout.parts[part].function).name;
        if let Some(at) = call {
            let recursive = seen.contains(&part);
            let note = if recursive {
                format!("calls `{function}` again, which is already on the call stack: recursion")
            } else {
                format!("calls `{function}`")
            };
            steps.push(step(
                program,
                (u64::from(at), None),
                call_text(at, part),
                Role::Called,
                Some(note),
            ));
            if recursive {
                break;
            }
        }
        seen.push(part);
        if let (bytes, Some(at)) = deepest_stack(object, layout, &layout.parts[part]) {
            steps.push(step(
                program,
                (u64::from(at), None),
                text(at),
                Role::Origin,
                Some(format!(
                    "`{function}` uses at least {bytes} bytes of stack here"
                )),
            ));
        }
    }
    ChainStart::of(steps)
}

/// `file:line` of instruction `index`, or `instruction N`.
fn line_name(program: &Program<'_, '_>, index: u64) -> String {
    let place = place(program, index);
    match &place.file {
        Some(file) => {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{base}:{}", place.line)
        }
        None => format!("instruction {index}"),
    }
}

/// What the help of `rejection` is built from: the register followed back (`followed`), the
/// failing instruction `failed`, the chain's origin and last test, the write the failing path
/// jumped over (`skipped`, the branch and the write), the lines where the verifier spent its
/// work (`profile`), each named by its place in the program.
fn facts<'r>(
    program: &Program<'_, '_>,
    rejection: &'r Rejection,
    chain: &[Step],
    (followed, failed): (Option<u8>, u64),
    skipped: Option<(u64, u64)>,
    profile: Option<&Profile>,
) -> help::Facts<'r> {
    // A step by its instruction and its line: the line the compiler gave an instruction may be
    // a neighbour's.
    let named = |what: &str, step: &Step| {
        let at = step.location.insn;
        match source_text(program, at) {
            Some(text) => format!(
                "{what} `{}` ({}: `{text}`)",
                step.instruction,
                line_name(program, at)
            ),
            None => format!("{what} `{}` ({})", step.instruction, line_name(program, at)),
        }
    };
    let origin = chain.iter().find(|s| s.role == Role::Origin);
    let narrowed = chain.iter().find(|s| s.role == Role::Narrowed);
    help::Facts {
        rejection,
        reg: followed
            .or(rejection.reg)
            .map_or_else(|| "the register".to_owned(), |r| format!("R{r}")),
        line: line_name(program, failed),
        origin: origin.map_or_else(|| "the value".to_owned(), |s| named("the value of", s)),
        narrowed: narrowed.map_or_else(
            || "no check on the path".to_owned(),
            |s| named("the test", s),
        ),
        hot: hot_lines(profile),
        skipped: skipped
            .map(|(branch, write)| (line_name(program, branch), line_name(program, write))),
        narrowing: narrowed.and_then(|s| match &s.fact {
            Some(Fact::Narrowed(n)) => Some(n.advice(&named("the test", s))),
            _ => None,
        }),
        number_as_pointer: origin
            .is_some_and(|s| s.fact.as_ref().is_some_and(Fact::is_number_as_pointer)),
        origin_call: origin.and_then(|s| called(s.instruction.as_bytes())),
        origin_line: origin.map(|s| {
            let at = s.location.insn;
            match source_text(program, at) {
                Some(text) => format!("{}: `{text}`", line_name(program, at)),
                None => line_name(program, at),
            }
        }),
        invalidated: chain.iter().find_map(|s| match &s.fact {
            Some(Fact::Invalidated(by)) => {
                let what = by
                    .callee()
                    .map_or_else(|| s.instruction.clone(), str::to_owned);
                Some((what, line_name(program, s.location.insn)))
            }
            _ => None,
        }),
        frames: if rejection.id() == ClassId::StackSize {
            frame_sizes(program)
        } else {
            Vec::new()
        },
        held: chain
            .iter()
            .find(|s| {
                s.role == Role::Origin
                    && called(s.instruction.as_bytes()).as_deref() == Some("bpf_spin_lock")
            })
            .map(|s| match source_text(program, s.location.insn) {
                Some(text) => format!("{}: `{text}`", line_name(program, s.location.insn)),
                None => line_name(program, s.location.insn),
            }),
    }
}

/// The value item `name` (`R6`, `fp-16`) has in the state `text` printed at instruction `at`
/// (the failure tracker's copy, after `N: `), decoded as the log crate decodes every state.
fn state_item(at: u64, text: &[u8], name: &str) -> Option<String> {
    let line = format!("{at}: {}", std::str::from_utf8(text).ok()?);
    let kind = bpflog_log::classify(line.as_bytes());
    let state = bpflog_log::state::decode(&line, &kind)?;
    let found = state.regs.iter().find(|r| r.name == name)?;
    Some(found.value.to_owned())
}

/// The helper or kfunc instruction `text` calls by name (`call bpf_ringbuf_reserve#131`).
fn called(text: &[u8]) -> Option<String> {
    match bpflog_log::PrintedInsn::decode(text).op {
        bpflog_log::Op::Call(bpflog_log::Callee::Named { name, .. }) => {
            Some(String::from_utf8_lossy(name).into_owned())
        }
        _ => None,
    }
}

/// What the stack slot of the frame bytes at `off` from the frame pointer holds, as the state
/// the failing path last printed for it on an instruction's line says (`fp-16=dynptr_ringbuf(...)`:
/// `dynptr_ringbuf`), else the register state printed last, else the last printed on a line
/// of its own (`states`, in that order). A dynptr takes two slots and is printed at its
/// first: the slot below is looked at for one.
fn slot_in(path: &Decoded<'_>, states: [Option<(u64, &[u8])>; 2], off: i64) -> Option<String> {
    let slot = off.div_euclid(8) * 8;
    // The kind a printed state gives the slot at `at`: its value's name (`dynptr_ringbuf`).
    let kind = |(printed_at, text): (u64, &[u8]), at: i64| -> Option<String> {
        let value = state_item(printed_at, text, &format!("fp{at}"))?;
        let len = value
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        (len > 0).then(|| value[..len].to_owned())
    };
    let in_line = |state: (u64, &[u8])| {
        kind(state, slot).or_else(|| kind(state, slot - 8).filter(|k| k.starts_with("dynptr")))
    };
    let shown = |at: i64| {
        path.iter().rev().find_map(|i| {
            let (_, value) = i.slots().find(|&(s, _)| s == at)?;
            let kind = value.split('(').next().unwrap_or(value);
            (!kind.is_empty()).then(|| kind.to_owned())
        })
    };
    shown(slot)
        .or_else(|| shown(slot - 8).filter(|k| k.starts_with("dynptr")))
        .or_else(|| states.into_iter().flatten().find_map(in_line))
}
