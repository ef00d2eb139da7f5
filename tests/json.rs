//! `annotate --format json`: one object per input line, on every fixture log and on bpftool's
//! output with four programs' logs in it.

mod common;

use common::fixtures;
use serde_json::Value;
use std::process::Command;

fn run(args: &[&std::ffi::OsStr]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("annotate")
        .args(["--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn every_line_of_every_fixture_log_is_one_record() {
    for fixture in common::fixture_logs() {
        let log = std::fs::read_to_string(&fixture.log).unwrap();
        let records = run(&[fixture.object.as_os_str(), fixture.log.as_os_str()]);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(records.len(), lines.len(), "{}", fixture.name);
        let mut errors = 0;
        for (k, (r, line)) in records.iter().zip(&lines).enumerate() {
            assert_eq!(r["line"], k as u64 + 1);
            assert_eq!(r["text"], *line, "{}: line {}", fixture.name, k + 1);
            // A log without instructions needs no program (an accepted level-1 log is one line).
            if !r["program"].is_null() || log.lines().any(|l| l.contains(": (")) {
                let program = r["program"].as_str().unwrap_or_default();
                // Macro-made twins are interchangeable: any of them names the log.
                let twin =
                    fixture.program.starts_with("xdp_twin_") && program.starts_with("xdp_twin_");
                assert!(
                    program == fixture.program || twin,
                    "{}: program {program}",
                    fixture.name
                );
            }
            match r["kind"].as_str().unwrap() {
                "insn" => {
                    let index = r["index"].as_u64().unwrap();
                    assert!(line.starts_with(&format!("{index}: ")), "{line}");
                    let source = &r["source"];
                    assert!(
                        source["line"].as_u64().unwrap() > 0
                            && source["file"].is_string()
                            && source["function"].is_string(),
                        "{}: {r}",
                        fixture.name
                    );
                }
                "annotation" => assert!(line.starts_with(';')),
                "error" => errors += 1,
                _ => {}
            }
        }
        let rejected = std::fs::read_to_string(fixtures().join("logs/MANIFEST"))
            .unwrap()
            .lines()
            .any(|l| l.starts_with(&fixture.name) && l.contains("rejected"));
        assert_eq!(errors > 0, rejected, "{}: error records", fixture.name);
    }
}

#[test]
fn nested_inlining_is_in_the_failing_instruction_record() {
    let obj = fixtures().join("obj/reject_nested.o");
    let log = fixtures().join("logs/reject_nested.xdp_reject_nested.l2.log");
    let records = run(&[obj.as_os_str(), log.as_os_str()]);
    let failing = records.iter().rev().find(|r| r["kind"] == "insn").unwrap();
    assert_eq!(failing["index"], 24);
    let source = &failing["source"];
    assert_eq!(
        (
            source["file"].as_str(),
            source["line"].as_u64(),
            source["column"].as_u64()
        ),
        (Some("reject_nested.c"), Some(37), Some(6))
    );
    assert_eq!(source["function"], "read_opt_byte");
    let into: Vec<&str> = source["inlined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["into"].as_str().unwrap())
        .collect();
    assert_eq!(into, ["parse_ipv4_opts", "parse_l3", "xdp_reject_nested"]);
}

#[test]
fn wrapped_logs_say_their_program_and_chatter_is_outside() {
    let file = fixtures().join("wrapped/bpftool-d.txt");
    let objects: Vec<_> = [
        "reject_subprog.o",
        "reject_entry.o",
        "reject_callback.o",
        "core_fail.o",
    ]
    .iter()
    .map(|o| fixtures().join("obj").join(o))
    .collect();
    let mut args: Vec<&std::ffi::OsStr> = objects.iter().map(|o| o.as_os_str()).collect();
    args.push("--".as_ref());
    args.push(file.as_os_str());
    let records = run(&args);
    let programs: std::collections::BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r["program"].as_str())
        .collect();
    assert_eq!(
        programs.into_iter().collect::<Vec<_>>(),
        [
            "raw_tp_reject_core",
            "xdp_reject_callback",
            "xdp_reject_entry",
            "xdp_reject_subprog"
        ]
    );
    let begin = records
        .iter()
        .find(|r| {
            r["text"]
                .as_str()
                .is_some_and(|t| t.ends_with("-- BEGIN PROG LOAD LOG --"))
        })
        .unwrap();
    assert_eq!(begin["kind"], "outside");
    let invalid = records
        .iter()
        .find(|r| r["text"] == "11: <invalid CO-RE relocation>")
        .unwrap();
    assert_eq!(
        (invalid["kind"].as_str(), invalid["index"].as_u64()),
        (Some("insn"), Some(11))
    );
}
