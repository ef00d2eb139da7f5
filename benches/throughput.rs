//! End-to-end throughput on large logs, beside `cat` and `wc -l` on the same files.
//!
//! `cargo bench --bench throughput` (BPFLOG_BENCH_MB sets the logs' size, 200 by default). Each
//! log is a real level-2 kernel log repeated, as a program verified over and over:
//! `branchy.xdp_branchy.l2.log` for an object of one program (`branchy.o`), and
//! `loop_callback.loop_sum.l2.log` for an object of two (`loop_callback.o`: the program is chosen
//! from the log), and `benches/fixtures/unrolled.xdp_unrolled.l2.log` for `unrolled.o`, 4,000
//! instructions in a straight line: short instruction lines, each instruction verified once
//! (the first two logs have long lines, most of them details of the verifier's work). The
//! first is also annotated without the kernel's source lines (`;`), as a loader that passes no
//! line info gets it: the lines are put back, and the output is the whole log again, the bytes
//! `cat` writes. The commands run in rounds, each once a round, 9 rounds: the fastest run of
//! each counts (its median is shown too), and a slow spell of the machine falls on all the
//! commands alike rather than on the few that ran then. Output goes to a file on the disk, then
//! to one in memory (tmpfs), for `cat` and `annotate`; `wc -l` and `profile` print little.
//!
//! `cargo bench --bench throughput -- --targets` measures the speed targets instead: each command
//! paired with its baseline in rounds, the median of the rounds' ratios (see
//! [`paired_targets`]), and its peak memory; then two floors of those targets ([`floors`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
/// The page's pieces read back as the tests read them.
#[allow(dead_code)] // the bench reads only the pieces' texts
#[path = "../tests/common/page.rs"]
mod page;

use common::{fixtures, generate, time};

const RUNS: usize = 9;

/// The benchmarks' own fixture (`benches/fixtures`, rebuilt by its `regenerate.sh`).
fn bench_fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/fixtures")
}

/// One log of the bench: its title, the log, its commands beside `cat` (given the output),
/// and for `wc -l` and `profile` its object, its program and how `profile` finds the program
/// when not named.
struct Section<'a> {
    title: &'a str,
    log: &'a Path,
    commands: &'a dyn Fn(&Path) -> Vec<Case>,
    object: &'a str,
    prog: &'a str,
    how: &'a str,
}

/// A command to time: its name, its shell line, and the baseline it is compared with.
struct Case {
    name: String,
    shell: String,
    baseline: Option<&'static str>,
}

impl Case {
    /// `cat LOG > OUT`: the baseline of the commands that write the log out.
    fn cat(log: &dyn std::fmt::Display, out: &dyn std::fmt::Display) -> Case {
        Case {
            name: "cat LOG > OUT".into(),
            shell: format!("cat {log} > {out}"),
            baseline: None,
        }
    }

    /// `shell`, beside `cat`.
    fn beside_cat(name: &str, shell: String) -> Case {
        Case {
            name: name.into(),
            shell,
            baseline: Some("cat"),
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that is not ours means another bench was asked for.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"throughput".contains(&a))
    {
        return;
    }
    let targets = std::env::args().any(|a| a == "--targets");
    let mb: u64 = std::env::var("BPFLOG_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if targets { 86 } else { 200 });
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if targets {
        return paired_targets(&dir, mb);
    }
    let bpflog = env!("CARGO_BIN_EXE_bpflog");
    let obj = |name: &str| fixtures().join("obj").join(name).display().to_string();
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
    println!("best (and median) of {RUNS} rounds");

    let (log, stripped) = generate(&dir, "branchy.xdp_branchy.l2.log", mb);
    let (branchy, tc) = (obj("branchy.o"), obj("tc_prog.o"));
    // Each log's commands beside `cat` (which the loop below puts first), given the output.
    let one = |out: &Path| {
        let (log, stripped, out) = (log.display(), stripped.display(), out.display());
        vec![
            Case::beside_cat(
                "annotate --prog > OUT",
                format!("{bpflog} annotate {branchy} {log} --prog xdp_branchy > {out}"),
            ),
            Case::beside_cat(
                "annotate (the only program) > OUT",
                format!("{bpflog} annotate {branchy} {log} > {out}"),
            ),
            Case::beside_cat(
                "annotate (two objects: chosen on the way) > OUT",
                format!("{bpflog} annotate {branchy} {tc} -- {log} > {out}"),
            ),
            // The source lines put back: the same output, from a log without them.
            Case::beside_cat(
                "annotate --prog, log without `;` lines > OUT",
                format!("{bpflog} annotate {branchy} {stripped} --prog xdp_branchy > {out}"),
            ),
            Case::beside_cat(
                "annotate --style rich --prog > OUT",
                format!(
                    "{bpflog} annotate {branchy} {log} --prog xdp_branchy --style rich > {out}"
                ),
            ),
            // A record per line: 2.2 times the log's bytes.
            Case::beside_cat(
                "annotate --format json --prog > OUT",
                format!(
                    "{bpflog} annotate {branchy} {log} --prog xdp_branchy --format json > {out}"
                ),
            ),
            // The log read once beside the failure tracker, the failing path and the profiler
            // (an accepted log: nothing is written).
            Case::beside_cat(
                "explain --prog > OUT",
                format!("{bpflog} explain {branchy} {log} --prog xdp_branchy > {out}"),
            ),
            Case::beside_cat(
                "explain (the only program, checked on the way) > OUT",
                format!("{bpflog} explain {branchy} {log} > {out}"),
            ),
            // The log's lines in the page, and the profile's data.
            Case::beside_cat(
                "report --prog -o OUT",
                format!("{bpflog} report {branchy} {log} --prog xdp_branchy -o {out}"),
            ),
        ]
    };
    let (log2, _) = generate(&dir, "loop_callback.loop_sum.l2.log", mb);
    let loop_callback = obj("loop_callback.o");
    let several = |out: &Path| {
        let (log, out) = (log2.display(), out.display());
        vec![Case::beside_cat(
            "annotate (chosen on the way) > OUT",
            format!("{bpflog} annotate {loop_callback} {log} > {out}"),
        )]
    };

    // Short instruction lines, each instruction verified once: the work per line sets the pace.
    let seed = bench_fixtures().join("unrolled.xdp_unrolled.l2.log");
    let (log3, _) = generate(&dir, &seed.display().to_string(), mb);
    let unrolled = bench_fixtures().join("unrolled.o").display().to_string();
    let dense = |out: &Path| {
        let (log, out) = (log3.display(), out.display());
        vec![
            Case::beside_cat(
                "annotate --prog > OUT",
                format!("{bpflog} annotate {unrolled} {log} --prog xdp_unrolled > {out}"),
            ),
            Case::beside_cat(
                "annotate (the only program) > OUT",
                format!("{bpflog} annotate {unrolled} {log} > {out}"),
            ),
        ]
    };

    let sections = [
        Section {
            title: "one program: branchy.o",
            log: &log,
            commands: &one,
            object: &branchy,
            prog: "xdp_branchy",
            how: "the only program",
        },
        Section {
            title: "two programs: loop_callback.o",
            log: &log2,
            commands: &several,
            object: &loop_callback,
            prog: "loop_sum",
            how: "chosen from the log",
        },
        Section {
            title: "instruction lines: unrolled.o (benches/fixtures)",
            log: &log3,
            commands: &dense,
            object: &unrolled,
            prog: "xdp_unrolled",
            how: "the only program",
        },
    ];
    for s in sections {
        let size = std::fs::metadata(s.log).expect("log").len() as f64 / (1 << 20) as f64;
        for (k, (place, out)) in outs.iter().enumerate() {
            let log = s.log.display();
            println!("\n{}, {size:.0} MiB ({log}), output to {place}", s.title);
            let mut cases = vec![Case::cat(&log, &out.display())];
            cases.extend((s.commands)(out));
            // `wc -l` and `profile` print little: once, with the first output.
            if k == 0 {
                cases.extend(counting(&log, s.object, s.prog, s.how));
            }
            run(&cases, out, size);
            let _ = std::fs::remove_file(out);
        }
    }

    // A developer's log: small, a process for each, output to a pipe or a terminal (held back
    // until the log is known to fit). What counts here is what a process does before and after
    // the lines.
    let small = fixtures().join("logs/xdp_subprogs.xdp_parse.l2.log");
    let bytes = std::fs::metadata(&small).expect("log").len();
    let (small, subprogs) = (small.display(), obj("xdp_subprogs.o"));
    const PROCESSES: u64 = 100;
    let each = |command: String| {
        format!("for i in $(seq {PROCESSES}); do {command}; done | cat > /dev/null")
    };
    println!(
        "\nsmall logs: {PROCESSES} processes one after the other, each on a log of {:.0} KiB \
         ({small}), output to a pipe",
        bytes as f64 / 1024.0
    );
    let all = std::fs::read_dir(fixtures().join("obj"))
        .expect("objects")
        .filter_map(|e| e.ok().map(|e| e.path().display().to_string()))
        .filter(|p| p.ends_with(".o"))
        .collect::<Vec<_>>()
        .join(" ");
    let cases = [
        Case {
            name: "cat LOG".into(),
            shell: each(format!("cat {small}")),
            baseline: None,
        },
        Case::beside_cat(
            "annotate (the only program)",
            each(format!("{bpflog} annotate {subprogs} {small}")),
        ),
        Case::beside_cat(
            "annotate (every fixture object: chosen)",
            each(format!("{bpflog} annotate {all} -- {small}")),
        ),
        Case::beside_cat(
            "profile",
            each(format!("{bpflog} profile {subprogs} {small}")),
        ),
    ];
    let size = (bytes * PROCESSES) as f64 / (1 << 20) as f64;
    run(&cases, &dir.join("bench-out.log"), size);
}

/// `wc -l LOG`, then `profile` of it with `object`, the program named (`prog`) and not (`how`
/// it is found then).
fn counting(log: &dyn std::fmt::Display, object: &str, prog: &str, how: &str) -> [Case; 3] {
    let bpflog = env!("CARGO_BIN_EXE_bpflog");
    [
        Case {
            name: "wc -l LOG".into(),
            shell: format!("wc -l {log} > /dev/null"),
            baseline: None,
        },
        Case {
            name: "profile --prog".into(),
            shell: format!("{bpflog} profile {object} {log} --prog {prog} > /dev/null"),
            baseline: Some("wc"),
        },
        Case {
            name: format!("profile ({how})"),
            shell: format!("{bpflog} profile {object} {log} > /dev/null"),
            baseline: Some("wc"),
        },
    ]
}

/// Times the cases, in rounds, with output to `out`.
fn run(cases: &[Case], out: &Path, size: f64) {
    let mut times = vec![Vec::with_capacity(RUNS); cases.len()];
    for _ in 0..RUNS {
        for (case, times) in cases.iter().zip(&mut times) {
            times.push(time(&case.shell, out).as_secs_f64());
        }
    }
    println!(
        "{:<48} {:>9} {:>8} {:>10} {:>18}",
        "command", "seconds", "(median)", "MiB/s", "vs baseline"
    );
    let mut baselines: Vec<(&str, f64)> = Vec::new();
    for (case, times) in cases.iter().zip(&mut times) {
        times.sort_by(f64::total_cmp);
        let (t, median) = (times[0], times[times.len() / 2]);
        let ratio = case
            .baseline
            .and_then(|b| baselines.iter().find(|(name, _)| *name == b))
            .map_or(String::new(), |(name, base)| {
                format!("{:.2}x {name}", t / base)
            });
        println!(
            "{:<48} {t:>9.3} {:>8} {:>10.0} {ratio:>18}",
            case.name,
            format!("({median:.3})"),
            size / t
        );
        if case.baseline.is_none() {
            let word = case.name.split_whitespace().next().unwrap_or("");
            baselines.push((word, t));
        }
    }
}

/// One target of `--targets`: a command, the baseline it is paired with, and the most its time
/// may be as a multiple of the baseline's.
struct Target {
    name: &'static str,
    shell: String,
    baseline: String,
    most: f64,
}

/// `--targets`: each target paired with its baseline (`cat LOG > OUT`, or `wc -l LOG`), the two
/// run one after the other in each round, in alternating order, `BPFLOG_BENCH_PAIRS` rounds (7
/// by default); the median of the rounds' ratios is the figure, beside the target. The log is
/// `branchy.o`'s level-2 log repeated to `mb` MiB without the kernel's `;` lines (86 MiB by
/// default: 90 MB). Then each command's peak RSS, with `/usr/bin/time` where there is one.
fn paired_targets(dir: &Path, mb: u64) {
    let pairs: usize = std::env::var("BPFLOG_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let bpflog = env!("CARGO_BIN_EXE_bpflog");
    let (_, log) = generate(dir, "branchy.xdp_branchy.l2.log", mb);
    let out = dir.join("bench-out.log");
    let (log, outp) = (log.display(), out.display());
    let branchy = fixtures().join("obj/branchy.o");
    let annotate = format!(
        "{bpflog} annotate {} {log} --prog xdp_branchy",
        branchy.display()
    );
    let report = format!(
        "{bpflog} report {} {log} --prog xdp_branchy -o {outp}",
        branchy.display()
    );
    let cat = format!("cat {log} > {outp}");
    let wc = format!("wc -l {log} > {outp}");
    let targets = [
        Target {
            name: "annotate --prog",
            shell: format!("{annotate} > {outp}"),
            baseline: cat.clone(),
            most: 1.2,
        },
        Target {
            name: "annotate --style rich --prog",
            shell: format!("{annotate} --style rich > {outp}"),
            baseline: cat.clone(),
            most: 1.3,
        },
        Target {
            name: "annotate --format json --prog",
            shell: format!("{annotate} --format json > {outp}"),
            baseline: cat.clone(),
            most: 2.0,
        },
        Target {
            name: "report --prog -o OUT",
            shell: report.clone(),
            baseline: cat.clone(),
            most: 3.0,
        },
        Target {
            name: "profile (the only program)",
            shell: format!("{bpflog} profile {} {log} > {outp}", branchy.display()),
            baseline: wc.clone(),
            most: 1.5,
        },
    ];
    let size = std::fs::metadata(log.to_string()).map_or(0, |m| m.len());
    println!(
        "{log}: {:.1} MB; median of {pairs} paired rounds (baseline and command in turn)",
        size as f64 / 1e6
    );
    println!(
        "{:<32} {:>10} {:>14} {:>9} {:>10} {:>7}",
        "command", "baseline", "ratio (range)", "seconds", "target", "peak"
    );
    for t in &targets {
        let mut ratios = Vec::with_capacity(pairs);
        let mut seconds = Vec::with_capacity(pairs);
        for round in 0..pairs {
            // Which runs first alternates: a slow spell falls on both alike.
            let (base, it) = if round % 2 == 0 {
                let base = time(&t.baseline, &out);
                (base, time(&t.shell, &out))
            } else {
                let it = time(&t.shell, &out);
                (time(&t.baseline, &out), it)
            };
            ratios.push(it.as_secs_f64() / base.as_secs_f64());
            seconds.push(it.as_secs_f64());
        }
        ratios.sort_by(f64::total_cmp);
        seconds.sort_by(f64::total_cmp);
        let median = ratios[pairs / 2];
        let baseline = if t.baseline.starts_with("wc") {
            "wc -l"
        } else {
            "cat"
        };
        println!(
            "{:<32} {baseline:>10} {:>14} {:>9.3} {:>10} {:>7}",
            t.name,
            format!("{median:.2}x ({:.2}-{:.2})", ratios[0], ratios[pairs - 1]),
            seconds[pairs / 2],
            format!(
                "<= {:.1}x{}",
                t.most,
                if median <= t.most { "" } else { " !" }
            ),
            peak_rss(&t.shell).unwrap_or_else(|| "?".into()),
        );
    }
    floors(&log.to_string(), &out, &annotate, &report, pairs);
    let _ = std::fs::remove_file(&out);
}

/// Lower bounds of three targets, each paired with `cat` as the targets are: work the command
/// cannot do without, done in this process with nothing else (no process to start, the log
/// neither read nor decoded), so the true cost is higher.
///
/// - The log read and written: the log read in 1 MiB blocks on one thread and each written to
///   the output file on another, as `annotate`'s reading and writing threads do, no line looked
///   at.
/// - JSON's bytes written: `--format json`'s own output (made once, held in memory) written to
///   the output file in one call, as its writing thread writes it.
/// - The report's compressing: the rows of the report's own page (its pieces inflated back into
///   the JSON it deflated, made once and held in memory), deflated again at the report's level
///   (2, zlib-rs) on two threads, each with one encoder reset after each piece, as its
///   compressing threads do (without the base64 after).
fn floors(log: &str, out: &Path, annotate: &str, report: &str, pairs: usize) {
    use flate2::{Compression, write::DeflateEncoder};
    use std::io::Write;
    use std::time::Instant;
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!("{annotate} --format json"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run");
    assert!(made.status.success(), "--format json failed");
    let json = made.stdout;
    let rows = page_rows(report, out);
    let row_bytes: usize = rows.iter().map(Vec::len).sum();
    let log_bytes = std::fs::metadata(log).map_or(0, |m| m.len());
    println!(
        "the report's rows: {:.1} MB in {} pieces, {:.2} times the log's bytes",
        row_bytes as f64 / 1e6,
        rows.len(),
        row_bytes as f64 / log_bytes.max(1) as f64
    );
    let write = || {
        let _ = std::fs::remove_file(out);
        let _ = Command::new("sync").status();
        let start = Instant::now();
        let mut file = std::fs::File::create(out).expect("the output");
        file.write_all(&json).expect("written");
        drop(file);
        start.elapsed()
    };
    // The log read in 1 MiB blocks on one thread and each written out on another, as
    // `annotate`'s reading and writing threads do (the lines it adds aside), no line looked at.
    let copy = || {
        use std::io::Read;
        let _ = std::fs::remove_file(out);
        let _ = Command::new("sync").status();
        let start = Instant::now();
        let mut input = std::fs::File::open(log).expect("the log");
        let mut file = std::fs::File::create(out).expect("the output");
        // Four blocks go round, as the reading thread's do.
        let (full, blocks) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(4);
        let (empty, free) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        for _ in 0..4 {
            empty.send(vec![0; 1 << 20]).expect("sent");
        }
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for mut block in free {
                    let n = input.read(&mut block).expect("read");
                    if n == 0 || full.send((block, n)).is_err() {
                        break;
                    }
                }
            });
            for (block, n) in blocks {
                file.write_all(&block[..n]).expect("written");
                let _ = empty.send(block);
            }
        });
        drop(file);
        start.elapsed()
    };
    let compress = || {
        let start = Instant::now();
        let compressed: usize = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..2)
                .map(|t| {
                    let rows = &rows;
                    scope.spawn(move || {
                        // One encoder a thread, reset after each piece, as the report's are.
                        let mut e = DeflateEncoder::new(Vec::new(), Compression::new(2));
                        let mine = rows.iter().skip(t).step_by(2);
                        mine.map(|piece| {
                            e.write_all(piece).expect("deflated");
                            e.reset(Vec::new()).expect("deflated").len()
                        })
                        .sum::<usize>()
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("joined")).sum()
        });
        assert!(compressed > 0);
        start.elapsed()
    };
    let cat = format!("cat {log} > {}", out.display());
    let floors: [(&str, &dyn Fn() -> std::time::Duration); 3] = [
        ("floor: the log read and written", &copy),
        ("floor: JSON's bytes written", &write),
        ("floor: the report's compressing", &compress),
    ];
    for (name, floor) in floors {
        let mut ratios: Vec<f64> = (0..pairs)
            .map(|round| {
                let (base, it) = if round % 2 == 0 {
                    let base = time(&cat, out);
                    (base, floor())
                } else {
                    let it = floor();
                    (time(&cat, out), it)
                };
                it.as_secs_f64() / base.as_secs_f64()
            })
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "{name:<32} {:>10} {:>14}",
            "cat",
            format!(
                "{:.2}x ({:.2}-{:.2})",
                ratios[pairs / 2],
                ratios[0],
                ratios[pairs - 1]
            ),
        );
    }
}

/// The rows the page of `report` (a shell command writing the page to `out`) compresses: each
/// of its pieces, inflated back into the JSON the report deflated.
fn page_rows(report: &str, out: &Path) -> Vec<Vec<u8>> {
    time(report, out);
    let page = std::fs::read_to_string(out).expect("the page");
    let rows: Vec<Vec<u8>> = (page::piece_texts(&page).into_iter())
        .map(|(_, _, json)| json.into_bytes())
        .collect();
    assert!(!rows.is_empty(), "no pieces in the page");
    rows
}

/// The peak resident memory of one run of `shell`, as `/usr/bin/time` reports it (`None`
/// without it).
fn peak_rss(shell: &str) -> Option<String> {
    let run = Command::new("/usr/bin/time")
        .args(["-f", "%M", "sh", "-c", shell])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let kib: u64 = String::from_utf8_lossy(&run.stderr)
        .lines()
        .last()?
        .trim()
        .parse()
        .ok()?;
    Some(format!("{:.1}M", kib as f64 / 1024.0))
}
