//! Two profiles side by side: which lines and functions gained or lost verification work.
//!
//! Lines are matched by file name and line number, functions by name. A line or function only
//! one profile has counts zero in the other.

use super::{Counts, FunctionKind, Profile};
use std::collections::HashMap;

/// Counts before and after.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// In the old profile.
    pub old: Counts,
    /// In the new profile.
    pub new: Counts,
}

impl Change {
    /// New visits minus old visits.
    pub fn visits(&self) -> i64 {
        delta(self.old.visits, self.new.visits)
    }

    /// New distinct instructions minus old.
    pub fn insns(&self) -> i64 {
        delta(self.old.insns, self.new.insns)
    }

    /// New path entries minus old.
    pub fn paths(&self) -> i64 {
        delta(self.old.paths, self.new.paths)
    }

    /// Whether nothing changed.
    pub(crate) fn is_zero(&self) -> bool {
        self.old == self.new
    }

    /// The order of changes: largest absolute change of visits first, then of instructions and
    /// of paths.
    fn magnitude(&self) -> (u64, u64, u64) {
        (
            self.visits().unsigned_abs(),
            self.insns().unsigned_abs(),
            self.paths().unsigned_abs(),
        )
    }
}

/// `new - old`, saturated.
pub(crate) fn delta(old: u64, new: u64) -> i64 {
    let d = i128::from(new) - i128::from(old);
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// A source line in either profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineChange {
    /// The file as the line records name it.
    pub file: String,
    /// Line number.
    pub line: u32,
    /// The source text (the new profile's when it has the line).
    pub source: String,
    /// Its counts before and after.
    pub change: Change,
}

/// A function in either profile.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FunctionChange {
    /// Its name.
    pub name: String,
    /// What it is (in the new profile when it is there).
    pub kind: FunctionKind,
    /// Its counts before and after.
    pub change: Change,
}

/// Two profiles compared.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Comparison {
    /// The old profile.
    pub old: Profile,
    /// The new profile.
    pub new: Profile,
    /// Every line of either, largest change first (then by file and line).
    pub lines: Vec<LineChange>,
    /// Every function of either, largest change first (then by name).
    pub functions: Vec<FunctionChange>,
}

/// Compares profile `old` with profile `new`.
pub fn compare(old: Profile, new: Profile) -> Comparison {
    let mut lines: Vec<LineChange> = Vec::new();
    let mut line_at: HashMap<(String, u32), usize> = HashMap::new();
    for (is_new, profile) in [(false, &old), (true, &new)] {
        for l in &profile.lines {
            let at = *line_at.entry((l.file.clone(), l.line)).or_insert_with(|| {
                lines.push(LineChange {
                    file: l.file.clone(),
                    line: l.line,
                    source: l.source.clone(),
                    change: Change::default(),
                });
                lines.len() - 1
            });
            let c = &mut lines[at];
            if is_new {
                c.change.new = l.counts;
                if !l.source.is_empty() {
                    c.source.clone_from(&l.source);
                }
            } else {
                c.change.old = l.counts;
            }
        }
    }
    let mut functions: Vec<FunctionChange> = Vec::new();
    let mut function_at: HashMap<String, usize> = HashMap::new();
    for (is_new, profile) in [(false, &old), (true, &new)] {
        for f in &profile.functions {
            let at = *function_at.entry(f.name.clone()).or_insert_with(|| {
                functions.push(FunctionChange {
                    name: f.name.clone(),
                    kind: f.kind,
                    change: Change::default(),
                });
                functions.len() - 1
            });
            let c = &mut functions[at];
            if is_new {
                c.change.new = f.counts;
                c.kind = f.kind;
            } else {
                c.change.old = f.counts;
            }
        }
    }
    lines.sort_by(|a, b| {
        (b.change.magnitude(), &a.file, a.line).cmp(&(a.change.magnitude(), &b.file, b.line))
    });
    functions.sort_by(|a, b| (b.change.magnitude(), &a.name).cmp(&(a.change.magnitude(), &b.name)));
    Comparison {
        old,
        new,
        lines,
        functions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{FunctionProfile, LineProfile, Summary, Totals};

    fn profile(lines: &[(u32, u64)], functions: &[(&str, u64)]) -> Profile {
        Profile {
            program: "p".into(),
            summary: Summary::default(),
            totals: Totals::default(),
            lines: lines
                .iter()
                .map(|&(line, visits)| LineProfile {
                    file: "a.c".into(),
                    line,
                    source: format!("line {line}"),
                    counts: Counts {
                        visits,
                        insns: 1,
                        paths: 0,
                    },
                })
                .collect(),
            functions: functions
                .iter()
                .map(|&(name, visits)| FunctionProfile {
                    name: name.into(),
                    kind: FunctionKind::Entry,
                    counts: Counts {
                        visits,
                        insns: 1,
                        paths: 0,
                    },
                })
                .collect(),
        }
    }

    #[test]
    fn largest_absolute_change_first_lines_of_either_side() {
        let c = compare(
            profile(&[(1, 10), (2, 5), (3, 7)], &[("f", 22), ("g", 1)]),
            profile(&[(1, 12), (2, 50), (4, 9)], &[("f", 71)]),
        );
        let order: Vec<(u32, i64)> = c
            .lines
            .iter()
            .map(|l| (l.line, l.change.visits()))
            .collect();
        assert_eq!(order, [(2, 45), (4, 9), (3, -7), (1, 2)]);
        assert_eq!(c.lines[1].change.old, Counts::default());
        assert_eq!(c.lines[2].change.new, Counts::default());
        let order: Vec<(&str, i64)> = c
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.change.visits()))
            .collect();
        assert_eq!(order, [("f", 49), ("g", -1)]);
        assert_eq!(delta(u64::MAX, 0), i64::MIN);
    }
}
