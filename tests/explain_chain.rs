//! The chain `bpflog explain` walks back from a failure, on real programs and the kernel's logs
//! of them (`tests/fixtures/explain`: programs written for it; `tests/fixtures/selftests`: the
//! kernel's selftests, labelled): the instruction that invalidated a pointer, the check that
//! bounded an offset and what it lets through, the branch that skipped a register's write, the
//! offset of refused pointer arithmetic, and a number used as a pointer.

mod common;

use serde_json::Value;
use std::process::Command;

/// `bpflog explain --format json` of `LOGS/STEM.PROG.LEVEL.log` of `OBJ/STEM.o` under fixture
/// directory `dir` (`explain` or `selftests`): the explanation.
fn explain(dir: &str, stem: &str, prog: &str, level: &str) -> Value {
    let at = common::fixtures().join(dir);
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("explain")
        .arg(at.join("obj").join(format!("{stem}.o")))
        .arg(at.join("logs").join(format!("{stem}.{prog}.{level}.log")))
        .args(["--prog", prog, "--format", "json", "--color", "never"])
        .arg("--source-dir")
        .arg(at.join("src"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{stem}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{stem}: {e}: {text}"))
}

/// The chain's steps of `role`: `(insn, source line, instruction)`.
fn steps(e: &Value, role: &str) -> Vec<(u64, u64, String)> {
    (e["chain"].as_array().unwrap().iter())
        .filter(|s| s["role"] == role)
        .map(|s| {
            let text = s["instruction"].as_str().unwrap_or_default().to_owned();
            (
                s["insn"].as_u64().unwrap(),
                s["line"].as_u64().unwrap_or(0),
                text,
            )
        })
        .collect()
}

fn help(e: &Value) -> &str {
    e["help"].as_str().unwrap()
}

/// A socket used after `bpf_sk_release`, a packet pointer after `bpf_skb_pull_data`: the chain
/// names the call that took the pointer away, at the line the source marks `/* origin */`, and
/// the help says so instead of recommending `bpf_probe_read_kernel`.
#[test]
fn the_instruction_that_invalidated_a_pointer() {
    for (stem, prog, call, line) in [
        (
            "bug_skrelease",
            "tc_bug_skrelease",
            "call bpf_sk_release#86",
            22,
        ),
        (
            "bug_pulldata",
            "tc_bug_pulldata",
            "call bpf_skb_pull_data#39",
            22,
        ),
    ] {
        for level in ["l1", "l2"] {
            let e = explain("explain", stem, prog, level);
            assert_eq!(e["class"], "not-a-pointer", "{stem} {level}");
            let invalidated = steps(&e, "invalidated");
            assert_eq!(invalidated.len(), 1, "{stem} {level}: {e}");
            assert_eq!(invalidated[0].2, call, "{stem} {level}");
            assert_eq!(invalidated[0].1, line, "{stem} {level}");
            // The help names the call, at its line.
            let name = call.trim_start_matches("call ").split('#').next().unwrap();
            let at = format!("`{name}` at {stem}.c:{line}");
            assert!(help(&e).contains(&at), "{}", help(&e));
            assert!(!help(&e).contains("probe_read"), "{}", help(&e));
        }
    }
}

/// The kernel's selftests: a global function that may change the packet, `bpf_dynptr_write`
/// through a packet's dynptr, `bpf_spin_unlock` after a push (a reference that does not own its
/// node), a store over the dynptr a slice came from.
#[test]
fn the_kinds_of_invalidation_in_the_selftests() {
    for (stem, prog, by) in [
        (
            "verifier_sock",
            "invalidate_pkt_pointers_by_tail_call",
            "call pc+4",
        ),
        (
            "dynptr_fail",
            "skb_invalid_data_slice3",
            "call bpf_dynptr_write#202",
        ),
        (
            "linked_list_fail",
            "use_after_unlock_push_front",
            "call bpf_spin_unlock#94",
        ),
        (
            "dynptr_fail",
            "xdp_invalid_data_slice1",
            "call bpf_xdp_adjust_head#44",
        ),
    ] {
        let e = explain("selftests", stem, prog, "l2");
        let invalidated = steps(&e, "invalidated");
        let found: Vec<&str> = invalidated.iter().map(|s| s.2.as_str()).collect();
        assert_eq!(found, [by], "{stem}.{prog}: {e}");
    }
}

/// `if (prio > NPRIO)` before `s->packets[prio]`: the narrowing step is that test, and the
/// help says how far it lets the index go and which comparison refuses the last one.
#[test]
fn the_check_that_bounded_an_offset_and_what_it_lets_through() {
    for level in ["l1", "l2"] {
        let e = explain("explain", "bug_offbyone", "tc_bug_offbyone", level);
        let narrowed = steps(&e, "narrowed");
        assert_eq!(narrowed.len(), 1, "{level}: {e}");
        assert_eq!(narrowed[0].1, 31, "{level}");
        assert!(narrowed[0].2.starts_with("if r6 > 0x8"), "{level}: {e}");
        let help = help(&e);
        assert!(help.contains("lets R6 reach 8"), "{help}");
        assert!(help.contains("use `>=`"), "{help}");
    }
}

/// A NULL test of the pointer (`if r0 == 0x0`) is no bound of an offset: the selftests whose
/// chains showed one as the step that narrowed it.
#[test]
fn a_null_test_is_no_bound() {
    for (stem, prog) in [
        (
            "verifier_map_ret_val",
            "access_memory_with_incorrect_alignment_1",
        ),
        ("dynptr_fail", "data_slice_out_of_bounds_map_value"),
        ("dynptr_fail", "data_slice_out_of_bounds_ringbuf"),
    ] {
        for level in ["l1", "l2"] {
            let e = explain("selftests", stem, prog, level);
            assert!(steps(&e, "origin").len() == 1, "{stem}.{prog}: {e}");
            assert_eq!(steps(&e, "narrowed"), [], "{stem}.{prog} {level}");
        }
    }
}

/// `r6 += r1` refused (`math between map_value pointer and register with unbounded min
/// value`), R1 the map value's address: the chain follows R6, the index, back to its load.
#[test]
fn the_offset_of_refused_pointer_arithmetic() {
    for level in ["l1", "l2"] {
        let e = explain("selftests", "iters", "iter_err_unsafe_c_loop", level);
        let origin = steps(&e, "origin");
        assert_eq!(origin.len(), 1, "{level}: {e}");
        assert_eq!(origin[0].2, "r6 = *(u32 *)(r1 +0)", "{level}: {e}");
        assert!(help(&e).contains("R6"), "{}", help(&e));
    }
}

/// R6 written only where `skb->len > 100`, read on every path (`R6 !read_ok`): the origin is
/// the test whose branch skipped the write, and the help names it.
#[test]
fn the_branch_that_skipped_a_register_write() {
    for level in ["l1", "l2"] {
        let e = explain("explain", "bug_branchreg", "tc_bug_branchreg", level);
        assert_eq!(e["class"], "uninitialized-register", "{level}");
        let origin = steps(&e, "origin");
        assert_eq!(origin.len(), 1, "{level}: {e}");
        assert_eq!(origin[0].1, 25, "{level}: {e}");
        assert!(origin[0].2.starts_with("if "), "{level}: {e}");
        let help = help(&e);
        assert!(help.contains("the test at bug_branchreg.c:25"), "{help}");
    }
}

/// A task's address from `bpf_get_current_task` dereferenced: a number used as a pointer, so
/// the help says `bpf_probe_read_kernel`; a timestamp from `bpf_ktime_get_ns` dereferenced (the
/// selftests' `exceptions_assert`) is no address, and the help does not.
#[test]
fn a_number_used_as_a_pointer() {
    for level in ["l1", "l2"] {
        let e = explain("explain", "bug_probe_read", "kprobe_bug_probe_read", level);
        assert!(help(&e).contains("bpf_probe_read_kernel"), "{}", help(&e));
        let e = explain(
            "selftests",
            "exceptions_assert",
            "check_assert_eq_int_max",
            level,
        );
        assert_eq!(e["class"], "not-a-pointer", "{level}");
        assert!(!help(&e).contains("probe_read"), "{}", help(&e));
    }
}

/// A call stack too large or too deep: the chain names, from the object's code (a level-1 log
/// has no instruction), the calls of the chain the kernel stopped at, outermost first, and in
/// each function the instruction that takes its deepest stack address; an asynchronous
/// callback's chain starts at the callback (it is not a frame of the program registering it);
/// a recursion ends at the recursive call.
#[test]
fn the_frames_of_a_call_stack_too_large() {
    /// Fixtures, object, program, the calls' lines, the deepest stack instructions' lines.
    type Case<'a> = (&'a str, &'a str, &'a str, &'a [u64], &'a [u64]);
    let cases: [Case<'_>; 4] = [
        (
            "selftests",
            "async_stack_depth",
            "async_call_root_check",
            &[29],
            &[28, 21],
        ),
        (
            "selftests",
            "async_stack_depth",
            "pseudo_call_check",
            &[43],
            &[39, 21],
        ),
        (
            "explain",
            "bug_stack2",
            "tp_bug_stack2",
            &[41, 35],
            &[31, 18],
        ),
        (
            "selftests",
            "verifier_loops1",
            "bounded_recursion",
            &[145, 155],
            &[],
        ),
    ];
    for (dir, stem, prog, calls, deepest) in cases {
        for level in ["l1", "l2"] {
            let e = explain(dir, stem, prog, level);
            assert_eq!(e["class"], "stack-size", "{prog} {level}");
            let lines = |role| steps(&e, role).iter().map(|s| s.1).collect::<Vec<_>>();
            assert_eq!(lines("called"), calls, "{prog} {level}: {:#}", e["chain"]);
            assert_eq!(lines("origin"), deepest, "{prog} {level}: {:#}", e["chain"]);
            for (_, _, text) in steps(&e, "called") {
                assert!(text.starts_with("call pc"), "{prog}: {text}");
            }
            for (_, _, text) in steps(&e, "origin") {
                assert!(
                    text.contains("r10 -") || text.contains("+= -"),
                    "{prog}: {text}"
                );
            }
        }
    }
    let e = explain("selftests", "verifier_loops1", "bounded_recursion", "l1");
    let last = e["chain"].as_array().unwrap().iter().rev().nth(1).unwrap();
    assert!(
        last["note"].as_str().unwrap().contains("recursion"),
        "{last}"
    );
}

/// A collection's kfunc called after the path released the lock that guards it: the chain's
/// origin is the `bpf_spin_unlock` that released it.
#[test]
fn the_unlock_before_a_call_that_needs_the_lock() {
    let e = explain("selftests", "rbtree_fail", "rbtree_api_nolock_remove", "l2");
    assert_eq!(e["class"], "spin-lock-rule");
    let origin = steps(&e, "origin");
    assert_eq!(origin.len(), 1, "{:#}", e["chain"]);
    let (_, line, text) = &origin[0];
    assert_eq!(*line, 57, "{:#}", e["chain"]);
    assert!(text.contains("bpf_spin_unlock"), "{text}");
    let note = e["chain"][0]["note"].as_str().unwrap_or_default();
    assert!(note.contains("released"), "{note}");
}

/// A node used after a collection took it: the push that handed the object to the list (a
/// second push of it fails), the unlock that ended the non-owning reference an add left (a
/// remove after it fails).
#[test]
fn the_step_that_took_a_node_away() {
    for (stem, prog, call, line) in [
        (
            "linked_list_fail",
            "double_push_back",
            "bpf_list_push_back_impl",
            400,
        ),
        (
            "rbtree_fail",
            "rbtree_api_add_release_unlock_escape",
            "bpf_spin_unlock",
            192,
        ),
    ] {
        for level in ["l1", "l2"] {
            let e = explain("selftests", stem, prog, level);
            assert_eq!(e["class"], "helper-argument-type", "{prog} {level}");
            let invalidated = steps(&e, "invalidated");
            assert_eq!(invalidated.len(), 1, "{prog} {level}: {:#}", e["chain"]);
            let (_, at, text) = &invalidated[0];
            assert_eq!(*at, line, "{prog} {level}");
            assert!(text.contains(call), "{prog} {level}: {text}");
        }
    }
    let e = explain(
        "selftests",
        "rbtree_fail",
        "rbtree_api_add_release_unlock_escape",
        "l2",
    );
    assert!(help(&e).contains("`bpf_spin_unlock`"), "{}", help(&e));
}

/// A dynptr passed after it was taken away: the submit through a clone that ended the record
/// every clone shares, the store that wrote over its own bytes.
#[test]
fn the_step_that_took_a_dynptr_away() {
    for (prog, insn, text) in [
        ("clone_invalidate2", 17, "call bpf_ringbuf_submit_dynptr"),
        ("invalid_write1", 22, "*(u8 *)(r10 -16)"),
    ] {
        for level in ["l1", "l2"] {
            let e = explain("selftests", "dynptr_fail", prog, level);
            assert_eq!(e["class"], "helper-argument-type", "{prog} {level}");
            let invalidated = steps(&e, "invalidated");
            assert_eq!(invalidated.len(), 1, "{prog} {level}: {:#}", e["chain"]);
            assert_eq!(invalidated[0].0, insn, "{prog} {level}");
            assert!(
                invalidated[0].2.contains(text),
                "{prog}: {:?}",
                invalidated[0]
            );
        }
    }
}
