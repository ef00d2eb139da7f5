//! Fixture discovery and readers shared by the root tests.

#![allow(dead_code)]

pub mod kernels;
pub mod page;

use std::path::{Path, PathBuf};

/// `text` (SARIF of bpflog run in the repository) with the source root's URI, a path of this
/// machine, written `file:///<root>/`.
pub fn root_redacted(text: &str) -> String {
    let root = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    text.replace(&format!("file://{}/", root.display()), "file:///<root>/")
}

/// The fixtures folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// One kernel log of the fixtures: `logs/<object>.<program>.l<level>.log`.
#[derive(Debug, Clone)]
pub struct FixtureLog {
    /// File name of the log.
    pub name: String,
    /// Path of the log.
    pub log: PathBuf,
    /// Path of the object it came from.
    pub object: PathBuf,
    /// The program's name.
    pub program: String,
    /// The log level (1 or 2).
    pub level: u32,
}

/// Every fixture log, sorted by name.
pub fn fixture_logs() -> Vec<FixtureLog> {
    let dir = fixtures().join("logs");
    let mut logs: Vec<FixtureLog> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/logs")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|log| {
            let name = log.file_name().unwrap().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".log").unwrap();
            let (rest, level) = stem.rsplit_once('.').unwrap();
            let (object, program) = rest.rsplit_once('.').unwrap();
            FixtureLog {
                level: level.trim_start_matches('l').parse().unwrap(),
                object: fixtures().join("obj").join(format!("{object}.o")),
                program: program.to_owned(),
                log,
                name,
            }
        })
        .collect();
    logs.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(!logs.is_empty(), "no fixture logs in {}", dir.display());
    logs
}

/// The log without the kernel's annotation lines (`; ...`), line terminators kept.
pub fn strip_annotations(log: &[u8]) -> Vec<u8> {
    log.split_inclusive(|&b| b == b'\n')
        .filter(|line| !line.starts_with(b";"))
        .flatten()
        .copied()
        .collect()
}

/// Runs `cmd` with `input` on its standard input and collects its output.
pub fn run_with_stdin(cmd: &mut std::process::Command, input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    // Written from another thread: a child that writes a lot before reading all would block.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer");
    out
}

/// reject_subprog's level-1 and level-2 logs of the same rejection, each wrapped as libbpf
/// prints a load log.
pub fn wrapped_reject_subprog_logs() -> Vec<u8> {
    let logs = fixtures().join("logs");
    let mut file = Vec::new();
    for level in ["l1", "l2"] {
        file.extend_from_slice(b"libbpf: prog 'xdp_reject_subprog': -- BEGIN PROG LOAD LOG --\n");
        file.extend(
            std::fs::read(logs.join(format!("reject_subprog.xdp_reject_subprog.{level}.log")))
                .unwrap(),
        );
        file.extend_from_slice(b"-- END PROG LOAD LOG --\n");
    }
    file
}

/// The profile of `log` as `program`'s and its call stacks folded for a flame graph
/// ([`bpflog::profile::profile`], which reads a flame graph's log from a file: `log` is
/// written to one first, named after `name`).
pub fn profile_with_stacks(
    program: &bpflog::Program<'_, '_>,
    log: &[u8],
    name: &str,
    files: &mut bpflog::SourceFiles,
) -> (bpflog::profile::Profile, bpflog::profile::FoldedStacks) {
    let path = std::env::temp_dir().join(format!("bpflog-stacks-{}-{name}", std::process::id()));
    std::fs::write(&path, log).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let request = bpflog::profile::ProfileRequest::default().stacks(true);
    let input = bpflog::Input::among(std::slice::from_ref(program), (&file).into());
    let profiled = bpflog::profile::profile(input, &request, files);
    let _ = std::fs::remove_file(&path);
    let profiled = profiled.unwrap();
    (profiled.profile, profiled.stacks.unwrap())
}

/// `child`'s exit status, waited for at most `limit`; past it the child is killed and the test
/// fails naming `what`, rather than waiting for ever.
pub fn wait_at_most(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::ExitStatus {
    let started = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
