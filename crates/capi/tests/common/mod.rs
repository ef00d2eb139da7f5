//! What the C tests share: the C library built and installed into a prefix, pkg-config's words
//! for it, a C compiler, and the library's own outputs to compare the C programs' with.

use std::path::{Path, PathBuf};
use std::process::Command;

use bpflog::explain::{self, ExplainFormat};
use bpflog::object::{BpfObject, Loader};
use bpflog::profile::{self, RenderOptions};
use bpflog::{AnnotateOptions, Input, LogData, Palette, Program, SourceFiles, SourceSearch, Style};

pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// The directory cargo writes `libbpflog.so` and `.a` to for this test's profile, the library
/// built there (cargo builds no C library for a test by itself).
pub fn built_library() -> PathBuf {
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

pub fn cc() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()?
        .status
        .success()
        .then_some(cc)
}

/// Whether `cmd args` runs and succeeds.
pub fn found(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What a test that builds C against the installed library has: the C compiler, its
/// directory (`CARGO_TARGET_TMPDIR/NAME`) and the prefix there the library is installed under
/// (its `bpflog.pc` names that prefix's `lib`); or why it cannot build: no C compiler, or no
/// pkg-config.
pub fn installed(name: &str) -> Result<(String, PathBuf, PathBuf), String> {
    let cc = cc().ok_or("no C compiler (cc, or $CC)")?;
    if !found("pkg-config", &["--version"]) {
        return Err("no pkg-config to read the installed bpflog.pc".into());
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let prefix = dir.join("prefix");
    install(&built_library(), &prefix);
    assert_eq!(
        pkg_config(&prefix, &["--variable=libdir"]),
        [prefix.join("lib").display().to_string()]
    );
    Ok((cc, dir, prefix))
}

/// The library's outputs for `log` of `prog` in `obj` laid out as `loader` does, with the options
/// the C layer uses.
pub fn expected(obj: &str, prog: &str, loader: Loader, log: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let data = std::fs::read(format!("{ROOT}/tests/fixtures/obj/{obj}")).expect("the object");
    let object = BpfObject::parse(&data).expect("an object");
    let program = Program::with_loader(&object, object.program(prog).expect("the program"), loader)
        .expect("laid out");
    let mut outputs = Vec::new();
    for (name, style) in [("kernel", Style::Kernel), ("rich", Style::Rich)] {
        let options = AnnotateOptions::default()
            .style(style)
            .palette(Palette::new(false))
            .diagnostic(style == Style::Rich);
        let mut out = Vec::new();
        let input = Input::of(&program, LogData::Stream(log));
        bpflog::annotate(input, &mut out, &options, |_, _| Ok(())).expect("annotated");
        outputs.push((name, out));
    }
    let mut json = Vec::new();
    let mut sources = SourceFiles::new(SourceSearch::default());
    let input = Input::of(&program, LogData::Stream(log));
    explain::explain(input, |program, e| {
        let palette = Palette::new(false);
        explain::write(
            &e,
            program,
            ExplainFormat::Json,
            &mut sources,
            &palette,
            &mut json,
        )
    })
    .expect("explained");
    outputs.push(("explain", json));
    let input = Input::of(&program, LogData::Stream(log));
    let request = profile::ProfileRequest::default();
    let p = profile::profile(input, &request, &mut sources).expect("profiled");
    let mut json = Vec::new();
    profile::render(
        &p.profile,
        &mut json,
        &RenderOptions::default().format(profile::Format::Json),
    )
    .expect("rendered");
    outputs.push(("profile", json));
    outputs
}

/// `install.sh` of the built library into a fresh prefix.
pub fn install(lib: &Path, prefix: &Path) {
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
pub fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
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
