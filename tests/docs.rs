//! Shell completions and manual pages: generated from the command-line definitions, they name
//! every subcommand `bpflog --help` lists.

use std::process::{Command, Output};

fn bpflog(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .output()
        .unwrap()
}

/// The subcommands `bpflog --help` lists (but `help`).
fn subcommands() -> Vec<String> {
    let out = bpflog(&["--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| *n != "help")
        .map(str::to_owned)
        .collect();
    for expected in [
        "annotate",
        "profile",
        "verify",
        "lines",
        "completions",
        "man",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    names
}

#[test]
fn completions_name_every_subcommand() {
    let names = subcommands();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = bpflog(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        for name in &names {
            assert!(
                script.contains(name.as_str()),
                "{shell} completion lacks {name}"
            );
        }
        // Options of subcommands too.
        assert!(script.contains("source-dir"), "{shell}");
    }
    let out = bpflog(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_page_names_every_subcommand() {
    let out = bpflog(&["man"]);
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH bpflog 1"),
        "{page}"
    );
    assert!(page.contains(".TH bpflog 1"));
    for name in subcommands() {
        assert!(
            page.contains(&format!("bpflog\\-{name}(1)")),
            "man page lacks {name}"
        );
    }
}

#[test]
fn man_pages_for_each_subcommand() {
    let dir = std::env::temp_dir().join(format!("bpflog-man-{}", std::process::id()));
    let out = bpflog(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut pages = vec!["bpflog.1".to_owned()];
    pages.extend(subcommands().iter().map(|n| format!("bpflog-{n}.1")));
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(text.contains(".TH"), "{page} missing or empty");
    }
    let verify = std::fs::read_to_string(dir.join("bpflog-verify.1")).unwrap();
    assert!(verify.contains("CAP_BPF"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's Install section: every `cargo install` line is `--locked` (else cargo resolves
/// every dependency anew, to the newest), and the section names the package it installs, this
/// one's, and the command it gives.
#[test]
fn readme_install_lines_are_locked_and_name_the_package() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Install")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let installs: Vec<&&str> = section
        .iter()
        .filter(|l| l.trim_start().starts_with("cargo install"))
        .collect();
    assert!(
        !installs.is_empty(),
        "no cargo install line in {section:#?}"
    );
    for line in &installs {
        assert!(line.contains(" --locked"), "not locked: {line}");
    }
    let text = section.join("\n");
    let package = env!("CARGO_PKG_NAME");
    assert!(
        text.contains(&format!("`{package}`")),
        "the Install section does not name the package {package}"
    );
    assert!(text.contains("`bpflog`"), "nor the command bpflog");
}
