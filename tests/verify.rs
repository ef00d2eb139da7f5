//! `bpflog verify`: programs loaded into the running kernel through libbpf.
//!
//! With the `load` feature, and where the kernel lets this process load BPF programs (root, or
//! CAP_BPF), every fixture program is verified at log levels 1 and 2 and the kernel's log, as
//! captured, is compared byte for byte with bpflog's kernel-style annotation of the same log with
//! its `;` lines removed; `strace` counts the loads (one per program); the table of every fixture
//! program is the same whatever `--jobs`, and its counters are the kernel's. Where loading is not
//! allowed the live tests say so and pass.

mod common;

use std::process::{Command, Output};

fn bpflog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(not(feature = "load"))]
#[test]
fn without_the_load_feature_verify_says_how_to_get_it() {
    let obj = common::fixtures().join("obj/branchy.o");
    let out = bpflog(&["verify", obj.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--features load"),
        "{}",
        text(&out.stderr)
    );
}

/// `verify --compare` of two CSV tables as `veristat -C` would show them; no kernel involved.
/// `tests/fixtures/verify/make.sh` wrote the tables: veristat 0.5.1's and bpflog's of the fixture
/// objects, and bpflog's with one program grown and one newly rejected.
mod compare {
    use super::{bpflog, text};
    use crate::common::fixtures;

    fn table(name: &str) -> String {
        fixtures()
            .join("verify")
            .join(name)
            .to_string_lossy()
            .into_owned()
    }

    /// The CSV rows of `verify --compare ... -o csv`, by column name.
    fn rows(stdout: &[u8]) -> Vec<std::collections::HashMap<String, String>> {
        let out = text(stdout);
        let mut lines = out.lines();
        let names: Vec<&str> = lines.next().unwrap().split(',').collect();
        lines
            .map(|l| {
                names
                    .iter()
                    .map(|n| n.to_string())
                    .zip(l.split(',').map(str::to_owned))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn bpflog_and_veristat_agree_on_the_fixtures() {
        let (v, b) = (table("veristat.csv"), table("bpflog.csv"));
        let out = bpflog(&["verify", "--compare", &v, &b, "--fail-on", "0", "-o", "csv"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rows = rows(&out.stdout);
        assert_eq!(rows.len(), 28);
        for row in rows {
            assert_eq!(row["verdict_diff"], "MATCH", "{row:?}");
            assert_eq!(row["total_insns_diff"], "+0", "{row:?}");
            assert_eq!(row["total_states_diff"], "+0", "{row:?}");
            assert_eq!(row["peak_states_diff"], "+0", "{row:?}");
        }
    }

    #[test]
    fn a_grown_program_first_and_a_failing_status() {
        let (b, g) = (table("bpflog.csv"), table("grown.csv"));
        let out = bpflog(&[
            "verify",
            "--compare",
            &b,
            &g,
            "--fail-on",
            "10",
            "-o",
            "csv",
        ]);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        let rows = rows(&out.stdout);
        assert_eq!(rows[0]["prog_name"], "xdp_branchy");
        assert_eq!(rows[0]["total_insns_base"], "418");
        assert_eq!(rows[0]["total_insns_comp"], "836");
        assert_eq!(rows[0]["total_insns_diff"], "+418");
        assert_eq!(rows[0]["total_insns_pct"], "+100.00%");
        assert_eq!(rows[0]["total_states_diff"], "+23");
        let first = rows.iter().find(|r| r["prog_name"] == "xdp_first").unwrap();
        assert_eq!(first["verdict_diff"], "MISMATCH");
        let err = text(&out.stderr);
        assert!(err.contains("2 program(s) got worse beyond 10%"), "{err}");
        assert!(err.contains("branchy.o/xdp_branchy"), "{err}");
        assert!(err.contains("two_in_one.o/xdp_first"), "{err}");
        // Doubling is within 150%; the rejection is not.
        let out = bpflog(&["verify", "--compare", &b, &g, "--fail-on", "150"]);
        assert_eq!(out.status.code(), Some(3));
        assert!(
            text(&out.stderr).contains("1 program(s)"),
            "{}",
            text(&out.stderr)
        );
        // The other way round, fewer instructions and a program accepted again: no failure.
        let out = bpflog(&["verify", "--compare", &g, &b, "--fail-on", "10"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let table = text(&out.stdout);
        assert!(table.starts_with("File "), "{table}");
        assert!(
            table.lines().nth(2).unwrap().starts_with("branchy.o "),
            "{table}"
        );
        // --top: the largest changes only.
        let out = bpflog(&["verify", "--compare", &b, &g, "-o", "csv", "--top", "1"]);
        let top = self::rows(&out.stdout);
        assert_eq!(top.len(), 1);
        assert_eq!(top[0]["prog_name"], "xdp_branchy");
        // Without --fail-on nothing fails.
        let out = bpflog(&["verify", "--compare", &b, &g]);
        assert_eq!(out.status.code(), Some(0));
    }

    #[test]
    fn what_is_no_table_is_said_in_one_line() {
        let b = table("bpflog.csv");
        let log = fixtures().join("logs/branchy.xdp_branchy.l1.log");
        let out = bpflog(&["verify", "--compare", log.to_str().unwrap(), &b]);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(err.contains("branchy.xdp_branchy.l1.log: "), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let bad = std::env::temp_dir().join(format!("bpflog-compare-{}.csv", std::process::id()));
        let csv = std::fs::read_to_string(&b).unwrap();
        std::fs::write(&bad, csv.replacen(",418,", ",4l8,", 1)).unwrap();
        let out = bpflog(&["verify", "--compare", &b, bad.to_str().unwrap()]);
        let _ = std::fs::remove_file(&bad);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(
            err.contains("line 2: total_insns '4l8' is not a count"),
            "{err}"
        );
    }
}

/// The live tests: the kernel loads the fixture programs.
#[cfg(feature = "load")]
mod live {
    use super::{bpflog, text};
    use crate::common::{fixtures, strip_annotations};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// Whether this process may load BPF programs: CAP_BPF or CAP_SYS_ADMIN in its effective set.
    fn privileged() -> bool {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                let caps = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
                u64::from_str_radix(caps.trim(), 16).ok()
            })
            .is_some_and(|caps| caps & (1 << 39) != 0 || caps & (1 << 21) != 0)
    }

    /// Whether live loading works here; says why not when it does not.
    fn can_load() -> bool {
        if !privileged() {
            eprintln!("skipping live verify: this process has neither CAP_BPF nor CAP_SYS_ADMIN");
            return false;
        }
        let obj = fixtures().join("obj/branchy.o");
        let out = bpflog(&["verify", "--raw", obj.to_str().unwrap()]);
        if out.status.code() != Some(0) {
            eprintln!(
                "skipping live verify: the kernel does not load a known-good program here: {}",
                text(&out.stderr)
            );
            return false;
        }
        true
    }

    /// Every program of every fixture object (the big-endian one aside), with its object.
    fn fixture_programs() -> Vec<(PathBuf, String)> {
        let mut objects: Vec<PathBuf> = std::fs::read_dir(fixtures().join("obj"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "o"))
            .filter(|p| !p.to_string_lossy().ends_with(".bpfeb.o"))
            .collect();
        objects.sort();
        let mut programs = Vec::new();
        for path in objects {
            let data = std::fs::read(&path).unwrap();
            let object = bpflog::object::BpfObject::parse(&data).unwrap();
            for id in object.programs() {
                programs.push((path.clone(), object.function(id).name.clone()));
            }
        }
        programs
    }

    /// The kernel's log of `prog`, as libbpf captured it, and whether the kernel accepted it.
    fn kernel_log(obj: &Path, prog: &str, level: u32) -> (Vec<u8>, bool) {
        let level = level.to_string();
        let out = bpflog(&[
            "verify",
            "--raw",
            "--prog",
            prog,
            "--level",
            &level,
            obj.to_str().unwrap(),
        ]);
        let stderr = text(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "{prog}: {:?} {stderr}",
            out.status
        );
        // bpflog checked the log against its own libbpf layout of the program.
        assert!(!stderr.contains("warning"), "{prog}: {stderr}");
        (out.stdout, out.status.code() == Some(0))
    }

    #[test]
    fn live_logs_match_bpflogs_annotation_byte_for_byte() {
        if !can_load() {
            return;
        }
        let tmp = std::env::temp_dir().join(format!("bpflog-verify-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let (mut verified, mut exact, mut without_line_info) = (0, 0, 0);
        let mut failures = Vec::new();
        for (obj, prog) in fixture_programs() {
            for level in [1, 2] {
                let (log, accepted) = kernel_log(&obj, &prog, level);
                verified += 1;
                assert_eq!(
                    accepted,
                    !prog.contains("reject"),
                    "{prog} at level {level}"
                );
                assert!(!log.is_empty(), "{prog}: empty log");
                if obj.to_string_lossy().contains("nobtfext") {
                    // No .BTF.ext: libbpf passes no line info, the kernel prints no source lines.
                    assert!(!log.split(|&b| b == b'\n').any(|l| l.starts_with(b";")));
                    without_line_info += 1;
                    continue;
                }
                let stripped = tmp.join(format!("{prog}.l{level}.log"));
                std::fs::write(&stripped, strip_annotations(&log)).unwrap();
                let out = bpflog(&[
                    "annotate",
                    "--style",
                    "kernel",
                    "--color",
                    "never",
                    "--prog",
                    &prog,
                    obj.to_str().unwrap(),
                    stripped.to_str().unwrap(),
                ]);
                assert!(out.status.success(), "{prog}: {}", text(&out.stderr));
                if out.stdout == log {
                    exact += 1;
                } else {
                    failures.push(format!(
                        "{} {prog} level {level}",
                        obj.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
        eprintln!(
            "live verify: {verified} loads, {exact} byte-exact, {without_line_info} without line info"
        );
        assert!(failures.is_empty(), "not byte-exact: {failures:?}");
        assert!(exact > 0);
    }

    #[test]
    fn live_stats_and_rich_output() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("obj/loop_callback.o");
        let out = bpflog(&[
            "verify",
            "--stats",
            "--color",
            "never",
            "--prog",
            "loop_sum",
            obj.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let table = text(&out.stdout);
        assert!(table.contains("verdict              accepted"), "{table}");
        // Log level 4: the kernel's own statistics.
        assert!(table.contains("duration "), "{table}");
        assert!(table.contains("subprogram  sum_cb"), "{table}");

        let obj = fixtures().join("obj/reject_subprog.o");
        let src = fixtures().join("src");
        let out = bpflog(&[
            "verify",
            "--style",
            "rich",
            "--color",
            "never",
            "--source-dir",
            src.to_str().unwrap(),
            obj.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(3));
        let rich = text(&out.stdout);
        assert!(
            rich.contains("reject_subprog.c:54:15 in update_flow"),
            "{rich}"
        );
        assert!(rich.contains("  --> reject_subprog.c:54:12"), "{rich}");
        assert!(text(&out.stderr).contains("xdp_reject_subprog: rejected by the kernel"));
    }

    /// Every fixture object but the big-endian one (the kernel loads none of its programs).
    fn fixture_objects() -> Vec<String> {
        let mut objects: Vec<String> = fixture_programs()
            .into_iter()
            .map(|(obj, _)| obj.to_string_lossy().into_owned())
            .collect();
        objects.dedup();
        objects
    }

    /// How many times the kernel was asked to load each program name while `bpflog verify ARGS`
    /// ran, as `strace -e trace=bpf` saw it (the kernel keeps 15 bytes of a name).
    fn loads(args: &[&str]) -> Option<std::collections::BTreeMap<String, usize>> {
        // One file per call: the tests run on several threads of one process.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let trace =
            std::env::temp_dir().join(format!("bpflog-strace-{}-{call}", std::process::id()));
        let out = Command::new("strace")
            .args(["-f", "-e", "trace=bpf", "-s", "64", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .output();
        let Ok(out) = out else {
            eprintln!("skipping: no strace here (apt-get install strace)");
            return None;
        };
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "{:?} {}",
            out.status,
            text(&out.stderr)
        );
        let trace_text = std::fs::read_to_string(&trace).unwrap();
        let _ = std::fs::remove_file(&trace);
        let mut counts = std::collections::BTreeMap::new();
        for call in trace_text
            .lines()
            .filter(|l| l.contains("bpf(BPF_PROG_LOAD"))
        {
            let name = call
                .split_once("prog_name=\"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .map_or("", |(name, _)| name);
            *counts.entry(name.to_owned()).or_insert(0) += 1;
        }
        Some(counts)
    }

    /// The kernel verifies each program once: at the statistics level (`--summary`), with the
    /// annotated logs of the rejected ones (log level 1), at level 2, and on two threads.
    #[test]
    fn one_load_per_program() {
        if !can_load() {
            return;
        }
        let objects = fixture_objects();
        let mut expected = std::collections::BTreeMap::new();
        for (_, prog) in fixture_programs() {
            let name: String = prog.chars().take(15).collect();
            *expected.entry(name).or_insert(0) += 1;
        }
        let runs: [&[&str]; 4] = [
            &["--summary"],
            &["--jobs", "2"],
            &["--level", "2", "--jobs", "1"],
            &["--stats"],
        ];
        for run in runs {
            let mut args = vec!["verify", "--color", "never"];
            args.extend_from_slice(run);
            args.extend(objects.iter().map(String::as_str));
            let Some(counts) = loads(&args) else { return };
            // The rest are libbpf's probes of the kernel's features (each a program of its own).
            let ours: std::collections::BTreeMap<String, usize> = counts
                .into_iter()
                .filter(|(name, _)| expected.contains_key(name))
                .collect();
            assert_eq!(ours, expected, "verify {run:?}");
        }
    }

    /// A text log longer than libbpf's own 16 MiB buffer (long_log.c: 24 MB at level 2): the
    /// program is still verified once, and its whole log comes back.
    #[test]
    fn a_log_past_16_mib_costs_one_load() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("verify/long_log.o");
        let obj = obj.to_str().unwrap();
        for run in [&["--raw", "--level", "2"][..], &["--stats"]] {
            let mut args = vec!["verify", "--color", "never"];
            args.extend_from_slice(run);
            args.push(obj);
            let Some(counts) = loads(&args) else { return };
            assert_eq!(counts.get("xdp_long_log"), Some(&1), "{run:?}: {counts:?}");
        }
        let out = bpflog(&["verify", "--raw", "--level", "2", obj]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stdout.len() > 16 << 20, "{} bytes", out.stdout.len());
        let last = out
            .stdout
            .trim_ascii_end()
            .rsplit(|&b| b == b'\n')
            .next()
            .unwrap();
        assert!(last.starts_with(b"processed "), "{}", text(last));
    }

    /// Where the system maps no log buffer of the kernel's limit (here an address-space limit
    /// of 512 MiB, as strict overcommit or a small machine would refuse 1 GiB), the programs
    /// are verified all the same, into libbpf's own buffer, with the same table.
    #[test]
    fn no_room_for_the_largest_log_buffer() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("obj/branchy.o");
        let obj = obj.to_str().unwrap();
        let args = [
            "verify", "--color", "never", "-o", "csv", "--level", "1", obj,
        ];
        let free = bpflog(&args);
        assert_eq!(free.status.code(), Some(0), "{}", text(&free.stderr));
        let limited = Command::new("sh")
            .args(["-c", "ulimit -v 524288 && exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            limited.status.code(),
            Some(0),
            "{:?} {}",
            limited.status,
            text(&limited.stderr)
        );
        // The duration aside (the fourth column), the same row.
        let steady = |out: &[u8]| -> Vec<String> {
            text(out)
                .lines()
                .map(|l| {
                    let mut cells: Vec<&str> = l.split(',').collect();
                    cells.remove(3);
                    cells.join(",")
                })
                .collect()
        };
        assert_eq!(steady(&limited.stdout), steady(&free.stdout));
    }

    /// An object whose middle program the kernel rejects: libbpf stops there, and the last one
    /// is loaded again on its own; every program is still verified once, and the first one's
    /// machine code was measured while it was loaded.
    #[test]
    fn a_rejected_program_amid_accepted_ones() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("verify/mixed.o");
        let obj = obj.to_str().unwrap();
        // Statistics alone (programs loaded together), and a text log (each on its own, after the
        // rejected program's annotated log), on one thread and two.
        for (mode, jobs) in [("--summary", "1"), ("--summary", "2"), ("--level=1", "2")] {
            let args = ["verify", mode, "-o", "csv", "--jobs", jobs, obj];
            let Some(counts) = loads(&args) else { return };
            for name in ["xdp_mixed_first", "xdp_mixed_rejec", "xdp_mixed_last"] {
                assert_eq!(counts.get(name), Some(&1), "{name}: {counts:?}");
            }
            let out = bpflog(&args);
            assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
            let rows: Vec<Vec<String>> = text(&out.stdout)
                .lines()
                .filter(|l| l.starts_with("mixed.o,"))
                .map(|l| l.split(',').map(str::to_owned).collect())
                .collect();
            let verdicts: Vec<(&str, &str)> = rows
                .iter()
                .map(|r| (r[1].as_str(), r[2].as_str()))
                .collect();
            assert_eq!(
                verdicts,
                [
                    ("xdp_mixed_first", "success"),
                    ("xdp_mixed_reject", "failure"),
                    ("xdp_mixed_last", "success")
                ]
            );
            // attach_type: libbpf's, also for the programs of the load that failed.
            for row in &rows {
                assert_eq!(row[12], "xdp", "{row:?}");
            }
            // prog_size_jited: the kernel compiled both accepted programs.
            assert_ne!(rows[0][10], "0", "{rows:?}");
            assert_eq!(rows[1][10], "0", "{rows:?}");
            assert_ne!(rows[2][10], "0", "{rows:?}");
        }
    }

    /// A struct_ops map names its programs, and libbpf loads every program it names whichever
    /// one is asked for: each is verified once all the same, at the statistics level (loaded
    /// together) and with a text log (each on its own), and the program the kernel rejects in
    /// struct_ops_rejected.o fails none of its siblings.
    #[test]
    fn struct_ops_programs_each_verified_once() {
        if !can_load() {
            return;
        }
        let accepted = fixtures().join("verify/struct_ops.o");
        let rejected = fixtures().join("verify/struct_ops_rejected.o");
        let objects = [accepted.to_str().unwrap(), rejected.to_str().unwrap()];
        let names = [
            "bpflog_ssthresh",
            "bpflog_cong_avoid",
            "bpflog_undo_cwnd",
            "bpflog_rj_ssthresh",
            "bpflog_rj_avoid",
            "bpflog_rj_undo",
        ];
        for mode in ["--summary", "--level=1", "--level=2"] {
            let args = [&["verify", mode, "-o", "csv", "--jobs", "1"][..], &objects].concat();
            let Some(counts) = loads(&args) else { return };
            for name in names {
                let short: String = name.chars().take(15).collect();
                assert_eq!(counts.get(&short), Some(&1), "{mode} {name}: {counts:?}");
            }
            let out = bpflog(&args);
            assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
            let verdicts: Vec<(String, String)> = text(&out.stdout)
                .lines()
                .skip(1)
                .map(|l| {
                    let cells: Vec<&str> = l.split(',').collect();
                    (cells[1].to_owned(), cells[2].to_owned())
                })
                .collect();
            let expected: Vec<(String, String)> = names
                .iter()
                .map(|&n| {
                    let verdict = if n == "bpflog_rj_ssthresh" {
                        "failure"
                    } else {
                        "success"
                    };
                    (n.to_owned(), verdict.to_owned())
                })
                .collect();
            assert_eq!(verdicts, expected, "{mode}");
        }
    }

    /// With `-o csv` or `-o json`, standard output is the table and nothing else, whatever the
    /// kernel rejected (README's recipe: `verify --level 2 -o csv --log-dir DIR`): the CSV reads
    /// back in `verify --compare`, every JSON line is a row; the logs are in DIR, and stderr
    /// says where.
    #[test]
    fn a_machine_formats_standard_output_is_the_table_alone() {
        if !can_load() {
            return;
        }
        let tmp = std::env::temp_dir().join(format!("bpflog-verify-table-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        let obj = fixtures().join("verify/mixed.o");
        let logs = tmp.join("logs");
        let (obj, logs_dir) = (obj.to_str().unwrap(), logs.to_str().unwrap());
        let programs = ["xdp_mixed_first", "xdp_mixed_reject", "xdp_mixed_last"];
        for format in ["csv", "json"] {
            let args = [
                "verify",
                "--level",
                "2",
                "-o",
                format,
                "--log-dir",
                logs_dir,
                obj,
            ];
            let out = bpflog(&args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{err}");
            assert!(
                err.contains(&format!("-o {format} writes only the table")),
                "{err}"
            );
            assert!(err.contains(logs_dir), "{err}");
            let table = text(&out.stdout);
            let rows: Vec<&str> = table.lines().collect();
            if format == "json" {
                assert_eq!(rows.len(), programs.len(), "{table}");
                for (row, prog) in rows.iter().zip(programs) {
                    let row: serde_json::Value = serde_json::from_str(row).unwrap();
                    assert_eq!(row["prog_name"], prog, "{row}");
                }
                continue;
            }
            assert_eq!(rows.len(), 1 + programs.len(), "{table}");
            for (row, prog) in rows[1..].iter().zip(programs) {
                assert!(row.starts_with(&format!("mixed.o,{prog},")), "{row}");
                assert_eq!(row.split(',').count(), 14, "{row}");
            }
            let rejected = std::fs::read(logs.join("mixed.o.xdp_mixed_reject.log")).unwrap();
            assert!(text(&rejected).contains("invalid access to packet"));
            let csv = tmp.join("t.csv");
            std::fs::write(&csv, &out.stdout).unwrap();
            let csv = csv.to_str().unwrap();
            let out = bpflog(&["verify", "--compare", csv, csv, "-o", "csv"]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            let compared = text(&out.stdout);
            for prog in programs {
                assert!(compared.contains(&format!("mixed.o,{prog},")), "{compared}");
            }
        }
        let _ = std::fs::remove_dir_all(&tmp);
    }

    /// An object built without `-g` whose maps libbpf needs BTF for: each program says what
    /// `annotate` says of it (no .BTF section, compiled with clang -g?) and libbpf's own words
    /// once, not libbpf's ENOENT ("No such file or directory") of a file that is there.
    #[test]
    fn an_object_without_btf_asks_for_clang_g() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("verify/pinned.nodebug.o");
        let out = bpflog(&["verify", obj.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        for prog in ["xdp_pin_entry", "xdp_pin_tail"] {
            let said = format!(
                "pinned.nodebug.o: cannot load {prog}: no .BTF section (was the object compiled \
                 with clang -g?) (libbpf: BTF is required, but is missing or corrupted.)\n"
            );
            assert!(err.contains(&said), "{err}");
        }
        assert!(!err.contains("No such file"), "{err}");
        assert!(!err.contains("libbpf: libbpf:"), "{err}");
        // What `annotate` says of the same object.
        let log = fixtures().join("verify/pinned.c");
        let out = bpflog(&["annotate", obj.to_str().unwrap(), log.to_str().unwrap()]);
        assert!(
            text(&out.stderr).contains("no .BTF section (was the object compiled with clang -g?)"),
            "{}",
            text(&out.stderr)
        );
    }

    /// The exit status is `verify`'s verdict: a reader that leaves early (`| head`) does not
    /// turn a rejection into a success, and no error is said for it.
    #[test]
    fn a_closed_pipe_keeps_the_verdict() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("verify/mixed.o");
        for args in [&["verify"][..], &["verify", "--summary"]] {
            let mut reader = Command::new("true")
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let closed = reader.stdin.take().unwrap();
            reader.wait().unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
                .args(args)
                .arg(&obj)
                .stdout(closed)
                .stderr(std::process::Stdio::piped())
                .output()
                .unwrap();
            let said = text(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{args:?}: {said}");
            assert!(!said.contains("error"), "{args:?}: {said}");
        }
    }

    /// A private bpffs at /sys/fs/bpf for one test: a mount namespace of its own (`unshare`,
    /// kept by a process that waits), entered by each command (`nsenter`), so that what the test
    /// pins and lists there is its alone while other tests load programs. Dropped: the process
    /// ends, and the bpffs and what is pinned there go with the namespace.
    struct PrivateBpffs {
        holder: std::process::Child,
    }

    impl PrivateBpffs {
        /// `None`, saying why, where this process cannot make one.
        fn new() -> Option<Self> {
            use std::io::BufRead;
            let holder = Command::new("unshare")
                .args(["--mount", "--propagation", "private", "sh", "-c"])
                .arg("mount -t bpf bpf /sys/fs/bpf && echo mounted && exec sleep 600")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn();
            let Ok(mut holder) = holder else {
                eprintln!("skipping: no unshare here (util-linux)");
                return None;
            };
            let mut said = String::new();
            let stdout = holder.stdout.take().unwrap();
            let _ = std::io::BufReader::new(stdout).read_line(&mut said);
            let bpffs = PrivateBpffs { holder };
            if said.trim() != "mounted" {
                eprintln!("skipping: cannot mount a bpffs in a mount namespace of its own here");
                return None;
            }
            Some(bpffs)
        }

        /// `program ARGS` run in the namespace.
        fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
            Command::new("nsenter")
                .arg("-t")
                .arg(self.holder.id().to_string())
                .args(["-m", "--", program])
                .args(args)
                .env_remove("NO_COLOR")
                .env_remove("CLICOLOR_FORCE")
                .output()
                .unwrap()
        }

        /// Every path under /sys/fs/bpf, with its kind.
        fn listing(&self) -> String {
            let out = self.run("find", &["/sys/fs/bpf", "-printf", "%p %y\n"]);
            assert!(out.status.success(), "{}", text(&out.stderr));
            let mut paths: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
            paths.sort_unstable();
            paths.join("\n")
        }
    }

    impl Drop for PrivateBpffs {
        fn drop(&mut self) {
            let _ = self.holder.kill();
            let _ = self.holder.wait();
        }
    }

    /// The kernel's programs, maps and links (`bpftool -j KIND show`) that bear one of `names`
    /// (the kernel keeps 15 bytes of a name), and the links to those programs and maps, as
    /// `KIND ID NAME` lines, sorted.
    fn kernel_objects(names: &[&str]) -> Vec<String> {
        let show = |kind: &str| -> Vec<serde_json::Value> {
            let out = Command::new("bpftool")
                .args(["-j", kind, "show"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            serde_json::from_slice(&out.stdout).unwrap()
        };
        let ours = |v: &serde_json::Value| {
            v["name"]
                .as_str()
                .is_some_and(|n| names.iter().any(|ours| ours.get(..15).unwrap_or(ours) == n))
        };
        let mut found = Vec::new();
        let mut ids = std::collections::BTreeSet::new();
        for kind in ["prog", "map"] {
            for v in show(kind).iter().filter(|v| ours(v)) {
                found.push(format!("{kind} {} {}", v["id"], v["name"]));
                ids.insert((kind, v["id"].as_u64()));
            }
        }
        for link in show("link") {
            let to_ours = ids.contains(&("prog", link["prog_id"].as_u64()))
                || ids.contains(&("map", link["map_id"].as_u64()));
            if to_ours {
                found.push(format!("link {} {link}", link["id"]));
            }
        }
        found.sort();
        found
    }

    /// `verify` leaves the system as it found it: an object whose maps are pinned by name (a
    /// prog array with xdp_pin_tail as its initial slot 0, a hash map) neither reuses the map of
    /// that name pinned already (the system's) nor pins its own, and a struct_ops object
    /// registers nothing. Before and after each run: the same programs, maps and links of those
    /// names in the kernel, the same files in bpffs, slot 0 of the pinned prog array empty.
    /// Programs a private prog array held are freed by the kernel a moment after the map
    /// (deferred work): the check waits for that, up to 5 s.
    #[test]
    fn verify_leaves_the_system_as_it_found_it() {
        if !can_load() {
            return;
        }
        if Command::new("bpftool").arg("version").output().is_err() {
            eprintln!("skipping: no bpftool here");
            return;
        }
        let Some(bpffs) = PrivateBpffs::new() else {
            return;
        };
        let names = [
            "xdp_pin_entry",
            "xdp_pin_tail",
            "bpflog_pin_jmp",
            "bpflog_pin_hash",
            "bpflog_ssthresh",
            "bpflog_cong_avoid",
            "bpflog_undo_cwnd",
            "bpflog_cc",
        ];
        // The system's prog array of the object's name, pinned where libbpf looks for it.
        let pinned = "/sys/fs/bpf/bpflog_pin_jmp";
        let out = bpffs.run(
            "bpftool",
            &[
                "map",
                "create",
                pinned,
                "type",
                "prog_array",
                "key",
                "4",
                "value",
                "4",
                "entries",
                "4",
                "name",
                "bpflog_pin_jmp",
            ],
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let congestion = || {
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
                .unwrap_or_default()
        };
        let listing = bpffs.listing();
        let kernel = kernel_objects(&names);
        assert!(listing.contains(pinned), "{listing}");
        let bin = env!("CARGO_BIN_EXE_bpflog");
        let pinned_o = fixtures().join("verify/pinned.o");
        let struct_ops_o = fixtures().join("verify/struct_ops.o");
        let (pinned_o, struct_ops_o) = (pinned_o.to_str().unwrap(), struct_ops_o.to_str().unwrap());
        for mode in ["--level=1", "--summary", "--level=2"] {
            let out = bpffs.run(bin, &["verify", mode, "-o", "csv", pinned_o, struct_ops_o]);
            let said = text(&out.stderr);
            let slot0 = bpffs.run("bpftool", &["-j", "map", "dump", "pinned", pinned]);
            let slots: serde_json::Value = serde_json::from_slice(&slot0.stdout).unwrap();
            assert_eq!(
                slots,
                serde_json::json!([]),
                "{mode}: the system's prog array"
            );
            assert_eq!(bpffs.listing(), listing, "{mode}: bpffs");
            assert!(
                !congestion().contains("bpflog_cc"),
                "{mode}: {}",
                congestion()
            );
            let mut left = kernel_objects(&names);
            for _ in 0..50 {
                if left == kernel {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
                left = kernel_objects(&names);
            }
            assert_eq!(left, kernel, "{mode}: left in the kernel");
            // Every program verified, and accepted: the prog array's initial slot names a
            // program not loaded with xdp_pin_entry alone, which fails libbpf's load after the
            // kernel accepted the program.
            assert_eq!(out.status.code(), Some(0), "{mode}: {said}");
            let verdicts: Vec<&str> = std::str::from_utf8(&out.stdout)
                .unwrap()
                .lines()
                .skip(1)
                .map(|row| row.split(',').nth(2).unwrap())
                .collect();
            assert_eq!(verdicts, ["success"; 5], "{mode}: {said}");
        }
    }

    /// What of `verify`'s output does not change from one load to the next: the `==> FILE/PROG
    /// <==` lines before each log (whose text holds kernel addresses), and the CSV with its
    /// `duration` column (the kernel's clock) left empty.
    fn steady(stdout: &[u8]) -> String {
        let out = text(stdout);
        let csv_at = out
            .find("file_name,prog_name,verdict,")
            .expect("a CSV table");
        let mut kept: Vec<String> = out[..csv_at]
            .lines()
            .filter(|l| l.starts_with("==> "))
            .map(str::to_owned)
            .collect();
        for (k, line) in out[csv_at..].lines().enumerate() {
            let mut fields: Vec<&str> = line.split(',').collect();
            if k > 0 && fields.len() > 3 {
                fields[3] = "_";
            }
            kept.push(fields.join(","));
        }
        kept.join("\n")
    }

    /// Many objects, one table in the order of the command line, the same with 1, 2 or 5
    /// loaders at once; the logs of the rejected programs before it.
    #[test]
    fn many_objects_one_table_whatever_the_jobs() {
        if !can_load() {
            return;
        }
        let objects = fixture_objects();
        let run = |extra: &[&str]| {
            let mut args = vec!["verify", "--color", "never", "-o", "csv"];
            args.extend_from_slice(extra);
            args.extend(objects.iter().map(String::as_str));
            let out = bpflog(&args);
            assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
            // The logs on standard error, the table alone on standard output.
            assert!(
                out.stdout.starts_with(b"file_name,"),
                "{}",
                text(&out.stdout)
            );
            steady(&[&out.stderr[..], &out.stdout[..]].concat())
        };
        for summary in [true, false] {
            let mode: &[&str] = if summary {
                &["--summary"]
            } else {
                &["--logs-to-stderr"]
            };
            let one = run(&[mode, &["--jobs", "1"]].concat());
            for jobs in ["2", "5"] {
                assert_eq!(
                    run(&[mode, &["--jobs", jobs]].concat()),
                    one,
                    "--jobs {jobs}"
                );
            }
            let csv_at = one.find("file_name,prog_name,verdict,").unwrap();
            let rows: Vec<&str> = one[csv_at..].lines().skip(1).collect();
            assert!(one[csv_at..].starts_with(
                "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,\
                 max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,\
                 attach_type,stack_depth\n"
            ));
            let expected: Vec<String> = fixture_programs()
                .iter()
                .map(|(obj, prog)| {
                    let file = obj.file_name().unwrap().to_string_lossy();
                    let verdict = if prog.contains("reject") {
                        "failure"
                    } else {
                        "success"
                    };
                    format!("{file},{prog},{verdict},_,")
                })
                .collect();
            assert_eq!(rows.len(), expected.len(), "{one}");
            for (row, start) in rows.iter().zip(&expected) {
                assert!(row.starts_with(start.as_str()), "{row} / {start}");
            }
            // Without --summary, the log of each rejected program (and only those) comes first.
            let logs = &one[..csv_at];
            for (obj, prog) in fixture_programs() {
                let file = obj.file_name().unwrap().to_string_lossy();
                let header = format!("==> {file}/{prog} <==");
                assert_eq!(
                    logs.contains(&header),
                    !summary && prog.contains("reject"),
                    "{header}"
                );
            }
        }
    }

    /// The table's counters are those of the kernel's own summary line, program by program.
    #[test]
    fn table_counters_are_the_kernels() {
        if !can_load() {
            return;
        }
        // States differ from peak states in branchy and loop_sum.
        let objects = ["two_in_one.o", "branchy.o", "loop_callback.o"];
        let paths: Vec<String> = objects
            .iter()
            .map(|o| {
                fixtures()
                    .join("obj")
                    .join(o)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let mut args = vec!["verify", "--summary", "-o", "json"];
        args.extend(paths.iter().map(String::as_str));
        let out = bpflog(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        // Progress is drawn on a terminal only.
        assert_eq!(text(&out.stderr), "");
        let rows: Vec<serde_json::Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 6);
        for row in rows {
            let file = row["file_name"].as_str().unwrap();
            let obj = fixtures().join("obj").join(file);
            let prog = row["prog_name"].as_str().unwrap();
            let (log, accepted) = kernel_log(&obj, prog, 1);
            assert!(accepted);
            let log = text(&log);
            let processed = log.lines().find(|l| l.starts_with("processed ")).unwrap();
            let words: Vec<&str> = processed.split_whitespace().collect();
            assert_eq!(
                row["total_insns"].as_u64().unwrap().to_string(),
                words[1],
                "{prog}"
            );
            for (key, column) in [
                ("max_states_per_insn", "max_states_per_insn"),
                ("total_states", "total_states"),
                ("peak_states", "peak_states"),
                ("mark_read", "max_mark_read_len"),
            ] {
                let at = words.iter().position(|w| *w == key).unwrap();
                assert_eq!(
                    row[column].as_u64().unwrap().to_string(),
                    words[at + 1],
                    "{prog} {key}"
                );
            }
            assert_eq!(row["verdict"], "success");
            assert_eq!(row["prog_type"], "xdp");
            assert!(row["prog_size_jited"].as_u64().unwrap() > 0, "{row}");
        }
    }

    /// A program whose name holds terminal escapes (tests/fixtures/malformed/make.py): libbpf
    /// cannot load it and says so quoting the name; what reaches the terminal is escaped.
    #[test]
    fn libbpfs_words_reach_the_terminal_escaped() {
        if !can_load() {
            return;
        }
        let obj = fixtures().join("malformed/le-control-bytes-in-a-name.o");
        let out = bpflog(&["verify", "--summary", obj.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("cannot load \\x1b[2J"), "{err}");
        assert!(
            !out.stderr.contains(&0x1b) && !out.stdout.contains(&0x1b),
            "{err}"
        );
    }

    /// Two runs that kept their level-2 logs (`--log-dir`): `--compare --logs` adds, for the
    /// program whose instructions grew, where the verifier's effort changed line by line. The
    /// "builds" are xdp_subprogs.o and its copy without .BTF.ext, which the kernel verifies in
    /// more instructions, each under the name xdp.o.
    #[test]
    fn compare_with_the_logs_shows_the_lines_that_grew() {
        if !can_load() {
            return;
        }
        let tmp = std::env::temp_dir().join(format!("bpflog-verify-logs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        let mut tables = Vec::new();
        for (run, fixture) in [
            ("base", "xdp_subprogs.o"),
            ("new", "xdp_subprogs.nobtfext.o"),
        ] {
            let build = tmp.join(run);
            std::fs::create_dir_all(&build).unwrap();
            std::fs::copy(fixtures().join("obj").join(fixture), build.join("xdp.o")).unwrap();
            let logs = tmp.join(format!("{run}-logs"));
            let obj = build.join("xdp.o");
            let out = bpflog(&[
                "verify",
                "--level",
                "2",
                "-o",
                "csv",
                "--log-dir",
                logs.to_str().unwrap(),
                obj.to_str().unwrap(),
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            let table = tmp.join(format!("{run}.csv"));
            std::fs::write(&table, &out.stdout).unwrap();
            let log = std::fs::read(logs.join("xdp.o.xdp_parse.log")).unwrap();
            assert!(text(&log).contains("func#0 @0"), "a level-2 log");
            assert!(logs.join("xdp.o").is_file());
            tables.push((table, logs));
        }
        let [(base, base_logs), (new, new_logs)] = &tables[..] else {
            unreachable!()
        };
        let p = |p: &std::path::PathBuf| p.to_str().unwrap().to_owned();
        let compare = |a: &str, b: &str, logs: &[String]| {
            let mut args = vec!["verify", "--color", "never", "--compare", a, b];
            args.extend(["--logs"].iter().copied().filter(|_| !logs.is_empty()));
            args.extend(logs.iter().map(String::as_str));
            let out = bpflog(&args);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            text(&out.stdout)
        };
        let logs = [p(base_logs), p(new_logs)];
        let grown = compare(&p(base), &p(new), &logs);
        assert!(
            grown.contains("==> xdp.o/xdp_parse: where the verifier's effort changed <=="),
            "{grown}"
        );
        assert!(grown.contains("insns                131"), "{grown}");
        assert!(grown.contains("xdp_subprogs.c:"), "{grown}");
        // Fewer instructions: nothing to explain.
        let logs = [p(new_logs), p(base_logs)];
        assert!(!compare(&p(new), &p(base), &logs).contains("==> "));
        assert!(!compare(&p(base), &p(new), &[]).contains("==> "));
        let _ = std::fs::remove_dir_all(&tmp);
    }

    /// `--log-dir` where the object already is leaves the object whole; two objects of one file
    /// name cannot both be kept, which is said before anything is loaded.
    #[test]
    fn log_dir_keeps_objects_whole() {
        let tmp = std::env::temp_dir().join(format!("bpflog-verify-keep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(tmp.join("other")).unwrap();
        let original = std::fs::read(fixtures().join("obj/twins.o")).unwrap();
        let obj = tmp.join("twins.o");
        std::fs::write(&obj, &original).unwrap();
        std::fs::write(tmp.join("other/twins.o"), &original).unwrap();
        let (dir, obj) = (tmp.to_str().unwrap(), obj.to_str().unwrap());
        let other = tmp.join("other/twins.o");
        let out = bpflog(&["verify", "--log-dir", dir, obj, other.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("--log-dir keeps one object of each file name"));
        if can_load() {
            let out = bpflog(&["verify", "-o", "csv", "--log-dir", dir, obj]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            assert!(tmp.join("twins.o.xdp_twin_a.log").is_file());
        }
        assert_eq!(std::fs::read(obj).unwrap(), original);
        let _ = std::fs::remove_dir_all(&tmp);
    }

    /// `--sort` and `--top` as veristat's `-s` and `-n`: the programs that cost the verifier most.
    #[test]
    fn the_costliest_programs_first() {
        if !can_load() {
            return;
        }
        let objects = fixture_objects();
        let mut args = vec![
            "verify",
            "--summary",
            "-o",
            "csv",
            "--sort",
            "insns",
            "-n",
            "4",
        ];
        args.extend(objects.iter().map(String::as_str));
        let out = bpflog(&args);
        assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
        let insns: Vec<u64> = text(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
            .collect();
        assert_eq!(insns.len(), 4);
        assert!(insns.windows(2).all(|w| w[0] >= w[1]), "{insns:?}");
        // The most of all the fixture programs.
        let mut all = vec!["verify", "--summary", "-o", "csv"];
        all.extend(objects.iter().map(String::as_str));
        let most = text(&bpflog(&all).stdout)
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
            .max();
        assert_eq!(insns.first().copied(), most);
    }

    /// An object whose license is not UTF-8 (from tests/fixtures/malformed/make.py): libbpf
    /// prints the license, and libbpf-rs aborts the process on a message that is not UTF-8, so
    /// the object is refused first, in one line naming it; no load, no abort.
    #[test]
    fn strings_libbpf_would_print_must_be_utf8() {
        let obj = fixtures().join("malformed/le-unnamed-program-without-line-info.o");
        let ok = fixtures().join("obj/branchy.o");
        let out = bpflog(&[
            "verify",
            "--summary",
            ok.to_str().unwrap(),
            obj.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("le-unnamed-program-without-line-info.o: a string of section license '\\xba\\x03' is not UTF-8"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }

    /// Without CAP_BPF, verify says what it needs (as an unprivileged user, when run as root).
    #[test]
    fn without_cap_bpf_verify_says_so() {
        let obj = fixtures().join("obj/branchy.o");
        let bin = env!("CARGO_BIN_EXE_bpflog");
        let out = if privileged() {
            let setpriv = Path::new("/usr/bin/setpriv");
            let readable = |p: &Path| {
                use std::os::unix::fs::PermissionsExt;
                p.ancestors().all(|a| {
                    std::fs::metadata(a).is_ok_and(|m| m.permissions().mode() & 0o005 != 0)
                })
            };
            if !setpriv.exists() || !readable(Path::new(bin)) || !readable(&obj) {
                eprintln!(
                    "skipping: cannot drop privileges here (setpriv, or paths others cannot read)"
                );
                return;
            }
            Command::new(setpriv)
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--inh-caps=-all",
                ])
                .arg(bin)
                .args(["verify", obj.to_str().unwrap()])
                .output()
                .unwrap()
        } else {
            bpflog(&["verify", obj.to_str().unwrap()])
        };
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("CAP_BPF"), "{err}");
        assert!(err.contains("run bpflog verify as root"), "{err}");
    }

    /// After each rejected program's log, `verify` writes what `explain --format text` writes
    /// for the kernel's log of it (in kernel style too), and its JSON row carries the class
    /// `explain --format json` gives (parsed JSON compared); the CSV keeps veristat's columns.
    #[test]
    fn a_rejected_programs_log_is_followed_by_its_explanation() {
        if !can_load() {
            return;
        }
        let tmp =
            std::env::temp_dir().join(format!("bpflog-verify-explain-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let src = fixtures().join("src");
        let src = src.to_str().unwrap();
        let mut explained = 0;
        for (obj, prog) in fixture_programs() {
            if !prog.contains("reject") || obj.to_string_lossy().contains(".no") {
                continue;
            }
            let obj = obj.to_str().unwrap();
            let (log, accepted) = kernel_log(Path::new(obj), &prog, 1);
            assert!(!accepted, "{prog}");
            let kept = tmp.join(format!("{prog}.log"));
            std::fs::write(&kept, &log).unwrap();
            let explain = |format: &str| {
                let out = bpflog(&[
                    "explain",
                    obj,
                    kept.to_str().unwrap(),
                    "--prog",
                    &prog,
                    "--format",
                    format,
                    "--color",
                    "never",
                    "--source-dir",
                    src,
                ]);
                assert!(out.status.success(), "{prog}: {}", text(&out.stderr));
                text(&out.stdout)
            };
            let expected_text = explain("text");
            let expected: serde_json::Value = serde_json::from_str(&explain("json")).unwrap();
            let verify = |more: &[&str]| {
                let mut args = vec![
                    "verify",
                    "--prog",
                    &prog,
                    "--style",
                    "kernel",
                    "--color",
                    "never",
                    "--source-dir",
                    src,
                ];
                args.extend(more);
                args.push(obj);
                let out = bpflog(&args);
                assert_eq!(out.status.code(), Some(3), "{prog}: {}", text(&out.stderr));
                (text(&out.stdout), text(&out.stderr))
            };
            // The row alone on standard output; the log and its explanation on standard error.
            let row = |out: &str| -> serde_json::Value {
                assert_eq!(out.lines().count(), 1, "{prog}: {out}");
                serde_json::from_str(out).unwrap()
            };
            let (out, err) = verify(&["-o", "json", "--logs-to-stderr"]);
            assert!(
                err.contains(&expected_text),
                "{prog}: verify wrote\n{err}\nexplain\n{expected_text}"
            );
            let json = row(&out);
            assert_eq!(json["prog_name"], prog.as_str());
            assert_eq!(json["class"], expected["class"], "{prog}: {json}");
            // The log not written: the class all the same.
            let (out, _) = verify(&["-o", "json"]);
            assert_eq!(row(&out)["class"], expected["class"], "{prog}: {out}");
            // No explanation asked for: no class.
            let (out, err) = verify(&["-o", "json", "--no-diagnostic", "--logs-to-stderr"]);
            assert!(!err.contains("   = class: "), "{prog}");
            let json = row(&out);
            assert!(json.get("class").is_none(), "{prog}: {json}");
            // veristat's CSV: its columns, no more.
            let (out, err) = verify(&["-o", "csv", "--logs-to-stderr"]);
            let header = out.lines().next().unwrap();
            assert!(header.starts_with("file_name,"), "{out}");
            assert_eq!(header.split(',').count(), 14, "{header}");
            assert_eq!(out.lines().count(), 2, "{out}");
            assert!(err.contains(&expected_text), "{prog}");
            explained += 1;
        }
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(explained >= 5, "{explained}");
    }
}
