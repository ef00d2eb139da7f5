//! `bpflog explain` scored against programs labelled by hand: real rejected programs (the
//! kernel's own BPF selftests, `tests/fixtures/selftests`, and bpflog's fixtures,
//! `tests/fixtures/explain`), each read against its C source by a BPF developer, who wrote down
//! the class, the failing line, the line(s) of the root cause and the fix
//! (`tests/fixtures/*/labels.toml`; the format is in `tests/fixtures/selftests/README.md`).
//!
//! An explanation is fully right when its class is the label's, it fails at the labelled line,
//! its chain reaches a root-cause line (when the cause is elsewhere than the failing line), its
//! help names the fix (every `help` pattern matches) and recommends nothing the label calls
//! wrong (no `avoid` pattern matches). The score per class is the README's table (between
//! `<!-- explain-score -->` markers): `BPFLOG_BLESS=1 cargo test --test explain_labels`
//! rewrites it; without it the test fails when the table is not the score. The share fully
//! right may not fall below [`FLOOR`], and no help may recommend a wrong fix beyond [`WRONG`].

mod common;

use bpflog::object::BpfObject;
use bpflog::{Program, explain::explain_bare};
use regex::RegexBuilder;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Fully right explanations, in thousandths of all labelled logs, at least.
const FLOOR: usize = 914;
/// Helps that match an `avoid` pattern (a fix the label calls wrong), at most.
const WRONG: usize = 0;

/// The labelled sets: folders of `tests/fixtures` with a `labels.toml`.
const SETS: &[&str] = &["selftests", "explain"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Labels {
    label: Vec<Label>,
}

/// One rejected program, labelled.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Label {
    /// The object's file name in the set's `obj/` (`dynptr_fail.o`).
    object: String,
    /// The program's name; its logs are `logs/<object stem>.<prog>.l<level>.log`.
    prog: String,
    /// The class id of the rejection.
    class: String,
    /// Other classes a developer would file it under as well (the message fits either).
    #[serde(default)]
    also: Vec<String>,
    /// The failing line, `file.c:N` (the file's base name); any of them when several.
    error: Vec<String>,
    /// The line(s) of the root cause the chain must reach (any one); empty when the failing
    /// line is the cause.
    #[serde(default)]
    root: Vec<String>,
    /// The fix, in words.
    fix: String,
    /// Patterns (regular expressions, case-insensitive) the help must all match.
    help: Vec<String>,
    /// Patterns of wrong fixes the help must not match.
    #[serde(default)]
    avoid: Vec<String>,
    /// What the labeller saw, for the next reader.
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

/// How one explanation did against its label.
#[derive(Debug, Default)]
struct Marks {
    class: bool,
    line: bool,
    root: bool,
    help: bool,
    /// An `avoid` pattern matched.
    wrong: bool,
}

impl Marks {
    fn right(&self) -> bool {
        self.class && self.line && self.root && self.help && !self.wrong
    }

    fn misses(&self) -> String {
        let mut m = Vec::new();
        for (ok, what) in [
            (self.class, "class"),
            (self.line, "line"),
            (self.root, "root"),
            (self.help, "help"),
            (!self.wrong, "WRONG-HELP"),
        ] {
            if !ok {
                m.push(what);
            }
        }
        m.join(",")
    }
}

/// `file:line` with the file's base name.
fn place(file: Option<&str>, line: u32) -> String {
    let file = file.unwrap_or("?");
    format!("{}:{line}", file.rsplit('/').next().unwrap_or(file))
}

fn read_labels(set: &Path) -> Vec<Label> {
    let path = set.join("labels.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let labels: Labels =
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    labels.label
}

fn pattern(p: &str) -> regex::Regex {
    RegexBuilder::new(p)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| panic!("pattern {p:?}: {e}"))
}

/// One labelled log explained and marked: `None` when explain found no rejection.
fn mark(set: &Path, label: &Label, log: &Path) -> (Marks, String) {
    let data = std::fs::read(set.join("obj").join(&label.object)).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let id = object
        .program(&label.prog)
        .unwrap_or_else(|e| panic!("{}: {}: {e}", label.object, label.prog));
    let program = Program::new(&object, id).unwrap();
    let log = std::fs::read(log).unwrap();
    let explained = explain_bare(&program, &log[..]).unwrap();
    let Some(e) = explained.last() else {
        return (Marks::default(), "no rejection found".to_owned());
    };
    let at = place(e.location.file.as_deref(), e.location.line);
    let chain: Vec<String> = e
        .chain
        .iter()
        .map(|s| place(s.location.file.as_deref(), s.location.line))
        .collect();
    let marks = Marks {
        class: e.class().id.as_str() == label.class
            || label.also.iter().any(|c| c == e.class().id.as_str()),
        line: label.error.contains(&at),
        root: label.root.is_empty() || chain.iter().any(|c| label.root.contains(c)),
        help: label.help.iter().all(|p| pattern(p).is_match(&e.help)),
        wrong: label.avoid.iter().any(|p| pattern(p).is_match(&e.help)),
    };
    let said = format!(
        "got [{}] at {at}, chain {}\n  help: {}\n  label [{}] at {}, root {:?}: {}",
        e.class().id,
        chain.join(" "),
        e.help,
        label.class,
        label.error.join("|"),
        label.root,
        label.fix
    );
    (marks, said)
}

/// Per class: logs, fully right, and each part right.
#[derive(Default)]
struct Tally {
    logs: usize,
    right: usize,
    class: usize,
    line: usize,
    root: usize,
    help: usize,
    wrong: usize,
}

impl Tally {
    fn add(&mut self, m: &Marks) {
        self.logs += 1;
        self.right += usize::from(m.right());
        self.class += usize::from(m.class);
        self.line += usize::from(m.line);
        self.root += usize::from(m.root);
        self.help += usize::from(m.help);
        self.wrong += usize::from(m.wrong);
    }

    fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {} | {} ({}%) | {} | {} | {} | {} | {} |\n",
            self.logs,
            self.right,
            percent(self.right, self.logs),
            self.class,
            self.line,
            self.root,
            self.help,
            self.wrong
        )
    }
}

fn percent(part: usize, whole: usize) -> usize {
    (part * 100 + whole / 2) / whole.max(1)
}

/// `wanted` is the content of `path` (with `marker`, its part between two markers): checked,
/// or written with `BPFLOG_BLESS` set.
fn keep_current(path: &Path, marker: Option<&str>, wanted: &str) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let (before, current, after) = match marker {
        None => ("", text.as_str(), ""),
        Some(marker) => {
            let mut parts = text.split(marker);
            match (parts.next(), parts.next(), parts.next()) {
                (Some(b), Some(c), Some(a)) => (b, c, a),
                _ => panic!("{}: no part between two {marker} markers", path.display()),
            }
        }
    };
    if std::env::var_os("BPFLOG_BLESS").is_some() {
        let m = marker.unwrap_or("");
        std::fs::write(path, format!("{before}{m}{wanted}{m}{after}")).unwrap();
    } else {
        assert!(
            current == wanted,
            "{} is not the score (BPFLOG_BLESS=1 rewrites it)",
            path.display()
        );
    }
}

/// The README's part between the markers.
const MARKER: &str = "<!-- explain-score -->";

#[test]
fn explanations_against_the_labels() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut per_class: BTreeMap<String, Tally> = BTreeMap::new();
    let mut total = Tally::default();
    let mut level1 = Tally::default();
    let mut misses = Vec::new();
    for set in SETS {
        let dir: PathBuf = common::fixtures().join(set);
        for label in read_labels(&dir) {
            let stem = label.object.trim_end_matches(".o");
            let mut logs = 0;
            for level in [2, 1] {
                let name = format!("{stem}.{}.l{level}.log", label.prog);
                let log = dir.join("logs").join(&name);
                if !log.exists() {
                    continue;
                }
                logs += 1;
                let (marks, said) = mark(&dir, &label, &log);
                if level == 1 {
                    level1.add(&marks);
                    continue;
                }
                per_class
                    .entry(label.class.clone())
                    .or_default()
                    .add(&marks);
                total.add(&marks);
                if !marks.right() {
                    misses.push(format!("`{set}/{name}`: {}\n  {said}", marks.misses()));
                }
            }
            assert!(logs > 0, "{set}: {stem}.{}: no log", label.prog);
        }
    }
    let mut table = String::from(
        "| class | logs | fully right | class right | line right | root reached | help right | wrong help |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (class, tally) in &per_class {
        table.push_str(&tally.row(&format!("`{class}`")));
    }
    table.push_str(&total.row("**all** (level 2)"));
    if level1.logs > 0 {
        table.push_str(&level1.row("all at level 1"));
    }
    println!("{table}");
    for miss in &misses {
        println!("MISS {miss}");
    }
    let mut listing = format!(
        "# Explanations against the labels\n\n\
         Written by `tests/explain_labels.rs` (`BPFLOG_BLESS=1 cargo test --test explain_labels`), \
         which fails when this file is not the score. The labels: \
         `tests/fixtures/*/labels.toml`.\n\n{table}\n## Every miss (level 2)\n\n"
    );
    for miss in &misses {
        listing.push_str(&format!("- {miss}\n"));
    }
    keep_current(&root.join("docs/explain-score.md"), None, &listing);
    keep_current(&root.join("README.md"), Some(MARKER), &format!("\n{table}"));
    let share = total.right * 1000 / total.logs.max(1);
    assert!(share >= FLOOR, "fully right: {share}‰ < {FLOOR}‰");
    // `WRONG` may be 0: compared as `<` one more.
    assert!(
        total.wrong < WRONG + 1,
        "{} helps recommend a wrong fix",
        total.wrong
    );
}
