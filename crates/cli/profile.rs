//! `bpflog profile`: where the verifier spent its effort, per source line and function.

use crate::args::ColorChoice;
use crate::files::{self, InputFile, NewFile, Output};
use crate::{Failure, IO_BUFFER, use_color};
use bpflog::LogData;
use bpflog::log::ReadAhead;
use bpflog::profile::{Format, Profile, ProfileRequest, RenderOptions};
use bpflog::{Palette, SourceFiles};
use clap::{ValueEnum, error::ErrorKind};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Arguments of `bpflog profile`.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// The BPF object file the program was loaded from (with --compare: of both logs, unless
    /// --old-obj / --new-obj name each).
    #[arg(required_unless_present = "compare")]
    pub object: Option<PathBuf>,
    /// The verifier log (level 1 or 2); `-` or nothing reads standard input.
    #[arg(conflicts_with = "compare")]
    pub log: Option<PathBuf>,
    /// Compare two logs: per-line and per-function changes, largest first.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    pub compare: Option<Vec<PathBuf>>,
    /// With --compare: the object OLD was loaded from (default: OBJ).
    #[arg(long = "old-obj", value_name = "OBJ", requires = "compare")]
    pub old_obj: Option<PathBuf>,
    /// With --compare: the object NEW was loaded from (default: OBJ).
    #[arg(long = "new-obj", value_name = "OBJ", requires = "compare")]
    pub new_obj: Option<PathBuf>,
    /// The program the log belongs to (its function name); found from the log otherwise.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// Rows of each table (table format).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Print each source file whole with a gutter of visits per line, hot lines highlighted.
    #[arg(long, conflicts_with_all = ["compare", "format"])]
    pub source: bool,
    /// Also write a flame graph (SVG) of the verifier's visits: program, BPF-to-BPF calls,
    /// inlined functions, source line.
    #[arg(long, value_name = "SVG", conflicts_with = "compare")]
    pub flamegraph: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ProfileFormatArg::Table, value_name = "FORMAT")]
    pub format: ProfileFormatArg,
    /// When to color the output (table format and --source): auto colors a terminal (TERM set,
    /// not dumb) unless NO_COLOR or CLICOLOR=0 is set; CLICOLOR_FORCE colors a pipe too (NO_COLOR
    /// still wins).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// The kernel's BTF.
    #[command(flatten)]
    pub kernel: crate::args::KernelBtfArgs,
}

/// `--format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileFormatArg {
    /// The summary, the hottest lines and functions as aligned columns.
    Table,
    /// Every line and function, comma-separated.
    Csv,
    /// One JSON object: summary, lines, functions.
    Json,
}

/// Runs `bpflog profile`; then says which source files it did not read.
pub fn run(args: &ProfileArgs) -> Result<(), Failure> {
    let objects: Vec<&Path> = [&args.object, &args.old_obj, &args.new_obj]
        .into_iter()
        .filter_map(Option::as_deref)
        .collect();
    let search = args.sources.search(&objects);
    let result = profile(args, &mut SourceFiles::new(search.clone()));
    crate::args::source_notes(&search, &objects);
    result
}

/// Profiles as `args` say, reading source files through `files`.
fn profile(args: &ProfileArgs, files: &mut SourceFiles) -> Result<(), Failure> {
    let options = RenderOptions::default()
        .format(match args.format {
            ProfileFormatArg::Table => Format::Table,
            ProfileFormatArg::Csv => Format::Csv,
            ProfileFormatArg::Json => Format::Json,
        })
        .top(args.top)
        .palette(match args.format {
            ProfileFormatArg::Table => Palette::new(use_color(args.color)),
            ProfileFormatArg::Csv | ProfileFormatArg::Json => Palette::default(),
        });
    let prog = args.prog.as_deref();
    let btf = crate::KernelBtfFile::read(&args.kernel)?;
    let kernel = crate::kernel_btf(&btf)?;
    let kernel = kernel.as_ref();
    if let Some(logs) = &args.compare {
        let [old_log, new_log] = logs.as_slice() else {
            usage_error("--compare takes two logs: OLD NEW");
        };
        let object_for = |named: &Option<PathBuf>, which: &str| -> PathBuf {
            match (named, &args.object) {
                (Some(path), _) | (None, Some(path)) => path.clone(),
                (None, None) => usage_error(&format!(
                    "--compare needs the object of the {which} log: OBJ or --{which}-obj"
                )),
            }
        };
        let (old_obj, new_obj) = (
            object_for(&args.old_obj, "old"),
            object_for(&args.new_obj, "new"),
        );
        let inputs = [
            InputFile::File("the object", Some(&old_obj)),
            InputFile::File("the object", Some(&new_obj)),
            InputFile::File("the log", Some(old_log)),
            InputFile::File("the log", Some(new_log)),
        ];
        let btf = InputFile::btf(&args.kernel);
        files::refuse_overwrite(&[&inputs[..], btf.as_slice()].concat(), &[Output::Stdout])?;
        let old = profile_log(&old_obj, Some(old_log), prog, files, None, false, kernel)?;
        let new = profile_log(&new_obj, Some(new_log), prog, files, None, false, kernel)?;
        let comparison = bpflog::profile::compare(old, new);
        return write_out(Path::new("<stdout>"), |out| {
            bpflog::profile::render_comparison(&comparison, out, &options)
        });
    }
    let Some(object) = &args.object else {
        usage_error("the object file is required");
    };
    let log = args.log.as_deref().filter(|p| *p != Path::new("-"));
    let flamegraph = args.flamegraph.as_deref();
    let inputs = [
        InputFile::File("the object", Some(object)),
        InputFile::File("the log", log),
    ];
    let btf = InputFile::btf(&args.kernel);
    let outputs = [Some(Output::Stdout), flamegraph.map(Output::File)];
    files::refuse_overwrite(
        &[&inputs[..], btf.as_slice()].concat(),
        &outputs.into_iter().flatten().collect::<Vec<_>>(),
    )?;
    // Made first: a flame graph that cannot be written is said before the log is read.
    let mut svg = flamegraph.map(NewFile::create).transpose()?;
    let profile = profile_log(
        object,
        args.log.as_ref(),
        prog,
        files,
        svg.as_mut(),
        args.source,
        kernel,
    )?;
    if let Some(why) = profile.nothing_to_profile() {
        // No instruction line: a table with nothing in it is no profile, whatever the log held
        // (and no flame graph is left for it).
        return Err(Failure::at(
            log.unwrap_or(Path::new("<stdin>")),
            format!(
                "nothing to profile of {}: {why}",
                bpflog::object::excerpt_name(&profile.program)
            ),
        ));
    }
    write_out(Path::new("<stdout>"), |out| {
        if args.source {
            bpflog::profile::render_source(&profile, files, out, &options)
        } else {
            bpflog::profile::render(&profile, out, &options)
        }
    })?;
    if let (Some(svg), Some(path)) = (svg, flamegraph) {
        // Once the sources are read (--source), and not over one of them.
        files::refuse_source(path, &files.search().read)?;
        svg.commit()?;
    }
    Ok(())
}

/// Exits with clap's usage error (status 2).
fn usage_error(message: &str) -> ! {
    let mut command = crate::command();
    command.build();
    let command = command.find_subcommand_mut("profile").cloned();
    command
        .unwrap_or_else(crate::command)
        .error(ErrorKind::MissingRequiredArgument, message)
        .exit()
}

/// Profiles the log at `log` (`-` or `None`: standard input) of a program of `object_path`
/// ([`bpflog::profile::profile`], which chooses how to read it), writing its flame graph
/// to `flamegraph` when asked (`whole_sources`: the source files are then shown whole).
fn profile_log(
    object_path: &Path,
    log: Option<&PathBuf>,
    prog: Option<&str>,
    files: &mut SourceFiles,
    flamegraph: Option<&mut NewFile>,
    whole_sources: bool,
    kernel: Option<&bpflog::object::KernelBtf<'_>>,
) -> Result<Profile, Failure> {
    crate::with_programs(object_path, prog, kernel, |programs, unusable| {
        let outputs = [
            Some(Output::Stdout),
            flamegraph.as_ref().map(|f| Output::File(f.path())),
        ];
        files::refuse_over_sources(
            whole_sources || bpflog::profile::reads_sources(programs),
            programs,
            files.search(),
            &outputs.into_iter().flatten().collect::<Vec<_>>(),
        )?;
        let log_path = log.map(PathBuf::as_path).filter(|p| *p != Path::new("-"));
        let request = ProfileRequest::default()
            .threads(std::thread::available_parallelism().map_or(1, |n| n.get()))
            .stacks(flamegraph.is_some());
        // The log opened as the library needs it: a file to read more than once (standard
        // input and pipes copied first), or read once as it comes.
        let (source, opened);
        let (data, display): (LogData<'_, ReadAhead>, _) = if request.needs_file(programs) {
            source = crate::log_file(log_path)?;
            (LogData::File((&source.file).into()), source.display.clone())
        } else {
            match log_path {
                Some(path) => {
                    opened = File::open(path).map_err(|e| Failure::at(path, e))?;
                    (LogData::File((&opened).into()), path.to_owned())
                }
                None => (
                    LogData::Stream(ReadAhead::new(io::stdin(), IO_BUFFER)),
                    PathBuf::from("<stdin>"),
                ),
            }
        };
        let input = bpflog::Input::among(programs, data).prog(prog);
        let profiled = bpflog::profile::profile(input, &request, files)
            .map_err(|e| crate::job_failure(&display, e, prog.is_some(), unusable, "profiles"))?;
        crate::say(&display, &profiled.notes);
        if let (Some(svg), Some(stacks)) = (flamegraph, &profiled.stacks) {
            if let Some(line) = stacks.too_deep {
                eprintln!(
                    "{}",
                    crate::too_deep_warning(format!("{}: log line {line}", display.display()))
                );
            }
            let path = svg.path().to_owned();
            let mut out = io::BufWriter::new(svg);
            stacks
                .write_svg(&mut out)
                .and_then(|()| out.flush())
                .map_err(|e| Failure::at(&path, e))?;
        }
        said_something(&profiled.profile, &display, log_path)?;
        Ok(profiled.profile)
    })
}

/// Fails when the log profiled said nothing a verifier says (no instruction line, no `from X to
/// Y`, no summary): an empty profile is no answer. Why, from the file at `log_path` when there is
/// one to read again ([`crate::sniff::no_verifier_log`]).
fn said_something(
    profile: &Profile,
    display: &Path,
    log_path: Option<&Path>,
) -> Result<(), Failure> {
    let totals = &profile.totals;
    let summary = &profile.summary;
    if totals.insn_lines > 0
        || totals.paths > 0
        || summary.insns.is_some()
        || summary.verdict != bpflog::profile::Verdict::Unknown
    {
        return Ok(());
    }
    let not = match crate::sniff::reopen_file(log_path) {
        Some(file) => crate::sniff::no_verifier_log(file, display)?,
        None => None,
    };
    Err(Failure::at(
        display,
        not.map_or_else(
            || "no verifier log in it (no instruction line, no summary)".to_owned(),
            |not| not.to_string(),
        ),
    ))
}

/// Writes to stdout through `write`; a closed pipe ends the output quietly.
fn write_out(
    what: &Path,
    write: impl FnOnce(&mut io::BufWriter<io::StdoutLock<'static>>) -> io::Result<()>,
) -> Result<(), Failure> {
    let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
    write(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| Failure::io(what, e))
}
