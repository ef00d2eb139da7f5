//! The `bpflog` command: arguments -> resolved configuration -> library call -> output.
//!
//! Exit status: 0 on success (a closed output pipe included), 1 when an input is missing or
//! malformed or the log fits no program, 2 for command-line usage errors, 3 when `verify` saw
//! the kernel reject a program or `verify --compare --fail-on` a program grow (each
//! subcommand's `--help` says which of these it gives: [`docs`]).

mod annotate;
mod args;
mod docs;
mod explain;
mod files;
mod limits;
mod lines;
mod output;
mod profile;
mod report;
mod sniff;
mod spool;
mod verify;

use args::{ColorChoice, EscapeChoice};
use bpflog::object::{BpfObject, KernelBtf, Loader};
use bpflog::{Growing, LogFile, PlanError, Program, SelectError, Shared};
use clap::{CommandFactory, Parser, Subcommand};
use spool::FileAt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Make Linux BPF verifier logs readable: restore the C source into them.
#[derive(Debug, Parser)]
#[command(name = "bpflog", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Interleave the C source lines into a verifier log, as the kernel prints them.
    ///
    /// The program the log belongs to is found by checking every program of OBJ against the
    /// log's instructions; --prog names it instead.
    #[command(after_long_help = docs::ANNOTATE)]
    Annotate(annotate::AnnotateArgs),
    /// Count the verifier's work per source line and function: visits, instructions, paths.
    ///
    /// Every instruction line of the log is attributed to the source line the kernel's own
    /// annotation puts it under. --compare shows what changed between two logs.
    #[command(after_long_help = docs::PROFILE)]
    Profile(profile::ProfileArgs),
    /// Write one self-contained HTML page: the annotated log and the source side by side,
    /// linked both ways, with visits per source line and the rejection pinpointed.
    ///
    /// The program is found as for profile, or named with --prog. The page makes no network
    /// request and draws only the rows on screen, so large level-2 logs stay usable.
    #[command(after_long_help = docs::REPORT)]
    Report(report::ReportArgs),
    /// Explain a rejection: its class, where the offending value came from, what to change.
    ///
    /// The program is found as for report, or named with --prog. Each rejected log gets the
    /// diagnostic, the chain of instructions from the value's origin to the failure, and a help.
    #[command(after_long_help = docs::EXPLAIN)]
    Explain(explain::ExplainArgs),
    /// Load programs into the running kernel through libbpf and print the verifier's log,
    /// annotated, or with --stats where it spent its effort.
    ///
    /// Each program is loaded on its own, never attached, and unloaded at once. Needs CAP_BPF
    /// (root) and a bpflog built with the cargo feature `load`.
    #[command(after_long_help = docs::VERIFY)]
    Verify(verify::VerifyArgs),
    /// Print each program's loaded layout, one row per instruction: index, opcode, function,
    /// file:line:col, the calls it was inlined through and the source line.
    ///
    /// The object's view of what the verifier numbers, to read next to the log or
    /// `bpftool prog dump xlated`.
    #[command(after_long_help = docs::LINES)]
    Lines(lines::LinesArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(docs::CompletionsArgs),
    /// Print the manual page bpflog(1) in roff, or write every page into a directory.
    Man(docs::ManArgs),
}

/// The whole command line as clap builds it: for usage errors, completions and manual pages.
pub(crate) fn command() -> clap::Command {
    Cli::command()
}

/// Size of the buffers for reading logs and writing output.
pub(crate) const IO_BUFFER: usize = 1 << 20;

/// Why a run ends early: an error to report as one line on stderr, or the output's reader gone.
pub(crate) enum Failure {
    /// A one-line error (exit status 1).
    Error(String),
    /// The output was a pipe whose reader has gone (`bpflog ... | head`): the output ends there,
    /// quietly, and the run is not a failure for it (exit status 0). The one place that tells
    /// it from other errors is [`Failure::closed_or`]; `main` is the one place that handles it.
    ClosedPipe,
}

impl Failure {
    fn at(path: &Path, what: impl std::fmt::Display) -> Self {
        Failure::Error(format!("{}: {what}", path.display()))
    }

    /// An I/O error about `path` (see [`Failure::closed_or`]).
    fn io(path: &Path, e: io::Error) -> Self {
        Failure::closed_or(e, |e| Failure::at(path, e))
    }

    /// A write to a pipe whose reader has gone is [`Failure::ClosedPipe`] (no read fails that
    /// way); any other I/O error is `error(e)`.
    fn closed_or(e: io::Error, error: impl FnOnce(io::Error) -> Failure) -> Self {
        match e.kind() {
            io::ErrorKind::BrokenPipe => Failure::ClosedPipe,
            _ => error(e),
        }
    }

    /// A failed write of standard output.
    fn stdout(e: io::Error) -> Self {
        Failure::io(Path::new("<stdout>"), e)
    }

    /// The failure with `more` said after its message (a closed pipe stays one).
    fn and(self, more: impl std::fmt::Display) -> Self {
        match self {
            Failure::Error(message) => Failure::Error(format!("{message}{more}")),
            closed => closed,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e),
    };
    let result = match cli.command {
        Command::Annotate(args) => annotate::run(&args),
        Command::Profile(args) => profile::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Explain(args) => explain::run(&args),
        Command::Verify(args) => match verify::run(&args) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(verify::REJECTED),
            Err(e) => Err(e),
        },
        Command::Lines(args) => lines::run(&args),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::ClosedPipe) => ExitCode::SUCCESS,
        Err(Failure::Error(message)) => {
            eprintln!("bpflog: error: {message}");
            ExitCode::from(1)
        }
    }
}

/// What clap's parse ended in other than a command: `--help` and `--version` printed on
/// standard output (a failed write is an error, a closed pipe is not), a usage error on stderr
/// (status 2).
fn parse_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let to_stdout = matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
    match e
        .print()
        .map_err(|e| Failure::closed_or(e, |e| Failure::Error(e.to_string())))
    {
        Err(Failure::Error(write)) if to_stdout => {
            eprintln!("bpflog: error: standard output: {write}");
            ExitCode::from(1)
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
    }
}

/// The bytes of the kernel BTF `--btf` names, read once (at most [`limits::KERNEL_BTF`]).
pub(crate) struct KernelBtfFile {
    path: PathBuf,
    data: Vec<u8>,
}

impl KernelBtfFile {
    /// Reads the file `args` names, if any.
    pub(crate) fn read(args: &args::KernelBtfArgs) -> Result<Option<Self>, Failure> {
        let Some(path) = &args.btf else {
            return Ok(None);
        };
        let data = limits::KERNEL_BTF.read(path)?;
        Ok(Some(KernelBtfFile {
            path: path.clone(),
            data,
        }))
    }

    /// Its types, indexed (errors name the file and the offset).
    pub(crate) fn parse(&self) -> Result<KernelBtf<'_>, Failure> {
        KernelBtf::parse(&self.data).map_err(|e| Failure::at(&self.path, e))
    }
}

/// Reads and indexes the kernel BTF `args` names, if any: `--btf` in one place.
pub(crate) fn kernel_btf(file: &Option<KernelBtfFile>) -> Result<Option<KernelBtf<'_>>, Failure> {
    file.as_ref().map(KernelBtfFile::parse).transpose()
}

/// Every program of every object laid out by each of `loaders` ([`bpflog::lay_out`]), and why
/// the programs that could not be laid out by the first loader could not. No program at all is an error naming the first reason. With the
/// kernel's BTF (`--btf`), each program knows the offsets its CO-RE field relocations get there.
pub(crate) fn lay_out<'o, 'd: 'o, 'p>(
    objects: impl IntoIterator<Item = (&'o BpfObject<'d>, &'p Path)>,
    loaders: &[Loader],
    kernel: Option<&KernelBtf<'_>>,
) -> Result<(Vec<Program<'o, 'd>>, Vec<String>), Failure> {
    let mut programs: Vec<Program> = Vec::new();
    let mut unusable = Vec::new();
    let mut first_failure = None;
    let mut first_path = None;
    for (object, path) in objects {
        first_path.get_or_insert(path);
        let laid = bpflog::lay_out(object, loaders);
        for (id, e) in laid.failures {
            let reason = format!("{}: {e}", program_label(object, id));
            first_failure.get_or_insert_with(|| Failure::at(path, &reason));
            unusable.push(reason);
        }
        programs.extend(laid.programs.into_iter().map(|p| match kernel {
            Some(kernel) => p.with_kernel_btf(kernel),
            None => p,
        }));
    }
    if programs.is_empty() {
        return Err(first_failure.unwrap_or_else(|| {
            Failure::at(
                first_path.unwrap_or(Path::new("-")),
                "the object has no BPF programs",
            )
        }));
    }
    Ok((programs, unusable))
}

/// Program `id` of `object` as a message names it: its name (see
/// [`bpflog::object::excerpt_name`]), or, when it has none, its section.
fn program_label(object: &BpfObject<'_>, id: bpflog::object::FunctionId) -> String {
    match object.function(id).name.as_str() {
        "" => format!(
            "(unnamed program in section {})",
            bpflog::object::excerpt_name(object.section_name(id))
        ),
        name => bpflog::object::excerpt_name(name),
    }
}

/// A plan that failed, as one line with a hint: `--prog` for ambiguous logs, and, unless a
/// program was named, the thought that the log comes from another object (`--prog` then
/// `verb`s it anyway).
pub(crate) fn plan_failure(log: &Path, e: PlanError, named: bool, verb: &str) -> Failure {
    let hint = match &e {
        PlanError::Segment {
            source: SelectError::Ambiguous(_, Shared::CoreFields(core)),
            ..
        } if !core.kernel_btf => " (pass --btf with the BTF of the kernel that printed the log, its /sys/kernel/btf/vmlinux, to tell them apart; or choose one with --prog)".to_owned(),
        PlanError::Segment {
            source: SelectError::Ambiguous(..),
            ..
        } => " (choose one with --prog)".to_owned(),
        PlanError::Segment {
            source: SelectError::NoneFits(_),
            ..
        } if !named => {
            format!(" (is the log from another object? --prog {verb} it anyway)")
        }
        _ => String::new(),
    };
    Failure::at(log, format!("{e}{hint}"))
}

/// The warnings for lines of the log at `log` that did not fit `program` but were taken as
/// noise, the lines around them fitting (see [`bpflog::Evidence::noise`]): one a line, the first
/// few, then how many more.
pub(crate) fn noise_warnings(
    log: &Path,
    program: &str,
    noise: &[bpflog::Mismatch],
    noise_lines: u64,
) -> Vec<String> {
    let program = bpflog::object::excerpt_name(program);
    let mut warnings: Vec<String> = noise
        .iter()
        .map(|m| {
            format!(
                "bpflog: warning: {}:{}: a line that does not fit {program} among lines that do, passed through as noise: {}",
                log.display(),
                m.line,
                m.reason
            )
        })
        .collect();
    let more = noise_lines.saturating_sub(noise.len() as u64);
    if more > 0 {
        warnings.push(format!(
            "bpflog: warning: {}: {more} more lines that do not fit {program} passed through as noise",
            log.display()
        ));
    }
    warnings
}

/// The warning for a log that shows more call frames than the kernel allows, first at `at`
/// (`log:LINE`, or `log: log line N` for the logs taken out of a file).
pub(crate) fn too_deep_warning(at: impl std::fmt::Display) -> String {
    format!(
        "bpflog: warning: {at}: calls nested deeper than the kernel's limit of {} frames (no kernel printed this); call stacks are followed no deeper",
        bpflog::MAX_CALL_FRAMES
    )
}

/// Whether to color stdout: `--color always|never` as given; `auto` follows the ecosystem's rule,
/// [`anstream::AutoStream::choice`]: NO_COLOR off, else CLICOLOR_FORCE on, else CLICOLOR=0 off,
/// else on for a terminal whose TERM is not `dumb` (or with CLICOLOR set, or in CI).
pub(crate) fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !matches!(
            anstream::AutoStream::choice(&io::stdout()),
            anstream::ColorChoice::Never | anstream::ColorChoice::Auto
        ),
    }
}

/// Whether the log's own lines are written with their control bytes escaped
/// ([`bpflog::AnnotateOptions::escape_log`]): `--escape-log always|never` as given; `auto` when
/// the stream they go to is a terminal (`terminal`), where a control byte acts; to a file or a
/// pipe they go as read, byte for byte.
pub(crate) fn escape_log(choice: EscapeChoice, terminal: bool) -> bool {
    match choice {
        EscapeChoice::Always => true,
        EscapeChoice::Never => false,
        EscapeChoice::Auto => terminal,
    }
}

/// The log at `path` (standard input when `None`), what to call it, and whether it is a regular
/// file that can be read at offsets as it is. Standard input never counts as one: it is read
/// from where it stands.
pub(crate) fn open_log(path: Option<&Path>) -> Result<(File, PathBuf, bool), Failure> {
    use std::os::fd::AsFd;
    let Some(path) = path else {
        let display = PathBuf::from("<stdin>");
        let fd = io::stdin().as_fd().try_clone_to_owned();
        let file = File::from(fd.map_err(|e| Failure::at(&display, e))?);
        return Ok((file, display, false));
    };
    let file = File::open(path).map_err(|e| Failure::at(path, e))?;
    let meta = file.metadata().map_err(|e| Failure::at(path, e))?;
    Ok((file, path.to_owned(), meta.is_file()))
}

/// Where the log comes from: a file that can be read twice, or a copy of what cannot (see
/// [`spool`](spool::spool)). It is opened once; each reader reads it at offsets of its own.
pub(crate) struct LogSource {
    file: File,
    display: PathBuf,
    /// For a copy made as the log comes ([`as_it_comes`](LogSource::as_it_comes)): how far it
    /// is written.
    growing: Option<Arc<Growing>>,
}

impl LogSource {
    /// The log at `path` (standard input when `None`), to be read more than once: standard
    /// input, and a path that is not a regular file (a pipe such as `<(...)`, a device), are
    /// copied to a temporary file first.
    pub(crate) fn new(path: Option<&Path>) -> Result<LogSource, Failure> {
        let (file, display, regular) = open_log(path)?;
        let file = if regular {
            file
        } else {
            spool::spool(&display, file)?
        };
        Ok(LogSource {
            file,
            display,
            growing: None,
        })
    }

    /// Like [`new`](LogSource::new), but what is not a regular file is copied on a thread of
    /// its own as it comes, and read as it is copied ([`log_file`](LogSource::log_file),
    /// [`reader`](LogSource::reader)): a live loader's log flows.
    pub(crate) fn as_it_comes(path: Option<&Path>) -> Result<LogSource, Failure> {
        let (file, display, regular) = open_log(path)?;
        if regular {
            return Ok(LogSource {
                file,
                display,
                growing: None,
            });
        }
        let (file, growing) = spool::spool_as_it_comes(&display, file)?;
        Ok(LogSource {
            file,
            display,
            growing: Some(growing),
        })
    }

    /// The log's file, for a job that reads ahead.
    pub(crate) fn log_file(&self) -> LogFile<'_> {
        match &self.growing {
            Some(growing) => LogFile::growing(&self.file, growing),
            None => LogFile::from(&self.file),
        }
    }

    /// The log from its start (as it is copied, for a copy still being made).
    pub(crate) fn reader(&self) -> Result<Box<dyn Read + Send>, Failure> {
        let file = self.open_file()?;
        Ok(match &self.growing {
            Some(growing) => Box::new(growing.reader(file)),
            None => Box::new(FileAt::new(file)),
        })
    }

    /// The log's file, to be read at offsets.
    fn open_file(&self) -> Result<File, Failure> {
        self.file
            .try_clone()
            .map_err(|e| Failure::at(&self.display, e))
    }
}

/// Reads the object at `object_path`, checks that `prog` (if any) names one of its programs,
/// and hands `f` its programs laid out ([`lay_out`], with the kernel's BTF) and why some could
/// not be.
pub(crate) fn with_programs<T>(
    object_path: &Path,
    prog: Option<&str>,
    kernel: Option<&KernelBtf<'_>>,
    f: impl FnOnce(&[Program<'_, '_>], &[String]) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let data = limits::OBJECT.read(object_path)?;
    let object = BpfObject::parse(&data).map_err(|e| Failure::at(object_path, e))?;
    if let Some(name) = prog {
        object
            .program(name)
            .map_err(|e| Failure::at(object_path, e))?;
    }
    let (programs, unusable) = lay_out([(&object, object_path)], &[Loader::Libbpf], kernel)?;
    f(&programs, &unusable)
}

/// The log at `log_path` (standard input when `None`) as a file to be read more than once
/// ([`LogSource::new`]), refused when it is no verifier log: then there is nothing to choose a
/// program by, and nothing to show.
pub(crate) fn log_file(log_path: Option<&Path>) -> Result<LogSource, Failure> {
    let source = LogSource::new(log_path)?;
    if let Some(not) = sniff::no_verifier_log(source.reader()?, &source.display)? {
        return Err(Failure::at(&source.display, not));
    }
    Ok(source)
}

/// A failure to take a program's logs out of the log at `log`, as one line (see
/// [`plan_failure`]; `unusable`: the programs not laid out).
pub(crate) fn take_failure(
    log: &Path,
    e: bpflog::TakeError,
    named: bool,
    unusable: &[String],
) -> Failure {
    match e {
        bpflog::TakeError::Plan(e) => {
            let failure = plan_failure(log, e, named, "takes");
            if unusable.is_empty() {
                failure
            } else {
                failure.and(format_args!("; not laid out: {}", unusable.join("; ")))
            }
        }
        e => Failure::at(log, e),
    }
}

/// The failure of a job (profile, explain, report) on the log at `log`, as one line: `named`,
/// the program was named; `unusable`, the programs not laid out; `verb`, what the command does
/// with a log (`profiles`), said when the only program's log does not fit it.
pub(crate) fn job_failure(
    log: &Path,
    e: bpflog::JobError,
    named: bool,
    unusable: &[String],
    verb: &str,
) -> Failure {
    match e {
        bpflog::JobError::Take(e) => take_failure(log, e, named, unusable),
        bpflog::JobError::Unfit(e) => Failure::at(
            log,
            format!("{e} (is the log from another object? --prog {verb} it anyway)"),
        ),
        e => Failure::at(log, e),
    }
}

/// Says the notes on the log at `log` on stderr, one line each (noise: the first few lines,
/// then how many more).
pub(crate) fn say(log: &Path, notes: &[bpflog::Note]) {
    use bpflog::object::excerpt_name;
    for note in notes {
        match note {
            bpflog::Note::Guessed { program } => eprintln!(
                "bpflog: note: {}: no instruction line in it tells its program; taken as {} (--prog names another)",
                log.display(),
                excerpt_name(program)
            ),
            bpflog::Note::Misfit {
                line: Some(line),
                program,
                why,
            } => eprintln!(
                "bpflog: warning: {}:{line}: the log does not fit {} (named by --prog), taken anyway: {why}",
                log.display(),
                excerpt_name(program)
            ),
            bpflog::Note::Misfit {
                line: None,
                program,
                why,
            } => eprintln!(
                "bpflog: warning: {}: the log does not fit {} (named by --prog): {why}",
                log.display(),
                excerpt_name(program)
            ),
            bpflog::Note::Noise {
                program,
                lines,
                count,
            } => {
                for warning in noise_warnings(log, program, lines, *count) {
                    eprintln!("{warning}");
                }
            }
            other => eprintln!("bpflog: note: {}: {other:?}", log.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logs_lines_are_escaped_on_a_terminal_unless_told() {
        assert!(escape_log(EscapeChoice::Auto, true));
        assert!(!escape_log(EscapeChoice::Auto, false));
        for terminal in [true, false] {
            assert!(escape_log(EscapeChoice::Always, terminal));
            assert!(!escape_log(EscapeChoice::Never, terminal));
        }
    }
}
