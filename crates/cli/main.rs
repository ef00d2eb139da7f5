//! The `bpflog` command: arguments -> resolved configuration -> library call -> output.
//!
//! Exit status: 0 on success (a closed output pipe included), 1 when an input is missing or
//! malformed or the log fits no program, 2 for command-line usage errors.

mod args;

use args::{AnnotateArgs, Cli, ColorChoice, Command, StyleChoice};
use bpflog::object::BpfObject;
use bpflog::{AnnotateOptions, Palette, Program, SelectError, SourceSearch, Style};
use clap::Parser;
use std::fs::File;
use std::io::{self, BufReader, IsTerminal, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Size of the buffers for reading logs and writing output.
const IO_BUFFER: usize = 1 << 20;

/// A failure to report as one line on stderr.
struct Failure(String);

impl Failure {
    fn at(path: &Path, what: impl std::fmt::Display) -> Self {
        Failure(format!("{}: {what}", path.display()))
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Annotate(args) => run_annotate(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(message)) => {
            eprintln!("bpflog: error: {message}");
            ExitCode::from(1)
        }
    }
}

/// Whether to color: `--color`, then NO_COLOR, then whether stdout is a terminal.
fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && io::stdout().is_terminal()
        }
    }
}

/// The resolved configuration: style, colors, diagnostic, sources.
fn annotate_options(args: &AnnotateArgs) -> AnnotateOptions {
    let terminal = io::stdout().is_terminal();
    let style = match args.style {
        StyleChoice::Kernel => Style::Kernel,
        StyleChoice::Rich => Style::Rich,
        StyleChoice::Auto if terminal => Style::Rich,
        StyleChoice::Auto => Style::Kernel,
    };
    // The diagnostic belongs to the rich style; kernel style stays byte-exact unless asked.
    let diagnostic = !args.no_diagnostic && (args.diagnostic || style == Style::Rich);
    AnnotateOptions {
        style,
        palette: Palette::new(use_color(args.color)),
        context: args.context,
        diagnostic,
        annotate_all: args.annotate_all,
        sources: SourceSearch {
            dirs: args.source_dirs.clone(),
            maps: args.source_maps.clone(),
        },
    }
}

/// Where the log comes from: a file that can be read twice, or a spooled copy of stdin.
struct LogSource {
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
    fn open(&self) -> Result<BufReader<File>, Failure> {
        let file = File::open(&self.path).map_err(|e| Failure::at(&self.display, e))?;
        Ok(BufReader::with_capacity(IO_BUFFER, file))
    }
}

/// Copies standard input to a temporary file so that it can be read twice.
fn spool_stdin() -> Result<LogSource, Failure> {
    let display = PathBuf::from("<stdin>");
    let name = format!(
        "bpflog-stdin-{}-{}.log",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let path = std::env::temp_dir().join(name);
    let source = LogSource {
        path,
        display,
        spooled: true,
    };
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .open(&source.path)
        .map_err(|e| Failure::at(&source.path, e))?;
    io::copy(&mut io::stdin().lock(), &mut file).map_err(|e| Failure::at(&source.display, e))?;
    Ok(source)
}

fn run_annotate(args: &AnnotateArgs) -> Result<(), Failure> {
    let data = std::fs::read(&args.object).map_err(|e| Failure::at(&args.object, e))?;
    let object = BpfObject::parse(&data).map_err(|e| Failure::at(&args.object, e))?;
    let options = annotate_options(args);
    let log_path = args.log.as_deref().filter(|p| *p != Path::new("-"));

    if let Some(name) = &args.prog {
        let id = object
            .program(name)
            .map_err(|e| Failure::at(&args.object, e))?;
        let program = Program::new(&object, id).map_err(|e| Failure::at(&args.object, e))?;
        // The user named the program: one pass, straight from the input.
        return match log_path {
            Some(path) => {
                let file = File::open(path).map_err(|e| Failure::at(path, e))?;
                write_annotated(
                    &program,
                    BufReader::with_capacity(IO_BUFFER, file),
                    path,
                    &options,
                )
            }
            None => write_annotated(&program, io::stdin().lock(), Path::new("<stdin>"), &options),
        };
    }

    let source = match log_path {
        Some(path) => LogSource {
            path: path.to_owned(),
            display: path.to_owned(),
            spooled: false,
        },
        None => spool_stdin()?,
    };
    let mut programs = Vec::new();
    let mut unusable = Vec::new();
    for id in object.programs() {
        match Program::new(&object, id) {
            Ok(p) => programs.push(p),
            Err(e) => unusable.push(format!("{}: {e}", object.function(id).name)),
        }
    }
    if programs.is_empty() && !unusable.is_empty() {
        return Err(Failure::at(&args.object, unusable.join("; ")));
    }
    let selection = bpflog::select(&programs, source.open()?).map_err(|e| match e {
        SelectError::Io(e) => Failure::at(&source.display, e),
        SelectError::NoPrograms => Failure::at(&args.object, e),
        SelectError::Ambiguous(_) => {
            Failure::at(&source.display, format!("{e} (choose one with --prog)"))
        }
        SelectError::NoneFits(_) => {
            let mut message = e.to_string();
            if !unusable.is_empty() {
                message.push_str(&format!("; not laid out: {}", unusable.join("; ")));
            }
            Failure::at(
                &source.display,
                format!("{message} (is the log from another object? --prog annotates it anyway)"),
            )
        }
    })?;
    let mut reader = source.open()?;
    reader
        .rewind()
        .map_err(|e| Failure::at(&source.display, e))?;
    write_annotated(
        &programs[selection.chosen],
        reader,
        &source.display,
        &options,
    )
}

/// Annotates `input` to stdout; a closed pipe ends the output quietly.
fn write_annotated(
    program: &Program<'_, '_>,
    input: impl io::BufRead,
    log: &Path,
    options: &AnnotateOptions,
) -> Result<(), Failure> {
    let stdout = io::stdout().lock();
    let mut out = io::BufWriter::with_capacity(IO_BUFFER, stdout);
    let result = bpflog::annotate(program, input, &mut out, options).and_then(|_| out.flush());
    match result {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::at(log, e)),
    }
}
