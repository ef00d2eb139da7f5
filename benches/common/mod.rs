//! What the benchmarks share: the fixtures, the large logs made from them, and a timed run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tests' fixtures (`tests/fixtures`).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Writes a log of at least `mb` MiB from the fixture log `seed` (in `tests/fixtures/logs`, or
/// a path), once; and the same log without the kernel's source lines (`;`), as a loader that
/// passes no line info gets it.
pub fn generate(dir: &Path, seed: &str, mb: u64) -> (PathBuf, PathBuf) {
    let name = Path::new(seed)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(seed);
    let stem = name.split('.').next().unwrap_or(name);
    let path = dir.join(format!("bench-{stem}-{mb}mb.log"));
    let stripped = dir.join(format!("bench-{stem}-{mb}mb.stripped.log"));
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= mb << 20) && stripped.exists() {
        return (path, stripped);
    }
    let seed = std::fs::read(fixtures().join("logs").join(seed)).expect("fixture log");
    let copies = (mb << 20).div_ceil(seed.len() as u64) as usize;
    std::fs::write(&path, seed.repeat(copies)).expect("write the log");
    let bare: Vec<u8> = seed
        .split_inclusive(|&b| b == b'\n')
        .filter(|line| !line.starts_with(b";"))
        .flatten()
        .copied()
        .collect();
    std::fs::write(&stripped, bare.repeat(copies)).expect("write the log");
    (path, stripped)
}

/// One run of a shell command line. `out` is removed before it, and the disk synced, outside
/// the timing: truncating the last run's output would wait on its writeback, and writeback
/// still going on takes a core from the next run. Both are the disk's noise, not the command's
/// work.
pub fn time(shell: &str, out: &Path) -> Duration {
    let _ = std::fs::remove_file(out);
    let _ = Command::new("sync").status();
    let start = Instant::now();
    let status = Command::new("sh")
        .arg("-c")
        .arg(shell)
        .stdin(Stdio::null())
        .status()
        .expect("run");
    assert!(status.success(), "failed: {shell}");
    start.elapsed()
}
