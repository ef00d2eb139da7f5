//! [`Input`]: what each job ([`annotate`](crate::annotate), [`explain`](crate::explain::explain),
//! [`profile`](crate::profile::profile), [`report`](crate::report::report)) reads: a log, and the
//! program it is the log of, given or to be found among several; and the program one log in
//! memory is of, chosen as the command chooses it ([`LaidOut::choose`]).

use crate::Program;
use crate::file_range::LogFile;
use crate::owned_object::LaidOut;
use crate::select::SelectError;
use crate::take::JobError;
use bpflog_log::LogInput;
use bpflog_object::Loader;
use std::fs::File;
use std::io;

/// Where a log is read from.
pub enum LogData<'a, R = io::Empty> {
    /// Read once, from its start, as it comes: any reader, a log in memory (`&[u8]`), a
    /// [`ReadAhead`](crate::log::ReadAhead). A job that must read the log more than once or at
    /// offsets refuses it ([`JobError::NeedsFile`](JobError::NeedsFile)).
    Stream(R),
    /// A regular file, complete or still being written ([`LogFile::growing`]): read at
    /// offsets, more than once or in parts on several threads, as the job needs.
    File(LogFile<'a>),
}

impl<'a> From<&'a File> for LogData<'a> {
    fn from(file: &'a File) -> Self {
        LogData::File(LogFile::from(file))
    }
}

impl<'a> From<LogFile<'a>> for LogData<'a> {
    fn from(file: LogFile<'a>) -> Self {
        LogData::File(file)
    }
}

/// What a job reads: a log ([`LogData`]), and the programs it may be the log of.
///
/// - [`Input::of`]: the log is one program's (a loader that has just loaded it): every log in
///   it is read as that program's, and one that does not fit it is said to
///   ([`Note::Misfit`](crate::Note::Misfit)), not refused. A stream is enough.
/// - [`Input::among`]: the log holds logs of one or more of the programs (every program of the
///   objects under each loader's layout, as [`lay_out`](crate::lay_out) gives them), with what
///   a loader printed around them, as the command reads a file: each job finds their program,
///   and refuses a log that fits none or several. With several programs, most jobs read the log
///   more than once: give a [file](LogData::File).
pub struct Input<'a, 'o, 'd, R = io::Empty> {
    pub(crate) programs: &'a [Program<'o, 'd>],
    pub(crate) prog: Option<&'a str>,
    pub(crate) log: LogData<'a, R>,
}

impl<'a, 'o, 'd, R> Input<'a, 'o, 'd, R> {
    /// `log`, the log of `program`.
    pub fn of(program: &'a Program<'o, 'd>, log: LogData<'a, R>) -> Self {
        Input {
            programs: std::slice::from_ref(program),
            prog: Some(program.name()),
            log,
        }
    }

    /// `log`, of one or more of `programs`.
    pub fn among(programs: &'a [Program<'o, 'd>], log: LogData<'a, R>) -> Self {
        Input {
            programs,
            prog: None,
            log,
        }
    }

    /// Only the programs named `prog` (`--prog`): a log is taken as theirs even where it does
    /// not fit ([`Note::Misfit`](crate::Note::Misfit)).
    #[must_use]
    pub fn prog(mut self, prog: Option<&'a str>) -> Self {
        self.prog = prog;
        self
    }

    /// The checks every job makes first: some program given, and one of the name asked for.
    pub(crate) fn check(&self) -> Result<(), JobError> {
        if self.programs.is_empty() {
            return Err(JobError::NoPrograms);
        }
        match self.prog {
            Some(name) if !self.programs.iter().any(|p| p.name() == name) => {
                Err(JobError::NoProgram(name.to_owned()))
            }
            _ => Ok(()),
        }
    }
}

impl<'o, 'data> LaidOut<'o, 'data> {
    /// The program one log is of (a loader's buffer, read once), among the programs laid out
    /// under one of `loaders` (under any when `loaders` is empty) and, when `prog` is given,
    /// named so, as the command chooses with `--prog`: a program named with one such layout is
    /// that one (a log that does not fit it is still its log); otherwise the one the log fits
    /// ([`select`](crate::select())); a program named whose layouts the log fits none or several
    /// of, its first layout.
    ///
    /// No program of that name under those loaders is [`JobError::NoProgram`] (a binding that
    /// holds the object's names says whether the name is there under another loader); a log
    /// that fits none of the programs, or several alike, [`JobError::Select`].
    pub fn choose(
        &self,
        prog: Option<&str>,
        loaders: &[Loader],
        log: impl LogInput,
    ) -> Result<&Program<'o, 'data>, JobError> {
        let candidates: Vec<&Program<'o, 'data>> = (self.programs.iter().zip(&self.loaders))
            .filter(|(p, laid)| {
                (loaders.is_empty() || laid.iter().any(|l| loaders.contains(l)))
                    && prog.is_none_or(|name| p.name() == name)
            })
            .map(|(p, _)| p)
            .collect();
        let (first, named) = match (candidates.first(), prog) {
            (None, Some(name)) => return Err(JobError::NoProgram(name.to_owned())),
            (None, None) => return Err(JobError::NoPrograms),
            (Some(&first), named) => (first, named.is_some()),
        };
        if named && candidates.len() == 1 {
            return Ok(first);
        }
        match crate::plan::select_among(candidates.clone(), log) {
            Ok(selection) => candidates
                .get(selection.chosen)
                .copied()
                .ok_or(JobError::NoPrograms),
            Err(SelectError::NoneFits(_) | SelectError::Ambiguous(..)) if named => Ok(first),
            Err(SelectError::Io(e)) => Err(JobError::Io(e)),
            Err(e) => Err(JobError::Select(e)),
        }
    }
}
