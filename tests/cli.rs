//! The `bpflog` binary end to end: inputs, errors, exit codes, colors, pipes.

mod common;

use common::{fixtures, run_with_stdin, strip_annotations};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bpflog() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpflog"));
    for var in COLOR_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// The environment `--color auto` reads; tests start without it.
const COLOR_VARS: [&str; 5] = ["NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "TERM", "CI"];

fn obj(name: &str) -> PathBuf {
    fixtures().join("obj").join(name)
}

fn log(name: &str) -> PathBuf {
    fixtures().join("logs").join(name)
}

/// A temporary file holding `bytes`, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str, bytes: &[u8]) -> Self {
        let path = std::env::temp_dir().join(format!("bpflog-test-{}-{tag}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const KERNEL_LOG: &str = "reject_subprog.xdp_reject_subprog.l2.log";

#[test]
fn annotates_a_file_stdin_and_dash_alike() {
    let kernel = std::fs::read(log(KERNEL_LOG)).unwrap();
    let stripped = TempFile::new("stripped.log", &strip_annotations(&kernel));
    let from_file = bpflog()
        .arg("annotate")
        .arg(obj("reject_subprog.o"))
        .arg(&stripped.0)
        .output()
        .unwrap();
    assert!(from_file.status.success(), "{}", stderr(&from_file));
    assert!(from_file.stdout == kernel);
    assert!(from_file.stderr.is_empty());

    let from_stdin = run_with_stdin(
        bpflog().arg("annotate").arg(obj("reject_subprog.o")),
        &strip_annotations(&kernel),
    );
    assert!(from_stdin.status.success(), "{}", stderr(&from_stdin));
    assert!(from_stdin.stdout == kernel);

    let from_dash = run_with_stdin(
        bpflog()
            .arg("annotate")
            .arg(obj("reject_subprog.o"))
            .arg("-")
            .args(["--prog", "xdp_reject_subprog"]),
        &strip_annotations(&kernel),
    );
    assert!(from_dash.status.success(), "{}", stderr(&from_dash));
    assert!(from_dash.stdout == kernel);
}

#[test]
fn colors_follow_the_flag_the_terminal_and_no_color() {
    let args = |color: &str| {
        let mut cmd = bpflog();
        cmd.arg("annotate")
            .arg(obj("reject_subprog.o"))
            .arg(log(KERNEL_LOG))
            .arg(format!("--color={color}"));
        cmd
    };
    let always = args("always").output().unwrap();
    let text = String::from_utf8(always.stdout).unwrap();
    assert!(
        text.contains("\x1b[32mfv->bytes += len;\x1b[0m"),
        "source text is green"
    );
    assert!(
        text.contains("\x1b[31;1mR1 invalid mem access 'map_value_or_null'\x1b[0m"),
        "the error is bold red"
    );
    // Not a terminal: auto means plain. NO_COLOR does not override an explicit always.
    assert!(!args("auto").output().unwrap().stdout.contains(&0x1b));
    assert!(!args("never").output().unwrap().stdout.contains(&0x1b));
    assert!(
        args("always")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
            .stdout
            .contains(&0x1b)
    );
}

#[test]
fn auto_color_follows_no_color_clicolor_force_clicolor_and_term() {
    // stdout is a pipe here: only CLICOLOR_FORCE turns color on, and NO_COLOR beats it.
    // (--color, environment, colored)
    type Case = (&'static str, &'static [(&'static str, &'static str)], bool);
    let cases: &[Case] = &[
        ("auto", &[], false),
        ("auto", &[("CLICOLOR_FORCE", "1")], true),
        ("auto", &[("CLICOLOR_FORCE", "")], false),
        ("auto", &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], false),
        ("auto", &[("TERM", "dumb"), ("CLICOLOR_FORCE", "1")], true),
        ("auto", &[("CLICOLOR", "0"), ("CLICOLOR_FORCE", "1")], true),
        (
            "auto",
            &[("CLICOLOR", "1"), ("TERM", "xterm-256color")],
            false,
        ),
        ("auto", &[("CI", "true")], false),
        ("never", &[("CLICOLOR_FORCE", "1")], false),
        ("always", &[("NO_COLOR", "1")], true),
        ("always", &[("TERM", "dumb"), ("CLICOLOR", "0")], true),
    ];
    let commands: [&[&str]; 2] = [&["annotate", "--style", "rich"], &["profile"]];
    for command in commands {
        for &(color, env, colored) in cases {
            let out = bpflog()
                .args(command)
                .arg(format!("--color={color}"))
                .arg(obj("reject_subprog.o"))
                .arg(log(KERNEL_LOG))
                .envs(env.iter().copied())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            assert_eq!(
                out.stdout.windows(2).any(|w| w == b"\x1b["),
                colored,
                "{command:?} --color={color} with {env:?}"
            );
        }
    }
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = bpflog()
        .arg("annotate")
        .arg(obj("branchy.o"))
        .arg(log("branchy.xdp_branchy.l2.log"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        stderr(&out)
    );
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// A pipe whose reader has already gone: every write to it fails with EPIPE (the Rust runtime
/// ignores SIGPIPE), however little is written. The reader was the stdin of a `true` that exited.
fn closed_pipe() -> Stdio {
    let mut reader = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let writer = reader.stdin.take().unwrap();
    assert!(reader.wait().unwrap().success());
    Stdio::from(writer)
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let reject = obj("reject_subprog.o");
    let twins = obj("twins.o");
    let twin = log("twins.xdp_twin_a.l2.log");
    let kernel = log(KERNEL_LOG);
    let runs: Vec<Vec<&std::ffi::OsStr>> = vec![
        // The only program (one pass), a named one, and a choice among several (planned).
        vec!["annotate".as_ref(), reject.as_ref(), kernel.as_ref()],
        vec![
            "annotate".as_ref(),
            "--prog".as_ref(),
            "xdp_reject_subprog".as_ref(),
            reject.as_ref(),
            kernel.as_ref(),
        ],
        vec!["annotate".as_ref(), twins.as_ref(), twin.as_ref()],
        vec!["profile".as_ref(), reject.as_ref(), kernel.as_ref()],
        vec![
            "profile".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            reject.as_ref(),
            kernel.as_ref(),
        ],
        vec![
            "report".as_ref(),
            "-o".as_ref(),
            "-".as_ref(),
            reject.as_ref(),
            kernel.as_ref(),
        ],
        vec!["explain".as_ref(), reject.as_ref(), kernel.as_ref()],
        vec![
            "explain".as_ref(),
            "--format".as_ref(),
            "sarif".as_ref(),
            reject.as_ref(),
            kernel.as_ref(),
        ],
        vec!["lines".as_ref(), reject.as_ref()],
        vec!["completions".as_ref(), "bash".as_ref()],
        vec!["man".as_ref()],
        vec!["--help".as_ref()],
    ];
    for args in runs {
        let out = bpflog()
            .args(&args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?}: exit {:?}: {}",
            out.status,
            stderr(&out)
        );
    }
}

#[test]
fn a_full_disk_is_blamed_on_the_output_not_the_log() {
    for prog in [None, Some("xdp_branchy")] {
        let mut cmd = bpflog();
        cmd.arg("annotate")
            .arg(obj("branchy.o"))
            .arg(log("branchy.xdp_branchy.l2.log"));
        if let Some(prog) = prog {
            cmd.args(["--prog", prog]);
        }
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = cmd.stdout(full).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "bpflog: error: standard output: No space left on device (os error 28)\n"
        );
    }
}

/// Runs a failing command and returns its single stderr line.
fn fails(cmd: &mut Command) -> String {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err.trim_end().to_owned()
}

#[test]
fn bad_inputs_get_one_line_errors_naming_the_file() {
    let missing = fails(
        bpflog()
            .arg("annotate")
            .arg("/nonexistent/prog.o")
            .arg(log(KERNEL_LOG)),
    );
    assert_eq!(
        missing,
        "bpflog: error: /nonexistent/prog.o: No such file or directory (os error 2)"
    );

    let log_path = log(KERNEL_LOG);
    let not_elf = fails(bpflog().arg("annotate").arg(&log_path).arg(&log_path));
    assert!(
        not_elf.starts_with(&format!(
            "bpflog: error: {}: not a valid ELF file: ",
            log_path.display()
        )),
        "{not_elf}"
    );
    assert!(
        not_elf.ends_with("(this looks like a log: the object comes first, then the log)"),
        "{not_elf}"
    );

    // The log as cilium/ebpf prints a rejection, each kernel line behind a tab: its lines are
    // read as every log's are, wrapper and all.
    let kernel_log = std::fs::read(&log_path).unwrap();
    let mut wrapped =
        b"field XdpReject: program xdp_reject_subprog: load program: permission denied:".to_vec();
    for line in kernel_log
        .strip_suffix(b"\n")
        .unwrap_or(&kernel_log)
        .split(|&b| b == b'\n')
    {
        wrapped.extend_from_slice(b"\n\t");
        wrapped.extend_from_slice(line);
    }
    wrapped.push(b'\n');
    let wrapped_path =
        std::env::temp_dir().join(format!("bpflog-cilium-{}.txt", std::process::id()));
    std::fs::write(&wrapped_path, &wrapped).unwrap();
    let wrapped_not_elf = fails(bpflog().arg("annotate").arg(&wrapped_path).arg(&log_path));
    std::fs::remove_file(&wrapped_path).unwrap();
    assert!(
        wrapped_not_elf.ends_with("(this looks like a log: the object comes first, then the log)"),
        "{wrapped_not_elf}"
    );

    let no_log = fails(
        bpflog()
            .arg("annotate")
            .arg(obj("reject_subprog.o"))
            .arg("/nonexistent/log.txt"),
    );
    assert_eq!(
        no_log,
        "bpflog: error: /nonexistent/log.txt: No such file or directory (os error 2)"
    );

    let unknown = fails(
        bpflog()
            .arg("annotate")
            .arg(obj("two_in_one.o"))
            .arg(&log_path)
            .args(["--prog", "nope"]),
    );
    assert!(
        unknown.ends_with("no program named 'nope' (programs: xdp_first, xdp_second, xdp_nested)"),
        "{unknown}"
    );
}

#[test]
fn a_log_from_another_object_is_refused_with_the_reasons() {
    let err = fails(
        bpflog()
            .arg("annotate")
            .arg(obj("two_in_one.o"))
            .arg(log(KERNEL_LOG)),
    );
    assert!(
        err.contains("the log matches no program of the object"),
        "{err}"
    );
    for program in ["xdp_first", "xdp_second", "xdp_nested"] {
        assert!(err.contains(&format!("{program}: log line ")), "{err}");
    }
    assert!(
        err.ends_with("(is the log from another object? --prog annotates it anyway)"),
        "{err}"
    );
}

#[test]
fn the_only_program_refuses_a_log_it_does_not_fit_before_writing_anything() {
    // branchy.o has one program: its log is annotated in one pass, and a misfit found before
    // the held output is released leaves no output, like the first pass of two would.
    let err = fails(
        bpflog()
            .arg("annotate")
            .arg(obj("branchy.o"))
            .arg(log("reject_entry.xdp_reject_entry.l2.log")),
    );
    assert!(
        err.contains("the log matches no program of the object: xdp_branchy: log line "),
        "{err}"
    );
    assert!(
        err.ends_with("(is the log from another object? --prog annotates it anyway)"),
        "{err}"
    );
}

/// Over 16 MiB of branchy's logs, then another program's: a misfit that shows only after the
/// output held back. The bytes, and how many of them fit.
fn misfit_after_16_mib() -> (Vec<u8>, usize) {
    misfit_after(17 << 20)
}

/// Over `size` bytes of branchy's logs, then another program's: the bytes, and how many of
/// them fit.
fn misfit_after(size: usize) -> (Vec<u8>, usize) {
    let branchy = std::fs::read(log("branchy.xdp_branchy.l2.log")).unwrap();
    let mut big = branchy.repeat(size / branchy.len() + 1);
    let fits = big.len();
    big.extend_from_slice(&std::fs::read(log("reject_entry.xdp_reject_entry.l2.log")).unwrap());
    (big, fits)
}

/// Exit 1 and one line: the log matches no program, found late (`ending` ends the line).
fn refused_late(out: &std::process::Output, ending: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("the log matches no program of the object"),
        "{err}"
    );
    assert!(err.trim_end().ends_with(ending), "{err}");
}

/// How many of the input's lines a refusal found late says the output holds, and the bytes of
/// that many lines of `input`.
fn lines_written<'a>(err: &str, input: &'a [u8]) -> (usize, &'a [u8]) {
    let (_, rest) = err
        .split_once("found after output was written (more than 16 MiB): the output holds the input's lines 1-")
        .unwrap_or_else(|| panic!("{err}"));
    let lines: usize = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    let bytes = (input.split_inclusive(|&b| b == b'\n'))
        .take(lines)
        .map(<[u8]>::len)
        .sum();
    (lines, &input[..bytes])
}

/// `bpflog annotate branchy.o tc_prog.o -- LOG`: each log's program chosen on the way.
fn annotate_with_two_objects(log: &Path) -> std::process::Output {
    bpflog()
        .arg("annotate")
        .arg(obj("branchy.o"))
        .arg(obj("tc_prog.o"))
        .arg("--")
        .arg(log)
        .output()
        .unwrap()
}

#[test]
fn a_misfit_found_after_the_held_output_is_an_error_after_it() {
    let (big, fits) = misfit_after_16_mib();
    let file = TempFile::new("misfit-late.log", &big);
    let out = bpflog()
        .arg("annotate")
        .arg(obj("branchy.o"))
        .arg(&file.0)
        .output()
        .unwrap();
    refused_late(&out, "annotated with xdp_branchy, and nothing after");
    // The error says which lines were written: the input's first lines, as they came (the part
    // that fits carries the kernel's lines), up to a few lines into the log that does not fit.
    let err = stderr(&out);
    let (_, lines) = lines_written(&err, &big);
    assert!(out.stdout.len() > 16 << 20);
    assert!(
        out.stdout == lines,
        "{} bytes, {} expected",
        out.stdout.len(),
        lines.len()
    );
    assert!(fits < lines.len() && lines.len() < big.len(), "{err}");
}

#[test]
fn several_programs_refuse_a_misfit_found_after_the_held_output_after_it() {
    // Two objects: each log's program is chosen on the way. Over 16 MiB of branchy's logs fit
    // branchy.o; the log after them fits neither object, and the error says it came late.
    let (big, fits) = misfit_after_16_mib();
    let branchy = std::fs::read(log("branchy.xdp_branchy.l2.log")).unwrap();
    let file = TempFile::new("misfit-late-two.log", &big);
    let out = annotate_with_two_objects(&file.0);
    // Written: the logs that fit, and nothing of the one that does not; the error says so.
    let lines = big[..fits].iter().filter(|&&b| b == b'\n').count();
    refused_late(
        &out,
        &format!(
            "; found after output was written (more than 16 MiB): the output holds the input's lines 1-{lines} and nothing after"
        ),
    );
    assert!(out.stdout[..] == big[..fits]);

    // A log that starts as branchy's, and is annotated with it once its first instructions
    // settle that, but then shows two instructions of other opcodes: the misfit is found there,
    // past the output held back. The output holds the input up to there, and nothing after.
    let mut lines: Vec<Vec<u8>> = branchy
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let insns: Vec<usize> = (0..lines.len())
        .filter(|&i| bpflog::log::insn_head(&lines[i]).is_some())
        .collect();
    for &i in &insns[insns.len() - 40..insns.len() - 38] {
        let at = lines[i].windows(3).position(|w| w == b": (").unwrap() + 3;
        let other: &[u8] = if lines[i][at + 1] == b'7' {
            b"61"
        } else {
            b"b7"
        };
        lines[i][at..at + 2].copy_from_slice(other);
    }
    let changed = lines.concat();
    let input = [&big[..fits], &changed, &branchy].concat();
    let file = TempFile::new("misfit-late-settled.log", &input);
    let out = annotate_with_two_objects(&file.0);
    refused_late(&out, "and nothing after");
    let err = stderr(&out);
    let (_, written) = lines_written(&err, &input);
    // Within the changed log: at the second changed instruction, not at the log's end.
    assert!(
        fits < written.len() && written.len() < fits + changed.len(),
        "{err}"
    );
    assert!(out.stdout == written);

    // The same misfit within the first 16 MiB: nothing written, as by a first pass.
    let small = [&branchy[..], &big[fits..]].concat();
    let file = TempFile::new("misfit-early-two.log", &small);
    let out = annotate_with_two_objects(&file.0);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(!stderr(&out).contains("found after"), "{}", stderr(&out));
}

/// Runs `command` with its standard output added to the end of a file that holds `before`:
/// the file's bytes after, and how the command ended.
fn into_file(command: &mut Command, tag: &str, before: &[u8]) -> (Vec<u8>, Output) {
    use std::io::{Seek, SeekFrom};
    let file = TempFile::new(tag, before);
    let mut stdout = std::fs::OpenOptions::new()
        .write(true)
        .open(&file.0)
        .unwrap();
    stdout.seek(SeekFrom::End(0)).unwrap();
    let out = command.stdout(stdout).output().unwrap();
    (std::fs::read(&file.0).unwrap(), out)
}

#[test]
fn output_to_a_file_is_taken_back_where_a_pipe_would_get_nothing() {
    // To a file, the output held back is written at once, and taken back on a refusal: the file
    // is left as it was. Misfits after 5 MiB of output (written to the file by then), then after
    // 17 MiB (past what is held: written, and the error says so), for the only program and for
    // a program chosen from two objects; then a log that fits.
    let before = b"what the file held before\n";
    for (size, late) in [(5 << 20, false), (17 << 20, true)] {
        let (big, fits) = misfit_after(size);
        let file = TempFile::new(&format!("misfit-{size}.log"), &big);
        let only = || {
            let mut command = bpflog();
            command.arg("annotate").arg(obj("branchy.o")).arg(&file.0);
            command
        };
        let two = || {
            let mut command = bpflog();
            command
                .arg("annotate")
                .arg(obj("branchy.o"))
                .arg(obj("tc_prog.o"))
                .arg("--")
                .arg(&file.0);
            command
        };
        for (which, command) in [("only", &only as &dyn Fn() -> Command), ("two", &two)] {
            let piped = command().output().unwrap();
            let (after, out) = into_file(&mut command(), &format!("out-{which}-{size}"), before);
            // The same refusal as to a pipe.
            assert_eq!(
                out.status.code(),
                Some(1),
                "{which} {size}: {}",
                stderr(&out)
            );
            assert_eq!(stderr(&out), stderr(&piped), "{which} {size}");
            assert_eq!(stderr(&out).contains("found after"), late, "{which} {size}");
            if late {
                assert!(after[..before.len()] == before[..], "{which} {size}");
                assert!(after[before.len()..] == piped.stdout[..], "{which} {size}");
                assert!(
                    after[before.len()..][..fits] == big[..fits],
                    "{which} {size}"
                );
            } else {
                assert!(piped.stdout.is_empty(), "{which} {size}");
                assert!(
                    after == before,
                    "{which} {size}: {} bytes left",
                    after.len()
                );
            }
        }
    }
    let kernel = std::fs::read(log("branchy.xdp_branchy.l2.log")).unwrap();
    let fits = kernel.repeat((5 << 20) / kernel.len() + 1);
    let file = TempFile::new("fits-5mib.log", &fits);
    let (after, out) = into_file(
        bpflog().arg("annotate").arg(obj("branchy.o")).arg(&file.0),
        "out-fits",
        before,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(after == [&before[..], &fits[..]].concat());
}

#[test]
fn a_log_from_a_pipe_is_read_whole_when_a_program_must_be_chosen() {
    // `<(...)` and named pipes cannot be read twice: what is needed twice is copied first.
    let kernel = std::fs::read(log("branchy.xdp_branchy.l2.log")).unwrap();
    let fifo = std::env::temp_dir().join(format!("bpflog-test-{}-fifo", std::process::id()));
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let writer = {
        let (fifo, kernel) = (fifo.clone(), kernel.clone());
        std::thread::spawn(move || std::fs::write(&fifo, &kernel))
    };
    let out = bpflog()
        .arg("annotate")
        .arg(obj("branchy.o"))
        .arg(obj("tc_prog.o"))
        .arg("--")
        .arg(&fifo)
        .output()
        .unwrap();
    writer.join().unwrap().unwrap();
    let _ = std::fs::remove_file(&fifo);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout == kernel, "the log came back changed or cut");
}

#[test]
fn usage_errors_exit_2() {
    let out = bpflog().arg("annotate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bpflog()
        .args(["annotate", "a.o", "--color", "sometimes"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn src_dir() -> PathBuf {
    fixtures().join("src")
}

#[test]
fn rich_style_context_and_source_lookup() {
    let out = bpflog()
        .arg("annotate")
        .arg(obj("reject_nested.o"))
        .arg(log("reject_nested.xdp_reject_nested.l1.log"))
        .args(["--style", "rich", "--context", "1", "--source-dir"])
        .arg(src_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("; reject_nested.c:37:6 in read_opt_byte\n;   inlined from parse_ipv4_opts at reject_nested.c:48:19\n"), "{text}");
    assert!(text.contains("; > 37 | \tb = *q;\n"), "{text}");
    // Rich style ends a rejection with the diagnostic unless told not to.
    assert!(
        text.contains("\nerror: invalid access to packet, off=34 size=1"),
        "{text}"
    );
    let quiet = bpflog()
        .arg("annotate")
        .arg(obj("reject_nested.o"))
        .arg(log("reject_nested.xdp_reject_nested.l1.log"))
        .args(["--style", "rich", "--no-diagnostic"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8(quiet.stdout)
            .unwrap()
            .contains("\nerror: ")
    );
}

#[test]
fn source_maps_rewrite_prefixes_and_missing_files_fall_back_to_btf() {
    // The object names `reject_nested.c`, relative to its build directory; a map rewrites the
    // front of such names (in real builds: `/build/dir/=/home/me/src/`).
    let mapped = bpflog()
        .current_dir(std::env::temp_dir())
        .arg("annotate")
        .arg(obj("reject_nested.o"))
        .arg(log("reject_nested.xdp_reject_nested.l1.log"))
        .args(["--style", "rich", "--context", "1", "--source-map"])
        .arg(format!("reject_={}/reject_", src_dir().display()))
        .output()
        .unwrap();
    let text = String::from_utf8(mapped.stdout).unwrap();
    assert!(text.contains("; > 37 | \tb = *q;\n"), "{text}");
    // Without the source file, the one line BTF keeps stands in (trimmed, as the kernel shows it).
    let unfound = bpflog()
        .current_dir(std::env::temp_dir())
        .arg("annotate")
        .arg(obj("reject_nested.o"))
        .arg(log("reject_nested.xdp_reject_nested.l1.log"))
        .args(["--style", "rich", "--context", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8(unfound.stdout).unwrap();
    assert!(text.contains("; > 37 | b = *q;\n"), "{text}");
    assert!(
        !text.contains("  36 | "),
        "no neighbours without the file: {text}"
    );
    let bad = bpflog()
        .args(["annotate", "a.o", "--source-map", "nothing"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn kernel_style_diagnostic_only_when_asked() {
    let kernel = std::fs::read(log(KERNEL_LOG)).unwrap();
    let run = |extra: &[&str]| {
        bpflog()
            .arg("annotate")
            .arg(obj("reject_subprog.o"))
            .arg(log(KERNEL_LOG))
            .args(extra)
            .output()
            .unwrap()
            .stdout
    };
    assert!(run(&["--style", "kernel"]) == kernel);
    let with = run(&["--style", "kernel", "--diagnostic"]);
    assert!(with.starts_with(&kernel) && with.len() > kernel.len());
    assert!(String::from_utf8_lossy(&with[kernel.len()..]).contains(
        "= note: called from xdp_reject_subprog at reject_subprog.c:80:6 (instruction 27)"
    ));
    // The later of --diagnostic / --no-diagnostic wins.
    assert!(run(&["--style", "kernel", "--diagnostic", "--no-diagnostic"]) == kernel);
}

#[test]
fn annotate_all_marks_backtracking_lines() {
    let out = bpflog()
        .arg("annotate")
        .arg(obj("reject_entry.o"))
        .arg(log("reject_entry.xdp_reject_entry.l2.log"))
        .args(["--style", "kernel", "--annotate-all"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "mark_precise: frame0: regs=r6 stack= before 24: (b7) r6 = 23  // reject_entry.c:45\n"
        ),
        "{text}"
    );
}

fn wrapped(name: &str) -> PathBuf {
    fixtures().join("wrapped").join(name)
}

#[test]
fn several_objects_and_wrapped_logs() {
    let original = std::fs::read(wrapped("bpftool-d.txt")).unwrap();
    let stripped = TempFile::new("bpftool-stripped.txt", &strip_annotations(&original));
    let objects = [
        "reject_subprog.o",
        "reject_entry.o",
        "reject_callback.o",
        "core_fail.o",
    ]
    .map(obj);
    // OBJ... -- LOG
    let out = bpflog()
        .arg("annotate")
        .args(&objects)
        .arg("--")
        .arg(&stripped.0)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout == original);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
    // --obj for each, the log positional (here from standard input).
    let mut cmd = bpflog();
    cmd.arg("annotate");
    for o in &objects {
        cmd.arg("--obj").arg(o);
    }
    let out = run_with_stdin(&mut cmd, &original);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout == original);
    // Without `--`, a third positional is an error of usage.
    let out = bpflog()
        .arg("annotate")
        .args(&objects[..3])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("put the log after `--`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_log_cut_at_the_top_is_noted() {
    let full = std::fs::read(log("branchy.xdp_branchy.l2.log")).unwrap();
    let tail = TempFile::new("cut.log", &full[full.len() / 2..]);
    let out = bpflog()
        .arg("annotate")
        .arg(obj("branchy.o"))
        .arg(&tail.0)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout == full[full.len() / 2..]);
    let err = stderr(&out);
    assert!(
        err.starts_with("bpflog: note: ")
            && err.contains(":1: the log of xdp_branchy starts mid-path"),
        "{err}"
    );
}

#[test]
fn loaders_are_named_or_found() {
    // A log whose instructions sit where libbpf puts them: --loader cilium refuses it.
    let out = bpflog()
        .arg("annotate")
        .arg(obj("two_in_one.o"))
        .arg(log("two_in_one.xdp_nested.l2.log"))
        .args(["--loader", "cilium"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // (func#1 is at 19 under both layouts: outer_sum for libbpf, mix_hash for cilium/ebpf.)
    assert!(stderr(&out).contains("xdp_nested (cilium layout): log line 3: func#2 starts at 28 in the log but at 38 in the program"), "{}", stderr(&out));
    let out = bpflog()
        .arg("annotate")
        .arg(obj("two_in_one.o"))
        .arg(log("two_in_one.xdp_nested.l2.log"))
        .args(["--loader", "libbpf"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_error_stays_an_error_when_statistics_follow_it() {
    // Log level 4 adds `verification time` and `stack depth` between the error and `processed`.
    let kernel = std::fs::read_to_string(log(KERNEL_LOG)).unwrap();
    let with_stats = kernel.replace(
        "\nprocessed ",
        "\nverification time 44 usec\nstack depth 8+0\nprocessed ",
    );
    let input = TempFile::new("stats.log", with_stats.as_bytes());
    let out = bpflog()
        .arg("annotate")
        .arg(obj("reject_subprog.o"))
        .arg(&input.0)
        .arg("--color=always")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("\x1b[31;1mR1 invalid mem access 'map_value_or_null'\x1b[0m\nverification time 44 usec\nstack depth 8+0\n"), "{text}");
}

#[test]
fn profile_refuses_a_log_of_another_program_read_in_one_pass() {
    // reject_subprog.o has one program: profile reads the log once and checks it on the way.
    let err = fails(
        bpflog()
            .arg("profile")
            .arg(obj("reject_subprog.o"))
            .arg(log("reject_entry.xdp_reject_entry.l2.log")),
    );
    assert!(
        err.contains("the log matches no program of the object: xdp_reject_subprog: log line "),
        "{err}"
    );
    let ok = bpflog()
        .arg("profile")
        .arg(obj("reject_subprog.o"))
        .arg(log(KERNEL_LOG))
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn profile_takes_the_log_of_its_program_out_of_a_file_of_several() {
    let profile = |args: &[&std::ffi::OsStr]| {
        bpflog()
            .arg("profile")
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap()
    };
    let json = |out: &Output| -> serde_json::Value {
        assert!(out.status.success(), "{}", stderr(out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // bpftool -d output with four programs' logs: the one program of reject_subprog.o is found
    // by the name libbpf's wrapper gives.
    let out = json(&profile(&[
        obj("reject_subprog.o").as_os_str(),
        wrapped("bpftool-d.txt").as_os_str(),
    ]));
    assert_eq!(out["program"], "xdp_reject_subprog");
    assert_eq!(out["summary"]["verdict"], "rejected");
    // Three bare logs in a row: a program must be named...
    let raw = wrapped("two_in_one.verify-raw.txt");
    let err = fails(bpflog().arg("profile").arg(obj("two_in_one.o")).arg(&raw));
    assert!(err.ends_with("the file holds the logs of several programs (xdp_first, xdp_second, xdp_nested); choose one with --prog"), "{err}");
    // ...and then its log alone is profiled: as the same program's log from its own load.
    let from_file = json(&profile(&[
        obj("two_in_one.o").as_os_str(),
        raw.as_os_str(),
        "--prog".as_ref(),
        "xdp_second".as_ref(),
    ]));
    let alone = json(&profile(&[
        obj("two_in_one.o").as_os_str(),
        log("two_in_one.xdp_second.l2.log").as_os_str(),
        "--prog".as_ref(),
        "xdp_second".as_ref(),
    ]));
    assert_eq!(from_file["lines"], alone["lines"]);
    assert_eq!(from_file["totals"], alone["totals"]);
}

#[test]
fn several_programs_profile_read_once_as_when_planned_first() {
    // loop_callback.o has two programs. Without --flamegraph, the logs are profiled in one pass
    // (in parts when large); with it, the file is planned first. Same output and exit code, from
    // a file and from standard input: for loop_sum's logs, for them and a loop_nested log with
    // --prog, and without it (then it is an error).
    let loop_sum = std::fs::read(log("loop_callback.loop_sum.l2.log")).unwrap();
    let nested = std::fs::read(log("loop_callback.loop_nested.l2.log")).unwrap();
    let big = loop_sum.repeat((9 << 20) / loop_sum.len() + 1);
    let mixed = [&big[..], &nested].concat();
    let svg = std::env::temp_dir().join(format!("bpflog-test-{}-several.svg", std::process::id()));
    let cases: [(&[u8], &[&str]); 3] = [
        (&big, &[]),
        (&mixed, &["--prog", "loop_sum"]),
        (&mixed, &[]),
    ];
    for (input, prog) in cases {
        let file = TempFile::new("several-profile.log", input);
        let path = file.0.display().to_string();
        let profile = |flamegraph: bool, stdin: bool| {
            let mut cmd = bpflog();
            cmd.arg("profile").arg(obj("loop_callback.o")).args(prog);
            if flamegraph {
                cmd.arg("--flamegraph").arg(&svg);
            }
            let out = if stdin {
                run_with_stdin(cmd.arg("-"), input)
            } else {
                cmd.arg(&file.0).output().unwrap()
            };
            let err = stderr(&out).replace("<stdin>", &path);
            (out.status.code(), err, out.stdout)
        };
        let planned = profile(true, false);
        assert!(
            planned.0 == Some(0) || planned.1.contains("several programs"),
            "{}",
            planned.1
        );
        assert!(
            profile(false, false) == planned,
            "{prog:?}, {} bytes",
            input.len()
        );
        assert!(
            profile(false, true) == planned,
            "{prog:?}, {} bytes, stdin",
            input.len()
        );
    }
    let _ = std::fs::remove_file(&svg);
}
