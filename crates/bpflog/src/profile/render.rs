//! Printing profiles: tables for people, CSV and JSON for programs, the source with a gutter.
//!
//! Source texts, file and function names come from the object: the table, CSV and source view
//! show their control bytes escaped ([`escape_controls`](crate::escape_controls)); JSON escapes
//! them by its own rules ([`crate::json`]: serde, with bpflog's escapes and layout).
//!
//! Colors come in as a [`Palette`]: the shares of all visits decide the heat of a line, as in
//! `perf annotate`: at least 5% is hot (the palette's error style), at least 0.5% warm (its
//! function style).

use super::compare::{Change, Comparison, delta};
use super::{Counts, LineProfile, Profile, Summary, Totals};
use crate::escape::escape_controls_str as shown;
use crate::json::{self, JsonLayout};
use crate::source::SourceFiles;
use crate::style::write_shown;
use crate::style::{Palette, write_styled};
use owo_colors::Style;
use serde::Serialize;
use std::collections::HashMap;
use std::io::{self, Write};

/// Output format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Aligned columns: the summary, the hottest lines, the hottest functions.
    #[default]
    Table,
    /// Comma-separated values (RFC 4180 quoting): one row per line and per function.
    Csv,
    /// One JSON object (its schema: `docs/profile.md`).
    Json,
}

/// How to print a profile: [`RenderOptions::default`], then a method per field that differs.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Output format.
    pub format: Format,
    /// Rows of each table in [`Format::Table`] (CSV and JSON have every row).
    pub top: usize,
    /// Colors for [`Format::Table`] and the source view; CSV and JSON are never colored.
    pub palette: Palette,
}

setters!(RenderOptions {
    format: Format,
    top: usize,
    palette: Palette,
});

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            format: Format::Table,
            top: 10,
            palette: Palette::default(),
        }
    }
}

/// Writes `profile` in the chosen format.
pub fn render(profile: &Profile, out: &mut impl Write, options: &RenderOptions) -> io::Result<()> {
    match options.format {
        Format::Table => table(profile, out, options),
        Format::Csv => csv(profile, out),
        Format::Json => json(profile, out),
    }
}

/// Writes a comparison in the chosen format.
pub fn render_comparison(
    comparison: &Comparison,
    out: &mut impl Write,
    options: &RenderOptions,
) -> io::Result<()> {
    match options.format {
        Format::Table => compare_table(comparison, out, options),
        Format::Csv => compare_csv(comparison, out),
        Format::Json => compare_json(comparison, out),
    }
}

/// How hot a share of all visits is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Heat {
    Cold,
    Warm,
    Hot,
}

impl Heat {
    /// `visits` out of `total`: hot from 5%, warm from 0.5%.
    fn of(visits: u64, total: u64) -> Heat {
        if visits == 0 || total == 0 {
            return Heat::Cold;
        }
        let per_mille = u128::from(visits) * 1000 / u128::from(total);
        if per_mille >= 50 {
            Heat::Hot
        } else if per_mille >= 5 {
            Heat::Warm
        } else {
            Heat::Cold
        }
    }

    fn style(self, p: &Palette) -> Style {
        match self {
            Heat::Hot => p.error,
            Heat::Warm => p.function,
            Heat::Cold => Style::new(),
        }
    }
}

/// The style of `visits` out of `total`.
fn heat(p: &Palette, visits: u64, total: u64) -> Style {
    Heat::of(visits, total).style(p)
}

/// One table cell.
struct TableCell {
    text: String,
    style: Style,
}

fn cell(text: impl Into<String>, style: Style) -> TableCell {
    TableCell {
        text: text.into(),
        style,
    }
}

/// Writes rows under a header; numeric columns (the first `numeric`) are right-aligned, the
/// last column is not padded.
fn write_table(
    out: &mut impl Write,
    p: &Palette,
    header: &[&str],
    numeric: usize,
    rows: &[Vec<TableCell>],
) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.text.chars().count());
        }
    }
    let line = |out: &mut dyn Write, cells: &[(&str, Style)]| -> io::Result<()> {
        for (i, ((text, style), w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                out.write_all(b"  ")?;
            }
            let pad = w.saturating_sub(text.chars().count());
            let last = i + 1 == cells.len();
            if i < numeric {
                write!(out, "{:pad$}", "")?;
            }
            write_styled(out, *style, text.as_bytes())?;
            if i >= numeric && !last {
                write!(out, "{:pad$}", "")?;
            }
        }
        out.write_all(b"\n")
    };
    let head: Vec<(&str, Style)> = header.iter().map(|h| (*h, p.punct)).collect();
    line(out, &head)?;
    for row in rows {
        let cells: Vec<(&str, Style)> = row.iter().map(|c| (c.text.as_str(), c.style)).collect();
        line(out, &cells)?;
    }
    Ok(())
}

/// `name  value` rows of the summary, names padded.
fn write_fields(
    out: &mut impl Write,
    p: &Palette,
    fields: &[(&str, Vec<TableCell>)],
) -> io::Result<()> {
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, values) in fields {
        write_styled(out, p.punct, format!("{key:width$}").as_bytes())?;
        for v in values {
            out.write_all(b"  ")?;
            write_styled(out, v.style, v.text.as_bytes())?;
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// The summary's statistics in veristat's names, `None` when the log does not carry them.
fn stats(s: &Summary) -> [(&'static str, Option<u64>); 8] {
    [
        ("insns", s.insns),
        ("insns_limit", s.insns_limit),
        ("max_states_per_insn", s.max_states_per_insn),
        ("total_states", s.total_states),
        ("peak_states", s.peak_states),
        ("mark_read", s.mark_read),
        ("duration", s.duration),
        ("stack_depth", s.stack_depth()),
    ]
}

fn depths_text(s: &Summary) -> Option<String> {
    s.stack_depths
        .as_ref()
        .map(|d| d.iter().map(u64::to_string).collect::<Vec<_>>().join("+"))
}

fn summary_fields<'a>(profile: &'a Profile, p: &Palette) -> Vec<(&'a str, Vec<TableCell>)> {
    let s = &profile.summary;
    let mut fields = vec![
        ("program", vec![cell(shown(&profile.program), p.function)]),
        (
            "verdict",
            vec![cell(
                s.verdict.as_str(),
                if s.error.is_empty() {
                    Style::new()
                } else {
                    p.error
                },
            )],
        ),
    ];
    for line in &s.error {
        // From the log: shown safely too.
        fields.push(("error", vec![cell(shown(line), p.error)]));
    }
    for (name, value) in stats(s) {
        let Some(value) = value else { continue };
        let text = match name {
            "duration" => format!("{value} us"),
            "stack_depth" => match depths_text(s) {
                Some(d) if s.stack_depths.as_ref().is_some_and(|d| d.len() > 1) => {
                    format!("{value} ({d})")
                }
                _ => value.to_string(),
            },
            _ => value.to_string(),
        };
        fields.push((name, vec![cell(text, Style::new())]));
    }
    let t = profile.totals;
    fields.push((
        "log",
        vec![cell(
            format!(
                "{} instruction lines, {} paths, {} unattributed",
                t.insn_lines, t.paths, t.unattributed
            ),
            Style::new(),
        )],
    ));
    fields
}

fn location(l: &LineProfile) -> String {
    format!("{}:{}", l.basename(), l.line)
}

fn table(profile: &Profile, out: &mut impl Write, options: &RenderOptions) -> io::Result<()> {
    let p = &options.palette;
    write_fields(out, p, &summary_fields(profile, p))?;
    let total = profile.totals.insn_lines;
    let rows: Vec<Vec<TableCell>> = profile
        .lines
        .iter()
        .filter(|l| l.counts.visits > 0)
        .take(options.top)
        .map(|l| {
            vec![
                cell(l.counts.visits.to_string(), heat(p, l.counts.visits, total)),
                cell(l.counts.insns.to_string(), Style::new()),
                cell(l.counts.paths.to_string(), Style::new()),
                cell(shown(&location(l)), p.location),
                cell(shown(&l.source), p.source),
            ]
        })
        .collect();
    out.write_all(b"\n")?;
    write_table(
        out,
        p,
        &["visits", "insns", "paths", "file:line", "source"],
        3,
        &rows,
    )?;
    let rows: Vec<Vec<TableCell>> = profile
        .functions
        .iter()
        .take(options.top)
        .map(|f| {
            vec![
                cell(f.counts.visits.to_string(), heat(p, f.counts.visits, total)),
                cell(f.counts.insns.to_string(), Style::new()),
                cell(f.counts.paths.to_string(), Style::new()),
                cell(f.kind.as_str(), Style::new()),
                cell(shown(&f.name), p.function),
            ]
        })
        .collect();
    out.write_all(b"\n")?;
    write_table(
        out,
        p,
        &["visits", "insns", "paths", "kind", "function"],
        3,
        &rows,
    )
}

/// A CSV field, quoted when it must be (RFC 4180).
fn csv_field(out: &mut (impl Write + ?Sized), field: &str) -> io::Result<()> {
    if field.contains([',', '"', '\n', '\r']) {
        write!(out, "\"{}\"", field.replace('"', "\"\""))
    } else {
        out.write_all(field.as_bytes())
    }
}

fn csv_row(out: &mut (impl Write + ?Sized), fields: &[&str]) -> io::Result<()> {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        csv_field(out, f)?;
    }
    out.write_all(b"\n")
}

fn csv(profile: &Profile, out: &mut impl Write) -> io::Result<()> {
    csv_row(
        out,
        &[
            "kind", "name", "file", "line", "visits", "insns", "paths", "source",
        ],
    )?;
    for l in &profile.lines {
        let c = l.counts;
        csv_row(
            out,
            &[
                "line",
                "",
                &shown(&l.file),
                &l.line.to_string(),
                &c.visits.to_string(),
                &c.insns.to_string(),
                &c.paths.to_string(),
                &shown(&l.source),
            ],
        )?;
    }
    for f in &profile.functions {
        let c = f.counts;
        csv_row(
            out,
            &[
                f.kind.as_str(),
                &shown(&f.name),
                "",
                "",
                &c.visits.to_string(),
                &c.insns.to_string(),
                &c.paths.to_string(),
                "",
            ],
        )?;
    }
    Ok(())
}

/// The JSON of a profile or a comparison (`--format json`, schema in `docs/profile.md`): what
/// describes it (`head`), then its lines and functions, one to a line.
#[derive(Serialize)]
struct Document<'a, H, C> {
    #[serde(flatten)]
    head: H,
    lines: Vec<LineJson<'a, C>>,
    functions: Vec<FunctionJson<'a, C>>,
}

/// A source line's row, with its counts (`C`: of a profile, or of a comparison).
#[derive(Serialize)]
struct LineJson<'a, C> {
    file: &'a str,
    line: u32,
    #[serde(flatten)]
    counts: C,
    source: &'a str,
}

/// A function's row, with its counts (`C`: of a profile, or of a comparison).
#[derive(Serialize)]
struct FunctionJson<'a, C> {
    name: &'a str,
    kind: &'a str,
    #[serde(flatten)]
    counts: C,
}

/// What describes a profile as a whole.
#[derive(Serialize)]
struct Head<'a> {
    program: &'a str,
    summary: SummaryJson<'a>,
    totals: TotalsJson,
}

impl<'a> From<&'a Profile> for Head<'a> {
    fn from(p: &'a Profile) -> Self {
        Head {
            program: &p.program,
            summary: (&p.summary).into(),
            totals: (&p.totals).into(),
        }
    }
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    verdict: &'a str,
    error: &'a [String],
    insns: Option<u64>,
    insns_limit: Option<u64>,
    max_states_per_insn: Option<u64>,
    total_states: Option<u64>,
    peak_states: Option<u64>,
    mark_read: Option<u64>,
    duration: Option<u64>,
    stack_depth: Option<u64>,
    stack_depths: Option<&'a [u64]>,
}

impl<'a> From<&'a Summary> for SummaryJson<'a> {
    fn from(s: &'a Summary) -> Self {
        SummaryJson {
            verdict: s.verdict.as_str(),
            error: &s.error,
            insns: s.insns,
            insns_limit: s.insns_limit,
            max_states_per_insn: s.max_states_per_insn,
            total_states: s.total_states,
            peak_states: s.peak_states,
            mark_read: s.mark_read,
            duration: s.duration,
            stack_depth: s.stack_depth(),
            stack_depths: s.stack_depths.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct TotalsJson {
    insn_lines: u64,
    paths: u64,
    unattributed: u64,
}

impl From<&Totals> for TotalsJson {
    fn from(t: &Totals) -> Self {
        TotalsJson {
            insn_lines: t.insn_lines,
            paths: t.paths,
            unattributed: t.unattributed,
        }
    }
}

#[derive(Serialize)]
struct CountsJson {
    visits: u64,
    insns: u64,
    paths: u64,
}

impl From<&Counts> for CountsJson {
    fn from(c: &Counts) -> Self {
        CountsJson {
            visits: c.visits,
            insns: c.insns,
            paths: c.paths,
        }
    }
}

/// Writes a document and its newline.
fn write_document<H: Serialize, C: Serialize>(
    out: &mut impl Write,
    doc: &Document<'_, H, C>,
) -> io::Result<()> {
    json::write(out, JsonLayout::Rows, doc)?;
    out.write_all(b"\n")
}

fn json(profile: &Profile, out: &mut impl Write) -> io::Result<()> {
    write_document(
        out,
        &Document {
            head: Head::from(profile),
            lines: profile
                .lines
                .iter()
                .map(|l| LineJson {
                    file: &l.file,
                    line: l.line,
                    counts: CountsJson::from(&l.counts),
                    source: &l.source,
                })
                .collect(),
            functions: profile
                .functions
                .iter()
                .map(|f| FunctionJson {
                    name: &f.name,
                    kind: f.kind.as_str(),
                    counts: CountsJson::from(&f.counts),
                })
                .collect(),
        },
    )
}

fn signed(d: i64) -> String {
    if d > 0 {
        format!("+{d}")
    } else {
        d.to_string()
    }
}

/// The change's style: more work red, less work green.
fn change_style(p: &Palette, d: i64) -> Style {
    match d.signum() {
        1 => p.error,
        -1 => p.source,
        _ => Style::new(),
    }
}

fn compare_table(c: &Comparison, out: &mut impl Write, options: &RenderOptions) -> io::Result<()> {
    let p = &options.palette;
    let (old, new) = (&c.old.summary, &c.new.summary);
    let mut rows = vec![
        vec![
            cell("program", p.punct),
            cell(shown(&c.old.program), p.function),
            cell(shown(&c.new.program), p.function),
            cell("", Style::new()),
        ],
        vec![
            cell("verdict", p.punct),
            cell(old.verdict.as_str(), Style::new()),
            cell(new.verdict.as_str(), Style::new()),
            cell("", Style::new()),
        ],
    ];
    let totals = |t: &Totals| Some(t.insn_lines);
    let pairs = stats(old)
        .into_iter()
        .zip(stats(new))
        .map(|((name, a), (_, b))| (name, a, b))
        .chain([("insn_lines", totals(&c.old.totals), totals(&c.new.totals))]);
    for (name, a, b) in pairs {
        if a.is_none() && b.is_none() {
            continue;
        }
        let d = a.zip(b).map(|(a, b)| delta(a, b));
        rows.push(vec![
            cell(name, p.punct),
            cell(opt(a), Style::new()),
            cell(opt(b), Style::new()),
            d.map_or_else(
                || cell("", Style::new()),
                |d| cell(signed(d), change_style(p, d)),
            ),
        ]);
    }
    write_table(out, p, &["", "old", "new", "delta"], 0, &rows)?;

    let changed = |ch: &Change| !ch.is_zero();
    let change_cells = |ch: &Change| {
        vec![
            cell(ch.old.visits.to_string(), Style::new()),
            cell(ch.new.visits.to_string(), Style::new()),
            cell(signed(ch.visits()), change_style(p, ch.visits())),
            cell(signed(ch.insns()), Style::new()),
            cell(signed(ch.paths()), Style::new()),
        ]
    };
    let rows: Vec<Vec<TableCell>> = c
        .lines
        .iter()
        .filter(|l| changed(&l.change))
        .take(options.top)
        .map(|l| {
            let mut row = change_cells(&l.change);
            let base = l.file.rsplit('/').next().unwrap_or(&l.file);
            row.push(cell(shown(&format!("{base}:{}", l.line)), p.location));
            row.push(cell(shown(&l.source), p.source));
            row
        })
        .collect();
    out.write_all(b"\n")?;
    write_table(
        out,
        p,
        &[
            "old",
            "new",
            "delta",
            "insns",
            "paths",
            "file:line",
            "source",
        ],
        5,
        &rows,
    )?;
    let rows: Vec<Vec<TableCell>> = c
        .functions
        .iter()
        .filter(|f| changed(&f.change))
        .take(options.top)
        .map(|f| {
            let mut row = change_cells(&f.change);
            row.push(cell(f.kind.as_str(), Style::new()));
            row.push(cell(shown(&f.name), p.function));
            row
        })
        .collect();
    out.write_all(b"\n")?;
    write_table(
        out,
        p,
        &["old", "new", "delta", "insns", "paths", "kind", "function"],
        5,
        &rows,
    )
}

fn change_fields(ch: &Change) -> [String; 9] {
    let (o, n) = (ch.old, ch.new);
    [
        o.visits.to_string(),
        n.visits.to_string(),
        ch.visits().to_string(),
        o.insns.to_string(),
        n.insns.to_string(),
        ch.insns().to_string(),
        o.paths.to_string(),
        n.paths.to_string(),
        ch.paths().to_string(),
    ]
}

fn compare_csv(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    csv_row(
        out,
        &[
            "kind",
            "name",
            "file",
            "line",
            "old_visits",
            "new_visits",
            "delta_visits",
            "old_insns",
            "new_insns",
            "delta_insns",
            "old_paths",
            "new_paths",
            "delta_paths",
            "source",
        ],
    )?;
    for l in &c.lines {
        let line = l.line.to_string();
        let f = change_fields(&l.change);
        let (file, source) = (shown(&l.file), shown(&l.source));
        let mut row: Vec<&str> = vec!["line", "", &file, &line];
        row.extend(f.iter().map(String::as_str));
        row.push(&source);
        csv_row(out, &row)?;
    }
    for func in &c.functions {
        let f = change_fields(&func.change);
        let name = shown(&func.name);
        let mut row: Vec<&str> = vec![func.kind.as_str(), &name, "", ""];
        row.extend(f.iter().map(String::as_str));
        row.push("");
        csv_row(out, &row)?;
    }
    Ok(())
}

/// What describes a comparison: the two profiles as wholes.
#[derive(Serialize)]
struct Sides<'a> {
    old: Head<'a>,
    new: Head<'a>,
}

/// Counts before and after, and the change.
#[derive(Serialize)]
struct ChangeJson {
    old: CountsJson,
    new: CountsJson,
    delta: DeltaJson,
}

#[derive(Serialize)]
struct DeltaJson {
    visits: i64,
    insns: i64,
    paths: i64,
}

impl From<&Change> for ChangeJson {
    fn from(ch: &Change) -> Self {
        ChangeJson {
            old: (&ch.old).into(),
            new: (&ch.new).into(),
            delta: DeltaJson {
                visits: ch.visits(),
                insns: ch.insns(),
                paths: ch.paths(),
            },
        }
    }
}

fn compare_json(c: &Comparison, out: &mut impl Write) -> io::Result<()> {
    write_document(
        out,
        &Document {
            head: Sides {
                old: Head::from(&c.old),
                new: Head::from(&c.new),
            },
            lines: c
                .lines
                .iter()
                .map(|l| LineJson {
                    file: &l.file,
                    line: l.line,
                    counts: ChangeJson::from(&l.change),
                    source: &l.source,
                })
                .collect(),
            functions: c
                .functions
                .iter()
                .map(|f| FunctionJson {
                    name: &f.name,
                    kind: f.kind.as_str(),
                    counts: ChangeJson::from(&f.change),
                })
                .collect(),
        },
    )
}

/// Writes each source file of the profile whole, with a gutter of visits per line; hot lines
/// are highlighted. Files are ordered by their visits (most first). A file that cannot be found
/// is listed by the lines the line table has, with their BTF texts.
pub fn render_source(
    profile: &Profile,
    files: &mut SourceFiles,
    out: &mut impl Write,
    options: &RenderOptions,
) -> io::Result<()> {
    let p = &options.palette;
    let total = profile.totals.insn_lines;
    let mut by_file: Vec<(&str, Vec<&LineProfile>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for l in &profile.lines {
        let i = *at.entry(&l.file).or_insert_with(|| {
            by_file.push((&l.file, Vec::new()));
            by_file.len() - 1
        });
        by_file[i].1.push(l);
    }
    let visits = |lines: &[&LineProfile]| lines.iter().map(|l| l.counts.visits).sum::<u64>();
    by_file.sort_by(|a, b| (visits(&b.1), a.0).cmp(&(visits(&a.1), b.0)));
    for (n, (file, mut lines)) in by_file.into_iter().enumerate() {
        if n > 0 {
            out.write_all(b"\n")?;
        }
        lines.sort_by_key(|l| l.line);
        let source = files.get(file.as_bytes());
        let width = lines
            .iter()
            .map(|l| l.counts.visits.to_string().len())
            .max()
            .unwrap_or(1)
            .max(6);
        write_styled(out, p.punct, b"==> ")?;
        write_shown(out, p.location, file.as_bytes())?;
        let note = if source.is_some() {
            format!(": {} visits <==", visits(&lines))
        } else {
            format!(
                ": {} visits (file not found: lines from BTF) <==",
                visits(&lines)
            )
        };
        write_styled(out, p.punct, note.as_bytes())?;
        out.write_all(b"\n")?;
        let last = match &source {
            Some(f) => f.line_count(),
            None => lines.last().map_or(0, |l| l.line),
        };
        let line_width = last.to_string().len();
        let gutter = |out: &mut dyn Write, k: u32, l: Option<&LineProfile>| {
            let (count, heat) = match l {
                Some(l) => (
                    l.counts.visits.to_string(),
                    Heat::of(l.counts.visits, total),
                ),
                None => (String::new(), Heat::Cold),
            };
            write!(out, "{:pad$}", "", pad = width.saturating_sub(count.len()))?;
            write_styled(out, heat.style(p), count.as_bytes())?;
            write_styled(out, p.punct, format!(" {k:>line_width$} | ").as_bytes())?;
            Ok::<_, io::Error>(heat)
        };
        match &source {
            Some(f) => {
                let mut next = lines.iter().peekable();
                for k in 1..=f.line_count() {
                    while next.next_if(|l| l.line < k).is_some() {}
                    let l = next.next_if(|l| l.line == k).copied();
                    let heat = gutter(out, k, l)?;
                    let text = f.line(k).unwrap_or_default();
                    let text_style = match (l, heat) {
                        (None, _) => p.context,
                        (Some(_), Heat::Hot) => p.error,
                        (Some(_), _) => Style::new(),
                    };
                    write_shown(out, text_style, text)?;
                    out.write_all(b"\n")?;
                }
            }
            None => {
                for l in &lines {
                    let heat = gutter(out, l.line, Some(l))?;
                    let text_style = if heat == Heat::Hot {
                        p.error
                    } else {
                        Style::new()
                    };
                    write_shown(out, text_style, l.source.as_bytes())?;
                    out.write_all(b"\n")?;
                }
            }
        }
    }
    Ok(())
}
