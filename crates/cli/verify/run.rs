//! `verify` from arguments to output: which programs, loaded on `--jobs` threads, and what is
//! printed for each, in the order of the command line whatever finishes first.
//!
//! The kernel verifies a program in the thread that loads it, so N threads verify N programs at
//! once. A thread loads several programs of one object together (`batches`, `load::load`): the
//! object is opened and its maps created once for them, not once per program. The batches that
//! may loop are loaded first, then those of the most instructions, so that the longest
//! verification does not start last and the run takes about as long as it does, not it and the
//! rest of a thread's share. Each result is
//! printed as soon as every program before it is done; the table comes last. What is printed
//! never depends on N, only the time it takes.

use super::filter::Filters;
use super::load::{self, Loaded};
use super::progress::Progress;
use super::table::{self, Row};
use super::{TableFormat, VerifyArgs};
use crate::args::StyleChoice;
use crate::files::{self, InputFile, NewFile, Output};
use crate::{Failure, IO_BUFFER, escape_log, use_color};
use bpflog::object::{BpfObject, Flow, FunctionId, Layout, Loader};
use bpflog::profile::{Format, RenderOptions};
use bpflog::{AnnotateOptions, LogData, Palette, PlanError, Program, SelectError, Style};
use std::io::{self, IsTerminal, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// `BPF_LOG_STATS`: the kernel's verification time, stack depths and counters.
const LOG_STATS: u32 = 4;

/// What is printed for the programs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The table only, from loads at the statistics level.
    Summary,
    /// The annotated log of each rejected program, then the table.
    Rejected,
    /// Each program's log as libbpf received it.
    Raw,
    /// Each program's profile.
    Profile,
}

/// Where the log of a program is written (`Mode::Rejected`: a rejected program's, annotated).
/// Standard output holds the table alone in a machine format (`-o csv`, `-o json`), so that
/// it reads back as one (`verify --compare`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Logs {
    /// On standard output: the logs of `--raw` and `--stats`, and before the table in its text
    /// format.
    Stdout,
    /// On standard error (`--logs-to-stderr`).
    Stderr,
    /// Annotated for the class of the rejection alone (the JSON rows' `class`), not written.
    Class,
    /// Not written.
    Nowhere,
}

impl Logs {
    fn new(args: &VerifyArgs, mode: Mode) -> Logs {
        match mode {
            Mode::Raw | Mode::Profile => Logs::Stdout,
            _ if args.logs_to_stderr => Logs::Stderr,
            _ if args.format == TableFormat::Table => Logs::Stdout,
            _ if args.format == TableFormat::Json && !args.no_diagnostic => Logs::Class,
            _ => Logs::Nowhere,
        }
    }
}

/// One program to load.
struct Job {
    /// Index into the objects.
    object: usize,
    id: FunctionId,
    name: String,
    /// Instructions the kernel is given (the program's libbpf layout, its subprograms with it):
    /// what the kernel's time to verify it is guessed from, among programs alike in `loops`.
    insns: u32,
    /// Whether the program may loop (`jumps_back`): the kernel may then take as long as the
    /// complexity limit lets it, however few its instructions.
    loops: bool,
}

/// Loads the programs `args` names and prints what the kernel said: `Ok(true)` when it accepted
/// every one.
pub(crate) fn run(args: &VerifyArgs) -> Result<bool, Failure> {
    let filters = Filters::new(args.prog.as_deref(), &args.filters).map_err(Failure::Error)?;
    let order = args
        .sort
        .as_deref()
        .map(table::Order::parse)
        .transpose()
        .map_err(Failure::Error)?;
    let data: Vec<Vec<u8>> = args
        .objects
        .iter()
        .map(|path| crate::limits::OBJECT.read(path))
        .collect::<Result<_, _>>()?;
    let objects: Vec<BpfObject> = data
        .iter()
        .zip(&args.objects)
        .map(|(data, path)| BpfObject::parse(data).map_err(|e| Failure::at(path, e)))
        .collect::<Result<_, _>>()?;
    for (data, path) in data.iter().zip(&args.objects) {
        load::printable_by_libbpf(path, data).map_err(|e| Failure::at(path, e))?;
    }
    let files: Vec<String> = args.objects.iter().map(|p| file_name(p)).collect();
    let jobs = select(&objects, &args.objects, &files, &filters)?;
    // The objects to copy to --log-dir (not one there already), and the logs it gets.
    let (copies, logs): (Vec<_>, Vec<_>) = match &args.log_dir {
        Some(dir) => (
            objects_to_keep(dir, &args.objects, &files)?,
            (jobs.iter())
                .filter_map(|j| super::log_name(&files[j.object], &j.name))
                .map(|(name, _)| dir.join(name))
                .collect(),
        ),
        None => Default::default(),
    };
    let inputs: Vec<InputFile> = (args.objects.iter())
        .map(|path| InputFile::File("the object", Some(path)))
        .collect();
    let outputs: Vec<Output> = std::iter::once(Output::Stdout)
        .chain(copies.iter().map(|(_, copy)| Output::Name(copy)))
        .chain(logs.iter().map(|log| Output::Name(log)))
        .collect();
    files::refuse_overwrite(&inputs, &outputs)?;
    let mode = if args.summary {
        Mode::Summary
    } else if args.raw {
        Mode::Raw
    } else if args.stats {
        Mode::Profile
    } else {
        Mode::Rejected
    };
    let paths: Vec<&Path> = args.objects.iter().map(PathBuf::as_path).collect();
    let sources = args.sources.search(&paths);
    // Rejected logs annotated and profiles may show source lines: standard output is none of
    // the files they would be read from.
    if matches!(mode, Mode::Rejected | Mode::Profile) {
        let read = || {
            let programs: Vec<Program> = (jobs.iter())
                .filter_map(|j| Program::new(&objects[j.object], j.id).ok())
                .collect();
            bpflog::source_paths(&programs, &sources)
        };
        files::refuse_overwrite(&[InputFile::Sources(&read)], &[Output::Stdout])?;
    }
    if let Some(dir) = &args.log_dir {
        std::fs::create_dir_all(dir).map_err(|e| Failure::at(dir, e))?;
        for (object, copy) in &copies {
            keep(copy, |out| {
                std::fs::File::open(object)
                    .and_then(|mut object| io::copy(&mut object, out))
                    .map(drop)
            })?;
        }
    }
    load::check_capabilities().map_err(Failure::Error)?;

    let level = match mode {
        Mode::Summary => LOG_STATS,
        Mode::Raw => args.level.unwrap_or(1),
        Mode::Profile => args.level.unwrap_or(2) | LOG_STATS,
        Mode::Rejected => args.level.unwrap_or(1) | LOG_STATS,
    };
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        |n| n as usize,
    );
    let batches = batches(&jobs, threads);
    let threads = threads.clamp(1, batches.len());

    let mut out = io::BufWriter::with_capacity(IO_BUFFER, Unread::new(io::stdout().lock()));
    let mut printer = Printer {
        args,
        mode,
        logs: Logs::new(args, mode),
        objects: &objects,
        paths: &paths,
        files: &files,
        several: jobs.len() > 1,
        sources: &sources,
        rows: Vec::with_capacity(jobs.len()),
        rejected: false,
        failed: 0,
        unkept: 0,
        logs_printed: 0,
    };

    load::capture_libbpf_output();
    let progress = Progress::new(jobs.len());
    let next = AtomicUsize::new(0);
    let btf: Vec<bool> = objects.iter().map(|o| o.btf().is_some()).collect();
    let loaded = std::thread::scope(|scope| -> Result<(), Failure> {
        let (send, receive) = mpsc::channel();
        for _ in 0..threads {
            let send = send.clone();
            let (next, jobs, paths, batches, btf) = (&next, &jobs, &paths, &batches, &btf);
            let line = progress.thread_line();
            scope.spawn(move || {
                load::show_progress_on(line.clone());
                let _clear = Clear(line);
                while let Some(batch) = batches.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let names: Vec<String> =
                        jobs[batch.clone()].iter().map(|j| j.name.clone()).collect();
                    let object = jobs[batch.start].object;
                    let results = load::load(paths[object], btf[object], &names, level);
                    for (k, loaded) in batch.clone().zip(results) {
                        if send.send((k, loaded)).is_err() {
                            return;
                        }
                    }
                }
            });
        }
        drop(send);
        // Results in the order of `jobs`, printed as soon as all before them are.
        let mut done: Vec<Option<Loaded>> = jobs.iter().map(|_| None).collect();
        let mut printed = 0;
        for (k, result) in receive {
            if let Some(slot) = done.get_mut(k) {
                *slot = Some(result);
            }
            while let Some(result) = done.get_mut(printed).and_then(Option::take) {
                progress.one_done();
                let outcome = progress.suspend(|| {
                    printer.program(&jobs[printed], result, &mut out)?;
                    out.flush().map_err(Failure::stdout)
                });
                if outcome.is_err() {
                    // Stop the loaders: nothing more will be printed.
                    next.store(batches.len(), Ordering::Relaxed);
                }
                outcome?;
                printed += 1;
            }
        }
        Ok(())
    });
    progress.finish();
    loaded?;

    if matches!(mode, Mode::Summary | Mode::Rejected) {
        if printer.logs_printed > 0 && printer.logs == Logs::Stdout {
            writeln!(out).map_err(Failure::stdout)?;
        }
        let mut rows = printer.rows;
        if let Some(order) = &order {
            order.sort(&mut rows);
        }
        rows.truncate(args.top.unwrap_or(rows.len()));
        table::write(&rows, args.format, &mut out).map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)?;
    crate::args::source_notes(&sources, &paths);
    if printer.rejected && matches!(printer.logs, Logs::Class | Logs::Nowhere) {
        let kept = match &args.log_dir {
            Some(dir) => format!(
                "are in {}",
                bpflog::escape_controls_str(&dir.display().to_string())
            ),
            None => "are kept with --log-dir DIR".to_owned(),
        };
        eprintln!(
            "bpflog: note: -o {} writes only the table to standard output: the rejected \
             programs' logs {kept}, and written annotated to standard error with \
             --logs-to-stderr",
            format_name(args.format)
        );
    }
    if let (Some(dir), 1..) = (&args.log_dir, printer.unkept) {
        return Err(Failure::at(
            dir,
            format!(
                "{} of {} logs could not be kept (said above)",
                printer.unkept,
                jobs.len()
            ),
        ));
    }
    if printer.failed > 0 {
        return Err(Failure::Error(format!(
            "{} of {} programs could not be loaded",
            printer.failed,
            jobs.len()
        )));
    }
    Ok(!printer.rejected)
}

/// The `-o` name of `format`.
fn format_name(format: TableFormat) -> String {
    use clap::ValueEnum;
    format
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_owned())
}

/// Standard output for `verify`, whose exit status is its verdict: once the output's reader has
/// gone (`bpflog verify *.o | head`), what is written is dropped and the programs are still
/// loaded, so the status still says whether the kernel accepted every one (and `--log-dir` still
/// gets every log).
struct Unread<W> {
    out: W,
    gone: bool,
}

impl<W: Write> Unread<W> {
    fn new(out: W) -> Self {
        Unread { out, gone: false }
    }

    /// `result` of a write, unless the reader has gone: then nothing more is written.
    fn unless_gone<T>(&mut self, result: io::Result<T>, all: T) -> io::Result<T> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.gone = true;
                Ok(all)
            }
            other => other,
        }
    }
}

impl<W: Write> Write for Unread<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.gone {
            return Ok(buf.len());
        }
        let result = self.out.write(buf);
        self.unless_gone(result, buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.gone {
            return Ok(());
        }
        let result = self.out.flush();
        self.unless_gone(result, ())
    }
}

/// `--log-dir DIR`: the objects to copy to DIR under their file names, with the path of each
/// copy; an object that is in DIR already (the same file) is not copied.
fn objects_to_keep(
    dir: &Path,
    objects: &[PathBuf],
    files: &[String],
) -> Result<Vec<(PathBuf, PathBuf)>, Failure> {
    let mut copies = Vec::new();
    for (k, (path, file)) in objects.iter().zip(files).enumerate() {
        if files[..k].contains(file) {
            return Err(Failure::at(
                path,
                "--log-dir keeps one object of each file name, and an earlier object has this one",
            ));
        }
        if !super::plain_name(file) {
            return Err(Failure::at(
                path,
                "--log-dir cannot keep an object of this name",
            ));
        }
        let copy = dir.join(file);
        if !files::same_file(&copy, path) {
            copies.push((path.clone(), copy));
        }
    }
    Ok(copies)
}

/// Writes a file of --log-dir at `path` with `write`: a new file put in place of whatever the
/// name was ([`NewFile::replace`]), never written through.
fn keep(path: &Path, write: impl FnOnce(&mut NewFile) -> io::Result<()>) -> Result<(), Failure> {
    let mut file = NewFile::replace(path)?;
    write(&mut file).map_err(|e| Failure::at(path, e))?;
    file.commit()
}

/// Clears a thread's progress line when the thread ends.
struct Clear(indicatif::ProgressBar);

impl Drop for Clear {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// The object's file name, without its directory (veristat's `file_name`).
fn file_name(path: &Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}

/// The jobs cut into what one thread loads at a time: programs of one object, loaded together
/// (`load::load`), at most a quarter of an even share each (and at least 4) so that the threads
/// finish together; the batches with a loop first, then those of the most instructions (in the
/// jobs' order among equals), as the threads take them. A loop's verification is bounded by the
/// complexity limit, not by the program's size (`loop3.o`'s `while_true`, 16 instructions, takes
/// the kernel as long as a program of 40,000 without loops): started last, it would run on alone.
fn batches(jobs: &[Job], threads: usize) -> Vec<Range<usize>> {
    let most = jobs.len().div_ceil(threads.max(1) * 4).max(4);
    let mut batches = Vec::new();
    let mut start = 0;
    for k in 1..=jobs.len() {
        if k == jobs.len() || jobs[k].object != jobs[start].object || k - start == most {
            batches.push(start..k);
            start = k;
        }
    }
    let cost = |batch: &Range<usize>| -> (bool, u64) {
        let jobs = &jobs[batch.clone()];
        (
            jobs.iter().any(|j| j.loops),
            jobs.iter().map(|j| u64::from(j.insns)).sum(),
        )
    };
    batches.sort_by_key(|batch| std::cmp::Reverse(cost(batch)));
    batches
}

/// Whether a jump of the program `layout` lays out goes back to its own instruction or one
/// before it: a program without one has no loop (every cycle has a jump back), one with one
/// loops in the code clang writes (it may place a block before the one that jumps to it, which
/// costs only the order of the loads). Jumps stay within a function; calls are not jumps.
fn jumps_back(object: &BpfObject, layout: &Layout) -> bool {
    let mut index = 0;
    while index < layout.len {
        let Some(insn) = object.insn(layout, index) else {
            return false;
        };
        match insn.flow() {
            Flow::Jump(off) | Flow::Branch(off) if off < 0 => return true,
            Flow::Next(n) => index = index.saturating_add(u32::try_from(n).unwrap_or(1)),
            _ => index += 1,
        }
    }
    false
}

/// The programs the filters accept, object by object, each in the object's order.
fn select(
    objects: &[BpfObject],
    paths: &[PathBuf],
    files: &[String],
    filters: &Filters,
) -> Result<Vec<Job>, Failure> {
    let mut jobs = Vec::new();
    for (k, object) in objects.iter().enumerate() {
        for id in object.programs() {
            let name = &object.function(id).name;
            if filters.accepts(&files[k], name) {
                // The layout alone (`Program::new`'s, without its line table): the loads
                // start after every job's.
                let layout = object.layout_for(id, Loader::Libbpf);
                jobs.push(Job {
                    object: k,
                    id,
                    name: name.clone(),
                    insns: layout.as_ref().map_or(0, |l| l.len),
                    loops: layout.is_ok_and(|l| jumps_back(object, &l)),
                });
            }
        }
    }
    if !jobs.is_empty() {
        return Ok(jobs);
    }
    let (Some(object), Some(path)) = (objects.first(), paths.first()) else {
        return Err(Failure::Error("no object to load".into()));
    };
    Err(match filters.named() {
        // The object's own words for a missing program (it lists the ones there are).
        Some(name) if objects.len() == 1 => match object.program(name) {
            Err(e) => Failure::at(path, e),
            Ok(_) => Failure::at(path, format!("--filter leaves out program {name}")),
        },
        _ if objects.iter().all(|o| o.programs().is_empty()) => Failure::at(
            path,
            if objects.len() == 1 {
                "the object has no BPF programs"
            } else {
                "no object has BPF programs"
            },
        ),
        _ => Failure::Error("no program of the objects matches --prog and --filter".into()),
    })
}

/// Prints each program's result as it comes, and keeps its row.
struct Printer<'a, 'd> {
    args: &'a VerifyArgs,
    mode: Mode,
    logs: Logs,
    objects: &'a [BpfObject<'d>],
    paths: &'a [&'a Path],
    files: &'a [String],
    /// Whether more than one program is loaded: each log then follows a `==> FILE/PROG <==` line.
    several: bool,
    sources: &'a bpflog::SourceSearch,
    rows: Vec<Row>,
    rejected: bool,
    /// Programs libbpf could not load (no verifier log).
    failed: usize,
    /// Logs that could not be kept in --log-dir.
    unkept: usize,
    logs_printed: usize,
}

impl Printer<'_, '_> {
    /// Handles the result of loading `job`.
    fn program(&mut self, job: &Job, loaded: Loaded, out: &mut impl Write) -> Result<(), Failure> {
        let path = self.paths[job.object];
        let object = &self.objects[job.object];
        let label = format!(
            "{}/{}",
            bpflog::escape_controls_str(&self.files[job.object]),
            bpflog::escape_controls_str(&job.name)
        );
        let laid_out = Program::new(object, job.id);
        let mut row = Row {
            file: self.files[job.object].clone(),
            prog: job.name.clone(),
            prog_size: laid_out.as_ref().map_or(0, |p| u64::from(p.layout.len)),
            jited_size: loaded.jited_size,
            prog_type: loaded.prog_type,
            attach_type: loaded.attach_type,
            ..Row::default()
        };
        if let Some(message) = &loaded.failure {
            // libbpf's words quote the object's names as they are.
            let message = bpflog::escape_controls_str(message);
            eprintln!("bpflog: error: {}: {message}", path.display());
            self.failed += 1;
            self.rows.push(row);
            return Ok(());
        }
        // Where bpflog cannot lay the program out, the kernel's statistics still count and its
        // log is shown as the kernel printed it.
        let (program, annotated) = match laid_out {
            Ok(program) => (program, true),
            Err(e) => {
                eprintln!(
                    "bpflog: warning: {}: {label}: {e}; its log is shown as the kernel printed it",
                    path.display()
                );
                let bare = Program::from_line_info(&job.name, &[], b"", 0)
                    .map_err(|e| Failure::at(path, e))?;
                (bare, false)
            }
        };
        self.rejected |= !loaded.accepted;
        let summary =
            bpflog::profile::Summary::read(&loaded.log[..]).map_err(|e| Failure::at(path, e))?;
        row.accepted = loaded.accepted;
        row.duration = summary.duration.unwrap_or_default();
        row.insns = summary.insns.unwrap_or_default();
        row.states = summary.total_states.unwrap_or_default();
        row.peak_states = summary.peak_states.unwrap_or_default();
        row.max_states_per_insn = summary.max_states_per_insn.unwrap_or_default();
        row.mark_read = summary.mark_read.unwrap_or_default();
        row.stack_depth = summary.stack_depth().unwrap_or_default();
        self.rows.push(row);
        if let Some(dir) = &self.args.log_dir {
            self.keep_log(dir, job, &label, &loaded.log);
        }

        let shown = match self.mode {
            Mode::Summary => false,
            Mode::Rejected => !loaded.accepted,
            Mode::Raw | Mode::Profile => true,
        };
        if !shown {
            return Ok(());
        }
        let verdict = if loaded.accepted {
            "accepted"
        } else {
            "rejected"
        };
        eprintln!("bpflog: {label}: {verdict} by the kernel");
        let (mut stderr, mut sink) = (None, io::sink());
        // Whether the stream the log goes to is a terminal.
        let (out, failure, terminal): (&mut dyn Write, fn(io::Error) -> Failure, bool) =
            match self.logs {
                Logs::Stdout => (out, Failure::stdout, io::stdout().is_terminal()),
                Logs::Stderr => (
                    stderr.insert(io::BufWriter::with_capacity(IO_BUFFER, io::stderr().lock())),
                    |e| Failure::io(Path::new("<stderr>"), e),
                    io::stderr().is_terminal(),
                ),
                Logs::Class if annotated => (&mut sink, Failure::stdout, false),
                Logs::Class | Logs::Nowhere => return Ok(()),
            };
        let escape = escape_log(self.args.escape_log, terminal);
        if annotated {
            // libbpf laid the program out and the kernel annotated the log with its line info:
            // bpflog's libbpf layout must fit it.
            if let Err(SelectError::NoneFits(candidates)) =
                bpflog::select(std::slice::from_ref(&program), &loaded.log[..])
            {
                let why = candidates
                    .first()
                    .and_then(|c| c.evidence.mismatch.as_ref())
                    .map(|m| format!("log line {}: {}", m.line, m.reason))
                    .unwrap_or_default();
                eprintln!(
                    "bpflog: warning: {label}: the kernel's log does not fit bpflog's libbpf layout of the program: {why}"
                );
            }
        }
        let written = self.write_log(&label, &program, &loaded, annotated, escape, out);
        written.and_then(|()| out.flush()).map_err(failure)
    }

    /// Writes to `out` the log of a program (after a `==> FILE/PROG <==` line when there are
    /// several): raw where bpflog cannot lay the program out (`annotated` false), else as
    /// [`Printer::show`] writes it, keeping the class of a rejection in the program's row; the
    /// log's own lines escaped when `escape` ([`bpflog::AnnotateOptions::escape_log`]).
    fn write_log(
        &mut self,
        label: &str,
        program: &Program<'_, '_>,
        loaded: &Loaded,
        annotated: bool,
        escape: bool,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        if self.several && self.logs != Logs::Class {
            let blank = if self.logs_printed > 0 { "\n" } else { "" };
            writeln!(out, "{blank}==> {label} <==")?;
        }
        self.logs_printed += 1;
        if !annotated {
            return bpflog::write_log_lines(out, &loaded.log, escape);
        }
        let class = self.show(program, loaded, escape, out)?;
        if let Some(row) = self.rows.last_mut() {
            row.class = class;
        }
        Ok(())
    }

    /// `--log-dir`: keeps `job`'s log in `dir`; a log that cannot be kept is said and counted,
    /// and the run goes on.
    fn keep_log(&mut self, dir: &Path, job: &Job, label: &str, log: &[u8]) {
        let Some((name, shortened)) = super::log_name(&self.files[job.object], &job.name) else {
            eprintln!("bpflog: warning: {label}: --log-dir keeps no log of this name");
            return;
        };
        let path = dir.join(name);
        let shown = || bpflog::escape_controls_str(&path.display().to_string()).into_owned();
        if shortened {
            eprintln!(
                "bpflog: warning: {label}: the program's name is too long for a file name: its log is kept as {}",
                shown()
            );
        }
        if let Err(Failure::Error(message)) = keep(&path, |out| out.write_all(log)) {
            let message = bpflog::escape_controls_str(&message);
            eprintln!("bpflog: warning: {label}: its log is not kept: {message}");
            self.unkept += 1;
        }
    }

    /// The log, raw, annotated, or profiled; the class of the rejection when an annotated log's
    /// explanation gave one.
    fn show(
        &self,
        program: &Program<'_, '_>,
        loaded: &Loaded,
        escape: bool,
        mut out: &mut dyn Write,
    ) -> io::Result<Option<&'static str>> {
        let args = self.args;
        let color = use_color(args.color);
        let sources = self.sources.clone();
        if self.mode == Mode::Raw {
            return bpflog::write_log_lines(out, &loaded.log, escape).map(|()| None);
        }
        if self.mode == Mode::Profile {
            let input = bpflog::Input::of(program, LogData::Stream(&loaded.log[..]));
            let request = bpflog::profile::ProfileRequest::default();
            let mut files = bpflog::SourceFiles::new(sources);
            let profile = match bpflog::profile::profile(input, &request, &mut files) {
                Ok(profiled) => profiled.profile,
                Err(bpflog::JobError::Io(e)) => return Err(e),
                Err(e) => return Err(io::Error::other(e)),
            };
            let options = RenderOptions::default()
                .format(Format::Table)
                .palette(Palette::new(color));
            return bpflog::profile::render(&profile, &mut out, &options).map(|()| None);
        }
        let style = match args.style {
            StyleChoice::Kernel => Style::Kernel,
            StyleChoice::Rich => Style::Rich,
            StyleChoice::Auto if io::stdout().is_terminal() => Style::Rich,
            StyleChoice::Auto => Style::Kernel,
        };
        let options = AnnotateOptions::default()
            .style(style)
            .palette(Palette::new(color))
            .context(args.context)
            // The diagnostic and the explanation follow a rejected log in every style.
            .diagnostic(!args.no_diagnostic)
            // As `explain`: the complexity limit's help names the lines the verifier spent
            // its work on.
            .hot_lines(true)
            .sources(sources)
            .escape_log(escape);
        let input = bpflog::Input::of(program, LogData::Stream(&loaded.log[..]));
        let mut class = None;
        let annotated = bpflog::annotate(input, out, &options, |log, _| {
            class = class.or(log.stats().class);
            Ok(())
        });
        match annotated {
            Ok(()) => Ok(class),
            Err(PlanError::Io(e)) => Err(e),
            Err(e) => Err(io::Error::other(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Job, batches, jumps_back, select};
    use crate::verify::filter::Filters;
    use bpflog::object::BpfObject;
    use std::path::{Path, PathBuf};

    /// Programs of the fixtures, the smallest object first: the threads take the batch with a
    /// loop first (branchy.o's, 62 instructions), then the batch of the most instructions
    /// (loop_callback.o's two programs together, 78: bpf_loop's callbacks are calls, not
    /// loops), and every program once.
    #[test]
    fn the_programs_that_loop_then_the_biggest_are_loaded_first() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/obj");
        let names = [
            "reject_entry.o",
            "branchy.o",
            "loop_callback.o",
            "tc_prog.o",
        ];
        let paths: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
        let data: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
        let objects: Vec<BpfObject> = data.iter().map(|d| BpfObject::parse(d).unwrap()).collect();
        let files: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let jobs: Vec<Job> = select(&objects, &paths, &files, &Filters::new(None, &[]).unwrap())
            .unwrap_or_else(|_| panic!("no programs"));
        let cost = |range: &std::ops::Range<usize>| -> (bool, u32) {
            let jobs = &jobs[range.clone()];
            (
                jobs.iter().any(|j| j.loops),
                jobs.iter().map(|j| j.insns).sum(),
            )
        };
        let order = batches(&jobs, 2);
        let costs: Vec<(bool, u32)> = order.iter().map(cost).collect();
        let objects: Vec<&str> = order
            .iter()
            .map(|b| files[jobs[b.start].object].as_str())
            .collect();
        assert_eq!(
            objects,
            [
                "branchy.o",
                "loop_callback.o",
                "tc_prog.o",
                "reject_entry.o"
            ],
            "{costs:?}"
        );
        assert_eq!(
            costs,
            [(true, 62), (false, 78), (false, 69), (false, 42)],
            "{objects:?}"
        );
        let mut all: Vec<usize> = order.iter().flat_map(Clone::clone).collect();
        all.sort_unstable();
        assert_eq!(all, (0..jobs.len()).collect::<Vec<_>>());
        // The jobs themselves stay in the order given: results are printed in it.
        let given: Vec<&str> = jobs.iter().map(|j| files[j.object].as_str()).collect();
        assert!(
            given.is_sorted_by_key(|f| names.iter().position(|n| n == f)),
            "{given:?}"
        );
    }

    /// A loop is found in the program's own code (branchy.o's scan) and in a function it calls
    /// (xdp_subprogs.o's `csum_fold_words`, big-endian too), not in `bpf_loop` callbacks
    /// (loop_callback.o) nor in straight code (reject_entry.o, tc_prog.o).
    #[test]
    fn programs_that_jump_back_may_loop() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/obj");
        let loops = |name: &str| -> Vec<(String, bool)> {
            let data = std::fs::read(dir.join(name)).unwrap();
            let object = BpfObject::parse(&data).unwrap();
            (object.programs().iter())
                .map(|&id| {
                    let program = bpflog::Program::new(&object, id).unwrap();
                    let name = object.function(id).name.clone();
                    (name, jumps_back(&object, &program.layout))
                })
                .collect()
        };
        let pairs = |list: &[(&str, bool)]| -> Vec<(String, bool)> {
            list.iter().map(|&(n, l)| (n.to_owned(), l)).collect()
        };
        assert_eq!(loops("branchy.o"), pairs(&[("xdp_branchy", true)]));
        assert_eq!(loops("xdp_subprogs.o"), pairs(&[("xdp_parse", true)]));
        assert_eq!(loops("xdp_subprogs.bpfeb.o"), pairs(&[("xdp_parse", true)]));
        assert_eq!(
            loops("loop_callback.o"),
            pairs(&[("loop_sum", false), ("loop_nested", false)])
        );
        assert_eq!(
            loops("reject_entry.o"),
            pairs(&[("xdp_reject_entry", false)])
        );
        assert_eq!(loops("tc_prog.o"), pairs(&[("tc_count", false)]));
    }
}
