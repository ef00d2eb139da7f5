//! `bpflog verify`: load programs into the running kernel through libbpf, and show what the
//! verifier said: one table across every program of every object (veristat's columns), the
//! annotated log of each rejected program, or each program's log or profile.
//!
//! Built with the cargo feature `load` (libbpf-rs; libbpf is compiled from the sources libbpf-sys
//! ships). The jobs are split by what they do: `filter` picks the programs (`--prog`,
//! `--filter`), `load` loads an object's programs and reads what the kernel said, `run` loads
//! the programs on `--jobs` threads and prints the results in a stable order, `progress` shows
//! on a terminal what is being verified, `table` prints the statistics (table, CSV, JSON lines),
//! `compare` compares two runs' CSV tables (and needs no kernel), `columns` aligns tables.
//!
//! Exit status: 0 when the kernel accepted every program loaded, 3 when it rejected one, 1 on any
//! other failure (an unreadable object, a program libbpf could not prepare, no CAP_BPF).

mod columns;
mod compare;
#[cfg(feature = "load")]
mod filter;
#[cfg(feature = "load")]
mod load;
#[cfg(feature = "load")]
mod log_buffer;
#[cfg(feature = "load")]
mod progress;
#[cfg(feature = "load")]
mod run;
#[cfg(feature = "load")]
mod table;

use crate::args::{ColorChoice, EscapeChoice, StyleChoice};
use clap::ValueEnum;
use std::path::PathBuf;

/// Exit status when the kernel rejected a program.
pub(crate) const REJECTED: u8 = 3;

/// Arguments of `bpflog verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The BPF object files to load (clang -g -target bpf).
    #[arg(value_name = "OBJ", required_unless_present = "compare")]
    pub objects: Vec<PathBuf>,
    /// Compare two tables written by `verify -o csv` or `veristat -o csv` instead of loading:
    /// per program A, B, DIFF and %, the largest change in instructions first.
    #[arg(
        long,
        num_args = 2,
        value_names = ["BASE", "NEW"],
        conflicts_with_all = ["objects", "summary", "stats", "raw", "level", "prog", "filters"]
    )]
    pub compare: Vec<PathBuf>,
    /// With --compare: the --log-dir directories of BASE's and NEW's runs; each program whose
    /// instructions grew then gets the per-source-line comparison of its two logs (as
    /// `bpflog profile --compare`), which needs logs of level 2.
    #[arg(long, num_args = 2, value_names = ["BASE_DIR", "NEW_DIR"], requires = "compare")]
    pub logs: Vec<PathBuf>,
    /// Keep each program's log in DIR as FILE.PROG.log (shortened where that is too long for a
    /// file name), and a copy of each object as FILE, for `--compare ... --logs` (with --level 2,
    /// what `bpflog profile` reads). Each is a new file: what is there is replaced, not written.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["compare", "summary"])]
    pub log_dir: Option<PathBuf>,
    /// With --compare: exit with status 3 when a program's instructions processed or states grew
    /// by more than PCT percent, or the kernel rejected in NEW a program it accepted in BASE.
    #[arg(long, value_name = "PCT", requires = "compare")]
    pub fail_on: Option<f64>,
    /// Only the program of this name (its function name); every program otherwise, each on its
    /// own.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// Only programs matching GLOB (repeatable): `FILE/PROG` globs the object's file name and
    /// the program's name, a GLOB without `/` either of them; a leading `!` leaves programs out.
    #[arg(short = 'f', long = "filter", value_name = "GLOB")]
    pub filters: Vec<String>,
    /// Only the table: load at the kernel's statistics level (4), without a text log.
    #[arg(long, conflicts_with_all = ["stats", "raw", "level"])]
    pub summary: bool,
    /// The table's format: table, csv (veristat's column names) or json (one object per line).
    #[arg(short = 'o', long, value_enum, default_value_t = TableFormat::Table, value_name = "FORMAT")]
    pub format: TableFormat,
    /// Order the table by these columns (comma-separated CSV names or veristat's short names,
    /// each with `^` for ascending or `v` for descending; numbers descend and text ascends by
    /// default), as veristat's `-s`. Default: the order of the objects and their programs.
    #[arg(short = 's', long, value_name = "SPEC", conflicts_with = "compare")]
    pub sort: Option<String>,
    /// Only the first N rows of the table (of the comparison with --compare), as veristat's `-n`.
    #[arg(short = 'n', long = "top", value_name = "N")]
    pub top: Option<usize>,
    /// Load N programs at once (default: one per core); the output is the same whatever N.
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// The verifier log level: 1 (the path that failed) or 2 (every instruction verified).
    /// Default: 1, and 2 with --stats.
    #[arg(long, value_name = "LEVEL", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub level: Option<u32>,
    /// Print where the verifier spent its effort (as `bpflog profile`) for each program instead
    /// of the table; the kernel's statistics (log level 4) are asked for too.
    #[arg(long)]
    pub stats: bool,
    /// Print each program's log as libbpf received it from the kernel, without annotating it,
    /// instead of the table.
    #[arg(long, conflicts_with = "stats")]
    pub raw: bool,
    /// Annotation style: kernel (the kernel's own lines) or rich (file:line:col, function,
    /// inlined calls); auto is rich on a terminal and kernel otherwise.
    #[arg(long, value_enum, default_value_t = StyleChoice::Auto, value_name = "STYLE")]
    pub style: StyleChoice,
    /// When to color the output: auto colors a terminal (TERM set, not dumb) unless NO_COLOR or CLICOLOR=0 is set; CLICOLOR_FORCE colors a pipe too (NO_COLOR still wins).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// When to escape the control bytes of the logs' own lines, annotated or `--raw` (ESC as
    /// `\x1b`, as bpflog's own lines always are): the kernel printed them with the object's
    /// file names and source texts in them. auto escapes them when the stream they go to is a
    /// terminal and writes them byte for byte to a file or a pipe.
    #[arg(long, value_enum, default_value_t = EscapeChoice::Auto, value_name = "WHEN")]
    pub escape_log: EscapeChoice,
    /// Show N source lines before and after each annotated line.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub context: u32,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// Write the annotated logs of rejected programs to standard error. Standard output then
    /// holds the table alone, as it always does with `-o csv` and `-o json`, whose logs are
    /// written nowhere else (but `--log-dir`).
    #[arg(long, conflicts_with_all = ["compare", "summary", "raw", "stats"])]
    pub logs_to_stderr: bool,
    /// No diagnostic block and explanation after a rejected log (they follow it by default, in
    /// every style), and no `class` in JSON rows.
    #[arg(long = "no-diagnostic")]
    pub no_diagnostic: bool,
}

/// `verify --format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    /// Aligned columns with veristat's headers.
    Table,
    /// veristat's CSV (`veristat -o csv`): the same column names, read by `veristat -C`.
    Csv,
    /// One JSON object per program and line, keyed by the CSV's column names.
    Json,
}

/// Whether `name` (an object's file name or a program's name, from an object or a table) can
/// name a file in a --log-dir directory: not empty, no `/`, no NUL, not `.` or `..`.
pub(crate) fn plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['/', '\0']) && name != "." && name != ".."
}

/// The longest file name Linux takes (`NAME_MAX`, bytes).
const NAME_MAX: usize = 255;

/// The file name of program `prog`'s log of object file `file` in a --log-dir directory, and
/// whether it was shortened: `FILE.PROG.log`, or, where that is longer than a file name may be,
/// as many of its first bytes as fit, `~` and 16 hex digits of a hash (FNV-1a, 64 bits) of
/// `FILE.PROG`. `None` where either is no [`plain_name`].
pub(crate) fn log_name(file: &str, prog: &str) -> Option<(String, bool)> {
    if !plain_name(file) || !plain_name(prog) {
        return None;
    }
    let whole = format!("{file}.{prog}");
    if whole.len() + ".log".len() <= NAME_MAX {
        return Some((format!("{whole}.log"), false));
    }
    let hash = whole.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut end = NAME_MAX - ".log".len() - "~0123456789abcdef".len();
    while !whole.is_char_boundary(end) {
        end -= 1;
    }
    Some((format!("{}~{hash:016x}.log", &whole[..end]), true))
}

/// Runs `bpflog verify`: `Ok(true)` when every program was accepted (with `--compare`: when none
/// got worse beyond `--fail-on`).
pub(crate) fn run(args: &VerifyArgs) -> Result<bool, crate::Failure> {
    if let [base, new] = args.compare.as_slice() {
        return compare::run(args, base, new);
    }
    load_and_report(args)
}

#[cfg(not(feature = "load"))]
fn load_and_report(_args: &VerifyArgs) -> Result<bool, crate::Failure> {
    Err(crate::Failure::Error(
        "this bpflog was built without the `load` feature that `verify` needs: build it with \
         `cargo build --release --features load` (needs make, a C compiler, pkg-config, \
         libelf-dev and zlib1g-dev)"
            .into(),
    ))
}

#[cfg(feature = "load")]
use run::run as load_and_report;

#[cfg(test)]
mod tests {
    use super::{NAME_MAX, log_name, plain_name};

    #[test]
    fn only_plain_names_name_files() {
        assert!(plain_name("xdp.o") && plain_name("xdp_parse") && plain_name(".hidden.o"));
        for bad in ["", ".", "..", "../x", "a/b", "a\0b"] {
            assert!(!plain_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_log_name_too_long_for_a_file_name_is_shortened_apart_from_others() {
        assert_eq!(
            log_name("x.o", "xdp_parse"),
            Some(("x.o.xdp_parse.log".to_owned(), false))
        );
        let fits = "p".repeat(NAME_MAX - "x.o..log".len());
        assert_eq!(
            log_name("x.o", &fits).map(|(n, s)| (n.len(), s)),
            Some((NAME_MAX, false))
        );
        // Two long names alike in their first bytes, with a character across the cut.
        let long = "\u{e9}".repeat(200);
        let (a, shortened) = log_name("x.o", &format!("{long}a")).unwrap();
        let (b, _) = log_name("x.o", &format!("{long}b")).unwrap();
        assert!(shortened && a != b, "{a} {b}");
        assert!(a.len() <= NAME_MAX && a.ends_with(".log") && a.starts_with("x.o.\u{e9}"));
        assert_eq!(log_name("x.o", "a/b"), None);
    }
}
