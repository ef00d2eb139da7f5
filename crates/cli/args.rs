//! Command-line arguments, as clap parses them.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};

/// Make Linux BPF verifier logs readable: restore the C source into them.
#[derive(Debug, Parser)]
#[command(name = "bpflog", version, about, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Interleave the C source lines into a verifier log, as the kernel prints them.
    ///
    /// The program the log belongs to is found by checking every program of OBJ against the
    /// log's instructions; --prog names it instead.
    Annotate(AnnotateArgs),
    /// Count the verifier's work per source line and function: visits, instructions, paths.
    ///
    /// Every instruction line of the log is attributed to the source line the kernel's own
    /// annotation puts it under. --compare shows what changed between two logs.
    Profile(crate::profile::ProfileArgs),
    /// Write one self-contained HTML page: the annotated log and the source side by side,
    /// linked both ways, with visits per source line and the rejection pinpointed.
    ///
    /// The program is found as for profile, or named with --prog. The page makes no network
    /// request and draws only the rows on screen, so large level-2 logs stay usable.
    Report(crate::report::ReportArgs),
    /// Explain a rejection: its class, where the offending value came from, what to change.
    ///
    /// The program is found as for report, or named with --prog. Each rejected log gets the
    /// diagnostic, the chain of instructions from the value's origin to the failure, and a help.
    Explain(crate::explain::ExplainArgs),
    /// Load programs into the running kernel through libbpf and print the verifier's log,
    /// annotated, or with --stats where it spent its effort.
    ///
    /// Each program is loaded on its own, never attached, and unloaded at once. Exit status: 0
    /// when the kernel accepted every program, 3 when it rejected one, 1 on other failures. Needs
    /// CAP_BPF (root) and a bpflog built with the cargo feature `load`.
    Verify(crate::verify::VerifyArgs),
    /// Print each program's loaded layout, one row per instruction: index, opcode, function,
    /// file:line:col, the calls it was inlined through and the source line.
    ///
    /// The object's view of what the verifier numbers, to read next to the log or
    /// `bpftool prog dump xlated`.
    Lines(crate::lines::LinesArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(crate::docs::CompletionsArgs),
    /// Print the manual page bpflog(1) in roff, or write every page into a directory.
    Man(crate::docs::ManArgs),
}

/// Arguments of `bpflog annotate`.
#[derive(Debug, clap::Args)]
pub struct AnnotateArgs {
    /// The BPF object file (clang -g -target bpf), then the verifier log (`-` or nothing reads
    /// standard input). With several objects: `OBJ... -- LOG`, or `--obj` for each.
    #[arg(value_name = "OBJ [LOG]", required_unless_present = "objs")]
    pub inputs: Vec<PathBuf>,
    /// The log, after `--`: everything before it is an object.
    #[arg(last = true, value_name = "LOG")]
    pub after_dashes: Vec<PathBuf>,
    /// An object the log's programs may come from (repeatable); then the positional argument is
    /// the log.
    #[arg(long = "obj", value_name = "OBJ")]
    pub objs: Vec<PathBuf>,
    /// The program the log belongs to (its function name).
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// The loader whose layout the program had: libbpf (bpftool, libbpf-rs, ...), aya or cilium
    /// (cilium/ebpf). Default: found from the log, libbpf when it cannot tell.
    #[arg(long, value_enum, value_name = "LOADER")]
    pub loader: Option<LoaderChoice>,
    /// When to color the output: auto colors a terminal (TERM set, not dumb) unless NO_COLOR or CLICOLOR=0 is set; CLICOLOR_FORCE colors a pipe too (NO_COLOR still wins).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// When to escape the control bytes of the log's own lines (ESC as `\x1b`, as bpflog's own
    /// lines always are): the kernel printed them with the object's file names and source texts
    /// in them. auto escapes them when standard output is a terminal and writes them byte for
    /// byte to a file or a pipe.
    #[arg(long, value_enum, default_value_t = EscapeChoice::Auto, value_name = "WHEN")]
    pub escape_log: EscapeChoice,
    /// Annotation style: kernel (byte-exact with the kernel's lines) or rich (file:line:col,
    /// function, inlined calls); auto is rich on a terminal and kernel otherwise.
    #[arg(long, value_enum, default_value_t = StyleChoice::Auto, value_name = "STYLE")]
    pub style: StyleChoice,
    /// The kernel's source lines in kernel style: bare (`; text`, again at each new line-info
    /// record, as Linux 5.10 and 6.1 print them) or located (`; text @ file:line`, again when
    /// the file or line changes, as Linux 6.12 and later do); auto tells it from the log (a
    /// kernel before 6.12 prints its states otherwise), else located.
    #[arg(long, value_enum, default_value_t = KernelLinesChoice::Auto, value_name = "FORM")]
    pub kernel_lines: KernelLinesChoice,
    /// Show N source lines before and after each annotated line.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub context: u32,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// The kernel's BTF.
    #[command(flatten)]
    pub kernel: crate::args::KernelBtfArgs,
    /// End a rejected log with a diagnostic block and its explanation (the default in rich
    /// style; in JSON the error record carries the explanation by default).
    #[arg(long, overrides_with = "no_diagnostic")]
    pub diagnostic: bool,
    /// No diagnostic block, in any style, and no explanation in JSON.
    #[arg(long = "no-diagnostic", overrides_with = "diagnostic")]
    pub no_diagnostic: bool,
    /// Also resolve the instructions of mark_precise backtracking lines and liveness rows.
    #[arg(long = "annotate-all")]
    pub annotate_all: bool,
    /// Output: the annotated log (text), or one JSON object per log line (json; schema in the
    /// README).
    #[arg(long, value_enum, default_value_t = FormatChoice::Text, value_name = "FORMAT")]
    pub format: FormatChoice,
}

/// `annotate --format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatChoice {
    /// The annotated log.
    Text,
    /// One JSON object per log line.
    Json,
}

/// `--loader` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoaderChoice {
    /// libbpf: `.text` subprograms appended depth-first.
    Libbpf,
    /// aya: subprograms from any code section, depth-first.
    Aya,
    /// cilium/ebpf: breadth-first, each function's callees sorted by name.
    Cilium,
}

/// `--kernel-lines` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelLinesChoice {
    /// As the log shows.
    Auto,
    /// `; text`, at each new line-info record (Linux 5.10, 6.1).
    Bare,
    /// `; text @ file:line`, at each new file or line (Linux 6.12 and later).
    Located,
}

/// `--style` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StyleChoice {
    /// Rich on a terminal, kernel otherwise.
    Auto,
    /// The kernel's own `; text @ file:line` lines, byte for byte.
    Kernel,
    /// file:line:col, the function and the inline chain.
    Rich,
}

/// `--source-dir`, `--source-map` and `--any-source`, shared by every subcommand that shows
/// source.
#[derive(Debug, Clone, clap::Args)]
pub struct SourceArgs {
    /// Look for source files in DIR too (repeatable); files under DIR may be read.
    #[arg(long = "source-dir", value_name = "DIR")]
    pub source_dirs: Vec<PathBuf>,
    /// Rewrite source paths that start with FROM to start with TO (repeatable); files under TO
    /// may be read.
    #[arg(long = "source-map", value_name = "FROM=TO", value_parser = parse_source_map)]
    pub source_maps: Vec<(String, String)>,
    /// Read any source file the debug info names, not only those under the objects'
    /// directories, the current directory, --source-dir and --source-map targets (also under
    /// /proc, /sys and /dev); still only regular files of at most 64 MiB.
    #[arg(long = "any-source")]
    pub any_source: bool,
}

impl SourceArgs {
    /// The search the library takes, for the objects at `objects`: besides --source-dir and
    /// --source-map targets, the objects' directories and the current directory are roots (but
    /// `/`, which only --source-dir can vouch for).
    pub fn search(&self, objects: &[&Path]) -> bpflog::SourceSearch {
        // The directory an object really is in (`/dev/stdin` is no directory of sources).
        let implied = objects
            .iter()
            .filter_map(|o| {
                std::fs::canonicalize(o)
                    .ok()?
                    .parent()
                    .map(Path::to_path_buf)
            })
            .chain(std::env::current_dir().ok());
        let roots = implied
            .filter(|dir| std::fs::canonicalize(dir).is_ok_and(|real| real.parent().is_some()))
            .collect();
        bpflog::SourceSearch {
            dirs: self.source_dirs.clone(),
            maps: self.source_maps.clone(),
            roots,
            any_source: self.any_source,
            ..bpflog::SourceSearch::default()
        }
    }
}

/// Says on stderr, one line each, which files debug info named that `search` did not read
/// (`objects`: the objects whose debug info it was).
pub fn source_notes(search: &bpflog::SourceSearch, objects: &[&Path]) {
    let mut said = std::collections::HashSet::new();
    for refusal in search.refusals.take() {
        // Once per file, also when several runs over the objects refused it.
        if said.insert(refusal.path.clone()) {
            eprintln!("{}", source_note(&refusal, objects));
        }
    }
}

/// The note for one refused file: the name as the object gives it (cut and escaped), not where
/// it leads (which would tell a stranger's object what files exist here, and where links go).
pub fn source_note(refusal: &bpflog::SourceRefusal, objects: &[&Path]) -> String {
    use bpflog::RefusalReason;
    use bpflog::object::excerpt;
    let by = match objects {
        [object] => format!(
            "{}'s debug info",
            excerpt(object.as_os_str().as_encoded_bytes())
        ),
        _ => {
            let all: Vec<String> = objects
                .iter()
                .map(|o| excerpt(o.as_os_str().as_encoded_bytes()))
                .collect();
            format!("the debug info of {}", all.join(", "))
        }
    };
    let widen = match refusal.reason {
        RefusalReason::OutsideRoots => "; --source-dir or --any-source widens",
        RefusalReason::SystemDir(_) => "; --any-source widens",
        _ => "",
    };
    format!(
        "bpflog: note: not reading {} (named by {by}): {}{widen}",
        excerpt(&refusal.name),
        refusal.reason
    )
}

pub(crate) fn parse_source_map(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((from, to)) if !from.is_empty() => Ok((from.to_owned(), to.to_owned())),
        _ => Err(format!("expected FROM=TO, got '{s}'")),
    }
}

/// `--btf`, shared by every subcommand that finds a log's program.
#[derive(Debug, Clone, clap::Args)]
pub struct KernelBtfArgs {
    /// The BTF of the kernel that printed the log (its /sys/kernel/btf/vmlinux: raw BTF, or an
    /// ELF file with a .BTF section): programs that differ only in fields relocated by CO-RE
    /// are told apart by the offsets it gives them.
    #[arg(long = "btf", value_name = "FILE")]
    pub btf: Option<PathBuf>,
}

/// `--escape-log` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EscapeChoice {
    /// Escape on a terminal; as read to a file or a pipe.
    Auto,
    /// Always escape.
    Always,
    /// Never escape: the log's lines byte for byte.
    Never,
}

/// `--color` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Color by the environment (NO_COLOR, CLICOLOR_FORCE, CLICOLOR, TERM) and the terminal.
    Auto,
    /// Always color.
    Always,
    /// Never color.
    Never,
}
