//! Every input is read in bounded memory, through the binary: objects (`/dev/zero`, a sparse
//! file claiming 10 GB), `verify --compare`'s CSV tables (`/dev/zero`, a huge quoted field, too
//! many rows), source files of line ends, and `explain` over many logs. Each run's peak memory
//! is measured (`wait4`'s `ru_maxrss`) under an address-space cap that keeps an unbounded read
//! from taking the machine.

mod common;

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_bpflog");

/// The address space a run may take: far above what a bounded run needs, far below the machine.
const ADDRESS_SPACE: u64 = 4 << 30;

/// How a run of the binary ended.
struct Run {
    /// The exit status (`None`: killed by a signal, the signal's number in `signal`).
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
    stdout_bytes: u64,
    /// Peak resident memory, in bytes.
    peak: u64,
}

/// Waits for `child` (never waited for before): its wait status and resource usage.
#[allow(unsafe_code)]
fn wait(child: std::process::Child) -> (i32, libc::rusage) {
    let pid = i32::try_from(child.id()).unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value (integers and timevals); wait4 fills it. The
    // child is ours and was not reaped (`Child::wait` is never called on it).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "{}", std::io::Error::last_os_error());
    (status, usage)
}

/// Runs the binary with `args` in `dir`, `env` set, standard output counted, and measures its
/// peak memory.
fn run(dir: &Path, env: &[(&str, &str)], args: &[&OsStr]) -> Run {
    // The cap set by the shell, which then becomes the binary (same process, measured below).
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "ulimit -v {} && exec \"$0\" \"$@\"",
            ADDRESS_SPACE >> 10
        ))
        .arg(BIN)
        .current_dir(dir)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let counting = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let stdout_bytes = counting.join().unwrap().unwrap();
    let (status, usage) = wait(child);
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    Run {
        code,
        signal,
        stderr,
        stdout_bytes,
        // Linux gives KiB.
        peak: u64::try_from(usage.ru_maxrss).unwrap() << 10,
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

const MIB: u64 = 1 << 20;

/// The rejected program with a subprogram, and its level-1 and level-2 logs.
fn object() -> PathBuf {
    common::fixtures().join("obj/reject_subprog.o")
}

fn log(level: u32) -> PathBuf {
    common::fixtures().join(format!(
        "logs/reject_subprog.xdp_reject_subprog.l{level}.log"
    ))
}

/// A fresh directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("memory")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_object_that_never_ends_is_refused_at_its_bound() {
    let dir = scratch("object_zero");
    let log = log(2);
    for command in ["annotate", "explain", "profile", "report"] {
        let mut args = vec![os(command), os("/dev/zero"), log.as_os_str()];
        if command == "report" {
            args.extend([os("-o"), os("out.html")]);
        }
        let r = run(&dir, &[("BPFLOG_OBJECT_MAX", "16M")], &args);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (
                Some(1),
                "bpflog: error: /dev/zero: larger than 16 MiB, the most read of an object \
                 (BPFLOG_OBJECT_MAX sets another bound)\n"
            ),
            "{command}"
        );
        assert!(r.peak < 64 * MIB, "{command}: {} MiB", r.peak / MIB);
    }
    // The default bound, 256 MiB.
    let r = run(&dir, &[], &[os("lines"), os("/dev/zero")]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("larger than 256 MiB"), "{}", r.stderr);
    assert!(r.peak < 320 * MIB, "{} MiB", r.peak / MIB);
}

#[test]
fn an_object_whose_size_is_past_the_bound_is_refused_before_it_is_read() {
    let dir = scratch("object_sparse");
    // A real object, then holes up to 10 GB: no disk, and its size says it all.
    std::fs::copy(object(), dir.join("x.o")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("x.o"))
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    let log = log(2);
    for command in ["annotate", "lines"] {
        let mut args = vec![os(command), os("x.o")];
        if command == "annotate" {
            args.push(log.as_os_str());
        }
        let r = run(&dir, &[], &args);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (
                Some(1),
                "bpflog: error: x.o: larger than 256 MiB, the most read of an object \
                 (BPFLOG_OBJECT_MAX sets another bound)\n"
            ),
            "{command}"
        );
        assert!(r.peak < 32 * MIB, "{command}: {} MiB", r.peak / MIB);
    }
    // Raised, the bound lets the object through (its holes make it no object, said as such).
    let r = run(
        &dir,
        &[("BPFLOG_OBJECT_MAX", "11G")],
        &[os("lines"), os("x.o")],
    );
    assert!(!r.stderr.contains("the most read"), "{}", r.stderr);
    let r = run(
        &dir,
        &[("BPFLOG_OBJECT_MAX", "lots")],
        &[os("lines"), os("x.o")],
    );
    assert_eq!(
        r.stderr,
        "bpflog: error: BPFLOG_OBJECT_MAX: expected a size in bytes, or followed by K, M or G, \
         got 'lots'\n"
    );
}

/// Writes `head`, `piece` `times` times, then `tail` to `path`, a piece at a time: the test
/// itself stays small (a child's peak memory counts its parent's at the start).
fn write_repeated(path: &Path, head: &[u8], piece: &[u8], times: usize, tail: &[u8]) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    out.write_all(head).unwrap();
    for _ in 0..times {
        out.write_all(piece).unwrap();
    }
    out.write_all(tail).unwrap();
    out.flush().unwrap();
}

/// The fixture's veristat table: its header line, and its first row cut after the file name
/// (`FILE,`) and after the program name (`,success,...`).
fn veristat() -> (String, String, String) {
    let table = std::fs::read_to_string(common::fixtures().join("verify/veristat.csv")).unwrap();
    let mut lines = table.lines();
    let header = format!("{}\n", lines.next().unwrap());
    let row = lines.next().unwrap();
    let (file, rest) = row.split_once(',').unwrap();
    let (_, rest) = rest.split_once(',').unwrap();
    (header, format!("{file},"), format!(",{rest}\n"))
}

fn compare(dir: &Path, env: &[(&str, &str)], base: &str) -> Run {
    let new = common::fixtures().join("verify/veristat.csv");
    run(
        dir,
        env,
        &[os("verify"), os("--compare"), os(base), new.as_os_str()],
    )
}

#[test]
fn a_csv_table_that_never_ends_is_one_line_of_error() {
    let dir = scratch("csv_zero");
    let r = compare(&dir, &[], "/dev/zero");
    assert_eq!(r.signal, None);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            "bpflog: error: /dev/zero: line 1: larger than 64 KiB, the most read of a CSV \
             table's row\n"
        )
    );
    assert!(r.peak < 32 * MIB, "{} MiB", r.peak / MIB);
}

#[test]
fn a_huge_quoted_field_is_refused_in_bounded_memory() {
    let dir = scratch("csv_field");
    // A program name of 64 MiB, quoted line ends and all, in the fixture's table.
    let (header, file, rest) = veristat();
    let head = format!("{header}{file}\"");
    let tail = format!("\"{rest}");
    let piece = "x\n".repeat(1 << 10);
    let path = dir.join("huge.csv");
    write_repeated(
        &path,
        head.as_bytes(),
        piece.as_bytes(),
        32 << 10,
        tail.as_bytes(),
    );
    let r = compare(&dir, &[("BPFLOG_CSV_MAX", "1G")], "huge.csv");
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            "bpflog: error: huge.csv: line 2: larger than 64 KiB, the most read of a CSV \
             table's row\n"
        )
    );
    assert!(r.peak < 32 * MIB, "{} MiB", r.peak / MIB);
    // The table's own bound is told first, from its size.
    let r = compare(&dir, &[], "huge.csv");
    assert_eq!(
        r.stderr,
        "bpflog: error: huge.csv: larger than 16 MiB, the most read of a CSV table \
         (BPFLOG_CSV_MAX sets another bound)\n"
    );
    assert!(r.peak < 32 * MIB, "{} MiB", r.peak / MIB);
}

#[test]
fn a_csv_table_holds_at_most_its_rows() {
    let dir = scratch("csv_rows");
    let (header, file, rest) = veristat();
    let rows = |n: usize| -> String {
        let mut text = header.clone();
        for k in 0..n {
            text.push_str(&format!("{file}p{k}{rest}"));
        }
        text
    };
    std::fs::write(dir.join("1000.csv"), rows(1000)).unwrap();
    std::fs::write(dir.join("1001.csv"), rows(1001)).unwrap();
    let env = [("BPFLOG_CSV_ROWS", "1000")];
    let r = compare(&dir, &env, "1000.csv");
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout_bytes > 0);
    let r = compare(&dir, &env, "1001.csv");
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            "bpflog: error: 1001.csv: more than 1000 rows, the most read of a CSV table \
             (BPFLOG_CSV_ROWS sets another bound)\n"
        )
    );
}

#[test]
fn a_source_file_of_line_ends_is_refused_before_its_index_is_built() {
    let dir = scratch("source_lines");
    std::fs::copy(object(), dir.join("reject_subprog.o")).unwrap();
    // 63 MiB of line ends: under the bound of a file (64 MiB), but its line index would take
    // 504 MiB, past the bound of all (256 MiB).
    let path = dir.join("reject_subprog.c");
    write_repeated(&path, b"", &[b'\n'; 1 << 20], 63, b"");
    let log = log(2);
    let r = run(
        &dir,
        &[],
        &[
            os("annotate"),
            os("--style"),
            os("rich"),
            os("reject_subprog.o"),
            log.as_os_str(),
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "not reading reject_subprog.c (named by reject_subprog.o's debug info): the source \
             files read would hold more than 256 MiB"
        ),
        "{}",
        r.stderr
    );
    // The file's bytes are read (63 MiB), not its index.
    assert!(r.peak < 128 * MIB, "{} MiB", r.peak / MIB);
}

#[test]
fn explain_holds_one_explanation_at_a_time() {
    let dir = scratch("explain_many");
    // 20,000 rejected logs (72 MB): each explanation written as its log ends, none kept. Output
    // to a pipe is held back up to 16 MiB (a misfit found by then leaves nothing written).
    let log = std::fs::read(log(1)).unwrap();
    let path = dir.join("many.log");
    write_repeated(&path, b"", &log, 20_000, b"");
    let object = object();
    for format in ["text", "sarif"] {
        let r = run(
            &dir,
            &[],
            &[
                os("explain"),
                os("--format"),
                os(format),
                object.as_os_str(),
                path.as_os_str(),
            ],
        );
        assert_eq!(r.code, Some(0), "{format}: {}", r.stderr);
        assert!(
            r.stdout_bytes > 20_000 * 1000,
            "{format}: {}",
            r.stdout_bytes
        );
        assert!(r.peak < 48 * MIB, "{format}: {} MiB", r.peak / MIB);
    }
}

#[test]
fn explain_writes_nothing_when_a_later_log_does_not_fit() {
    let dir = scratch("explain_misfit");
    // A rejected log of the object, then another object's: refused, its explanation unwritten.
    let mut logs = std::fs::read(log(1)).unwrap();
    logs.extend(
        std::fs::read(common::fixtures().join("logs/reject_entry.xdp_reject_entry.l2.log"))
            .unwrap(),
    );
    std::fs::write(dir.join("two.log"), logs).unwrap();
    let object = object();
    for format in ["text", "sarif"] {
        let r = run(
            &dir,
            &[],
            &[
                os("explain"),
                os("--format"),
                os(format),
                object.as_os_str(),
                os("two.log"),
            ],
        );
        assert_eq!(r.code, Some(1), "{format}: {}", r.stderr);
        assert!(
            r.stderr
                .ends_with("(is the log from another object? --prog explains it anyway)\n"),
            "{format}: {}",
            r.stderr
        );
        assert_eq!(r.stdout_bytes, 0, "{format}");
    }
    // Of an object of several programs, SARIF's document is not begun for a log of none.
    let several = common::fixtures().join("obj/two_in_one.o");
    let log = log(1);
    let args = [
        os("explain"),
        os("--format"),
        os("sarif"),
        several.as_os_str(),
    ];
    let r = run(&dir, &[], &[&args[..], &[log.as_os_str()]].concat());
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_eq!(r.stdout_bytes, 0);
}
