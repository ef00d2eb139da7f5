//! The `bpflog` command: arguments -> resolved configuration -> library call -> output.
//!
//! Exit status: 0 on success (a closed output pipe included), 1 when an input is missing or
//! malformed or the log fits no program, 2 for command-line usage errors, 3 when `verify` saw
//! the kernel reject a program.

mod annotate;
mod args;
mod docs;
mod lines;
mod output;
mod profile;
mod report;
mod sniff;
mod verify;

use args::{Cli, ColorChoice, Command};
use bpflog::log::ReadAhead;
use bpflog::object::{BpfObject, Loader};
use bpflog::{PlanError, Program, SelectError};
use clap::Parser;
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Read, Seek};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Size of the buffers for reading logs and writing output.
pub(crate) const IO_BUFFER: usize = 1 << 20;

/// A failure to report as one line on stderr.
pub(crate) struct Failure(String);

impl Failure {
    fn at(path: &Path, what: impl std::fmt::Display) -> Self {
        Failure(format!("{}: {what}", path.display()))
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
        Err(Failure(message)) => {
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
    match e.print() {
        Err(write) if to_stdout && write.kind() != io::ErrorKind::BrokenPipe => {
            eprintln!("bpflog: error: standard output: {write}");
            ExitCode::from(1)
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
    }
}

/// Every program of every object laid out by each of `loaders` (a loader that lays a program out
/// like an earlier one adds nothing), and why the programs that could not be laid out by the
/// first loader could not. No program at all is an error naming the first reason.
pub(crate) fn lay_out<'o, 'd: 'o, 'p>(
    objects: impl IntoIterator<Item = (&'o BpfObject<'d>, &'p Path)>,
    loaders: &[Loader],
) -> Result<(Vec<Program<'o, 'd>>, Vec<String>), Failure> {
    let mut programs: Vec<Program> = Vec::new();
    let mut unusable = Vec::new();
    let mut first_failure = None;
    let mut first_path = None;
    for (object, path) in objects {
        first_path.get_or_insert(path);
        for id in object.programs() {
            let first = programs.len();
            for &loader in loaders {
                match Program::with_loader(object, id, loader) {
                    Ok(p) if programs[first..].iter().any(|q| q.layout == p.layout) => {}
                    Ok(p) => programs.push(p),
                    Err(e) if Some(&loader) == loaders.first() => {
                        let reason = format!("{}: {e}", program_label(object, id));
                        first_failure.get_or_insert_with(|| Failure::at(path, &reason));
                        unusable.push(reason);
                    }
                    Err(_) => {}
                }
            }
        }
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
            source: SelectError::Ambiguous(_),
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

/// Whether to color: `--color`, then NO_COLOR, then whether stdout is a terminal.
pub(crate) fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && io::stdout().is_terminal()
        }
    }
}

/// Where the log comes from: a file that can be read twice, or a spooled copy of what cannot.
pub(crate) struct LogSource {
    path: PathBuf,
    display: PathBuf,
    /// A temporary file to remove when done.
    spooled: bool,
}

impl Drop for LogSource {
    fn drop(&mut self) {
        if self.spooled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl LogSource {
    /// The log at `path` (standard input when `None`), to be read more than once: standard
    /// input, and a path that is not a regular file (a pipe such as `<(...)`, a device), are
    /// copied to a temporary file first.
    pub(crate) fn new(path: Option<&Path>) -> Result<LogSource, Failure> {
        let Some(path) = path else {
            return spool(Path::new("<stdin>"), io::stdin().lock());
        };
        let file = File::open(path).map_err(|e| Failure::at(path, e))?;
        let meta = file.metadata().map_err(|e| Failure::at(path, e))?;
        if !meta.is_file() {
            return spool(path, file);
        }
        Ok(LogSource {
            path: path.to_owned(),
            display: path.to_owned(),
            spooled: false,
        })
    }

    /// The log from its start, read ahead on a thread of its own.
    fn open_ahead(&self) -> Result<ReadAhead, Failure> {
        Ok(ReadAhead::new(self.open_file()?, IO_BUFFER))
    }

    /// The log's file.
    fn open_file(&self) -> Result<File, Failure> {
        File::open(&self.path).map_err(|e| Failure::at(&self.display, e))
    }

    fn open(&self) -> Result<BufReader<File>, Failure> {
        // Small: the readers read blocks of their own, which then bypass this buffer.
        Ok(BufReader::with_capacity(8 * 1024, self.open_file()?))
    }
}

/// Copies `input` (called `display`) to a temporary file, so that it can be read twice.
fn spool(display: &Path, mut input: impl Read) -> Result<LogSource, Failure> {
    let name = format!(
        "bpflog-log-{}-{}.log",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let path = std::env::temp_dir().join(name);
    let source = LogSource {
        path,
        display: display.to_owned(),
        spooled: true,
    };
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .open(&source.path)
        .map_err(|e| Failure::at(&source.path, e))?;
    io::copy(&mut input, &mut file).map_err(|e| Failure::at(&source.display, e))?;
    Ok(source)
}

/// A log opened for reading from its start.
struct OpenedLog {
    input: Input,
    /// What to call it in messages.
    display: PathBuf,
    /// A spooled copy of standard input, removed when the log is dropped.
    _spooled: Option<LogSource>,
    /// The program was taken without reading the log (the object has one): the caller checks
    /// the fit while it reads.
    unchecked: bool,
}

/// Where an opened log's bytes come from.
enum Input {
    /// A file (that can be read in parts at once: see [`bpflog::profile::profile_checked_file`]).
    File(File),
    Stdin,
    /// Already being read ahead (the program's logs taken out of a file).
    Ahead(ReadAhead),
}

impl Input {
    /// The log, read on a thread of its own.
    fn ahead(self) -> ReadAhead {
        match self {
            Input::File(file) => ReadAhead::new(file, IO_BUFFER),
            Input::Stdin => ReadAhead::new(io::stdin(), IO_BUFFER),
            Input::Ahead(ahead) => ahead,
        }
    }
}

/// Opens the log at `log_path` (standard input when `None`) for one pass.
fn open_once(log_path: Option<&Path>, unchecked: bool) -> Result<OpenedLog, Failure> {
    Ok(match log_path {
        Some(path) => {
            let file = File::open(path).map_err(|e| Failure::at(path, e))?;
            OpenedLog {
                input: Input::File(file),
                display: path.to_owned(),
                _spooled: None,
                unchecked,
            }
        }
        None => OpenedLog {
            input: Input::Stdin,
            display: PathBuf::from("<stdin>"),
            _spooled: None,
            unchecked,
        },
    })
}

/// The program of `object` that the log at `log_path` (standard input when `None`) belongs to,
/// and the log reduced to that program's logs (loader chatter and other programs' logs left
/// out: see [`bpflog::Extract`]).
///
/// An object with one program and `one_pass_check`: read once, the caller checks the fit.
/// Otherwise the file is planned first ([`bpflog::plan`]), which reads it twice (standard input
/// is spooled, unless `copied` is the copy made already); a file holding the logs of several
/// programs wants `--prog`. (`profile` tries [`bpflog::profile::profile_planned_file`] before
/// this.)
fn program_and_log<'o, 'd>(
    object: &'o BpfObject<'d>,
    object_path: &Path,
    prog: Option<&str>,
    log_path: Option<&Path>,
    one_pass_check: bool,
    copied: Option<LogSource>,
) -> Result<(Program<'o, 'd>, OpenedLog), Failure> {
    if let Some(name) = prog {
        object
            .program(name)
            .map_err(|e| Failure::at(object_path, e))?;
    }
    // One program: nothing to choose; the caller checks the fit in its one pass.
    if one_pass_check && let [id] = object.programs()[..] {
        let program = Program::new(object, id).map_err(|e| Failure::at(object_path, e))?;
        // The caller (profile_checked) takes the program's logs out of the file on the way.
        return Ok((program, open_once(log_path, true)?));
    }

    let source = match copied {
        Some(source) => source,
        None => LogSource::new(log_path)?,
    };
    // Nothing to choose a program by, nothing to show: not taken for a log.
    if let Some(not) = sniff::no_verifier_log(source.open_file()?, &source.display)? {
        return Err(Failure::at(&source.display, not));
    }
    let (mut programs, unusable) = lay_out([(object, object_path)], &[Loader::Libbpf])?;
    let plan = bpflog::plan(&programs, source.open_ahead()?, prog).map_err(|e| {
        let Failure(mut message) = plan_failure(&source.display, e, prog.is_some(), "takes");
        if !unusable.is_empty() {
            message.push_str(&format!("; not laid out: {}", unusable.join("; ")));
        }
        Failure(message)
    })?;
    // The programs whose logs the file holds (a log without instructions names none); with
    // --prog, the logs that fit it.
    let mut found: Vec<usize> = Vec::new();
    for s in plan.segments.iter().filter(|s| s.misfit.is_none()) {
        if let Some(p) = s.program.filter(|p| !found.contains(p)) {
            found.push(p);
        }
    }
    let named = prog.and_then(|name| programs.iter().position(|p| p.name() == name));
    let chosen = match (named, &found[..]) {
        (Some(p), _) => p,
        (None, [p]) => *p,
        (None, []) => 0,
        (None, _) => {
            let names: Vec<String> = found
                .iter()
                .map(|&p| programs[p].name().to_owned())
                .collect();
            return Err(Failure::at(
                &source.display,
                format!(
                    "the file holds the logs of several programs ({}); choose one with --prog",
                    bpflog::object::excerpt_names(&names)
                ),
            ));
        }
    };
    let mut reader = source.open()?;
    reader
        .rewind()
        .map_err(|e| Failure::at(&source.display, e))?;
    let fitting = plan
        .segments
        .iter()
        .map(|s| s.program == Some(chosen) && s.misfit.is_none())
        .collect::<Vec<bool>>();
    let extract = if fitting.contains(&true) {
        bpflog::Extract::segments(reader, fitting)
    } else {
        if named.is_some() {
            // Nothing fits the named program: take every log, as asked, and say so.
            eprintln!(
                "bpflog: warning: {}: no log in it fits {} (named by --prog); taking them all",
                source.display.display(),
                bpflog::object::excerpt_name(programs[chosen].name())
            );
        } else {
            // No log has an instruction line to tell its program by (an accepted program's
            // level-1 log has none): the first program is taken, and that is said.
            eprintln!(
                "bpflog: note: {}: no instruction line in it tells its program; taken as {} (--prog names another)",
                source.display.display(),
                bpflog::object::excerpt_name(programs[chosen].name())
            );
        }
        bpflog::Extract::all(reader)
    };
    let program = programs.swap_remove(chosen);
    let log = OpenedLog {
        // The logs are taken out on the reading thread.
        input: Input::Ahead(ReadAhead::new(extract, IO_BUFFER)),
        display: source.display.clone(),
        _spooled: source.spooled.then_some(source),
        unchecked: false,
    };
    Ok((program, log))
}
