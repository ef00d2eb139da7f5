//! `bpflog explain`: why the verifier rejected the program, where the value came from, and what
//! to change.
//!
//! The program is chosen as for `bpflog report` (--prog, or found from the log); each rejected
//! log of it is explained by [`bpflog::explain::explain`] and written as text, JSON lines or
//! gcc-style lines, or all of them as one SARIF log. An accepted log says so.

use crate::args::ColorChoice;
use crate::files::{self, Input, Output};
use crate::{Failure, IO_BUFFER, use_color};
use bpflog::explain::ExplainFormat;
use bpflog::{Palette, SourceFiles};
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
    #[arg(long, value_enum, default_value_t = FormatChoice::Text, value_name = "FORMAT")]
    pub format: FormatChoice,
    /// When to color the text output (as for annotate).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// The kernel's BTF.
    #[command(flatten)]
    pub kernel: crate::args::KernelBtfArgs,
}

/// `--format` values of `explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatChoice {
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
        Some(Input::File("the object", Some(&args.object))),
        Some(Input::File("the log", log_path)),
        Input::btf(&args.kernel),
    ];
    files::refuse_overwrite(
        &inputs.into_iter().flatten().collect::<Vec<_>>(),
        &[Output::Stdout],
    )?;
    let btf = crate::KernelBtfFile::read(&args.kernel)?;
    let kernel = crate::kernel_btf(&btf)?;
    let prog = args.prog.as_deref();
    let search = args.sources.search(&[&args.object]);
    crate::with_programs(&args.object, prog, kernel.as_ref(), |programs, unusable| {
        // Only the text shows source lines.
        let text = args.format == FormatChoice::Text;
        files::refuse_over_sources(text, programs, &search, &[Output::Stdout])?;
        // A file (standard input copied to one), refused when it is no verifier log.
        let source = crate::log_file(log_path)?;
        let display = source.display.clone();
        let explained = bpflog::explain::explain_log(programs, &source.file, prog)
            .map_err(|e| crate::job_failure(&display, e, prog.is_some(), unusable, "explains"))?;
        crate::say(&display, &explained.notes);
        let program = &programs[explained.program];
        let explanations = explained.explanations;
        // None: SARIF, one document for all the logs.
        let format = match args.format {
            FormatChoice::Text => Some(ExplainFormat::Text),
            FormatChoice::Json => Some(ExplainFormat::Json),
            FormatChoice::Gcc => Some(ExplainFormat::Gcc),
            FormatChoice::Sarif => None,
        };
        let mut sources = SourceFiles::new(search.clone());
        let palette = Palette::new(format == Some(ExplainFormat::Text) && use_color(args.color));
        let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
        let result = (|| {
            // A load that failed with no rejection says where, in place of "no rejection".
            let said: Vec<String> = match &explained.load_failures[..] {
                [] if explanations.is_empty() => vec![format!(
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
            match format {
                Some(format) => {
                    for e in &explanations {
                        bpflog::explain::write(
                            e,
                            program,
                            format,
                            &mut sources,
                            &palette,
                            &mut out,
                        )?;
                    }
                }
                None => bpflog::explain::write_sarif(&explanations, &mut out)?,
            }
            out.flush()
        })();
        crate::args::source_notes(&search, &[&args.object]);
        result.map_err(Failure::stdout)
    })
}
