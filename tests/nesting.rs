//! Logs nested deeper than the kernel allows (`MAX_CALL_FRAMES`, 8 frames), through the binary
//! and the library: reject_subprog's real level-2 log with its call of `update_flow` repeated
//! 10,000 times, each repeat entering the callee again without leaving it. Every command that
//! follows call stacks (`annotate` with the diagnostic, `report`, `profile --flamegraph`)
//! finishes, names the line where the impossible depth first appears, and follows the stack no
//! deeper than the kernel's frames. And a program's logs read one after another, each starting
//! with no calls: 9 copies of a log rejected one call deep are not one log 9 calls deep.

mod common;

use bpflog::object::BpfObject;
use bpflog::report::{ReportOptions, report_data};
use bpflog::{MAX_CALL_FRAMES, Program, SourceFiles, SourceSearch};
use common::{fixtures, profile_with_stacks};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TIMES: usize = 10_000;

/// The nested log, and its line (from 1) where the callee is entered an 8th time, in frame 8.
fn nested(times: usize) -> (Vec<u8>, u64) {
    let log =
        std::fs::read_to_string(fixtures().join("logs/reject_subprog.xdp_reject_subprog.l2.log"))
            .unwrap();
    let lines: Vec<&str> = log.split_inclusive('\n').collect();
    let call = (lines.iter())
        .position(|l| l.starts_with("27: (85) call pc+7"))
        .unwrap();
    let entered = lines
        .iter()
        .position(|l| l.starts_with("35: (bf)"))
        .unwrap();
    let block = lines[call..=entered].concat();
    let mut out = lines[..call].concat();
    out.push_str(&block.repeat(times));
    out.push_str(&lines[entered + 1..].concat());
    let len = entered - call + 1;
    ((out.into_bytes()), (call + MAX_CALL_FRAMES * len) as u64)
}

/// The nested log, written once under the target directory.
fn nested_file() -> (PathBuf, u64) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nesting");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("nested-{TIMES}.log"));
    let (log, line) = nested(TIMES);
    // Each test writes its own copy under a unique name, then renames it into place.
    let tmp = dir.join(format!(
        "nested-{TIMES}.{:?}.tmp",
        std::thread::current().id()
    ));
    std::fs::write(&tmp, log).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    (path, line)
}

fn object() -> PathBuf {
    fixtures().join("obj/reject_subprog.o")
}

fn bpflog(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .output()
        .expect("run bpflog")
}

fn with_program<T>(f: impl FnOnce(&Program<'_, '_>) -> T) -> T {
    let data = std::fs::read(object()).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = Program::new(&object, object.program("xdp_reject_subprog").unwrap()).unwrap();
    f(&program)
}

/// The warning's text after the place it names.
const WARNING: &str =
    ": calls nested deeper than the kernel's limit of 8 frames (no kernel printed this)";

#[test]
fn rich_annotation_names_the_line_and_stacks_no_deeper() {
    let (log, line) = nested_file();
    let out = bpflog(&[
        "annotate".as_ref(),
        "--style".as_ref(),
        "rich".as_ref(),
        "--color".as_ref(),
        "never".as_ref(),
        object().as_os_str(),
        log.as_os_str(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected = format!("bpflog: warning: {}:{line}{WARNING}", log.display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The diagnostic's call stack: as deep as the kernel's frames, not 10,000 calls.
    assert!(stdout.contains("error: R1 invalid mem access 'map_value_or_null'"));
    assert_eq!(
        stdout
            .matches("= note: called from xdp_reject_subprog")
            .count(),
        MAX_CALL_FRAMES - 1
    );
}

#[test]
fn rich_annotation_among_several_programs_names_the_line() {
    // Each log's program chosen as a first pass would (another object beside it): the same
    // warning, and nothing else.
    let (log, line) = nested_file();
    let (object, other) = (object(), fixtures().join("obj/branchy.o"));
    let rich = ["annotate", "--style", "rich", "--color", "never"];
    let mut args: Vec<&std::ffi::OsStr> = rich.map(std::ffi::OsStr::new).to_vec();
    args.extend([object.as_os_str(), other.as_os_str(), "--".as_ref()]);
    args.push(log.as_os_str());
    let out = bpflog(&args);
    let expected = format!("bpflog: warning: {}:{line}{WARNING}", log.display());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr.lines().collect();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        matches!(said[..], [w] if w.starts_with(&expected)),
        "{stderr}"
    );
}

/// Runs `bpflog COMMAND OBJ LOG ARGS... OUTPUT` on the nested log, writing to `output` under
/// the target directory: it must succeed, name the line of the log where the depth is first
/// impossible, and write the output.
fn names_the_line(command: &str, args: &[&str], output: &str) {
    let (log, line) = nested_file();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("nesting")
        .join(output);
    let object = object();
    let mut all: Vec<&std::ffi::OsStr> =
        vec![command.as_ref(), object.as_os_str(), log.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    all.push(path.as_os_str());
    let out = bpflog(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let expected = format!(
        "bpflog: warning: {}: log line {line}{WARNING}",
        log.display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
}

#[test]
fn the_report_names_the_line_and_its_stack_is_no_deeper() {
    names_the_line("report", &["-o"], "report.html");
    let (bytes, _) = nested(TIMES);
    let data = with_program(|p| report_data(p, &bytes[..], &ReportOptions::default()).unwrap());
    let stack = data["diag"]["stack"].as_array().unwrap();
    assert_eq!(stack.len(), MAX_CALL_FRAMES - 1);
}

#[test]
fn the_flame_graph_names_the_line() {
    names_the_line("profile", &["--flamegraph"], "flame.svg");
    let (bytes, line) = nested(TIMES);
    let stacks = with_program(|p| {
        let mut files = SourceFiles::new(SourceSearch::default());
        profile_with_stacks(p, &bytes[..], "nested", &mut files).1
    });
    assert_eq!(stacks.too_deep, Some(line));
}

/// A program's logs read one after another: 9 copies of reject_subprog's level-2 log, rejected
/// inside `update_flow` (one call deep), more copies than the kernel has frames.
fn nine_copies() -> (Vec<u8>, Vec<u8>) {
    let one =
        std::fs::read(fixtures().join("logs/reject_subprog.xdp_reject_subprog.l2.log")).unwrap();
    let nine = one.repeat(9);
    (one, nine)
}

#[test]
fn each_of_concatenated_logs_starts_with_no_calls() {
    // Each log starts with no calls, as the log alone does: the report's diagnostic and
    // explanation are the last log's, the same as the one log's.
    let (one, nine) = nine_copies();
    let (alone, all) = with_program(|p| {
        let options = ReportOptions::default();
        let alone = report_data(p, &one[..], &options).unwrap();
        (alone, report_data(p, &nine[..], &options).unwrap())
    });
    assert_eq!(alone["diag"]["stack"].as_array().unwrap().len(), 1);
    assert_eq!(all["diag"]["stack"], alone["diag"]["stack"]);
    assert_eq!(all["explain"]["chain"], alone["explain"]["chain"]);
    // A log cut before its error line, after a rejected one: what it shows alone, not the
    // rejection before it.
    let text = String::from_utf8(one.clone()).unwrap();
    let cut = &text.as_bytes()[..text.find("\nR1 invalid mem access").unwrap() + 1];
    let (alone, after) = with_program(|p| {
        let options = ReportOptions::default();
        let alone = report_data(p, cut, &options).unwrap();
        (
            alone,
            report_data(p, &[&one[..], cut].concat()[..], &options).unwrap(),
        )
    });
    assert_eq!(after["diag"], alone["diag"]);
    assert_eq!(after["explain"], alone["explain"]);
    // The flame graph's stacks: the one log's, each visited 9 times.
    let (alone, all) = with_program(|p| {
        let mut files = SourceFiles::new(SourceSearch::default());
        let alone = profile_with_stacks(p, &one, "one", &mut files).1;
        (alone, profile_with_stacks(p, &nine, "nine", &mut files).1)
    });
    assert_eq!(all.too_deep, None);
    let times_nine: Vec<(String, u64)> = (alone.lines.iter())
        .map(|(frames, n)| (frames.clone(), n * 9))
        .collect();
    assert_eq!(all.lines, times_nine);
    // And through the binary: no warning of an impossible depth.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nesting");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("nine-copies.log");
    std::fs::write(&log, &nine).unwrap();
    let object = object();
    for (command, option, output) in [
        ("report", "-o", "nine.html"),
        ("profile", "--flamegraph", "nine.svg"),
    ] {
        let output = dir.join(output);
        let out = bpflog(&[
            command.as_ref(),
            object.as_os_str(),
            log.as_os_str(),
            option.as_ref(),
            output.as_os_str(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{command}: {stderr}");
        assert!(!stderr.contains(WARNING), "{command}: {stderr}");
    }
}
