//! `bpflog profile` over the real fixture logs: counts checked against the kernel's own
//! annotations, golden output, CSV and JSON read back, comparisons.
//!
//! Snapshots live in `snapshots/profile__*.snap`.

mod common;

use bpflog::log::{Line, classify};
use bpflog::object::BpfObject;
use bpflog::profile::{
    Comparison, Format, Profile, ProfileRequest, RenderOptions, Verdict, compare, profile_bare,
    render, render_comparison, render_source,
};
use bpflog::{Input, LogData, Palette, Program, SourceFiles, SourceSearch};
use common::{FixtureLog, fixture_logs, fixtures, strip_annotations};
use std::collections::BTreeMap;

/// Profiles `log` (bytes) for the fixture's program.
fn profile_bytes(fixture: &FixtureLog, log: &[u8]) -> Profile {
    let data = std::fs::read(&fixture.object).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = Program::new(&object, object.program(&fixture.program).unwrap()).unwrap();
    profile_bare(&program, log).unwrap()
}

fn fixture_named(name: &str) -> FixtureLog {
    fixture_logs()
        .into_iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

/// Fixtures whose logs carry the kernel's own annotation lines (objects with `.BTF.ext`).
fn kernel_annotated() -> impl Iterator<Item = FixtureLog> {
    fixture_logs()
        .into_iter()
        .filter(|f| !f.name.contains(".nobtfext."))
}

/// Instruction lines per `(basename, line)` counted straight from the kernel's log: each
/// `; text @ file:line` line sets the current source line, each following instruction line
/// counts for it, and a new verification pass (`Validating ...`) forgets it. Returns the counts
/// and the instruction lines under no annotation.
fn direct_count(log: &[u8]) -> (BTreeMap<(String, u32), u64>, u64) {
    let mut counts = BTreeMap::new();
    let mut current: Option<(String, u32)> = None;
    let mut orphans = 0;
    for raw in log.split(|&b| b == b'\n') {
        match classify(raw) {
            Line::Annotation(a) => {
                let (file, line) = a.location.expect("6.9+ annotations name file:line");
                current = Some((String::from_utf8_lossy(file).into_owned(), line));
            }
            Line::Validating { .. } => current = None,
            Line::Insn(_) => match &current {
                Some(key) => *counts.entry(key.clone()).or_insert(0) += 1,
                None => orphans += 1,
            },
            _ => {}
        }
    }
    (counts, orphans)
}

/// Whether every instruction line of `log` has its source line above it. At log level 1 it
/// may not: after a path whose text the kernel dropped (an instruction line followed by the
/// state it resumes at), the kernel prints no source line where it printed the same one last on
/// the dropped path, and only the line table knows it.
fn attributable(log: &[u8]) -> bool {
    let mut resumed = false;
    for raw in log.split(|&b| b == b'\n') {
        match classify(raw) {
            Line::Annotation(_) => resumed = false,
            Line::Insn(_) if resumed => return false,
            Line::Insn(insn) => resumed = insn.resumed().is_some(),
            _ => {}
        }
    }
    true
}

#[test]
fn visits_equal_a_direct_count_over_every_kernel_annotated_log() {
    let mut checked = 0;
    let mut skipped = Vec::new();
    for fixture in kernel_annotated() {
        let log = std::fs::read(&fixture.log).unwrap();
        if !attributable(&log) {
            skipped.push(fixture.name.clone());
            continue;
        }
        let (expected, orphans) = direct_count(&log);
        let profile = profile_bytes(&fixture, &log);
        let mut got: BTreeMap<(String, u32), u64> = BTreeMap::new();
        for l in profile.lines.iter().filter(|l| l.counts.visits > 0) {
            *got.entry((l.basename().to_owned(), l.line)).or_insert(0) += l.counts.visits;
        }
        assert_eq!(got, expected, "{}", fixture.name);
        assert_eq!(profile.totals.unattributed, orphans, "{}", fixture.name);
        let visits: u64 = profile.lines.iter().map(|l| l.counts.visits).sum();
        assert_eq!(
            visits + profile.totals.unattributed,
            profile.totals.insn_lines,
            "{}",
            fixture.name
        );
        // With or without the kernel's lines, and with CRLF line ends: the same profile.
        assert_eq!(
            profile_bytes(&fixture, &strip_annotations(&log)),
            profile,
            "{}",
            fixture.name
        );
        let crlf: Vec<u8> = log
            .split_inclusive(|&b| b == b'\n')
            .flat_map(|l| [l.strip_suffix(b"\n").unwrap_or(l), b"\r\n"].concat())
            .collect();
        assert_eq!(profile_bytes(&fixture, &crlf), profile, "{}", fixture.name);
        checked += usize::from(!expected.is_empty());
    }
    assert!(
        checked >= 20,
        "only {checked} logs had annotated instructions"
    );
    // The one fixture made for it, and only that one.
    assert_eq!(skipped, ["reject_dropped.xdp_reject_dropped.l1.log"]);
}

#[test]
fn distinct_instructions_and_paths_are_counted_per_line() {
    // Count from the log itself: distinct indices and `from X to Y` targets per annotated line.
    for fixture in kernel_annotated().filter(|f| f.level == 2) {
        let log = std::fs::read(&fixture.log).unwrap();
        let profile = profile_bytes(&fixture, &log);
        let mut from_to = 0;
        let mut indices = std::collections::BTreeSet::new();
        for raw in log.split(|&b| b == b'\n') {
            match classify(raw) {
                Line::FromTo { .. } => from_to += 1,
                Line::Insn(i) => {
                    indices.insert(i.index);
                }
                _ => {}
            }
        }
        assert_eq!(profile.totals.paths, from_to, "{}", fixture.name);
        let insns: u64 = profile.lines.iter().map(|l| l.counts.insns).sum();
        assert_eq!(insns, indices.len() as u64, "{}", fixture.name);
        let paths: u64 = profile.lines.iter().map(|l| l.counts.paths).sum();
        assert_eq!(
            paths, from_to,
            "{}: every path target has a line",
            fixture.name
        );
        for l in &profile.lines {
            assert!(l.counts.insns <= l.counts.visits, "{}", fixture.name);
        }
    }
}

#[test]
fn verdicts_match_the_fixture_manifest() {
    let manifest = std::fs::read_to_string(fixtures().join("logs/MANIFEST")).unwrap();
    for fixture in fixture_logs() {
        let line = manifest
            .lines()
            .find(|l| l.split_whitespace().next() == Some(fixture.name.as_str()))
            .unwrap_or_else(|| panic!("{} is not in the manifest", fixture.name));
        let log = std::fs::read(&fixture.log).unwrap();
        let summary = profile_bytes(&fixture, &log).summary;
        let expected = if line.contains(" accepted") {
            Verdict::Accepted
        } else {
            Verdict::Rejected
        };
        assert_eq!(summary.verdict, expected, "{}", fixture.name);
        assert_eq!(
            summary.error.is_empty(),
            expected == Verdict::Accepted,
            "{}",
            fixture.name
        );
        assert!(summary.insns.is_some() && summary.total_states.is_some());
    }
}

fn rendered(profile: &Profile, format: Format, color: bool) -> String {
    let mut out = Vec::new();
    render(
        profile,
        &mut out,
        &RenderOptions::default()
            .format(format)
            .top(10)
            .palette(Palette::new(color)),
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(format!("profile__{name}"), text);
    });
}

const GOLDEN: [&str; 5] = [
    "branchy.xdp_branchy.l2.log",
    "loop_callback.loop_sum.l2.log",
    "reject_subprog.xdp_reject_subprog.l2.log",
    "reject_nested.xdp_reject_nested.l2.log",
    "reject_global.xdp_reject_global.l2.log",
];

#[test]
fn golden_tables_csv_and_json() {
    for name in GOLDEN {
        let fixture = fixture_named(name);
        let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
        let stem = name.trim_end_matches(".log");
        snapshot(
            &format!("{stem}.table"),
            &rendered(&profile, Format::Table, false),
        );
        snapshot(
            &format!("{stem}.csv"),
            &rendered(&profile, Format::Csv, false),
        );
        snapshot(
            &format!("{stem}.json"),
            &rendered(&profile, Format::Json, false),
        );
    }
    let fixture = fixture_named("branchy.xdp_branchy.l2.log");
    let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
    snapshot(
        "branchy.xdp_branchy.l2.table.colored",
        &rendered(&profile, Format::Table, true),
    );
}

fn source_view(profile: &Profile, dirs: Vec<std::path::PathBuf>, color: bool) -> String {
    let mut files = SourceFiles::new(SourceSearch::default().dirs(dirs).maps(Vec::new()));
    let mut out = Vec::new();
    render_source(
        profile,
        &mut files,
        &mut out,
        &RenderOptions::default().palette(Palette::new(color)),
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn source_view_with_and_without_the_files() {
    let fixture = fixture_named("reject_subprog.xdp_reject_subprog.l2.log");
    let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
    let found = source_view(&profile, vec![fixtures().join("src")], false);
    let source = std::fs::read_to_string(fixtures().join("src/reject_subprog.c")).unwrap();
    // The whole file, one gutter per line.
    assert_eq!(found.lines().count(), 1 + source.lines().count());
    snapshot("reject_subprog.xdp_reject_subprog.l2.source", &found);
    let fallback = source_view(&profile, Vec::new(), false);
    assert!(fallback.contains("file not found: lines from BTF"));
    snapshot("reject_subprog.xdp_reject_subprog.l2.source_btf", &fallback);
    let fixture = fixture_named("branchy.xdp_branchy.l2.log");
    let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
    snapshot(
        "branchy.xdp_branchy.l2.source.colored",
        &source_view(&profile, vec![fixtures().join("src")], true),
    );
}

/// RFC 4180 records (quoted fields may hold commas, quotes and newlines).
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\n') => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(
        field.is_empty() && record.is_empty(),
        "CSV ends with a newline"
    );
    records
}

fn all_profiles() -> impl Iterator<Item = (FixtureLog, Profile)> {
    fixture_logs().into_iter().map(|f| {
        let p = profile_bytes(&f, &std::fs::read(&f.log).unwrap());
        (f, p)
    })
}

#[test]
fn csv_reads_back_as_the_profile() {
    for (fixture, mut profile) in all_profiles() {
        // Quoting is exercised on every profile: a source text with a comma, a quote, a newline
        // (a control byte: written escaped, as `\x0a`).
        if let Some(l) = profile.lines.first_mut() {
            l.source = "a, \"quoted\"\nline".into();
        }
        let records = parse_csv(&rendered(&profile, Format::Csv, false));
        assert_eq!(
            records[0],
            [
                "kind", "name", "file", "line", "visits", "insns", "paths", "source"
            ]
        );
        let rows = &records[1..];
        assert_eq!(rows.len(), profile.lines.len() + profile.functions.len());
        for (row, l) in rows.iter().zip(&profile.lines) {
            let expected = [
                "line".to_owned(),
                String::new(),
                l.file.clone(),
                l.line.to_string(),
                l.counts.visits.to_string(),
                l.counts.insns.to_string(),
                l.counts.paths.to_string(),
                l.source.replace('\n', "\\x0a"),
            ];
            assert_eq!(row[..], expected[..], "{}", fixture.name);
        }
        for (row, f) in rows[profile.lines.len()..].iter().zip(&profile.functions) {
            let expected = [
                f.kind.as_str().to_owned(),
                f.name.clone(),
                String::new(),
                String::new(),
                f.counts.visits.to_string(),
                f.counts.insns.to_string(),
                f.counts.paths.to_string(),
                String::new(),
            ];
            assert_eq!(row[..], expected[..], "{}", fixture.name);
        }
    }
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn opt(v: &serde_json::Value) -> Option<u64> {
    if v.is_null() { None } else { Some(u(v)) }
}

#[test]
fn json_reads_back_as_the_profile() {
    for (fixture, mut profile) in all_profiles() {
        if let Some(l) = profile.lines.first_mut() {
            l.source = "tab\there \"quote\" back\\slash \u{1} ünïcode".into();
        }
        let text = rendered(&profile, Format::Json, false);
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", fixture.name));
        assert_eq!(v["program"], profile.program.as_str());
        let s = &v["summary"];
        let summary = &profile.summary;
        assert_eq!(s["verdict"], summary.verdict.as_str());
        let error: Vec<&str> = s["error"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(error, summary.error);
        assert_eq!(opt(&s["insns"]), summary.insns);
        assert_eq!(opt(&s["insns_limit"]), summary.insns_limit);
        assert_eq!(opt(&s["max_states_per_insn"]), summary.max_states_per_insn);
        assert_eq!(opt(&s["total_states"]), summary.total_states);
        assert_eq!(opt(&s["peak_states"]), summary.peak_states);
        assert_eq!(opt(&s["mark_read"]), summary.mark_read);
        assert_eq!(opt(&s["duration"]), summary.duration);
        assert_eq!(opt(&s["stack_depth"]), summary.stack_depth());
        assert!(s["stack_depths"].is_null() == summary.stack_depths.is_none());
        let t = &v["totals"];
        assert_eq!(u(&t["insn_lines"]), profile.totals.insn_lines);
        assert_eq!(u(&t["paths"]), profile.totals.paths);
        assert_eq!(u(&t["unattributed"]), profile.totals.unattributed);
        let lines = v["lines"].as_array().unwrap();
        assert_eq!(lines.len(), profile.lines.len());
        for (j, l) in lines.iter().zip(&profile.lines) {
            assert_eq!(j["file"], l.file.as_str());
            assert_eq!(u(&j["line"]), u64::from(l.line));
            assert_eq!(u(&j["visits"]), l.counts.visits);
            assert_eq!(u(&j["insns"]), l.counts.insns);
            assert_eq!(u(&j["paths"]), l.counts.paths);
            assert_eq!(j["source"], l.source.as_str());
        }
        let functions = v["functions"].as_array().unwrap();
        assert_eq!(functions.len(), profile.functions.len());
        for (j, f) in functions.iter().zip(&profile.functions) {
            assert_eq!(j["name"], f.name.as_str());
            assert_eq!(j["kind"], f.kind.as_str());
            assert_eq!(u(&j["visits"]), f.counts.visits);
            assert_eq!(u(&j["insns"]), f.counts.insns);
            assert_eq!(u(&j["paths"]), f.counts.paths);
        }
    }
}

#[test]
fn functions_cover_entry_subprograms_and_inline_chains() {
    // reject_nested.c: read_opt_byte is inlined into parse_ipv4_opts, inlined into parse_l3,
    // inlined into the entry program: each caller's totals include its callees'.
    let fixture = fixture_named("reject_nested.xdp_reject_nested.l2.log");
    let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
    let visits = |name: &str| {
        profile
            .functions
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("no function {name}"))
            .counts
            .visits
    };
    assert_eq!(visits("xdp_reject_nested"), profile.totals.insn_lines);
    assert!(visits("read_opt_byte") >= 1);
    assert!(visits("parse_ipv4_opts") >= visits("read_opt_byte"));
    assert!(visits("parse_l3") >= visits("parse_ipv4_opts"));
    // Without DWARF: the entry program and the subprograms only.
    let fixture = fixture_named("xdp_subprogs.nodwarf.xdp_parse.l2.log");
    let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
    assert!(
        profile
            .functions
            .iter()
            .all(|f| f.kind != bpflog::profile::FunctionKind::Inlined)
    );
    let total: u64 = profile.functions.iter().map(|f| f.counts.visits).sum();
    assert_eq!(
        total, profile.totals.insn_lines,
        "the parts partition the program"
    );
}

#[test]
fn a_comparison_of_two_real_logs() {
    // One program, two logs: level 1 keeps only the rejected path, level 2 every path.
    let old_fixture = fixture_named("reject_entry.xdp_reject_entry.l1.log");
    let new_fixture = fixture_named("reject_entry.xdp_reject_entry.l2.log");
    let old = profile_bytes(&old_fixture, &std::fs::read(&old_fixture.log).unwrap());
    let new = profile_bytes(&new_fixture, &std::fs::read(&new_fixture.log).unwrap());
    let c: Comparison = compare(old.clone(), new.clone());
    for l in &c.lines {
        let find = |p: &Profile| {
            p.lines
                .iter()
                .find(|x| x.file == l.file && x.line == l.line)
                .map(|x| x.counts)
                .unwrap_or_default()
        };
        assert_eq!(l.change.old, find(&old));
        assert_eq!(l.change.new, find(&new));
    }
    let deltas: Vec<u64> = c
        .lines
        .iter()
        .map(|l| l.change.visits().unsigned_abs())
        .collect();
    assert!(
        deltas.windows(2).all(|w| w[0] >= w[1]),
        "largest change first"
    );
    let sum: i64 = c.lines.iter().map(|l| l.change.visits()).sum();
    assert_eq!(
        sum,
        (new.totals.insn_lines - new.totals.unattributed) as i64
            - (old.totals.insn_lines - old.totals.unattributed) as i64
    );
    let mut out = Vec::new();
    render_comparison(&c, &mut out, &RenderOptions::default()).unwrap();
    snapshot(
        "compare.reject_entry.l1.l2",
        &String::from_utf8(out).unwrap(),
    );
    for format in [Format::Csv, Format::Json] {
        let mut out = Vec::new();
        render_comparison(&c, &mut out, &RenderOptions::default().format(format)).unwrap();
        let text = String::from_utf8(out).unwrap();
        if format == Format::Json {
            snapshot("compare.reject_entry.l1.l2.json", &text);
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let lines = v["lines"].as_array().unwrap();
            assert_eq!(lines.len(), c.lines.len());
            for (j, l) in lines.iter().zip(&c.lines) {
                assert_eq!(j["delta"]["visits"].as_i64(), Some(l.change.visits()));
                assert_eq!(u(&j["old"]["visits"]), l.change.old.visits);
                assert_eq!(u(&j["new"]["paths"]), l.change.new.paths);
            }
            assert_eq!(v["old"]["summary"]["verdict"], "rejected");
        } else {
            let records = parse_csv(&text);
            assert_eq!(records.len(), 1 + c.lines.len() + c.functions.len());
            for (r, l) in records[1..].iter().zip(&c.lines) {
                assert_eq!(r[6], l.change.visits().to_string());
            }
        }
    }
}

#[test]
fn a_huge_log_costs_two_counters_per_instruction() {
    // The level-2 log repeated: counts scale, nothing else grows (the profiler keeps no lines).
    let fixture = fixture_named("branchy.xdp_branchy.l2.log");
    let log = std::fs::read(&fixture.log).unwrap();
    let once = profile_bytes(&fixture, &log);
    let repeated = log.repeat(50);
    let many = profile_bytes(&fixture, &repeated);
    assert_eq!(many.totals.insn_lines, 50 * once.totals.insn_lines);
    assert_eq!(many.lines.len(), once.lines.len());
    for (a, b) in once.lines.iter().zip(&many.lines) {
        assert_eq!((&a.file, a.line), (&b.file, b.line));
        assert_eq!(b.counts.visits, 50 * a.counts.visits);
        assert_eq!(b.counts.insns, a.counts.insns);
    }
    assert_eq!(many.summary, once.summary);
}

mod cli {
    //! `bpflog profile` end to end.

    use super::*;
    use std::process::{Command, Output};

    fn bpflog() -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpflog"));
        for var in ["NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "TERM", "CI"] {
            cmd.env_remove(var);
        }
        cmd
    }

    fn obj(name: &str) -> std::path::PathBuf {
        fixtures().join("obj").join(name)
    }

    fn log(name: &str) -> std::path::PathBuf {
        fixtures().join("logs").join(name)
    }

    fn ok(out: Output) -> String {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    const LOG: &str = "reject_subprog.xdp_reject_subprog.l2.log";

    #[test]
    fn found_program_named_program_file_and_stdin_agree() {
        let fixture = fixture_named(LOG);
        let profile = profile_bytes(&fixture, &std::fs::read(&fixture.log).unwrap());
        let expected = rendered(&profile, Format::Json, false);
        let from_file = ok(bpflog()
            .args(["profile", "--format", "json"])
            .arg(obj("reject_subprog.o"))
            .arg(log(LOG))
            .output()
            .unwrap());
        assert_eq!(from_file, expected);
        let stripped = strip_annotations(&std::fs::read(log(LOG)).unwrap());
        for args in [
            &["--format", "json"][..],
            &["--format", "json", "--prog", "xdp_reject_subprog", "-"],
        ] {
            let out = ok(common::run_with_stdin(
                bpflog()
                    .arg("profile")
                    .arg(obj("reject_subprog.o"))
                    .args(args),
                &stripped,
            ));
            assert_eq!(out, expected, "{args:?}");
        }
    }

    #[test]
    fn colors_only_in_tables_and_when_asked() {
        let run = |args: &[&str]| {
            ok(bpflog()
                .arg("profile")
                .arg(obj("branchy.o"))
                .arg(log("branchy.xdp_branchy.l2.log"))
                .args(args)
                .output()
                .unwrap())
        };
        assert!(run(&["--color", "always"]).contains('\x1b'));
        assert!(!run(&[]).contains('\x1b'), "not a terminal");
        assert!(!run(&["--color", "always", "--format", "json"]).contains('\x1b'));
        assert!(!run(&["--color", "always", "--format", "csv"]).contains('\x1b'));
        let top3 = run(&["--top", "3"]);
        let tables: Vec<&str> = top3.split("\n\n").collect();
        assert_eq!(tables.len(), 3, "summary, lines, functions");
        assert_eq!(tables[1].lines().count(), 4, "header and three rows");
    }

    #[test]
    fn source_view_honors_source_dirs() {
        let out = ok(bpflog()
            .args(["profile", "--source"])
            .arg(obj("reject_subprog.o"))
            .arg(log(LOG))
            .arg("--source-dir")
            .arg(fixtures().join("src"))
            .output()
            .unwrap());
        assert!(out.starts_with("==> ./reject_subprog.c: 31 visits <==\n"));
        assert!(out.contains("     4 54 | \tfv->bytes += len;\n"));
        let mapped = ok(bpflog()
            .args(["profile", "--source", "--source-map"])
            .arg(format!("./={}/", fixtures().join("src").display()))
            .arg(obj("reject_subprog.o"))
            .arg(log(LOG))
            .output()
            .unwrap());
        assert_eq!(mapped, out);
    }

    #[test]
    fn compare_with_one_object_or_two() {
        let old = log("reject_entry.xdp_reject_entry.l1.log");
        let new = log("reject_entry.xdp_reject_entry.l2.log");
        let one = ok(bpflog()
            .args(["profile", "--compare"])
            .arg(&old)
            .arg(&new)
            .arg(obj("reject_entry.o"))
            .output()
            .unwrap());
        assert!(one.contains("insn_lines           20                54                +34\n"));
        let two = ok(bpflog()
            .args(["profile", "--format", "csv", "--compare"])
            .arg(&old)
            .arg(log("reject_entry.nodwarf.xdp_reject_entry.l2.log"))
            .arg("--old-obj")
            .arg(obj("reject_entry.o"))
            .arg("--new-obj")
            .arg(obj("reject_entry.nodwarf.o"))
            .output()
            .unwrap());
        let records = parse_csv(&two);
        // Without DWARF the new object has no inlined functions: they drop to zero.
        let inlined = records
            .iter()
            .find(|r| r[0] == "inlined" && r[1] == "parse_iphdr")
            .expect("parse_iphdr");
        assert_eq!(inlined[5], "0");
        // The lines come from the same BTF: the same deltas as with one object.
        let one_csv = ok(bpflog()
            .args(["profile", "--format", "csv", "--compare"])
            .arg(&old)
            .arg(&new)
            .arg(obj("reject_entry.o"))
            .output()
            .unwrap());
        let lines = |text: &str| -> Vec<Vec<String>> {
            parse_csv(text)
                .into_iter()
                .filter(|r| r[0] == "line")
                .collect()
        };
        assert_eq!(lines(&two), lines(&one_csv));
    }

    #[test]
    fn usage_errors_exit_2() {
        for args in [
            &["profile", "--source", "--format", "csv", "a.o", "b.log"][..],
            &["profile", "--old-obj", "a.o", "b.o"],
            &["profile", "--compare", "a.log", "b.log"],
            &["profile", "--compare", "a.log", "b.log", "--old-obj", "a.o"],
            &["profile", "--compare", "a.log", "b.log", "a.o", "c.log"],
            &["profile", "--compare", "a.log", "a.o", "--source"],
            &["profile"],
        ] {
            let out = bpflog().args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("Usage:"));
        }
        let out = bpflog()
            .args(["profile", "/nonexistent.o", "x.log"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
    }
}

#[test]
fn a_large_file_read_in_parts_profiles_as_one_pass() {
    // Over 4 MiB a part: the file is read by one thread per part and the parts joined. A log
    // with its summary, repeated, so that seams fall anywhere in it.
    let loop_sum = std::fs::read(fixtures().join("logs/loop_callback.loop_sum.l2.log")).unwrap();
    let copies = (20 << 20) / loop_sum.len() + 1;
    let big = loop_sum.repeat(copies);
    let path = std::env::temp_dir().join(format!("bpflog-parts-{}.log", std::process::id()));
    std::fs::write(&path, &big).unwrap();
    let data = std::fs::read(fixtures().join("obj/loop_callback.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = Program::new(&object, object.program("loop_sum").unwrap()).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let programs = [program];
    let mut files = SourceFiles::new(SourceSearch::default());
    let mut profiled = |data, threads| {
        let request = ProfileRequest::default().threads(threads);
        let input = Input::among(&programs, data);
        bpflog::profile::profile(input, &request, &mut files).unwrap()
    };
    let in_parts = profiled(LogData::File((&file).into()), 4);
    let _ = std::fs::remove_file(&path);
    // The log fits, with no line taken as noise.
    assert_eq!(in_parts.notes, []);
    let stream = |log: &[u8]| LogData::Stream(std::io::Cursor::new(log.to_vec()));
    let one_pass = profiled(stream(&big), 1);
    assert_eq!(in_parts.profile, one_pass.profile);
    let one_log = profiled(stream(&loop_sum), 1);
    assert_eq!(
        in_parts.profile.totals.insn_lines,
        one_log.profile.totals.insn_lines * copies as u64
    );
}

#[test]
fn several_programs_in_a_large_file_profile_as_the_first_pass_would_have() {
    // loop_callback.o has two programs: a first pass would choose loop_sum for every log and
    // profile the logs it planned for it. Read once in 4 parts, the file gives that profile.
    let loop_sum = std::fs::read(fixtures().join("logs/loop_callback.loop_sum.l2.log")).unwrap();
    let big = loop_sum.repeat((20 << 20) / loop_sum.len() + 1);
    let path = std::env::temp_dir().join(format!("bpflog-planned-{}.log", std::process::id()));
    std::fs::write(&path, &big).unwrap();
    let data = std::fs::read(fixtures().join("obj/loop_callback.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let programs: Vec<Program> = object
        .programs()
        .into_iter()
        .map(|id| Program::new(&object, id).unwrap())
        .collect();
    let file = std::fs::File::open(&path).unwrap();
    let mut files = SourceFiles::new(SourceSearch::default());
    let mut profiled = |prog| {
        let request = ProfileRequest::default().threads(4);
        let input = Input::among(&programs, (&file).into()).prog(prog);
        let p = bpflog::profile::profile(input, &request, &mut files).unwrap();
        assert_eq!(p.notes, []);
        (p.program, p.profile)
    };
    let planned = profiled(None);
    let named = profiled(Some("loop_sum"));
    // The first pass, and the logs it plans for the program taken out and profiled.
    let taken = bpflog::take(&programs, (&file).into(), None).unwrap();
    let _ = std::fs::remove_file(&path);
    let chosen = programs
        .iter()
        .position(|p| p.name() == "loop_sum")
        .unwrap();
    assert_eq!(taken.program, chosen);
    let mut expected = bpflog::profile::profile_bare(&programs[chosen], taken.logs).unwrap();
    expected.fill_sources(&mut files);
    assert_eq!(planned, (chosen, expected.clone()));
    assert_eq!(named, (chosen, expected));
}
