//! [`profile`]: the one entry point of a profile, which chooses how the log is read.
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

use super::{FoldedStacks, Profile, Reading, planned, profile_with_stacks, read_profile};
use crate::Program;
use crate::input::{Input, LogData};
use crate::source::SourceFiles;
use crate::take::{JobError, Note, READ_AHEAD, take};
use bpflog_log::LogInput;

/// What a profile is asked for: [`ProfileRequest::default`], then a method per field that
/// differs.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct ProfileRequest {
    /// Threads a file may be read with (0 counts as 1).
    pub threads: usize,
    /// Also count the call stacks for a flame graph ([`Profiled::stacks`]).
    pub stacks: bool,
}

setters!(ProfileRequest {
    threads: usize,
    stacks: bool,
});

impl ProfileRequest {
    /// Whether a profile of a log of `programs` reads it more than once or at offsets: then it
    /// must be given as a [file](LogData::File) (a caller copies standard input and pipes first).
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
    /// How the log was read: the strategy [`profile`] chose.
    pub reading: Reading,
}

/// Profiles the log of `input` as `request` says, reading the source files of its lines (and of
/// the flame graph's frames) through `files`.
///
/// The only program's log is read once (a file in parts, one per thread), its fit checked on
/// the way: a log that does not fit is [`JobError::Unfit`] unless the program is named (as by
/// [`Input::of`]), then a [`Note::Misfit`]. Of several programs, or with the call stacks, the
/// log is read at offsets: a stream is [`JobError::NeedsFile`].
pub fn profile<R: LogInput>(
    input: Input<'_, '_, '_, R>,
    request: &ProfileRequest,
    files: &mut SourceFiles,
) -> Result<Profiled, JobError> {
    input.check()?;
    let Input {
        programs,
        prog: forced,
        log,
    } = input;
    let threads = request.threads.max(1);
    let mut profiled = match (log, programs) {
        (log, [program]) if !request.stacks => {
            let ((profile, fit), reading) = match log {
                LogData::File(file) if file.growing.is_none() => {
                    super::parallel::profile_checked_file(program, file.file, threads)?
                }
                LogData::File(file) => {
                    let (stream, _) = file.read_ahead(READ_AHEAD)?;
                    (super::profile_checked(program, stream)?, Reading::OnePass)
                }
                LogData::Stream(stream) => {
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
            // A flame graph wants the call stacks, which the parts do not count; a file still
            // being written is not read in parts.
            let in_parts = if request.stacks || file.growing.is_some() {
                None
            } else {
                planned::profile_planned_file(programs, file.file, forced, threads)?
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
                        (read_profile(program, taken.logs)?, None)
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

    /// `profile` over the fixture log `LOG` read as a stream, with the programs of the
    /// fixture `OBJECT.o` and `prog` named.
    fn streamed(object: &str, log: &str, prog: Option<&str>) -> Result<Profiled, JobError> {
        with_fixture(object, log, |programs, log| {
            let request = ProfileRequest::default();
            assert_eq!(request.needs_file(programs), programs.len() > 1);
            let input = Input::among(programs, LogData::Stream(&log[..])).prog(prog);
            let mut files = SourceFiles::new(SourceSearch::default());
            profile(input, &request, &mut files)
        })
    }

    /// `profile` of the fixture log `LOG` repeated past two parts' worth
    /// ([`MIN_PART`](super::super::parallel::MIN_PART)), as a file, with two threads.
    fn from_file(object: &str, log: &str, request: ProfileRequest) -> Profiled {
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
            profile(Input::among(programs, (&file).into()), &request, &mut files).unwrap()
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
