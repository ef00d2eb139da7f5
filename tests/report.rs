//! `bpflog report` and `bpflog profile --flamegraph`: the page's embedded data and the flame
//! graph's frames as snapshots, the page's self-containment and escaping, the CLI.
//!
//! The page itself is driven in a real browser by `tests/browser` (`npm test` there).
//! Snapshots live in `snapshots/report__*.snap`.

mod common;

use bpflog::object::BpfObject;
use bpflog::report::{ReportOptions, report_bare, report_data};
use bpflog::{Program, SourceFiles, SourceSearch};
use common::page::{pieces, shown_log};
use common::{fixture_logs, fixtures, profile_with_stacks};
use std::process::Command;

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(format!("report__{name}"), text);
    });
}

fn sources() -> SourceSearch {
    SourceSearch::default()
        .dirs(vec![fixtures().join("src")])
        .maps(Vec::new())
}

/// Runs `f` with the program of fixture log `name` and the log's bytes.
fn with_fixture<T>(name: &str, f: impl FnOnce(&Program<'_, '_>, &[u8]) -> T) -> T {
    let fixture = fixture_logs()
        .into_iter()
        .find(|l| l.name == format!("{name}.log"))
        .unwrap_or_else(|| panic!("no fixture {name}"));
    let data = std::fs::read(&fixture.object).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = Program::new(&object, object.program(&fixture.program).unwrap()).unwrap();
    let log = std::fs::read(&fixture.log).unwrap();
    f(&program, &log)
}

/// The page's HTML for `log`.
fn page(program: &Program<'_, '_>, log: &[u8]) -> String {
    let mut out = Vec::new();
    let options = ReportOptions::default()
        .title(String::new())
        .sources(sources());
    report_bare(program, log, &mut out, &options).unwrap();
    String::from_utf8(out).expect("the page is UTF-8")
}

/// The text of `<script type="application/json" id="ID">`, parsed.
fn block(html: &str, id: &str) -> serde_json::Value {
    let open = format!("<script type=\"application/json\" id=\"{id}\">");
    let start = html.find(&open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

#[test]
fn report_data_of_a_rejected_log_with_inlined_functions() {
    let data = with_fixture("reject_nested.xdp_reject_nested.l2", |program, log| {
        report_data(
            program,
            log,
            &ReportOptions::default()
                .title(String::new())
                .sources(sources()),
        )
        .unwrap()
    });
    snapshot("reject_nested.l2.data", &one_per_line(&data));
}

/// The data object with one line per key, and one per element of each array.
fn one_per_line(data: &serde_json::Value) -> String {
    let mut out = String::new();
    for (key, value) in data.as_object().unwrap() {
        match value {
            serde_json::Value::Array(items) if items.iter().any(|v| !v.is_number()) => {
                out.push_str(&format!("{key}:\n"));
                for item in items {
                    out.push_str(&format!("  {item}\n"));
                }
            }
            serde_json::Value::Object(fields) => {
                out.push_str(&format!("{key}:\n"));
                for (k, v) in fields {
                    out.push_str(&format!("  {k}: {v}\n"));
                }
            }
            _ => out.push_str(&format!("{key}: {value}\n")),
        }
    }
    out
}

#[test]
fn report_data_of_a_missing_source_file_has_the_btf_lines() {
    let data = with_fixture("reject_subprog.xdp_reject_subprog.l2", |program, log| {
        report_data(program, log, &ReportOptions::default()).unwrap()
    });
    let files = &data["files"];
    assert_eq!(files.as_array().unwrap().len(), 1);
    assert_eq!(files[0]["found"], false);
    assert_eq!(files[0]["text"], serde_json::Value::Null);
    let excerpt = files[0]["excerpt"].as_array().unwrap();
    assert!(
        excerpt
            .iter()
            .any(|l| l[0] == 54 && l[1] == "fv->bytes += len;"),
        "{excerpt:?}"
    );
}

#[test]
fn the_page_is_self_contained_and_its_log_is_the_kernel_style_annotation() {
    for name in [
        "reject_subprog.xdp_reject_subprog.l2",
        "loop_callback.loop_sum.l2",
        "reject_entry.nobtfext.xdp_reject_entry.l2",
    ] {
        with_fixture(name, |program, log| {
            let html = page(program, log);
            for banned in ["http:", "https:", "<link", " src=", "url(", "@import"] {
                assert!(!html.contains(banned), "{name}: {banned}");
            }
            // The data, the script and the log's pieces.
            let pieces = pieces(&html).len();
            assert!(pieces >= 1, "{name}");
            assert_eq!(html.matches("</script>").count(), 2 + pieces, "{name}");
            let shown = shown_log(&html);
            let mut annotated = Vec::new();
            bpflog::annotate_bare(program, log, &mut annotated, &Default::default()).unwrap();
            let expected = String::from_utf8(annotated).unwrap();
            assert_eq!(shown, expected.lines().collect::<Vec<_>>(), "{name}");
            let data = block(&html, "bpflog-data");
            // The page writes its data as it goes; the library hands out the same as values.
            let options = ReportOptions::default()
                .title(String::new())
                .sources(sources());
            assert_eq!(data, report_data(program, log, &options).unwrap(), "{name}");
            let lines = data["line_count"].as_u64().unwrap() as usize;
            assert_eq!(lines, expected.lines().count(), "{name}");
            assert_eq!(data["kinds"].as_str().unwrap().len(), lines, "{name}");
        });
    }
}

/// The log with each of the kernel's annotation lines cut to an old kernel's (`; text`,
/// without ` @ file:line`).
fn old_annotations(log: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(log);
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("; ").and_then(|l| l.rsplit_once(" @ ")) {
            Some((source, _)) => out.push_str(&format!("; {source}\n")),
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// The page's `kinds` and `jumps`, worked out from the log as `bpflog annotate` writes it in
/// kernel style: each line classified on its own.
fn kinds_of_annotated(program: &Program<'_, '_>, log: &[u8]) -> (String, Vec<u64>, Vec<String>) {
    use bpflog::log::{Line, classify};
    let mut annotated = Vec::new();
    bpflog::annotate_bare(program, log, &mut annotated, &Default::default()).unwrap();
    let (mut kinds, mut jumps, mut lines) = (String::new(), Vec::new(), Vec::new());
    let mut last: Option<u64> = None;
    for line in annotated.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        lines.push(String::from_utf8_lossy(line).into_owned());
        kinds.push(match classify(line) {
            Line::Insn(insn) if i32::try_from(insn.index).is_ok() => {
                let next = last.map_or(0, |i| i + 1);
                last = Some(insn.index);
                if insn.index == next {
                    'i'
                } else {
                    jumps.push(insn.index);
                    'j'
                }
            }
            Line::Other if line.starts_with(b" ") || line.starts_with(b"\t") => 'n',
            other => bpflog::report::line_kind_char(&other),
        });
    }
    // The text after the last line end is no line.
    if annotated.ends_with(b"\n") {
        kinds.pop();
        lines.pop();
    }
    (kinds, jumps, lines)
}

#[test]
fn the_data_agrees_with_the_annotated_log_and_the_profile() {
    // Each fixture log as the kernel wrote it, without its annotation lines (they are
    // inserted), and with an old kernel's (they are replaced).
    let mut checked = 0;
    for fixture in fixture_logs() {
        let data = std::fs::read(&fixture.object).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        let program = Program::new(&object, object.program(&fixture.program).unwrap()).unwrap();
        let log = std::fs::read(&fixture.log).unwrap();
        for (how, log) in [
            ("as written", log.clone()),
            ("without ; lines", common::strip_annotations(&log)),
            ("old ; lines", old_annotations(&log)),
        ] {
            let name = format!("{} {how}", fixture.name);
            let data = report_data(&program, &log[..], &ReportOptions::default()).unwrap();
            let (kinds, jumps, lines) = kinds_of_annotated(&program, &log);
            assert_eq!(data["kinds"].as_str().unwrap(), kinds, "{name}");
            assert_eq!(data["jumps"], serde_json::json!(jumps), "{name}");
            assert_eq!(data["line_count"], kinds.len(), "{name}");
            // The rejection's error lines, by their row.
            if let Some(errors) = data["diag"]["errors"].as_array() {
                assert!(!errors.is_empty(), "{name}");
                for error in errors {
                    let row = error[0].as_u64().unwrap() as usize;
                    assert_eq!(error[1].as_str().unwrap(), lines[row], "{name}");
                }
            }
            // The profile, as `profile` counts it from the log.
            let profile = bpflog::profile::profile_bare(&program, &log[..]).unwrap();
            let totals = &data["totals"];
            assert_eq!(totals["insn_lines"], profile.totals.insn_lines, "{name}");
            assert_eq!(totals["paths"], profile.totals.paths, "{name}");
            assert_eq!(
                totals["unattributed"], profile.totals.unattributed,
                "{name}"
            );
            let summary = &data["summary"];
            assert_eq!(
                summary["verdict"],
                profile.summary.verdict.as_str(),
                "{name}"
            );
            assert_eq!(
                summary["error"],
                serde_json::json!(profile.summary.error),
                "{name}"
            );
            assert_eq!(
                summary["insns"],
                serde_json::json!(profile.summary.insns),
                "{name}"
            );
            let mut expected: Vec<(u32, u64, u64, u64)> = (profile.lines.iter())
                .map(|l| (l.line, l.counts.visits, l.counts.insns, l.counts.paths))
                .collect();
            let mut src: Vec<(u32, u64, u64, u64)> = (data["src"].as_array().unwrap().iter())
                .map(|s| {
                    let n = |k: usize| s[k].as_u64().unwrap();
                    (n(1) as u32, n(2), n(3), n(4))
                })
                .collect();
            expected.sort_unstable();
            src.sort_unstable();
            assert_eq!(src, expected, "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 3 * 30, "{checked}");
}

/// The instruction index of each row of the page, from its `kinds` and `jumps` (`-1`: not an
/// instruction line).
fn insn_of_rows(data: &serde_json::Value) -> Vec<i64> {
    let mut jumps = data["jumps"].as_array().unwrap().iter();
    let mut last = -1i64;
    (data["kinds"].as_str().unwrap().chars())
        .map(|c| match c {
            'i' => {
                last += 1;
                last
            }
            'j' => {
                last = jumps.next().unwrap().as_i64().unwrap();
                last
            }
            _ => -1,
        })
        .collect()
}

#[test]
fn the_data_explains_a_rejection_as_bpflog_explain_does() {
    // Every rejected fixture log: those made for `explain` and the kernel's of tests/fixtures.
    let mut logs: Vec<(std::path::PathBuf, std::path::PathBuf, String)> = Vec::new();
    for dir in [fixtures().join("explain"), fixtures()] {
        for entry in std::fs::read_dir(dir.join("logs")).unwrap() {
            let log = entry.unwrap().path();
            let name = log.file_name().unwrap().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".log") else {
                continue;
            };
            let object = stem.split('.').next().unwrap();
            let program = stem.rsplit('.').nth(1).unwrap();
            if object.starts_with("reject") || object.starts_with("core_fail") {
                logs.push((
                    dir.join("obj").join(format!("{object}.o")),
                    log,
                    program.into(),
                ));
            }
        }
    }
    // The complexity limit: its help names the profile's hottest lines, the page's own.
    logs.push((
        fixtures().join("obj/loop_callback.o"),
        fixtures().join("explain/made/loop_callback.loop_sum.too_large.l2.log"),
        "loop_sum".into(),
    ));
    let mut explained = 0;
    for (object, log, program) in &logs {
        let name = log.display().to_string();
        let out = bpflog(&[
            "explain",
            object.to_str().unwrap(),
            log.to_str().unwrap(),
            "--prog",
            program,
            "--format",
            "json",
        ]);
        let text = String::from_utf8(out.stdout).unwrap();
        let expected: Vec<serde_json::Value> = (text.lines())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let bytes = std::fs::read(object).unwrap();
        let parsed = BpfObject::parse(&bytes).unwrap();
        let program = Program::new(&parsed, parsed.program(program).unwrap()).unwrap();
        let data = report_data(
            &program,
            &std::fs::read(log).unwrap()[..],
            &Default::default(),
        )
        .unwrap();
        let explain = &data["explain"];
        let [expected] = &expected[..] else {
            assert!(explain.is_null(), "{name}: {text}");
            continue;
        };
        for key in ["class", "error", "location", "chain", "help"] {
            assert_eq!(explain[key], expected[key], "{name}: {key}");
        }
        let class = bpflog::explain::CLASSES
            .iter()
            .find(|c| c.id.as_str() == expected["class"])
            .unwrap();
        assert_eq!(explain["title"], class.title, "{name}");
        assert_eq!(explain["requires"], class.requires, "{name}");
        // Each step: the row of its instruction, on the path up to the failure, and its
        // source line.
        let insns = insn_of_rows(&data);
        let steps = explain["steps"].as_array().unwrap();
        let chain = expected["chain"].as_array().unwrap();
        assert_eq!(steps.len(), chain.len(), "{name}");
        let mut before = -1;
        for (step, link) in chain.iter().zip(steps) {
            let row = link[0].as_i64().unwrap();
            let insn = step["insn"].as_i64().unwrap();
            if row < 0 {
                // No row: only for an instruction the log never shows (a program rejected
                // before any instruction was verified).
                assert!(!insns.contains(&insn), "{name}: {link} of insn {insn}");
                continue;
            }
            // In path order; an origin at the program's entry (R1, the context) is the failing
            // instruction's own row when that is the first.
            assert!(row >= before, "{name}: {link} after row {before}");
            before = row;
            assert_eq!(insns[row as usize], insn, "{name}");
            let loc = &data["locs"][link[1].as_u64().unwrap() as usize];
            let file = data["files"][loc[0].as_u64().unwrap() as usize]["name"].as_str();
            assert_eq!(file, step["file"].as_str(), "{name}");
            assert_eq!(loc[1], step["line"], "{name}");
            assert_eq!(loc[2], step["column"], "{name}");
        }
        // The failing step is the instruction the diagnostic names (when the log shows it):
        // but for a kfunc the kernel refuses once every path is verified, placed at its call,
        // which the loader left unresolved, before the instructions verified after it.
        let refused_after = class.id.as_str() == "missing-kernel-symbol";
        if let Some(failed) = steps.last().unwrap()[0].as_u64().filter(|_| !refused_after) {
            let first_error = data["diag"]["errors"][0][0].as_u64().unwrap();
            assert!(
                (failed + 1..first_error).all(|row| insns[row as usize] < 0),
                "{name}"
            );
        }
        explained += 1;
    }
    assert!(explained >= 10, "{explained} of {}", logs.len());
}

#[test]
fn hostile_log_bytes_stay_inside_the_data_block() {
    with_fixture("reject_subprog.xdp_reject_subprog.l2", |program, log| {
        let mut hostile = log.to_vec();
        hostile.extend_from_slice(
            b"</script><script>alert(1)</script><!-- \xff\xfe \"q\" \\ \x01\x1b[31m \xe2\x80\xa8\r\n\
              0: (b7) r0 = 0 ; R0=</SCRIPT>\n",
        );
        let html = page(program, &hostile);
        assert_eq!(html.matches("</script>").count(), 2 + pieces(&html).len());
        assert!(!html.to_ascii_lowercase()[..html.len() - 200].contains("<script>alert"));
        let text = shown_log(&html).join("\n");
        assert!(text.contains(
            "</script><script>alert(1)</script><!-- \u{fffd}\u{fffd} \"q\" \\ \u{1}\u{1b}[31m \u{2028}\n0: (b7) r0 = 0 ; R0=</SCRIPT>"
        ));
    });
}

#[test]
fn rows_carry_the_frame_and_the_decoded_state() {
    with_fixture("reject_subprog.xdp_reject_subprog.l2", |program, log| {
        let html = page(program, log);
        let rows: Vec<serde_json::Value> = pieces(&html).into_iter().flat_map(|p| p.1).collect();
        let text = |row: &serde_json::Value| match row {
            serde_json::Value::String(t) => t.clone(),
            _ => row[0].as_str().unwrap().to_owned(),
        };
        let frame = |row: &serde_json::Value| row.get(1).map_or(0, |f| f.as_u64().unwrap());
        let at = |start: &str| {
            rows.iter()
                .position(|r| text(r).starts_with(start))
                .unwrap()
        };
        // The call, in frame 0; the caller's full state (frame 0), the callee's (frame 1).
        let call = at("27: (85) call pc+7");
        assert_eq!(frame(&rows[call]), 0);
        let caller = &rows[call + 2];
        assert_eq!(
            text(caller),
            " R6=scalar(id=3,smin=umin=smin32=umin32=20,smax=umax=smax32=umax32=0xffff,var_off=(0x0; 0xffff)) R10=fp0 fp-8=mmmmmmmm"
        );
        assert_eq!(caller[1], 0);
        assert_eq!(caller[2], 0, "no fields");
        assert_eq!(caller[3], 1, "full");
        assert_eq!(
            caller[4],
            serde_json::json!([
                [
                    0,
                    "R6",
                    "scalar(id=3,smin=umin=smin32=umin32=20,smax=umax=smax32=umax32=0xffff,var_off=(0x0; 0xffff))",
                    6
                ],
                [0, "R10", "fp0", 10],
                [0, "fp-8", "mmmmmmmm", 1008]
            ])
        );
        let callee = &rows[call + 4];
        assert_eq!((callee[1].as_u64(), callee[3].as_u64()), (Some(1), Some(1)));
        // An instruction's changes: not full, liveness marks gone, in the callee's frame.
        let shift = &rows[at("36: (67) r3 <<= 32")];
        assert_eq!(shift[1], 1);
        assert_eq!(shift[3], 0);
        assert_eq!(shift[4][0][1], "R3");
        // The failing instruction prints no state and runs in frame 1; so does its error.
        let fail = at("38: (79) r4 = *(u64 *)(r1 +8)");
        assert_eq!(
            rows[fail],
            serde_json::json!(["38: (79) r4 = *(u64 *)(r1 +8)", 1, [4, 9, 29]])
        );
        assert_eq!(frame(&rows[fail + 1]), 1);
        // The call's fields: index, opcode, instruction, its operation and where it goes.
        assert_eq!(rows[call][2], serde_json::json!([4, 9, 18, 9, 35]));
        // Before the call: frame 0 rows are the text alone, or carry frame 0 with fields or a
        // state.
        assert!(rows[..call].iter().all(|r| frame(r) == 0));
        assert!(rows[0].is_string());
    });
}

#[test]
fn a_large_log_is_in_compressed_pieces_a_fraction_of_its_size() {
    with_fixture("branchy.xdp_branchy.l2", |program, log| {
        // Five copies: 9,670 lines, more than two pieces' worth of rows.
        let big = log.repeat(5);
        let html = page(program, &big);
        let pieces = pieces(&html);
        assert_eq!(pieces.len(), 3, "pieces of at most 4,096 rows");
        assert!(pieces.iter().all(|(_, rows)| rows.len() <= 4096));
        let shown = shown_log(&html);
        let mut annotated = Vec::new();
        bpflog::annotate_bare(program, &big[..], &mut annotated, &Default::default()).unwrap();
        let expected = String::from_utf8(annotated).unwrap();
        assert_eq!(shown, expected.lines().collect::<Vec<_>>());
        // The page, its script and data included, is a fraction of the log.
        assert!(
            html.len() * 4 < big.len(),
            "page {} bytes, log {} bytes",
            html.len(),
            big.len()
        );
    });
}

/// The frames of an inferno SVG: `depth  samples-from  width  title`, by depth then position.
fn frames(svg: &str) -> String {
    let mut rows: Vec<(i64, u64, u64, String)> = Vec::new();
    for g in svg.split("<g><title>").skip(1) {
        let title = g.split("</title>").next().unwrap();
        let attr = |name: &str| -> String {
            let at = g.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            g[at..].split('"').next().unwrap().to_owned()
        };
        let y: i64 = attr("y").parse().unwrap();
        rows.push((
            -y,
            attr("fg:x").parse().unwrap(),
            attr("fg:w").parse().unwrap(),
            title
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        ));
    }
    rows.sort();
    let top = rows.first().map_or(0, |r| r.0);
    rows.iter()
        .map(|(y, x, w, t)| format!("{:>2} {x:>4} {w:>4}  {t}", (y - top) / 16))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn flamegraph_frames_callbacks_subprograms_and_inlined_functions() {
    for name in [
        "reject_callback.xdp_reject_callback.l2",
        "reject_subprog.xdp_reject_subprog.l2",
        "reject_nested.xdp_reject_nested.l2",
        "loop_callback.loop_nested.l2",
    ] {
        let (profile, folded, svg) = with_fixture(name, |program, log| {
            let mut files = SourceFiles::new(sources());
            let (profile, stacks) = profile_with_stacks(program, log, name, &mut files);
            let mut svg = Vec::new();
            stacks.write_svg(&mut svg).unwrap();
            let mut folded = Vec::new();
            stacks.write_folded(&mut folded).unwrap();
            (
                profile,
                String::from_utf8(folded).unwrap(),
                String::from_utf8(svg).unwrap(),
            )
        });
        // Widths are visits: the root is every instruction line, each line frame its visits.
        let total: u64 = folded
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, profile.totals.insn_lines, "{name}");
        let stem = name.split('.').next().unwrap();
        let program = name.split('.').nth(1).unwrap();
        snapshot(
            &format!("{stem}.{program}.l2.flamegraph"),
            &format!(
                "{folded}\n--- SVG frames (depth, from, visits, title) ---\n{}",
                frames(&svg)
            ),
        );
    }
}

fn bpflog(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

#[test]
fn cli_report_and_flamegraph_write_their_files() {
    let dir = std::env::temp_dir().join(format!("bpflog-report-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("r.html");
    let svg = dir.join("f.svg");
    let obj = "tests/fixtures/obj/reject_subprog.o";
    let log = "tests/fixtures/logs/reject_subprog.xdp_reject_subprog.l2.log";
    let out = bpflog(&[
        "report",
        obj,
        log,
        "-o",
        html.to_str().unwrap(),
        "--source-dir",
        "tests/fixtures/src",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("update_flow"));

    let out = bpflog(&[
        "profile",
        obj,
        log,
        "--flamegraph",
        svg.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("kind,name,"));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.contains("<svg") && picture.contains("update_flow"));
    assert!(picture.contains("function search("), "inferno's search");

    // Standard output with -o -, and a missing object is an error naming it.
    let out = bpflog(&["report", obj, log, "-o", "-"]);
    assert!(out.status.success());
    assert!(out.stdout.starts_with(b"<!doctype html>"));
    let out = bpflog(&["report", "nope.o", log, "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.o"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_page_reads_no_log_text_with_a_regular_expression() {
    // What the page needs of a row is in its data ([`bpflog::report`]'s fields); the text is
    // only shown (and searched for what the user types).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(root.join("crates/bpflog/src/report/report.js")).unwrap();
    for pattern in [
        ".exec(",
        ".test(",
        ".match(",
        ".matchAll(",
        ".search(",
        "RegExp",
        ".replace(/",
        ".split(/",
        "indexOf(' ; ')",
    ] {
        assert!(!script.contains(pattern), "report.js uses {pattern}");
    }
}

#[test]
fn each_rows_fields_cut_its_text_where_the_log_crate_decoded_it() {
    use bpflog::log::{Line, classify};
    let mut checked = [0usize; 4];
    for name in [
        "reject_subprog.xdp_reject_subprog.l2",
        "branchy.xdp_branchy.l2",
        "loop_callback.loop_sum.l2",
    ] {
        with_fixture(name, |program, log| {
            let html = page(program, log);
            let data = block(&html, "bpflog-data");
            let kinds: Vec<char> = data["kinds"].as_str().unwrap().chars().collect();
            let rows: Vec<serde_json::Value> =
                pieces(&html).into_iter().flat_map(|p| p.1).collect();
            assert_eq!(rows.len(), kinds.len(), "{name}");
            for (row, &kind) in rows.iter().zip(&kinds) {
                let Some(fields) = row.get(2).and_then(|f| f.as_array()) else {
                    assert!(!"ijfl".contains(kind), "{name}: {row} has no fields");
                    continue;
                };
                let f: Vec<usize> = fields
                    .iter()
                    .map(|n| n.as_u64().unwrap() as usize)
                    .collect();
                let text = row[0].as_str().unwrap();
                let line = classify(text.as_bytes());
                match (kind, line) {
                    ('i' | 'j', Line::Insn(insn)) => {
                        assert_eq!(text[..f[0]], format!("{}: ", insn.index), "{name}: {text}");
                        let opcode = format!("({:02x}) ", insn.opcode.unwrap());
                        assert_eq!(text[f[0]..f[1]], opcode, "{name}: {text}");
                        assert_eq!(&text.as_bytes()[f[1]..f[2]], insn.text(), "{name}: {text}");
                        if let [_, _, _, at, target] = f[..] {
                            let op = &text[at..f[2]];
                            let off = (target as i64) - (insn.index as i64) - 1;
                            let (word, pc) = op.split_once(' ').unwrap();
                            assert!(
                                ["goto", "gotol", "may_goto", "call"].contains(&word),
                                "{op}"
                            );
                            assert_eq!(pc, format!("pc{off:+}"), "{name}: {text}");
                            checked[1] += 1;
                        } else {
                            assert_eq!(f.len(), 3);
                            assert!(!text[f[1]..f[2]].contains(" pc"), "{name}: {text}");
                        }
                        checked[0] += 1;
                    }
                    ('f', Line::FromTo { from, to }) => {
                        assert_eq!(text[f[0]..f[1]], from.to_string(), "{name}: {text}");
                        assert_eq!(text[f[2]..f[3]], to.to_string(), "{name}: {text}");
                        assert_eq!((f[4] as u64, f[5] as u64), (from, to));
                        checked[2] += 1;
                    }
                    ('l', Line::LiveRegsRow { index, .. }) => {
                        assert_eq!(f, [index as usize], "{name}: {text}");
                        checked[3] += 1;
                    }
                    other => panic!("{name}: {text}: fields {f:?} on {other:?}"),
                }
            }
        });
    }
    // Instruction lines, jumps and calls, paths and liveness rows were all met.
    assert!(checked.iter().all(|&n| n > 10), "{checked:?}");
}
