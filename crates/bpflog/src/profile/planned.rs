//! [`profile_planned_file`]: the profile of a program chosen among several, from a file read
//! once, in parts, one per core.
//!
//! For an object of several programs, the log's program is chosen by a first pass
//! (`plan`), and the logs planned for it are taken out ([`Extract`]) and profiled.
//! Mostly a file holds the logs of one program. So the program is settled first, from the start
//! of the file only (the other candidates stop fitting at its first instructions), and then the
//! whole file is read once, in parts: each part goes on with the first pass over every log it
//! meets and profiles each log on its own, adding it to the profile once the first pass has
//! planned it for that program. Where the first pass would have gone on to profile that program
//! (every log planned for it, for none, or, with `--prog`, found not to fit it), the profile is
//! that of the first pass and [`Extract`]; anything else (a log that fits no program, or several,
//! or another program) is not vouched for, and the caller plans first.
//!
//! [`Extract`]: crate::extract::Extract

use super::parallel::{MIN_PART, Pass, in_parts, part_count};
use super::{Profile, Profiler, Reading};
use crate::Program;
use crate::checked_insns::Fitted;
use crate::file_range::FileRange;
use crate::frame::Deframer;
use crate::plan::{Ends, FirstPass, OpenLog, Pending, PlanError, close};
use crate::sink::read_input_into;
use bpflog_log::{LineReader, LogInput};
use std::fs::File;
use std::io;

/// For an object of several programs (each laid out once): the program that
/// `plan` chooses for the logs of `file` (the one named `forced`, or the only
/// one found), and its profile over the logs planned for it, as
/// [`Extract::segments`](crate::extract::Extract::segments) and [`profile`](super::profile) give them.
/// The file is read once, in up to `threads` parts (how: the [`Reading`]).
///
/// Without `forced`, the program is that of the first log whose program is settled: mostly by
/// its first instructions, at its end for twins (then that log is read once more).
///
/// `None` when that cannot be vouched for without a first pass: a log that fits no program or
/// several, a log with lines taken as noise (see [`crate::Evidence::noise`]), another program's
/// log (unless `forced`: then it is left out, as it does not fit), no log for the program with
/// an instruction line, or `file` is not a regular file. The caller then plans.
pub(crate) fn profile_planned_file(
    programs: &[Program<'_, '_>],
    file: &File,
    forced: Option<&str>,
    threads: usize,
) -> io::Result<Option<(usize, Profile, Reading)>> {
    let (result, joined) = in_parts_of(programs, file, forced, threads, MIN_PART)?;
    let reading = Reading::of(
        part_count(file.metadata()?.len(), threads, MIN_PART),
        joined,
    );
    Ok(result.map(|(program, profile)| (program, profile, reading)))
}

/// [`profile_planned_file`] in parts of at least `min_part` bytes, and how many parts were
/// joined without being read again.
fn in_parts_of(
    programs: &[Program<'_, '_>],
    file: &File,
    forced: Option<&str>,
    threads: usize,
    min_part: u64,
) -> io::Result<(Option<(usize, Profile)>, usize)> {
    if !file.metadata()?.is_file() {
        return Ok((None, 0));
    }
    let Some(chosen) = choose(programs, file, forced)? else {
        return Ok((None, 0));
    };
    let (pass, joins) = in_parts(file, threads, min_part, |at_start| {
        planned_pass(programs, chosen, forced, at_start)
    })?;
    // Without an instruction line, whether a log was left out is for the plan to say
    // ([`Plan::choose`](crate::Plan::choose) takes, when it was named, logs that do not fit).
    let profile = finish(pass).filter(|p| p.totals.insn_lines > 0);
    Ok((profile.map(|profile| (chosen, profile)), joins))
}

/// The program of the first log whose program is settled by its first lines (see
/// [`Pending::settled`]), or the one named.
fn choose(
    programs: &[Program<'_, '_>],
    file: &File,
    forced: Option<&str>,
) -> io::Result<Option<usize>> {
    if let Some(name) = forced {
        let mut named = (0..programs.len()).filter(|&i| programs[i].name() == name);
        return Ok(match (named.next(), named.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        });
    }
    let len = file.metadata()?.len();
    let mut lines = LineReader::with_capacity(64 << 10, FileRange::growing(file, 0, len));
    let Ok(pass) = FirstPass::plans(programs, None) else {
        return Ok(None);
    };
    match pass.settle(&mut lines) {
        Ok(program) => Ok(program),
        Err(PlanError::Io(e)) => Err(e),
        Err(_) => Ok(None),
    }
}

/// One log while a part reads it: the first pass over it, and its own profile.
type Log<'c, 'o, 'd> = OpenLog<'c, 'o, 'd, Profiler<'c, 'o, 'd>>;

/// The first pass over the logs of a part, and the profile of those planned for the chosen
/// program.
type PlannedPass<'c, 'o, 'd, 'f> = FirstPass<'c, 'o, 'd, 'f, Planned<'c, 'o, 'd>>;

/// What becomes of the logs of a part: those planned for the chosen program are profiled.
struct Planned<'c, 'o, 'd> {
    /// The chosen program, and its index.
    program: &'c Program<'o, 'd>,
    chosen: usize,
    /// For a part that does not start the file: its first log, which may be the rest of the log
    /// the part before it ends in. It is concluded about only once joined (see [`Pass::join`]).
    first: First<'c, 'o, 'd>,
    /// The logs planned for the chosen program, one after another.
    profiler: Profiler<'c, 'o, 'd>,
    /// A profiler to count the next log with, cleared.
    spare: Option<Profiler<'c, 'o, 'd>>,
    /// The first pass has concluded nothing that needs it to be run first.
    clean: bool,
    /// Logs planned for the chosen program.
    kept: usize,
}

/// What the first pass concluded about a log, for the profile.
enum Fate {
    /// Planned for the chosen program: profiled.
    Kept,
    /// Planned for no program, or named for the chosen one and not fitting it: not profiled.
    LeftOut,
    /// Anything else: the caller plans first.
    Unclear,
}

enum First<'c, 'o, 'd> {
    /// The part starts the file, or its first log was joined.
    Settled,
    /// The first log is still the one open.
    Open,
    /// The first log ended inside the part.
    Ended(Box<Log<'c, 'o, 'd>>),
}

/// A part's first pass: from the file's top, or inside a bare log (a part that does not start
/// the file).
fn planned_pass<'c, 'o, 'd, 'f>(
    programs: &'c [Program<'o, 'd>],
    chosen: usize,
    forced: Option<&'f str>,
    at_start: bool,
) -> PlannedPass<'c, 'o, 'd, 'f> {
    let planned = Planned {
        program: &programs[chosen],
        chosen,
        first: if at_start {
            First::Settled
        } else {
            First::Open
        },
        profiler: Profiler::new(&programs[chosen]),
        spare: None,
        clean: true,
        kept: 0,
    };
    let deframer = if at_start {
        Deframer::default()
    } else {
        Deframer::in_bare_log()
    };
    let mut pass = FirstPass::new(programs, forced, deframer, planned);
    if pass.open_first().is_err() {
        pass.logs.ends.clean = false;
    }
    pass
}

/// The profile, when the first pass would have profiled the chosen program's logs and some
/// were planned for it.
fn finish(pass: PlannedPass<'_, '_, '_, '_>) -> Option<Profile> {
    let planned = pass.finish().ok()?;
    (planned.clean && planned.kept > 0 && matches!(planned.first, First::Settled))
        .then(|| planned.profiler.finish())
}

impl<'c, 'o, 'd> Planned<'c, 'o, 'd> {
    /// What the first pass concludes about a log that has ended: its profile is added when it
    /// is planned for the chosen program.
    fn conclude(&mut self, log: Log<'c, 'o, 'd>, fitted: &mut Fitted) {
        let OpenLog {
            pending,
            beside: mut profiler,
        } = log;
        let fate = match close(pending, fitted) {
            // Noise is the caller's to report: it plans.
            Ok(plan) if plan.program == Some(self.chosen) && plan.misfit.is_none() => {
                if plan.noise_lines == 0 {
                    Fate::Kept
                } else {
                    Fate::Unclear
                }
            }
            // No instructions and no name: no program's. Named and not fitting: left out.
            Ok(plan) if plan.program.is_none() || plan.misfit.is_some() => Fate::LeftOut,
            // Another program's (the first pass would have found two), or no plan at all.
            _ => Fate::Unclear,
        };
        match fate {
            // After the logs before it, as the lines taken out of the file follow them.
            Fate::Kept if self.profiler.summary.joinable() => {
                self.kept += 1;
                self.profiler.join(profiler);
                return;
            }
            Fate::LeftOut => {}
            Fate::Kept | Fate::Unclear => self.clean = false,
        }
        profiler.clear();
        self.spare = Some(profiler);
    }
}

impl<'c, 'o, 'd> Ends<'c, 'o, 'd> for Planned<'c, 'o, 'd> {
    type Beside = Profiler<'c, 'o, 'd>;
    type Error = io::Error;

    fn beside(&mut self) -> Profiler<'c, 'o, 'd> {
        (self.spare.take()).unwrap_or_else(|| Profiler::new(self.program))
    }

    /// A log that names no program: the caller plans.
    fn refused(&mut self, _: PlanError) -> io::Result<()> {
        self.clean = false;
        Ok(())
    }

    fn ended(&mut self, log: Log<'c, 'o, 'd>, fitted: &mut Fitted) -> io::Result<()> {
        if matches!(self.first, First::Open) {
            self.first = First::Ended(Box::new(log));
        } else {
            self.conclude(log, fitted);
        }
        Ok(())
    }

    /// Nothing more to vouch for once unclean: the caller plans.
    fn wants_more(&self, _: Option<&Pending<'c, 'o, 'd>>) -> bool {
        self.clean
    }
}

impl Pass for PlannedPass<'_, '_, '_, '_> {
    fn read(&mut self, input: impl LogInput) -> io::Result<()> {
        let (deframer, line_no) = (&mut self.deframer, &mut self.line_no);
        read_input_into(input, deframer, line_no, &mut self.logs)
    }

    fn join(&mut self, later: Self) -> bool {
        let this = &mut self.logs;
        let mut later_logs = later.logs;
        if !this.ends.clean {
            // Whatever follows, the caller plans.
            return true;
        }
        // `later` started as a new pass does: inside a bare log, whose first lines were this
        // one's last log's.
        let Some(log) = this.current.as_ref() else {
            return false;
        };
        let later_first = match &later_logs.ends.first {
            First::Ended(first) => &first.pending,
            First::Open => match later_logs.current.as_ref() {
                Some(first) => &first.pending,
                None => return false,
            },
            First::Settled => return false,
        };
        let joinable = self.deframer == Deframer::in_bare_log()
            && log.beside.summary.joinable()
            && log.pending.joinable(later_first);
        if !joinable {
            return false;
        }
        let Some(mut log) = this.current.take() else {
            return false;
        };
        let (first, ended) = match std::mem::replace(&mut later_logs.ends.first, First::Settled) {
            First::Ended(first) => (*first, true),
            _ => match later_logs.current.take() {
                Some(first) => (first, false),
                None => return false,
            },
        };
        log.pending.join(first.pending, self.line_no);
        log.beside.join(first.beside);
        if ended {
            this.ends.conclude(log, &mut this.fitted);
            this.current = later_logs.current;
        } else {
            this.current = Some(log);
        }
        // `later`'s logs after its first follow this one's.
        let (ends, later_ends) = (&mut this.ends, later_logs.ends);
        if later_ends.kept > 0 {
            if ends.profiler.summary.joinable() {
                ends.profiler.join(later_ends.profiler);
            } else {
                ends.clean = false;
            }
        }
        ends.clean &= later_ends.clean;
        ends.kept += later_ends.kept;
        this.fitted.join(later_logs.fitted);
        self.deframer = later.deframer;
        self.line_no += later.line_no;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{BpfObject, Loader};
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// The first pass, then the logs planned for the program it finds (or is named), profiled
    /// (`take`): the way without this module. `None` where that is not
    /// vouched for without a word to the user (an error, several programs, a guess).
    fn planned_then_profiled(
        programs: &[Program<'_, '_>],
        file: &File,
        forced: Option<&str>,
    ) -> Option<(usize, Profile)> {
        let taken = crate::take(programs, file.into(), forced).ok()?;
        if (taken.notes.iter()).any(|n| matches!(n, crate::Note::Guessed { .. })) {
            return None;
        }
        let program = &programs[taken.program];
        Some((
            taken.program,
            crate::profile::read_profile(program, taken.logs).ok()?,
        ))
    }

    /// Every fixture log of an object of several programs, alone, repeated, with another
    /// program's log in the middle, inside test_progs' wrapped output, and cut: whenever the
    /// file read once in parts vouches for a profile, it is that of the first pass and the logs
    /// planned for the program; and it does vouch for most.
    #[test]
    fn parts_planned_are_the_first_pass_then_the_profile() {
        let dir = std::env::temp_dir().join(format!("bpflog-planned-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let other = std::fs::read(fixtures().join("logs/tc_prog.tc_count.l2.log")).unwrap();
        let wrapped = std::fs::read(fixtures().join("wrapped/two_in_one.verify-raw.txt")).unwrap();
        let (mut vouched, mut not, mut joins) = (0, 0, 0);
        for object in ["two_in_one", "loop_callback", "twins", "core_read"] {
            let data = std::fs::read(fixtures().join("obj").join(format!("{object}.o"))).unwrap();
            let object_ = BpfObject::parse(&data).unwrap();
            let programs: Vec<Program> = (object_.programs().into_iter())
                .filter_map(|id| Program::with_loader(&object_, id, Loader::Libbpf).ok())
                .collect();
            assert!(programs.len() > 1, "{object}");
            for entry in std::fs::read_dir(fixtures().join("logs")).unwrap() {
                let log_path = entry.unwrap().path();
                let name = log_path.file_name().unwrap().to_string_lossy().into_owned();
                if !name.starts_with(&format!("{object}.")) {
                    continue;
                }
                let program = name.split('.').nth(1).unwrap().to_owned();
                let log = std::fs::read(&log_path).unwrap();
                let inputs = [
                    log.clone(),
                    log.repeat(9),
                    [&log[..], &other, &log].concat(),
                    [&wrapped[..], &log].concat(),
                    log[log.len() / 3..].to_vec(),
                ];
                for input in &inputs {
                    std::fs::write(&path, input).unwrap();
                    let file = File::open(&path).unwrap();
                    for forced in [None, Some(program.as_str())] {
                        let expected = planned_then_profiled(&programs, &file, forced);
                        for threads in 1..=5 {
                            let (got, j) =
                                in_parts_of(&programs, &file, forced, threads, 1).unwrap();
                            joins += j;
                            match got {
                                Some(got) => {
                                    assert_eq!(
                                        Some(&got),
                                        expected.as_ref(),
                                        "{name}, {} bytes, {forced:?}, {threads} parts",
                                        input.len()
                                    );
                                    vouched += 1;
                                }
                                None => not += 1,
                            }
                        }
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        println!("{vouched} vouched for, {not} not, {joins} joins");
        assert!(vouched > 300, "{vouched} vouched for, {not} not");
        assert!(not > 50, "{vouched} vouched for, {not} not");
        assert!(joins > vouched, "{joins} joins");
    }
}
