//! Provenance: where the value the verifier rejected came from, walked back along the path that
//! failed.
//!
//! The verifier explores paths depth first: a `from X to Y` line resumes a state pushed at
//! branch X of a path whose instructions up to X are still the latest lines printed. So the
//! failing path is the instruction lines kept in order, cut back to the last X each time a path
//! resumes ([`Path::resume`]). Walking it backwards from the failure ([`walk`]) follows the
//! offending register through moves (`r1 = r0`), arithmetic, spills and fills of stack slots
//! (`*(u64 *)(r10 -8) = r1`, `r1 = *(u64 *)(r10 -8)`), arguments of BPF-to-BPF calls (R1-R5 at
//! `call pc+N`) and results of their `exit` (R0), to its origin: a helper's result, a load from
//! memory, a constant, a map. For a bound, the conditional jump that last tested it is the step
//! that narrowed it. This is the use-def walk bpfvv has a person do by clicking, on the text of
//! `print_bpf_insn` (kernel/bpf/disasm.c) decoded by [`Insn`].

use bpflog_log::{Callee, Insn, Line, Op, Operand, classify};
use std::collections::VecDeque;

/// At most this many instruction lines of the failing path are kept (the latest ones): a walk
/// back that needs more stops at the oldest kept.
pub(crate) const MAX_PATH: usize = 8192;
/// At most this many bytes of an instruction's line are kept (its text and the state after it;
/// a longer line's state is taken to link nothing: [`PathInsn::links`]).
const MAX_LINE: usize = 512;
/// At most this many steps make a chain.
const MAX_STEPS: usize = 32;

/// What the state printed after an instruction says of a register's `id=`, the number the
/// verifier gives a scalar and its copies so that a bound found for one holds for all
/// (`sync_linked_regs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Link {
    /// The state does not show the register (level 1, or not touched).
    #[default]
    NotShown,
    /// Shown without an id: linked to nothing.
    Unlinked,
    /// Shown with this id.
    Id(u64),
}

/// The [`Link`] of each register R0-R10 after an instruction.
pub(crate) type Links = [Link; 11];

/// The links of the registers a state shows (`(register, id)`, as
/// [`InsnLine::state_ids`](bpflog_log::InsnLine::state_ids) gives them).
pub(crate) fn links(ids: impl Iterator<Item = (u8, Option<u64>)>) -> Links {
    let mut links = Links::default();
    for (reg, id) in ids {
        if let Some(link) = links.get_mut(usize::from(reg)) {
            *link = id.map_or(Link::Unlinked, Link::Id);
        }
    }
    links
}

/// One instruction line of the path: a view into [`Path`]'s bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathInsn<'p> {
    /// The instruction index.
    pub(crate) index: u64,
    /// The call frame it was verified in (0: the entry program's).
    pub(crate) frame: usize,
    /// The instruction's line as the log prints it (the kernel's part), cut at [`MAX_LINE`].
    line: &'p [u8],
    /// Whether `line` was cut.
    cut: bool,
    /// A comparison of two registers, one of them the packet's end (`if r2 > r3 goto pc+35 ;
    /// R2=pkt(off=14,r=14) R3=pkt_end()`): a bound of the packet pointers.
    pub(crate) packet_check: bool,
    /// The number of the log line it was read at, as the reader numbers lines.
    pub(crate) read_at: u64,
}

impl<'p> PathInsn<'p> {
    /// The instruction's text (`r1 = r0`), without the state after it. Decoded from the line
    /// when asked, at the end of a rejected log: most lines kept are dropped unread.
    pub(crate) fn text(&self) -> &'p [u8] {
        match classify(self.line) {
            Line::Insn(insn) => insn.text(),
            _ => self.line,
        }
    }

    /// The instruction's line as the log prints it (the kernel's part; cut at [`MAX_LINE`]).
    pub(crate) fn line(&self) -> &'p [u8] {
        self.line
    }

    /// The registers' ids in the state printed after it, decoded when asked. A line cut short
    /// links nothing (every register `Unlinked`): an id past the cut is not guessed at.
    pub(crate) fn links(&self) -> Links {
        if self.cut {
            return [Link::Unlinked; 11];
        }
        match classify(self.line) {
            Line::Insn(insn) => links(insn.state_ids()),
            _ => Links::default(),
        }
    }
}

/// What [`Path`] keeps of an instruction line: its line is `[start..end]` of the path's block
/// number `block` (counted from the path's first block, dropped ones included).
#[derive(Debug, Clone, Copy)]
struct Kept {
    index: u64,
    frame: usize,
    block: usize,
    start: usize,
    end: usize,
    cut: bool,
    packet_check: bool,
    read_at: u64,
}

/// The bytes of a block of [`Path`]'s lines: well under the size from which an allocator maps
/// memory of its own, so that the blocks of one log are reused for the next.
const BLOCK: usize = 16 << 10;

/// The instructions in a chunk of [`Path`]'s (14 KiB of them), for the same reason.
const CHUNK: usize = 256;

/// The instruction lines of the path being verified, latest last.
///
/// Their bytes are kept end to end in blocks of [`BLOCK`] bytes, in the order of the lines (a
/// line that does not fit the last block starts the next), and the instructions in chunks of
/// [`CHUNK`], so that keeping a line costs a copy and rarely an allocation: a log starts with
/// an empty path (each log has its own), and most of its lines are dropped again at the next
/// branch. (One buffer growing to hundreds of KiB for a log of a large program was mapped and
/// unmapped for every log: a page fault a page.)
#[derive(Debug, Default)]
pub(crate) struct Path {
    /// The instructions kept, in chunks of [`CHUNK`]: from position `skipped` of the first on.
    insns: VecDeque<Vec<Kept>>,
    /// Instructions of the first chunk dropped past [`MAX_PATH`].
    skipped: usize,
    /// How many instructions are kept.
    len: usize,
    /// The lines' bytes: the blocks from that of `insns[0]` on.
    blocks: VecDeque<Vec<u8>>,
    /// Blocks dropped from the front (their lines dropped past [`MAX_PATH`]).
    dropped: usize,
    /// Instructions of the path were dropped (beyond [`MAX_PATH`], or a branch not kept): its
    /// first kept instruction is not where it started.
    cut: bool,
}

impl Path {
    /// Instruction `index`, verified in `frame`, with its line (`N: (xx) text ; state`, the
    /// kernel's part), read at line `read_at`; `packet_check`: see [`PathInsn::packet_check`].
    pub(crate) fn push(
        &mut self,
        index: u64,
        frame: usize,
        line: &[u8],
        packet_check: bool,
        read_at: u64,
    ) {
        if self.len == MAX_PATH {
            self.cut = true;
            self.len -= 1;
            self.skipped += 1;
            if self.skipped == CHUNK {
                self.insns.pop_front();
                self.skipped = 0;
            }
            // The blocks before the first kept line's go.
            let first = self.kept(0).map_or(self.dropped, |i| i.block);
            while self.dropped < first && self.blocks.pop_front().is_some() {
                self.dropped += 1;
            }
        }
        let kept = line.get(..MAX_LINE).unwrap_or(line);
        let full = |b: &Vec<u8>| b.capacity() - b.len() < kept.len();
        if self.blocks.back().is_none_or(full) {
            self.blocks
                .push_back(Vec::with_capacity(BLOCK.max(kept.len())));
        }
        let block = self.dropped + self.blocks.len() - 1;
        let Some(bytes) = self.blocks.back_mut() else {
            return;
        };
        let start = bytes.len();
        bytes.extend_from_slice(kept);
        let end = bytes.len();
        if self.insns.back().is_none_or(|c| c.len() == CHUNK) {
            self.insns.push_back(Vec::with_capacity(CHUNK));
        }
        let Some(chunk) = self.insns.back_mut() else {
            return;
        };
        self.len += 1;
        chunk.push(Kept {
            index,
            frame,
            block,
            start,
            end,
            cut: line.len() > MAX_LINE,
            packet_check,
            read_at,
        });
    }

    /// A path resumes at a branch of instruction `from`: the path is what led to it.
    pub(crate) fn resume(&mut self, from: u64) {
        // The latest line of `from`, searched for chunk by chunk from the end.
        let at = (self.insns.iter().enumerate().rev()).find_map(|(c, chunk)| {
            let first = if c == 0 { self.skipped } else { 0 };
            let kept = chunk.get(first..).unwrap_or_default();
            let i = kept.iter().rposition(|i| i.index == from)?;
            Some(c * CHUNK + first + i - self.skipped)
        });
        match at {
            Some(at) => self.drop_from(at + 1),
            None => {
                self.drop_from(0);
                self.cut = true;
            }
        }
    }

    /// A verification pass (or a log) starts.
    pub(crate) fn clear(&mut self) {
        self.drop_from(0);
        self.cut = false;
    }

    /// Drops the instructions from position `at` on, and their bytes.
    fn drop_from(&mut self, at: usize) {
        if let Some(first) = self.kept(at).copied() {
            let k = first.block.saturating_sub(self.dropped);
            self.blocks.truncate(k + 1);
            if let Some(bytes) = self.blocks.get_mut(k) {
                bytes.truncate(first.start);
            }
            let pos = self.skipped + at;
            self.insns.truncate(pos / CHUNK + 1);
            if let Some(chunk) = self.insns.back_mut() {
                chunk.truncate(pos % CHUNK);
            }
            self.len = at;
        }
        if self.len == 0 {
            self.insns.clear();
            self.skipped = 0;
            self.blocks.clear();
            self.dropped = 0;
        }
    }

    /// What is kept of the instruction at position `at` (0: the first kept).
    fn kept(&self, at: usize) -> Option<&Kept> {
        if at >= self.len {
            return None;
        }
        let pos = self.skipped + at;
        self.insns.get(pos / CHUNK)?.get(pos % CHUNK)
    }

    /// How many instructions the path holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The instruction at position `at` (0: the first kept).
    pub(crate) fn get(&self, at: usize) -> Option<PathInsn<'_>> {
        let kept = self.kept(at)?;
        let bytes = self.blocks.get(kept.block.checked_sub(self.dropped)?)?;
        Some(PathInsn {
            index: kept.index,
            frame: kept.frame,
            line: bytes.get(kept.start..kept.end).unwrap_or_default(),
            cut: kept.cut,
            packet_check: kept.packet_check,
            read_at: kept.read_at,
        })
    }

    /// The instructions, first kept first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = PathInsn<'_>> {
        (0..self.len()).filter_map(|at| self.get(at))
    }

    /// The first instruction kept.
    pub(crate) fn first(&self) -> Option<PathInsn<'_>> {
        self.get(0)
    }

    /// The latest instruction.
    pub(crate) fn last(&self) -> Option<PathInsn<'_>> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The latest instruction with index `index`.
    pub(crate) fn last_of(&self, index: u64) -> Option<PathInsn<'_>> {
        self.iter().rev().find(|i| i.index == index)
    }
}

/// The latest branch of the failing path that jumped over one of `writes` (instruction indices
/// of the failing function that write the stack bytes the failure read, in ascending order):
/// the branch's position on the path and the first write it skipped. Only jumps within the
/// failing instruction's frame count, and a write the path went through is no answer.
///
/// The path is read twice, whatever the number of writes: once for the instructions it went
/// through in the frame, once back from the failure for its jumps, each looked up among the
/// writes left by a binary search.
pub(crate) fn skipped_write<'p>(path: &'p Path, writes: &[u64]) -> Option<(PathInsn<'p>, u64)> {
    let frame = path.last()?.frame;
    let on_path: std::collections::HashSet<u64> = (path.iter())
        .filter(|i| i.frame == frame)
        .inspect(|_| count_work(1))
        .map(|i| i.index)
        .collect();
    let mut free: Vec<u64> = (writes.iter().copied())
        .filter(|w| !on_path.contains(w))
        .collect();
    free.sort_unstable();
    let mut later = path.last()?;
    for step in path.iter().rev().skip(1) {
        count_work(1);
        if step.frame < frame {
            return None;
        }
        // A jump forward, over the instructions between.
        if step.frame == frame && later.frame == frame && later.index > step.index + 1 {
            let next = free.partition_point(|&w| w <= step.index);
            if let Some(&w) = free.get(next).filter(|&&w| w < later.index) {
                return Some((step, w));
            }
        }
        later = step;
    }
    None
}

/// Counts `n` steps of work of [`skipped_write`] on this thread, for the tests (nothing
/// otherwise).
#[inline(always)]
fn count_work(n: u64) {
    #[cfg(test)]
    tests::WORK.with(|w| w.set(w.get() + n));
    let _ = n;
}

/// What a step of the chain did with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Where the value was made: a helper's result, a load, a constant.
    Origin,
    /// Copied from one register to another.
    Moved,
    /// Computed from it (pointer or offset arithmetic).
    Computed,
    /// Stored into a stack slot.
    Spilled,
    /// Loaded back from a stack slot.
    Filled,
    /// Passed as an argument of a BPF-to-BPF call.
    Passed,
    /// Returned by a BPF-to-BPF call.
    Returned,
    /// Tested by a conditional jump that bounds it.
    Narrowed,
    /// The instruction the verifier rejected.
    Failed,
}

impl Role {
    /// The role's name as the outputs print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Origin => "origin",
            Role::Moved => "moved",
            Role::Computed => "computed",
            Role::Spilled => "spilled",
            Role::Filled => "filled",
            Role::Passed => "passed",
            Role::Returned => "returned",
            Role::Narrowed => "narrowed",
            Role::Failed => "failed",
        }
    }
}

/// A step found walking back: the instruction, its role, and what it says (`bpf_map_lookup_elem
/// may return NULL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) index: u64,
    /// The line of the path's instruction, as [`PathInsn::read_at`].
    pub(crate) line: u64,
    pub(crate) role: Role,
    pub(crate) insn: String,
    pub(crate) note: Option<String>,
}

/// What is followed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Reg(u8),
    /// A stack slot of the frame, by its offset from r10.
    Slot(i64),
}

/// How to follow a value through arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// The pointer: `r1 += r2` keeps following r1.
    Pointer,
    /// The offset added to a pointer: `r0 += r1` follows r1, and the jumps that bound it count.
    Offset,
    /// A packet pointer: followed as [`Follow::Pointer`], and the last comparison with the
    /// packet's end on the path is the step that bounded it.
    Packet,
}

/// Helpers whose result may be NULL, as their prototypes say (`RET_PTR_TO_*_OR_NULL`).
fn may_return_null(name: &[u8]) -> bool {
    name.ends_with(b"lookup_elem")
        || name.starts_with(b"bpf_sk_lookup")
        || name.starts_with(b"bpf_skc_lookup")
        || name.starts_with(b"bpf_ringbuf_reserve")
        || name.ends_with(b"_storage_get")
        || name.starts_with(b"bpf_get_listener_sock")
        || name.starts_with(b"bpf_sk_fullsock")
        || name.starts_with(b"bpf_tcp_sock")
        || name.starts_with(b"bpf_skc_to_")
        || name.starts_with(b"bpf_dynptr_data")
}

/// For a register read before it was written (`R2 !read_ok`): the call on the path that
/// clobbered it (a call leaves R1-R5 unreadable), if nothing wrote it since, in its frame.
pub(crate) fn clobbered_by(path: &Path, reg: u8) -> Option<Found> {
    if !(1..=5).contains(&reg) {
        return None;
    }
    let mut insns = path.iter().rev();
    let frame = insns.next()?.frame;
    for step in insns {
        if step.frame > frame {
            continue;
        }
        if step.frame < frame {
            return None;
        }
        let insn = Insn::decode(step.text());
        if matches!(insn.op, Op::Call(_)) {
            return Some(Found {
                index: step.index,
                line: step.read_at,
                role: Role::Origin,
                insn: String::from_utf8_lossy(step.text()).into_owned(),
                note: Some(format!(
                    "a call leaves R1-R5 unreadable: R{reg} is not kept across it"
                )),
            });
        }
        if insn.defines().is_some_and(|r| r.num == reg) {
            return None;
        }
    }
    None
}

/// For a rule of a region broken (`BPF_EXIT instruction in main prog cannot be used inside
/// bpf_rcu_read_lock-ed region`): the call to `opener` that opened the region still open, in any
/// frame. Regions nest, and a close ends the latest one still open: walking back from the
/// failure, each call to the closer (`bpf_rcu_read_unlock` for `bpf_rcu_read_lock`) stands for
/// one call to `opener` before it, and the first call to `opener` left over opened the region.
pub(crate) fn opened_by(path: &Path, opener: &str) -> Option<Found> {
    let closer = region_closer(opener);
    let mut closed = 0usize;
    path.iter().rev().find_map(|step| {
        let Op::Call(Callee::Named { name, .. }) = Insn::decode(step.text()).op else {
            return None;
        };
        if closer.is_some_and(|closer| name == closer.as_bytes()) {
            closed += 1;
            return None;
        }
        if name != opener.as_bytes() {
            return None;
        }
        if closed > 0 {
            closed -= 1;
            return None;
        }
        Some(Found {
            index: step.index,
            line: step.read_at,
            role: Role::Origin,
            insn: String::from_utf8_lossy(step.text()).into_owned(),
            note: Some(format!("{opener} opens the region, still open here")),
        })
    })
}

/// The latest call on the path to a kfunc the loader left unresolved
/// ([`is_unresolved_kfunc`](crate::select::is_unresolved_kfunc)). The kernel refuses such a call
/// only once every path is verified (`invalid kernel function call not eliminated in verifier
/// pass`), after the last instruction it printed.
pub(crate) fn unresolved_call(path: &Path) -> Option<PathInsn<'_>> {
    path.iter().rev().find(|step| {
        matches!(Insn::decode(step.text()).op,
            Op::Call(callee) if crate::select::is_unresolved_kfunc(callee))
    })
}

/// The call that closes a region `opener` opens (the kernel's pairs; `None` for another name:
/// then no call is taken to close it).
fn region_closer(opener: &str) -> Option<&'static str> {
    Some(match opener {
        "bpf_rcu_read_lock" => "bpf_rcu_read_unlock",
        "bpf_preempt_disable" => "bpf_preempt_enable",
        "bpf_spin_lock" => "bpf_spin_unlock",
        "bpf_res_spin_lock" => "bpf_res_spin_unlock",
        "bpf_local_irq_save" => "bpf_local_irq_restore",
        _ => return None,
    })
}

/// How far back [`copy_of`] looks for the copy.
const MAX_COPY_DISTANCE: usize = 64;

/// The index of the instruction `copy = original` before position `at` of `path`, in its
/// frame, with neither register written in between: `copy` then holds a linked copy of
/// `original` at `at`.
fn copy_of(path: &Path, at: usize, copy: u8, original: u8) -> Option<u64> {
    let frame = path.get(at)?.frame;
    for pos in (at.saturating_sub(MAX_COPY_DISTANCE)..at).rev() {
        let step = path.get(pos)?;
        if step.frame != frame {
            return None;
        }
        let insn = Insn::decode(step.text());
        if let Op::Alu {
            dst,
            op: b"=",
            src: Some(Operand::Reg(src)),
            ..
        } = insn.op
            && dst.num == copy
            && src.num == original
            && dst.wide
            && src.wide
        {
            return Some(step.index);
        }
        let written = insn.defines().map(|r| r.num);
        if written == Some(copy) || written == Some(original) || matches!(insn.op, Op::Call(_)) {
            return None;
        }
    }
    None
}

/// How far back [`link_at`] looks for a state showing the register.
const MAX_LINK_DISTANCE: usize = 256;

/// The id of register `reg` at position `at` of `path`: from the latest state at or before
/// it, in its frame, that shows the register.
fn link_at(path: &Path, at: usize, reg: u8) -> Option<u64> {
    let frame = path.get(at)?.frame;
    for pos in (at.saturating_sub(MAX_LINK_DISTANCE)..=at).rev() {
        let step = path.get(pos)?;
        if step.frame != frame {
            return None;
        }
        match step.links().get(usize::from(reg))? {
            Link::NotShown => {}
            Link::Unlinked => return None,
            Link::Id(id) => return Some(*id),
        }
    }
    None
}

/// A register of the jump at position `at` of `path` (`tested`) linked to `reg` by the
/// states' ids: `(tested, id)`.
fn linked_test(path: &Path, at: usize, tested: [Option<u8>; 2], reg: u8) -> Option<(u8, u64)> {
    let id = link_at(path, at, reg)?;
    tested
        .into_iter()
        .flatten()
        .find(|&t| t != reg && link_at(path, at, t) == Some(id))
        .map(|t| (t, id))
}

/// The chain of register `reg` at the last instruction of `path` (the failing one, frame
/// `path`'s last), back to its origin, latest step first, without the failing instruction.
/// `global`: the path is a global function's own pass, whose arguments are what any caller
/// could pass.
pub(crate) fn walk(path: &Path, reg: u8, follow: Follow, global: bool) -> Vec<Found> {
    let mut steps = Vec::new();
    let all = path;
    let Some(failed) = all.last() else {
        return steps;
    };
    let mut frame = failed.frame;
    let mut value = Value::Reg(reg);
    let mut narrowed = false;
    for pos in (0..all.len() - 1).rev() {
        let Some(step) = all.get(pos) else {
            return steps;
        };
        if steps.len() == MAX_STEPS {
            return steps;
        }
        let insn = Insn::decode(step.text());
        let found = |role, note: Option<String>| Found {
            index: step.index,
            line: step.read_at,
            role,
            insn: String::from_utf8_lossy(step.text()).into_owned(),
            note,
        };
        if step.frame > frame {
            // A callee's instruction, walking back into it from after its return: its `exit`
            // returns what R0 holds.
            if step.frame == frame + 1 && matches!(insn.op, Op::Exit) && value == Value::Reg(0) {
                steps.push(found(Role::Returned, None));
                frame = step.frame;
            }
            continue;
        }
        if step.frame < frame {
            // Out of the frame, to the call that entered it: R1-R5 are its arguments.
            match (insn.op, value) {
                (Op::Call(Callee::Pc(_)), Value::Reg(r @ 1..=5)) if step.frame + 1 == frame => {
                    steps.push(found(Role::Passed, Some(format!("as argument {r}"))));
                    frame = step.frame;
                    continue;
                }
                // A callback's argument: the helper that calls it passes it.
                (Op::Call(Callee::Named { name, .. }), Value::Reg(r @ 1..=5)) => {
                    let name = String::from_utf8_lossy(name);
                    let note = format!("{name} passes it to the callback as argument {r}");
                    steps.push(found(Role::Origin, Some(note)));
                    return steps;
                }
                // A stack slot of another frame: not followed.
                _ => return steps,
            }
        }
        if follow == Follow::Packet && !narrowed && step.packet_check {
            narrowed = true;
            let note = "the last comparison with the packet's end on the path".to_owned();
            steps.push(found(Role::Narrowed, Some(note)));
            continue;
        }
        match (insn.op, value) {
            (Op::Call(Callee::Named { name, .. }), Value::Reg(0)) => {
                let name = String::from_utf8_lossy(name);
                let note = if may_return_null(name.as_bytes()) {
                    format!("{name} returns it, and may return NULL")
                } else {
                    format!("{name} returns it")
                };
                steps.push(found(Role::Origin, Some(note)));
                return steps;
            }
            (Op::Call(Callee::Pc(_)), Value::Reg(0)) => {
                // Returned by a subprogram whose instructions the path does not show.
                steps.push(found(Role::Origin, Some("a subprogram returns it".into())));
                return steps;
            }
            (Op::Alu { dst, op, src, .. }, Value::Reg(r)) if dst.num == r => match (op, src) {
                (b"=", Some(Operand::Reg(from))) if from.num == 10 => {
                    let note = "the frame pointer: a pointer into the stack".to_owned();
                    steps.push(found(Role::Origin, Some(note)));
                    return steps;
                }
                (b"=", Some(Operand::Reg(from))) => {
                    steps.push(found(Role::Moved, None));
                    value = Value::Reg(from.num);
                }
                (b"=", Some(Operand::Imm(_))) => {
                    steps.push(found(Role::Origin, Some("a constant".into())));
                    return steps;
                }
                (_, Some(Operand::Reg(with))) if follow == Follow::Offset => {
                    steps.push(found(Role::Computed, None));
                    value = Value::Reg(with.num);
                }
                _ => steps.push(found(Role::Computed, None)),
            },
            (Op::Load { dst, mem }, Value::Reg(r)) if dst.num == r => match mem.stack_slot() {
                Some(slot) => {
                    steps.push(found(Role::Filled, None));
                    value = Value::Slot(slot);
                }
                None => {
                    steps.push(found(Role::Origin, Some("loaded from memory".into())));
                    return steps;
                }
            },
            (Op::LoadImm64 { dst, .. }, Value::Reg(r)) if dst.num == r => {
                steps.push(found(Role::Origin, None));
                return steps;
            }
            (Op::Store { mem, src }, Value::Slot(slot)) if mem.stack_slot() == Some(slot) => {
                match src {
                    Operand::Reg(from) => {
                        steps.push(found(Role::Spilled, None));
                        value = Value::Reg(from.num);
                    }
                    Operand::Imm(_) => {
                        steps.push(found(Role::Origin, Some("a constant".into())));
                        return steps;
                    }
                }
            }
            (Op::Call(_), Value::Reg(1..=5)) => {
                // A call clobbers R1-R5: what is followed was written after it, or never.
                return steps;
            }
            (
                Op::Jump {
                    cond: Some((left, _, right)),
                    ..
                },
                Value::Reg(r),
            ) if follow == Follow::Offset
                && !narrowed
                && (left.num == r || matches!(right, Operand::Reg(x) if x.num == r)) =>
            {
                narrowed = true;
                steps.push(found(
                    Role::Narrowed,
                    Some(format!("the last test of R{r}")),
                ));
            }
            // A test of a linked copy bounds the original too: the states show them sharing
            // an `id=` at the jump (level 2).
            (
                Op::Jump {
                    cond: Some((left, _, right)),
                    ..
                },
                Value::Reg(r),
            ) if follow == Follow::Offset
                && !narrowed
                && let Some((tested, id)) = linked_test(
                    all,
                    pos,
                    [
                        Some(left.num),
                        match right {
                            Operand::Reg(x) => Some(x.num),
                            Operand::Imm(_) => None,
                        },
                    ],
                    r,
                ) =>
            {
                narrowed = true;
                let note = format!("the last test of R{tested}, linked to R{r} (id={id})");
                steps.push(found(Role::Narrowed, Some(note)));
            }
            // Without states (level 1): a plain copy made shortly before the test.
            (
                Op::Jump {
                    cond: Some((left, _, _)),
                    ..
                },
                Value::Reg(r),
            ) if follow == Follow::Offset
                && !narrowed
                && let Some(copied) = copy_of(all, pos, left.num, r) =>
            {
                narrowed = true;
                let note = format!(
                    "the last test of R{}, a copy of R{r} (instruction {copied})",
                    left.num
                );
                steps.push(found(Role::Narrowed, Some(note)));
            }
            _ => {}
        }
    }
    // The path's start, the value not written on it: a global function's argument, or the
    // entry program's context (R1 at instruction 0).
    let first = path.first();
    let note = match value {
        Value::Reg(r @ 1..=5) if global => Some(format!(
            "argument {r} of the global function, checked as any caller could pass it (a pointer may be NULL)"
        )),
        Value::Reg(1) if first.is_some_and(|f| f.index == 0) => {
            Some("R1 at the program's entry: its context (`ctx`)".to_owned())
        }
        _ => None,
    };
    if let Some(note) = note
        && let Some(first) = first
        && !path.cut
        && steps.len() < MAX_STEPS
        && frame == 0
        && !steps.last().is_some_and(|s| s.role == Role::Origin)
    {
        match steps.last_mut() {
            // The function's first instruction moved it already: that step is the origin.
            Some(last) if last.index == first.index => {
                last.role = Role::Origin;
                last.note = Some(note);
            }
            _ => steps.push(Found {
                index: first.index,
                line: first.read_at,
                role: Role::Origin,
                insn: String::from_utf8_lossy(first.text()).into_owned(),
                note: Some(note),
            }),
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// The steps [`skipped_write`] took on this thread ([`count_work`]).
        pub(super) static WORK: Cell<u64> = const { Cell::new(0) };
    }

    /// N stores to the byte a failing read reads, run once and then jumped over N - 1 times
    /// on the failing path, the write the path jumped over before them
    /// (tests/fixtures/hostile/costs.py): found, with work that grows as the path does, not as
    /// the path times the writes (times the path again).
    #[test]
    fn a_skipped_write_is_found_in_linear_work() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hostile/costs");
        let mut work: Vec<u64> = Vec::new();
        for n in [64, 128, 256] {
            let data = std::fs::read(fixtures.join(format!("skip_stores.{n}.o"))).unwrap();
            let object = bpflog_object::BpfObject::parse(&data).unwrap();
            let program = crate::Program::new(&object, object.programs()[0]).unwrap();
            let log = std::fs::read(fixtures.join(format!("skip_stores.{n}.l1.log"))).unwrap();
            WORK.with(|w| w.set(0));
            let explained = super::super::explain(&program, &log[..]).unwrap();
            let steps = WORK.with(Cell::get);
            let [explanation] = &explained[..] else {
                panic!("one explanation: {explained:?}");
            };
            let chain: Vec<(u64, Role)> = (explanation.chain.iter())
                .map(|s| (s.location.insn, s.role))
                .collect();
            // `r7 = 1; if r7 s> 0 goto +1` over `*(u8 *)(r10 -2) = r7`; the read after the loop.
            assert_eq!(
                chain,
                [(1, Role::Origin), (n + 7, Role::Failed)],
                "{n} stores"
            );
            let note = explanation.chain[0].note.as_deref().unwrap_or_default();
            assert!(note.starts_with("jumps over insn 2 "), "{note}");
            // Twice the stores, at most a little more than twice the work.
            if let Some(&before) = work.last() {
                assert!(
                    steps * 5 < before * 12,
                    "steps for 64, 128, 256 stores: {work:?} then {steps}"
                );
            }
            work.push(steps);
        }
        eprintln!("steps for 64, 128, 256 stores: {work:?}");
    }

    /// A path of `(index, frame, text)`.
    fn path(insns: &[(u64, usize, &str)]) -> Path {
        let mut path = Path::default();
        for (line, &(index, frame, text)) in insns.iter().enumerate() {
            path.push(index, frame, text.as_bytes(), false, line as u64);
        }
        path
    }

    fn roles(found: &[Found]) -> Vec<(u64, Role)> {
        found.iter().map(|f| (f.index, f.role)).collect()
    }

    /// The path's lines share blocks of bytes: lines dropped from its front (past
    /// [`MAX_PATH`]) and from its end (a path resumed at a branch) leave every kept line's text
    /// as it was read, a line cut at [`MAX_LINE`] included, and take their blocks with them.
    #[test]
    fn kept_lines_read_back_as_pushed() {
        let line = |k: u64| {
            let pad = "x".repeat((k % 7) as usize * 13 + usize::from(k % 1000 == 3) * MAX_LINE);
            format!(
                "{k}: (bf) r{} = r{} ; R0_w=scalar() {pad}",
                k % 10,
                (k + 1) % 10
            )
        };
        // Line `k` is of instruction `k % period`: instructions come again, as in a loop, far
        // apart or within a chunk.
        for period in [1500, 100] {
            let mut path = Path::default();
            let mut expected: VecDeque<u64> = VecDeque::new();
            for k in 0..5 * MAX_PATH as u64 {
                // Every 1000th line, the path resumes at the instruction 500 lines back, at its
                // latest line (at first; then the path only grows, past its bound).
                if k % 1000 == 500 && k > 1000 && k < 2 * MAX_PATH as u64 {
                    let from = expected[expected.len() - 500] % period;
                    path.resume(from);
                    let at = expected.iter().rposition(|&e| e % period == from).unwrap();
                    expected.truncate(at + 1);
                    let last = path.last().map(|i| i.read_at);
                    assert_eq!(
                        (path.len(), last),
                        (expected.len(), expected.back().copied())
                    );
                }
                path.push(k % period, 0, line(k).as_bytes(), false, k);
                expected.push_back(k);
                if expected.len() > MAX_PATH {
                    expected.pop_front();
                }
                // The kept lines end to end in their blocks, the first block that of the first line.
                if k % 97 == 0 {
                    let kept: Vec<Kept> = (0..path.len)
                        .filter_map(|at| path.kept(at).copied())
                        .collect();
                    assert_eq!(kept.len(), path.len);
                    assert!(path.skipped < CHUNK);
                    assert_eq!(path.insns.len(), (path.skipped + path.len).div_ceil(CHUNK));
                    let ends = kept.iter().zip(kept.iter().skip(1));
                    assert!(
                        ends.clone()
                            .all(|(a, b)| (a.block, a.end) == (b.block, b.start)
                                || (a.block + 1, 0) == (b.block, b.start))
                    );
                    let (first, last) = (kept.first().unwrap(), kept.last().unwrap());
                    assert_eq!(first.block, path.dropped, "line {k}");
                    assert_eq!(path.blocks.len(), last.block - first.block + 1, "line {k}");
                    assert_eq!(path.blocks.back().map(Vec::len), Some(last.end), "line {k}");
                }
            }
            assert_eq!(path.len(), expected.len());
            assert!(path.dropped > 0);
            for (kept, &k) in path.iter().zip(&expected) {
                assert_eq!((kept.index, kept.read_at), (k % period, k));
                let text = line(k);
                let want = &text.as_bytes()[..text.len().min(MAX_LINE)];
                assert_eq!(kept.line, want, "line {k}");
                assert_eq!(kept.cut, text.len() > MAX_LINE, "line {k}");
                assert_eq!(
                    kept.text(),
                    format!("r{} = r{}", k % 10, (k + 1) % 10).as_bytes()
                );
            }
            let latest = expected
                .iter()
                .rev()
                .find(|&&e| e % period == expected[10] % period);
            assert_eq!(
                path.last_of(expected[10] % period).map(|i| i.read_at),
                latest.copied()
            );
            path.clear();
            assert!(path.blocks.is_empty() && path.first().is_none());
        }
    }

    #[test]
    fn through_a_spill_and_a_fill() {
        let p = path(&[
            (4, 0, "call bpf_map_lookup_elem#1"),
            (5, 0, "*(u64 *)(r10 -16) = r0"),
            (6, 0, "r0 = 0"),
            (7, 0, "r2 = *(u64 *)(r10 -16)"),
            (8, 0, "r3 = *(u32 *)(r2 +0)"),
        ]);
        let found = walk(&p, 2, Follow::Pointer, false);
        assert_eq!(
            roles(&found),
            [(7, Role::Filled), (5, Role::Spilled), (4, Role::Origin)]
        );
        assert_eq!(
            found[2].note.as_deref(),
            Some("bpf_map_lookup_elem returns it, and may return NULL")
        );
    }

    #[test]
    fn an_offset_and_the_jump_that_bounds_it() {
        let p = path(&[
            (1, 0, "r1 = *(u32 *)(r6 +0)"),
            (2, 0, "if r1 > 0x8 goto pc+5"),
            (3, 0, "r1 <<= 2"),
            (4, 0, "r0 += r1"),
            (5, 0, "r0 = *(u32 *)(r0 +0)"),
        ]);
        let found = walk(&p, 0, Follow::Offset, false);
        assert_eq!(
            roles(&found),
            [
                (4, Role::Computed),
                (3, Role::Computed),
                (2, Role::Narrowed),
                (1, Role::Origin)
            ]
        );
        // Followed as a pointer, the jump on the offset is no step.
        let found = walk(&p, 0, Follow::Pointer, false);
        assert_eq!(roles(&found), [(4, Role::Computed)]);
    }

    #[test]
    fn a_test_of_a_copy_bounds_the_original() {
        let p = path(&[
            (1, 0, "r6 = *(u32 *)(r7 +0)"),
            (2, 0, "r1 = r6"),
            (3, 0, "if r1 > 0x8 goto pc+5"),
            (4, 0, "r0 += r6"),
            (5, 0, "r0 = *(u32 *)(r0 +0)"),
        ]);
        let found = walk(&p, 0, Follow::Offset, false);
        assert_eq!(
            roles(&found),
            [(4, Role::Computed), (3, Role::Narrowed), (1, Role::Origin)]
        );
        assert_eq!(
            found[1].note.as_deref(),
            Some("the last test of R1, a copy of R6 (instruction 2)")
        );
        // Written in between: no longer a copy.
        let p = path(&[
            (1, 0, "r6 = *(u32 *)(r7 +0)"),
            (2, 0, "r1 = r6"),
            (3, 0, "r1 += 1"),
            (4, 0, "if r1 > 0x8 goto pc+5"),
            (5, 0, "r0 += r6"),
            (6, 0, "r0 = *(u32 *)(r0 +0)"),
        ]);
        assert_eq!(
            roles(&walk(&p, 0, Follow::Offset, false)),
            [(5, Role::Computed), (1, Role::Origin)]
        );
    }

    #[test]
    fn a_test_of_a_copy_linked_by_id_bounds_the_original() {
        // A copy through a stack slot, as a level-2 log of Linux 6.18 shows it: the spill
        // gives R6 and fp-8 id=1, the fill gives R1 the id `fill`.
        let copied = |fill: u64| {
            let fill = format!("R1_w=scalar(id={fill})");
            let lines = [
                "1: (61) r6 = *(u32 *)(r7 +0)   ; R6_w=scalar() R7=map_value()".to_owned(),
                "2: (7b) *(u64 *)(r10 -8) = r6  ; R6_w=scalar(id=1) fp-8=scalar(id=1)".to_owned(),
                format!("3: (79) r1 = *(u64 *)(r10 -8)  ; {fill}"),
                format!("4: (25) if r1 > 0x8 goto pc+5  ; {fill}"),
                "5: (0f) r0 += r6               ; R0_w=map_value() R6=scalar(id=1)".to_owned(),
                "6: (61) r0 = *(u32 *)(r0 +0)".to_owned(),
            ];
            let mut p = Path::default();
            for (k, line) in (1..).zip(&lines) {
                p.push(k, 0, line.as_bytes(), false, k);
            }
            walk(&p, 0, Follow::Offset, false)
        };
        let found = copied(1);
        assert_eq!(
            roles(&found),
            [(5, Role::Computed), (4, Role::Narrowed), (1, Role::Origin)]
        );
        assert_eq!(
            found[1].note.as_deref(),
            Some("the last test of R1, linked to R6 (id=1)")
        );
        // The fill given another id: no link, and no plain copy either.
        assert_eq!(roles(&copied(2)), [(5, Role::Computed), (1, Role::Origin)]);
    }

    #[test]
    fn the_frame_pointer_and_the_context_are_origins() {
        let p = path(&[
            (0, 0, "r6 = r1"),
            (1, 0, "r2 = r10"),
            (2, 0, "r2 += -8"),
            (3, 0, "r1 = *(u32 *)(r6 +256)"),
            (4, 0, "*(u64 *)(r2 -16) = r1"),
        ]);
        let found = walk(&p, 2, Follow::Pointer, false);
        assert_eq!(roles(&found), [(2, Role::Computed), (1, Role::Origin)]);
        assert_eq!(
            found[1].note.as_deref(),
            Some("the frame pointer: a pointer into the stack")
        );
        let p = path(&[
            (0, 0, "r6 = r1"),
            (1, 0, "r0 = 0"),
            (2, 0, "r1 = *(u32 *)(r6 +256)"),
        ]);
        let found = walk(&p, 6, Follow::Pointer, false);
        assert_eq!(roles(&found), [(0, Role::Origin)]);
        assert_eq!(
            found[0].note.as_deref(),
            Some("R1 at the program's entry: its context (`ctx`)")
        );
        // Not from the program's first instruction (a path cut short): no origin.
        let p = path(&[(5, 0, "r6 = r1"), (6, 0, "r1 = *(u32 *)(r6 +256)")]);
        assert_eq!(
            roles(&walk(&p, 6, Follow::Pointer, false)),
            [(5, Role::Moved)]
        );
    }

    #[test]
    fn a_register_read_after_a_call_clobbered_it() {
        let p = path(&[
            (0, 0, "r2 = r1"),
            (1, 0, "call bpf_ktime_get_ns#5"),
            (2, 0, "r0 = 1"),
            (3, 0, "r3 = *(u32 *)(r2 +0)"),
        ]);
        let found = clobbered_by(&p, 2).map(|f| (f.index, f.role));
        assert_eq!(found, Some((1, Role::Origin)));
        // Written after the call, or a callee-saved register: not the call's doing.
        let p = path(&[
            (1, 0, "call bpf_ktime_get_ns#5"),
            (2, 0, "r2 = r0"),
            (3, 0, "r3 = *(u32 *)(r2 +0)"),
        ]);
        assert_eq!(clobbered_by(&p, 2), None);
        assert_eq!(clobbered_by(&p, 6), None);
    }

    #[test]
    fn the_call_that_opened_the_region() {
        let p = path(&[
            (1, 0, "call bpf_rcu_read_lock#65401"),
            (2, 0, "call bpf_rcu_read_unlock#65402"),
            // As the kernel prints a kfunc call: an empty state after its `;`.
            (3, 0, "3: (85) call bpf_rcu_read_lock#65401          ;"),
            (4, 0, "r0 = 1"),
            (5, 0, "exit"),
        ]);
        let found = opened_by(&p, "bpf_rcu_read_lock").map(|f| (f.index, f.role));
        assert_eq!(found, Some((3, Role::Origin)));
        assert_eq!(opened_by(&p, "bpf_preempt_disable"), None);
        // Nested, closed twice of three times (the selftests' preempt_lock_missing_3_minus_2):
        // the closes end the two latest regions, the first one is still open.
        let p = path(&[
            (0, 0, "call bpf_preempt_disable#65199"),
            (1, 0, "call bpf_preempt_disable#65199"),
            (2, 0, "call bpf_preempt_disable#65199"),
            (3, 0, "call bpf_preempt_enable#65201"),
            (4, 0, "call bpf_preempt_enable#65201"),
            (5, 0, "r0 = 0"),
            (6, 0, "exit"),
        ]);
        let found = opened_by(&p, "bpf_preempt_disable").map(|f| f.index);
        assert_eq!(found, Some(0));
        // Opened and closed again in a subprogram: the caller's region is the one still open.
        let p = path(&[
            (0, 0, "call bpf_preempt_disable#65199"),
            (1, 0, "call pc+3"),
            (5, 1, "call bpf_preempt_disable#65199"),
            (6, 1, "call bpf_preempt_enable#65201"),
            (7, 1, "exit"),
            (2, 0, "exit"),
        ]);
        assert_eq!(
            opened_by(&p, "bpf_preempt_disable").map(|f| f.index),
            Some(0)
        );
    }

    #[test]
    fn a_callee_skipped_unless_it_returns_the_value() {
        let p = path(&[
            (0, 0, "r6 = r1"),
            (1, 0, "call pc+3"),
            (5, 1, "r0 = 7"),
            (6, 1, "exit"),
            (2, 0, "r1 = r6"),
            (3, 0, "r2 = r0"),
            (4, 0, "r3 = *(u8 *)(r1 +0)"),
        ]);
        // Back to the program's entry: R1 there is the context.
        assert_eq!(
            roles(&walk(&p, 1, Follow::Pointer, false)),
            [(2, Role::Moved), (0, Role::Origin)]
        );
        let p2 = path(&[
            (1, 0, "call pc+3"),
            (5, 1, "r0 = 7"),
            (6, 1, "exit"),
            (3, 0, "r2 = r0"),
            (4, 0, "r3 = *(u8 *)(r2 +0)"),
        ]);
        assert_eq!(
            roles(&walk(&p2, 2, Follow::Pointer, false)),
            [(3, Role::Moved), (6, Role::Returned), (5, Role::Origin)]
        );
    }

    #[test]
    fn instructions_after_a_resumed_path_keep_their_own_text() {
        let mut p = path(&[
            (0, 0, "call bpf_map_lookup_elem#1"),
            (1, 0, "if r0 == 0x0 goto pc+3"),
            (2, 0, "r0 = 1"),
            (3, 0, "exit"),
        ]);
        p.resume(1);
        p.push(5, 0, b"r2 = r0", false, 5);
        p.push(6, 0, b"r3 = *(u8 *)(r2 +0)", false, 6);
        let found = walk(&p, 2, Follow::Pointer, false);
        assert_eq!(roles(&found), [(5, Role::Moved), (0, Role::Origin)]);
        assert_eq!(found[0].insn, "r2 = r0");
        // Each step with the line its instruction was read at on this path.
        assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), [5, 0]);
    }

    #[test]
    fn a_resumed_path_drops_the_branch_not_taken() {
        let mut p = path(&[
            (0, 0, "call bpf_map_lookup_elem#1"),
            (1, 0, "if r0 == 0x0 goto pc+2"),
            (2, 0, "r0 = 1"),
            (3, 0, "exit"),
        ]);
        p.resume(1);
        p.push(4, 0, b"r1 = *(u64 *)(r0 +0)", false, 5);
        assert_eq!(
            roles(&walk(&p, 0, Follow::Pointer, false)),
            [(0, Role::Origin)]
        );
    }
}
