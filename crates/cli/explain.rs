//! `bpflog explain`: why the verifier rejected the program, where the value came from, and what
//! to change.
//!
//! The program is chosen as for `bpflog report` (--prog, or found from the log); each rejected
//! log of it is explained by [`bpflog::explain::explain`] and written as text, JSON lines or
//! gcc-style lines, or all of them as one SARIF log, as its log ends: memory does not grow with
//! the number of logs. An accepted log says so. Without --prog, a log of the object's only
//! program that does not fit it is refused at the end: the output is held back (as
//! `annotate`'s, [`HOLD`](crate::annotate::HOLD)) so that nothing is written then.

use crate::args::ColorChoice;
use crate::files::{self, InputFile};
use crate::output::OutputThread;
use crate::{Failure, IO_BUFFER, use_color};
use bpflog::explain::ExplainFormat;
use bpflog::{LogData, Palette, SourceFiles};
use clap::ValueEnum;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Arguments of `bpflog explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The BPF object file the program was loaded from.
    pub object: PathBuf,
    /// The verifier log; `-` or nothing reads standard input.
    pub log: Option<PathBuf>,
    /// The program the log belongs to (its function name); found from the log otherwise.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// How to write each explanation: text (the diagnostic, the chain, the help), json (one
    /// object per line), gcc (`file:line:col: error: message [class]`, a note per step), sarif
    /// (one SARIF 2.1.0 log for the run, for code scanning).
    #[arg(long, value_enum, default_value_t = ExplainFormatArg::Text, value_name = "FORMAT")]
    pub format: ExplainFormatArg,
    /// When to color the text output (as for annotate).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// The directory SARIF's file URIs are relative to (`%SRCROOT%`), after --source-map: by
    /// default the git work tree the current directory is in (a `.git` above it), else the
    /// current directory. A file outside it gets an absolute `file://` URI.
    #[arg(long, value_name = "DIR")]
    pub source_root: Option<PathBuf>,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// The kernel's BTF.
    #[command(flatten)]
    pub kernel: crate::args::KernelBtfArgs,
}

/// `--format` values of `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExplainFormatArg {
    /// The rustc-style diagnostic, the chain and the help.
    Text,
    /// One JSON object per rejected log, one per line.
    Json,
    /// gcc-style lines for editors' quickfix lists.
    Gcc,
    /// One SARIF 2.1.0 log of all rejected logs.
    Sarif,
}

/// Runs `bpflog explain`.
pub(crate) fn run(args: &ExplainArgs) -> Result<(), Failure> {
    let log_path = args.log.as_deref().filter(|p| *p != Path::new("-"));
    let inputs = [
        Some(InputFile::File("the object", Some(&args.object))),
        Some(InputFile::File("the log", log_path)),
        InputFile::btf(&args.kernel),
    ];
    files::refuse_overwrite(
        &inputs.into_iter().flatten().collect::<Vec<_>>(),
        &[files::Output::Stdout],
    )?;
    let btf = crate::KernelBtfFile::read(&args.kernel)?;
    let kernel = crate::kernel_btf(&btf)?;
    let prog = args.prog.as_deref();
    let search = args.sources.search(&[&args.object]);
    // A --source-root that is not there is refused whatever the format.
    let paths = sarif_paths(args.source_root.as_deref(), &search)?;
    crate::with_programs(&args.object, prog, kernel.as_ref(), |programs, unusable| {
        // Only the text shows source lines.
        let text = args.format == ExplainFormatArg::Text;
        files::refuse_over_sources(text, programs, &search, &[files::Output::Stdout])?;
        // A file (standard input copied to one), refused when it is no verifier log.
        let source = crate::log_file(log_path)?;
        let display = source.display.clone();
        // None: SARIF, one document for all the logs.
        let format = match args.format {
            ExplainFormatArg::Text => Some(ExplainFormat::Text),
            ExplainFormatArg::Json => Some(ExplainFormat::Json),
            ExplainFormatArg::Gcc => Some(ExplainFormat::Gcc),
            ExplainFormatArg::Sarif => None,
        };
        let mut sources = SourceFiles::new(search.clone());
        let palette = Palette::new(format == Some(ExplainFormat::Text) && use_color(args.color));
        // The only program's misfit is found at the end (without --prog), and SARIF's document
        // opens before the logs are read: held back till then.
        let checked = prog.is_none() && programs.len() == 1;
        let hold = if checked || format.is_none() {
            crate::annotate::HOLD
        } else {
            0
        };
        let mut out = OutputThread::stdout(IO_BUFFER, hold).map_err(Failure::stdout)?;
        // A failed write ends the read; what failed is told apart from the read's errors.
        let mut failed: Option<io::Error> = None;
        let input = || bpflog::Input::among(programs, LogData::from(&source.file)).prog(prog);
        let explained = match format {
            Some(format) => bpflog::explain::explain(input(), |program, e| {
                bpflog::explain::write(&e, program, format, &mut sources, &palette, &mut out)
                    .map_err(|e| stopped(&mut failed, e))
            }),
            // SARIF: the document written here as the explanations come from the read, on a
            // thread of its own; a few wait between the two.
            None => std::thread::scope(|scope| {
                let (send, explanations) = std::sync::mpsc::sync_channel(16);
                let read = scope.spawn(move || {
                    bpflog::explain::explain(input(), |_, e| {
                        send.send(e)
                            .map_err(|_| io::Error::other("the SARIF writer stopped"))
                    })
                });
                let written = bpflog::explain::write_sarif(explanations, &paths, &mut out);
                if let Err(e) = written {
                    stopped(&mut failed, e);
                }
                read.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
        };
        let explained = match (explained, failed) {
            (Ok(explained), None) => explained,
            (_, Some(e)) => return Err(written(e)),
            (Err(e), None) => {
                let failure = crate::job_failure(&display, e, prog.is_some(), unusable, "explains");
                return Err(refuse(out, failure, &display));
            }
        };
        crate::say(&display, &explained.notes);
        let result = (|| {
            // A load that failed with no rejection says where, in place of "no rejection".
            let said: Vec<String> = match &explained.load_failures[..] {
                [] if explained.explained == 0 => vec![format!(
                    "{}: no rejection: nothing to explain",
                    display.display()
                )],
                failures => (failures.iter())
                    .map(|f| format!("{}:{}: {f}", display.display(), f.line))
                    .collect(),
            };
            for said in said {
                if format == Some(ExplainFormat::Text) {
                    writeln!(out, "{said}")?;
                } else {
                    eprintln!("bpflog: note: {said}");
                }
            }
            out.finish()
        })();
        crate::args::source_notes(&search, &[&args.object]);
        result.map_err(written)
    })
}

/// How SARIF names files: relative to `root` (or the default root), canonical; relative names
/// from the current directory; `search`'s --source-map first.
fn sarif_paths(
    root: Option<&Path>,
    search: &bpflog::SourceSearch,
) -> Result<bpflog::explain::SarifPaths, Failure> {
    let base = std::env::current_dir().unwrap_or_default();
    let root = match root {
        Some(root) => root.to_path_buf(),
        // The nearest directory above holding a `.git` (a directory, or a worktree's file).
        None => (base.ancestors())
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
            .unwrap_or(&base)
            .to_path_buf(),
    };
    let root = std::fs::canonicalize(&root)
        .map_err(|e| Failure::at(&root, format_args!("the source root: {e}")))?;
    Ok(bpflog::explain::SarifPaths::new(root, base, search.clone()))
}

/// A failed write of the output, whose message names standard output.
fn written(e: io::Error) -> Failure {
    Failure::closed_or(e, |e| Failure::Error(e.to_string()))
}

/// Keeps `e`, a failed write, in `failed`, and says the read is to stop.
fn stopped(failed: &mut Option<io::Error>, e: io::Error) -> io::Error {
    failed.get_or_insert(e);
    io::Error::other("writing the explanations failed")
}

/// Refuses the log with `failure`: nothing written when the output is still held back;
/// otherwise after what went out, which is said.
fn refuse(out: OutputThread, failure: Failure, log: &Path) -> Failure {
    if !out.released() {
        return crate::annotate::withdraw(out, failure);
    }
    // A closed pipe does not hide the refusal.
    if let Err(e @ Failure::Error(_)) = out.finish().map_err(written) {
        return e;
    }
    failure.and(format_args!(
        "; found after output was written (more than {} MiB): the output holds the \
         explanations of {}'s logs before it",
        crate::annotate::HOLD >> 20,
        log.display()
    ))
}
