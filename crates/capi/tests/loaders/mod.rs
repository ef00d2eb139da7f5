//! What the tests of the example loaders (`examples/c`, `examples/go`) share: running one, its
//! one line on stderr, whether the test may load programs, the library's output the loaders
//! print, and the kernel's programs, maps and pins before and after.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use bpflog::object::Loader;

use crate::common::{ROOT, expected};

/// The loader `exe` run with `args`.
pub fn run(exe: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .output()
        .expect("the loader runs")
}

/// The one line the loader wrote on stderr.
pub fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// A fixture log without the kernel's `;` lines (which bpflog would keep as they are), as a
/// loader without line info gets it, written into `dir`: its path and bytes.
pub fn bare_log(dir: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let raw = std::fs::read(format!("{ROOT}/tests/fixtures/logs/{name}")).expect("the log");
    let log: Vec<u8> = raw
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b";"))
        .flatten()
        .copied()
        .collect();
    assert!(log.len() < raw.len(), "{name} has `;` lines");
    let path = dir.join(name);
    std::fs::write(&path, &log).expect("the log written");
    (path, log)
}

/// What the loader `exe` answers without the kernel: the saved `log` of `prog` in `obj`, named
/// and not, annotated and explained as `want`; a missing log or object, or a program the
/// object does not have, refused in one line naming it, exit status 2; each of `usage` (and
/// `OBJ --level 3`) a usage line, exit status 2.
pub fn answers_without_the_kernel(
    exe: &Path,
    obj: &str,
    log: &str,
    prog: &str,
    want: &[u8],
    usage: &[&[&str]],
) {
    for args in [
        vec![obj, "--log", log],
        vec![obj, "--log", log, "--prog", prog],
    ] {
        let out = run(exe, &args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout == want, "{args:?}: not the library's output");
    }
    let refused = [
        (
            vec![obj, "--log", "/nonexistent.log"],
            "loader: /nonexistent.log: ",
        ),
        (
            vec!["/nonexistent.o", "--log", log],
            "loader: /nonexistent.o: ",
        ),
    ];
    for (args, start) in refused {
        let out = run(exe, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(one_line(&out).starts_with(start), "{args:?}");
    }
    let out = run(exe, &[obj, "--log", log, "--prog", "no_such_prog"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("no program named 'no_such_prog'"));
    for args in [&[obj, "--level", "3"][..]].iter().chain(usage) {
        let out = run(exe, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(one_line(&out).starts_with("usage: "), "{args:?}");
    }
}

/// The library's rich annotate and explanation of `log`, as the loaders print them.
pub fn rich_and_explain(obj: &str, prog: &str, loader: Loader, log: &[u8]) -> Vec<u8> {
    let mut want = Vec::new();
    for (name, out) in expected(obj, prog, loader, log) {
        if name == "rich" || name == "explain" {
            want.extend(out);
        }
    }
    want
}

/// The kernel's programs, maps and pins that the loaders' fixtures can leave: taken before
/// loading, compared after.
pub struct KernelState {
    names: Vec<String>,
    /// `None` without bpftool (said on stderr).
    objects: Option<BTreeSet<String>>,
    pins: BTreeSet<PathBuf>,
}

impl KernelState {
    /// The programs and maps bearing one of `names`, and the files under `/sys/fs/bpf`.
    pub fn now(names: &[&str]) -> Self {
        let bpftool = Command::new("bpftool").arg("version").output().is_ok();
        if !bpftool {
            eprintln!("not comparing the kernel's programs and maps before and after: no bpftool");
        }
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        KernelState {
            objects: bpftool.then(|| kernel_objects(&names)),
            names,
            pins: bpffs(),
        }
    }

    /// Asserts that the kernel holds what it held when this was taken. A program's or map's id
    /// goes when its last file descriptor closes, its memory a moment later: up to 5 s.
    pub fn assert_unchanged(&self) {
        assert_eq!(bpffs(), self.pins, "pins left under /sys/fs/bpf");
        let Some(before) = &self.objects else {
            return;
        };
        let mut after = kernel_objects(&self.names);
        for _ in 0..50 {
            if &after == before {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            after = kernel_objects(&self.names);
        }
        assert_eq!(&after, before, "programs or maps left in the kernel");
    }
}

/// The files under `/sys/fs/bpf` (none where it is not mounted).
fn bpffs() -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![PathBuf::from("/sys/fs/bpf")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path.clone());
            }
            found.insert(path);
        }
    }
    found
}

/// The kernel's programs and maps (`bpftool -j KIND show`) that bear one of `names` (the kernel
/// keeps 15 bytes of a name), as `KIND ID NAME`.
fn kernel_objects(names: &[String]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for kind in ["prog", "map"] {
        let out = Command::new("bpftool")
            .args(["-j", kind, "show"])
            .output()
            .expect("bpftool runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        for v in shown.as_array().into_iter().flatten() {
            let Some(name) = v["name"].as_str() else {
                continue;
            };
            if names.iter().any(|n| n.get(..15).unwrap_or(n) == name) {
                found.insert(format!("{kind} {} {name}", v["id"]));
            }
        }
    }
    found
}
