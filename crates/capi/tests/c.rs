//! The C program `tests/c/capi.c`, compiled with the system's C compiler against
//! `libbpflog.so` and against `libbpflog.a`, run on fixture objects and logs: what it writes is
//! the Rust library's output for the same inputs, byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

use bpflog::explain::{self, ExplainFormat};
use bpflog::object::BpfObject;
use bpflog::profile::{self, RenderOptions};
use bpflog::{AnnotateOptions, Palette, Program, SourceFiles, SourceSearch, Style};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The directory cargo writes `libbpflog.so` and `.a` to for this test's profile, the library
/// built there (cargo builds no C library for a test by itself).
fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    // <target>/<profile>/deps/c-<hash>
    let profile_dir = exe
        .ancestors()
        .nth(2)
        .expect("the profile's directory")
        .to_path_buf();
    let target = profile_dir.parent().expect("the target directory");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("a profile name");
    let profile = if profile == "debug" { "dev" } else { profile };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "-p",
            "bpflog-capi",
            "--profile",
            profile,
            "--target-dir",
        ])
        .arg(target)
        .arg("--manifest-path")
        .arg(format!("{ROOT}/Cargo.toml"))
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo build -p bpflog-capi failed");
    profile_dir
}

fn cc() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()?
        .status
        .success()
        .then_some(cc)
}

/// The library's outputs for `log` of `prog` in `obj`, with the options the C layer uses.
fn expected(obj: &str, prog: &str, log: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let data = std::fs::read(format!("{ROOT}/tests/fixtures/obj/{obj}")).expect("the object");
    let object = BpfObject::parse(&data).expect("an object");
    let program =
        Program::new(&object, object.program(prog).expect("the program")).expect("laid out");
    let mut outputs = Vec::new();
    for (name, style) in [("kernel", Style::Kernel), ("rich", Style::Rich)] {
        let options = AnnotateOptions::default()
            .style(style)
            .palette(Palette::new(false))
            .diagnostic(style == Style::Rich);
        let mut out = Vec::new();
        bpflog::annotate(&program, log, &mut out, &options).expect("annotated");
        outputs.push((name, out));
    }
    let mut json = Vec::new();
    let mut sources = SourceFiles::new(SourceSearch::default());
    for e in explain::explain(&program, log).expect("explained") {
        explain::write(
            &e,
            &program,
            ExplainFormat::Json,
            &mut sources,
            &Palette::new(false),
            &mut json,
        )
        .expect("written");
    }
    outputs.push(("explain", json));
    let p = profile::profile(&program, log).expect("profiled");
    let mut json = Vec::new();
    profile::render(
        &p,
        &mut json,
        &RenderOptions::default().format(profile::Format::Json),
    )
    .expect("rendered");
    outputs.push(("profile", json));
    outputs
}

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
    for (name, expected) in expected(obj, chosen, &log) {
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
}

/// `install.sh` of the built library into a fresh prefix.
fn install(lib: &Path, prefix: &Path) {
    let _ = std::fs::remove_dir_all(prefix);
    let status = Command::new(format!("{ROOT}/crates/capi/install.sh"))
        .env("PREFIX", prefix)
        .env("BUILD_DIR", lib)
        .env("NO_BUILD", "1")
        .env_remove("DESTDIR")
        .status()
        .expect("install.sh runs");
    assert!(status.success(), "install.sh failed");
}

/// The words of `pkg-config ARGS bpflog`, its `bpflog.pc` the one installed under `prefix`.
fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pkg-config")
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .args(args)
        .arg("bpflog")
        .output()
        .expect("pkg-config runs");
    assert!(
        out.status.success(),
        "pkg-config {args:?} bpflog: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn the_c_program_gets_the_library_s_output_through_the_so_and_the_a() {
    let Some(cc) = cc() else {
        eprintln!("skipped: no C compiler (cc, or $CC) to build tests/c/capi.c");
        return;
    };
    if Command::new("pkg-config")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no pkg-config to read the installed bpflog.pc");
        return;
    }
    let lib = built_library();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("capi-c");
    let prefix = dir.join("prefix");
    install(&lib, &prefix);
    let source = format!("{ROOT}/crates/capi/tests/c/capi.c");
    let cflags = pkg_config(&prefix, &["--cflags"]);
    let libdir = pkg_config(&prefix, &["--variable=libdir"]);
    assert_eq!(libdir, [prefix.join("lib").display().to_string()]);
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
    install(&lib, &prefix);
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
