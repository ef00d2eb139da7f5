//! The statistics of every program loaded, one row each, with veristat's columns: an aligned
//! table, veristat's CSV (`veristat -o csv`, so that scripts and `veristat -C` read it), or one
//! JSON object per line.
//!
//! Column headers and CSV names are veristat's `stat_defs` (veristat.c); numbers the kernel did
//! not print are 0, as veristat shows them.

use super::TableFormat;
use std::io::{self, Write};

/// What one program's load said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Row {
    /// The object's file name, without its directory.
    pub file: String,
    /// The program's name.
    pub prog: String,
    /// Whether the kernel accepted the program.
    pub accepted: bool,
    /// `verification time`, in microseconds.
    pub duration: u64,
    /// Instructions processed.
    pub insns: u64,
    /// `total_states`.
    pub states: u64,
    /// `peak_states`.
    pub peak_states: u64,
    /// `max_states_per_insn`.
    pub max_states_per_insn: u64,
    /// `mark_read`.
    pub mark_read: u64,
    /// Instructions handed to the kernel.
    pub prog_size: u64,
    /// Bytes of machine code (0 when rejected).
    pub jited_size: u64,
    /// libbpf's name of the program type.
    pub prog_type: &'static str,
    /// libbpf's name of the expected attach type (`N/A` when not known).
    pub attach_type: &'static str,
    /// The sum of the subprograms' stack depths.
    pub stack_depth: u64,
    /// The class of the rejection, when its log was explained (JSON only: veristat's table
    /// and CSV keep their columns).
    pub class: Option<&'static str>,
}

/// A cell of a row.
enum Cell<'a> {
    Text(&'a str),
    Number(u64),
}

/// veristat's header, its CSV name, and the cell of a row.
type Column = (&'static str, &'static str, fn(&Row) -> Cell<'_>);

/// The columns, in veristat's CSV order (`default_csv_output_spec`, peak memory aside).
const COLUMNS: [Column; 14] = [
    ("File", "file_name", |r| Cell::Text(&r.file)),
    ("Program", "prog_name", |r| Cell::Text(&r.prog)),
    ("Verdict", "verdict", |r| Cell::Text(r.verdict())),
    ("Duration (us)", "duration", |r| Cell::Number(r.duration)),
    ("Insns", "total_insns", |r| Cell::Number(r.insns)),
    ("States", "total_states", |r| Cell::Number(r.states)),
    ("Peak states", "peak_states", |r| {
        Cell::Number(r.peak_states)
    }),
    ("Max states per insn", "max_states_per_insn", |r| {
        Cell::Number(r.max_states_per_insn)
    }),
    ("Max mark read length", "max_mark_read_len", |r| {
        Cell::Number(r.mark_read)
    }),
    ("Program size", "prog_size", |r| Cell::Number(r.prog_size)),
    ("Jited size", "prog_size_jited", |r| {
        Cell::Number(r.jited_size)
    }),
    ("Program type", "prog_type", |r| Cell::Text(r.prog_type)),
    ("Attach type", "attach_type", |r| Cell::Text(r.attach_type)),
    ("Stack depth", "stack_depth", |r| {
        Cell::Number(r.stack_depth)
    }),
];

/// veristat's other names of the columns (`stat_defs`), by CSV name.
const ALIASES: [(&str, &str); 8] = [
    ("filename", "file_name"),
    ("file", "file_name"),
    ("progname", "prog_name"),
    ("prog", "prog_name"),
    ("dur", "duration"),
    ("insns", "total_insns"),
    ("states", "total_states"),
    ("mark_read", "max_mark_read_len"),
];

/// An order of rows: columns, each ascending or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Order(Vec<(usize, bool)>);

impl Order {
    /// Reads veristat's `-s` spec: comma-separated column names, each with an optional `^`
    /// (ascending) or `v` (descending); numbers descend and text ascends by default.
    pub(crate) fn parse(spec: &str) -> Result<Order, String> {
        let mut keys = Vec::new();
        for word in spec.split(',').map(str::trim) {
            let (name, order) = match word.strip_suffix('^') {
                Some(name) => (name, Some(true)),
                None => match word.strip_suffix(['v', 'V', '.', '!', '_']) {
                    Some(name) if !name.is_empty() => (name, Some(false)),
                    _ => (word, None),
                },
            };
            let name = ALIASES
                .iter()
                .find(|(alias, _)| *alias == name)
                .map_or(name, |(_, csv)| *csv);
            let Some(k) = COLUMNS.iter().position(|(_, csv, _)| *csv == name) else {
                let names: Vec<&str> = COLUMNS.iter().map(|(_, csv, _)| *csv).collect();
                return Err(format!(
                    "--sort: no column '{}' (one of: {})",
                    bpflog::escape_controls_str(word),
                    names.join(", ")
                ));
            };
            let text = matches!((COLUMNS[k].2)(&Row::default()), Cell::Text(_));
            keys.push((k, order.unwrap_or(text)));
        }
        Ok(Order(keys))
    }

    /// Sorts `rows` (stable: rows equal in every key keep their order).
    pub(crate) fn sort(&self, rows: &mut [Row]) {
        rows.sort_by(|a, b| {
            self.0
                .iter()
                .map(|&(k, ascending)| {
                    let cell = COLUMNS[k].2;
                    let order = match (cell(a), cell(b)) {
                        (Cell::Number(x), Cell::Number(y)) => x.cmp(&y),
                        (Cell::Text(x), Cell::Text(y)) => x.cmp(y),
                        (Cell::Number(_), Cell::Text(_)) => std::cmp::Ordering::Less,
                        (Cell::Text(_), Cell::Number(_)) => std::cmp::Ordering::Greater,
                    };
                    if ascending { order } else { order.reverse() }
                })
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
}

impl Row {
    /// `success` or `failure`, as veristat says it.
    pub(crate) fn verdict(&self) -> &'static str {
        if self.accepted { "success" } else { "failure" }
    }
}

/// Writes `rows` in `format`.
pub(crate) fn write(rows: &[Row], format: TableFormat, out: &mut impl Write) -> io::Result<()> {
    match format {
        TableFormat::Table => table(rows, out),
        TableFormat::Csv => csv(rows, out),
        TableFormat::Json => json(rows, out),
    }
}

/// Aligned columns: text to the left, numbers to the right, a dashed line under the headers.
fn table(rows: &[Row], out: &mut impl Write) -> io::Result<()> {
    let headers: Vec<&str> = COLUMNS.iter().map(|(header, _, _)| *header).collect();
    let cells = cells(rows);
    let text = |k: usize| {
        COLUMNS
            .get(k)
            .is_some_and(|(_, _, cell)| matches!(cell(&Row::default()), Cell::Text(_)))
    };
    super::columns::aligned(out, &headers, &cells, text)
}

/// The cells of `rows`, in the order of [`COLUMNS`].
fn cells(rows: &[Row]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            COLUMNS
                .iter()
                .map(|(_, _, cell)| match cell(r) {
                    Cell::Text(t) => t.to_owned(),
                    Cell::Number(n) => n.to_string(),
                })
                .collect()
        })
        .collect()
}

/// veristat's CSV: a header of column names, then one record per program.
fn csv(rows: &[Row], out: &mut impl Write) -> io::Result<()> {
    let headers: Vec<&str> = COLUMNS.iter().map(|(_, name, _)| *name).collect();
    super::columns::csv(out, &headers, cells(rows))
}

/// One JSON object per program and line.
fn json(rows: &[Row], out: &mut impl Write) -> io::Result<()> {
    for row in rows {
        let mut object: serde_json::Map<String, serde_json::Value> = COLUMNS
            .iter()
            .map(|(_, name, cell)| {
                let value = match cell(row) {
                    Cell::Text(t) => serde_json::Value::from(t),
                    Cell::Number(n) => serde_json::Value::from(n),
                };
                ((*name).to_owned(), value)
            })
            .collect();
        if let Some(class) = row.class {
            object.insert("class".to_owned(), serde_json::Value::from(class));
        }
        bpflog::write_json(&mut *out, &object)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Row, TableFormat, write};

    fn rows() -> Vec<Row> {
        vec![
            Row {
                file: "a,b.o".into(),
                prog: "xdp_\"q\"".into(),
                accepted: true,
                duration: 12,
                insns: 34,
                states: 5,
                peak_states: 5,
                max_states_per_insn: 1,
                mark_read: 2,
                prog_size: 40,
                jited_size: 200,
                prog_type: "xdp",
                attach_type: "cgroup_inet_ingress",
                stack_depth: 8,
                class: None,
            },
            Row {
                file: "long_file_name.o".into(),
                prog: "p".into(),
                prog_type: "kprobe",
                attach_type: "N/A",
                class: Some("nullable-dereference"),
                ..Row::default()
            },
        ]
    }

    fn text(format: TableFormat) -> String {
        let mut out = Vec::new();
        write(&rows(), format, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn csv_has_veristats_names_and_quotes() {
        let csv = text(TableFormat::Csv);
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some(
                "file_name,prog_name,verdict,duration,total_insns,total_states,peak_states,\
                 max_states_per_insn,max_mark_read_len,prog_size,prog_size_jited,prog_type,\
                 attach_type,stack_depth"
            )
        );
        assert_eq!(
            lines.next(),
            Some(
                "\"a,b.o\",\"xdp_\"\"q\"\"\",success,12,34,5,5,1,2,40,200,xdp,cgroup_inet_ingress,8"
            )
        );
        assert_eq!(
            lines.next(),
            Some("long_file_name.o,p,failure,0,0,0,0,0,0,0,0,kprobe,N/A,0")
        );
    }

    #[test]
    fn table_aligns_text_left_and_numbers_right() {
        let table = text(TableFormat::Table);
        let lines: Vec<&str> = table.lines().collect();
        // File is as wide as its longest name (16), Program as its header (7).
        assert_eq!(
            &lines[0][..56],
            "File              Program  Verdict  Duration (us)  Insns"
        );
        assert_eq!(
            &lines[1][..56],
            "----------------  -------  -------  -------------  -----"
        );
        assert_eq!(
            &lines[2][..56],
            "a,b.o             xdp_\"q\"  success             12     34"
        );
        // Attach type is as wide as cgroup_inet_ingress (19), Stack depth as its header (11).
        assert!(
            lines[3].ends_with("kprobe        N/A                            0"),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn sorted_as_veristats_spec_says() {
        use super::Order;
        let mut rows = rows();
        rows.push(Row {
            file: "b.o".into(),
            prog: "q".into(),
            accepted: true,
            insns: 34,
            states: 9,
            ..Row::default()
        });
        let order = |spec: &str, rows: &mut Vec<Row>| {
            Order::parse(spec).unwrap().sort(rows);
            rows.iter().map(|r| r.prog.clone()).collect::<Vec<_>>()
        };
        // Numbers descend by default; equal instructions keep their order, then states decide.
        assert_eq!(order("insns", &mut rows), ["xdp_\"q\"", "q", "p"]);
        assert_eq!(
            order("total_insns,states", &mut rows),
            ["q", "xdp_\"q\"", "p"]
        );
        assert_eq!(order("insns^", &mut rows), ["p", "q", "xdp_\"q\""]);
        // Text ascends by default; `v` turns it.
        assert_eq!(order("prog", &mut rows), ["p", "q", "xdp_\"q\""]);
        assert_eq!(order("prog_namev", &mut rows), ["xdp_\"q\"", "q", "p"]);
        assert_eq!(order("verdict,file", &mut rows), ["p", "xdp_\"q\"", "q"]);
        let e = Order::parse("insns,nope").unwrap_err();
        assert!(
            e.starts_with("--sort: no column 'nope' (one of: file_name, "),
            "{e}"
        );
    }

    #[test]
    fn json_lines_keyed_by_csv_names() {
        let json = text(TableFormat::Json);
        let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
        assert_eq!(first["prog_name"], "xdp_\"q\"");
        assert_eq!(first["verdict"], "success");
        assert_eq!(first["total_insns"], 34);
        assert!(first.get("class").is_none());
        // A rejected program's row says its class (the table and the CSV do not).
        let second: serde_json::Value = serde_json::from_str(json.lines().nth(1).unwrap()).unwrap();
        assert_eq!(second["class"], "nullable-dereference");
        assert_eq!(json.lines().count(), 2);
    }
}
