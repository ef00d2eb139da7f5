//! Outputs onto inputs, every case: each command, for each kind of file it reads (objects,
//! logs, `--btf`, tables, the logs of `--logs` directories, the source files it reads), writing
//! that file each way it writes (standard output appended `>>` or opened `1<>`, `-o`,
//! `--flamegraph`, `--log-dir`), is refused with one line naming the output and the input, and
//! every input is left byte for byte as it was, with no file added.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_bpflog");

/// The object with three programs, a level-2 log of one of them, its source (as its debug info
/// names it).
const OBJECT: &str = "two_in_one.o";
const LOG: &str = "two_in_one.xdp_first.l2.log";
const OTHER_LOG: &str = "two_in_one.xdp_second.l2.log";
const SOURCE: &str = "./two_in_one.c";
const PROGRAM: &str = "xdp_first";
/// An object with DWARF and no `.BTF.ext` (its line table keeps no text: the source is read
/// for kernel lines too), a log of it, and its source.
const DWARF_OBJECT: &str = "reject_entry.nobtfext.o";
const DWARF_LOG: &str = "reject_entry.nobtfext.xdp_reject_entry.l2.log";
const DWARF_SOURCE: &str = "reject_entry.c";
/// A kernel's BTF (`--btf`), two `verify -o csv` tables, and the `--logs` directories of
/// `verify --compare` with the log kept for `two_in_one.o/xdp_first` in each.
const BTF: &str = "kernel.btf";
const BASE: &str = "base.csv";
const NEW: &str = "new.csv";
const KEPT_LOG: &str = "base-logs/two_in_one.o.xdp_first.log";
/// Two tables in which the DWARF-only object's program grew, its object and log kept in both
/// `--logs` directories: `verify --compare --logs` profiles it line by line, reading its source.
const DWARF_BASE: &str = "dwarf-base.csv";
const DWARF_NEW: &str = "dwarf-new.csv";

/// A fresh directory with every input.
fn workdir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("outputs_onto_inputs")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    let fixtures = common::fixtures();
    for sub in ["base-logs", "new-logs"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for (from, to) in [
        (fixtures.join("obj").join(OBJECT), OBJECT),
        (fixtures.join("logs").join(LOG), LOG),
        (fixtures.join("logs").join(OTHER_LOG), OTHER_LOG),
        (fixtures.join("src").join(SOURCE), SOURCE),
        (fixtures.join("obj").join(DWARF_OBJECT), DWARF_OBJECT),
        (fixtures.join("logs").join(DWARF_LOG), DWARF_LOG),
        (fixtures.join("src").join(DWARF_SOURCE), DWARF_SOURCE),
        (fixtures.join("select/btf/vmlinux.min.btf"), BTF),
        (fixtures.join("verify/bpflog.csv"), BASE),
        (fixtures.join("verify/grown.csv"), NEW),
        (fixtures.join("logs").join(LOG), KEPT_LOG),
        (
            fixtures.join("logs").join(LOG),
            "new-logs/two_in_one.o.xdp_first.log",
        ),
    ] {
        std::fs::copy(&from, dir.join(to)).unwrap_or_else(|e| panic!("{from:?}: {e}"));
    }
    std::fs::copy(
        fixtures.join("obj").join(OBJECT),
        dir.join("base-logs").join(OBJECT),
    )
    .unwrap();
    let header = std::fs::read_to_string(fixtures.join("verify/bpflog.csv")).unwrap();
    let header = header.lines().next().unwrap();
    for (table, insns) in [(DWARF_BASE, 100), (DWARF_NEW, 200)] {
        let row =
            format!("{DWARF_OBJECT},xdp_reject_entry,failure,50,{insns},2,2,0,0,20,0,xdp,xdp,0");
        std::fs::write(dir.join(table), format!("{header}\n{row}\n")).unwrap();
    }
    for sub in ["base-logs", "new-logs"] {
        let kept = format!("{DWARF_OBJECT}.xdp_reject_entry.log");
        std::fs::copy(
            fixtures.join("logs").join(DWARF_LOG),
            dir.join(sub).join(kept),
        )
        .unwrap();
        std::fs::copy(
            fixtures.join("obj").join(DWARF_OBJECT),
            dir.join(sub).join(DWARF_OBJECT),
        )
        .unwrap();
    }
    dir
}

/// Every file under `dir` (relative path) with its bytes.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    files
}

/// How the output reaches the input.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// Standard output opened to append to it (`>> INPUT`).
    Append,
    /// Standard output opened to read and write it from its start (`1<> INPUT`).
    ReadWrite,
    /// Named after this option (`-o`, `--flamegraph`).
    Option(&'static str),
    /// `--log-dir kept`, whose file for the program is a hard link to the input.
    LogDir,
}

/// A command line, the inputs it reads (what each is to it, and the file), and the ways it
/// writes.
struct Run {
    args: Vec<&'static str>,
    inputs: Vec<(&'static str, &'static str)>,
    ways: Vec<Way>,
}

fn commands() -> Vec<Run> {
    let btf = ("the kernel's BTF", BTF);
    let object = ("the object", OBJECT);
    let log = ("the log", LOG);
    let source = ("the source file", SOURCE);
    let stdout = [Way::Append, Way::ReadWrite];
    let mut commands = vec![
        Run {
            args: vec!["annotate", OBJECT, LOG, "--btf", BTF],
            inputs: vec![object, log, btf],
            ways: stdout.to_vec(),
        },
        // Each way annotate reads source files: rich lines, context lines, the diagnostic, and
        // kernel lines of a line table from DWARF.
        Run {
            args: vec!["annotate", OBJECT, LOG, "--style", "rich"],
            inputs: vec![source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["annotate", OBJECT, LOG, "--context", "2"],
            inputs: vec![source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["annotate", OBJECT, LOG, "--diagnostic"],
            inputs: vec![source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["annotate", DWARF_OBJECT, DWARF_LOG, "--style", "kernel"],
            inputs: vec![("the source file", DWARF_SOURCE)],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["explain", OBJECT, LOG, "--btf", BTF],
            inputs: vec![object, log, btf, source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["profile", OBJECT, LOG, "--prog", PROGRAM, "--btf", BTF],
            inputs: vec![object, log, btf],
            ways: vec![Way::Append, Way::ReadWrite, Way::Option("--flamegraph")],
        },
        Run {
            args: vec!["profile", OBJECT, LOG, "--prog", PROGRAM, "--source"],
            inputs: vec![source],
            ways: vec![Way::Append, Way::ReadWrite, Way::Option("--flamegraph")],
        },
        Run {
            args: vec!["profile", DWARF_OBJECT, DWARF_LOG],
            inputs: vec![("the source file", DWARF_SOURCE)],
            ways: vec![Way::Append, Way::ReadWrite, Way::Option("--flamegraph")],
        },
        Run {
            args: vec![
                "profile",
                OBJECT,
                "--prog",
                PROGRAM,
                "--compare",
                LOG,
                OTHER_LOG,
                "--btf",
                BTF,
            ],
            inputs: vec![object, log, ("the log", OTHER_LOG), btf],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["report", OBJECT, LOG, "--btf", BTF],
            inputs: vec![object, log, btf, source],
            ways: vec![Way::Option("-o")],
        },
        Run {
            args: vec!["report", OBJECT, LOG, "--btf", BTF, "-o", "-"],
            inputs: vec![object, log, btf, source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec!["lines", OBJECT],
            inputs: vec![object, source],
            ways: stdout.to_vec(),
        },
        Run {
            args: vec![
                "verify",
                "--compare",
                BASE,
                NEW,
                "--logs",
                "base-logs",
                "new-logs",
            ],
            inputs: vec![
                ("the table", BASE),
                ("the table", NEW),
                ("in the --logs directory", KEPT_LOG),
            ],
            ways: stdout.to_vec(),
        },
        // Line by line, a program that grew: its source is read.
        Run {
            args: vec![
                "verify",
                "--compare",
                DWARF_BASE,
                DWARF_NEW,
                "--logs",
                "base-logs",
                "new-logs",
            ],
            inputs: vec![("the source file", DWARF_SOURCE)],
            ways: stdout.to_vec(),
        },
    ];
    // Refused before anything is loaded: no privilege needed, only the loader built in.
    if cfg!(feature = "load") {
        commands.push(Run {
            args: vec!["verify", OBJECT, "-o", "csv"],
            inputs: vec![object],
            ways: vec![Way::Append, Way::ReadWrite, Way::LogDir],
        });
        // Rejected logs are shown annotated.
        commands.push(Run {
            args: vec!["verify", OBJECT, "-o", "csv"],
            inputs: vec![source],
            ways: stdout.to_vec(),
        });
    }
    commands
}

#[test]
fn every_output_onto_every_input_is_refused_and_the_input_kept() {
    let dir = workdir("matrix");
    let before = contents(&dir);
    let mut cases = 0;
    for command in commands() {
        for &(what, input) in &command.inputs {
            for &way in &command.ways {
                let mut cmd = Command::new(BIN);
                cmd.current_dir(&dir).args(&command.args);
                cmd.stdout(Stdio::null()).stderr(Stdio::piped());
                let output = match way {
                    Way::Append | Way::ReadWrite => {
                        let mut open = std::fs::OpenOptions::new();
                        match way {
                            Way::Append => open.append(true),
                            _ => open.read(true).write(true),
                        };
                        cmd.stdout(open.open(dir.join(input)).unwrap());
                        "standard output is".to_owned()
                    }
                    Way::Option(option) => {
                        cmd.args([option, input]);
                        format!("{input}: the output is")
                    }
                    Way::LogDir => {
                        let kept = dir.join("kept");
                        std::fs::create_dir_all(&kept).unwrap();
                        let name = format!("kept/{OBJECT}.{PROGRAM}.log");
                        std::fs::hard_link(dir.join(input), dir.join(&name)).unwrap();
                        cmd.args(["--prog", PROGRAM, "--log-dir", "kept"]);
                        format!("{name}: the output is")
                    }
                };
                let case = format!("{:?} {way:?} onto {input}", command.args);
                let out = cmd.output().unwrap();
                let _ = std::fs::remove_dir_all(dir.join("kept"));
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(1), "{case}: {err}");
                assert_eq!(err.lines().count(), 1, "{case}: {err}");
                let said = if what.starts_with("in ") {
                    format!("the same file as {input} {what}")
                } else {
                    format!("the same file as {what} {input}")
                };
                assert!(
                    err.starts_with(&format!("bpflog: error: {output} {said}")),
                    "{case}: {err}"
                );
                assert!(
                    contents(&dir) == before,
                    "{case}: a file was changed, made or removed"
                );
                cases += 1;
            }
        }
    }
    assert!(cases >= 60, "{cases} cases");
}

/// A source file the command does not read is no input: written to as asked (kernel lines of a
/// log with the kernel's own, BTF's text in a profile, explain's JSON).
#[test]
fn a_source_file_not_read_is_written_to() {
    let dir = workdir("sources_not_read");
    let original = std::fs::read(dir.join(SOURCE)).unwrap();
    for args in [
        vec!["annotate", OBJECT, LOG, "--style", "kernel"],
        vec!["annotate", OBJECT, LOG, "--format", "json"],
        vec!["profile", OBJECT, LOG, "--prog", PROGRAM],
        vec!["explain", OBJECT, LOG, "--format", "json"],
    ] {
        let piped = Command::new(BIN)
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(piped.status.code(), Some(0), "{args:?}");
        std::fs::write(dir.join(SOURCE), &original).unwrap();
        let open = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(SOURCE));
        let out = Command::new(BIN)
            .current_dir(&dir)
            .args(&args)
            .stdout(open.unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        let written = std::fs::read(dir.join(SOURCE)).unwrap();
        assert_eq!(written, [&original[..], &piped.stdout].concat(), "{args:?}");
    }
}

/// `verify --log-dir`, with programs loaded: what is in the directory already is replaced by a
/// new file, never written through (a hard link to the object, a symlink planted to another
/// file), a program name longer than a file name gets a shortened one and the run goes on.
#[cfg(feature = "load")]
mod log_dir {
    use super::{BIN, Command, Path};
    use crate::common::fixtures;

    /// Whether the kernel loads a known-good program for this process; says why not.
    fn can_load() -> bool {
        let obj = fixtures().join("obj/branchy.o");
        let out = Command::new(BIN)
            .args(["verify", "--raw"])
            .arg(obj)
            .output();
        let loaded = out.as_ref().is_ok_and(|o| o.status.success());
        if !loaded {
            eprintln!("skipping: this process cannot load BPF programs here");
        }
        loaded
    }

    fn verify(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
        let out = Command::new(BIN)
            .current_dir(dir)
            .args(["verify", "-o", "csv", "--log-dir", "kept"])
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    }

    #[test]
    fn what_is_in_the_directory_is_replaced_never_written_through() {
        if !can_load() {
            return;
        }
        let dir = super::workdir("log_dir_planted");
        let object = std::fs::read(dir.join(super::OBJECT)).unwrap();
        std::fs::create_dir_all(dir.join("kept")).unwrap();
        // The object in the directory by a hard link: kept whole (it is there already).
        std::fs::hard_link(
            dir.join(super::OBJECT),
            dir.join("kept").join(super::OBJECT),
        )
        .unwrap();
        // A symlink planted where a log goes, to a file of someone else's.
        std::fs::write(dir.join("victim"), b"not bpflog's\n").unwrap();
        let planted = dir.join("kept/two_in_one.o.xdp_second.log");
        std::os::unix::fs::symlink("../victim", &planted).unwrap();
        // A hard link to another file where another log goes.
        std::fs::write(dir.join("linked"), b"not bpflog's either\n").unwrap();
        let linked = dir.join("kept/two_in_one.o.xdp_nested.log");
        std::fs::hard_link(dir.join("linked"), &linked).unwrap();
        let (status, table, err) = verify(&dir, &[super::OBJECT]);
        assert_eq!(status, Some(0), "{err}");
        assert_eq!(table.lines().count(), 4, "{table}");
        assert_eq!(std::fs::read(dir.join(super::OBJECT)).unwrap(), object);
        assert_eq!(
            std::fs::read(dir.join("victim")).unwrap(),
            b"not bpflog's\n"
        );
        assert_eq!(
            std::fs::read(dir.join("linked")).unwrap(),
            b"not bpflog's either\n"
        );
        let meta = std::fs::symlink_metadata(&planted).unwrap();
        assert!(meta.is_file(), "the symlink is replaced by the log");
        let log = std::fs::read_to_string(&planted).unwrap();
        assert!(log.contains("processed"), "{log}");
        // No temporary file is left.
        let names: Vec<_> = std::fs::read_dir(dir.join("kept"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 4, "{names:?}");
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn a_name_too_long_for_a_file_is_shortened_and_the_run_goes_on() {
        if !can_load() {
            return;
        }
        let dir = super::workdir("log_dir_long_name");
        let object = fixtures().join("verify/long_name.o");
        std::fs::copy(&object, dir.join("long_name.o")).unwrap();
        let (status, table, err) = verify(&dir, &["long_name.o"]);
        assert_eq!(status, Some(0), "{err}");
        // Both programs in the table.
        assert_eq!(table.lines().count(), 3, "{table}");
        assert!(table.contains(",xdp_short_name,success,"), "{table}");
        let mut names: Vec<String> = std::fs::read_dir(dir.join("kept"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}");
        let long = &names[1];
        assert!(long.len() <= 255 && long.ends_with(".log"), "{long}");
        assert!(
            long.starts_with("long_name.o.xdp_a_program_name_longer"),
            "{long}"
        );
        assert_eq!(names[2], "long_name.o.xdp_short_name.log");
        // Said in one line naming the program and where its log is.
        let said: Vec<&str> = err.lines().filter(|l| l.contains("too long")).collect();
        assert_eq!(said.len(), 1, "{err}");
        assert!(
            said[0].ends_with(&format!("its log is kept as kept/{long}")),
            "{err}"
        );
        let log = std::fs::read_to_string(dir.join("kept").join(long)).unwrap();
        assert!(log.contains("processed"), "{log}");
    }

    #[test]
    fn a_log_that_cannot_be_kept_ends_nothing_else() {
        if !can_load() {
            return;
        }
        let dir = super::workdir("log_dir_unkept");
        // A directory where the first program's log goes.
        std::fs::create_dir_all(dir.join("kept/two_in_one.o.xdp_first.log")).unwrap();
        let (status, table, err) = verify(&dir, &[super::OBJECT]);
        assert_eq!(status, Some(1), "{err}");
        assert_eq!(table.lines().count(), 4, "{table}");
        for prog in ["xdp_second", "xdp_nested"] {
            assert!(dir.join(format!("kept/two_in_one.o.{prog}.log")).is_file());
        }
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert_eq!(
            lines[0],
            "bpflog: warning: two_in_one.o/xdp_first: its log is not kept: \
             kept/two_in_one.o.xdp_first.log: is a directory"
        );
        assert_eq!(
            lines[1],
            "bpflog: error: kept: 1 of 3 logs could not be kept (said above)"
        );
    }
}
