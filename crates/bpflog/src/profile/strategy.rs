//! [`profile_log`]: the one entry point of a profile, which chooses how the log is read.
//!
//! - One program, no flame graph: the log is read once and checked on the way to be the
//!   program's ([`profile_checked`](super::profile_checked)); a file in parts, one per thread
//!   ([`parallel`](super::parallel)).
//! - Several programs, no flame graph, a file: the program settled from the first lines and the
//!   file read once, in parts ([`planned`]), where that is vouched for.
//! - Otherwise: a first pass chooses the program and its logs are taken out of the file
//!   (`take`), then profiled (with their call stacks for a flame graph).
//!
//! The profile is the same whichever runs; [`Profiled::reading`] says which did.

use super::{FoldedStacks, Profile, Reading, planned, profile, profile_with_stacks};
use crate::Program;
use crate::source::SourceFiles;
use crate::take::{JobError, LogData, Note, READ_AHEAD, take};
use bpflog_log::ReadAhead;

/// What a profile is asked for: [`ProfileRequest::default`], then a method per field that
/// differs.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ProfileRequest<'a> {
    /// The program the log is of, by name (`--prog`): a log that does not fit it is profiled
    /// anyway, with a [`Note::Misfit`].
    pub prog: Option<&'a str>,
    /// Threads a file may be read with (0 counts as 1).
    pub threads: usize,
    /// Also count the call stacks for a flame graph ([`Profiled::stacks`]).
    pub stacks: bool,
}

setters!(ProfileRequest<'a> {
    prog: Option<&'a str>,
    threads: usize,
    stacks: bool,
});

impl ProfileRequest<'_> {
    /// Whether a profile of a log of `programs` reads it more than once or at offsets: then it
    /// must be given as [`LogData::File`] (a caller copies standard input and pipes first).
    pub fn needs_file(&self, programs: &[Program<'_, '_>]) -> bool {
        self.stacks || programs.len() > 1
    }
}

/// A profile and what came with it.
#[derive(Debug)]
#[non_exhaustive]
pub struct Profiled {
    /// The program the log is of (an index into the programs given).
    pub program: usize,
    /// The profile, its source lines filled in from the files.
    pub profile: Profile,
    /// The folded call stacks, when asked for.
    pub stacks: Option<FoldedStacks>,
    /// What to tell the user, in order.
    pub notes: Vec<Note>,
    /// How the log was read: the strategy [`profile_log`] chose.
    pub reading: Reading,
}

/// Profiles the log `data` of one of `programs` as `request` says, reading the source files of
/// its lines (and of the flame graph's frames) through `files`.
pub fn profile_log(
    programs: &[Program<'_, '_>],
    data: LogData<'_>,
    request: &ProfileRequest<'_>,
    files: &mut SourceFiles,
) -> Result<Profiled, JobError> {
    if programs.is_empty() {
        return Err(JobError::NoPrograms);
    }
    let forced = request.prog;
    if let Some(name) = forced
        && !programs.iter().any(|p| p.name() == name)
    {
        return Err(JobError::NoProgram(name.to_owned()));
    }
    let threads = request.threads.max(1);
    let mut profiled = match (data, programs) {
        (data, [program]) if !request.stacks => {
            let ((profile, fit), reading) = match data {
                LogData::File(file) => {
                    super::parallel::profile_checked_file(program, file, threads)?
                }
                LogData::Stream(stream) => {
                    let stream = ReadAhead::new(stream, READ_AHEAD);
                    (super::profile_checked(program, stream)?, Reading::OnePass)
                }
            };
            let notes = Note::of_fit(program, fit, forced).map_err(JobError::Unfit)?;
            Profiled {
                program: 0,
                profile,
                stacks: None,
                notes,
                reading,
            }
        }
        (LogData::Stream(_), _) => return Err(JobError::NeedsFile),
        (LogData::File(file), _) => {
            // A flame graph wants the call stacks, which the parts do not count.
            let in_parts = if request.stacks {
                None
            } else {
                planned::profile_planned_file(programs, file, forced, threads)?
            };
            match in_parts {
                Some((program, profile, reading)) => Profiled {
                    program,
                    profile,
                    stacks: None,
                    notes: Vec::new(),
                    reading,
                },
                None => {
                    let taken = take(programs, file, forced)?;
                    let program = programs.get(taken.program).ok_or(JobError::NoPrograms)?;
                    let (profile, stacks) = if request.stacks {
                        let (profile, stacks) = profile_with_stacks(program, taken.logs, files)?;
                        (profile, Some(stacks))
                    } else {
                        (profile(program, taken.logs)?, None)
                    };
                    Profiled {
                        program: taken.program,
                        profile,
                        stacks,
                        notes: taken.notes,
                        reading: Reading::FirstPass,
                    }
                }
            }
        }
    };
    profiled.profile.fill_sources(files);
    Ok(profiled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SourceSearch;
    use bpflog_object::BpfObject;

    /// `f` of the programs of the fixture `OBJECT.o` and the bytes of the fixture log `LOG`.
    fn with_fixture<R>(object: &str, log: &str, f: impl FnOnce(&[Program], Vec<u8>) -> R) -> R {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let data = std::fs::read(fixtures.join(format!("obj/{object}.o"))).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        let programs: Vec<Program> = (object.programs().into_iter())
            .map(|id| Program::new(&object, id).unwrap())
            .collect();
        f(
            &programs,
            std::fs::read(fixtures.join(format!("logs/{log}.log"))).unwrap(),
        )
    }

    /// `profile_log` over the fixture log `LOG` read as a stream, with the programs of the
    /// fixture `OBJECT.o` and `prog` named.
    fn streamed(object: &str, log: &str, prog: Option<&str>) -> Result<Profiled, JobError> {
        with_fixture(object, log, |programs, log| {
            let request = ProfileRequest {
                prog,
                ..ProfileRequest::default()
            };
            assert_eq!(request.needs_file(programs), programs.len() > 1);
            let data = LogData::Stream(Box::new(std::io::Cursor::new(log)));
            let mut files = SourceFiles::new(SourceSearch::default());
            profile_log(programs, data, &request, &mut files)
        })
    }

    /// `profile_log` of the fixture log `LOG` repeated past two parts' worth
    /// ([`MIN_PART`](super::super::parallel::MIN_PART)), as a file, with two threads.
    fn from_file(object: &str, log: &str, request: ProfileRequest<'_>) -> Profiled {
        with_fixture(object, log, |programs, log| {
            let min_part = usize::try_from(super::super::parallel::MIN_PART).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("log");
            std::fs::write(&path, log.repeat(2 * min_part / log.len() + 1)).unwrap();
            let file = std::fs::File::open(&path).unwrap();
            let mut files = SourceFiles::new(SourceSearch::default());
            let request = ProfileRequest {
                threads: 2,
                ..request
            };
            profile_log(programs, LogData::File(&file), &request, &mut files).unwrap()
        })
    }

    /// A large file is read in parts, one per thread, for one program and for a program chosen
    /// among several, and the parts are joined as read: no silent fall back to one pass. With
    /// call stacks, a first pass and the logs taken out; a stream, in one pass.
    #[test]
    fn a_large_file_is_read_in_parts() {
        let request = ProfileRequest::default();
        let one = from_file("branchy", "branchy.xdp_branchy.l2", request);
        let in_parts = Reading::InParts {
            parts: 2,
            joined: 1,
        };
        assert_eq!(one.reading, in_parts);
        let several = from_file("loop_callback", "loop_callback.loop_sum.l2", request);
        assert_eq!((several.program, several.reading), (0, in_parts));
        let stacks = ProfileRequest {
            stacks: true,
            ..request
        };
        let with_stacks = from_file("loop_callback", "loop_callback.loop_sum.l2", stacks);
        assert_eq!(with_stacks.reading, Reading::FirstPass);
        assert_eq!(with_stacks.profile, several.profile);
        let streamed = streamed("branchy", "branchy.xdp_branchy.l2", None).unwrap();
        assert_eq!(streamed.reading, Reading::OnePass);
    }

    #[test]
    fn a_stream_is_read_once_for_one_program_and_refused_for_several() {
        let one = streamed("branchy", "branchy.xdp_branchy.l2", None).unwrap();
        assert_eq!((one.program, one.notes), (0, vec![]));
        assert!(one.profile.totals.insn_lines > 0);
        let several = streamed("loop_callback", "loop_callback.loop_sum.l2", None);
        assert!(matches!(several, Err(JobError::NeedsFile)), "{several:?}");
        let unknown = streamed("branchy", "branchy.xdp_branchy.l2", Some("nope"));
        assert!(matches!(unknown, Err(JobError::NoProgram(n)) if n == "nope"));
    }

    #[test]
    fn another_programs_log_is_refused_unless_the_program_is_named() {
        let log = "reject_subprog.xdp_reject_subprog.l2";
        let refused = streamed("branchy", log, None);
        assert!(matches!(refused, Err(JobError::Unfit(_))), "{refused:?}");
        let named = streamed("branchy", log, Some("xdp_branchy")).unwrap();
        assert!(
            matches!(&named.notes[..], [Note::Misfit { line: None, program, .. }] if program == "xdp_branchy"),
            "{:?}",
            named.notes
        );
    }
}
