//! Hostile logs through the `bpflog` binary and the library: binary garbage, a line of 16 MiB
//! (the longest read) and one of 50 MB (refused) without a newline, indices past 2^32 and past u64, negative numbers, instructions past the
//! program, a log of another program. Lines the tool does not understand pass through unchanged,
//! nothing panics or hangs, and instructions that cannot be the program's are reported (a
//! warning on stderr, exit status 0), never guessed at.

mod common;

use bpflog::object::BpfObject;
use bpflog::{AnnotateOptions, Program};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn obj(name: &str) -> PathBuf {
    common::fixtures().join("obj").join(name)
}

fn log(name: &str) -> PathBuf {
    common::fixtures().join("logs").join(name)
}

/// A scratch file under the target directory, unique per test.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("scratch file");
    path
}

/// `bpflog annotate OBJ LOG --style kernel --color never ARGS...`.
fn annotate(object: &Path, log: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("annotate")
        .arg(object)
        .arg(log)
        .args(["--style", "kernel", "--color", "never"])
        .args(args)
        .output()
        .expect("run bpflog")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Bytes from a seeded xorshift generator.
fn garbage(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

#[test]
fn binary_garbage_passes_through_byte_for_byte() {
    let bytes = garbage(1 << 20, 0x9e37_79b9_7f4a_7c15);
    let path = scratch("garbage.log", &bytes);
    let out = annotate(&obj("xdp_subprogs.o"), &path, &["--prog", "xdp_parse"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // No line of random bytes is an instruction line: nothing is inserted, nothing lost.
    assert!(out.stdout == bytes, "garbage did not come back unchanged");
}

/// A log whose second line is `len` bytes of `x` without a newline.
fn long_line_log(name: &str, len: usize) -> (Vec<u8>, PathBuf) {
    let mut bytes = b"0: (b7) r0 = 0\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'x', len));
    let path = scratch(name, &bytes);
    (bytes, path)
}

#[test]
fn a_line_of_16_mib_without_newline_passes_through() {
    // The longest line read (bpflog::log::MAX_LINE).
    let (bytes, path) = long_line_log("long-line.log", 16 << 20);
    let started = std::time::Instant::now();
    let out = annotate(&obj("xdp_subprogs.o"), &path, &["--prog", "xdp_parse"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed().as_secs() < 60,
        "took {:?}",
        started.elapsed()
    );
    let first = out.stdout.split(|&b| b == b'\n').next().unwrap_or_default();
    assert!(
        first.starts_with(b"; ") && first.windows(18).any(|w| w == b" @ xdp_subprogs.c:"),
        "the instruction is annotated: {}",
        String::from_utf8_lossy(first)
    );
    assert!(out.stdout.ends_with(&bytes[bytes.len() - 1000..]));
    // The long line is written back whole, and a newline is not invented after it.
    assert_eq!(
        out.stdout.len() - bytes.len(),
        out.stdout.iter().position(|&b| b == b'\n').unwrap() + 1
    );
}

/// A line longer than any log's (50 MB without a newline) is not held whole: the log is
/// refused at that line, with one line naming the file and the line, in bounded time.
#[test]
fn a_line_of_50_mb_without_newline_is_refused_by_number() {
    let (_, path) = long_line_log("longer-line.log", 50 << 20);
    let started = std::time::Instant::now();
    let out = annotate(&obj("xdp_subprogs.o"), &path, &["--prog", "xdp_parse"]);
    assert!(
        started.elapsed().as_secs() < 60,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let expected = format!(
        "bpflog: error: {}: line 2 is longer than 16 MiB, the most bpflog reads of a line (a verifier log's lines are a few KB at most)\n",
        path.display()
    );
    assert_eq!(stderr(&out), expected);
}

/// Lines with numbers no program has, and lines that only look numbered.
const IMPOSSIBLE: &str = "\
4294967296: (b7) r0 = 0
18446744073709551615: (95) exit
18446744073709551616: (95) exit
99999999999999999999999999: (95) exit
-1: (b7) r0 = 0
-4294967296: R1=ctx()
from 4294967297 to 18446744073709551615: R0=0
func#4294967295 @4294967295
4294967296: safe
";

#[test]
fn impossible_indices_pass_through_and_are_reported() {
    let path = scratch("impossible.log", IMPOSSIBLE.as_bytes());
    let out = annotate(&obj("xdp_subprogs.o"), &path, &["--prog", "xdp_parse"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        IMPOSSIBLE,
        "lines pass through unchanged"
    );
    // One instruction line parses (2^32); 20 digits and more are no index to the classifier
    // (u64::MAX included), so those lines are not instruction lines, and negative ones neither.
    let err = stderr(&out);
    assert!(
        err.contains(": 1 instruction lines name instructions past the ")
            && err.contains("of program xdp_parse")
            && err.contains("is the log from another program?"),
        "{err}"
    );
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn a_log_of_another_program_is_reported_when_forced() {
    // reject_subprog's log is longer than xdp_parse: its later instructions lie past the end.
    let out = annotate(
        &obj("xdp_subprogs.o"),
        &log("reject_subprog.xdp_reject_subprog.l2.log"),
        &["--prog", "xdp_parse"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("bpflog: warning: "), "{err}");
    assert!(
        err.contains("does not fit the program named by --prog"),
        "{err}"
    );
    // Without --prog the log is refused: it fits no program of the object.
    let out = annotate(
        &obj("xdp_subprogs.o"),
        &log("reject_subprog.xdp_reject_subprog.l2.log"),
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("the log matches no program of the object"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_log_of_the_sibling_program_is_not_guessed() {
    // two_in_one.o: the log of xdp_first with --prog xdp_second.
    let out = annotate(
        &obj("two_in_one.o"),
        &log("two_in_one.xdp_first.l2.log"),
        &["--prog", "xdp_second"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bpflog: warning: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_library_counts_instructions_past_the_program() {
    let data = std::fs::read(obj("xdp_subprogs.o")).expect("object");
    let object = BpfObject::parse(&data).expect("parse");
    let program =
        Program::new(&object, object.program("xdp_parse").expect("xdp_parse")).expect("layout");
    let len = program.layout.len;
    let log = format!(
        "0: (b7) r0 = 0\n{}: (95) exit\n{}: (95) exit\n4294967296: (95) exit\n-5: (95) exit\n",
        len - 1,
        len
    );
    let mut out = Vec::new();
    let stats = bpflog::annotate_bare(
        &program,
        log.as_bytes(),
        &mut out,
        &AnnotateOptions::default(),
    )
    .expect("annotate");
    assert_eq!(stats.instructions, 4);
    assert_eq!(stats.out_of_range, 2, "{len} and 2^32 are past the program");
}

#[test]
fn deep_call_chains_in_a_log_stay_linear() {
    // Every line a call that does not return to the next instruction: a naive call stack grows
    // by one per line and is copied at each. 20,000 such lines must take well under seconds.
    let mut log = String::new();
    for k in 0..20_000u64 {
        log.push_str(&format!("{}: (85) call pc+1\n", 2 * k));
    }
    log.push_str("R1 invalid mem access 'scalar'\nprocessed 20000 insns (limit 1000000)\n");
    let path = scratch("deep-calls.log", log.as_bytes());
    let started = std::time::Instant::now();
    let out = annotate(
        &obj("xdp_subprogs.o"),
        &path,
        &["--prog", "xdp_parse", "--diagnostic"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed().as_secs() < 20,
        "took {:?}",
        started.elapsed()
    );
}

/// A veristat `-v` capture of `two_in_one.o`'s programs `xdp_first` and `xdp_second` (their real
/// level-2 logs), with libbpf's stderr written into the middle of `xdp_first`'s `;` lines number
/// `garbled` (counted from 0) by `2>&1`, and the log line where the first garbled line is.
fn veristat_with_stderr_inside(garbled: &[usize]) -> (Vec<u8>, u64) {
    let stderr = b"libbpf: prog 'xdp_second': BPF program load failed: Permission denied\n";
    let first = std::fs::read(log("two_in_one.xdp_first.l2.log")).unwrap();
    let second = std::fs::read(log("two_in_one.xdp_second.l2.log")).unwrap();
    let mut lines: Vec<Vec<u8>> = first.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let annotations: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with(b"; "))
        .collect();
    for &n in garbled {
        let line = &mut lines[annotations[n]];
        let half = line.len() / 2;
        line.splice(half..half, stderr.iter().copied());
    }
    let first = lines.join(&b'\n');
    let mut out = Vec::new();
    for (k, (prog, log)) in [("xdp_first", &first), ("xdp_second", &second)]
        .iter()
        .enumerate()
    {
        out.extend_from_slice(format!("PROCESSING tests/fixtures/obj/two_in_one.o/{prog}, DURATION US: {}, VERDICT: success, VERIFIER LOG:\n", 100 + k).as_bytes());
        out.extend_from_slice(log);
        out.push(b'\n');
    }
    out.extend_from_slice(b"Done. Processed 1 files, 0 skipped, 2 programs (0 skipped)\n");
    // The wrapper's line, then the log's lines before the first garbled one.
    let at = garbled.first().map_or(0, |&n| 2 + annotations[n] as u64);
    (out, at)
}

/// `bpflog profile OBJ LOG --format json ARGS...`: exit status, stderr, and the JSON.
fn profile_json(
    object: &Path,
    log: &Path,
    args: &[&str],
) -> (Option<i32>, String, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .arg("profile")
        .arg(object)
        .arg(log)
        .args(["--format", "json"])
        .args(args)
        .output()
        .expect("run bpflog");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), stderr(&out), json)
}

#[test]
fn one_garbled_line_among_many_that_fit_is_noise_not_a_veto() {
    // One `;` line with libbpf's stderr inside it, among a hundred lines that fit: both programs'
    // logs are annotated (as they came: they carry the kernel's lines), the line is passed
    // through and reported by its log line; profile and report take the log.
    let (capture, at) = veristat_with_stderr_inside(&[10]);
    let path = scratch("veristat-stderr-inside.txt", &capture);
    let object = obj("two_in_one.o");
    let out = annotate(&object, &path, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout == capture, "{err}");
    let warning = format!(
        "{}:{at}: a line that does not fit xdp_first among lines that do, passed through as noise: annotation '",
        path.display()
    );
    assert!(err.contains(&warning), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    // The same profile as the clean capture's, with the same warning.
    let (clean, _) = veristat_with_stderr_inside(&[]);
    let clean = scratch("veristat-clean.txt", &clean);
    for prog in ["xdp_first", "xdp_second"] {
        let (code, err, noisy) = profile_json(&object, &path, &["--prog", prog]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(err.contains(&warning), prog == "xdp_first", "{prog}: {err}");
        let (_, _, expected) = profile_json(&object, &clean, &["--prog", prog]);
        assert!(noisy["totals"]["insn_lines"].as_u64() > Some(30), "{noisy}");
        assert_eq!(noisy["totals"], expected["totals"], "{prog}");
        assert_eq!(noisy["lines"], expected["lines"], "{prog}");
    }

    let page = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile/veristat-stderr-inside.html");
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(["report", "--prog", "xdp_first", "-o"])
        .arg(&page)
        .arg(&object)
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    // The log's instruction lines are in the page's log.
    let shown = common::page::shown_log(&html);
    assert!(
        shown.iter().any(|l| l.contains("(b7) r0 = 0")),
        "{} bytes",
        html.len()
    );
}

#[test]
fn two_garbled_lines_close_together_are_a_misfit_never_an_empty_result() {
    // Two `;` lines in a row garbled: that is no longer noise. Without --prog the file is
    // refused at the first of them; with --prog the log is taken anyway, with a warning, and
    // profiled: never "0 instruction lines" with exit status 0.
    let (capture, at) = veristat_with_stderr_inside(&[10, 11]);
    let path = scratch("veristat-stderr-inside-twice.txt", &capture);
    let object = obj("two_in_one.o");
    let out = annotate(&object, &path, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains(&format!("xdp_first: log line {at}: annotation '")),
        "{err}"
    );

    let (code, err, profile) = profile_json(&object, &path, &["--prog", "xdp_first"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("the log does not fit xdp_first (named by --prog), taken anyway"),
        "{err}"
    );
    // xdp_first's log alone: xdp_second's wrapper names another program.
    let alone = log("two_in_one.xdp_first.l2.log");
    let (_, _, expected) = profile_json(&object, &alone, &["--prog", "xdp_first"]);
    assert!(
        profile["totals"]["insn_lines"].as_u64() > Some(30),
        "{profile}"
    );
    assert_eq!(profile["totals"], expected["totals"]);
}

#[test]
fn a_log_without_instructions_is_not_profiled_as_empty() {
    // An empty log, and one with only loader chatter: an error, not an empty profile or page.
    for (name, text) in [
        ("empty.log", &b""[..]),
        (
            "chatter.log",
            b"libbpf: loading object 'x' from buffer\nlibbpf: done\n",
        ),
        // A verifier line, but no instruction and no verdict.
        ("func-only.log", b"func#0 @0\n"),
    ] {
        let path = scratch(name, text);
        for object in ["two_in_one.o", "branchy.o"] {
            let (code, err, _) = profile_json(&obj(object), &path, &[]);
            assert_eq!(code, Some(1), "{object} {name}: {err}");
            // One error line last (a note may say which program was taken).
            let last = err.lines().last().unwrap_or_default();
            assert!(last.starts_with("bpflog: error: "), "{err}");
            assert_eq!(err.matches("bpflog: error").count(), 1, "{err}");
            let page = path.with_extension("html");
            let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
                .args(["report", "-o"])
                .arg(&page)
                .arg(obj(object))
                .arg(&path)
                .output()
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(1),
                "{object} {name}: {}",
                stderr(&out)
            );
            assert!(!page.exists(), "{object} {name}: a page was written");
        }
    }
}
