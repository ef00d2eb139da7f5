//! What bpflog reads as source, through the binary. The objects of `tests/fixtures/hostile` are
//! reject_subprog.o with its one source file renamed, in `.BTF.ext` and in the DWARF line table,
//! to files that are no source of theirs (`make.py` there): `/etc/passwd`, `/etc/shadow`,
//! `/proc/self/environ`, `../` × 16 + `etc/passwd`, and `../outside/secret.c`, a file each test
//! writes beside the directory it runs the binary in, a marker on every line. No command shows
//! any of them: each says once on stderr that it did not read the file, and shows the line text
//! BTF keeps. `--any-source` reads them. A symbolic link out of a root is refused too, and an
//! endless or blocking file under a root neither hangs nor grows.

mod common;

use common::{fixtures, strip_annotations};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// On every line of `outside/secret.c`.
const SECRET: &str = "BPFLOG-SECRET-5e1c9";
/// In the environment of every run, so in its `/proc/self/environ`.
const ENV_MARKER: &str = "BPFLOG-ENVIRON-77d1";
/// A line of the source that BTF keeps (reject_subprog.c:54).
const BTF_TEXT: &str = "bytes += len";

/// The hostile cases: object name, and what the note names (the name as the object gives it,
/// not where it leads).
const CASES: [(&str, &str); 5] = [
    ("etc-passwd", "not reading /etc/passwd (named by "),
    ("etc-shadow", "not reading /etc/shadow (named by "),
    ("proc-environ", "not reading /proc/self/environ (named by "),
    ("dotdot-passwd", "not reading ../../../../"),
    ("outside", "not reading ../outside/secret.c (named by "),
];

fn hostile(name: &str) -> PathBuf {
    fixtures().join("hostile").join(format!("{name}.o"))
}

/// A test's own directory: `work`, where the binary runs (a root), `outside/secret.c` beside
/// it, and `log`, the fixture log without the kernel's annotation lines (those name
/// `reject_subprog.c`, which the hostile objects do not).
struct Scene {
    base: PathBuf,
    work: PathBuf,
    log: PathBuf,
}

impl Scene {
    fn new(test: &str) -> Scene {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("source-policy")
            .join(test);
        let _ = std::fs::remove_dir_all(&base);
        let work = base.join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        let secret: String = (1..=100)
            .map(|i| format!("int line{i}; /* {SECRET} */\n"))
            .collect();
        std::fs::write(base.join("outside/secret.c"), secret).unwrap();
        let log = fixtures().join("logs/reject_subprog.xdp_reject_subprog.l1.log");
        let stripped = strip_annotations(&std::fs::read(log).unwrap());
        std::fs::write(base.join("log"), stripped).unwrap();
        let base = std::fs::canonicalize(base).unwrap();
        Scene {
            work: base.join("work"),
            log: base.join("log"),
            base,
        }
    }

    /// `bpflog ARGS...` in `work`, with [`ENV_MARKER`] in its environment; killed (and the test
    /// failed) if it takes a minute.
    fn run(&self, args: &[OsString]) -> Output {
        self.run_in(&self.work, args)
    }

    fn run_in(&self, dir: &Path, args: &[OsString]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_bpflog"));
        command
            .current_dir(dir)
            .env("BPFLOG_TEST_MARKER", ENV_MARKER)
            .args(args);
        within(command, Duration::from_secs(60))
    }

    /// Each command that shows source, on `object` (with `extra` arguments): what it is, its
    /// output (the report's page for `report`), its stderr.
    fn every_command(&self, object: &Path, extra: &[&str]) -> Vec<(String, String, String)> {
        let (obj, log) = (object.as_os_str(), self.log.as_os_str());
        let page = self.base.join("report.html");
        let commands: [(&str, Vec<&std::ffi::OsStr>); 5] = [
            (
                "annotate --style rich",
                vec![
                    "annotate".as_ref(),
                    obj,
                    log,
                    "--style".as_ref(),
                    "rich".as_ref(),
                ],
            ),
            (
                "annotate --style rich --context 3",
                vec![
                    "annotate".as_ref(),
                    obj,
                    log,
                    "--style".as_ref(),
                    "rich".as_ref(),
                    "--context".as_ref(),
                    "3".as_ref(),
                ],
            ),
            ("lines", vec!["lines".as_ref(), obj]),
            (
                "profile --source",
                vec!["profile".as_ref(), "--source".as_ref(), obj, log],
            ),
            (
                "report",
                vec!["report".as_ref(), obj, log, "-o".as_ref(), page.as_ref()],
            ),
        ];
        commands
            .into_iter()
            .map(|(what, args)| {
                let _ = std::fs::remove_file(&page);
                let mut args: Vec<OsString> = args.into_iter().map(OsString::from).collect();
                args.extend(["--color", "never"].map(OsString::from).into_iter().take(
                    if what == "lines" || what == "report" {
                        0
                    } else {
                        2
                    },
                ));
                args.extend(extra.iter().map(OsString::from));
                let out = self.run(&args);
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert!(out.status.success(), "{what}: {stderr}");
                let shown = if what == "report" {
                    std::fs::read(&page).unwrap()
                } else {
                    out.stdout
                };
                (
                    what.to_owned(),
                    String::from_utf8_lossy(&shown).into_owned(),
                    stderr,
                )
            })
            .collect()
    }
}

/// Runs `command`, its output into files; kills it and fails if it is not done by `limit`.
fn within(mut command: Command, limit: Duration) -> Output {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("source-policy");
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (
        dir.join(format!("out.{}.{k}", std::process::id())),
        dir.join(format!("err.{}.{k}", std::process::id())),
    );
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("run bpflog");
    let status = common::wait_at_most(&mut child, limit, &format!("{command:?}"));
    let output = Output {
        status,
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    let _ = (std::fs::remove_file(out), std::fs::remove_file(err));
    output
}

/// Lines of `/etc/passwd` long enough not to turn up by chance.
fn passwd_lines() -> Vec<String> {
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.len() > 12)
        .map(str::to_owned)
        .collect()
}

/// The notes on `stderr` about files not read.
fn notes(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("bpflog: note: not reading "))
        .collect()
}

#[test]
fn debug_info_naming_files_outside_the_roots_gets_none_of_them_shown() {
    let scene = Scene::new("refused");
    let passwd = passwd_lines();
    assert!(!passwd.is_empty(), "/etc/passwd");
    for (case, named) in CASES {
        for (what, shown, stderr) in scene.every_command(&hostile(case), &[]) {
            let context = format!("{case}, {what}");
            assert!(!shown.contains(SECRET), "{context}: {shown}");
            assert!(!shown.contains(ENV_MARKER), "{context}: {shown}");
            for line in &passwd {
                assert!(!shown.contains(line.as_str()), "{context}: {line}");
            }
            // BTF's line text stands in.
            assert!(shown.contains(BTF_TEXT), "{context}: {shown}");
            // One note, for the one file.
            let notes = notes(&stderr);
            assert_eq!(notes.len(), 1, "{context}: {stderr}");
            assert!(notes[0].contains(named), "{context}: {stderr}");
            let hostile = hostile(case);
            let by = format!("by {}'s debug info): ", hostile.display());
            assert!(notes[0].contains(&by), "{context}: {stderr}");
            let widens = if case == "proc-environ" {
                "): under /proc; --any-source widens"
            } else {
                "): outside the source roots; --source-dir or --any-source widens"
            };
            assert!(notes[0].ends_with(widens), "{context}: {stderr}");
        }
    }
}

#[test]
fn any_source_reads_them() {
    let scene = Scene::new("widened");
    let passwd = passwd_lines();
    for (what, shown, stderr) in scene.every_command(&hostile("outside"), &["--any-source"]) {
        assert!(shown.contains(SECRET), "{what}: {shown}");
        assert!(notes(&stderr).is_empty(), "{what}: {stderr}");
    }
    // The whole file is shown by `profile --source` and embedded in the report.
    for case in ["etc-passwd", "dotdot-passwd", "proc-environ"] {
        let commands = scene.every_command(&hostile(case), &["--any-source"]);
        for (what, shown, stderr) in commands.iter().skip(3) {
            let context = format!("{case}, {what}");
            if case == "proc-environ" {
                assert!(shown.contains(ENV_MARKER), "{context}: {shown}");
            } else {
                assert!(shown.contains(passwd[0].as_str()), "{context}: {shown}");
            }
            assert!(notes(stderr).is_empty(), "{context}: {stderr}");
        }
    }
}

#[test]
fn a_symbolic_link_out_of_a_root_is_refused() {
    let scene = Scene::new("symlink");
    let secret = scene.base.join("outside/secret.c");
    let object = fixtures().join("obj/reject_subprog.o");
    let rich = |dir: &Path, extra: &[&str]| {
        let mut args: Vec<OsString> = ["annotate".into(), object.clone().into_os_string()]
            .into_iter()
            .collect();
        args.push(scene.log.clone().into_os_string());
        args.extend(["--style", "rich", "--color", "never"].map(OsString::from));
        args.extend(extra.iter().map(OsString::from));
        let out = scene.run_in(dir, &args);
        assert!(out.status.success());
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    // `reject_subprog.c` in the current directory, a link to the file outside.
    std::os::unix::fs::symlink(&secret, scene.work.join("reject_subprog.c")).unwrap();
    let (shown, stderr) = rich(&scene.work, &[]);
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains(BTF_TEXT), "{shown}");
    // The name, not where the link leads.
    let note = "not reading reject_subprog.c (named by ";
    assert_eq!(notes(&stderr).len(), 1, "{stderr}");
    assert!(notes(&stderr)[0].contains(note), "{stderr}");
    // The same in a --source-dir.
    std::fs::remove_file(scene.work.join("reject_subprog.c")).unwrap();
    let dir = scene.base.join("src");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("reject_subprog.c")).unwrap();
    let (shown, stderr) = rich(&scene.work, &["--source-dir", "../src"]);
    assert!(!shown.contains(SECRET), "{shown}");
    assert_eq!(notes(&stderr).len(), 1, "{stderr}");
    assert!(notes(&stderr)[0].contains(note), "{stderr}");
    // A copy, not a link, is read: the link is what is refused.
    let copy = scene.base.join("copy");
    std::fs::create_dir(&copy).unwrap();
    std::fs::copy(&secret, copy.join("reject_subprog.c")).unwrap();
    let (shown, stderr) = rich(&copy, &[]);
    assert!(shown.contains(SECRET), "{shown}");
    assert!(notes(&stderr).is_empty(), "{stderr}");
    // A directory --source-dir names is vouched for where it really is, link or not.
    let elsewhere = scene.base.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::copy(&secret, elsewhere.join("reject_subprog.c")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, scene.base.join("vouched")).unwrap();
    let (shown, stderr) = rich(&scene.work, &["--source-dir", "../vouched"]);
    assert!(shown.contains(SECRET), "{shown}");
    assert!(notes(&stderr).is_empty(), "{stderr}");
}

#[test]
fn a_fifo_under_a_root_does_not_hang() {
    let scene = Scene::new("fifo");
    let dir = scene.base.join("src");
    std::fs::create_dir(&dir).unwrap();
    let made = Command::new("mkfifo")
        .arg(dir.join("reject_subprog.c"))
        .status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let object = fixtures().join("obj/reject_subprog.o");
    let extra = ["--source-dir", dir.to_str().unwrap()];
    for (what, shown, stderr) in scene.every_command(&object, &extra) {
        assert!(shown.contains(BTF_TEXT), "{what}: {shown}");
        let notes = notes(&stderr);
        assert_eq!(notes.len(), 1, "{what}: {stderr}");
        assert!(
            notes[0].ends_with("): not a regular file"),
            "{what}: {stderr}"
        );
    }
}

#[test]
fn an_endless_file_under_a_root_is_read_only_up_to_the_limit() {
    // /proc/self/pagemap: 0 bytes by `stat`, endless by `read`. Under a root inside /proc
    // (--source-dir /proc/self) it may be read; the reading stops at 64 MiB, and the file is
    // refused. Under a memory limit of 1 GiB, so that reading on would fail the run.
    let scene = Scene::new("endless");
    let object = hostile("proc-pagemap");
    let mut command = Command::new("sh");
    command
        .current_dir(&scene.work)
        .args(["-c", "ulimit -v 1048576 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_bpflog"))
        .args(["profile", "--source", "--source-dir", "/proc/self"])
        .arg(&object)
        .arg(&scene.log);
    let start = Instant::now();
    let out = within(command, Duration::from_secs(60));
    let took = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let notes = notes(&stderr);
    assert_eq!(notes.len(), 1, "{stderr}");
    let tail = format!(
        "not reading /proc/self/pagemap (named by {}'s debug info): larger than 64 MiB",
        object.display()
    );
    assert!(notes[0].ends_with(&tail), "{stderr}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(BTF_TEXT), "{shown}");
    eprintln!("pagemap refused after {took:?}");
}

#[test]
fn the_current_directory_is_no_root_when_it_is_the_root() {
    // Run from `/`, the current directory would vouch for every file: it is no root then.
    let scene = Scene::new("slash");
    let out = scene.run_in(
        Path::new("/"),
        &["lines".into(), hostile("etc-passwd").into_os_string()],
    );
    let (shown, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    for line in passwd_lines() {
        assert!(!shown.contains(line.as_str()), "{line}");
    }
    assert!(shown.contains(BTF_TEXT), "{shown}");
    assert_eq!(notes(&stderr).len(), 1, "{stderr}");
    // Named by --source-dir, `/` is vouched for (but /proc, /sys and /dev).
    let out = scene.run_in(
        Path::new("/"),
        &[
            "lines".into(),
            hostile("etc-passwd").into_os_string(),
            "--source-dir".into(),
            "/".into(),
        ],
    );
    assert!(notes(&String::from_utf8_lossy(&out.stderr)).is_empty());
}
