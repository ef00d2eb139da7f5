//! The committed corpus of malformed objects (tests/fixtures/malformed, made by its make.py from
//! the real fixture objects, both byte orders), each run through the `bpflog annotate` binary:
//! exit status 1 and exactly the one line on stderr that expected.txt gives.

use std::path::{Path, PathBuf};
use std::process::Command;

fn malformed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/malformed")
}

/// `(file, expected stderr line)` from expected.txt.
fn manifest() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(malformed().join("expected.txt")).expect("expected.txt");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (file, line) = l.split_once('\t').expect("file<TAB>message");
            (file.to_owned(), line.to_owned())
        })
        .collect()
}

#[test]
fn every_malformed_object_fails_with_its_exact_error() {
    let cases = manifest();
    assert!(cases.len() >= 80, "only {} cases", cases.len());
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/logs/xdp_subprogs.xdp_parse.l2.log");
    let mut failures = Vec::new();
    for (file, expected) in &cases {
        assert!(
            malformed().join(file).is_file(),
            "{file} is missing: run make.py"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .current_dir(malformed())
            .args(["annotate", file])
            .arg(&log)
            .output()
            .expect("run bpflog");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let fine = out.status.code() == Some(1)
            && stderr == format!("{expected}\n")
            && out.stdout.is_empty();
        if !fine {
            failures.push(format!(
                "{file}: exit {:?}\n  expected: {expected}\n  got:      {}",
                out.status.code(),
                stderr.trim_end()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_is_exactly_the_manifest() {
    let listed: std::collections::BTreeSet<String> =
        manifest().into_iter().map(|(f, _)| f).collect();
    let present: std::collections::BTreeSet<String> = std::fs::read_dir(malformed())
        .expect("malformed/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".o"))
        .collect();
    assert_eq!(
        listed, present,
        "make.py and expected.txt disagree with the folder"
    );
}

#[test]
fn both_byte_orders_cover_the_same_cases() {
    let names: Vec<String> = manifest().into_iter().map(|(f, _)| f).collect();
    let le: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("le-")).collect();
    let be: Vec<&str> = names.iter().filter_map(|n| n.strip_prefix("be-")).collect();
    assert_eq!(le, be);
}
