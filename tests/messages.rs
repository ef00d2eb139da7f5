//! What the `bpflog` binary says when something is wrong: one line, exit status 1, input text
//! quoted in bounded, escaped form (at most `EXCERPT_MAX` bytes, control bytes escaped), no log
//! taken for one when there is none, and a failed write to standard output reported.
//! (Objects with hostile names are in the malformed corpus: tests/malformed_corpus.rs.)

mod common;

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
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("messages");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("scratch file");
    path
}

fn bpflog(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .output()
        .expect("run bpflog")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit status 1 and a single line on stderr, which is returned.
fn one_error_line(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("bpflog: error: ") && err.ends_with('\n') && err.lines().count() == 1,
        "one error line: {err}"
    );
    err
}

/// Terminal escapes and a run of 100,000 bytes, as a hostile log puts them in a line.
const HOSTILE: &[u8] = b"\x1b]0;owned\x07\x1b[2J";

/// The quoted text starts escaped, is cut with `…` well before its 100,000 bytes, and no
/// control byte reaches the terminal.
fn quoted_safely(err: &str, quoted_from: &str) {
    let at = err.find(quoted_from).unwrap_or_else(|| panic!("{err}"));
    let quote = &err[at..];
    assert!(quote.starts_with(r"\x1b]0;owned\x07\x1b[2J"), "{err}");
    let cut = quote.find('…').unwrap_or_else(|| panic!("not cut: {err}"));
    assert!((190..=210).contains(&cut), "quoted {cut} bytes: {err}");
    assert!(err.len() < 1000, "{} bytes", err.len());
    assert!(!err.trim_end().chars().any(char::is_control), "{err:?}");
}

#[test]
fn a_log_line_in_an_error_is_cut_and_escaped() {
    // The real log of xdp_parse, its first annotation line made 100 kB of hostile text and the
    // next one another line's (one line alone would be noise): without --prog the log is
    // refused, quoting the first.
    let text = std::fs::read(log("xdp_subprogs.xdp_parse.l2.log")).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let first = lines.iter().position(|l| l.starts_with(b"; ")).unwrap();
    let mut hostile = b"; ".to_vec();
    hostile.extend_from_slice(HOSTILE);
    hostile.extend(std::iter::repeat_n(b'A', 100_000));
    hostile.extend_from_slice(b" @ xdp_subprogs.c:1");
    lines[first] = hostile;
    let second = first
        + 1
        + lines[first + 1..]
            .iter()
            .position(|l| l.starts_with(b"; "))
            .unwrap();
    lines[second] = b"; not a line of the program @ xdp_subprogs.c:2".to_vec();
    let path = scratch("long-annotation.log", &lines.join(&b'\n'));
    let out = bpflog(&[
        "annotate".as_ref(),
        obj("xdp_subprogs.o").as_os_str(),
        path.as_os_str(),
    ]);
    let err = one_error_line(&out);
    assert!(err.contains("annotation '"), "{err}");
    quoted_safely(&err, r"\x1b]0;");
}

#[test]
fn a_program_name_from_a_log_wrapper_is_cut_and_escaped() {
    // The first libbpf-wrapped log of a real bpftool capture, its program's name made hostile:
    // the log names a program no object has.
    let text = std::fs::read(common::fixtures().join("wrapped/bpftool-d.txt")).unwrap();
    let end = text
        .windows(24)
        .position(|w| w == b"-- END PROG LOAD LOG --\n")
        .unwrap();
    let mut name = HOSTILE.to_vec();
    name.extend(std::iter::repeat_n(b'n', 100_000));
    let quoted = [&b"prog '"[..], &name, b"'"].concat();
    let text = String::from_utf8_lossy(&text[..end + 24]).replace(
        "prog 'xdp_reject_subprog'",
        &String::from_utf8_lossy(&quoted),
    );
    let path = scratch("long-wrapper-name.log", text.as_bytes());
    let out = bpflog(&[
        "annotate".as_ref(),
        obj("reject_subprog.o").as_os_str(),
        path.as_os_str(),
    ]);
    let err = one_error_line(&out);
    assert!(err.contains("which no object has"), "{err}");
    quoted_safely(&err, r"\x1b]0;");
}

#[test]
fn help_version_completions_and_man_report_a_full_disk() {
    let cases: [&[&str]; 7] = [
        &["--help"],
        &["-h"],
        &["--version"],
        &["annotate", "--help"],
        &["help", "profile"],
        &["completions", "bash"],
        &["man"],
    ];
    for args in cases {
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .stdout(full)
            .output()
            .expect("run bpflog");
        let err = one_error_line(&out);
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
        // The same to a pipe: everything written, exit status 0.
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .output()
            .expect("run bpflog");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
}

/// `bpflog ARGS...` with `input` on standard input.
fn bpflog_stdin(args: &[&std::ffi::OsStr], input: &[u8]) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bpflog");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).expect("write stdin");
    drop(stdin);
    child.wait_with_output().expect("wait")
}

/// Each command on `log` (a file, then standard input), with an object of one program and one
/// of several: the output and stderr of each.
fn every_command(name: &str, log: &[u8]) -> Vec<(String, Output)> {
    let path = scratch(name, log);
    let html = scratch(&format!("{name}.html"), b"");
    std::fs::remove_file(&html).unwrap();
    let mut runs = Vec::new();
    for object in ["tc_prog.o", "two_in_one.o"] {
        let object = obj(object);
        for command in ["annotate", "profile", "report"] {
            let mut args: Vec<&std::ffi::OsStr> = vec![command.as_ref(), object.as_os_str()];
            if command == "report" {
                args.extend(["-o".as_ref(), html.as_os_str()]);
            }
            let what = format!("{command} {}", object.display());
            let mut with_file = args.clone();
            with_file.push(path.as_os_str());
            runs.push((format!("{what} FILE"), bpflog(&with_file)));
            runs.push((format!("{what} <STDIN"), bpflog_stdin(&args, log)));
            assert!(!html.exists(), "{what}: a report was written");
        }
    }
    runs
}

#[test]
fn an_empty_or_blank_log_is_an_error_for_every_command() {
    for (name, log, why) in [
        ("empty.log", &b""[..], "(empty)"),
        ("blank.log", &b"\n  \n\n"[..], "(3 blank lines)"),
    ] {
        for (what, out) in every_command(name, log) {
            let err = one_error_line(&out);
            assert!(err.contains(": no verifier log in it ("), "{what}: {err}");
            // Standard input with one program is profiled in one pass, not read again to say
            // why: what the profile lacks is said instead.
            let generic = what.starts_with("profile") && what.contains("tc_prog.o <STDIN");
            assert!(
                err.contains(why) || generic && err.contains("(no instruction line, no summary)"),
                "{what}: {err}"
            );
            assert!(out.stdout.is_empty(), "{what}: wrote output");
        }
    }
}

/// The loader's chatter before the first log of a real bpftool -d capture.
fn chatter() -> Vec<u8> {
    let text = std::fs::read(common::fixtures().join("wrapped/bpftool-d.txt")).unwrap();
    let begin = text
        .windows(27)
        .position(|w| w == b": -- BEGIN PROG LOAD LOG --")
        .unwrap();
    let line_start = text[..begin].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    text[..line_start].to_vec()
}

#[test]
fn loader_chatter_alone_is_no_log_to_profile_or_report_and_annotate_says_so() {
    let chatter = chatter();
    let lines = chatter.split(|&b| b == b'\n').count() - 1;
    assert!(lines > 10, "{lines}");
    for (what, out) in every_command("chatter.log", &chatter) {
        if what.starts_with("annotate") {
            // A filter: the chatter comes back byte for byte, and the warning says why nothing
            // was annotated.
            assert_eq!(out.status.code(), Some(0), "{what}: {}", stderr(&out));
            assert!(out.stdout == chatter, "{what}: output differs");
            assert_eq!(
                stderr(&out).lines().collect::<Vec<_>>(),
                [format!(
                    "bpflog: warning: {}: no verifier log in it (none of its {lines} lines is one the verifier prints); passed through unchanged",
                    if what.ends_with("FILE") {
                        scratch("chatter.log", &chatter).display().to_string()
                    } else {
                        "<stdin>".to_owned()
                    }
                )],
                "{what}"
            );
            continue;
        }
        let err = one_error_line(&out);
        let generic = what.starts_with("profile") && what.contains("tc_prog.o <STDIN");
        assert!(
            err.contains(&format!(
                ": no verifier log in it (none of its {lines} lines is one the verifier prints)"
            )) || generic && err.contains("(no instruction line, no summary)"),
            "{what}: {err}"
        );
        assert!(!err.contains("--prog"), "{what}: {err}");
    }
}

#[test]
fn a_log_without_instructions_is_taken_for_the_first_program_and_that_is_said() {
    // An accepted program's level-1 log is its summary line: nothing tells which of the
    // object's three programs it is. Without --prog, the first is taken, saying so; no claim
    // that --prog named it.
    let l1 = log("two_in_one.xdp_first.l1.log");
    for command in ["profile", "report"] {
        let html = scratch("l1.html", b"");
        let mut args: Vec<&std::ffi::OsStr> = vec![command.as_ref()];
        if command == "report" {
            args.extend(["-o".as_ref(), html.as_os_str()]);
        }
        let object = obj("two_in_one.o");
        args.extend([object.as_os_str(), l1.as_os_str()]);
        let out = bpflog(&args);
        let err = stderr(&out);
        // Then it has nothing to profile (a_level_1_log_has_nothing_to_profile...).
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        let said: Vec<&str> = err.lines().collect();
        assert_eq!(
            said[0],
            format!(
                "bpflog: note: {}: no instruction line in it tells its program; taken as xdp_first (--prog names another)",
                l1.display()
            ),
            "{command}"
        );
        assert!(
            matches!(&said[1..], [e] if e.contains(": nothing to ")),
            "{command}: {err}"
        );
    }
}

#[test]
fn a_level_1_log_has_nothing_to_profile_and_says_how_to_get_level_2() {
    // An accepted program's level-1 log keeps none of its paths: a profile, a flame graph or a
    // report of it would be empty. Each is an error that says so and how to get a level-2
    // log, and writes nothing; the level-2 log of the same load profiles.
    let svg = scratch("level-1.svg", b"");
    let html = scratch("level-1.html", b"");
    for (object, prog, l1, insns) in [
        (
            "xdp_subprogs.o",
            "xdp_parse",
            "xdp_subprogs.xdp_parse.l1.log",
            131,
        ),
        ("tc_prog.o", "tc_count", "tc_prog.tc_count.l1.log", 0),
    ] {
        let (object, l1) = (obj(object), log(l1));
        let insns = if insns == 0 {
            let text = std::fs::read_to_string(&l1).unwrap();
            let at = text.find("processed ").unwrap() + "processed ".len();
            text[at..].split(' ').next().unwrap().to_owned()
        } else {
            insns.to_string()
        };
        std::fs::remove_file(&svg).ok();
        std::fs::remove_file(&html).ok();
        for extra in [
            &["profile"][..],
            &["profile", "--format", "json"],
            &["profile", "--format", "csv"],
            &["profile", "--flamegraph", svg.to_str().unwrap()],
            &["report", "-o", html.to_str().unwrap()],
        ] {
            let mut args: Vec<&std::ffi::OsStr> = extra.iter().map(|a| a.as_ref()).collect();
            args.extend([
                "--prog".as_ref(),
                prog.as_ref(),
                object.as_os_str(),
                l1.as_os_str(),
            ]);
            let out = bpflog(&args);
            let err = one_error_line(&out);
            let what = if extra[0] == "report" {
                "report"
            } else {
                "profile of "
            };
            assert!(
                err.starts_with(&format!(
                    "bpflog: error: {}: nothing to {what}",
                    l1.display()
                )),
                "{extra:?}: {err}"
            );
            assert!(
                err.contains(&format!(
                    "the log has no line of the {insns} instructions the verifier processed: a level-1 log keeps no path the verifier finished; a level-2 log keeps every one (`bpflog verify --level 2 --raw`"
                )),
                "{extra:?}: {err}"
            );
            assert!(out.stdout.is_empty(), "{extra:?}: wrote output");
            assert!(!svg.exists() && !html.exists(), "{extra:?}: wrote a file");
        }
        let l2 = PathBuf::from(l1.to_str().unwrap().replace(".l1.", ".l2."));
        let out = bpflog(&["profile".as_ref(), object.as_os_str(), l2.as_os_str()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
}

#[test]
fn a_log_rejected_before_its_first_instruction_has_nothing_to_profile_but_a_report() {
    // `processed 0 insns`: nothing verified, and a level-2 log would not have more. The profile
    // says so and points to explain; the report's page explains the rejection.
    let dir = common::fixtures().join("explain");
    let object = dir.join("obj/reject_early.o");
    let l2 = dir.join("logs/reject_early.kprobe_reject_early.l2.log");
    let args = [
        "--prog".as_ref(),
        "kprobe_reject_early".as_ref(),
        object.as_os_str(),
        l2.as_os_str(),
    ];
    let out = bpflog(&[&["profile".as_ref()][..], &args].concat());
    let err = one_error_line(&out);
    assert!(
        err.ends_with(": nothing to profile of kprobe_reject_early: no instruction line in it: the verifier checked none (processed 0 insns); `bpflog explain` says why it rejected the program\n"),
        "{err}"
    );
    let html = scratch("early.html", b"");
    std::fs::remove_file(&html).unwrap();
    let out = bpflog(
        &[
            &["report".as_ref(), "-o".as_ref(), html.as_os_str()][..],
            &args,
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("tracing progs cannot use bpf_timer yet"));
}
