//! `bpflog annotate`: objects and a log in, the annotated log out.
//!
//! The library's [`bpflog::annotate`] chooses how the log is read; this opens it the way it
//! asks ([`AnnotateOptions::known_program`]): straight from the input when it is read once (one program known beforehand), or as a
//! file read at offsets when each log's program is chosen by looking ahead (standard input or a
//! pipe copied to a temporary file as it comes). Without --prog, the output is held back up to
//! [`HOLD`] bytes so that a misfit is refused before anything is written, as far as memory
//! allows (output to the end of a file is written, and taken back on a refusal: see
//! [`OutputThread`]). Notes (a log cut at the top, a layout in doubt, a named program that does not
//! fit) go to stderr; the output is the log. A log without a line of the verifier's
//! ([`crate::sniff`]) is refused when empty or blank; other text passes through, with a warning.

use crate::args::{ColorChoice, EscapeChoice, KernelLinesChoice, LoaderChoice, StyleChoice};
use crate::files::{self, InputFile};
use crate::output::OutputThread;
use crate::sniff::{Sniffer, Sniffing};
use crate::{
    Failure, IO_BUFFER, LogSource, escape_log, lay_out, noise_warnings, plan_failure,
    too_deep_warning, use_color,
};
use bpflog::log::{ReadAhead, SourceLines};
use bpflog::object::{BpfObject, Loader, excerpt, excerpt_name, excerpt_names};
use bpflog::{
    AnnotateOptions, LogAnnotated, LogData, OutputFormat, Palette, PlanError, Program, Style,
    Wrapper,
};
use clap::ValueEnum;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Arguments of `bpflog annotate`.
#[derive(Debug, clap::Args)]
pub(crate) struct AnnotateArgs {
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
    /// Output: the annotated log (text), or one JSON object per log line (json; schema in
    /// docs/annotate.md).
    #[arg(long, value_enum, default_value_t = AnnotateFormatArg::Text, value_name = "FORMAT")]
    pub format: AnnotateFormatArg,
}

/// `annotate --format` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AnnotateFormatArg {
    /// The annotated log.
    Text,
    /// One JSON object per log line.
    Json,
}

/// Which paths are objects and which is the log.
struct Inputs {
    objects: Vec<PathBuf>,
    /// `None`: standard input.
    log: Option<PathBuf>,
}

/// Sorts the positional arguments, `--obj` and what follows `--` into objects and a log.
fn inputs(args: &AnnotateArgs) -> Inputs {
    let usage = |message: &str| -> ! {
        crate::command()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .exit()
    };
    let dash = |p: &PathBuf| (p.as_path() != Path::new("-")).then(|| p.clone());
    if !args.after_dashes.is_empty() {
        if args.after_dashes.len() > 1 {
            usage("only one log may follow `--`");
        }
        let objects = args.inputs.iter().chain(&args.objs).cloned().collect();
        return Inputs {
            objects,
            log: dash(&args.after_dashes[0]),
        };
    }
    if !args.objs.is_empty() {
        if args.inputs.len() > 1 {
            usage("with --obj, the only positional argument is the log");
        }
        return Inputs {
            objects: args.objs.clone(),
            log: args.inputs.first().and_then(dash),
        };
    }
    if args.inputs.len() > 2 {
        usage(
            "several objects: put the log after `--` (bpflog annotate a.o b.o -- log.txt) or name each object with --obj",
        );
    }
    Inputs {
        objects: vec![args.inputs[0].clone()],
        log: args.inputs.get(1).and_then(dash),
    }
}

/// The resolved configuration: style, colors, diagnostic, sources (of `objects`).
fn options(args: &AnnotateArgs, objects: &[&Path]) -> AnnotateOptions {
    let terminal = io::stdout().is_terminal();
    let style = match args.style {
        StyleChoice::Kernel => Style::Kernel,
        StyleChoice::Rich => Style::Rich,
        StyleChoice::Auto if terminal => Style::Rich,
        StyleChoice::Auto => Style::Kernel,
    };
    // The diagnostic belongs to the rich style; kernel style stays byte-exact unless asked.
    // JSON's error record carries the explanation unless asked not to.
    let json = args.format == AnnotateFormatArg::Json;
    let diagnostic = !args.no_diagnostic && (args.diagnostic || style == Style::Rich || json);
    AnnotateOptions::default()
        .style(style)
        .palette(Palette::new(use_color(args.color)))
        .context(args.context)
        .diagnostic(diagnostic)
        // No count per line more: the complexity limit's help points at `bpflog profile`.
        .hot_lines(false)
        .annotate_all(args.annotate_all)
        .format(match args.format {
            AnnotateFormatArg::Text => OutputFormat::Text,
            AnnotateFormatArg::Json => OutputFormat::Json,
        })
        .sources(args.sources.search(objects))
        .stop_at_misfit(false)
        .escape_log(escape_log(args.escape_log, terminal))
        .kernel_lines(match args.kernel_lines {
            KernelLinesChoice::Auto => None,
            KernelLinesChoice::Bare => Some(SourceLines::Bare),
            KernelLinesChoice::Located => Some(SourceLines::Located),
        })
}

/// Runs `bpflog annotate`; then says which source files it did not read.
pub(crate) fn run(args: &AnnotateArgs) -> Result<(), Failure> {
    let inputs = inputs(args);
    let mut read: Vec<InputFile> = inputs
        .objects
        .iter()
        .map(|o| InputFile::File("the object", Some(o.as_path())))
        .collect();
    read.push(InputFile::File("the log", inputs.log.as_deref()));
    read.extend(InputFile::btf(&args.kernel));
    files::refuse_overwrite(&read, &[files::Output::Stdout])?;
    let objects: Vec<&Path> = inputs.objects.iter().map(PathBuf::as_path).collect();
    let options = options(args, &objects);
    let sources = options.sources.clone();
    let result = annotate(args, &inputs, options);
    crate::args::source_notes(&sources, &objects);
    result
}

/// Annotates the log of `inputs` as `args` and `options` say.
fn annotate(args: &AnnotateArgs, inputs: &Inputs, options: AnnotateOptions) -> Result<(), Failure> {
    let loaders: Vec<Loader> = match args.loader {
        Some(LoaderChoice::Libbpf) => vec![Loader::Libbpf],
        Some(LoaderChoice::Aya) => vec![Loader::Aya],
        Some(LoaderChoice::Cilium) => vec![Loader::Cilium],
        None => Loader::ALL.to_vec(),
    };
    let datas = inputs
        .objects
        .iter()
        .map(|path| crate::limits::OBJECT.read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let objects = inputs
        .objects
        .iter()
        .zip(&datas)
        .map(|(path, data)| {
            BpfObject::parse(data).map_err(|e| {
                // A log where the object belongs: the commonest slip of all.
                let hint = if !data.starts_with(b"\x7fELF") && bpflog::sniff::reads_like_a_log(data)
                {
                    " (this looks like a log: the object comes first, then the log)"
                } else {
                    ""
                };
                Failure::at(path, format!("{e}{hint}"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Every program of every object under every loader considered; those that cannot be laid
    // out are reported only when nothing else is left.
    let btf = crate::KernelBtfFile::read(&args.kernel)?;
    let kernel = crate::kernel_btf(&btf)?;
    let (programs, _) = lay_out(
        objects
            .iter()
            .zip(inputs.objects.iter().map(PathBuf::as_path)),
        &loaders,
        kernel.as_ref(),
    )?;

    if let Some(name) = &args.prog
        && !programs.iter().any(|p| p.name() == name)
    {
        let mut available: Vec<String> = Vec::new();
        for p in &programs {
            if !available.iter().any(|a| a == p.name()) {
                available.push(p.name().to_owned());
            }
        }
        let objects = inputs
            .objects
            .iter()
            .map(|o| o.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(Failure::Error(format!(
            "{objects}: no program named '{}' (programs: {})",
            excerpt(name.as_bytes()),
            excerpt_names(&available)
        )));
    }

    files::refuse_over_sources(
        options.reads_sources(&programs),
        &programs,
        &options.sources,
        &[files::Output::Stdout],
    )?;

    // Without --prog, a log that fits no program is refused, with nothing written if it is found
    // within the output held back, and read no further than where that shows.
    let options = &options.stop_at_misfit(args.prog.is_none());
    let known = options.known_program(&programs, args.prog.as_deref());
    let hold = if args.prog.is_some() { 0 } else { HOLD };
    let display = &inputs.log.clone().unwrap_or_else(|| "<stdin>".into());
    let source;
    // Whether it is a verifier log at all: told before the log is read (`Err`), or on the way.
    let (log, sniffed) = if known.is_none() {
        // Each log's program chosen on the way, as a first pass would choose it. A pipe is
        // copied as it comes, and read as it is copied: a live log flows.
        source = LogSource::as_it_comes(inputs.log.as_deref())?;
        let not = crate::sniff::no_verifier_log(source.reader()?, display)?;
        if let Some(not) = not.filter(|n| n.is_blank()) {
            return Err(Failure::at(display, not));
        }
        (LogData::File(source.log_file()), Err(not))
    } else {
        // One program: read straight from the input.
        let told = Arc::new(Mutex::new(Sniffer::default()));
        let input = live_input(inputs.log.as_deref(), &told)?;
        (LogData::Stream(input), Ok(told))
    };
    let mut out = OutputThread::stdout(IO_BUFFER, hold)
        .map_err(|e| Failure::closed_or(e, |e| Failure::Error(format!("standard output: {e}"))))?;
    if let Ok(told) = &sniffed {
        // A blank log is refused at its end: nothing goes out while it may be one.
        let told = told.clone();
        out.hold_while(move || told.lock().is_ok_and(|s| s.blank_so_far()));
    }
    let loader_given = args.loader.is_some();
    let mut notes = Notes::default();
    let input = bpflog::Input::among(&programs, log).prog(args.prog.as_deref());
    let result = bpflog::annotate(input, &mut out, options, |log, out| {
        let released = out.released();
        let mut say = |note| notes.say(released, note);
        match log {
            LogAnnotated::Checked(s) => {
                let program = known.map_or("", Program::name);
                checked_notes(display, program, s, &mut say);
            }
            LogAnnotated::Chosen(log) => {
                log_notes(display, &log, &programs, loader_given, &mut say);
            }
        }
        Ok(())
    });
    match result {
        Ok(()) => {}
        // What is still held back is not written, as a first pass would have failed too.
        Err(PlanError::Io(e)) => return Err(withdraw(out, reading_or_writing(display, e))),
        Err(e) => {
            let written = e.written();
            let failure = plan_failure(display, e, args.prog.is_some(), "annotates");
            let program = known.map(Program::name);
            return Err(refuse(out, failure, written, program, display, &mut notes));
        }
    }
    let not_a_log = match sniffed {
        Ok(told) => told.lock().ok().and_then(|s| s.verdict()),
        Err(not) => not,
    };
    if let Some(not) = not_a_log.filter(|n| n.is_blank()) {
        return Err(withdraw(out, Failure::at(display, not)));
    }
    finish(out, display)?;
    notes.flush();
    if let Some(not) = not_a_log {
        passed_through(display, not);
    }
    Ok(())
}

/// The notes on a log annotated with the one program known beforehand (`program`): cut at the
/// top, not fitting the program named by --prog, noise, calls too deep.
fn checked_notes(
    display: &Path,
    program: &str,
    s: bpflog::StreamedSegment,
    say: &mut impl FnMut(String),
) {
    if s.stats.cut {
        let which = format!("the log of {}", excerpt_name(program));
        say(cut_note(display, s.line, &which, "its first line"));
    }
    // The only program's misfit is refused (see `bpflog::annotate`): this is the named one's.
    if let Some(why) = s.misfit.as_ref().filter(|_| s.stats.instructions > 0) {
        say(format!(
            "bpflog: warning: {}:{}: the log does not fit {} (named by --prog): {why}",
            display.display(),
            s.line,
            excerpt_name(program)
        ));
    }
    noise_warnings(display, program, &s.noise, s.noise_lines)
        .into_iter()
        .for_each(&mut *say);
    if let Some(line) = s.stats.too_deep {
        say(too_deep_warning(format!("{}:{line}", display.display())));
    }
}

/// Says that a log without a line of the verifier's went through unchanged (annotate is a
/// filter: loader chatter passes through it).
fn passed_through(log: &Path, not: crate::sniff::NotALog) {
    eprintln!(
        "bpflog: warning: {}: {not}; passed through unchanged",
        log.display()
    );
}

/// Notes and warnings for stderr, held back while the output is: a log refused before any
/// output is written is then refused with one line, as by a first pass. Once output is written,
/// they go out as each log ends (memory does not grow with the number of logs).
#[derive(Default)]
struct Notes {
    held: Vec<String>,
}

impl Notes {
    fn say(&mut self, released: bool, note: String) {
        if released {
            self.flush();
            eprintln!("{note}");
        } else {
            self.held.push(note);
        }
    }

    fn flush(&mut self) {
        for note in self.held.drain(..) {
            eprintln!("{note}");
        }
    }
}

/// The log at `log` (standard input when `None`), read ahead on a thread of its own (its lines
/// told to `sniffer` on the way); live (see
/// [`ReadAhead::live`]) when it is not a regular file, so that a loader's log flows as it comes.
fn live_input(log: Option<&Path>, sniffer: &Arc<Mutex<Sniffer>>) -> Result<ReadAhead, Failure> {
    let (file, _, _) = crate::open_log(log)?;
    // Read once from where it stands: standard input redirected from a file does not pause.
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let ahead = ReadAhead::new(Sniffing::new(file, sniffer.clone()), IO_BUFFER);
    Ok(if regular {
        ahead
    } else {
        ahead.live(bpflog::log::PAUSE)
    })
}

/// How much output is held back before it is written, without --prog (a log that does not fit
/// found by then leaves nothing written): most logs' whole output, and a bounded part of a huge
/// one's.
pub(crate) const HOLD: usize = 16 << 20;

/// Refuses the log with `failure`: with nothing written when the output is still held back (as
/// a first pass would have refused it); otherwise after writing what was decided, saying why it
/// went out and, when known, which of the input's lines it holds (the first `written`, annotated
/// with `program` when that is one program).
fn refuse(
    out: OutputThread,
    failure: Failure,
    written: Option<u64>,
    program: Option<&str>,
    log: &Path,
    notes: &mut Notes,
) -> Failure {
    if !out.released() {
        return withdraw(out, failure);
    }
    let why = if out.released_on_flush() {
        "the input paused, and what was read went out".to_owned()
    } else {
        format!("more than {} MiB", HOLD >> 20)
    };
    // A closed pipe does not hide the refusal.
    if let Err(e @ Failure::Error(_)) = finish(out, log) {
        return e;
    }
    notes.flush();
    let with = program.map_or(String::new(), |p| {
        format!(", annotated with {},", excerpt_name(p))
    });
    let holds = match written {
        Some(0) => "the output holds nothing of the input".to_owned(),
        Some(n) => format!("the output holds the input's lines 1-{n}{with} and nothing after"),
        None => format!("the output holds the input{with} as far as it was read"),
    };
    failure.and(format_args!(
        "; found after output was written ({why}): {holds}"
    ))
}

/// Fails with `failure`, leaving unwritten what is still held back (or taking back what was
/// written of it); past that, what is buffered is written.
pub(crate) fn withdraw(out: OutputThread, failure: Failure) -> Failure {
    if out.released() {
        drop(out);
        return failure;
    }
    match out.discard() {
        Ok(()) => failure,
        Err(e) => failure.and(format_args!(
            "; the output written could not be taken back: standard output: {e}"
        )),
    }
}

/// Writes what is held and the rest of the output.
fn finish(out: OutputThread, log: &Path) -> Result<(), Failure> {
    out.finish().map_err(|e| reading_or_writing(log, e))
}

/// A failure of the output, or of reading the log.
fn reading_or_writing(log: &Path, e: io::Error) -> Failure {
    match crate::output::failed(&e) {
        // The writer's error names standard output itself.
        true => Failure::closed_or(e, |e| Failure::Error(e.to_string())),
        false => Failure::io(log, e),
    }
}

/// The note for a log cut at the top, annotated from `from`.
fn cut_note(log: &Path, line: u64, which: &str, from: &str) -> String {
    format!(
        "bpflog: note: {}:{line}: {which} starts mid-path (the kernel kept only the tail of a log that overflowed its buffer); annotated from {from}",
        log.display()
    )
}

/// What the user should know about how a log annotated with the program a first pass chose was
/// read, said line by line.
fn log_notes(
    log: &Path,
    annotated: &bpflog::AnnotatedLog,
    programs: &[Program<'_, '_>],
    loader_given: bool,
    say: &mut impl FnMut(String),
) {
    let (segment, stats) = (&annotated.plan, &annotated.stats);
    let path = log;
    let log = log.display();
    let program = segment.program.and_then(|p| programs.get(p));
    let which = match (segment.wrapper, program) {
        (Wrapper::Bare, Some(p)) => format!("the log of {}", excerpt_name(p.name())),
        (w, Some(p)) => format!("the {} log of {}", w.name(), excerpt_name(p.name())),
        (_, None) => "the log".to_owned(),
    };
    if segment.truncated {
        let from = if segment.partial_first_line {
            "its second line, the first being cut"
        } else {
            "its first line"
        };
        say(cut_note(path, segment.line, &which, from));
    }
    if let Some(doubt) = &segment.layout_doubt {
        say(format!(
            "bpflog: note: {log}:{}: {doubt}; --loader decides",
            segment.line
        ));
    } else if let Some(p) = program
        && p.loader != Loader::Libbpf
        && !loader_given
    {
        say(format!(
            "bpflog: note: {log}:{}: {which} fits the {} layout, not libbpf's",
            segment.line,
            p.loader.name()
        ));
    }
    if let Some(misfit) = &segment.misfit {
        say(format!(
            "bpflog: warning: {log}:{}: {which} does not fit the program named by --prog: {misfit}",
            segment.line
        ));
    } else if let Some(p) = program {
        let noise = noise_warnings(path, p.name(), &segment.noise, segment.noise_lines);
        noise.into_iter().for_each(&mut *say);
    }
    if let Some(p) = program.filter(|_| stats.out_of_range > 0) {
        say(format!(
            "bpflog: warning: {log}:{}: {} instruction lines name instructions past the {} of program {} ({} layout); is the log from another program?",
            segment.line,
            stats.out_of_range,
            p.layout.len,
            excerpt_name(p.name()),
            p.loader.name()
        ));
    }
    if let Some(line) = stats.too_deep {
        say(too_deep_warning(format!("{log}:{line}")));
    }
}
