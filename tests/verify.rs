//! `bpflog verify`: programs loaded into the running kernel through libbpf.
//!
//! With the `load` feature, and where the kernel lets this process load BPF programs (root, or
//! CAP_BPF), every fixture program is verified at log levels 1 and 2 and the kernel's log, as
//! captured, is compared byte for byte with bpflog's kernel-style annotation of the same log with
//! its `;` lines removed. Where loading is not allowed the live tests say so and pass.

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
}
