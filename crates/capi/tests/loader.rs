//! `examples/c/loader.c`, a libbpf loader, built by its Makefile with the system's C compiler
//! against libbpf and the installed libbpflog through pkg-config: on a fixture log its output is
//! the library's rich annotate and explanation of that log, byte for byte; as root it loads a
//! fixture object the kernel rejects and shows where and why.

mod common;
mod loaders;

use std::path::PathBuf;
use std::process::Command;

use bpflog::object::Loader;
use common::{ROOT, found, installed};
use loaders::{
    KernelState, answers_without_the_kernel, bare_log, is_root, rich_and_explain, run as loader,
};

const OBJ: &str = "reject_subprog.o";

/// The loader built into a directory of the test's own, or why it cannot be.
fn build() -> Result<PathBuf, String> {
    if !found("make", &["--version"]) {
        return Err("no make".into());
    }
    if !found("pkg-config", &["--exists", "libbpf"]) {
        return Err("no libbpf (libbpf-dev) known to pkg-config".into());
    }
    let (cc, dir, prefix) = installed("capi-loader")?;
    let _ = std::fs::remove_file(dir.join("loader"));
    let status = Command::new("make")
        .arg("-s")
        .arg("-f")
        .arg(format!("{ROOT}/examples/c/Makefile"))
        .arg(format!("OUT={}", dir.display()))
        .arg(format!("CC={cc}"))
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .status()
        .expect("make runs");
    assert!(status.success(), "make -f examples/c/Makefile failed");
    Ok(dir.join("loader"))
}

#[test]
fn the_loader_annotates_a_log_file_and_a_rejection_it_loads() {
    let exe = match build() {
        Ok(exe) => exe,
        Err(why) => {
            eprintln!("skipped: {why} to build examples/c/loader.c");
            return;
        }
    };
    let obj = format!("{ROOT}/tests/fixtures/obj/{OBJ}");
    let dir = exe.parent().expect("the loader's directory");

    // A level-2 log without the kernel's `;` source lines, as a loader without line info gets it.
    let (log_path, log) = bare_log(dir, "reject_subprog.xdp_reject_subprog.l2.log");
    let log_arg = log_path.to_str().expect("a UTF-8 path");
    let want = rich_and_explain(OBJ, "xdp_reject_subprog", Loader::Libbpf, &log);
    answers_without_the_kernel(&exe, &obj, log_arg, "xdp_reject_subprog", &want, &[]);

    // Loaded into the kernel, which rejects it: the annotated log names the failing source line
    // and carries the kernel's error.
    if !is_root() {
        eprintln!("skipped loading {OBJ}: not root");
        return;
    }
    let before = KernelState::now(&["xdp_reject_subprog", "flows"]);
    for level in ["1", "2"] {
        let out = loader(&exe, &[&obj, "--level", level]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) && stderr.contains("Operation not permitted") {
            eprintln!("skipped loading {OBJ}: BPF not allowed here: {stderr}");
            return;
        }
        assert_eq!(out.status.code(), Some(1), "level {level}: {stderr}");
        assert!(
            stderr.contains("the kernel rejected program 'xdp_reject_subprog'"),
            "{stderr}"
        );
        assert!(stdout.contains("reject_subprog.c:54"), "{stdout}");
        assert!(
            stdout.contains("R1 invalid mem access 'map_value_or_null'"),
            "{stdout}"
        );
        assert!(
            stdout.contains("\"class\":\"nullable-dereference\""),
            "{stdout}"
        );
    }
    before.assert_unchanged();
}
