//! [`Input`]: what each job ([`annotate`](crate::annotate()), [`explain`](crate::explain::explain),
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
    /// offsets refuses it ([`JobError::NeedsFile`]).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SourceFiles, SourceSearch, lay_out};
    use bpflog_object::BpfObject;
    use std::path::Path;

    fn read(path: &str) -> Vec<u8> {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        std::fs::read(fixtures.join(path)).unwrap()
    }

    /// The name and loader of what `choose` chose, or its error as a message.
    fn chosen(
        laid: &LaidOut<'_, '_>,
        prog: Option<&str>,
        loaders: &[Loader],
        log: &[u8],
    ) -> Result<(String, Loader), String> {
        (laid.choose(prog, loaders, log))
            .map(|p| (p.name().to_owned(), p.loader))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn one_logs_program_is_chosen_as_the_command_chooses_it() {
        let data = read("obj/two_in_one.o");
        let object = BpfObject::parse(&data).unwrap();
        let laid = lay_out(&object, &Loader::ALL);
        let second = read("logs/two_in_one.xdp_second.l2.log");
        let nested = read("logs/two_in_one.xdp_nested.l2.log");
        let libbpf = |name: &str| Ok((name.to_owned(), Loader::Libbpf));
        // Unnamed: the log chooses among every program and layout.
        assert_eq!(chosen(&laid, None, &[], &second), libbpf("xdp_second"));
        assert_eq!(chosen(&laid, None, &[], &nested), libbpf("xdp_nested"));
        // Named with layouts that differ (a call to a global function): the one the log fits
        // (the fixtures were loaded by libbpf); under cilium/ebpf's only, that one, unread.
        let layouts = laid.programs.iter().filter(|p| p.name() == "xdp_nested");
        assert!(layouts.count() > 1, "xdp_nested has one layout");
        assert_eq!(
            chosen(&laid, Some("xdp_nested"), &[], &nested),
            libbpf("xdp_nested")
        );
        let cilium = chosen(&laid, Some("xdp_nested"), &[Loader::Cilium], b"");
        assert_eq!(cilium, Ok(("xdp_nested".to_owned(), Loader::Cilium)));
        // Named, a log that does not fit is still taken as its (its first layout).
        assert_eq!(
            chosen(&laid, Some("xdp_nested"), &[], &second),
            libbpf("xdp_nested")
        );
        // No program of the name; a log of no program of the object.
        let nope = chosen(&laid, Some("nope"), &[], &second).unwrap_err();
        assert_eq!(nope, "no program named 'nope'");
        let other = read("logs/branchy.xdp_branchy.l2.log");
        let e = laid.choose(None, &[], &other[..]).unwrap_err();
        assert!(
            matches!(e, JobError::Select(SelectError::NoneFits(_))),
            "{e:?}"
        );
    }

    #[test]
    fn a_stream_is_enough_for_one_program_and_refused_where_a_job_reads_ahead() {
        let data = read("obj/loop_callback.o");
        let object = BpfObject::parse(&data).unwrap();
        let programs = lay_out(&object, &[Loader::Libbpf]).programs;
        assert_eq!(programs.len(), 2);
        let log = read("logs/loop_callback.loop_sum.l2.log");
        let sum = programs.iter().find(|p| p.name() == "loop_sum").unwrap();
        let stream = || LogData::Stream(&log[..]);

        let among = crate::explain::explain(Input::among(&programs, stream()), |_, _| Ok(()));
        assert!(matches!(among, Err(JobError::NeedsFile)), "{among:?}");
        let explained = crate::explain::explain(Input::of(sum, stream()), |_, _| Ok(()));
        assert_eq!(explained.unwrap().explained, 0);

        let options = crate::report::ReportOptions::default();
        let among = crate::report::report(Input::among(&programs, stream()), io::sink(), &options);
        assert!(matches!(among, Err(JobError::NeedsFile)), "{among:?}");
        let mut page = Vec::new();
        let reported = crate::report::report(Input::of(sum, stream()), &mut page, &options);
        let reported = reported.unwrap();
        assert!(reported.stats.instructions > 0 && reported.notes.is_empty());

        let request = crate::profile::ProfileRequest::default();
        let mut files = SourceFiles::new(SourceSearch::default());
        let profiled = crate::profile::profile(Input::of(sum, stream()), &request, &mut files);
        let profiled = profiled.unwrap();
        assert!(profiled.profile.totals.insn_lines > 0 && profiled.notes.is_empty());
        // Of the other program, the log is still profiled, and said not to fit.
        let nested = programs.iter().find(|p| p.name() == "loop_nested").unwrap();
        let misfit = crate::profile::profile(Input::of(nested, stream()), &request, &mut files);
        let notes = misfit.unwrap().notes;
        assert!(
            matches!(&notes[..], [crate::Note::Misfit { program, .. }] if program == "loop_nested"),
            "{notes:?}"
        );
        // A name of no program given.
        let unknown = Input::among(&programs, stream()).prog(Some("nope"));
        let e = crate::profile::profile(unknown, &request, &mut files).unwrap_err();
        assert!(matches!(e, JobError::NoProgram(n) if n == "nope"));
    }
}
