//! The explanations of a run as one SARIF 2.1.0 log, for code scanning in CI.
//!
//! SARIF is a document for a whole run, not a line per rejection: the classes that occur are the
//! run's rules (title, requirement, help), each rejected log a result at its failing line, its
//! chain both the result's `relatedLocations` and its one `codeFlow`, origin first. Written
//! through serde from the same [`Explanation`]s as the JSON lines; a test checks the output
//! against the published schema (`tests/fixtures/sarif`).
//!
//! A file's `artifactLocation` is relative to `%SRCROOT%` (the run's `originalUriBaseIds`, the
//! source root [`SarifPaths::root`]) when its name, rewritten by `--source-map` and made absolute,
//! lies under the root, and an absolute `file://` URI otherwise: decided on the names alone,
//! nothing read. Each result's `partialFingerprints` (`bpflog/v1`) hashes its class, its file and
//! its failing source line's text, not the line's number, so it survives lines added above.
//!
//! The results are written as the explanations come, none held: the run's `results` come before
//! its `tool`, whose rules are the classes the results named (members of a JSON object are in no
//! order).

use super::{Class, Explanation, Location, Rejection, Step};
use crate::source::SourceSearch;
use serde::{Serialize, Serializer};
use std::borrow::Borrow;
use std::cell::RefCell;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// The published schema of SARIF 2.1.0 (OASIS, errata 01).
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
#[serde(bound(serialize = "Results<'c, I>: Serialize"))]
struct SarifLog<'c, I> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [SarifRun<'c, I>; 1],
}

/// The `uriBaseId` of the files under the source root.
const SRCROOT: &str = "%SRCROOT%";

/// How a run's file names become URIs ([`SarifPaths::new`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SarifPaths {
    /// The source root (`%SRCROOT%`): absolute, as canonical as the caller made it.
    pub root: PathBuf,
    /// The directory a relative name is relative to (the current directory); empty when not
    /// known, which leaves such a name as it is.
    pub base: PathBuf,
    /// The search whose `--source-map`s rewrite a name first.
    pub search: SourceSearch,
}

impl SarifPaths {
    /// The paths of a run: its source root `root`, the directory `base` a relative name is
    /// relative to, and the `search` whose maps rewrite a name first.
    pub fn new(root: PathBuf, base: PathBuf, search: SourceSearch) -> Self {
        SarifPaths { root, base, search }
    }
}

#[derive(Serialize)]
#[serde(bound(serialize = "Results<'c, I>: Serialize"))]
#[serde(rename_all = "camelCase")]
struct SarifRun<'c, I> {
    original_uri_base_ids: OriginalUriBaseIds,
    results: Results<'c, I>,
    tool: Tool<'c>,
}

#[derive(Serialize)]
struct OriginalUriBaseIds {
    #[serde(rename = "%SRCROOT%")]
    srcroot: ArtifactLocation,
}

/// The results, written as the explanations come from `items` (taken once), each class met
/// added to `classes`.
struct Results<'c, I> {
    items: RefCell<Option<I>>,
    classes: &'c RefCell<Vec<&'static Class>>,
    paths: &'c SarifPaths,
}

impl<I> Serialize for Results<'_, I>
where
    I: Iterator,
    I::Item: Borrow<Explanation>,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let items = self.items.borrow_mut().take().into_iter().flatten();
        serializer.collect_seq(items.map(|e| {
            let mut classes = self.classes.borrow_mut();
            let class = e.borrow().class();
            let rule_index = classes
                .iter()
                .position(|c| c.id == class.id)
                .unwrap_or_else(|| {
                    classes.push(class);
                    classes.len() - 1
                });
            Numbered(e, rule_index, self.paths)
        }))
    }
}

/// An explanation, the index of its class among the rules, and how its files are named.
struct Numbered<'p, E>(E, usize, &'p SarifPaths);

impl<E: Borrow<Explanation>> Serialize for Numbered<'_, E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        result(self.0.borrow(), self.1, self.2).serialize(serializer)
    }
}

#[derive(Serialize)]
struct Tool<'c> {
    driver: Driver<'c>,
}

#[derive(Serialize)]
struct Driver<'c> {
    name: &'static str,
    version: &'static str,
    rules: Rules<'c>,
}

/// The classes the results named, in the order they were first met.
struct Rules<'c>(&'c RefCell<Vec<&'static Class>>);

impl Serialize for Rules<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.borrow().iter().copied().map(rule))
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifRule {
    id: &'static str,
    short_description: SarifMessage,
    full_description: SarifMessage,
    help: SarifMessage,
}

#[derive(Serialize)]
struct SarifMessage {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'e> {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: SarifMessage,
    locations: [SarifLocation; 1],
    related_locations: Vec<SarifLocation>,
    code_flows: [CodeFlow; 1],
    partial_fingerprints: Fingerprints,
    properties: Properties<'e>,
}

/// bpflog's own fingerprint ([`fingerprint`]), not GitHub's `primaryLocationLineHash`.
#[derive(Serialize)]
struct Fingerprints {
    #[serde(rename = "bpflog/v1")]
    v1: String,
}

/// What SARIF has no field for: the help filled in with the program's own lines.
#[derive(Serialize)]
struct Properties<'e> {
    help: &'e str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifLocation {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<usize>,
    /// None without line info: the message still names the instruction.
    #[serde(skip_serializing_if = "Option::is_none")]
    physical_location: Option<PhysicalLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<SarifMessage>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CodeFlow {
    thread_flows: [ThreadFlow; 1],
}

#[derive(Serialize)]
struct ThreadFlow {
    locations: Vec<ThreadFlowLocation>,
}

#[derive(Serialize)]
struct ThreadFlowLocation {
    location: SarifLocation,
}

/// Writes `explanations` (all of a run, possibly none) to `out` as one SARIF 2.1.0 log, each
/// result as it comes from the iterator.
pub fn write_sarif<E: Borrow<Explanation>>(
    explanations: impl IntoIterator<Item = E>,
    paths: &SarifPaths,
    out: &mut impl Write,
) -> io::Result<()> {
    let classes = RefCell::new(Vec::new());
    let mut root = uri(paths.root.as_os_str().as_encoded_bytes());
    if !root.ends_with('/') {
        root.push('/');
    }
    let log = SarifLog {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [SarifRun {
            original_uri_base_ids: OriginalUriBaseIds {
                srcroot: ArtifactLocation {
                    uri: format!("file://{root}"),
                    uri_base_id: None,
                },
            },
            results: Results {
                items: RefCell::new(Some(explanations.into_iter())),
                classes: &classes,
                paths,
            },
            tool: Tool {
                driver: Driver {
                    name: "bpflog",
                    version: env!("CARGO_PKG_VERSION"),
                    rules: Rules(&classes),
                },
            },
        }],
    };
    // Through bpflog's JSON formatter: its escapes (C1 controls too), serde_json's pretty layout.
    crate::json::write(out, crate::json::JsonLayout::Pretty, &log)?;
    out.write_all(b"\n")
}

/// The rule of a class: its help with the program's names left generic.
fn rule(class: &'static Class) -> SarifRule {
    let rejection = Rejection::read(class, "");
    let help = super::help::help(&super::help::Facts::general(&rejection));
    SarifRule {
        id: class.id.as_str(),
        short_description: text(class.title),
        full_description: text(class.requires),
        help: SarifMessage { text: help },
    }
}

fn result<'e>(e: &'e Explanation, rule_index: usize, paths: &SarifPaths) -> SarifResult<'e> {
    let steps = |with_id: bool| -> Vec<SarifLocation> {
        e.chain
            .iter()
            .enumerate()
            .map(|(i, s)| SarifLocation {
                id: with_id.then_some(i),
                physical_location: physical(&s.location, paths),
                message: Some(SarifMessage {
                    text: step_message(s),
                }),
            })
            .collect()
    };
    SarifResult {
        rule_id: e.class().id.as_str(),
        rule_index,
        level: "error",
        message: text(e.error()),
        locations: [SarifLocation {
            id: None,
            physical_location: physical(&e.location, paths),
            message: None,
        }],
        related_locations: steps(true),
        code_flows: [CodeFlow {
            thread_flows: [ThreadFlow {
                locations: steps(false)
                    .into_iter()
                    .map(|location| ThreadFlowLocation { location })
                    .collect(),
            }],
        }],
        partial_fingerprints: Fingerprints {
            v1: fingerprint(
                e.class().id.as_str(),
                e.location.file.as_deref(),
                e.chain.last().map_or("", |s| &s.source),
                paths,
            ),
        },
        properties: Properties { help: &e.help },
    }
}

/// 16 hex digits of a hash (FNV-1a, 64 bits) of the class, the failing file's URI and its
/// failing line's text (the last step's) trimmed: the same failure at another line number, or
/// in a copy of the tree elsewhere under its root, hashes the same.
fn fingerprint(class: &str, file: Option<&str>, line: &str, paths: &SarifPaths) -> String {
    let file = file.map(|f| artifact(f, paths).uri);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in [class, file.as_deref().unwrap_or(""), line.trim()] {
        for b in part.bytes().chain([0]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// `role: note (insn N: instruction)`, as the gcc format's notes.
fn step_message(s: &Step) -> String {
    match &s.note {
        Some(note) => format!(
            "{}: {note} (insn {}: {})",
            s.role.as_str(),
            s.location.insn,
            s.instruction
        ),
        None => format!(
            "{} (insn {}: {})",
            s.role.as_str(),
            s.location.insn,
            s.instruction
        ),
    }
}

fn text(s: &str) -> SarifMessage {
    SarifMessage { text: s.to_owned() }
}

/// The file and line of `l`, when debug info gives a file (a line of 0 gives no region, a
/// column of 0 no column).
fn physical(l: &Location, paths: &SarifPaths) -> Option<PhysicalLocation> {
    let file = l.file.as_deref()?;
    Some(PhysicalLocation {
        artifact_location: artifact(file, paths),
        region: (l.line > 0).then(|| Region {
            start_line: l.line,
            start_column: (l.column > 0).then_some(l.column),
        }),
    })
}

/// Where `file` (a name from debug info) is: rewritten by the first `--source-map` that applies,
/// made absolute from [`SarifPaths::base`], `.` and `..` resolved by name; relative to
/// `%SRCROOT%` under the root, else an absolute `file://` URI, else (no base) as it is.
fn artifact(file: &str, paths: &SarifPaths) -> ArtifactLocation {
    let mapped = paths.search.mapped(file).next();
    let path = paths.base.join(mapped.as_deref().unwrap_or(file));
    let mut normal = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            // `..` of `/` is `/`.
            Component::ParentDir if normal.file_name().is_some() => {
                normal.pop();
            }
            Component::ParentDir if normal.has_root() => {}
            c => normal.push(c),
        }
    }
    match normal.strip_prefix(&paths.root) {
        Ok(under) if normal.is_absolute() && under != Path::new("") => ArtifactLocation {
            uri: uri(under.as_os_str().as_encoded_bytes()),
            uri_base_id: Some(SRCROOT),
        },
        _ if normal.is_absolute() => ArtifactLocation {
            uri: format!("file://{}", uri(normal.as_os_str().as_encoded_bytes())),
            uri_base_id: None,
        },
        _ => ArtifactLocation {
            uri: uri(file.as_bytes()),
            uri_base_id: None,
        },
    }
}

/// `path` as a URI reference: its bytes outside RFC 3986's unreserved characters and `/`
/// percent-encoded (a space, `%`, `#` or `?` in a file name stay part of the path).
fn uri(path: &[u8]) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Location, SarifPaths, SourceSearch, artifact, fingerprint, physical, uri};
    use std::path::PathBuf;

    /// Names under `/src/tree`, relative ones from `/src/tree/sub`, `maps` applied.
    fn paths(maps: &[(&str, &str)]) -> SarifPaths {
        SarifPaths {
            root: PathBuf::from("/src/tree"),
            base: PathBuf::from("/src/tree/sub"),
            search: SourceSearch {
                maps: (maps.iter())
                    .map(|&(f, t)| (f.to_owned(), t.to_owned()))
                    .collect(),
                ..SourceSearch::default()
            },
        }
    }

    /// The place of `l` as written.
    fn written(l: &Location) -> String {
        serde_json::to_string(&physical(l, &paths(&[]))).unwrap()
    }

    /// The artifact location of `file` as written.
    fn located(file: &str, paths: &SarifPaths) -> String {
        serde_json::to_string(&artifact(file, paths)).unwrap()
    }

    #[test]
    fn parts_debug_info_does_not_give_are_left_out() {
        let at = |file: Option<&str>, line, column| Location {
            insn: 7,
            file: file.map(str::to_owned),
            line,
            column,
        };
        let a = r#"{"artifactLocation":{"uri":"sub/a.c","uriBaseId":"%SRCROOT%"}"#;
        assert_eq!(written(&at(None, 3, 2)), "null");
        assert_eq!(written(&at(Some("a.c"), 0, 0)), format!("{a}}}"));
        assert_eq!(
            written(&at(Some("a.c"), 5, 0)),
            format!(r#"{a},"region":{{"startLine":5}}}}"#)
        );
        assert_eq!(
            written(&at(Some("a.c"), 5, 9)),
            format!(r#"{a},"region":{{"startLine":5,"startColumn":9}}}}"#)
        );
    }

    #[test]
    fn a_file_under_the_root_is_relative_to_it_and_others_absolute() {
        let p = paths(&[]);
        let under = |uri: &str| format!(r#"{{"uri":"{uri}","uriBaseId":"%SRCROOT%"}}"#);
        let absolute = |uri: &str| format!(r#"{{"uri":"{uri}"}}"#);
        assert_eq!(located("/src/tree/progs/x.c", &p), under("progs/x.c"));
        assert_eq!(located("./x.c", &p), under("sub/x.c"));
        assert_eq!(located("../a/./b/../x y.c", &p), under("a/x%20y.c"));
        // By name: a sibling whose name starts as the root's is not under it.
        assert_eq!(
            located("/src/treetop/x.c", &p),
            absolute("file:///src/treetop/x.c")
        );
        assert_eq!(
            located("../../../../../etc/x.c", &p),
            absolute("file:///etc/x.c")
        );
        // Without a base, a relative name stays as it is.
        let p = SarifPaths {
            base: PathBuf::new(),
            ..paths(&[])
        };
        assert_eq!(located("bpf/x.c", &p), absolute("bpf/x.c"));
    }

    #[test]
    fn source_map_applies_first() {
        let p = paths(&[("/nowhere/", "/other/"), ("/build/linux/", "/src/tree/")]);
        let under = r#"{"uri":"tools/x.c","uriBaseId":"%SRCROOT%"}"#;
        assert_eq!(located("/build/linux/tools/x.c", &p), under);
        assert_eq!(
            located("/nowhere/x.c", &p),
            r#"{"uri":"file:///other/x.c"}"#
        );
    }

    #[test]
    fn the_fingerprint_ignores_the_line_number_and_the_tree_s_place() {
        // No line number goes in: the same failure moved down a line hashes the same.
        let e = |root: &str, file: &str, text: &str, class| {
            let p = SarifPaths {
                root: PathBuf::from(root),
                ..paths(&[])
            };
            fingerprint(class, Some(file), text, &p)
        };
        let null = "nullable-dereference";
        let here = e("/src/tree", "/src/tree/x.c", "  *p = 1;", null);
        assert_eq!(here.len(), 16);
        assert_eq!(here, e("/src/tree", "/src/tree/x.c", "*p = 1;  ", null));
        assert_eq!(here, e("/elsewhere", "/elsewhere/x.c", "*p = 1;", null));
        assert_ne!(here, e("/src/tree", "/src/tree/x.c", "*q = 1;", null));
        assert_ne!(here, e("/src/tree", "/src/tree/y.c", "*p = 1;", null));
        assert_ne!(
            here,
            e("/src/tree", "/src/tree/x.c", "*p = 1;", "stack-bounds")
        );
    }

    #[test]
    fn a_path_is_percent_encoded_outside_unreserved_characters() {
        assert_eq!(uri(b"/src/a b%#?.c"), "/src/a%20b%25%23%3F.c");
        assert_eq!(uri(b"prog_v1-2~x.c"), "prog_v1-2~x.c");
    }
}
