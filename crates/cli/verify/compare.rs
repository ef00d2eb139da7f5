//! `verify --compare BASE NEW`: what changed between two runs' tables, as `veristat -C` shows
//! it, and an exit status a CI job can act on.
//!
//! Both files are CSV as `verify -o csv` or `veristat -o csv` write them (veristat's column
//! names; other columns are ignored). Programs are matched by file and program name; each
//! statistic gets its value in BASE (A), in NEW (B), their difference and the difference in
//! percent of A. Rows come sorted by the largest change in instructions processed, then in
//! states. With `--fail-on PCT`, a program whose instructions or states grew by more than PCT
//! percent, or that the kernel accepted in BASE and rejected in NEW, makes the exit status 3.

use super::{TableFormat, VerifyArgs};
use crate::files::{self, InputFile, Output};
use crate::{Failure, IO_BUFFER, use_color};
use bpflog::object::BpfObject;
use bpflog::profile::RenderOptions;
use bpflog::{Palette, Program};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The statistics compared: veristat's header, CSV name and whether growth is a regression
/// `--fail-on` looks at.
const STATS: [(&str, &str, bool); 4] = [
    ("Duration (us)", "duration", false),
    ("Insns", "total_insns", true),
    ("States", "total_states", true),
    ("Peak states", "peak_states", false),
];

/// One program of one table.
#[derive(Debug, Clone)]
struct TableEntry {
    accepted: bool,
    stats: [u64; STATS.len()],
}

/// A program of either table.
#[derive(Debug)]
struct Compared {
    file: String,
    prog: String,
    base: Option<TableEntry>,
    new: Option<TableEntry>,
}

impl Compared {
    /// New minus base of statistic `k`, when both tables have the program.
    fn diff(&self, k: usize) -> Option<i128> {
        let (a, b) = (self.base.as_ref()?, self.new.as_ref()?);
        Some(i128::from(b.stats[k]) - i128::from(a.stats[k]))
    }

    /// The difference of statistic `k` in percent of its base value.
    fn percent(&self, k: usize) -> Option<f64> {
        let a = self.base.as_ref()?.stats[k];
        let diff = self.diff(k)?;
        Some(if a == 0 {
            if diff == 0 { 0.0 } else { f64::INFINITY }
        } else {
            diff as f64 * 100.0 / a as f64
        })
    }

    /// Whether the program got worse beyond `limit` percent (or was rejected in NEW only).
    fn regressed(&self, limit: f64) -> bool {
        let newly_rejected =
            matches!((&self.base, &self.new), (Some(a), Some(b)) if a.accepted && !b.accepted);
        newly_rejected
            || STATS.iter().enumerate().any(|(k, (_, _, watched))| {
                *watched
                    && self.diff(k).is_some_and(|d| d > 0)
                    && self.percent(k).is_some_and(|p| p > limit)
            })
    }
}

/// The bytes the CSV reader reads ahead of what it has parsed, at most.
const CSV_BUFFER: usize = 8 << 10;

/// Why a table was refused on the way: too large, or a row too long.
#[derive(Debug)]
enum Over {
    Table(u64),
    Row(u64),
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Over::Table(limit) => f.write_str(&crate::limits::TABLE.exceeded(*limit)),
            Over::Row(limit) => f.write_str(&crate::limits::TABLE_ROW.exceeded(*limit)),
        }
    }
}

impl std::error::Error for Over {}

/// A table's bytes as the CSV reader takes them: at most `table` bytes, and no more than `row`
/// bytes (and what the reader reads ahead) past `row_start`, where the row being read began.
/// What the reader holds of a row stays bounded however long the row is (`/dev/zero`).
struct Bounded<R> {
    inner: R,
    read: u64,
    row_start: std::rc::Rc<std::cell::Cell<u64>>,
    table: u64,
    row: u64,
}

impl<R: io::Read> io::Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.table {
            return Err(io::Error::other(Over::Table(self.table)));
        }
        if self.read - self.row_start.get() > self.row + CSV_BUFFER as u64 {
            return Err(io::Error::other(Over::Row(self.row)));
        }
        Ok(n)
    }
}

/// What to say of a CSV error at `line` (0: not known): a bound passed, or what csv says.
fn csv_error(path: &Path, line: u64, e: csv::Error) -> Failure {
    let over = match e.kind() {
        csv::ErrorKind::Io(io) => io.get_ref().and_then(|e| e.downcast_ref::<Over>()),
        _ => None,
    };
    match over {
        Some(over @ Over::Row(_)) => Failure::at(path, format_args!("line {line}: {over}")),
        Some(over) => Failure::at(path, over),
        None => Failure::at(path, e),
    }
}

/// Reads one table: programs by (file, program). The table, its rows and each row are bounded
/// ([`limits::TABLE`](crate::limits::TABLE), [`limits::TABLE_ROWS`](crate::limits::TABLE_ROWS),
/// [`limits::TABLE_ROW`](crate::limits::TABLE_ROW)).
fn read(path: &Path) -> Result<BTreeMap<(String, String), TableEntry>, Failure> {
    use crate::limits::{TABLE, TABLE_ROW, TABLE_ROWS};
    let (table, row, rows) = (TABLE.get()?, TABLE_ROW.get()?, TABLE_ROWS.get()?);
    let file = std::fs::File::open(path).map_err(|e| Failure::at(path, e))?;
    let meta = file.metadata().map_err(|e| Failure::at(path, e))?;
    if meta.is_file() && meta.len() > table {
        return Err(Failure::at(path, Over::Table(table)));
    }
    let row_start = std::rc::Rc::new(std::cell::Cell::new(0));
    let bounded = Bounded {
        inner: file,
        read: 0,
        row_start: row_start.clone(),
        table,
        row,
    };
    let mut reader = csv::ReaderBuilder::new()
        .buffer_capacity(CSV_BUFFER)
        .from_reader(bounded);
    // The row read last: a row a little past the bound may fit what the reader takes.
    let ended = |reader: &csv::Reader<_>, line: u64| -> Result<(), Failure> {
        let at = reader.position().byte();
        if at - row_start.get() > row {
            return Err(Failure::at(
                path,
                format_args!("line {line}: {}", Over::Row(row)),
            ));
        }
        row_start.set(at);
        Ok(())
    };
    let headers = reader.headers().map_err(|e| csv_error(path, 1, e))?.clone();
    ended(&reader, 1)?;
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| {
                Failure::at(
                    path,
                    format!("no column {name} (not a verify or veristat CSV)"),
                )
            })
    };
    let file = column("file_name")?;
    let prog = column("prog_name")?;
    let verdict = column("verdict")?;
    let stats: Vec<usize> = STATS
        .iter()
        .map(|(_, name, _)| column(name))
        .collect::<Result<_, _>>()?;
    let mut entries = BTreeMap::new();
    let mut record = csv::StringRecord::new();
    loop {
        let line = reader.position().line();
        match reader.read_record(&mut record) {
            Ok(true) => ended(&reader, line)?,
            Ok(false) => break,
            Err(e) => return Err(csv_error(path, line, e)),
        }
        if reader.position().record() > rows + 1 {
            return Err(Failure::at(path, TABLE_ROWS.exceeded(rows)));
        }

        let line = record.position().map_or(line, |p| p.line());
        let field = |k: usize| record.get(k).unwrap_or_default().trim();
        let accepted = match field(verdict) {
            "success" => true,
            "failure" => false,
            other => {
                return Err(Failure::at(
                    path,
                    format!(
                        "line {line}: verdict '{}' is neither success nor failure",
                        escape(other)
                    ),
                ));
            }
        };
        let mut values = [0u64; STATS.len()];
        for (slot, (&k, (_, name, _))) in values.iter_mut().zip(stats.iter().zip(STATS)) {
            *slot = field(k).parse().map_err(|_| {
                Failure::at(
                    path,
                    format!("line {line}: {name} '{}' is not a count", escape(field(k))),
                )
            })?;
        }
        entries.insert(
            (field(file).to_owned(), field(prog).to_owned()),
            TableEntry {
                accepted,
                stats: values,
            },
        );
    }
    Ok(entries)
}

/// A value from the file, cut and with terminal controls escaped, for a message.
fn escape(text: &str) -> String {
    bpflog::object::excerpt(text.as_bytes())
}

/// Runs `verify --compare BASE NEW`: `Ok(true)` when no program got worse beyond `--fail-on`.
pub(crate) fn run(args: &VerifyArgs, base: &Path, new: &Path) -> Result<bool, Failure> {
    let (fail_on, format, top) = (args.fail_on, args.format, args.top);
    let mut inputs = vec![
        InputFile::File("the table", Some(base)),
        InputFile::File("the table", Some(new)),
    ];
    inputs.extend(
        args.logs
            .iter()
            .map(|dir| InputFile::Dir("the --logs directory", dir)),
    );
    files::refuse_overwrite(&inputs, &[Output::Stdout])?;
    let (a, mut b) = (read(base)?, read(new)?);
    let mut rows: Vec<Compared> = Vec::with_capacity(a.len().max(b.len()));
    for ((file, prog), entry) in a {
        let new = b.remove(&(file.clone(), prog.clone()));
        rows.push(Compared {
            file,
            prog,
            base: Some(entry),
            new,
        });
    }
    for ((file, prog), entry) in b {
        rows.push(Compared {
            file,
            prog,
            base: None,
            new: Some(entry),
        });
    }
    // Largest change first: instructions, then states (both tables' programs before the others).
    let size = |r: &Compared, k: usize| r.diff(k).map_or(-1, i128::abs);
    rows.sort_by(|x, y| {
        size(y, 1)
            .cmp(&size(x, 1))
            .then(size(y, 2).cmp(&size(x, 2)))
            .then_with(|| (&x.file, &x.prog).cmp(&(&y.file, &y.prog)))
    });
    let shown = &rows[..top.map_or(rows.len(), |n| n.min(rows.len()))];
    let grown = || shown.iter().filter(|r| r.diff(1).is_some_and(|d| d > 0));
    if let [base_dir, new_dir] = args.logs.as_slice() {
        // Before anything is written: standard output is none of the source files the
        // per-line profiles read (their objects are parsed only when it is a regular file).
        let sources = || {
            let mut paths = Vec::new();
            for row in grown().filter(|r| logs_of(r, base_dir, new_dir).is_some()) {
                for dir in [base_dir, new_dir] {
                    let object = dir.join(&row.file);
                    let _ = with_program(&object, &row.prog, |program| {
                        let search = args.sources.search(&[object.as_path()]);
                        paths.extend(bpflog::source_paths(std::slice::from_ref(program), &search));
                        Ok(())
                    });
                }
            }
            paths
        };
        files::refuse_overwrite(&[InputFile::Sources(&sources)], &[Output::Stdout])?;
    }
    let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
    write(shown, format, &mut out).map_err(Failure::stdout)?;
    if let [base_dir, new_dir] = args.logs.as_slice() {
        for row in grown() {
            per_line(row, base_dir, new_dir, args, &mut out)?;
        }
    }
    out.flush().map_err(Failure::stdout)?;
    let worse: Vec<&Compared> = match fail_on {
        Some(limit) => rows.iter().filter(|r| r.regressed(limit)).collect(),
        None => Vec::new(),
    };
    if let (Some(limit), false) = (fail_on, worse.is_empty()) {
        eprintln!(
            "bpflog: {} program(s) got worse beyond {limit}% (instructions or states grew, or newly rejected): {}",
            worse.len(),
            worse
                .iter()
                .map(|r| format!("{}/{}", escape(&r.file), escape(&r.prog)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(worse.is_empty())
}

/// Where program `row` spent the verifier's effort in BASE's log and in NEW's, source line by
/// source line (`bpflog profile --compare`), from the `--log-dir` directories `base_dir` and
/// `new_dir`; nothing when either lacks the log.
fn per_line(
    row: &Compared,
    base_dir: &Path,
    new_dir: &Path,
    args: &VerifyArgs,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let Some((base_log, new_log)) = logs_of(row, base_dir, new_dir) else {
        return Ok(());
    };
    let profile = |dir: &Path, log: &Path| -> Result<bpflog::profile::Profile, Failure> {
        let path = dir.join(&row.file);
        with_program(&path, &row.prog, |program| {
            let file = std::fs::File::open(log).map_err(|e| Failure::at(log, e))?;
            let paths = [path.as_path()];
            let mut files = bpflog::SourceFiles::new(args.sources.search(&paths));
            let input =
                bpflog::Input::of(program, bpflog::LogData::Stream(io::BufReader::new(file)));
            let request = bpflog::profile::ProfileRequest::default();
            bpflog::profile::profile(input, &request, &mut files)
                .map(|profiled| profiled.profile)
                .map_err(|e| Failure::at(log, e))
        })
    };
    let comparison =
        bpflog::profile::compare(profile(base_dir, &base_log)?, profile(new_dir, &new_log)?);
    let options = RenderOptions::default().palette(Palette::new(use_color(args.color)));
    let label = format!("{}/{}", escape(&row.file), escape(&row.prog));
    (writeln!(
        out,
        "\n==> {label}: where the verifier's effort changed <=="
    )
    .and_then(|()| bpflog::profile::render_comparison(&comparison, out, &options)))
    .map_err(Failure::stdout)
}

/// The logs of program `row` kept in the `--log-dir` directories `base_dir` and `new_dir`, when
/// both are there.
fn logs_of(row: &Compared, base_dir: &Path, new_dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (log, _) = super::log_name(&row.file, &row.prog)?;
    let (base_log, new_log) = (base_dir.join(&log), new_dir.join(&log));
    (base_log.is_file() && new_log.is_file()).then_some((base_log, new_log))
}

/// Calls `f` with program `prog` of the object at `path`.
fn with_program<T>(
    path: &Path,
    prog: &str,
    f: impl FnOnce(&Program<'_, '_>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let data = crate::limits::OBJECT.read(path)?;
    let object = BpfObject::parse(&data).map_err(|e| Failure::at(path, e))?;
    let id = object.program(prog).map_err(|e| Failure::at(path, e))?;
    let program = Program::new(&object, id).map_err(|e| Failure::at(path, e))?;
    f(&program)
}

/// The cells of a row, in the order of [`headers`]: text, with `N/A` where a table lacks the
/// program.
fn cells(r: &Compared) -> Vec<String> {
    let verdict = |e: &Option<TableEntry>| match e {
        Some(e) if e.accepted => "success".to_owned(),
        Some(_) => "failure".to_owned(),
        None => "N/A".to_owned(),
    };
    let value = |e: &Option<TableEntry>, k: usize| {
        e.as_ref()
            .map_or("N/A".to_owned(), |e| e.stats[k].to_string())
    };
    let same = matches!((&r.base, &r.new), (Some(a), Some(b)) if a.accepted == b.accepted);
    let mut cells = vec![
        r.file.clone(),
        r.prog.clone(),
        verdict(&r.base),
        verdict(&r.new),
        if r.base.is_none() || r.new.is_none() {
            "N/A".to_owned()
        } else if same {
            "MATCH".to_owned()
        } else {
            "MISMATCH".to_owned()
        },
    ];
    for k in 0..STATS.len() {
        cells.push(value(&r.base, k));
        cells.push(value(&r.new, k));
        cells.push(r.diff(k).map_or("N/A".to_owned(), |d| format!("{d:+}")));
        cells.push(r.percent(k).map_or("N/A".to_owned(), |p| {
            if p.is_infinite() {
                "+inf".to_owned()
            } else {
                format!("{p:+.2}%")
            }
        }));
    }
    cells
}

/// Column headers (table) and names (CSV, JSON), veristat's with `_base`, `_comp`, `_diff` and
/// `_pct`.
fn headers() -> Vec<(String, String)> {
    let mut headers = vec![
        ("File".to_owned(), "file_name".to_owned()),
        ("Program".to_owned(), "prog_name".to_owned()),
        ("Verdict (A)".to_owned(), "verdict_base".to_owned()),
        ("Verdict (B)".to_owned(), "verdict_comp".to_owned()),
        ("Verdict (DIFF)".to_owned(), "verdict_diff".to_owned()),
    ];
    for (header, name, _) in STATS {
        for (h, n) in [("A", "base"), ("B", "comp"), ("DIFF", "diff"), ("%", "pct")] {
            headers.push((format!("{header} ({h})"), format!("{name}_{n}")));
        }
    }
    headers
}

/// Writes the comparison in `format`.
fn write(rows: &[Compared], format: TableFormat, out: &mut impl Write) -> io::Result<()> {
    let headers = headers();
    // A row's cells made as it is written: the table alone needs them all (for the widths).
    match format {
        TableFormat::Csv => {
            let names: Vec<&str> = headers.iter().map(|(_, n)| n.as_str()).collect();
            super::columns::csv(out, &names, rows.iter().map(cells))
        }
        TableFormat::Json => {
            for row in rows.iter().map(cells) {
                let object: serde_json::Map<String, serde_json::Value> = headers
                    .iter()
                    .zip(&row)
                    .map(|((_, n), v)| (n.clone(), serde_json::Value::from(v.as_str())))
                    .collect();
                bpflog::write_json(&mut *out, &object)?;
                out.write_all(b"\n")?;
            }
            Ok(())
        }
        TableFormat::Table => {
            let cells: Vec<Vec<String>> = rows.iter().map(cells).collect();
            let header: Vec<&str> = headers.iter().map(|(h, _)| h.as_str()).collect();
            // File and Program to the left, the rest to the right.
            super::columns::aligned(out, &header, &cells, |k| k < 2)
        }
    }
}
