//! `bpflog explain` on one rejected program per class of the catalogue
//! (`tests/fixtures/explain`, built and loaded on a kernel by its `make.sh`): the class, the
//! failing line and the origin line each C source marks with `/* error */` and `/* origin */`,
//! at log levels 1 and 2, and snapshots of the four formats (`snapshots/explain_class__*.snap`).

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// `(source stem, program, class)` of each fixture.
const FIXTURES: &[(&str, &str, &str)] = &[
    ("reject_null", "xdp_reject_null", "nullable-dereference"),
    // The error names a kfunc's argument (`arg0`), not a register: the chain follows R1.
    (
        "reject_kfuncarg",
        "tp_reject_kfuncarg",
        "nullable-dereference",
    ),
    ("reject_packet", "xdp_reject_packet", "packet-out-of-range"),
    ("reject_stack", "xdp_reject_stack", "stack-out-of-range"),
    ("reject_ctx", "xdp_reject_ctx", "invalid-context-access"),
    ("reject_loop", "xdp_reject_loop", "infinite-loop"),
    ("reject_signed", "xdp_reject_signed", "unbounded-access"),
    ("reject_negative", "xdp_reject_negative", "min-negative"),
    // A ring buffer record: `invalid access to memory` is not a class, the next line is.
    ("reject_maxrange", "xdp_reject_maxrange", "max-out-of-range"),
    ("reject_scalar", "xdp_reject_scalar", "not-a-pointer"),
    (
        "reject_argtype",
        "xdp_reject_argtype",
        "helper-argument-type",
    ),
    ("reject_rodata", "xdp_reject_rodata", "access-not-allowed"),
    ("reject_lock", "tc_reject_lock", "spin-lock-rule"),
    // Loaded without CAP_PERFMON (make.sh): the origin is the test that jumps over the write.
    ("reject_uninit", "sock_reject_uninit", "uninitialized-stack"),
    // Inline assembly reads R2 after a call: the origin is the call that clobbered it.
    (
        "reject_uninit_reg",
        "xdp_reject_uninit_reg",
        "uninitialized-register",
    ),
    // Loaded without CAP_PERFMON: a map value's address stored into the map.
    ("reject_leak", "sock_reject_leak", "pointer-leak"),
    ("reject_ptrmath", "xdp_reject_ptrmath", "pointer-arithmetic"),
    // `r1 /= 0` in inline assembly: no value to trace, the chain is the failing step alone.
    ("reject_div", "xdp_reject_div", "division-by-zero"),
    // An 8-byte store at fp-15: the chain is the failing step alone.
    (
        "reject_misaligned",
        "xdp_reject_misaligned",
        "misaligned-access",
    ),
    ("reject_field", "tc_reject_field", "invalid-field-access"),
    // An exit inside the RCU region: the origin is the call that opened it.
    ("reject_rcu", "tc_reject_rcu", "locked-region-rule"),
    // Rejected before any instruction was verified: placed at the program's first.
    ("reject_early", "kprobe_reject_early", "helper-not-allowed"),
    // One load reached with the context and with a stack slot (inline assembly).
    ("reject_mixed", "tc_reject_mixed", "mixed-pointer-types"),
    // A `__weak` kfunc no kernel has, called unchecked: refused after verification, placed at
    // the call.
    ("reject_ksym", "tc_reject_ksym", "missing-kernel-symbol"),
];

fn own() -> PathBuf {
    common::fixtures().join("explain")
}

/// `bpflog CMD OBJECT LOG --prog PROG ...ARGS`, with the fixtures' sources: its standard
/// output.
fn bpflog(cmd: &str, object: PathBuf, log: PathBuf, prog: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg(cmd)
        .arg(&object)
        .arg(&log)
        .args(["--prog", prog, "--color", "never", "--source-dir"])
        .arg(common::fixtures().join("src"))
        .arg("--source-dir")
        .arg(own().join("src"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cmd} {} {args:?}: {}",
        log.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `bpflog explain` of the fixture's log at `level` in `format`.
fn explain(stem: &str, prog: &str, level: &str, format: &str) -> String {
    let f = own();
    let object = f.join("obj").join(format!("{stem}.o"));
    let log = f.join("logs").join(format!("{stem}.{prog}.{level}.log"));
    bpflog("explain", object, log, prog, &["--format", format])
}

/// The line (from 1) of `src/STEM.c` that carries the comment `/* MARK */`.
fn marked(stem: &str, mark: &str) -> Option<u64> {
    let text = std::fs::read_to_string(own().join("src").join(format!("{stem}.c"))).unwrap();
    let comment = format!("/* {mark} */");
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&comment));
    let (at, _) = lines.next()?;
    assert!(lines.next().is_none(), "{stem}.c marks two lines {mark}");
    Some(at as u64 + 1)
}

#[test]
fn each_class_its_failing_line_and_its_origin() {
    for &(stem, prog, class) in FIXTURES {
        for level in ["l1", "l2"] {
            let out = explain(stem, prog, level, "json");
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 1, "{stem} {level}: {out}");
            let v: Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(v["class"], class, "{stem} {level}");
            let error = marked(stem, "error").expect("every fixture marks its error line");
            assert_eq!(v["location"]["line"], error, "{stem} {level}: {out}");
            let chain = v["chain"].as_array().unwrap();
            assert_eq!(chain.last().unwrap()["role"], "failed", "{stem} {level}");
            assert_eq!(chain.last().unwrap()["line"], error, "{stem} {level}");
            let origins: Vec<&Value> = chain.iter().filter(|s| s["role"] == "origin").collect();
            match marked(stem, "origin") {
                Some(origin) => {
                    assert_eq!(origins.len(), 1, "{stem} {level}: {out}");
                    assert_eq!(chain[0]["role"], "origin", "{stem} {level}");
                    assert_eq!(chain[0]["line"], origin, "{stem} {level}: {out}");
                }
                None => assert!(
                    origins.iter().all(|s| s["line"] == error),
                    "{stem} {level}: an origin no line marks: {out}"
                ),
            }
        }
    }
}

#[test]
fn each_class_in_four_formats() {
    for &(stem, prog, _) in FIXTURES {
        for format in ["text", "json", "gcc", "sarif"] {
            let text = common::root_redacted(&explain(stem, prog, "l2", format));
            insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
                insta::assert_snapshot!(format!("explain_class__{stem}_{format}"), text);
            });
        }
    }
}

/// `bpflog CMD` on the loop_sum log ended at the complexity limit
/// (`tests/fixtures/explain/made/too_large.py`).
fn too_large(cmd: &str, args: &[&str]) -> String {
    let f = common::fixtures();
    let object = f.join("obj/loop_callback.o");
    let log = f.join("explain/made/loop_callback.loop_sum.too_large.l2.log");
    bpflog(cmd, object, log, "loop_sum", args)
}

/// `bpflog verify` explains a rejection in its annotator (`AnnotateOptions::diagnostic`): with
/// `hot_lines`, as `verify` asks, its help names the lines where the verifier spent its work,
/// as `explain`'s does; the rest of the explanation is the same too.
#[test]
fn verify_names_where_the_work_went_as_explain_does() {
    use bpflog::{AnnotateOptions, Program, SourceSearch, annotate_bare, object::BpfObject};
    let f = common::fixtures();
    let data = std::fs::read(f.join("obj/loop_callback.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = Program::new(&object, object.program("loop_sum").unwrap()).unwrap();
    let log =
        std::fs::read(f.join("explain/made/loop_callback.loop_sum.too_large.l2.log")).unwrap();
    let options = AnnotateOptions::default()
        .diagnostic(true)
        .hot_lines(true)
        .sources(SourceSearch::default().dirs(vec![f.join("src")]));
    let mut out = Vec::new();
    annotate_bare(&program, &log[..], &mut out, &options).unwrap();
    let annotated = String::from_utf8(out).unwrap();
    let explained = too_large("explain", &["--format", "text"]);
    let help = explained.lines().find(|l| l.contains("help: ")).unwrap();
    assert!(help.contains("instructions verified)"), "{help}");
    assert!(annotated.ends_with(&explained), "{annotated}");
}

#[test]
fn the_complexity_limit_names_where_the_work_went() {
    let v: Value = serde_json::from_str(&too_large("explain", &["--format", "json"])).unwrap();
    assert_eq!(v["class"], "too-complex");
    // Stopped between two paths: placed at the last instruction verified.
    assert_eq!(v["location"]["insn"], 33);
    // The help names the hottest lines of `bpflog profile`, hottest first.
    let profile: Value =
        serde_json::from_str(&too_large("profile", &["--format", "json"])).unwrap();
    let help = v["help"].as_str().unwrap();
    let total = &profile["totals"]["insn_lines"];
    let mut at = 0;
    for line in profile["lines"].as_array().unwrap().iter().take(3) {
        let file = line["file"].as_str().unwrap().rsplit('/').next().unwrap();
        let named = format!(
            "{file}:{} `{}` ({} of {total} instructions verified)",
            line["line"],
            line["source"].as_str().unwrap(),
            line["visits"]
        );
        let found = help[at..]
            .find(&named)
            .unwrap_or_else(|| panic!("{named}: {help}"));
        at += found + named.len();
    }
    for format in ["text", "json", "gcc", "sarif"] {
        let text = common::root_redacted(&too_large("explain", &["--format", format]));
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(format!("explain_class__too_large_{format}"), text);
        });
    }
}

#[test]
fn gcc_lines_leave_out_a_column_of_0() {
    // `file:line:` for a failure with a line but no column (0), as gcc writes it: a CO-RE
    // relocation refused at the program's first instruction, whose line-info record has no
    // column (the labelled selftests' `test_module_attach`, whose debug info names the file by
    // its absolute build path); `file:line:col:` otherwise.
    let set = common::fixtures().join("selftests");
    let (object, log) = (
        set.join("obj/test_module_attach.o"),
        set.join("logs/test_module_attach.handle_raw_tp.l2.log"),
    );
    let json = bpflog(
        "explain",
        object.clone(),
        log.clone(),
        "handle_raw_tp",
        &["--format", "json"],
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["location"]["column"], 0, "{json}");
    assert_eq!(v["location"]["line"], 13, "{json}");
    let gcc = bpflog(
        "explain",
        object,
        log,
        "handle_raw_tp",
        &["--format", "gcc"],
    );
    assert!(
        gcc.lines().all(|l| l
            .split_once("/test_module_attach.c:13: ")
            .is_some_and(|(dir, _)| !dir.contains(": "))),
        "{gcc}"
    );
    // With a column, it is written.
    let gcc = explain("reject_null", "xdp_reject_null", "l2", "gcc");
    let v: Value =
        serde_json::from_str(&explain("reject_null", "xdp_reject_null", "l2", "json")).unwrap();
    let at = format!(
        "reject_null.c:{}:{}: ",
        v["location"]["line"], v["location"]["column"]
    );
    assert_ne!(v["location"]["column"], 0);
    assert!(gcc.lines().next().unwrap().starts_with(&at), "{gcc}");
}

/// A rule of `bpf_spin_lock` broken (the selftests' labelled logs, `tests/fixtures/selftests`):
/// the chain starts at the lock held where it is broken.
#[test]
fn a_spin_lock_rule_starts_at_the_lock_held() {
    use bpflog::{Program, explain::explain_bare, object::BpfObject};
    let set = common::fixtures().join("selftests");
    let chain = |object: &str, prog: &str| {
        let data = std::fs::read(set.join("obj").join(format!("{object}.o"))).unwrap();
        let object_file = BpfObject::parse(&data).unwrap();
        let program = Program::new(&object_file, object_file.program(prog).unwrap()).unwrap();
        let log = std::fs::read(set.join("logs").join(format!("{object}.{prog}.l2.log"))).unwrap();
        let [e] = &explain_bare(&program, &log[..]).unwrap()[..] else {
            panic!("{object} {prog}: not one explanation");
        };
        assert_eq!(e.class().id.as_str(), "spin-lock-rule");
        e.chain
            .iter()
            .map(|s| (s.role.as_str(), s.location.insn))
            .collect::<Vec<_>>()
    };
    // The lock taken (`bpf_spin_lock(&v->lock)`) and the unlock of another lock.
    let mismatch = chain("test_spin_lock_fail", "lock_id_mismatch_mapval_mapval");
    assert_eq!(mismatch.len(), 2, "{mismatch:?}");
    assert_eq!(mismatch[0].0, "origin");
    assert_ne!(mismatch[0].1, mismatch[1].1, "{mismatch:?}");
}
