//! `examples/go`, a cilium/ebpf loader calling libbpflog through cgo, built by its Makefile
//! against the installed libbpflog (pkg-config) and the cilium/ebpf sources its `go.mod` names:
//! on a fixture log its output is the library's rich annotate and explanation of that log under
//! cilium/ebpf's layout, byte for byte; as root it loads fixture objects the kernel rejects or
//! accepts, shows where and why it rejects them, and leaves none of their programs or maps in the
//! kernel, nothing pinned.

mod common;
mod loaders;

use std::path::{Path, PathBuf};
use std::process::Command;

use bpflog::object::Loader;
use common::{ROOT, found, installed};
use loaders::{
    KernelState, answers_without_the_kernel, bare_log, is_root, one_line, rich_and_explain,
    run as loader,
};

/// The directories `examples/go/go.mod` replaces modules with (Debian's packages of them).
fn replaced_dirs() -> Vec<String> {
    let go_mod = std::fs::read_to_string(format!("{ROOT}/examples/go/go.mod")).expect("go.mod");
    go_mod
        .lines()
        .filter(|l| l.starts_with("replace "))
        .filter_map(|l| l.split("=> ").nth(1))
        .map(|dir| dir.trim().to_string())
        .collect()
}

/// The loader built into a directory of the test's own, or why it cannot be.
fn build() -> Result<PathBuf, String> {
    if !found("go", &["version"]) {
        return Err("no go (golang-go)".into());
    }
    if !found("make", &["--version"]) {
        return Err("no make".into());
    }
    let dirs = replaced_dirs();
    assert!(!dirs.is_empty(), "examples/go/go.mod replaces its modules");
    if let Some(missing) = dirs.iter().find(|d| !Path::new(d).join("go.mod").is_file()) {
        return Err(format!(
            "no Go module at {missing} (golang-github-cilium-ebpf-dev, golang-golang-x-sys-dev)"
        ));
    }
    // cgo compiles the calls into libbpflog with the C compiler.
    let (cc, dir, prefix) = installed("capi-go")?;
    let _ = std::fs::remove_file(dir.join("loader"));
    // A build cache of the test's own, emptied: Go does not see a change of bpflog.h.
    let cache = dir.join("gocache");
    let _ = std::fs::remove_dir_all(&cache);
    let go_env = [
        (
            "PKG_CONFIG_PATH",
            prefix.join("lib/pkgconfig").into_os_string(),
        ),
        ("CC", cc.into()),
        ("GOCACHE", cache.into_os_string()),
        ("GOPROXY", "off".into()),
        ("GOFLAGS", "-mod=readonly".into()),
    ];
    let status = Command::new("make")
        .arg("-s")
        .arg("-f")
        .arg(format!("{ROOT}/examples/go/Makefile"))
        .arg(format!("OUT={}", dir.display()))
        .envs(go_env.clone())
        .status()
        .expect("make runs");
    assert!(status.success(), "make -f examples/go/Makefile failed");

    // The smallest program of docs/c.md, in a module of examples/go's go.mod, built as that
    // page says.
    let doc = dir.join("doc");
    let _ = std::fs::remove_dir_all(&doc);
    std::fs::create_dir_all(&doc).expect("a directory");
    std::fs::copy(format!("{ROOT}/examples/go/go.mod"), doc.join("go.mod")).expect("go.mod");
    std::fs::write(doc.join("main.go"), doc_program()).expect("main.go");
    let status = Command::new("go")
        .args(["build", "-buildvcs=false", "-o", "prog", "."])
        .current_dir(&doc)
        .envs(go_env)
        .env(
            "CGO_LDFLAGS",
            format!("-Wl,-rpath,{}", prefix.join("lib").display()),
        )
        .status()
        .expect("go runs");
    assert!(status.success(), "go build of docs/c.md's program failed");
    Ok(dir.join("loader"))
}

/// The Go program of docs/c.md.
fn doc_program() -> String {
    let page = std::fs::read_to_string(format!("{ROOT}/docs/c.md")).expect("docs/c.md");
    let (_, rest) = page
        .split_once("```go\n")
        .expect("a Go program in docs/c.md");
    let (program, _) = rest.split_once("```").expect("its end");
    program.to_string()
}

#[test]
fn the_go_loader_annotates_a_log_file_and_a_rejection_it_loads() {
    let exe = match build() {
        Ok(exe) => exe,
        Err(why) => {
            eprintln!("skipped: {why} to build examples/go");
            return;
        }
    };
    let dir = exe.parent().expect("the loader's directory");
    let obj = |name: &str| format!("{ROOT}/tests/fixtures/obj/{name}");

    // xdp_nested calls functions that cilium/ebpf places in another order than libbpf: the
    // loader's annotation is the library's under cilium/ebpf's layout, not libbpf's.
    let two = obj("two_in_one.o");
    let (path, log) = bare_log(dir, "two_in_one.xdp_nested.l2.log");
    let want = rich_and_explain("two_in_one.o", "xdp_nested", Loader::Cilium, &log);
    assert!(want != rich_and_explain("two_in_one.o", "xdp_nested", Loader::Libbpf, &log));
    let path = path.to_str().expect("a UTF-8 path");
    let out = loader(&exe, &[&two, "--log", path, "--prog", "xdp_nested"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == want, "xdp_nested: not the library's output");
    // Not named, the program is chosen among cilium/ebpf's layouts, which this log (libbpf's)
    // does not fit.
    let out = loader(&exe, &[&two, "--log", path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(one_line(&out).contains("xdp_nested (cilium layout)"));

    // A log chosen without a name, named, and a rejection explained.
    let subprog = obj("reject_subprog.o");
    let (path, log) = bare_log(dir, "reject_subprog.xdp_reject_subprog.l2.log");
    let path = path.to_str().expect("a UTF-8 path");
    let want = rich_and_explain(
        "reject_subprog.o",
        "xdp_reject_subprog",
        Loader::Cilium,
        &log,
    );
    let usage: [&[&str]; 2] = [
        &[&subprog, "--prog", "xdp_reject_subprog"],
        &["--log", path],
    ];
    answers_without_the_kernel(&exe, &subprog, path, "xdp_reject_subprog", &want, &usage);

    // Loaded into the kernel.
    if !is_root() {
        eprintln!("skipped loading fixture objects: not root");
        return;
    }
    let names = [
        "xdp_reject_global",
        "xdp_reject_subprog",
        "flows",
        "xdp_first",
        "xdp_second",
        "xdp_nested",
        "xdp_pin_entry",
        "xdp_pin_tail",
        "bpflog_pin_jmp",
        "bpflog_pin_hash",
    ];
    let before = KernelState::now(&names);
    let global = obj("reject_global.o");
    for level in ["1", "2"] {
        // sum_counters, verified on its own, sits at 49 in cilium/ebpf's layout (38 in
        // libbpf's): the failing instruction is placed in it only under cilium/ebpf's.
        let out = loader(&exe, &[&global, "--level", level]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2) && stderr.contains("operation not permitted") {
            eprintln!("skipped loading fixture objects: BPF not allowed here: {stderr}");
            return;
        }
        assert_eq!(out.status.code(), Some(1), "level {level}: {stderr}");
        assert!(
            one_line(&out).contains("the kernel rejected program 'xdp_reject_global'"),
            "{stderr}"
        );
        for want in [
            "Validating sum_counters() func#2...",
            "50: (79) r4 = *(u64 *)(r3 +0)",
            "R3 invalid mem access 'mem_or_null'",
            "reject_global.c:38:13 in sum_counters",
            "--> reject_global.c:38:13",
            "\"class\":\"nullable-dereference\"",
        ] {
            assert!(stdout.contains(want), "level {level}: {want}: {stdout}");
        }

        let out = loader(&exe, &[&subprog, "--level", level]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "level {level}");
        assert!(one_line(&out).contains("the kernel rejected program 'xdp_reject_subprog'"));
        for want in [
            "R1 invalid mem access 'map_value_or_null'",
            "reject_subprog.c:54",
            "\"class\":\"nullable-dereference\"",
        ] {
            assert!(stdout.contains(want), "level {level}: {want}: {stdout}");
        }

        // Every program accepted: each loaded, then closed.
        let out = loader(&exe, &[&two, "--level", level]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, format!("{two}: loaded\n").into_bytes());

        // Maps pinned by name (libbpf's `pinning`), a program array filled with a program of
        // the object: loaded, nothing pinned.
        let pinned = format!("{ROOT}/tests/fixtures/verify/pinned.o");
        let out = loader(&exe, &[&pinned, "--level", level]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, format!("{pinned}: loaded\n").into_bytes());
        before.assert_unchanged();
    }
    // The program of docs/c.md: the log annotated, the error on stderr; nothing for an object
    // the kernel accepts.
    let doc = dir.join("doc/prog");
    let out = loader(&doc, &[&obj("reject_global.o")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("R3 invalid mem access 'mem_or_null'"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("reject_global.c:38:13 in sum_counters"));
    let out = loader(&doc, &[&two]);
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty());
    before.assert_unchanged();
}
