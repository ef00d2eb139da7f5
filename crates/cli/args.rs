//! The argument groups and values several subcommands share, as clap parses them. Each
//! subcommand's own arguments are beside its code, and the command line as a whole is the
//! crate root's (`main.rs`): this module imports none of theirs.

use clap::ValueEnum;
use std::path::{Path, PathBuf};

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
        bpflog::SourceSearch::default()
            .dirs(self.source_dirs.clone())
            .maps(self.source_maps.clone())
            .roots(roots)
            .any_source(self.any_source)
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
