//! Command-line arguments, as clap parses them.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

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
}

/// Arguments of `bpflog annotate`.
#[derive(Debug, clap::Args)]
pub struct AnnotateArgs {
    /// The BPF object file (clang -g -target bpf) the program was loaded from.
    pub object: PathBuf,
    /// The verifier log; `-` or nothing reads standard input.
    pub log: Option<PathBuf>,
    /// The program the log belongs to (its function name).
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// When to color the output: auto colors a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
}

/// `--color` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Color when writing to a terminal and NO_COLOR is not set.
    Auto,
    /// Always color.
    Always,
    /// Never color.
    Never,
}
