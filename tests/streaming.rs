//! When output is written: a misfit found early writes nothing, whatever the size of the log
//! (one found late says exactly which lines went out: `tests/cli.rs`), and the log of a live
//! loader, read from a pipe that pauses, goes out as it comes instead of at the end, whether its
//! program is known beforehand or chosen among several on the way.

mod common;

use common::fixtures;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn obj(name: &str) -> PathBuf {
    fixtures().join("obj").join(name)
}

fn log(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("logs").join(name)).unwrap()
}

/// A scratch file under the target directory.
fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("streaming");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `log` repeated past `bytes`.
fn repeated(log: &[u8], bytes: usize) -> Vec<u8> {
    log.repeat(bytes / log.len() + 1)
}

#[test]
fn a_misfit_found_early_in_a_large_log_writes_nothing() {
    // branchy.o has one program; 30 MB of loop_callback's real log is not its log, which the
    // second line says. Nothing may be written, however much output is held back.
    let other = repeated(&log("loop_callback.loop_sum.l2.log"), 30 << 20);
    let path = scratch("other-program.log", &other);
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(["annotate", "--style", "kernel"])
        .arg(obj("branchy.o"))
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "{} bytes written", out.stdout.len());
    assert!(
        err.contains("xdp_branchy: log line 2: func#1 does not exist"),
        "{err}"
    );
    assert!(!err.contains("written"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Runs `bpflog annotate ARGS` with `input` written to a pipe that stays open afterwards, and
/// returns what it wrote within `patience` of the input's being written (`None`: it wrote
/// nothing then), and its output once the pipe is closed.
fn output_while_the_pipe_stays_open(
    args: &[&str],
    input: &[u8],
    expected_len: usize,
    patience: Duration,
) -> (Vec<u8>, Vec<u8>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0; 1 << 16];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    stdin.flush().unwrap();
    let mut early = Vec::new();
    let deadline = Instant::now() + patience;
    while early.len() < expected_len {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(bytes) => early.extend_from_slice(&bytes),
            Err(_) => break,
        }
    }
    drop(stdin);
    let mut all = early.clone();
    all.extend(rx.iter().flatten());
    child.wait().unwrap();
    reader.join().unwrap();
    (early, all)
}

#[test]
fn a_live_log_from_a_pipe_flows_before_the_pipe_closes() {
    // A loader writes the log and keeps the pipe open: the annotated log must come out while it
    // is open, with --prog (annotated anyway) and without it (the only program, its output
    // held back for a refusal until the input pauses), in kernel style from a log without the
    // kernel's lines (whose source lines wait for the first annotation or enough instructions).
    let kernel = log("branchy.xdp_branchy.l2.log");
    let stripped = common::strip_annotations(&kernel);
    let object = obj("branchy.o");
    let object = object.to_str().unwrap();
    for args in [
        &["annotate", "--style", "kernel", object][..],
        &[
            "annotate",
            "--style",
            "kernel",
            "--prog",
            "xdp_branchy",
            object,
        ],
    ] {
        for input in [&kernel, &stripped] {
            let (early, all) = output_while_the_pipe_stays_open(
                args,
                input,
                kernel.len(),
                Duration::from_secs(20),
            );
            assert!(all == kernel, "{args:?}: {} bytes in all", all.len());
            assert!(
                early == kernel,
                "{args:?}: {} of {} bytes out before the pipe closed",
                early.len(),
                kernel.len()
            );
        }
    }
}

#[test]
fn a_live_log_flows_when_its_program_is_chosen_among_several() {
    // Objects of several programs: each log's program is chosen on the way, from a copy of the
    // pipe that is read as it is made. The log must come out while the pipe is open: with the
    // kernel's lines, and without them (loop_sum's log has more than the 64 instructions that
    // decide whether a log carries them; a shorter one waits for its end, undecided).
    for (object, name) in [
        ("two_in_one.o", "two_in_one.xdp_second.l2.log"),
        ("loop_callback.o", "loop_callback.loop_sum.l2.log"),
    ] {
        let kernel = log(name);
        let stripped = common::strip_annotations(&kernel);
        let object = obj(object);
        let args = ["annotate", "--style", "kernel", object.to_str().unwrap()];
        let inputs = if name.starts_with("loop") {
            vec![&kernel, &stripped]
        } else {
            vec![&kernel]
        };
        for input in inputs {
            let patience = Duration::from_secs(20);
            let (early, all) =
                output_while_the_pipe_stays_open(&args, input, kernel.len(), patience);
            assert!(all == kernel, "{name}: {} bytes in all", all.len());
            assert!(
                early == kernel,
                "{name}: {} of {} bytes out before the pipe closed",
                early.len(),
                kernel.len()
            );
        }
    }
}
