//! `bpflog verify`: load programs into the running kernel through libbpf and show the verifier's
//! log, annotated, or its profile.
//!
//! Built with the cargo feature `load` (libbpf-rs; libbpf is compiled from the sources libbpf-sys
//! ships). Each program is loaded on its own: the object is opened afresh, every other program
//! gets `autoload = false`, and the program gets the log level asked for. libbpf lays the program
//! out and sizes the log buffer itself: it starts at 16 MiB (`BPF_LOG_BUF_SIZE`) and doubles on
//! `ENOSPC` up to the kernel's limit of about 1 GiB (`bpf_object_load_prog` in
//! tools/lib/bpf/libbpf.c), and hands the log to its print callback between
//! `-- BEGIN PROG LOAD LOG --` and `-- END PROG LOAD LOG --`, where it is captured. The program is
//! never attached: the loaded object is dropped, and the program unloaded, at once.
//!
//! Because libbpf itself laid the program out and passed its line info, the kernel's log already
//! has its `; text @ file:line` lines; bpflog checks the log against its own libbpf layout of the
//! program (a warning says where they disagree) and annotates with it.
//!
//! Exit status: 0 when the kernel accepted every program loaded, 3 when it rejected one, 1 on any
//! other failure (an unreadable object, a program libbpf could not prepare, no CAP_BPF).

use crate::args::{ColorChoice, StyleChoice};
use std::path::PathBuf;

/// Exit status when the kernel rejected a program.
pub(crate) const REJECTED: u8 = 3;

/// Arguments of `bpflog verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The BPF object file to load (clang -g -target bpf).
    #[arg(value_name = "OBJ")]
    pub object: PathBuf,
    /// The program to load (its function name); every program of OBJ otherwise, each on its own.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// The verifier log level: 1 (the path that failed) or 2 (every instruction verified).
    /// Default: 1, and 2 with --stats.
    #[arg(long, value_name = "LEVEL", value_parser = clap::value_parser!(u32).range(1..=2))]
    pub level: Option<u32>,
    /// Print where the verifier spent its effort (as `bpflog profile`) instead of the log; the
    /// kernel's statistics (log level 4) are asked for too.
    #[arg(long)]
    pub stats: bool,
    /// Print the log as libbpf received it from the kernel, without annotating it.
    #[arg(long, conflicts_with = "stats")]
    pub raw: bool,
    /// Annotation style: kernel (the kernel's own lines) or rich (file:line:col, function,
    /// inlined calls); auto is rich on a terminal and kernel otherwise.
    #[arg(long, value_enum, default_value_t = StyleChoice::Auto, value_name = "STYLE")]
    pub style: StyleChoice,
    /// When to color the output: auto colors a terminal (TERM set, not dumb) unless NO_COLOR or CLICOLOR=0 is set; CLICOLOR_FORCE colors a pipe too (NO_COLOR still wins).
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Show N source lines before and after each annotated line.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub context: u32,
    /// Where to find the source files debug info names.
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
    /// No diagnostic block after a rejected log (it is on by default in rich style).
    #[arg(long = "no-diagnostic")]
    pub no_diagnostic: bool,
}

/// Runs `bpflog verify`: `Ok(true)` when every program was accepted.
#[cfg(not(feature = "load"))]
pub(crate) fn run(_args: &VerifyArgs) -> Result<bool, crate::Failure> {
    Err(crate::Failure(
        "this bpflog was built without the `load` feature that `verify` needs: build it with \
         `cargo build --release --features load` (needs make, a C compiler, pkg-config, \
         libelf-dev and zlib1g-dev)"
            .into(),
    ))
}

#[cfg(feature = "load")]
pub(crate) use load::run;

#[cfg(feature = "load")]
mod load {
    use super::VerifyArgs;
    use crate::args::StyleChoice;
    use crate::{Failure, IO_BUFFER, use_color, written};
    use bpflog::object::BpfObject;
    use bpflog::profile::{Format, RenderOptions};
    use bpflog::{AnnotateOptions, Palette, Program, SelectError, Style};
    use libbpf_rs::{ObjectBuilder, PrintLevel};
    use std::io::{self, IsTerminal, Write};
    use std::path::Path;
    use std::sync::Mutex;

    /// `BPF_LOG_STATS`: the kernel's verification time and stack depths.
    const LOG_STATS: u32 = 4;
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_BPF: u32 = 39;
    const EPERM: i32 = 1;
    const BEGIN: &str = "-- BEGIN PROG LOAD LOG --\n";
    const END: &str = "-- END PROG LOAD LOG --\n";

    /// What libbpf printed while a program was opened and loaded.
    static PRINTED: Mutex<Vec<(PrintLevel, String)>> = Mutex::new(Vec::new());

    fn capture(level: PrintLevel, message: String) {
        if let Ok(mut printed) = PRINTED.lock() {
            printed.push((level, message));
        }
    }

    /// What the kernel said about one program.
    struct Outcome {
        accepted: bool,
        /// The log as libbpf received it.
        log: Vec<u8>,
    }

    pub(crate) fn run(args: &VerifyArgs) -> Result<bool, Failure> {
        let path = &args.object;
        let data = std::fs::read(path).map_err(|e| Failure::at(path, e))?;
        let object = BpfObject::parse(&data).map_err(|e| Failure::at(path, e))?;
        let ids = match &args.prog {
            Some(name) => vec![object.program(name).map_err(|e| Failure::at(path, e))?],
            None => object.programs(),
        };
        if ids.is_empty() {
            return Err(Failure::at(path, "the object has no BPF programs"));
        }
        check_capabilities()?;
        let level = args.level.unwrap_or(if args.stats { 2 } else { 1 })
            | if args.stats { LOG_STATS } else { 0 };
        let mut all_accepted = true;
        let sources = args.sources.search(&[path]);
        let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
        for (k, &id) in ids.iter().enumerate() {
            let name = object.function(id).name.as_str();
            let outcome = load(path, name, level)?;
            all_accepted &= outcome.accepted;
            let verdict = if outcome.accepted {
                "accepted"
            } else {
                "rejected"
            };
            eprintln!("bpflog: {name}: {verdict} by the kernel");
            if ids.len() > 1 {
                let blank = if k > 0 { "\n" } else { "" };
                written(writeln!(out, "{blank}==> {name} <=="), Failure::stdout)?;
            }
            let program = Program::new(&object, id).map_err(|e| Failure::at(path, e))?;
            // libbpf laid the program out and the kernel annotated the log with its line info:
            // bpflog's libbpf layout must fit it.
            if let Err(SelectError::NoneFits(candidates)) =
                bpflog::select(std::slice::from_ref(&program), &outcome.log[..])
            {
                let why = candidates
                    .first()
                    .and_then(|c| c.evidence.mismatch.as_ref())
                    .map(|m| format!("log line {}: {}", m.line, m.reason))
                    .unwrap_or_default();
                eprintln!(
                    "bpflog: warning: {name}: the kernel's log does not fit bpflog's libbpf layout of the program: {why}"
                );
            }
            written(
                show(args, &program, &outcome, &sources, &mut out),
                Failure::stdout,
            )?;
        }
        written(out.flush(), Failure::stdout)?;
        crate::args::source_notes(&sources, &[path]);
        Ok(all_accepted)
    }

    /// The log, raw, annotated, or profiled.
    fn show(
        args: &VerifyArgs,
        program: &Program<'_, '_>,
        outcome: &Outcome,
        sources: &bpflog::SourceSearch,
        out: &mut impl Write,
    ) -> io::Result<()> {
        let color = use_color(args.color);
        let sources = sources.clone();
        if args.raw {
            return out.write_all(&outcome.log);
        }
        if args.stats {
            let mut profile = bpflog::profile::profile(program, &outcome.log[..])?;
            profile.fill_sources(&mut bpflog::SourceFiles::new(sources));
            let options = RenderOptions {
                format: Format::Table,
                palette: Palette::new(color),
                ..RenderOptions::default()
            };
            return bpflog::profile::render(&profile, out, &options);
        }
        let style = match args.style {
            StyleChoice::Kernel => Style::Kernel,
            StyleChoice::Rich => Style::Rich,
            StyleChoice::Auto if io::stdout().is_terminal() => Style::Rich,
            StyleChoice::Auto => Style::Kernel,
        };
        let options = AnnotateOptions {
            style,
            palette: Palette::new(color),
            context: args.context,
            diagnostic: !args.no_diagnostic && style == Style::Rich,
            sources,
            ..AnnotateOptions::default()
        };
        bpflog::annotate(program, &outcome.log[..], out, &options).map(|_| ())
    }

    /// Loads program `name` of the object at `path` alone at log `level`, then unloads it.
    fn load(path: &Path, name: &str, level: u32) -> Result<Outcome, Failure> {
        if let Ok(mut printed) = PRINTED.lock() {
            printed.clear();
        }
        let previous = libbpf_rs::set_print(Some((PrintLevel::Debug, capture)));
        let result = open_and_load(path, name, level);
        libbpf_rs::set_print(previous);
        let printed = PRINTED
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        let block = printed.iter().find_map(|(level, message)| {
            let prefix = format!("prog '{name}': ");
            let at = message.find(&prefix)?;
            let rest = message[at + prefix.len()..].strip_prefix(BEGIN)?;
            Some((*level, rest.strip_suffix(END).unwrap_or(rest)))
        });
        match (result, block) {
            // Loaded, and dropped (unloaded) already.
            (Ok(()), Some((_, log))) => Ok(Outcome {
                accepted: true,
                log: log.as_bytes().to_vec(),
            }),
            (Ok(()), None) => Ok(Outcome {
                accepted: true,
                log: Vec::new(),
            }),
            // libbpf prints a failed load's log as a warning, an accepted one as debug output.
            (Err(_), Some((level, log))) => Ok(Outcome {
                accepted: level == PrintLevel::Debug,
                log: log.as_bytes().to_vec(),
            }),
            (Err(e), None) => {
                let said: Vec<&str> = printed
                    .iter()
                    .filter(|(level, _)| *level == PrintLevel::Warn)
                    .map(|(_, m)| m.trim_end())
                    .collect();
                let mut message = format!("cannot load {name}: {e:#}");
                if errno(&e) == Some(EPERM) {
                    message.push_str(&format!("; {}", needs_cap()));
                }
                if !said.is_empty() {
                    message.push_str(&format!(" (libbpf: {})", said.join("; ")));
                }
                Err(Failure::at(path, message))
            }
        }
    }

    /// Opens the object, leaves only `name` to load, loads it at `level` and drops it.
    fn open_and_load(path: &Path, name: &str, level: u32) -> libbpf_rs::Result<()> {
        let mut open = ObjectBuilder::default().open_file(path)?;
        for mut prog in open.progs_mut() {
            let target = prog.name() == name;
            prog.set_autoload(target);
            if target {
                prog.set_log_level(level);
            }
        }
        // Never attached: dropping the object closes the program's descriptor, which unloads it.
        let loaded = open.load()?;
        drop(loaded);
        Ok(())
    }

    /// The errno at the root of a libbpf error.
    fn errno(e: &libbpf_rs::Error) -> Option<i32> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = current {
            if let Some(io) = err.downcast_ref::<io::Error>() {
                return io.raw_os_error();
            }
            current = err.source();
        }
        None
    }

    fn needs_cap() -> &'static str {
        "loading BPF programs needs CAP_BPF (with CAP_PERFMON for tracing and CAP_NET_ADMIN for \
         networking programs) or CAP_SYS_ADMIN: run bpflog verify as root"
    }

    /// Fails early, and says why, when the process can load no BPF program at all.
    fn check_capabilities() -> Result<(), Failure> {
        let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
            // Not Linux's procfs: let the kernel say.
            return Ok(());
        };
        let effective = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok());
        match effective {
            Some(caps) if caps & (1 << CAP_BPF) == 0 && caps & (1 << CAP_SYS_ADMIN) == 0 => {
                Err(Failure(format!("no CAP_BPF: {}", needs_cap())))
            }
            _ => Ok(()),
        }
    }
}
