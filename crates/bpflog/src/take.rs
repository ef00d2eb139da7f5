//! Taking one program's logs out of a file: the rule `profile`, `report` and `explain` share.
//!
//! A tool that reads one program's log (a profile, a report, an explanation) may be handed a
//! file of many logs, of several programs, wrapped in what the loader printed. The program is
//! chosen by a first pass (`plan`) and [`Plan::choose`]; its logs are then
//! read back without what surrounds them ([`Extract`]). What the user should hear on the way
//! (the program guessed, a log taken though it does not fit the program named, lines taken as
//! noise) is returned as [`Note`]s: the library never prints.

use crate::Program;
use crate::extract::Extract;
use crate::file_range::{FileRange, LogFile};
use crate::plan::{ChoiceError, Plan, PlanError, plan};
use crate::select::{Evidence, Mismatch, SelectError};
use bpflog_log::ReadAhead;
use std::io::{self, BufReader};

/// The blocks a log is read ahead in.
pub(crate) const READ_AHEAD: usize = 1 << 20;

/// What the user of a job should hear about the log it read, as data.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// No instruction line tells the log's program: it was taken as `program`, the first.
    Guessed {
        /// The program taken.
        program: String,
    },
    /// A log does not fit `program`, named by the caller, and was taken anyway.
    Misfit {
        /// Where the log starts; `None` when the log was read in one pass and checked as a whole.
        line: Option<u64>,
        /// The program named.
        program: String,
        /// Why it does not fit.
        why: String,
    },
    /// Lines that do not fit `program` among lines that do, passed through as noise.
    Noise {
        /// The program.
        program: String,
        /// The first few such lines.
        lines: Vec<Mismatch>,
        /// How many there are in all.
        count: u64,
    },
}

impl Note {
    /// The notes on a log checked in one pass against `program` (`fit`: its evidence, or why it
    /// does not fit): its noise; a misfit when `forced` named the program (taken as asked);
    /// otherwise a misfit is the error.
    pub(crate) fn of_fit(
        program: &Program<'_, '_>,
        fit: Result<Evidence, SelectError>,
        forced: Option<&str>,
    ) -> Result<Vec<Note>, SelectError> {
        match (fit, forced) {
            (Ok(evidence), _) => Ok(Note::noise(
                program.name(),
                evidence.noise,
                evidence.noise_lines,
            )),
            (Err(e), Some(name)) => Ok(vec![Note::Misfit {
                line: None,
                program: name.to_owned(),
                why: e.to_string(),
            }]),
            (Err(e), None) => Err(e),
        }
    }

    /// The note on lines taken as noise, if there are any.
    fn noise(program: &str, lines: Vec<Mismatch>, count: u64) -> Vec<Note> {
        if lines.is_empty() && count == 0 {
            return Vec::new();
        }
        vec![Note::Noise {
            program: program.to_owned(),
            lines,
            count,
        }]
    }
}

/// Why no program's logs could be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TakeError {
    /// The first pass failed: a log that fits no program, or several.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// The file holds several programs' logs, or none of the program named.
    #[error(transparent)]
    Choice(#[from] ChoiceError),
    /// Reading failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Why a job (a profile, an explanation, a report: [`crate::profile::profile`],
/// [`crate::explain::explain`], [`crate::report::report`]) could not read its log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// No program was given.
    #[error("no program given for the log")]
    NoPrograms,
    /// No program of that name was given.
    #[error("no program named '{}'", bpflog_object::excerpt_name(.0))]
    NoProgram(String),
    /// The program's logs could not be taken out of the file.
    #[error(transparent)]
    Take(#[from] TakeError),
    /// The log of the only program does not fit it, and it was not named.
    #[error(transparent)]
    Unfit(SelectError),
    /// No program could be chosen for the log: it fits none of them, or several alike
    /// ([`LaidOut::choose`](crate::LaidOut::choose)).
    #[error(transparent)]
    Select(SelectError),
    /// The log must be a file (it is read more than once) and is a stream.
    #[error("the log must be a file: it is read more than once")]
    NeedsFile,
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// One program's logs, taken out of a file ([`take`]).
#[non_exhaustive]
pub struct Taken {
    /// The program (an index into the programs given).
    pub program: usize,
    /// Its logs, the kernel's lines only, read on a thread of their own.
    pub logs: ReadAhead,
    /// What to tell the user.
    pub notes: Vec<Note>,
    /// For each log taken that has lines, in order: the loader's line before it in the file
    /// that said the load of its program failed (the loader's lines are not taken).
    pub load_failed: Vec<Option<crate::frame::LoadFailedAt>>,
}

/// The program whose logs `file` holds among `programs` (the one named `forced`, or the only one
/// a first pass finds), and those logs: the ones that fit it; named, the ones planned for it that
/// do not fit, when none that fits has an instruction line; with no program named and no log
/// telling its program, every log, as the first program's ([`Note::Guessed`]). The file is read
/// twice.
pub fn take(
    programs: &[Program<'_, '_>],
    file: LogFile<'_>,
    forced: Option<&str>,
) -> Result<Taken, TakeError> {
    // A file still being written is complete once the first pass is done.
    let (first_pass, _) = file.read_ahead(READ_AHEAD)?;
    let plan = plan(programs, first_pass, forced)?;
    let choice = plan.choose(programs, forced)?;
    // Small: the extract reads blocks of its own, which then bypass this buffer.
    let reader = BufReader::with_capacity(
        8 * 1024,
        FileRange::new(file.file.try_clone()?, 0, u64::MAX),
    );
    let notes = notes(
        &plan,
        programs,
        choice.program,
        &choice.taken,
        choice.guessed,
    );
    // The logs the extract's reader finds, one for each taken that has lines.
    let load_failed = (plan.segments.iter().zip(&choice.taken))
        .filter(|(s, t)| **t && !s.empty)
        .map(|(s, _)| s.load_failed.clone())
        .collect();
    Ok(Taken {
        program: choice.program,
        load_failed,
        logs: ReadAhead::new(Extract::segments(reader, choice.taken), READ_AHEAD),
        notes,
    })
}

/// What to say about the logs of `plan` taken (`taken`) for program `chosen`.
fn notes(
    plan: &Plan,
    programs: &[Program<'_, '_>],
    chosen: usize,
    taken: &[bool],
    guessed: bool,
) -> Vec<Note> {
    let name = programs.get(chosen).map_or("", |p| p.name());
    let mut notes = Vec::new();
    if guessed {
        notes.push(Note::Guessed {
            program: name.to_owned(),
        });
    }
    for (s, _) in plan.segments.iter().zip(taken).filter(|(_, t)| **t) {
        match &s.misfit {
            Some(why) => notes.push(Note::Misfit {
                line: Some(s.line),
                program: name.to_owned(),
                why: why.clone(),
            }),
            None => notes.extend(Note::noise(name, s.noise.clone(), s.noise_lines)),
        }
    }
    notes
}
