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

/// The repository's root.
fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The documents a reader of the repository follows links through: the top-level ones and
/// every page of `docs/`.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .map(str::to_owned)
        .to_vec();
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    docs.sort();
    docs
}

/// The README is what a user reads first: at most 500 lines, the rest in `docs/`.
#[test]
fn readme_is_at_most_500_lines() {
    let lines = read("README.md").lines().count();
    assert!(lines <= 500, "README.md has {lines} lines");
}

/// The long options (`--name`) and short ones (`-n`) `bpflog <command> --help` lists, but
/// `--help` and `--version`.
fn options(command: &str) -> Vec<String> {
    let out = bpflog(&[command, "--help"]);
    assert!(out.status.success(), "{command} --help");
    let help = String::from_utf8(out.stdout).unwrap();
    let mut options = Vec::new();
    for line in help.lines().skip_while(|l| *l != "Options:") {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        let words = line.split([' ', ',']).filter(|w| !w.is_empty());
        for word in words.take_while(|w| w.starts_with('-')) {
            let name = word.split('=').next().unwrap();
            if name.len() > 1 && !matches!(name, "-h" | "--help" | "-V" | "--version") {
                options.push(name.to_owned());
            }
        }
    }
    assert!(!options.is_empty(), "no options in {command} --help");
    options
}

/// Where each command's every option is documented: its page of `docs/` (`lines`, whose
/// reference is short, in the README).
const PAGES: [(&str, &str); 6] = [
    ("annotate", "docs/annotate.md"),
    ("profile", "docs/profile.md"),
    ("report", "docs/report.md"),
    ("explain", "docs/explain.md"),
    ("verify", "docs/verify.md"),
    ("lines", "README.md"),
];

/// `s` holds the option `name` as a word: not as the start of a longer option.
fn names_option(s: &str, name: &str) -> bool {
    s.match_indices(name).any(|(at, _)| {
        let before = s[..at].chars().next_back();
        let after = s[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_')
    })
}

/// Every option of every command is documented on the command's page, and the options the
/// README's table of a command names are the command's.
#[test]
fn every_option_is_documented_on_its_commands_page() {
    let readme = read("README.md");
    let mut problems = Vec::new();
    for (command, page) in PAGES {
        let options = options(command);
        let text = std::fs::read_to_string(root().join(page)).unwrap_or_default();
        for option in &options {
            if !names_option(&text, option) {
                problems.push(format!("{page} does not name {command}'s {option}"));
            }
        }
        // The README's section of the command: its table's first column.
        let heading = format!("### `bpflog {command}`");
        let section: Vec<&str> = readme
            .lines()
            .skip_while(|l| !l.starts_with(&heading))
            .skip(1)
            .take_while(|l| !l.starts_with("#"))
            .collect();
        if section.is_empty() {
            problems.push(format!("README.md has no section {heading}"));
        }
        for row in section.iter().filter(|l| l.starts_with("| `-")) {
            let cell = row.split(" | ").next().unwrap();
            for word in cell.split(['`', ' ', ',', '/']) {
                let name = word.split(['=', '\\']).next().unwrap();
                if name.starts_with('-') && name.len() > 1 && !options.contains(&name.to_owned()) {
                    problems.push(format!(
                        "README.md's table of {command} names {name}, which it does not take"
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text: its headings' slugs (outside code blocks), a repeated one
/// with `-1`, `-2`, ... as GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut anchors: Vec<String> = Vec::new();
    let mut code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            code = !code;
        }
        if code || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let seen = anchors
            .iter()
            .filter(|a| {
                **a == base
                    || a.strip_prefix(&format!("{base}-"))
                        .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .count();
        anchors.push(if seen == 0 {
            base
        } else {
            format!("{base}-{seen}")
        });
    }
    anchors
}

/// The relative links of a Markdown text, `[text](target)`, outside code blocks and code spans.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join("``");
        for (at, _) in prose.match_indices("](") {
            let rest = &prose[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(target.to_owned());
            }
        }
    }
    links
}

/// Every relative link of the README, ARCHITECTURE.md, BENCHMARKS.md and `docs/` leads to a
/// file of the repository, and its `#anchor` to a heading of that file.
#[test]
fn relative_links_resolve() {
    let mut problems = Vec::new();
    let mut count = 0;
    for doc in documents() {
        let text = read(&doc);
        let dir = std::path::Path::new(&doc).parent().unwrap().to_owned();
        for link in relative_links(&text) {
            count += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                std::path::PathBuf::from(&doc)
            } else {
                dir.join(path)
            };
            let full = root().join(&target);
            if !full.exists() {
                problems.push(format!("{doc}: ({link}): no {}", target.display()));
                continue;
            }
            if !anchor.is_empty() {
                let Ok(target_text) = std::fs::read_to_string(&full) else {
                    problems.push(format!("{doc}: ({link}): an anchor into no text file"));
                    continue;
                };
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    problems.push(format!(
                        "{doc}: ({link}): no heading #{anchor} in {}",
                        target.display()
                    ));
                }
            }
        }
    }
    assert!(count > 20, "only {count} links found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The README's first commands, the ones a fresh clone runs, work: `cargo run -q -- ARGS` runs
/// the command with ARGS (from the repository's root), and the excerpt the README shows of the
/// first is its output, line for line where the excerpt does not skip (`...`).
#[test]
fn the_readmes_first_commands_work_and_the_excerpt_is_their_output() {
    let readme = read("README.md");
    let block: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let runs: Vec<Vec<&str>> = block
        .iter()
        .filter_map(|l| l.split('#').next()?.trim().strip_prefix("cargo run -q -- "))
        .map(|args| args.split_whitespace().collect())
        .collect();
    assert!(!runs.is_empty(), "no `cargo run -q --` in {block:#?}");
    assert!(
        block
            .iter()
            .any(|l| l.trim_start().starts_with("cargo test")),
        "no `cargo test` in {block:#?}"
    );
    for args in &runs {
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args(args)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // "An excerpt of `bpflog annotate ... --style rich`": the command, then its block.
    let intro = readme
        .lines()
        .find(|l| l.starts_with("An excerpt of `bpflog "))
        .expect("the README's excerpt");
    let command = intro
        .split('`')
        .nth(1)
        .unwrap()
        .strip_prefix("bpflog ")
        .unwrap();
    let args: Vec<&str> = command.split_whitespace().collect();
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(&args)
        .args(["--color", "never"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    let output = String::from_utf8(out.stdout).unwrap();
    let excerpt: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != intro)
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect();
    assert!(excerpt.len() > 10, "{excerpt:#?}");
    let mut lines = output.lines();
    for shown in excerpt.iter().filter(|l| l.trim() != "...") {
        assert!(
            lines.any(|l| l == *shown),
            "the excerpt's line {shown:?} is not in the output of `bpflog {command}` (in order):\n{output}"
        );
    }
}

/// Each command's `--help` (and so its manual page) ends with its exit status and names the
/// page of `docs/` with its full reference.
#[test]
fn each_commands_help_gives_its_exit_status_and_its_page() {
    let dir = std::env::temp_dir().join(format!("bpflog-man-pages-{}", std::process::id()));
    let out = bpflog(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success());
    let mut problems = Vec::new();
    for (command, page) in PAGES {
        let help = String::from_utf8(bpflog(&[command, "--help"]).stdout).unwrap();
        let man = std::fs::read_to_string(dir.join(format!("bpflog-{command}.1"))).unwrap();
        let man = man.replace("\\-", "-").replace("\\*(Aq", "'");
        for (what, text) in [("--help", &help), ("manual page", &man)] {
            if !text.contains("Exit status: 0") {
                problems.push(format!("{command}'s {what} gives no exit status"));
            }
            let named = if page == "README.md" {
                format!("the README's `bpflog {command}`")
            } else {
                page.to_owned()
            };
            if !text.contains(&named) {
                problems.push(format!("{command}'s {what} does not name {named}"));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The README's programs for the bindings (C, Go, Python) are the ones their pages show, which
/// their own tests build and run (`crates/capi/tests/c.rs` and `go.rs`, `crates/python/tests/
/// test_docs.py`): each of the README's blocks appears whole on its page.
#[test]
fn the_readmes_binding_programs_are_the_tested_ones() {
    let readme = read("README.md");
    let section = readme
        .split_once("## In a loader")
        .expect("the README's section on loaders")
        .1;
    let section = section.split("\n## ").next().unwrap_or(section);
    for (lang, page) in [
        ("c", "docs/c.md"),
        ("go", "docs/c.md"),
        ("python", "docs/python.md"),
    ] {
        let fence = format!("```{lang}\n");
        let blocks: Vec<&str> = section
            .split(fence.as_str())
            .skip(1)
            .filter_map(|b| b.split_once("```").map(|(code, _)| code))
            .collect();
        assert_eq!(blocks.len(), 1, "the README's {lang} program");
        let text = read(page);
        assert!(
            text.contains(&format!("{fence}{}```", blocks[0])),
            "the README's {lang} program is not {page}'s"
        );
    }
}
