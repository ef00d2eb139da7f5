//! `bpflog explain` on the real rejected fixture logs: the class, the location and the chain
//! of each, checked by hand against the log and the C source (`tests/fixtures/src`), in the
//! three formats; an accepted log; a log without its `;` lines. Snapshots live in
//! `snapshots/explain__*.snap`.

mod common;

use common::{fixtures, strip_annotations};
use serde_json::Value;
use std::ffi::OsString;
use std::process::{Command, Output};

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(format!("explain__{name}"), text);
    });
}

/// `bpflog explain OBJ LOG --format FORMAT`, with the fixtures' sources.
fn explain(object: &str, log: &str, format: &str) -> Output {
    explain_in(&fixtures(), object, log, format)
}

/// [`explain`] of the fixtures under `f` (`obj/`, `logs/`, `src/`).
fn explain_in(f: &std::path::Path, object: &str, log: &str, format: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("explain")
        .arg(f.join("obj").join(object))
        .arg(f.join("logs").join(log))
        .args(["--format", format, "--color", "never", "--source-dir"])
        .arg(f.join("src"))
        .output()
        .unwrap()
}

/// The one JSON object `explain --format json` writes for a log.
fn json(object: &str, log: &str) -> Value {
    json_in(&fixtures(), object, log)
}

/// [`json`] of the fixtures under `f`.
fn json_in(f: &std::path::Path, object: &str, log: &str) -> Value {
    let out = explain_in(f, object, log, "json");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    serde_json::from_str(lines[0]).unwrap()
}

/// `(insn, line, role)` of each step of the chain.
fn chain(v: &Value) -> Vec<(u64, u64, String)> {
    v["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["insn"].as_u64().unwrap(),
                s["line"].as_u64().unwrap(),
                s["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn roles(steps: &[(u64, u64, &str)]) -> Vec<(u64, u64, String)> {
    steps
        .iter()
        .map(|&(i, l, r)| (i, l, r.to_owned()))
        .collect()
}

#[test]
fn a_map_lookup_passed_to_a_subprogram_unchecked() {
    // reject_subprog.c:79 `fv = bpf_map_lookup_elem(&flows, &key);`, 80 `update_flow(fv, len)`,
    // 54 `fv->bytes += len;` in update_flow: R1 is map_value_or_null.
    for level in ["l1", "l2"] {
        let v = json(
            "reject_subprog.o",
            &format!("reject_subprog.xdp_reject_subprog.{level}.log"),
        );
        assert_eq!(v["class"], "nullable-dereference");
        assert_eq!(v["error"], "R1 invalid mem access 'map_value_or_null'");
        assert_eq!(v["location"]["insn"], 38);
        assert_eq!(v["location"]["line"], 54);
        assert_eq!(v["location"]["column"], 12);
        assert_eq!(
            chain(&v),
            roles(&[
                (24, 79, "origin"),
                (25, 80, "moved"),
                (27, 80, "passed"),
                (38, 54, "failed")
            ]),
            "{level}"
        );
        assert_eq!(
            v["chain"][0]["note"],
            "bpf_map_lookup_elem returns it, and may return NULL"
        );
        let help = v["help"].as_str().unwrap();
        assert!(
            help.contains("the value of `call bpf_map_lookup_elem#1` (reject_subprog.c:79: `fv = bpf_map_lookup_elem(&flows, &key);`)"),
            "{help}"
        );
    }
}

#[test]
fn a_log_without_its_source_lines_explains_the_same() {
    let log = "reject_subprog.xdp_reject_subprog.l1.log";
    let kernel = std::fs::read(fixtures().join("logs").join(log)).unwrap();
    let stripped = strip_annotations(&kernel);
    assert_ne!(stripped, kernel);
    let f = fixtures();
    let out = common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .arg("explain")
            .arg(f.join("obj/reject_subprog.o"))
            .args(["-", "--format", "json"]),
        &stripped,
    );
    assert!(out.status.success());
    let stripped: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stripped, json("reject_subprog.o", log));
}

#[test]
fn a_global_functions_argument_may_be_null() {
    // reject_global.c:35 `sum_counters(struct counters *c, ...)`, verified on its own; 38
    // `total = c->rx + c->tx;` dereferences c (R3 = r1 at the function's first instruction).
    let v = json("reject_global.o", "reject_global.xdp_reject_global.l1.log");
    assert_eq!(v["class"], "nullable-dereference");
    assert_eq!(chain(&v), roles(&[(28, 35, "origin"), (29, 38, "failed")]));
    assert!(
        v["chain"][0]["note"]
            .as_str()
            .unwrap()
            .starts_with("argument 1 of the global function")
    );
}

#[test]
fn a_callback_index_used_unbounded_on_the_stack() {
    // reject_callback.c:48 `bpf_loop(NR_BUCKETS, fill_cb, &c, 0)`; 37 `c->buckets[idx] = ...`
    // in fill_cb: the index is the callback's argument 1, shifted into an offset.
    let v = json(
        "reject_callback.o",
        "reject_callback.xdp_reject_callback.l1.log",
    );
    assert_eq!(v["class"], "stack-out-of-range");
    assert_eq!(v["location"]["insn"], 59);
    assert_eq!(
        chain(&v),
        roles(&[
            (18, 48, "origin"),
            (54, 37, "computed"),
            (55, 37, "computed"),
            (57, 37, "computed"),
            (58, 37, "computed"),
            (59, 37, "failed")
        ])
    );
    assert_eq!(
        v["chain"][0]["note"],
        "bpf_loop passes it to the callback as argument 1"
    );
}

#[test]
fn the_other_rejections_get_their_class_and_line() {
    for (object, log, class, insn, line) in [
        (
            "reject_entry.o",
            "reject_entry.xdp_reject_entry.l1.log",
            "packet-out-of-range",
            30,
            48,
        ),
        (
            "reject_nested.o",
            "reject_nested.xdp_reject_nested.l2.log",
            "packet-out-of-range",
            24,
            37,
        ),
        (
            "reject_dropped.o",
            "reject_dropped.xdp_reject_dropped.l1.log",
            "invalid-context-access",
            8,
            27,
        ),
        (
            "core_fail.o",
            "core_fail.raw_tp_reject_core.l1.log",
            "core-relocation-failed",
            11,
            38,
        ),
    ] {
        let v = json(object, log);
        assert_eq!(v["class"], class, "{log}");
        assert_eq!(v["location"]["insn"], insn, "{log}");
        assert_eq!(v["location"]["line"], line, "{log}");
        let steps = chain(&v);
        assert_eq!(
            steps.last().unwrap(),
            &(insn, line, "failed".to_owned()),
            "{log}"
        );
    }
}

#[test]
fn an_accepted_log_says_so() {
    let out = explain("tc_prog.o", "tc_prog.tc_count.l1.log", "text");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with("no rejection: nothing to explain\n"),
        "{text}"
    );
    let out = explain("tc_prog.o", "tc_prog.tc_count.l1.log", "json");
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
}

#[test]
fn the_three_formats() {
    for format in ["text", "json", "gcc"] {
        let out = explain(
            "reject_subprog.o",
            "reject_subprog.xdp_reject_subprog.l1.log",
            format,
        );
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let text = text.replace(&fixtures().display().to_string(), "<fixtures>");
        snapshot(&format!("reject_subprog_{format}"), &text);
    }
}

#[test]
fn a_bad_object_is_one_line_naming_it() {
    let f = fixtures();
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("explain")
        .arg(f.join("logs/reject_subprog.xdp_reject_subprog.l1.log"))
        .arg(f.join("logs/reject_subprog.xdp_reject_subprog.l1.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("reject_subprog.xdp_reject_subprog.l1.log"),
        "{err}"
    );
}

#[test]
fn one_object_per_rejected_log_of_a_wrapped_file() {
    // libbpf's wrapping around the level-1 and the level-2 log of the same rejection.
    let file = common::wrapped_reject_subprog_logs();
    let out = common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .arg("explain")
            .arg(fixtures().join("obj/reject_subprog.o"))
            .args(["-", "--format", "json"]),
        &file,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let objects: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{text}");
    let alone = json(
        "reject_subprog.o",
        "reject_subprog.xdp_reject_subprog.l1.log",
    );
    assert_eq!(objects[0], alone);
    assert_eq!(objects[1], alone);
}

#[test]
fn a_packet_read_past_the_last_check_against_its_end() {
    // reject_entry.c:33 `if ((void *)(eth + 1) > nh->end)` proves 14 bytes (r=14); the path
    // taken for IPv6 then reads at offset 20 (48:6, inlined): no check covers it.
    for level in ["l1", "l2"] {
        let v = json(
            "reject_entry.o",
            &format!("reject_entry.xdp_reject_entry.{level}.log"),
        );
        assert_eq!(
            chain(&v),
            roles(&[
                (2, 91, "origin"),
                (5, 33, "narrowed"),
                (29, 48, "computed"),
                (30, 48, "failed")
            ]),
            "{level}"
        );
        assert_eq!(v["chain"][1]["instruction"], "if r2 > r3 goto pc+35");
        let help = v["help"].as_str().unwrap();
        // The bytes read past the bytes checked, from the error's `off=20 size=1 ... r=14`.
        assert!(
            help.starts_with("the read at reject_entry.c:48 (1 byte at offset 20 from the packet pointer's base) reaches byte 21, but the checks on the path prove only 14 bytes before `data_end` (the last: the test `if r2 > r3 goto pc+35` (reject_entry.c:33: `if ((void *)(eth + 1) > nh->end)`))"),
            "{help}"
        );
    }
    // reject_nested.c:60 `if ((void *)(iph + 1) > end)` proves 34 bytes; 37 `b = *q;` reads
    // byte 34 with no check (inlined three calls deep).
    let v = json("reject_nested.o", "reject_nested.xdp_reject_nested.l1.log");
    assert_eq!(
        chain(&v),
        roles(&[
            (2, 73, "origin"),
            (13, 60, "moved"),
            (14, 60, "computed"),
            (15, 60, "narrowed"),
            (24, 37, "failed")
        ])
    );
}

/// The fixtures made for `explain` by `tests/fixtures/explain/make.sh`.
fn own() -> std::path::PathBuf {
    fixtures().join("explain")
}

#[test]
fn an_index_bounded_one_too_loosely() {
    // reject_bound.c:35 `idx = p[0];`, `if (idx > 8)` (insn 14; the compiler gives it line 37),
    // 41 `t->row[idx] += 1;` reads row[8] of 8: off=32 of value_size=32.
    for level in ["l1", "l2"] {
        let v = json_in(
            &own(),
            "reject_bound.o",
            &format!("reject_bound.xdp_reject_bound.{level}.log"),
        );
        assert_eq!(v["class"], "map-value-out-of-range");
        assert_eq!(
            v["error"],
            "invalid access to map value, value_size=32 off=32 size=4"
        );
        assert_eq!(
            chain(&v),
            roles(&[
                (7, 35, "origin"),
                (14, 37, "narrowed"),
                (15, 41, "computed"),
                (16, 41, "computed"),
                (17, 41, "failed")
            ]),
            "{level}"
        );
        assert_eq!(v["chain"][1]["instruction"], "if r6 > 0x8 goto pc+5");
        assert!(
            v["help"]
                .as_str()
                .unwrap()
                .contains("the test `if r6 > 0x8 goto pc+5`")
        );
    }
}

#[test]
fn a_ring_buffer_record_not_submitted_on_an_early_return() {
    // reject_ref.c:25 `rec = bpf_ringbuf_reserve(...)` (alloc_insn=6); the return at 28 for
    // short packets leaves it held: the verifier stops at that path's exit (33).
    for level in ["l1", "l2"] {
        let v = json_in(
            &own(),
            "reject_ref.o",
            &format!("reject_ref.xdp_reject_ref.{level}.log"),
        );
        assert_eq!(v["class"], "unreleased-reference");
        assert_eq!(
            chain(&v),
            roles(&[(6, 25, "origin"), (17, 33, "failed")]),
            "{level}"
        );
        assert_eq!(v["chain"][0]["instruction"], "call bpf_ringbuf_reserve#131");
        let help = v["help"].as_str().unwrap();
        assert!(
            help.contains(
                "(reject_ref.c:25: `rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);`)"
            ),
            "{help}"
        );
    }
}

#[test]
fn own_fixtures_in_three_formats() {
    for (object, log) in [
        ("reject_bound.o", "reject_bound.xdp_reject_bound.l1.log"),
        ("reject_ref.o", "reject_ref.xdp_reject_ref.l1.log"),
        (
            "reject_retval.o",
            "reject_retval.cgroup_reject_retval.l1.log",
        ),
        ("reject_helper.o", "reject_helper.xdp_reject_helper.l1.log"),
    ] {
        for format in ["text", "json", "gcc"] {
            let out = explain_in(&own(), object, log, format);
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let name = object.trim_end_matches(".o");
            snapshot(&format!("{name}_{format}"), &text);
        }
    }
}

#[test]
fn a_return_value_the_hook_does_not_allow() {
    // reject_retval.c:16 `return 2;` from a cgroup_skb program (0 or 1 allowed); the compiler
    // sets r0 = 2 at insn 1, under line 15's record, before the test of `skb->len`.
    for level in ["l1", "l2"] {
        let v = json_in(
            &own(),
            "reject_retval.o",
            &format!("reject_retval.cgroup_reject_retval.{level}.log"),
        );
        assert_eq!(v["class"], "bad-return-value");
        assert_eq!(
            chain(&v),
            roles(&[(1, 15, "origin"), (4, 18, "failed")]),
            "{level}"
        );
        assert_eq!(v["chain"][0]["instruction"], "r0 = 2");
        let help = v["help"].as_str().unwrap();
        assert!(help.starts_with("return a value within [0, 1], "), "{help}");
    }
}

/// Every fixture log, explained through the library: a rejected log (MANIFEST) gets one
/// explanation, an accepted one none; every step of a chain is an instruction line of the log
/// and the last is the failure; the three formats write; cut short anywhere, nothing panics.
#[test]
fn every_fixture_log() {
    use bpflog::explain::{ExplainFormat, Explanation, explain, write};
    use bpflog::object::BpfObject;
    use bpflog::{Input, LogData, Palette, Program, SourceFiles, SourceSearch};
    // Through the library's entry, the log taken as the program's.
    let explain_all = |program: &Program<'_, '_>, log: &[u8]| {
        let mut all: Vec<Explanation> = Vec::new();
        explain(Input::of(program, LogData::Stream(log)), |_, e| {
            all.push(e);
            Ok(())
        })
        .map(|_| all)
    };
    let manifest = std::fs::read_to_string(fixtures().join("logs/MANIFEST")).unwrap();
    for fixture in common::fixture_logs() {
        let rejected = manifest
            .lines()
            .any(|l| l.starts_with(&fixture.name) && l.contains(" rejected"));
        let data = std::fs::read(&fixture.object).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        let program = Program::new(&object, object.program(&fixture.program).unwrap()).unwrap();
        let log = std::fs::read(&fixture.log).unwrap();
        let explained = explain_all(&program, &log[..]).unwrap();
        assert_eq!(explained.len(), usize::from(rejected), "{}", fixture.name);
        let text = String::from_utf8_lossy(&log);
        let insn_lines: std::collections::HashSet<u64> = text
            .lines()
            .filter_map(|l| match bpflog::log::classify(l.as_bytes()) {
                bpflog::log::Line::Insn(insn) => Some(insn.index),
                _ => None,
            })
            .collect();
        for e in &explained {
            let last = e.chain.last().unwrap();
            assert_eq!(last.location, e.location, "{}", fixture.name);
            for step in &e.chain {
                assert!(
                    insn_lines.contains(&step.location.insn),
                    "{}: step at {} is no instruction line",
                    fixture.name,
                    step.location.insn
                );
            }
            for format in [ExplainFormat::Text, ExplainFormat::Json, ExplainFormat::Gcc] {
                let mut out = Vec::new();
                let mut sources = SourceFiles::new(SourceSearch::default());
                write(
                    e,
                    &program,
                    format,
                    &mut sources,
                    &Palette::new(false),
                    &mut out,
                )
                .unwrap();
                assert!(!out.is_empty());
            }
        }
        // Cut short at 16 places: whatever is explained, nothing panics.
        let step = (log.len() / 16).max(1);
        for cut in (0..log.len()).step_by(step) {
            let _ = explain_all(&program, &log[..cut]).unwrap();
        }
    }
}

#[test]
fn a_helper_of_another_program_type() {
    // reject_helper.c:17 `bpf_perf_prog_read_value(...)` in an XDP program.
    for level in ["l1", "l2"] {
        let v = json_in(
            &own(),
            "reject_helper.o",
            &format!("reject_helper.xdp_reject_helper.{level}.log"),
        );
        assert_eq!(v["class"], "helper-not-allowed");
        assert_eq!(
            v["error"],
            "program of this type cannot use helper bpf_perf_prog_read_value#56"
        );
        assert_eq!(chain(&v), roles(&[(7, 17, "failed")]), "{level}");
    }
}

/// An object of one program: its log is read once and checked on the way, as `profile` checks
/// it. Another program's log is refused (explained anyway, with a warning, when `--prog` names
/// the program), and a file that is no verifier log is said to be one before anything else.
#[test]
fn the_only_programs_log_checked_on_the_way() {
    let f = fixtures();
    let (object, other) = (
        f.join("obj/reject_subprog.o"),
        f.join("logs/branchy.xdp_branchy.l2.log"),
    );
    let run = |log: &std::path::Path, prog: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpflog"));
        cmd.arg("explain").arg(&object).arg(log);
        if let Some(prog) = prog {
            cmd.args(["--prog", prog]);
        }
        cmd.output().unwrap()
    };
    let out = run(&other, None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("the log matches no program of the object")
            && said.ends_with("(is the log from another object? --prog explains it anyway)\n"),
        "{said}"
    );
    let out = run(&other, Some("xdp_reject_subprog"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.starts_with("bpflog: warning: ") && said.contains("(named by --prog)"),
        "{said}"
    );
    let text = std::env::temp_dir().join(format!("bpflog-not-a-log-{}", std::process::id()));
    std::fs::write(&text, "hello\n").unwrap();
    let out = run(&text, None);
    let _ = std::fs::remove_file(&text);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("no verifier log in it"), "{said}");
}

/// bpftool -d loading xdp_subprogs.o with too few file descriptors (tests/fixtures/regenerate.sh,
/// Linux 6.18, libbpf 1.1): the verifier accepts the program, then the kernel has no descriptor
/// for it (EMFILE), and libbpf says the load failed before the log.
fn emfile() -> (std::path::PathBuf, String, u64) {
    let path = fixtures().join("wrapped/bpftool-d-emfile.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let failed = "libbpf: prog 'xdp_parse': BPF program load failed: Too many open files";
    let line = text.lines().position(|l| l == failed).unwrap() as u64 + 1;
    (path, failed.to_owned(), line)
}

#[test]
fn a_load_that_failed_after_the_verifier_accepted_says_where() {
    let (path, failed, line) = emfile();
    let said = format!(
        "{}:{line}: the verifier accepted the program (its log from line {}), but the load failed: {failed}",
        path.display(),
        line + 1
    );
    for format in ["text", "json", "gcc", "sarif"] {
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .arg("explain")
            .arg(fixtures().join("obj/xdp_subprogs.o"))
            .arg(&path)
            .args(["--format", format, "--color", "never"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}");
        let (stdout, stderr) = (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        );
        let text = if format == "text" { &stdout } else { &stderr };
        let said = if format == "text" {
            said.clone()
        } else {
            format!("bpflog: note: {said}")
        };
        assert!(text.lines().any(|l| l == said), "{format}: {text}");
        assert!(!stdout.contains("no rejection") && !stderr.contains("no rejection"));
    }
}

#[test]
fn only_a_load_that_failed_without_a_rejection_is_said() {
    // libbpf says the load failed before every log of a program the kernel rejected: that
    // rejection is explained, nothing more. Without libbpf's line, a log that ends in its
    // summary is no rejection.
    let f = fixtures();
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("explain")
        .arg(f.join("obj/reject_subprog.o"))
        .arg(f.join("wrapped/bpftool-d.txt"))
        .args(["--prog", "xdp_reject_subprog", "--color", "never"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("error: R1 invalid mem access 'map_value_or_null'"),
        "{text}"
    );
    assert!(!text.contains("but the load failed"), "{text}");
    let (path, failed, _) = emfile();
    let without: String = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| *l != failed)
        .map(|l| format!("{l}\n"))
        .collect();
    let out = common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .arg("explain")
            .arg(f.join("obj/xdp_subprogs.o"))
            .args(["-", "--format", "json"]),
        without.as_bytes(),
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("but the load failed"), "{stderr}");
}

/// bpftool -d prog loadall of two_in_one.o (three programs) with too few file descriptors
/// (tests/fixtures/regenerate.sh, Linux 6.18): xdp_first and xdp_second load, then the verifier
/// accepts xdp_nested and the kernel has no descriptor for it.
fn loadall_emfile() -> (std::path::PathBuf, String) {
    let path = fixtures().join("wrapped/bpftool-d-loadall-emfile.txt");
    (path.clone(), std::fs::read_to_string(path).unwrap())
}

/// `explain --prog PROG two_in_one.o` of `input` (a file, or standard input when `None`).
fn explain_two_in_one(prog: &str, path: &std::path::Path, stdin: Option<&str>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bpflog"));
    command
        .arg("explain")
        .arg(fixtures().join("obj/two_in_one.o"))
        .args(["--prog", prog, "--color", "never"]);
    let out = match stdin {
        None => command.arg(path).output().unwrap(),
        Some(text) => common::run_with_stdin(command.arg("-"), text.as_bytes()),
    };
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_load_that_failed_is_said_of_the_program_it_names_among_several() {
    let (path, text) = loadall_emfile();
    let failed = "libbpf: prog 'xdp_nested': BPF program load failed: Too many open files";
    let line = text.lines().position(|l| l == failed).unwrap() as u64 + 1;
    let said = format!(
        "{}:{line}: the verifier accepted the program (its log from line {}), but the load failed: {failed}",
        path.display(),
        line + 1
    );
    assert_eq!(explain_two_in_one("xdp_nested", &path, None), said + "\n");
    // The programs loaded before it: their loads did not fail.
    for prog in ["xdp_first", "xdp_second"] {
        let out = explain_two_in_one(prog, &path, None);
        assert!(
            out.ends_with(": no rejection: nothing to explain\n"),
            "{prog}: {out}"
        );
    }
    // An older libbpf's line names no program: it is the next log's, xdp_nested's.
    let older = "libbpf: load bpf program failed: Too many open files";
    let out = explain_two_in_one("xdp_nested", &path, Some(&text.replace(failed, older)));
    assert!(
        out.ends_with(&format!(
            ":{line}: the verifier accepted the program (its log from line {}), but the load failed: {older}\n",
            line + 1
        )),
        "{out}"
    );
    // A line that names another program is not xdp_nested's.
    let other = failed.replace("xdp_nested", "xdp_second");
    let out = explain_two_in_one("xdp_nested", &path, Some(&text.replace(failed, &other)));
    assert!(
        out.ends_with(": no rejection: nothing to explain\n"),
        "{out}"
    );
}

/// What `explain` says of a load that failed, `annotate --style rich`, `annotate --diagnostic`
/// and `report` say too, for one program and for one of several: the same explanation.
#[test]
fn annotate_and_report_say_the_load_failed_as_explain_does() {
    let (emfile, _, _) = emfile();
    let (loadall, _) = loadall_emfile();
    let dir = std::env::temp_dir().join(format!("bpflog-load-failed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |args: &[OsString]| {
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let cases = [
        ("obj/xdp_subprogs.o", emfile.as_path(), None),
        ("obj/two_in_one.o", loadall.as_path(), Some("xdp_nested")),
    ];
    for (object, log, prog) in cases {
        let object = fixtures().join(object);
        let with = |head: &[&str]| -> Vec<OsString> {
            let mut args: Vec<OsString> = head.iter().map(OsString::from).collect();
            args.extend([object.clone().into(), log.into()]);
            args.extend(prog.iter().flat_map(|p| ["--prog", p]).map(OsString::from));
            args
        };
        // explain's line: `FILE:LINE: WHAT`.
        let explained = run(&with(&["explain", "--color", "never"]));
        let (_, said) = explained.trim_end().split_once(".txt:").unwrap();
        let (line, what) = said.split_once(": ").unwrap();
        let note = format!("note: line {line}: {what}");
        for style in [&["--style", "rich"][..], &["--diagnostic"][..]] {
            let mut head = vec!["annotate", "--color", "never"];
            head.extend(style);
            let annotated = run(&with(&head));
            assert_eq!(
                annotated.lines().filter(|l| *l == note).count(),
                1,
                "{style:?}: {annotated}"
            );
            // Before the end of the log it is said of.
            let at = annotated.find(&note).unwrap();
            assert!(annotated[at..].lines().nth(1) == Some("-- END PROG LOAD LOG --"));
        }
        let html = dir.join("r.html");
        let mut head = with(&["report"]);
        head.extend(["-o".into(), html.clone().into()]);
        run(&head);
        let page = std::fs::read_to_string(&html).unwrap();
        let open = "<script type=\"application/json\" id=\"bpflog-data\">";
        let start = page.find(open).unwrap() + open.len();
        let end = start + page[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(
            data["load_failed"],
            serde_json::json!([line.parse::<u64>().unwrap(), what]),
            "{}",
            log.display()
        );
        assert!(data["explain"].is_null());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
