//! The explanation where `annotate` shows a rejection: the rich diagnostic ends with what
//! `explain --format text` writes, and the `error` record of `annotate --format json` carries
//! the object `explain --format json` writes, on every fixture log (`tests/fixtures/logs` and
//! `tests/fixtures/explain/logs`), compared as parsed JSON. `verify`'s live test is in
//! `tests/verify.rs`. Snapshots of the rich diagnostics: `snapshots/explain_annotate__*.snap`
//! (and `snapshots/rich__reject_*.snap`).

mod common;

use common::{fixtures, strip_annotations};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fixture log: the log, its object, its program, the sources' folder.
struct Log {
    name: String,
    log: PathBuf,
    object: PathBuf,
    program: String,
    src: PathBuf,
}

/// Every fixture log of `tests/fixtures/logs` and `tests/fixtures/explain/logs`.
fn logs() -> Vec<Log> {
    let mut logs: Vec<Log> = common::fixture_logs()
        .into_iter()
        .map(|f| Log {
            name: f.name,
            log: f.log,
            object: f.object,
            program: f.program,
            src: fixtures().join("src"),
        })
        .collect();
    let own = fixtures().join("explain");
    let mut names: Vec<String> = std::fs::read_dir(own.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    for name in names {
        // `<object>.<program>.l<level>.log`
        let parts: Vec<&str> = name.split('.').collect();
        let [object, program, _, _] = parts[..] else {
            panic!("{name}: not OBJECT.PROGRAM.lN.log");
        };
        logs.push(Log {
            log: own.join("logs").join(&name),
            object: own.join("obj").join(format!("{object}.o")),
            program: program.to_owned(),
            src: own.join("src"),
            name,
        });
    }
    assert!(logs.len() > 40, "{} logs", logs.len());
    logs
}

/// bpflog's standard output for `args` (it must succeed).
fn bpflog(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `bpflog COMMAND OBJ LOG --prog P --source-dir SRC --color never` with `more`.
fn run(command: &str, l: &Log, log: &Path, more: &[&str]) -> String {
    let mut args: Vec<&std::ffi::OsStr> = vec![
        command.as_ref(),
        l.object.as_os_str(),
        log.as_os_str(),
        "--prog".as_ref(),
        l.program.as_ref(),
        "--source-dir".as_ref(),
        l.src.as_os_str(),
        "--color".as_ref(),
        "never".as_ref(),
    ];
    args.extend(more.iter().map(|m| m.as_ref() as &std::ffi::OsStr));
    bpflog(&args)
}

/// The objects `explain --format json` writes for `log`.
fn explained(l: &Log, log: &Path) -> Vec<Value> {
    run("explain", l, log, &["--format", "json"])
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The `explanation` members of `annotate --format json`'s records for `log` (`more`: more
/// options), each checked to be on an `error` record of the program.
fn annotated(l: &Log, log: &Path, more: &[&str]) -> Vec<Value> {
    let mut args = vec!["--format", "json"];
    args.extend(more);
    run("annotate", l, log, &args)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter_map(|mut record| {
            let explanation = record.get_mut("explanation")?.take();
            assert_eq!(record["kind"], "error", "{}: {record}", l.name);
            assert_eq!(record["program"], l.program.as_str(), "{}", l.name);
            Some(explanation)
        })
        .collect()
}

#[test]
fn annotate_json_carries_what_explain_json_writes() {
    let (mut rejected, mut accepted) = (0, 0);
    for l in logs() {
        let explain = explained(&l, &l.log);
        let annotate = annotated(&l, &l.log, &[]);
        assert_eq!(annotate, explain, "{}", l.name);
        // The class, the chain and the help are there to compare.
        for e in &explain {
            assert!(e["class"].is_string() && e["help"].is_string(), "{e}");
            assert!(!e["chain"].as_array().unwrap().is_empty(), "{e}");
        }
        if explain.is_empty() {
            accepted += 1;
        } else {
            rejected += 1;
        }
    }
    assert!(
        rejected >= 20 && accepted >= 20,
        "{rejected} rejected, {accepted} accepted"
    );
}

#[test]
fn without_the_kernels_source_lines_the_same_explanation() {
    let tmp = std::env::temp_dir().join(format!("bpflog-explain-annotate-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut compared = 0;
    for l in logs().into_iter().filter(|l| l.name.contains("reject")) {
        let stripped = tmp.join(&l.name);
        std::fs::write(
            &stripped,
            strip_annotations(&std::fs::read(&l.log).unwrap()),
        )
        .unwrap();
        let explain = explained(&l, &stripped);
        assert_eq!(annotated(&l, &stripped, &[]), explain, "{}", l.name);
        compared += usize::from(!explain.is_empty());
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(compared >= 15, "{compared}");
}

#[test]
fn no_diagnostic_no_explanation_in_json() {
    let l = logs()
        .into_iter()
        .find(|l| l.name == "reject_subprog.xdp_reject_subprog.l1.log")
        .unwrap();
    assert_eq!(annotated(&l, &l.log, &[]).len(), 1);
    assert!(annotated(&l, &l.log, &["--no-diagnostic"]).is_empty());
}

#[test]
fn the_rich_diagnostic_ends_with_what_explain_text_writes() {
    let mut compared = 0;
    for l in logs() {
        if explained(&l, &l.log).is_empty() {
            // An accepted log: no diagnostic, no explanation.
            let rich = run("annotate", &l, &l.log, &["--style", "rich"]);
            assert!(!rich.contains("   = class: "), "{}", l.name);
            continue;
        }
        let text = run("explain", &l, &l.log, &[]);
        let rich = run("annotate", &l, &l.log, &["--style", "rich"]);
        assert!(
            rich.ends_with(&text),
            "{}: annotate --style rich ends\n{}\nexplain writes\n{text}",
            l.name,
            &rich[rich.len().saturating_sub(text.len() + 200)..]
        );
        // Kernel style with --diagnostic: the same block.
        let kernel = run(
            "annotate",
            &l,
            &l.log,
            &["--style", "kernel", "--diagnostic"],
        );
        assert!(kernel.ends_with(&text), "{}", l.name);
        compared += 1;
    }
    assert!(compared >= 20, "{compared}");
}

#[test]
fn rich_diagnostics_of_the_explain_fixtures() {
    for l in logs()
        .into_iter()
        .filter(|l| l.log.starts_with(fixtures().join("explain")) && l.name.ends_with(".l1.log"))
    {
        let rich = run("annotate", &l, &l.log, &["--style", "rich"]);
        let at = rich.rfind("\nerror: ").expect("a diagnostic");
        let name = l.name.trim_end_matches(".log");
        insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(format!("explain_annotate__{name}"), &rich[at + 1..]);
        });
    }
}
