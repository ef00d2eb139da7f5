//! The bindings' cost beside the Rust API's: annotating a 90 MB level-2 log through the C ABI
//! (`libbpflog.a`, `benches/bindings/annotate.c`) and through the Python package
//! (`benches/bindings/annotate.py`), each paired with the Rust API doing the same job.
//!
//! `cargo bench --bench bindings`. Each side is a process of its own that reads the log whole into
//! memory, as a loader holds its log buffer, annotates it in kernel style for the named program
//! and streams the output into a file, then, asked (`BPFLOG_BENCH_PEAK`), prints its peak memory. The Rust side is this
//! binary run again (`--rust`): [`bpflog::annotate`] writing through a `BufWriter`. The C side is
//! built here with the system's `cc` against the release build of `crates/capi`. The Python side
//! runs when `BPFLOG_BENCH_PYTHON` names an interpreter that can `import bpflog` (`pip install
//! ./crates/python`). The log is `branchy.o`'s level-2 log without its `;` lines, repeated to
//! `BPFLOG_BENCH_MB` MiB (86: 90 MB); `BPFLOG_BENCH_PAIRS` rounds (7), the binding and the Rust
//! side one after the other in each, in alternating order; the figure is the median of the
//! rounds' ratios. The outputs are compared once: the bindings must write the Rust side's bytes.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use bpflog::object::BpfObject;
use bpflog::{AnnotateOptions, Input, LogData, Palette, Program, Style};

mod common;

use common::{fixtures, generate, time};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, obj, prog, log, out] = &args[..]
        && flag == "--rust"
    {
        rust_side(obj, prog, log, out);
        return;
    }
    // `cargo bench` passes `--bench`; a filter that is not ours means another bench was asked for.
    if args
        .iter()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"bindings".contains(a.as_str()))
    {
        return;
    }
    compare();
}

/// The Rust API's side: the log read whole, annotated as the C ABI does (kernel style, no
/// color), written through a `BufWriter` into `out`.
fn rust_side(obj: &str, prog: &str, log: &str, out: &str) {
    let data = std::fs::read(obj).expect("the object");
    let object = BpfObject::parse(&data).expect("an object");
    let program =
        Program::new(&object, object.program(prog).expect("the program")).expect("a layout");
    let log = std::fs::read(log).expect("the log");
    let mut out = BufWriter::new(std::fs::File::create(out).expect("the output"));
    let options = AnnotateOptions::default()
        .style(Style::Kernel)
        .palette(Palette::new(false));
    let input = Input::of(&program, LogData::Stream(&log[..]));
    bpflog::annotate(input, &mut out, &options, |_, _| Ok(())).expect("annotated");
    out.flush().expect("written");
    drop(out);
    if std::env::var_os("BPFLOG_BENCH_PEAK").is_some()
        && let Some(kib) = peak_kib()
    {
        eprintln!("peak_kib {kib}");
    }
}

/// This process's peak resident memory, in KiB (`VmHWM`).
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A side of the comparison: its name and the shell line that runs it, writing `out`.
struct Side {
    name: &'static str,
    shell: String,
}

fn compare() {
    let pairs: usize = std::env::var("BPFLOG_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let mb: u64 = std::env::var("BPFLOG_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(86);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let (_, log) = generate(&dir, "branchy.xdp_branchy.l2.log", mb);
    let obj = fixtures().join("obj/branchy.o");
    let prog = "xdp_branchy";
    let me = std::env::current_exe().expect("this bench's path");
    let out = dir.join("bench-bindings-out.log");
    let words = |out: &Path| {
        format!(
            "{} {prog} {} {}",
            obj.display(),
            log.display(),
            out.display()
        )
    };

    let rust = |out: &Path| format!("{} --rust {}", me.display(), words(out));
    let mut sides = vec![Side {
        name: "C ABI",
        shell: format!("{} {}", c_side(&dir).display(), words(&out)),
    }];
    match std::env::var("BPFLOG_BENCH_PYTHON") {
        Ok(python) => sides.push(Side {
            name: "Python",
            shell: format!(
                "{python} {}/benches/bindings/annotate.py {}",
                env!("CARGO_MANIFEST_DIR"),
                words(&out)
            ),
        }),
        Err(_) => println!("(Python left out: BPFLOG_BENCH_PYTHON names no interpreter)"),
    }

    // The same bytes from every side, and each side's peak memory.
    let expected = dir.join("bench-bindings-rust.log");
    let rust_peak = peak_of(&rust(&expected));
    let expected = std::fs::read(&expected).expect("the Rust side's output");
    let size = std::fs::metadata(&log).map_or(0, |m| m.len());
    println!(
        "{}: {:.1} MB; median of {pairs} paired rounds (Rust API and binding in turn)",
        log.display(),
        size as f64 / 1e6
    );
    println!(
        "{:<8} {:>16} {:>9} {:>9} {:>10}",
        "binding", "ratio (range)", "seconds", "Rust s", "peak"
    );
    println!(
        "{:<8} {:>16} {:>9} {:>9} {:>7} MB",
        "Rust",
        "-",
        "-",
        "-",
        rust_peak.map_or("?".into(), |k| format!("{:.1}", k as f64 / 1024.0))
    );
    for side in &sides {
        let peak = peak_of(&side.shell);
        assert!(
            std::fs::read(&out).expect("the binding's output") == expected,
            "{}: not the Rust API's output",
            side.name
        );
        let (mut ratios, mut secs, mut base) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..pairs {
            // Which runs first alternates: a slow spell falls on both alike.
            let (r, b) = if round % 2 == 0 {
                let r = time(&rust(&out), &out);
                (r, time(&side.shell, &out))
            } else {
                let b = time(&side.shell, &out);
                (time(&rust(&out), &out), b)
            };
            ratios.push(b.as_secs_f64() / r.as_secs_f64());
            secs.push(b.as_secs_f64());
            base.push(r.as_secs_f64());
        }
        for v in [&mut ratios, &mut secs, &mut base] {
            v.sort_by(f64::total_cmp);
        }
        let mid = pairs / 2;
        println!(
            "{:<8} {:>16} {:>9.3} {:>9.3} {:>7} MB",
            side.name,
            format!(
                "{:.2}x ({:.2}-{:.2})",
                ratios[mid],
                ratios[0],
                ratios[pairs - 1]
            ),
            secs[mid],
            base[mid],
            peak.map_or("?".into(), |k| format!("{:.1}", k as f64 / 1024.0))
        );
    }
    let _ = std::fs::remove_file(&out);
}

/// Runs `shell` once and reads the peak memory it printed (`peak_kib N` on stderr, asked by
/// `BPFLOG_BENCH_PEAK`).
fn peak_of(shell: &str) -> Option<u64> {
    let run = Command::new("sh")
        .arg("-c")
        .arg(shell)
        .env("BPFLOG_BENCH_PEAK", "1")
        .output()
        .expect("run");
    assert!(
        run.status.success(),
        "failed: {shell}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stderr)
        .lines()
        .find_map(|l| l.strip_prefix("peak_kib ")?.trim().parse().ok())
}

/// `benches/bindings/annotate.c` built with `cc` against the release build's `libbpflog.a`.
fn c_side(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = dir.parent().expect("the target directory");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "bpflog-capi", "--target-dir"])
        .arg(target)
        .arg("--manifest-path")
        .arg(root.join("Cargo.toml"))
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "cargo build --release -p bpflog-capi failed"
    );
    let exe = dir.join("bench-bindings-c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(root.join("benches/bindings/annotate.c"))
        .arg("-I")
        .arg(root.join("crates/capi/include"))
        .arg(target.join("release/libbpflog.a"))
        .args(["-lpthread", "-ldl", "-lm"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "{cc} failed to build annotate.c");
    exe
}
