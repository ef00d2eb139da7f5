//! What bpflog writes, and logs that are not files, through the binary: an output that is an
//! input is refused (also through a symlink, a hard link, standard input or output) with the
//! input left as it was; a file output replaces its old content only once complete; the copy
//! of a log read from a pipe is private, nameless and gone after a signal; `/dev/zero` and
//! logs longer than the copy's bound end with one clear line.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bpflog");

/// The object with three programs, and the level-2 log of one of them.
const OBJECT: &str = "two_in_one.o";
const LOG: &str = "two_in_one.xdp_first.l2.log";
const PROGRAM: &str = "xdp_first";

fn fixture(dir: &str, name: &str) -> PathBuf {
    common::fixtures().join(dir).join(name)
}

/// A fresh directory for one test, with copies of the object and the log.
fn workdir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("outputs_and_spool")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::copy(fixture("obj", OBJECT), dir.join(OBJECT)).expect("object");
    std::fs::copy(fixture("logs", LOG), dir.join(LOG)).expect("log");
    dir
}

/// `names`, sorted.
fn sorted<const N: usize>(names: [&str; N]) -> Vec<String> {
    let mut names = names.map(String::from).to_vec();
    names.sort();
    names
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits for `child` up to `limit`; kills it and fails past that.
fn wait_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let started = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// Runs `cmd` with standard input from `stdin` (nothing when `None`), within `limit`.
fn run(cmd: &mut Command, stdin: Option<Stdio>, limit: Duration) -> Output {
    let what = format!("{cmd:?}");
    let child = cmd
        .stdin(stdin.unwrap_or_else(Stdio::null))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bpflog");
    wait_within(child, limit, &what)
}

/// Checks a refusal: exit 1, one line on stderr saying the output is an input, nothing written.
fn assert_refused(out: &Output, output: &str, input: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "output written");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("bpflog: error: {output}")) && err.contains("the same file as"),
        "{err}"
    );
    assert!(err.contains(input), "{err}");
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = workdir("refused");
    let (object, log) = (dir.join(OBJECT), dir.join(LOG));
    std::os::unix::fs::symlink(LOG, dir.join("symlink.html")).expect("symlink");
    std::fs::hard_link(&log, dir.join("hardlink.svg")).expect("hard link");
    let bpflog = || {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(&dir);
        cmd
    };
    let seconds = Duration::from_secs(60);
    // report OBJ LOG -o X, and profile OBJ LOG --flamegraph X, for X the log in three ways and
    // the object.
    for (output, input) in [
        (LOG, LOG),
        ("symlink.html", LOG),
        ("hardlink.svg", LOG),
        (OBJECT, OBJECT),
    ] {
        let out = run(
            bpflog().args(["report", OBJECT, LOG, "-o", output]),
            None,
            seconds,
        );
        assert_refused(&out, output, input);
        let out = run(
            bpflog().args([
                "profile",
                OBJECT,
                LOG,
                "--prog",
                PROGRAM,
                "--flamegraph",
                output,
            ]),
            None,
            seconds,
        );
        assert_refused(&out, output, input);
    }
    // The log on standard input, the report onto it.
    let stdin = std::fs::File::open(&log).expect("log");
    let out = run(
        bpflog().args(["report", OBJECT, "-o", "hardlink.svg"]),
        Some(stdin.into()),
        seconds,
    );
    assert_refused(&out, "hardlink.svg", "<stdin>");
    // Standard output appending to the log would read its own output without end.
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("log");
    let child = bpflog()
        .args(["annotate", OBJECT, LOG])
        .stdout(append)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = wait_within(child, seconds, "annotate OBJ LOG >> LOG");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.starts_with("bpflog: error: standard output is the same file as the log"));
    // Nothing was changed.
    assert!(std::fs::read(&log).unwrap() == std::fs::read(fixture("logs", LOG)).unwrap());
    assert!(std::fs::read(&object).unwrap() == std::fs::read(fixture("obj", OBJECT)).unwrap());
    assert_eq!(
        names(&dir),
        sorted([OBJECT, LOG, "hardlink.svg", "symlink.html"])
    );
}

/// `sh -c 'ulimit -f 4; trap "" XFSZ; exec bpflog ARGS...'`: a file grown past 2 KiB (dash
/// counts blocks of 512 bytes; bash, of 1 KiB) fails to write (EFBIG, "File too large"), as on a
/// full disk.
fn with_small_files(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.current_dir(dir)
        .arg("-c")
        .arg(r#"ulimit -f 4; trap "" XFSZ; exec "$@""#)
        .arg("sh")
        .arg(BIN)
        .args(args);
    run(&mut cmd, None, Duration::from_secs(60))
}

#[test]
fn a_file_output_is_put_in_place_only_once_complete() {
    let dir = workdir("in_place");
    let old = b"the old report\n";
    for name in ["report.html", "graph.svg"] {
        std::fs::write(dir.join(name), old).unwrap();
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let report = ["report", OBJECT, LOG, "-o", "report.html"];
    let flamegraph = [
        "profile",
        OBJECT,
        LOG,
        "--prog",
        PROGRAM,
        "--flamegraph",
        "graph.svg",
    ];
    // Writing fails midway (both outputs are larger than the limit): the old content stays.
    for (args, name) in [(&report[..], "report.html"), (&flamegraph[..], "graph.svg")] {
        let out = with_small_files(&dir, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(
            err,
            format!("bpflog: error: {name}: File too large (os error 27)\n")
        );
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), old, "{name}");
        // No temporary file is left beside it.
        assert_eq!(
            names(&dir),
            sorted([OBJECT, LOG, "graph.svg", "report.html"])
        );
    }
    // Complete: in place, with the permissions the file had.
    for (args, name, start) in [
        (&report[..], "report.html", &b"<!doctype html>"[..]),
        (&flamegraph[..], "graph.svg", b"<?xml"),
    ] {
        let out = run(
            Command::new(BIN).current_dir(&dir).args(args),
            None,
            Duration::from_secs(60),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let written = std::fs::read(dir.join(name)).unwrap();
        assert!(
            written.starts_with(start) && written.len() > 8 * 1024,
            "{name}"
        );
        let mode = std::fs::metadata(dir.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
    assert_eq!(
        names(&dir),
        sorted([OBJECT, LOG, "graph.svg", "report.html"])
    );
}

#[test]
fn a_signal_leaves_the_old_output_and_no_temporary_file() {
    let dir = workdir("signal");
    let old = b"the old report\n";
    std::fs::write(dir.join("report.html"), old).unwrap();
    std::fs::write(dir.join("graph.svg"), old).unwrap();
    let log = std::fs::read(dir.join(LOG)).unwrap();
    let report = &["report", OBJECT, "-o", "report.html"][..];
    let flamegraph = &[
        "profile",
        OBJECT,
        "--prog",
        PROGRAM,
        "--flamegraph",
        "graph.svg",
    ][..];
    // Every signal whose default action ends the process, some of them, for each output; the
    // real-time ones end it with status 128 + the signal.
    // A signal this test runs with ignored (`nohup` ignores SIGHUP) is ignored by bpflog too, as
    // it inherits it: not sent.
    let ignored = ignored_signals();
    for (args, signal, number) in [
        (report, "TERM", 15),
        (report, "INT", 2),
        (report, "HUP", 1),
        (report, "QUIT", 3),
        (flamegraph, "USR1", 10),
        (report, "USR2", 12),
        (flamegraph, "ALRM", 14),
        (report, "XFSZ", 25),
        (flamegraph, "RTMIN+3", 37),
    ] {
        if ignored & (1 << (number - 1)) != 0 {
            eprintln!("SIG{signal} is ignored here (inherited): not sent");
            continue;
        }
        // The log from a pipe that stays open: the output is begun, and waits for the log.
        let mut child = Command::new(BIN)
            .current_dir(&dir)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&log).expect("write the log");
        // Wait for the temporary file beside the output.
        let started = Instant::now();
        while names(&dir).len() < 5 && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let temporary = names(&dir);
        assert!(
            temporary
                .iter()
                .any(|n| n.starts_with(".bpflog-") && n.ends_with(".tmp")),
            "{signal}: {temporary:?}"
        );
        let killed = Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = common::wait_at_most(
            &mut child,
            Duration::from_secs(30),
            &format!("bpflog sent SIG{signal}"),
        );
        drop(stdin);
        if signal.starts_with("RTMIN") {
            assert_eq!(status.code(), Some(128 + 37), "{signal}: {status:?}");
        } else {
            assert!(status.signal().is_some(), "{signal}: {status:?}");
        }
        for output in ["report.html", "graph.svg"] {
            assert_eq!(std::fs::read(dir.join(output)).unwrap(), old, "{signal}");
        }
        assert_eq!(
            names(&dir),
            sorted([OBJECT, LOG, "graph.svg", "report.html"]),
            "{signal}"
        );
    }
}

/// The signals this process ignores (`SigIgn` of `/proc/self/status`: bit N-1 for signal N).
fn ignored_signals() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .map(|mask| u64::from_str_radix(mask.trim(), 16).expect("SigIgn"))
        .unwrap_or(0)
}

/// `-o` naming a symlink to a file not made yet writes that file, as it replaces one that
/// exists: the symlink stays.
#[test]
fn an_output_through_a_dangling_symlink_makes_its_target() {
    let dir = workdir("dangling");
    std::fs::create_dir_all(dir.join("pages")).unwrap();
    std::os::unix::fs::symlink("pages/report.html", dir.join("link.html")).unwrap();
    std::os::unix::fs::symlink("link.html", dir.join("chain.html")).unwrap();
    for output in ["link.html", "chain.html"] {
        let _ = std::fs::remove_file(dir.join("pages/report.html"));
        let out = run(
            Command::new(BIN)
                .current_dir(&dir)
                .args(["report", OBJECT, LOG, "-o", output]),
            None,
            Duration::from_secs(60),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        for link in ["link.html", "chain.html"] {
            let meta = std::fs::symlink_metadata(dir.join(link)).unwrap();
            assert!(meta.file_type().is_symlink(), "{output}: {link} replaced");
        }
        let page = std::fs::read(dir.join("pages/report.html")).unwrap();
        assert!(page.starts_with(b"<!doctype html>"), "{output}");
        assert_eq!(
            names(&dir.join("pages")),
            sorted(["report.html"]),
            "{output}"
        );
    }
}

#[test]
fn an_output_that_cannot_be_made_is_refused_before_the_log_is_read() {
    let dir = workdir("cannot_be_made");
    // Standard input stays open: a command that read the log first would wait for it forever.
    let child = Command::new(BIN)
        .current_dir(&dir)
        .args(["report", OBJECT, "-o", "missing/report.html"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = wait_within(child, Duration::from_secs(30), "report -o missing/...");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "bpflog: error: missing/report.html: cannot make a file beside it: No such file or directory (os error 2)\n"
    );
}

/// The open files of process `pid` that lie in `dir` (deleted or not) and hold some bytes, and
/// their modes.
fn open_in(pid: u32, dir: &Path) -> Vec<(String, u32)> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("/proc/PID/fd");
    fds.filter_map(|fd| {
        let fd = fd.ok()?.path();
        let target = std::fs::read_link(&fd).ok()?;
        let target = target.to_string_lossy().into_owned();
        // The file itself, through the link.
        let meta = std::fs::metadata(&fd).ok()?;
        let mode = meta.permissions().mode();
        (target.starts_with(&*dir.to_string_lossy()) && meta.len() > 0)
            .then_some((target, mode & 0o777))
    })
    .collect()
}

#[test]
fn the_copy_of_a_log_from_a_pipe_is_private_nameless_and_gone_after_a_signal() {
    let dir = workdir("spool");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let log = std::fs::read(dir.join(LOG)).unwrap();
    let ignored = ignored_signals();
    for (signal, number) in [("TERM", 15), ("INT", 2)] {
        if ignored & (1 << (number - 1)) != 0 {
            eprintln!("SIG{signal} is ignored here (inherited): not sent");
            continue;
        }
        // Several programs: the log is copied to be read twice; standard input stays open.
        let mut child = Command::new(BIN)
            .current_dir(&dir)
            .env("TMPDIR", &tmp)
            .args(["annotate", OBJECT])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&log).expect("write the log");
        stdin.flush().unwrap();
        // Wait for the copy to be open, with the bytes read so far (the mode is set before).
        let started = Instant::now();
        let copies = loop {
            // The copy is open more than once (written on one thread, read on others): one file.
            let mut copies = open_in(child.id(), &tmp);
            copies.dedup();
            if !copies.is_empty() || started.elapsed() > Duration::from_secs(30) {
                break copies;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(copies.len(), 1, "{copies:?}");
        assert_eq!(copies[0].1, 0o600, "the copy's mode: {copies:?}");
        assert!(copies[0].0.ends_with(" (deleted)"), "{copies:?}");
        assert!(names(&tmp).is_empty(), "{:?}", names(&tmp));
        let killed = Command::new("kill")
            .args(["-s", signal, &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(killed.success());
        let status = common::wait_at_most(
            &mut child,
            Duration::from_secs(30),
            &format!("bpflog sent SIG{signal}"),
        );
        drop(stdin);
        assert_eq!(status.signal(), Some(number), "{status:?}");
        assert!(names(&tmp).is_empty(), "left behind: {:?}", names(&tmp));
    }
}

#[test]
fn dev_zero_as_the_log_ends_with_a_clear_error() {
    let dir = workdir("dev_zero");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let object = fixture("obj", "xdp_subprogs.o");
    let object = object.to_str().unwrap();
    let said = |name: &str| {
        format!(
            "bpflog: error: {name}: line 1 is longer than 16 MiB, the most bpflog reads of a line \
             (a verifier log's lines are a few KB at most)\n"
        )
    };
    let zero = || Some(std::fs::File::open("/dev/zero").expect("/dev/zero").into());
    let cases: [(&[&str], bool); 6] = [
        // Several layouts: the log is copied first.
        (&["annotate", object, "/dev/zero"], false),
        (&["annotate", object], true),
        // One program: read as it comes.
        (
            &[
                "annotate",
                object,
                "--loader",
                "libbpf",
                "--prog",
                "xdp_parse",
                "/dev/zero",
            ],
            false,
        ),
        (
            &[
                "annotate",
                object,
                "--loader",
                "libbpf",
                "--prog",
                "xdp_parse",
            ],
            true,
        ),
        (&["profile", object], true),
        (&["report", object, "/dev/zero", "-o", "report.html"], false),
    ];
    for (args, stdin) in cases {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(&dir).env("TMPDIR", &tmp).args(args);
        let out = run(
            &mut cmd,
            if stdin { zero() } else { None },
            Duration::from_secs(60),
        );
        let name = if stdin { "<stdin>" } else { "/dev/zero" };
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), said(name), "{args:?}");
        assert!(names(&tmp).is_empty(), "{:?}", names(&tmp));
    }
    assert_eq!(names(&dir), sorted([OBJECT, LOG, "tmp"]));
}

#[test]
fn a_log_from_a_pipe_is_copied_up_to_its_bound() {
    let dir = workdir("bound");
    let log = std::fs::read(dir.join(LOG)).unwrap();
    let annotate = |bound: &str, input: &[u8]| -> Output {
        common::run_with_stdin(
            Command::new(BIN)
                .current_dir(&dir)
                .env("BPFLOG_SPOOL_MAX", bound)
                .args(["annotate", OBJECT, "--color", "never", "--style", "kernel"]),
            input,
        )
    };
    // The log is 5.8 KB.
    assert!(log.len() > 4096 && log.len() < 8192);
    let out = annotate("4K", &log);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "bpflog: error: <stdin>: more than 4 KiB to copy to a temporary file (a log from a pipe or \
         a device is copied to be read twice): save it to a file and name that, or raise \
         BPFLOG_SPOOL_MAX\n"
    );
    assert!(out.stdout.is_empty());
    let out = annotate("8K", &log);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = annotate("lots", &log);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "bpflog: error: BPFLOG_SPOOL_MAX: expected a size in bytes, or followed by K, M or G, got 'lots'\n"
    );
}

#[test]
fn a_failed_write_of_the_copy_names_the_temporary_directory() {
    let dir = workdir("copy_fails");
    let tmp = dir.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let log = std::fs::File::open(dir.join(LOG)).unwrap();
    let mut cmd = Command::new("sh");
    cmd.current_dir(&dir)
        .env("TMPDIR", &tmp)
        .arg("-c")
        // Files of at most 2 KiB (4 KiB in bash), as in `with_small_files`; the log is 5.8 KB.
        .arg(r#"ulimit -f 4; trap "" XFSZ; exec "$@""#)
        .args(["sh", BIN, "annotate", OBJECT]);
    let out = run(&mut cmd, Some(log.into()), Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "bpflog: error: <stdin>: copying it to a temporary file in {}: File too large (os error 27)\n",
            tmp.display()
        )
    );
    assert!(names(&tmp).is_empty());
}

/// A line too long in a log that libbpf's wrapper opens below the top of a file, found by the
/// reader that looks ahead from where the log opened (in JSON, to the log's end): its number
/// counts from the top of the file, in text and in JSON.
#[test]
fn a_long_line_in_a_wrapped_log_is_numbered_from_the_top_of_the_file() {
    let dir = workdir("long_line");
    let mut input = format!(
        "libbpf: loading object '{OBJECT}'\nlibbpf: prog '{PROGRAM}': -- BEGIN PROG LOAD LOG --\n"
    )
    .into_bytes();
    input.extend(std::fs::read(dir.join(LOG)).unwrap());
    let lines = input.iter().filter(|&&b| b == b'\n').count();
    input.extend(std::iter::repeat_n(b'x', (16 << 20) + 1));
    input.push(b'\n');
    std::fs::write(dir.join("long.log"), &input).unwrap();
    for format in ["text", "json"] {
        let out = run(
            Command::new(BIN)
                .current_dir(&dir)
                .args(["annotate", OBJECT, "long.log", "--format", format]),
            None,
            Duration::from_secs(60),
        );
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).starts_with(&format!(
                "bpflog: error: long.log: line {} is longer than 16 MiB",
                lines + 1
            )),
            "{format}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn an_output_is_not_written_over_a_source_file_that_was_read() {
    // `report -o` and `profile --source --flamegraph` onto the C file the object's debug info
    // led to (here under --source-dir), which they read: refused, the C file kept.
    let dir = workdir("over_source");
    let src = dir.join("src");
    std::fs::create_dir(&src).unwrap();
    let c = std::fs::read(fixture("src", "two_in_one.c")).unwrap();
    std::fs::write(src.join("two_in_one.c"), &c).unwrap();
    for output in [["-o"], ["--flamegraph"]] {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(&dir);
        if output[0] == "-o" {
            cmd.arg("report");
        } else {
            cmd.args(["profile", "--source", "--prog", PROGRAM]);
        }
        cmd.args([OBJECT, LOG, "--source-dir", "src"])
            .args(output)
            .arg("src/two_in_one.c");
        let out = run(&mut cmd, None, Duration::from_secs(60));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{output:?}: {err}");
        assert!(
            err.contains(
                "src/two_in_one.c: the output is the same file as the source file src/two_in_one.c"
            ),
            "{err}"
        );
        assert!(
            std::fs::read(src.join("two_in_one.c")).unwrap() == c,
            "{output:?}"
        );
        assert_eq!(
            names(&src),
            ["two_in_one.c"],
            "{output:?}: a temporary file left"
        );
    }
}
