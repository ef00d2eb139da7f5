//! The explanations of a run as one SARIF 2.1.0 log, for code scanning in CI.
//!
//! SARIF is a document for a whole run, not a line per rejection: the classes that occur are the
//! run's rules (title, requirement, help), each rejected log a result at its failing line, its
//! chain both the result's `relatedLocations` and its one `codeFlow`, origin first. Written
//! through serde from the same [`Explanation`]s as the JSON lines; a test checks the output
//! against the published schema (`tests/fixtures/sarif`).
//!
//! The results are written as the explanations come, none held: the run's `results` come before
//! its `tool`, whose rules are the classes the results named (members of a JSON object are in no
//! order).

use super::{Class, Explanation, Location, Step};
use serde::{Serialize, Serializer};
use std::borrow::Borrow;
use std::cell::RefCell;
use std::io::{self, Write};

/// The published schema of SARIF 2.1.0 (OASIS, errata 01).
const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

#[derive(Serialize)]
#[serde(bound(serialize = "Results<'c, I>: Serialize"))]
struct Log<'c, I> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'c, I>; 1],
}

#[derive(Serialize)]
#[serde(bound(serialize = "Results<'c, I>: Serialize"))]
struct Run<'c, I> {
    results: Results<'c, I>,
    tool: Tool<'c>,
}

/// The results, written as the explanations come from `items` (taken once), each class met
/// added to `classes`.
struct Results<'c, I> {
    items: RefCell<Option<I>>,
    classes: &'c RefCell<Vec<&'static Class>>,
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
            let class = e.borrow().class;
            let rule_index = classes
                .iter()
                .position(|c| c.id == class.id)
                .unwrap_or_else(|| {
                    classes.push(class);
                    classes.len() - 1
                });
            Numbered(e, rule_index)
        }))
    }
}

/// An explanation and the index of its class among the rules.
struct Numbered<E>(E, usize);

impl<E: Borrow<Explanation>> Serialize for Numbered<E> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        result(self.0.borrow(), self.1).serialize(serializer)
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
struct Rule {
    id: &'static str,
    short_description: Message,
    full_description: Message,
    help: Message,
}

#[derive(Serialize)]
struct Message {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'e> {
    rule_id: &'static str,
    rule_index: usize,
    level: &'static str,
    message: Message,
    locations: [SarifLocation; 1],
    related_locations: Vec<SarifLocation>,
    code_flows: [CodeFlow; 1],
    properties: Properties<'e>,
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
    message: Option<Message>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
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
    out: &mut impl Write,
) -> io::Result<()> {
    let classes = RefCell::new(Vec::new());
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            results: Results {
                items: RefCell::new(Some(explanations.into_iter())),
                classes: &classes,
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
    crate::json::write(out, crate::json::Layout::Pretty, &log)?;
    out.write_all(b"\n")
}

/// The rule of a class: its help with the program's names left generic.
fn rule(class: &'static Class) -> Rule {
    let help = class
        .help
        .replace("{reg}", "the register")
        .replace("{origin}", "the value")
        .replace("{narrowed}", "the last check on the path")
        .replace("{range}", "the allowed range")
        .replace("{line}", "the failing line")
        .replace("{hot}", "the lines `bpflog profile` lists");
    Rule {
        id: class.id,
        short_description: text(class.title),
        full_description: text(class.requires),
        help: Message { text: help },
    }
}

fn result(e: &Explanation, rule_index: usize) -> SarifResult<'_> {
    let steps = |with_id: bool| -> Vec<SarifLocation> {
        e.chain
            .iter()
            .enumerate()
            .map(|(i, s)| SarifLocation {
                id: with_id.then_some(i),
                physical_location: physical(&s.location),
                message: Some(Message {
                    text: step_message(s),
                }),
            })
            .collect()
    };
    SarifResult {
        rule_id: e.class.id,
        rule_index,
        level: "error",
        message: text(&e.error),
        locations: [SarifLocation {
            id: None,
            physical_location: physical(&e.location),
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
        properties: Properties { help: &e.help },
    }
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

fn text(s: &str) -> Message {
    Message { text: s.to_owned() }
}

/// The file and line of `l`, when debug info gives a file (a line of 0 gives no region, a
/// column of 0 no column).
fn physical(l: &Location) -> Option<PhysicalLocation> {
    let file = l.file.as_deref()?;
    Some(PhysicalLocation {
        artifact_location: ArtifactLocation { uri: uri(file) },
        region: (l.line > 0).then(|| Region {
            start_line: l.line,
            start_column: (l.column > 0).then_some(l.column),
        }),
    })
}

/// `path` as a URI reference: its bytes outside RFC 3986's unreserved characters and `/`
/// percent-encoded (a space, `%`, `#` or `?` in a file name stay part of the path).
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
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
    use super::{Location, physical, uri};

    /// The place of `l` as written.
    fn written(l: &Location) -> String {
        serde_json::to_string(&physical(l)).unwrap()
    }

    #[test]
    fn parts_debug_info_does_not_give_are_left_out() {
        let at = |file: Option<&str>, line, column| Location {
            insn: 7,
            file: file.map(str::to_owned),
            line,
            column,
        };
        assert_eq!(written(&at(None, 3, 2)), "null");
        assert_eq!(
            written(&at(Some("a.c"), 0, 0)),
            r#"{"artifactLocation":{"uri":"a.c"}}"#
        );
        assert_eq!(
            written(&at(Some("a.c"), 5, 0)),
            r#"{"artifactLocation":{"uri":"a.c"},"region":{"startLine":5}}"#
        );
        assert_eq!(
            written(&at(Some("a.c"), 5, 9)),
            r#"{"artifactLocation":{"uri":"a.c"},"region":{"startLine":5,"startColumn":9}}"#
        );
    }

    #[test]
    fn a_path_is_percent_encoded_outside_unreserved_characters() {
        assert_eq!(uri("/src/a b%#?.c"), "/src/a%20b%25%23%3F.c");
        assert_eq!(uri("prog_v1-2~x.c"), "prog_v1-2~x.c");
    }
}
