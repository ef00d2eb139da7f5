//! `bpflog lines`: the loaded layout of a program, one row per instruction.

mod common;

use common::fixtures;
use std::process::Command;

fn lines(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("lines")
        .args(args)
        .output()
        .unwrap()
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, text);
    });
}

/// A subprogram appended after the entry program, a helper inlined into the entry program.
#[test]
fn subprogram_and_inlined_helper() {
    let obj = fixtures().join("obj/reject_subprog.o");
    let src = fixtures().join("src");
    let out = lines(&[obj.to_str().unwrap(), "--source-dir", src.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# func#1 @35 update_flow (.text)"));
    snapshot("lines__reject_subprog", &text);
}

/// Three levels of inlined helpers, and a callback placed under cilium/ebpf's layout.
#[test]
fn nested_inlining_and_other_loaders() {
    let obj = fixtures().join("obj/reject_nested.o");
    let src = fixtures().join("src");
    let out = lines(&[obj.to_str().unwrap(), "--source-dir", src.to_str().unwrap()]);
    assert!(out.status.success());
    snapshot(
        "lines__reject_nested",
        &String::from_utf8(out.stdout).unwrap(),
    );

    let obj = fixtures().join("obj/loop_callback.o");
    let out = lines(&[
        obj.to_str().unwrap(),
        "--prog",
        "loop_nested",
        "--loader",
        "cilium",
        "--source-dir",
        src.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    snapshot(
        "lines__loop_callback.loop_nested.cilium",
        &String::from_utf8(out.stdout).unwrap(),
    );
}

/// The second slot of an `ld_imm64` is not a row, as in the log and in bpftool's dump.
#[test]
fn ld_imm64_takes_one_row() {
    let obj = fixtures().join("obj/reject_subprog.o");
    let out = lines(&[obj.to_str().unwrap(), "--prog", "xdp_reject_subprog"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.trim_start().starts_with("22  (18)")));
    assert!(!text.lines().any(|l| l.trim_start().starts_with("23 ")));
    assert!(text.lines().any(|l| l.trim_start().starts_with("24  (85)")));
}

#[test]
fn unknown_program_is_an_error() {
    let obj = fixtures().join("obj/reject_subprog.o");
    let out = lines(&[obj.to_str().unwrap(), "--prog", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no program named 'nope'"), "{err}");
}
