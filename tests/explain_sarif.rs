//! `bpflog explain --format sarif` on the real rejected fixture logs: every log it writes is
//! valid against the published SARIF 2.1.0 schema (`tests/fixtures/sarif`), and says what the
//! JSON lines say (class, location, chain) for the same log. Snapshot in
//! `snapshots/explain__reject_subprog_sarif.snap`.

mod common;

use common::fixtures;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `bpflog explain OBJ LOG --format FORMAT` on the fixtures under `f`; its standard output.
fn explain(f: &Path, object: &str, log: &str, format: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("explain")
        .arg(f.join("obj").join(object))
        .arg(f.join("logs").join(log))
        .args(["--format", format, "--color", "never", "--source-dir"])
        .arg(f.join("src"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{log}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The SARIF log of `log`, after checking it against the schema.
fn sarif(f: &Path, object: &str, log: &str) -> Value {
    let v: Value = serde_json::from_str(&explain(f, object, log, "sarif")).unwrap();
    assert_valid(&v, log);
    v
}

/// Fails with every schema violation of `v` listed.
fn assert_valid(v: &Value, what: &str) {
    let schema = std::fs::read(fixtures().join("sarif/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_slice(&schema).unwrap();
    let validator = jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}\n{v:#}");
}

/// The rejected fixture logs: `(fixtures, object, log)`.
fn rejected() -> Vec<(std::path::PathBuf, &'static str, String)> {
    let f = fixtures();
    let own = f.join("explain");
    let mut logs = Vec::new();
    for (object, prog) in [
        ("reject_subprog.o", "reject_subprog.xdp_reject_subprog"),
        ("reject_global.o", "reject_global.xdp_reject_global"),
        ("reject_entry.o", "reject_entry.xdp_reject_entry"),
        // Without .BTF.ext or without DWARF: places from whichever line info is left, if any.
        (
            "reject_entry.nobtfext.o",
            "reject_entry.nobtfext.xdp_reject_entry",
        ),
        (
            "reject_entry.nodwarf.o",
            "reject_entry.nodwarf.xdp_reject_entry",
        ),
        ("reject_callback.o", "reject_callback.xdp_reject_callback"),
        ("reject_nested.o", "reject_nested.xdp_reject_nested"),
        (
            "reject_nested.dwarf4.o",
            "reject_nested.dwarf4.xdp_reject_nested",
        ),
        ("reject_dropped.o", "reject_dropped.xdp_reject_dropped"),
        ("core_fail.o", "core_fail.raw_tp_reject_core"),
    ] {
        for level in ["l1", "l2"] {
            logs.push((f.clone(), object, format!("{prog}.{level}.log")));
        }
    }
    for (object, prog) in [
        ("reject_bound.o", "reject_bound.xdp_reject_bound"),
        ("reject_ref.o", "reject_ref.xdp_reject_ref"),
        ("reject_retval.o", "reject_retval.cgroup_reject_retval"),
        ("reject_helper.o", "reject_helper.xdp_reject_helper"),
        // One per class (tests/explain_classes.rs).
        ("reject_null.o", "reject_null.xdp_reject_null"),
        ("reject_packet.o", "reject_packet.xdp_reject_packet"),
        ("reject_stack.o", "reject_stack.xdp_reject_stack"),
        ("reject_ctx.o", "reject_ctx.xdp_reject_ctx"),
        ("reject_loop.o", "reject_loop.xdp_reject_loop"),
        ("reject_signed.o", "reject_signed.xdp_reject_signed"),
        ("reject_scalar.o", "reject_scalar.xdp_reject_scalar"),
        ("reject_argtype.o", "reject_argtype.xdp_reject_argtype"),
        ("reject_rodata.o", "reject_rodata.xdp_reject_rodata"),
        ("reject_lock.o", "reject_lock.tc_reject_lock"),
        ("reject_early.o", "reject_early.kprobe_reject_early"),
    ] {
        for level in ["l1", "l2"] {
            logs.push((own.clone(), object, format!("{prog}.{level}.log")));
        }
    }
    // The complexity limit, on a real log ended there (tests/fixtures/explain/made).
    logs.push((
        f.clone(),
        "loop_callback.o",
        "../explain/made/loop_callback.loop_sum.too_large.l2.log".to_owned(),
    ));
    logs
}

/// `(file, line, column)` of a SARIF physical location (Null, 0, 0 when a part is left out).
fn place(at: &Value) -> (Value, u64, u64) {
    let region = &at["region"];
    (
        at["artifactLocation"]["uri"].clone(),
        region["startLine"].as_u64().unwrap_or(0),
        region["startColumn"].as_u64().unwrap_or(0),
    )
}

/// `(file, line, column)` of a JSON location or step.
fn place_json(at: &Value) -> (Value, u64, u64) {
    (
        at["file"].clone(),
        at["line"].as_u64().unwrap(),
        at["column"].as_u64().unwrap(),
    )
}

#[test]
fn every_rejected_fixture_log_is_valid_sarif_saying_what_json_says() {
    let logs = rejected();
    for (f, object, log) in &logs {
        let v = sarif(f, object, log);
        let json: Value = serde_json::from_str(&explain(f, object, log, "json")).unwrap();
        assert_eq!(v["version"], "2.1.0");
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "bpflog");
        let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 1, "{log}");
        assert_eq!(rules[0]["id"], json["class"], "{log}");
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{log}");
        let r = &results[0];
        assert_eq!(r["ruleId"], json["class"], "{log}");
        assert_eq!(r["level"], "error");
        assert_eq!(r["message"]["text"], json["error"], "{log}");
        assert_eq!(r["properties"]["help"], json["help"], "{log}");
        let at = &r["locations"][0]["physicalLocation"];
        assert_eq!(place(at), place_json(&json["location"]), "{log}");
        let chain = json["chain"].as_array().unwrap();
        let related = r["relatedLocations"].as_array().unwrap();
        let flow = r["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap();
        assert_eq!(related.len(), chain.len(), "{log}");
        assert_eq!(flow.len(), chain.len(), "{log}");
        for (i, step) in chain.iter().enumerate() {
            for l in [&related[i], &flow[i]["location"]] {
                assert_eq!(
                    place(&l["physicalLocation"]),
                    place_json(step),
                    "{log} step {i}"
                );
                let message = l["message"]["text"].as_str().unwrap();
                let role = step["role"].as_str().unwrap();
                assert!(message.starts_with(role), "{log}: {message}");
                let insn = format!("(insn {}: ", step["insn"]);
                assert!(message.contains(&insn), "{log}: {message}");
            }
            assert_eq!(related[i]["id"], i, "{log}");
        }
    }
}

#[test]
fn one_sarif_log_for_two_rejected_logs_of_a_wrapped_file() {
    // libbpf's wrapping around the level-1 and the level-2 log of the same rejection: one run,
    // two results, one rule.
    let file = common::wrapped_reject_subprog_logs();
    let out = common::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .arg("explain")
            .arg(fixtures().join("obj/reject_subprog.o"))
            .args(["-", "--format", "sarif"]),
        &file,
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&v, "wrapped");
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 1);
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["ruleId"], "nullable-dereference");
        assert_eq!(r["ruleIndex"], 0);
    }
}

#[test]
fn an_accepted_log_is_a_valid_log_without_results() {
    let f = fixtures();
    let v: Value = serde_json::from_str(&explain(
        &f,
        "tc_prog.o",
        "tc_prog.tc_count.l1.log",
        "sarif",
    ))
    .unwrap();
    assert_valid(&v, "accepted");
    assert_eq!(v["runs"][0]["results"], Value::Array(Vec::new()));
    assert_eq!(
        v["runs"][0]["tool"]["driver"]["rules"],
        Value::Array(Vec::new())
    );
}

#[test]
fn the_schema_rejects_a_broken_log() {
    // The validator is live: the output with a region's line of 0 fails the schema.
    let f = fixtures();
    let mut v = sarif(
        &f,
        "reject_subprog.o",
        "reject_subprog.xdp_reject_subprog.l1.log",
    );
    v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] =
        Value::from(0);
    let schema = std::fs::read(f.join("sarif/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_slice(&schema).unwrap();
    assert!(!jsonschema::is_valid(&schema, &v));
}

/// The SARIF log of reject_subprog's level-1 log, run in `dir` with `args` (schema-checked).
fn sarif_in(dir: &Path, args: &[&std::ffi::OsStr]) -> Value {
    let v: Value = serde_json::from_str(&sarif_text_in(dir, args)).unwrap();
    assert_valid(&v, "reject_subprog");
    v
}

/// The output of `sarif_in`, as written.
fn sarif_text_in(dir: &Path, args: &[&std::ffi::OsStr]) -> String {
    let f = fixtures();
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .current_dir(dir)
        .arg("explain")
        .arg(f.join("obj/reject_subprog.o"))
        .arg(f.join("logs/reject_subprog.xdp_reject_subprog.l1.log"))
        .args(["--format", "sarif"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every artifact location of the one result of `v`, and the run's `%SRCROOT%`.
fn artifacts(v: &Value) -> (Vec<&Value>, &Value) {
    let run = &v["runs"][0];
    let r = &run["results"][0];
    let mut all = vec![&r["locations"][0]];
    all.extend(r["relatedLocations"].as_array().unwrap());
    all.extend(
        (r["codeFlows"][0]["threadFlows"][0]["locations"]
            .as_array()
            .unwrap())
        .iter()
        .map(|l| &l["location"]),
    );
    let all = all
        .into_iter()
        .map(|l| &l["physicalLocation"]["artifactLocation"])
        .collect();
    (all, &run["originalUriBaseIds"]["%SRCROOT%"])
}

/// `file:///the/dir/` of `dir`, canonical.
fn root_uri(dir: &Path) -> String {
    let real = std::fs::canonicalize(dir).unwrap();
    format!("file://{}/", real.display())
}

#[test]
fn files_are_relative_to_the_source_root() {
    // The debug info names `reject_subprog.c`, relative: from the current directory.
    let src = fixtures().join("src");
    let v = sarif_in(&src, &["--source-root".as_ref(), src.as_os_str()]);
    let (files, root) = artifacts(&v);
    assert_eq!(root, &serde_json::json!({ "uri": root_uri(&src) }));
    assert_eq!(files.len(), 9);
    for file in files {
        let want = serde_json::json!({ "uri": "reject_subprog.c", "uriBaseId": "%SRCROOT%" });
        assert_eq!(file, &want);
    }
}

#[test]
fn the_default_root_is_the_git_work_tree() {
    // From tests/fixtures/src, the tree above it that holds `.git`.
    let src = fixtures().join("src");
    let v = sarif_in(&src, &[]);
    let (files, root) = artifacts(&v);
    assert_eq!(root["uri"], root_uri(Path::new(env!("CARGO_MANIFEST_DIR"))));
    for file in files {
        assert_eq!(file["uri"], "tests/fixtures/src/reject_subprog.c");
        assert_eq!(file["uriBaseId"], "%SRCROOT%");
    }
}

#[test]
fn a_file_outside_the_root_is_an_absolute_file_uri() {
    let f = fixtures();
    let v = sarif_in(
        &f.join("src"),
        &["--source-root".as_ref(), f.join("obj").as_os_str()],
    );
    let (files, _) = artifacts(&v);
    let real = std::fs::canonicalize(f.join("src/reject_subprog.c")).unwrap();
    for file in files {
        let want = serde_json::json!({ "uri": format!("file://{}", real.display()) });
        assert_eq!(file, &want);
    }
}

#[test]
fn source_map_applies_before_the_root() {
    // Run from / (the name alone would be /reject_subprog.c): mapped into the root.
    let src = std::fs::canonicalize(fixtures().join("src")).unwrap();
    let map = format!("reject_subprog.c={}/sub/./x.c", src.display());
    let v = sarif_in(
        Path::new("/"),
        &[
            "--source-root".as_ref(),
            src.as_os_str(),
            "--source-map".as_ref(),
            map.as_ref(),
        ],
    );
    let (files, _) = artifacts(&v);
    for file in files {
        let want = serde_json::json!({ "uri": "sub/x.c", "uriBaseId": "%SRCROOT%" });
        assert_eq!(file, &want);
    }
}

#[test]
fn the_fingerprint_does_not_hang_on_where_the_tree_is() {
    // The same failure seen from two roots (the tree, and a copy's place named by --source-map)
    // has one fingerprint; the line number is left out too (the unit test in sarif.rs moves it).
    let src = std::fs::canonicalize(fixtures().join("src")).unwrap();
    let print = |v: &Value| v["runs"][0]["results"][0]["partialFingerprints"].clone();
    let here = print(&sarif_in(
        &src,
        &["--source-root".as_ref(), src.as_os_str()],
    ));
    let v1 = here["bpflog/v1"].as_str().unwrap();
    assert!(
        v1.len() == 16 && v1.bytes().all(|b| b.is_ascii_hexdigit()),
        "{here}"
    );
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sarif-root");
    std::fs::create_dir_all(&copy).unwrap();
    let copy = std::fs::canonicalize(copy).unwrap();
    let map = format!("reject_subprog.c={}/reject_subprog.c", copy.display());
    let there = print(&sarif_in(
        Path::new("/"),
        &[
            "--source-root".as_ref(),
            copy.as_os_str(),
            "--source-map".as_ref(),
            map.as_ref(),
        ],
    ));
    assert_eq!(here, there);
}

#[test]
fn reject_subprog_snapshot() {
    // Run in the fixtures' sources, which are the root: no path of this machine but the root's.
    let src = fixtures().join("src");
    let text = sarif_text_in(&src, &["--source-root".as_ref(), src.as_os_str()]);
    let text = text
        .replace(env!("CARGO_PKG_VERSION"), "<version>")
        .replace(&root_uri(&src), "file:///<root>/");
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("explain__reject_subprog_sarif", text);
    });
}
