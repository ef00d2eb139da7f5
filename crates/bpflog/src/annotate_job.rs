//! [`AnnotateJob`]: a file of logs annotated, the strategy chosen here rather than by each
//! caller, so that every caller of the same programs and options reads the log the same way.
//!
//! With one program known beforehand (named, with one layout; or the only program there is, in
//! text output), the log is read once and each log's fit checked on the way
//! ([`crate::writing`]); a log that does not fit the only program is refused in the words of a
//! first pass (`plan`). Otherwise each log's program is chosen as a first pass
//! would choose it, looking ahead at each log's start ([`crate::one_pass`]), which reads the
//! log at offsets: the caller asks [`AnnotateJob::reads_ahead`] whether to give a file.

use crate::Program;
use crate::annotate::{AnnotateOptions, OutputFormat};
use crate::file_range::LogFile;
use crate::one_pass::{AnnotatedLog, BLOCK, annotate_file_in};
use crate::plan::PlanError;
use crate::writing::{StreamedSegment, stream_each};
use bpflog_log::LogInput;
use std::io::{self, Write};

/// Logs to annotate with some programs, and the strategy chosen for them.
pub struct AnnotateJob<'j, 'o, 'd> {
    programs: &'j [Program<'o, 'd>],
    options: &'j AnnotateOptions,
    forced: Option<&'j str>,
    /// The one program every log is annotated with, when known beforehand, and whether the
    /// caller named it (then a log that does not fit it is annotated anyway, and said so).
    known: Option<(&'j Program<'o, 'd>, bool)>,
}

/// The log an [`AnnotateJob`] reads.
pub enum JobInput<'f, R> {
    /// Read once, from its start (standard input as it comes); not when the job
    /// [reads ahead](AnnotateJob::reads_ahead).
    Stream(R),
    /// A regular file, complete or still being written.
    File(LogFile<'f>),
}

/// One log of the input, annotated, as its strategy knows it.
#[derive(Debug)]
pub enum LogAnnotated {
    /// With the one program known beforehand, its fit checked on the way.
    Checked(StreamedSegment),
    /// With the program a first pass chooses.
    Chosen(AnnotatedLog),
}

impl<'j, 'o, 'd> AnnotateJob<'j, 'o, 'd> {
    /// Logs to annotate with `programs` (every program of the objects, under each loader's
    /// layout), as `options` say; `forced` restricts every log to the programs of that name
    /// (`--prog`), as `plan`'s does.
    pub fn new(
        programs: &'j [Program<'o, 'd>],
        options: &'j AnnotateOptions,
        forced: Option<&'j str>,
    ) -> Self {
        let mut named = programs.iter().filter(|p| Some(p.name()) == forced);
        let known = match (named.next(), named.next(), programs) {
            (Some(program), None, _) => Some((program, true)),
            // JSON names the program only on logs with instructions, which a first pass knows.
            (None, _, [program]) if forced.is_none() && options.format == OutputFormat::Text => {
                Some((program, false))
            }
            _ => None,
        };
        AnnotateJob {
            programs,
            options,
            forced,
            known,
        }
    }

    /// Whether the log must be given as a [file](JobInput::File): each log's program is chosen
    /// by reading ahead at its start (standard input and pipes are copied to a file first).
    pub fn reads_ahead(&self) -> bool {
        self.known.is_none()
    }

    /// The one program every log is annotated with, when it is known beforehand.
    pub fn program(&self) -> Option<&'j Program<'o, 'd>> {
        self.known.map(|(program, _)| program)
    }

    /// Annotates `log` into `output`, handing each log to `each` as it ends, with the output
    /// written so far (memory stays bounded however many logs there are). An error from `each`
    /// stops it.
    ///
    /// A log that fits no program, or several that would annotate it differently, fails with
    /// the plan's error, found where that shows: what was written before it is the caller's to
    /// hold back or to disown ([`PlanError::written`], and
    /// [`AnnotateOptions::stop_at_misfit`] to read no further).
    pub fn run<W: Write>(
        &self,
        log: JobInput<'_, impl LogInput>,
        output: W,
        mut each: impl FnMut(LogAnnotated, &mut W) -> Result<(), PlanError>,
    ) -> Result<(), PlanError> {
        let Some((program, named)) = self.known else {
            let JobInput::File(file) = log else {
                return Err(PlanError::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the log must be a file: each log's program is chosen by reading ahead",
                )));
            };
            let each = |log, out: &mut W| each(LogAnnotated::Chosen(log), out);
            return annotate_file_in(
                self.programs,
                file,
                output,
                self.options,
                self.forced,
                BLOCK,
                each,
            );
        };
        let each = |s: StreamedSegment, out: &mut W| {
            let s = if named { s } else { refusal(program, s)? };
            each(LogAnnotated::Checked(s), out)
        };
        match log {
            JobInput::Stream(input) => stream_each(program, input, output, self.options, each),
            JobInput::File(file) => {
                let (input, _) = file.read_ahead(BLOCK)?;
                stream_each(program, input, output, self.options, each)
            }
        }
    }
}

/// `s`, unless it refuses the only program in the words of a first pass: it names another
/// program, or does not fit.
fn refusal(program: &Program<'_, '_>, s: StreamedSegment) -> Result<StreamedSegment, PlanError> {
    if let Some(name) = s.named.as_ref().filter(|n| *n != program.name()) {
        return Err(PlanError::UnknownName {
            line: s.line,
            wrapper: s.wrapper,
            name: name.clone(),
            available: vec![program.name().to_owned()],
            written: s.stopped_at,
        });
    }
    // A log without instructions says little, unless what it says already ruled the program
    // out (a `func#N @START` of another layout: the reading stopped there).
    if s.stats.instructions == 0 && s.stopped_at.is_none() {
        return Ok(s);
    }
    match s.misfit {
        Some(misfit) => Err(PlanError::Segment {
            line: s.line,
            wrapper: s.wrapper,
            named: s.named,
            source: misfit,
            written: s.stopped_at,
        }),
        None => Ok(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{BpfObject, Loader};
    use std::path::Path;

    fn read(path: &str) -> Vec<u8> {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        std::fs::read(fixtures.join(path)).unwrap()
    }

    /// What `job` reads, and with which program (`None`: each log's program chosen ahead).
    fn strategy<'j>(job: &AnnotateJob<'j, '_, '_>) -> (bool, Option<&'j str>) {
        (job.reads_ahead(), job.program().map(Program::name))
    }

    #[test]
    fn the_strategy_follows_the_programs_the_name_and_the_format() {
        let (one, two) = (read("obj/branchy.o"), read("obj/two_in_one.o"));
        let (one, two) = (
            BpfObject::parse(&one).unwrap(),
            BpfObject::parse(&two).unwrap(),
        );
        let only = [Program::new(&one, one.programs()[0]).unwrap()];
        let lay_out = |name, loader| Program::with_loader(&two, two.program(name)?, loader);
        let several = [
            lay_out("xdp_first", Loader::Libbpf).unwrap(),
            lay_out("xdp_second", Loader::Libbpf).unwrap(),
        ];
        let layouts = [
            lay_out("xdp_first", Loader::Libbpf).unwrap(),
            lay_out("xdp_first", Loader::Aya).unwrap(),
        ];
        let text = AnnotateOptions::default();
        let json = AnnotateOptions {
            format: OutputFormat::Json,
            ..AnnotateOptions::default()
        };
        let cases: [(&[Program], _, _, _); 8] = [
            (&only, &text, None, (false, Some("xdp_branchy"))),
            (&only, &json, None, (true, None)),
            (
                &only,
                &json,
                Some("xdp_branchy"),
                (false, Some("xdp_branchy")),
            ),
            (&only, &text, Some("other"), (true, None)),
            (&several, &text, None, (true, None)),
            (
                &several,
                &text,
                Some("xdp_second"),
                (false, Some("xdp_second")),
            ),
            (
                &several,
                &json,
                Some("xdp_first"),
                (false, Some("xdp_first")),
            ),
            (&layouts, &text, Some("xdp_first"), (true, None)),
        ];
        for (k, (programs, options, forced, expected)) in cases.into_iter().enumerate() {
            let job = AnnotateJob::new(programs, options, forced);
            assert_eq!(strategy(&job), expected, "case {k}");
            if job.reads_ahead() {
                let e = job.run(JobInput::Stream(&b""[..]), io::sink(), |_, _| Ok(()));
                assert!(
                    matches!(e, Err(PlanError::Io(e)) if e.kind() == io::ErrorKind::InvalidInput),
                    "case {k}"
                );
            }
        }
    }

    /// The only program, streamed, refuses another program's log with the error a first pass
    /// gives; named, it annotates it and says why it does not fit.
    #[test]
    fn the_only_program_refuses_a_misfit_in_the_words_of_a_first_pass() {
        let data = read("obj/branchy.o");
        let object = BpfObject::parse(&data).unwrap();
        let programs = [Program::new(&object, object.programs()[0]).unwrap()];
        let options = AnnotateOptions::default();
        let other = read("logs/tc_prog.tc_count.l2.log");
        let planned = crate::plan(&programs, &other[..], None).unwrap_err();
        let job = AnnotateJob::new(&programs, &options, None);
        let mut logs = 0;
        let streamed = job.run(JobInput::Stream(&other[..]), io::sink(), |_, _| {
            logs += 1;
            Ok(())
        });
        assert_eq!(streamed.unwrap_err().to_string(), planned.to_string());
        assert_eq!(logs, 0);

        let job = AnnotateJob::new(&programs, &options, Some("xdp_branchy"));
        let mut misfits = Vec::new();
        job.run(JobInput::Stream(&other[..]), io::sink(), |log, _| {
            let LogAnnotated::Checked(s) = log else {
                panic!("a named program is checked on the way")
            };
            misfits.push(s.misfit.is_some());
            Ok(())
        })
        .unwrap();
        assert_eq!(misfits, [true]);

        // Its own log goes through as a first pass and a second would write it.
        let own = read("logs/branchy.xdp_branchy.l2.log");
        let plan = crate::plan(&programs, &own[..], None).unwrap();
        let mut two = Vec::new();
        crate::annotate_planned(&plan, &programs, &own[..], &mut two, &options).unwrap();
        let mut one = Vec::new();
        let job = AnnotateJob::new(&programs, &options, None);
        job.run(JobInput::Stream(&own[..]), &mut one, |_, _| Ok(()))
            .unwrap();
        assert!(one == two && !one.is_empty());
    }
}
