//! Provenance: where the value the verifier rejected came from, walked back along the path that
//! failed.
//!
//! The verifier explores paths depth first: a `from X to Y` line resumes a state pushed at
//! branch X of a path whose instructions up to X are still the latest lines printed. So the
//! failing path is the instruction lines kept in order, cut back to the last X each time a path
//! resumes ([`Path::resume`]). Walking it backwards from the failure ([`walk()`]) follows the
//! offending register through moves (`r1 = r0`), arithmetic, spills and fills of stack slots
//! (`*(u64 *)(r10 -8) = r1`, `r1 = *(u64 *)(r10 -8)`), arguments of BPF-to-BPF calls (R1-R5 at
//! `call pc+N`) and results of their `exit` (R0), to its origin: a helper's result, a load from
//! memory, a constant, a map. For a bound, the conditional jump that last tested it is the step
//! that narrowed it, with the comparison and the branch the path took ([`Narrowing`](facts::Narrowing)); for a
//! pointer the states show the register held and lost without a write, the instruction that took
//! it away ([`Invalidation`]). This is the use-def walk bpfvv has a person do by clicking, on the
//! text of `print_bpf_insn` (kernel/bpf/disasm.c) decoded by [`PrintedInsn`](bpflog_log::PrintedInsn).
//!
//! The path keeps each line's bytes while the log is read ([`path`], what it keeps of a line in
//! [`kept`]); it is decoded once, at the
//! end of a rejected log ([`decoded`]), for the walk ([`walk`](mod@walk)) and the searches beside it
//! ([`search`]). What a step finds is data ([`facts`]), which the notes and the help are made
//! from.

mod decoded;
mod facts;
mod kept;
mod path;
mod search;
mod walk;

pub(crate) use decoded::{Decoded, HeldValue, Item, PathInsn};
#[cfg(test)]
pub(crate) use facts::{Bound, Cmp, Via};
pub(crate) use facts::{Fact, Invalidation};
pub(crate) use path::Path;
pub(crate) use search::{
    clobbered_by, dynptr_lost, held_lock, opened_by, skipped_write, unresolved_call,
};
pub(crate) use walk::{Start, offset_operand, walk};

/// At most this many steps make a chain.
const MAX_STEPS: usize = 32;

/// What a step of the chain did with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
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
    /// Took away the pointer the register held, without writing the register (a release, a
    /// change of the packet's data, a write to a dynptr's slot).
    Invalidated,
    /// A BPF-to-BPF call of the call chain whose stack is too large or too deep.
    Called,
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
            Role::Invalidated => "invalidated",
            Role::Called => "called",
            Role::Failed => "failed",
        }
    }
}

/// A step found walking back: the instruction, its role, and what it found ([`Fact`]), with
/// the note the outputs print for it (`bpf_map_lookup_elem may return NULL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FoundStep {
    pub(crate) index: u64,
    /// The line of the path's instruction, as [`PathInsn::read_at`].
    pub(crate) line: u64,
    pub(crate) role: Role,
    pub(crate) insn: String,
    pub(crate) note: Option<String>,
    pub(crate) fact: Option<Fact>,
}

impl FoundStep {
    /// A step at `step` of the path.
    pub(crate) fn new(step: &PathInsn<'_>, role: Role, fact: Option<Fact>) -> FoundStep {
        FoundStep {
            index: step.index,
            line: step.read_at,
            role,
            insn: step.text_string(),
            note: fact.as_ref().map(Fact::note),
            fact,
        }
    }
}

/// How to follow a value through arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// The pointer: `r1 += r2` keeps following r1.
    Pointer,
    /// The offset added to a pointer: `r0 += r1` follows r1 (of the two, the number:
    /// [`offset_operand`]), and the jumps that bound it count.
    Offset,
    /// A packet pointer: followed as [`Follow::Pointer`], and the last comparison with the
    /// packet's end on the path is the step that bounded it.
    Packet,
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
            let explained = super::super::explain_bare(&program, &log[..]).unwrap();
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

    /// The walk of `reg` back from the path's last instruction.
    fn walk(path: &Path, reg: u8, follow: Follow, global: bool) -> Vec<FoundStep> {
        let start = Start {
            reg,
            follow,
            global,
            held: None,
        };
        super::walk(&path.decode(), start)
    }

    /// A path of the kernel's own lines (`N: (xx) text ; state`), all in frame 0.
    fn lines(lines: &[&str]) -> Path {
        let mut path = Path::default();
        for (k, line) in (1..).zip(lines) {
            let index = line.split(':').next().unwrap().parse().unwrap();
            path.push(index, 0, line.as_bytes(), false, k);
        }
        path
    }

    /// The walk of `reg`, which the error says holds `held` at the failure.
    fn walk_held(path: &Path, reg: u8, follow: Follow, held: HeldValue) -> Vec<FoundStep> {
        let start = Start {
            reg,
            follow,
            global: false,
            held: Some(held),
        };
        super::walk(&path.decode(), start)
    }

    fn roles(found: &[FoundStep]) -> Vec<(u64, Role)> {
        found.iter().map(|f| (f.index, f.role)).collect()
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
            Some(
                "the last test of R1, a copy of R6 (instruction 2): on this path (not taken) R1 <= 8"
            )
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
            Some("the last test of R1, linked to R6 (id=1): on this path (not taken) R1 <= 8")
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
        let found = clobbered_by(&p.decode(), 2).map(|f| (f.index, f.role));
        assert_eq!(found, Some((1, Role::Origin)));
        // Written after the call, or a callee-saved register: not the call's doing.
        let p = path(&[
            (1, 0, "call bpf_ktime_get_ns#5"),
            (2, 0, "r2 = r0"),
            (3, 0, "r3 = *(u32 *)(r2 +0)"),
        ]);
        assert_eq!(clobbered_by(&p.decode(), 2), None);
        assert_eq!(clobbered_by(&p.decode(), 6), None);
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
        let found = opened_by(&p.decode(), "bpf_rcu_read_lock").map(|f| (f.index, f.role));
        assert_eq!(found, Some((3, Role::Origin)));
        assert_eq!(opened_by(&p.decode(), "bpf_preempt_disable"), None);
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
        let found = opened_by(&p.decode(), "bpf_preempt_disable").map(|f| f.index);
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
            opened_by(&p.decode(), "bpf_preempt_disable").map(|f| f.index),
            Some(0)
        );
    }

    /// A second `bpf_spin_lock` while the first is held (the selftests'
    /// verifier_spin_lock.spin_lock_test8_double_lock): the lock held is the first, not the
    /// failing call.
    #[test]
    fn the_failing_call_opened_nothing() {
        let p = lines(&[
            "12: (85) call bpf_spin_lock#93        ; refs=1",
            "13: (bf) r1 = r6                      ; R1=map_value(id=1,map=map_spin_lock,ks=4,vs=8) R6=map_value(id=1,map=map_spin_lock,ks=4,vs=8) refs=1",
            "14: (07) r1 += 4                      ; R1=map_value(id=1,map=map_spin_lock,ks=4,vs=8,off=4) refs=1",
            "15: (85) call bpf_spin_lock#93",
        ]);
        let found = opened_by(&p.decode(), "bpf_spin_lock").map(|f| f.index);
        assert_eq!(found, Some(12));
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

    /// A socket read after `bpf_sk_release` (tests/fixtures/explain bug_skrelease, level 2):
    /// R7 was `sock(ref_obj_id=2)` at insn 18 and is written no more; the release at 19 took
    /// the pointer away.
    #[test]
    fn a_release_invalidates_the_pointer() {
        let p = lines(&[
            "15: (85) call bpf_sk_lookup_tcp#84",
            "16: (15) if r0 == 0x0 goto pc+7       ; R0=sock(ref_obj_id=2) refs=2",
            "17: (bf) r1 = r0                      ; R0=sock(ref_obj_id=2) R1=sock(ref_obj_id=2) refs=2",
            "18: (bf) r7 = r0                      ; R0=sock(ref_obj_id=2) R7=sock(ref_obj_id=2) refs=2",
            "19: (85) call bpf_sk_release#86       ; R0=scalar()",
            "20: (61) r1 = *(u32 *)(r7 +72)",
        ]);
        let found = walk_held(&p, 7, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(
            roles(&found),
            [
                (19, Role::Invalidated),
                (18, Role::Moved),
                (15, Role::Origin)
            ]
        );
        assert_eq!(
            found[0].fact,
            Some(Fact::Invalidated(Invalidation::Release(
                "bpf_sk_release".into()
            )))
        );
        // Without states (level 1), the release's R1 and R7 both come from insn 15's result.
        let bare = [
            "15: (85) call bpf_sk_lookup_tcp#84",
            "16: (15) if r0 == 0x0 goto pc+7",
            "17: (bf) r1 = r0",
            "18: (bf) r7 = r0",
            "19: (85) call bpf_sk_release#86",
            "20: (61) r1 = *(u32 *)(r7 +72)",
        ];
        let found = walk_held(&lines(&bare), 7, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(found[0].role, Role::Invalidated);
        // R1 from elsewhere: not the release of this pointer.
        let mut other = bare;
        other[2] = "17: (bf) r1 = r6";
        let found = walk_held(&lines(&other), 7, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(roles(&found), [(18, Role::Moved), (15, Role::Origin)]);
    }

    /// A packet pointer read after `bpf_skb_pull_data` (bug_pulldata, level 2), and after a
    /// global function's call (the selftests' verifier_sock.invalidate_pkt_pointers_by_tail_call:
    /// the path goes on in the caller's frame after `call pc+4`).
    #[test]
    fn a_change_of_the_packet_invalidates_its_pointers() {
        let p = lines(&[
            "2: (61) r6 = *(u32 *)(r1 +76)         ; R1=ctx() R6=pkt(r=0)",
            "3: (bf) r3 = r6                       ; R3=pkt(r=0) R6=pkt(r=0)",
            "4: (07) r3 += 14                      ; R3=pkt(off=14,r=0)",
            "5: (2d) if r3 > r2 goto pc+12         ; R2=pkt_end() R3=pkt(off=14,r=14)",
            "6: (b7) r2 = 64                       ; R2=64",
            "7: (85) call bpf_skb_pull_data#39     ; R0=scalar()",
            "8: (bf) r1 = r0                       ; R0=scalar(id=1) R1=scalar(id=1)",
            "11: (71) r1 = *(u8 *)(r6 +12)",
        ]);
        let found = walk_held(&p, 6, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(roles(&found), [(7, Role::Invalidated), (2, Role::Origin)]);
        assert_eq!(
            found[0].fact,
            Some(Fact::Invalidated(Invalidation::PacketChange(
                "bpf_skb_pull_data".into()
            )))
        );
        // A pointer into the packet, not a number: no `bpf_probe_read_kernel`.
        assert_eq!(found[1].fact, Some(Fact::Loaded));
        let p = lines(&[
            "2: (61) r6 = *(u32 *)(r1 +76)         ; R1=ctx() R6=pkt(r=0)",
            "3: (bf) r3 = r6                       ; R3=pkt(r=0) R6=pkt(r=0)",
            "6: (85) call pc+4",
            "7: (b4) w1 = 42                       ; R1=42",
            "8: (63) *(u32 *)(r6 +0) = r1",
        ]);
        let found = walk_held(&p, 6, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(
            found[0].fact,
            Some(Fact::Invalidated(Invalidation::GlobalFunction))
        );
    }

    /// A dynptr's slice read after a store over the dynptr's slot (the selftests'
    /// dynptr_fail.dynptr_invalidate_slice_failure): the slot is known from the call that took
    /// the slice (R1=fp-24).
    #[test]
    fn a_write_over_the_dynptr_invalidates_its_slice() {
        let p = lines(&[
            "46: (bf) r1 = r10                     ; R1=fp0 R10=fp0",
            "47: (07) r1 += -24                    ; R1=fp-24",
            "50: (b4) w3 = 1                       ; R3=1",
            "51: (85) call bpf_dynptr_data#203",
            "52: (bf) r7 = r0                      ; R0=mem_or_null(id=3,sz=1) R7=mem_or_null(id=3,sz=1)",
            "53: (15) if r7 == 0x0 goto pc+9       ; R7=mem(sz=1)",
            "60: (b4) w1 = 0                       ; R1=0",
            "61: (73) *(u8 *)(r10 -24) = r1        ; R1=0 R10=fp0 fp-24=???????0",
            "62: (71) r6 = *(u8 *)(r7 +0)",
        ]);
        let found = walk_held(&p, 7, Follow::Pointer, HeldValue::Scalar);
        assert_eq!(found[0].index, 61);
        assert_eq!(
            found[0].fact,
            Some(Fact::Invalidated(Invalidation::SlotOverwritten {
                slot: -24,
                by: None
            }))
        );
    }

    /// `r6 += r1` refused, R1 the map value's address (the selftests'
    /// iters.iter_err_unsafe_c_loop): the offset is R6, by the states and without them.
    #[test]
    fn the_offset_of_pointer_arithmetic() {
        let with_states = [
            "2: (61) r6 = *(u32 *)(r1 +0)          ; R1=map_value(map=iters.bss,ks=4,vs=1304) R6=scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))",
            "10: (67) r6 <<= 2                     ; R6=scalar(smax=0x7ffffffffffffffc) refs=1",
            "11: (18) r1 = 0xffffc9000605c000      ; R1=map_value(map=.data.small_arr,ks=4,vs=64) refs=1",
            "13: (0f) r6 += r1",
        ];
        let without: Vec<String> = (with_states.iter())
            .map(|l| l.split(" ; ").next().unwrap().trim_end().to_owned())
            .collect();
        let without: Vec<&str> = without.iter().map(String::as_str).collect();
        for l in [&with_states[..], &without[..]] {
            let path = lines(l);
            assert_eq!(offset_operand(&path.decode(), 3, 6, 1), 6);
        }
        let found = walk(&lines(&with_states), 6, Follow::Offset, false);
        assert_eq!(roles(&found), [(10, Role::Computed), (2, Role::Origin)]);
        assert_eq!(found[1].fact, Some(Fact::LoadedAsNumber));
    }

    /// The bound's comparison and the branch the path took; a NULL test is none.
    #[test]
    fn the_narrowing_jump_its_comparison_and_branch() {
        // tests/fixtures/explain bug_offbyone, level 2: `if (prio > NPRIO)` falls through.
        let p = lines(&[
            "0: (61) r6 = *(u32 *)(r1 +32)         ; R1=ctx() R6=scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))",
            "3: (25) if r6 > 0x8 goto pc+11        ; R6=scalar(smin=smin32=0,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))",
            "4: (18) r1 = 0xffff888100a8b000       ; R1=map_ptr(map=stats,ks=4,vs=72)",
            "9: (15) if r0 == 0x0 goto pc+5        ; R0=map_value(map=stats,ks=4,vs=72)",
            "10: (67) r6 <<= 3                     ; R6=scalar(smin=smin32=0,smax=umax=smax32=umax32=64,var_off=(0x0; 0x78))",
            "11: (0f) r0 += r6                     ; R0=map_value(map=stats,ks=4,vs=72,smin=smin32=0,smax=umax=smax32=umax32=64,var_off=(0x0; 0x78)) R6=scalar(smin=smin32=0,smax=umax=smax32=umax32=64,var_off=(0x0; 0x78))",
            "12: (79) r1 = *(u64 *)(r0 +0)",
        ]);
        let found = walk(&p, 0, Follow::Offset, false);
        assert_eq!(
            roles(&found),
            [
                (11, Role::Computed),
                (10, Role::Computed),
                (3, Role::Narrowed),
                (0, Role::Origin)
            ]
        );
        let Some(Fact::Narrowed(n)) = &found[2].fact else {
            panic!("{found:?}");
        };
        assert_eq!(
            (n.op, n.bound, n.taken, n.max()),
            (Cmp::Gt, Bound::Imm(8), false, Some(8))
        );
        // The pointer followed: the NULL test of R0 at 9 is no bound.
        let found = walk(&p, 0, Follow::Offset, false);
        assert!(found.iter().all(|f| f.index != 9));
        let p = lines(&[
            "6: (85) call bpf_map_lookup_elem#1",
            "7: (15) if r0 == 0x0 goto pc+2        ; R0=map_value(map=m,ks=4,vs=8)",
            "8: (7a) *(u64 *)(r0 +4) = 1",
        ]);
        assert_eq!(
            roles(&walk(&p, 0, Follow::Offset, false)),
            [(6, Role::Origin)]
        );
    }

    /// A test made while the value sits in a stack slot: the register tested shares the
    /// slot's `id=` (the spill gave both id=1), so it bounds the value filled back later.
    #[test]
    fn a_test_linked_to_a_spilled_value_bounds_it() {
        let p = lines(&[
            "1: (61) r6 = *(u32 *)(r7 +0)          ; R6_w=scalar() R7=map_value(map=m,ks=4,vs=8)",
            "2: (7b) *(u64 *)(r10 -8) = r6         ; R6_w=scalar(id=1) fp-8_w=scalar(id=1)",
            "3: (25) if r6 > 0x8 goto pc+5         ; R6_w=scalar(id=1,smin=smin32=0,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))",
            "4: (79) r1 = *(u64 *)(r10 -8)         ; R1_w=scalar(id=1,smin=smin32=0,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))",
            "5: (0f) r0 += r1                      ; R0_w=map_value(map=m,ks=4,vs=8) R1_w=scalar(id=1)",
            "6: (61) r0 = *(u32 *)(r0 +0)",
        ]);
        let found = walk(&p, 0, Follow::Offset, false);
        assert_eq!(
            roles(&found),
            [
                (5, Role::Computed),
                (4, Role::Filled),
                (3, Role::Narrowed),
                (2, Role::Spilled),
                (1, Role::Origin)
            ]
        );
        let Some(Fact::Narrowed(n)) = &found[2].fact else {
            panic!("{found:?}");
        };
        assert_eq!((n.tested, n.followed, n.via), (6, None, Via::Linked(1)));
    }

    /// A test of a copy whose id the states print with an offset (`id=1+2`: the selftests'
    /// verifier_iterating_callbacks.check_add_const_3regs) bounds the original.
    #[test]
    fn a_test_of_a_copy_with_an_offset_bounds_the_original() {
        let p = lines(&[
            "4: (85) call bpf_ktime_get_ns#5       ; R0=scalar()",
            "6: (bf) r2 = r0                       ; R0=scalar(id=1) R2=scalar(id=1)",
            "8: (07) r2 += 2                       ; R2=scalar(id=1+2)",
            "9: (25) if r0 > 0x8 goto pc+4         ; R0=scalar(id=1,smin=smin32=0,smax=umax=smax32=umax32=8,var_off=(0x0; 0xf))",
            "11: (0f) r7 += r2                     ; R2=scalar(id=1+2,smin=umin=smin32=umin32=2,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf)) R7=map_value(map=.bss,ks=4,vs=10,smin=umin=smin32=umin32=2,smax=umax=smax32=umax32=10,var_off=(0x0; 0xf))",
            "13: (73) *(u8 *)(r7 +0) = r0",
        ]);
        let found = walk(&p, 7, Follow::Offset, false);
        assert_eq!(
            roles(&found),
            [
                (11, Role::Computed),
                (9, Role::Narrowed),
                (8, Role::Computed),
                (6, Role::Moved),
                (4, Role::Origin)
            ]
        );
    }
}
