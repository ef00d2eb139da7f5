//! The C program `tests/c/capi.c`, compiled with the system's C compiler against
//! `libbpflog.so` and against `libbpflog.a`, run on fixture objects and logs: what it writes is
//! the Rust library's output for the same inputs (and loader), byte for byte.

mod common;

use std::path::Path;
use std::process::Command;

use bpflog::object::Loader;
use common::{ROOT, built_library, expected, install, installed, pkg_config};

fn run(exe: &Path, obj: &str, log: &str, prog: &str, chosen: &str, out: &Path) {
    std::fs::create_dir_all(out).expect("the output directory");
    let obj_path = format!("{ROOT}/tests/fixtures/obj/{obj}");
    let log_path = format!("{ROOT}/tests/fixtures/logs/{log}");
    let ran = Command::new(exe)
        .args([&obj_path, &log_path, prog])
        .arg(out)
        .output()
        .expect("the C program runs");
    assert!(
        ran.status.success(),
        "{} {obj} {log} {prog}: {}",
        exe.display(),
        String::from_utf8_lossy(&ran.stderr)
    );
    let read = |name: &str| std::fs::read(out.join(name)).expect("an output");
    let log = std::fs::read(&log_path).expect("the log");
    for (name, expected) in expected(obj, chosen, Loader::Libbpf, &log) {
        if name == "explain" || name == "profile" {
            assert!(
                read(&format!("{name}.json")) == expected,
                "{obj} {log_path}: {name} differs"
            );
        } else {
            for how in ["cb", "buf"] {
                assert!(
                    read(&format!("{name}.{how}")) == expected,
                    "{obj} {log_path}: {name}.{how} differs"
                );
            }
        }
    }
    // The object opened for another loader: each of these programs is laid out alike by all.
    for (file, name, loader) in [
        ("rich.cilium", "rich", Loader::Cilium),
        ("kernel.aya", "kernel", Loader::Aya),
    ] {
        let (_, expected) = expected(obj, chosen, loader, &log)
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("an output");
        assert!(read(file) == expected, "{obj} {log_path}: {file} differs");
    }
    let errors = String::from_utf8(read("errors.txt")).expect("UTF-8");
    let lines: Vec<&str> = errors.lines().collect();
    assert_eq!(
        lines[0],
        "3 /nonexistent.o: No such file or directory (os error 2)"
    );
    assert!(
        lines[1].starts_with("5 5 no program named 'no_such_prog' (programs: "),
        "{errors}"
    );
    assert_eq!(lines[2], "8 the write callback returned 7");
    assert_eq!(lines[3], "1 object is NULL");
    assert!(lines[4].starts_with("2 loader 9 is none of "), "{errors}");
}

#[test]
fn the_c_program_gets_the_library_s_output_through_the_so_and_the_a() {
    let (cc, dir, prefix) = match installed("capi-c") {
        Ok(built) => built,
        Err(why) => {
            eprintln!("skipped: {why} to build tests/c/capi.c");
            return;
        }
    };
    let source = format!("{ROOT}/crates/capi/tests/c/capi.c");
    let cflags = pkg_config(&prefix, &["--cflags"]);
    let libdir = pkg_config(&prefix, &["--variable=libdir"]);
    let flags = ["-std=c99", "-Wall", "-Wextra", "-Werror"];

    // Against libbpflog.so, found at run time by its SONAME under the prefix.
    let shared = dir.join("capi-shared");
    let status = Command::new(&cc)
        .args(flags)
        .args(&cflags)
        .arg(&source)
        .args(pkg_config(&prefix, &["--libs"]))
        .arg(format!("-Wl,-rpath,{}", libdir[0]))
        .arg("-o")
        .arg(&shared)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc against libbpflog.so failed");

    // Against libbpflog.a, with the libraries pkg-config --static adds (docs/c.md).
    let fixed = dir.join("capi-static");
    let private: Vec<String> = pkg_config(&prefix, &["--static", "--libs-only-l"])
        .into_iter()
        .filter(|w| w != "-lbpflog")
        .collect();
    let status = Command::new(&cc)
        .args(flags)
        .args(&cflags)
        .arg(&source)
        .arg(Path::new(&libdir[0]).join("libbpflog.a"))
        .args(&private)
        .arg("-o")
        .arg(&fixed)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc against libbpflog.a failed");
    let cases = [
        (
            "reject_subprog.o",
            "reject_subprog.xdp_reject_subprog.l2.log",
            "-",
            "xdp_reject_subprog",
        ),
        (
            "reject_subprog.o",
            "reject_subprog.xdp_reject_subprog.l1.log",
            "xdp_reject_subprog",
            "xdp_reject_subprog",
        ),
        (
            "branchy.o",
            "branchy.xdp_branchy.l2.log",
            "xdp_branchy",
            "xdp_branchy",
        ),
        (
            "loop_callback.o",
            "loop_callback.loop_sum.l2.log",
            "-",
            "loop_sum",
        ),
    ];
    // The static one needs no libbpflog at run time: it runs with the prefix removed.
    std::fs::remove_dir_all(&prefix).expect("the prefix removed");
    for (i, &(obj, log, prog, chosen)) in cases.iter().enumerate() {
        run(
            &fixed,
            obj,
            log,
            prog,
            chosen,
            &dir.join(format!("static-{i}")),
        );
    }
    install(&built_library(), &prefix);
    for (i, &(obj, log, prog, chosen)) in cases.iter().enumerate() {
        run(
            &shared,
            obj,
            log,
            prog,
            chosen,
            &dir.join(format!("shared-{i}")),
        );
    }
}

/// The first C block of `page` (a path under the repository) that holds a `main`.
fn program_of(page: &str) -> String {
    let text = std::fs::read_to_string(format!("{ROOT}/{page}")).expect("the page");
    text.split("```c\n")
        .skip(1)
        .filter_map(|block| block.split_once("```").map(|(code, _)| code))
        .find(|code| code.contains("int main("))
        .unwrap_or_else(|| panic!("{page} has no C program"))
        .to_string()
}

#[test]
fn the_smallest_program_of_docs_c_md_annotates_a_log() {
    let (cc, dir, prefix) = match installed("capi-docs") {
        Ok(built) => built,
        Err(why) => {
            eprintln!("skipped: {why} to build docs/c.md's program");
            return;
        }
    };
    let source = dir.join("show.c");
    std::fs::write(&source, program_of("docs/c.md")).expect("show.c written");
    let exe = dir.join("show");
    // As the page says: `cc show.c $(pkg-config --cflags --libs bpflog)`, and a run path for
    // the prefix.
    let status = Command::new(&cc)
        .args(["-Wall", "-Wextra", "-Werror"])
        .arg(&source)
        .args(pkg_config(&prefix, &["--cflags", "--libs"]))
        .arg(format!("-Wl,-rpath,{}", prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc of docs/c.md's program failed");

    let obj = format!("{ROOT}/examples/reject_subprog.o");
    let log_path = format!("{ROOT}/examples/reject_subprog.log");
    let ran = Command::new(&exe)
        .args([&obj, &log_path])
        .output()
        .expect("it runs");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let log = std::fs::read(&log_path).expect("the log");
    let (_, rich) = expected(
        "reject_subprog.o",
        "xdp_reject_subprog",
        Loader::Libbpf,
        &log,
    )
    .into_iter()
    .find(|(name, _)| *name == "rich")
    .expect("the rich annotation");
    assert!(ran.stdout == rich, "not the library's rich annotation");

    // A failure: one line naming it, exit status 1.
    let ran = Command::new(&exe)
        .args(["/nonexistent.o", &log_path])
        .output()
        .expect("it runs");
    assert_eq!(ran.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&ran.stderr),
        "bpflog: /nonexistent.o: No such file or directory (os error 2)\n"
    );
}
