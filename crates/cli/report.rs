//! `bpflog report`: one self-contained HTML file with the annotated log and the source, linked.
//!
//! The program is chosen as for `bpflog profile` (--prog, or found from the log); the page is
//! written by [`bpflog::report::report`] to the file named by `-o` (`-`: standard output), which
//! is refused when it is an input and put in place only once complete (see [`crate::files`]).

use crate::files::{self, InputFile, NewFile, Output};
use crate::{Failure, IO_BUFFER};
use bpflog::profile::NothingToProfile;
use bpflog::report::{ReportOptions, ReportStats};
use bpflog::{JobError, LogData};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Arguments of `bpflog report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The BPF object file the program was loaded from.
    pub object: PathBuf,
    /// The verifier log (level 2 shows every path); `-` or nothing reads standard input.
    pub log: Option<PathBuf>,
    /// Where to write the HTML file (`-`: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The program the log belongs to (its function name); found from the log otherwise.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// The page's title (default: the program's name).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// The kernel's BTF.
    #[command(flatten)]
    pub kernel: crate::args::KernelBtfArgs,
}

/// Runs `bpflog report`.
pub(crate) fn run(args: &ReportArgs) -> Result<(), Failure> {
    let log_path = args.log.as_deref().filter(|p| *p != Path::new("-"));
    let to_stdout = args.output == Path::new("-");
    let output = (!to_stdout).then_some(args.output.as_path());
    let inputs = [
        Some(InputFile::File("the object", Some(&args.object))),
        Some(InputFile::File("the log", log_path)),
        InputFile::btf(&args.kernel),
    ];
    let output_kind = match output {
        Some(path) => Output::File(path),
        None => Output::Stdout,
    };
    files::refuse_overwrite(
        &inputs.into_iter().flatten().collect::<Vec<_>>(),
        &[output_kind],
    )?;
    // Made first: an output that cannot be written is said before the log is read.
    let mut file = output.map(NewFile::create).transpose()?;
    let btf = crate::KernelBtfFile::read(&args.kernel)?;
    let kernel = crate::kernel_btf(&btf)?;
    let prog = args.prog.as_deref();
    crate::with_programs(&args.object, prog, kernel.as_ref(), |programs, unusable| {
        let options = ReportOptions::default()
            .title(args.title.clone().unwrap_or_default())
            .sources(args.sources.search(&[&args.object]));
        files::refuse_over_sources(true, programs, &options.sources, &[output_kind])?;
        // A file (standard input copied to one), refused when it is no verifier log.
        let source = crate::log_file(log_path)?;
        let display = &source.display;
        let out: Box<dyn Write> = match &mut file {
            Some(file) => Box::new(file),
            None => Box::new(io::stdout().lock()),
        };
        let mut out = io::BufWriter::with_capacity(IO_BUFFER, WriteSide { out, failed: false });
        let input = bpflog::Input::among(programs, LogData::from(&source.file)).prog(prog);
        let result = match bpflog::report::report(input, &mut out, &options) {
            Ok(reported) => {
                crate::say(display, &reported.notes);
                out.flush().map(|()| reported.stats)
            }
            Err(JobError::Io(e)) => Err(e),
            Err(e) => {
                return Err(crate::job_failure(
                    display,
                    e,
                    prog.is_some(),
                    unusable,
                    "reports",
                ));
            }
        };
        let write_failed = out.get_ref().failed;
        crate::args::source_notes(&options.sources, &[&args.object]);
        drop(out);
        match result {
            Ok(ReportStats {
                nothing_to_profile: Some(why),
                rejected: false,
                ..
            }) => {
                // No instruction and no rejection to explain: an empty page, whatever the log
                // held. Not written (the file is left as it was).
                Err(Failure::at(display, format!("nothing to report: {why}")))
            }
            Ok(stats) => {
                if let Some(why @ NothingToProfile::NotKept { .. }) = stats.nothing_to_profile {
                    // The page has the rejection explained, and no profile: a level-2 log
                    // would have one.
                    eprintln!(
                        "bpflog: note: {}: no profile in the page: {why}",
                        display.display()
                    );
                }
                if let Some(line) = stats.too_deep {
                    eprintln!(
                        "{}",
                        crate::too_deep_warning(format!("{}: log line {line}", display.display()))
                    );
                }
                // Complete: renamed into place, unless that is over a source file it read.
                if let Some(output) = output {
                    files::refuse_source(output, &options.sources.read)?;
                }
                file.map_or(Ok(()), NewFile::commit)
            }
            // An error of the output names the output; any other, the log. The file is left as it
            // was.
            Err(e) if write_failed => Err(Failure::io(&args.output, e)),
            Err(e) => Err(Failure::at(display, e)),
        }
    })
}

/// The output, remembering whether writing to it failed.
struct WriteSide<W> {
    out: W,
    failed: bool,
}

impl<W: Write> Write for WriteSide<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = self.out.write(buf);
        self.failed |= r.is_err();
        r
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = self.out.flush();
        self.failed |= r.is_err();
        r
    }
}
