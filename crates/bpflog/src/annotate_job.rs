//! [`annotate`]: logs annotated, the strategy chosen here rather than by each caller, so that
//! every caller of the same programs and options reads the log the same way.
//!
//! With one program known beforehand (named, with one layout; or the only program there is, in
//! text output), the log is read once and each log's fit checked on the way
//! ([`crate::writing`]); a log that does not fit the only program is refused in the words of a
//! first pass (`plan`). Otherwise each log's program is chosen as a first pass
//! would choose it, looking ahead at each log's start ([`crate::one_pass`]), which reads the
//! log at offsets: [`AnnotateOptions::known_program`] tells a caller whether to give a file.

use crate::Program;
use crate::annotate::{AnnotateOptions, AnnotateStats, OutputFormat};
use crate::input::{Input, LogData};
use crate::one_pass::{AnnotatedLog, BLOCK, annotate_file_in};
use crate::plan::PlanError;
use crate::writing::{StreamedSegment, stream_each};
use bpflog_log::LogInput;
use std::io::{self, Write};

/// One log of the input, annotated, as its strategy knows it.
#[derive(Debug)]
pub enum LogAnnotated {
    /// With the one program known beforehand, its fit checked on the way.
    Checked(StreamedSegment),
    /// With the program a first pass chooses.
    Chosen(AnnotatedLog),
}

impl LogAnnotated {
    /// What annotating the log did.
    pub fn stats(&self) -> &AnnotateStats {
        match self {
            LogAnnotated::Checked(s) => &s.stats,
            LogAnnotated::Chosen(log) => &log.stats,
        }
    }
}

impl AnnotateOptions {
    /// The one program every log of `programs` (restricted to those named `prog`) is annotated
    /// with, when it is known beforehand: named, with one layout; or the only program there is,
    /// in text output (JSON names the program only on logs with instructions, which a first
    /// pass knows). `None`: each log's program is chosen by reading ahead at its start, and the
    /// log must be given as a [file](LogData::File) (standard input and pipes are copied to one
    /// first).
    pub fn known_program<'p, 'o, 'd>(
        &self,
        programs: &'p [Program<'o, 'd>],
        prog: Option<&str>,
    ) -> Option<&'p Program<'o, 'd>> {
        self.known(programs, prog).map(|(program, _)| program)
    }

    /// [`known_program`](Self::known_program), and whether it was named (then a log that does
    /// not fit it is annotated anyway, and said so).
    fn known<'p, 'o, 'd>(
        &self,
        programs: &'p [Program<'o, 'd>],
        prog: Option<&str>,
    ) -> Option<(&'p Program<'o, 'd>, bool)> {
        let mut named = programs.iter().filter(|p| Some(p.name()) == prog);
        match (named.next(), named.next(), programs) {
            (Some(program), None, _) => Some((program, true)),
            (None, _, [program]) if prog.is_none() && self.format == OutputFormat::Text => {
                Some((program, false))
            }
            _ => None,
        }
    }
}

/// Annotates the logs of `input` into `output`, as `options` say, handing each log to `each`
/// as it ends, with the output written so far (memory stays bounded however many logs there
/// are). An error from `each` stops it.
///
/// In kernel style every input byte is written back unchanged (styled when the palette has
/// colors), with annotation lines inserted by the kernel's rule; a log whose annotation lines
/// come from a kernel before 6.9 gets them in today's form.
///
/// A log that fits no program, or several that would annotate it differently, fails with the
/// plan's error, found where that shows: what was written before it is the caller's to hold
/// back or to disown ([`PlanError::written`], and [`AnnotateOptions::stop_at_misfit`] to read
/// no further). Of [`Input::of`] a program, a log that does not fit is annotated and said so
/// ([`StreamedSegment::misfit`]).
pub fn annotate<W: Write, R: LogInput>(
    input: Input<'_, '_, '_, R>,
    output: W,
    options: &AnnotateOptions,
    mut each: impl FnMut(LogAnnotated, &mut W) -> Result<(), PlanError>,
) -> Result<(), PlanError> {
    let Input {
        programs,
        prog,
        log,
    } = input;
    let Some((program, named)) = options.known(programs, prog) else {
        let LogData::File(file) = log else {
            return Err(PlanError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the log must be a file: each log's program is chosen by reading ahead",
            )));
        };
        let each = |log, out: &mut W| each(LogAnnotated::Chosen(log), out);
        return annotate_file_in(programs, file, output, options, prog, BLOCK, each);
    };
    let each = |s: StreamedSegment, out: &mut W| {
        let s = if named { s } else { refusal(program, s)? };
        each(LogAnnotated::Checked(s), out)
    };
    match log {
        LogData::Stream(input) => stream_each(program, input, output, options, each),
        LogData::File(file) => {
            let (input, _) = file.read_ahead(BLOCK)?;
            stream_each(program, input, output, options, each)
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

    /// Whether each log's program is chosen by reading ahead, and otherwise the one program.
    fn strategy<'p>(
        options: &AnnotateOptions,
        programs: &'p [Program<'_, '_>],
        prog: Option<&str>,
    ) -> (bool, Option<&'p str>) {
        let known = options.known_program(programs, prog);
        (known.is_none(), known.map(Program::name))
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
            assert_eq!(strategy(options, programs, forced), expected, "case {k}");
            if expected.0 {
                let input = Input::among(programs, LogData::Stream(&b""[..])).prog(forced);
                let e = annotate(input, io::sink(), options, |_, _| Ok(()));
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
        let mut logs = 0;
        let input = Input::among(&programs, LogData::Stream(&other[..]));
        let streamed = annotate(input, io::sink(), &options, |_, _| {
            logs += 1;
            Ok(())
        });
        assert_eq!(streamed.unwrap_err().to_string(), planned.to_string());
        assert_eq!(logs, 0);

        let mut misfits = Vec::new();
        let input = Input::of(&programs[0], LogData::Stream(&other[..]));
        annotate(input, io::sink(), &options, |log, _| {
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
        let input = Input::among(&programs, LogData::Stream(&own[..]));
        annotate(input, &mut one, &options, |_, _| Ok(())).unwrap();
        assert!(one == two && !one.is_empty());
    }
}
