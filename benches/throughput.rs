//! End-to-end throughput on a large log, beside `cat` and `wc -l` on the same file.
//!
//! `cargo bench --bench throughput` (BPFLOG_BENCH_MB sets the log size, 200 by default). The log
//! is a real level-2 kernel log (`tests/fixtures/logs/branchy.xdp_branchy.l2.log`) repeated, as a
//! program verified over and over; each command runs 5 times and the fastest run counts. Output
//! goes to a file on the same disk for `cat` and `annotate`; `wc -l` and `profile` print little.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 5;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Writes a log of at least `mb` MB from the fixture log, once.
fn generate(dir: &Path, mb: u64) -> PathBuf {
    let path = dir.join(format!("bench-{mb}mb.log"));
    let seed =
        std::fs::read(fixtures().join("logs/branchy.xdp_branchy.l2.log")).expect("fixture log");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= mb << 20) {
        return path;
    }
    let copies = (mb << 20).div_ceil(seed.len() as u64) as usize;
    std::fs::write(&path, seed.repeat(copies)).expect("write the log");
    path
}

/// The fastest of `RUNS` runs of a shell command line. `out` is removed before each run (not
/// timed): truncating the last run's output would wait on its writeback, which is the disk's
/// noise, not the command's work.
fn time(shell: &str, out: &Path) -> Duration {
    (0..RUNS)
        .map(|_| {
            let _ = std::fs::remove_file(out);
            let start = Instant::now();
            let status = Command::new("sh")
                .arg("-c")
                .arg(shell)
                .stdin(Stdio::null())
                .status()
                .expect("run");
            assert!(status.success(), "failed: {shell}");
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours means another bench was asked for.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"throughput".contains(&a))
    {
        return;
    }
    let mb: u64 = std::env::var("BPFLOG_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let log = generate(&dir, mb);
    let size = std::fs::metadata(&log).expect("log").len() as f64 / (1 << 20) as f64;
    println!(
        "log: {size:.0} MiB ({}), best of {RUNS} runs",
        log.display()
    );
    // Output to a file on the disk, as a user would write it, and to memory (tmpfs), where the
    // disk's writeback does not blur the comparison.
    let mut outs = vec![("disk", dir.join("bench-out.log"))];
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        outs.push((
            "tmpfs",
            shm.join(format!("bpflog-bench-{}.log", std::process::id())),
        ));
    }
    for (k, (place, out)) in outs.iter().enumerate() {
        println!("\noutput to {place} ({})", out.display());
        run(&log, out, size, k == 0);
        let _ = std::fs::remove_file(out);
    }
}

/// Times the commands with output to `out`; those without output only when `all`.
fn run(log: &Path, out: &Path, size: f64, all: bool) {
    let out_path = out;
    let bpflog = env!("CARGO_BIN_EXE_bpflog");
    let obj = fixtures().join("obj/branchy.o");
    // A second object, so that each log's program must be chosen.
    let obj2 = fixtures().join("obj/tc_prog.o");
    let (log, out, obj, obj2) = (log.display(), out.display(), obj.display(), obj2.display());
    let cases = [
        ("cat LOG > OUT", format!("cat {log} > {out}"), None, true),
        ("wc -l LOG", format!("wc -l {log} > /dev/null"), None, all),
        (
            "annotate --prog > OUT",
            format!("{bpflog} annotate {obj} {log} --prog xdp_branchy > {out}"),
            Some(0),
            true,
        ),
        (
            "annotate (the only program) > OUT",
            format!("{bpflog} annotate {obj} {log} > {out}"),
            Some(0),
            true,
        ),
        (
            "annotate (two objects: chosen on the way) > OUT",
            format!("{bpflog} annotate {obj} {obj2} -- {log} > {out}"),
            Some(0),
            true,
        ),
        (
            "annotate --style rich --prog > OUT",
            format!("{bpflog} annotate {obj} {log} --prog xdp_branchy --style rich > {out}"),
            Some(0),
            true,
        ),
        (
            "profile --prog",
            format!("{bpflog} profile {obj} {log} --prog xdp_branchy > /dev/null"),
            Some(1),
            all,
        ),
        (
            "profile (one program: fit checked on the way)",
            format!("{bpflog} profile {obj} {log} > /dev/null"),
            Some(1),
            all,
        ),
    ];
    println!(
        "{:<48} {:>9} {:>10} {:>18}",
        "command", "seconds", "MiB/s", "vs baseline"
    );
    let mut baselines: Vec<(&str, f64)> = Vec::new();
    for (name, shell, baseline, wanted) in &cases {
        if !wanted {
            continue;
        }
        let t = time(shell, out_path).as_secs_f64();
        let ratio =
            baseline
                .and_then(|b| baselines.get(b))
                .map_or(String::new(), |(base_name, base)| {
                    format!(
                        "{:.2}x {}",
                        t / base,
                        base_name.split_whitespace().next().unwrap_or("")
                    )
                });
        println!("{name:<48} {t:>9.3} {:>10.0} {ratio:>18}", size / t);
        if baseline.is_none() {
            baselines.push((*name, t));
        }
    }
}
