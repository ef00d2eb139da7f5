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
    // The real log of xdp_parse, its first annotation line made 100 kB of hostile text: without
    // --prog the log is refused, quoting the line.
    let text = std::fs::read(log("xdp_subprogs.xdp_parse.l2.log")).unwrap();
    let mut lines: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    let first = lines.iter().position(|l| l.starts_with(b"; ")).unwrap();
    let mut hostile = b"; ".to_vec();
    hostile.extend_from_slice(HOSTILE);
    hostile.extend(std::iter::repeat_n(b'A', 100_000));
    hostile.extend_from_slice(b" @ xdp_subprogs.c:1");
    lines[first] = hostile;
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
