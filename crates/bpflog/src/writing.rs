//! The annotating writer: a file's logs annotated through the one loop ([`crate::sink`]), each
//! log's lines given to its annotator and written, lines around the logs passed through
//! ([`write_logs`], its sink [`Writing`]). Its users that know each log's program before it
//! starts: `annotate_planned` (after a first pass) and [`stream_each`] (one program, its fit
//! checked on the way). The one-pass annotation of several programs is in [`crate::one_pass`];
//! [`crate::annotate()`] chooses between them.
//!
//! It is a sink like every other reader of logs, and takes from the loop what only a writer
//! needs: lines that go out as they came in are kept as spans of the reader's bytes and written
//! many at once, before the reader reads on; a live input is flushed when it pauses. The
//! annotator decides what each line of a log is ([`SegmentAnnotator::decide`]); the writer
//! writes the lines that go out as they came in, and hands it the others.

use crate::Program;
use crate::annotate::{
    AnnotateOptions, AnnotateStats, CarriedCache, Disposition, LogLine, NoRows, SegmentAnnotator,
};
use crate::checked_insns::FittedLines;
use crate::escape::write_log_lines;
use crate::frame::{Deframer, SegmentStart, Wrapper};
use crate::plan::ExistingAnnotations;
use crate::select::SelectError;
use crate::sink::{Placed, Sink, read_into};
use crate::source::SourceFiles;
use bpflog_log::{Lines, LogInput, is_detail};
use std::io::{self, Write};

/// Annotates a planned file: each log with its program, everything else passed through.
///
/// `input` must read the same bytes `plan` read. The reference the one-pass
/// strategies are tested against (feature `testing`); [`crate::annotate()`] is the entry point.
#[cfg(feature = "testing")]
pub fn annotate_planned(
    plan: &crate::plan::Plan,
    programs: &[Program<'_, '_>],
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<Vec<AnnotateStats>> {
    let mut next = plan.segments.iter();
    let mut stats = Vec::with_capacity(plan.segments.len());
    // What the rich style worked out for the last log's program.
    let mut rich = CarriedCache::default();
    write_logs::<_, _, _, io::Error>(
        input,
        output,
        options,
        &mut rich,
        |rich, _| {
            let annotator = match next.next() {
                Some(s) => SegmentAnnotator::new(
                    s.program.and_then(|p| programs.get(p)),
                    options,
                    s.existing,
                    s.partial_first_line,
                )
                .showing(s.source_lines)
                .carrying(rich, s.program),
                None => SegmentAnnotator::new(None, options, ExistingAnnotations::Unknown, false),
            };
            Ok((annotator, ()))
        },
        |rich, mut seg, (), out, sources, _| {
            seg.carry_back(out, sources, rich)?;
            stats.push(seg.finish(out, sources)?);
            Ok(())
        },
    )?;
    Ok(stats)
}

/// What annotating one log in a single pass found.
#[derive(Debug)]
#[non_exhaustive]
pub struct StreamedSegment {
    /// Line number (from 1) where the log, or its wrapper, starts.
    pub line: u64,
    /// How the log is wrapped.
    pub wrapper: Wrapper,
    /// The program the wrapper names.
    pub named: Option<String>,
    /// What annotating it did.
    pub stats: AnnotateStats,
    /// Why the log does not fit the program, when it does not.
    pub misfit: Option<SelectError>,
    /// Lines that do not fit the program but are surrounded by lines that do (the first few):
    /// noise, passed through as they are (see [`crate::Evidence::noise`]).
    pub noise: Vec<crate::Mismatch>,
    /// How many lines were taken as noise.
    pub noise_lines: u64,
    /// Where reading stopped, with [`AnnotateOptions::stop_at_misfit`] and a log that does not
    /// fit: the output holds the input's lines up to this one (from 1), annotated, and nothing
    /// after.
    pub stopped_at: Option<u64>,
}

/// Annotates a file in one pass, every log in it with `program` (the caller knows the program:
/// `--prog`, or the object has only one), checking on the way that each log fits it.
///
/// Without a first pass, the first lines of a log wait (in memory, up to 64 instructions) until
/// an annotation line says whether the kernel's lines are in it. In text output the bytes are
/// those of `plan` and [`annotate_planned`] for every log that fits (tested over every fixture,
/// whole, stripped and cut at the top); what a misfit means for output already written is the
/// caller's choice. For the tests that hold the strategies against each other (feature
/// `testing`); [`crate::annotate()`] is the entry point.
#[cfg(feature = "testing")]
pub fn annotate_stream(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<Vec<StreamedSegment>> {
    let mut done = Vec::new();
    stream_each::<_, io::Error>(program, input, output, options, |s, _| {
        done.push(s);
        Ok(())
    })?;
    Ok(done)
}

/// `annotate_stream`, handing each log to `each` as it ends, with the output written so far
/// (memory stays bounded however many logs the file holds). An error from `each` stops it.
pub(crate) fn stream_each<W: Write, E: From<io::Error>>(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: W,
    options: &AnnotateOptions,
    mut each: impl FnMut(StreamedSegment, &mut W) -> Result<(), E>,
) -> Result<(), E> {
    // The instruction lines that fitted the program, and what the rich style worked out for
    // it, from one log to the next.
    let mut job = (FittedLines::default(), CarriedCache::default());
    write_logs::<_, _, _, E>(
        input,
        output,
        options,
        &mut job,
        |(fitted, rich), opened| {
            let annotator =
                SegmentAnnotator::new(Some(program), options, ExistingAnnotations::Unknown, false)
                    .checking(fitted)
                    .carrying(rich, Some(0));
            Ok((annotator, (opened.line, opened.start.cloned())))
        },
        |(fitted, rich), mut seg, (line, start), out, sources, closed| {
            seg.carry_back(out, sources, rich)?;
            let (stats, fit) = seg.finish_checked(out, sources, fitted)?;
            let (wrapper, named) = start.map_or((Wrapper::Bare, None), |s| (s.wrapper, s.program));
            let (misfit, evidence) = match fit {
                Some(Ok(mut selection)) => {
                    let chosen = selection.candidates.swap_remove(selection.chosen);
                    (None, chosen.evidence)
                }
                Some(Err(e)) => (Some(e), crate::Evidence::default()),
                None => (None, crate::Evidence::default()),
            };
            let segment = StreamedSegment {
                line,
                wrapper,
                named,
                stats,
                misfit,
                noise: evidence.noise,
                noise_lines: evidence.noise_lines,
                stopped_at: closed.halted.then_some(closed.written),
            };
            each(segment, out)
        },
    )
}

/// How a log's reading ends, for [`write_logs`]'s `close`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed {
    /// How many of the input's lines (from the first) were written when the log is closed: all
    /// its own lines, and none after them.
    pub(crate) written: u64,
    /// Its annotator [halted](SegmentAnnotator::halted): nothing more is read.
    pub(crate) halted: bool,
}

/// A log that starts: where, and what a reader that looks ahead in it needs to go on from there.
pub(crate) struct Opened<'a> {
    /// The line (from 1) where the log, or its wrapper, starts.
    pub(crate) line: u64,
    /// Its wrapper, for a wrapped log.
    pub(crate) start: Option<&'a SegmentStart>,
    /// The kernel's part of the line it starts on, when that line is in the log.
    pub(crate) payload: Option<&'a [u8]>,
    /// The lines read so far (that line included, for all but the first log) ...
    pub(crate) lines_read: u64,
    /// ... the offset in the input just after them ...
    pub(crate) offset: u64,
    /// ... the deframer after them ...
    pub(crate) deframer: &'a Deframer,
    /// ... and the bytes after them the reader holds already.
    pub(crate) rest: &'a [u8],
}

/// Annotates the logs of a file read through the one loop ([`read_into`]), written by a
/// [`Writing`]: `open` makes the annotator of each log as it starts, with what the caller keeps
/// for it, and `close` takes both when it ends; both are handed `job`, what the caller keeps
/// from one log to the next. Lines outside any log are passed through. An annotator that
/// [halts](SegmentAnnotator::halted) stops the reading before the next line (but the lines
/// read already of a run that goes out as it came in, see [`Run`], which go on with it): it is
/// closed with the number of the last line written, and nothing more is read.
///
/// When the input would make it wait ([`LineReader::would_wait`]: a pipe that pauses), what is
/// written so far is flushed first, so that a live log flows.
///
/// [`LineReader::would_wait`]: bpflog_log::LineReader::would_wait
pub(crate) fn write_logs<'p, 'o: 'p, 'd: 'o, W: Write, J, T, E: From<io::Error>>(
    input: impl LogInput,
    output: W,
    options: &AnnotateOptions,
    job: &mut J,
    mut open: impl FnMut(&mut J, &Opened<'_>) -> Result<(SegmentAnnotator<'p, 'o, 'd>, T), E>,
    mut close: impl FnMut(
        &mut J,
        SegmentAnnotator<'p, 'o, 'd>,
        T,
        &mut W,
        &mut SourceFiles,
        Closed,
    ) -> Result<(), E>,
) -> Result<(), E> {
    let mut deframer = Deframer::default();
    let first = open(
        job,
        &Opened {
            line: 1,
            start: None,
            payload: None,
            lines_read: 0,
            offset: 0,
            deframer: &deframer,
            rest: b"",
        },
    )?;
    let mut writing = Writing {
        output,
        options,
        sources: SourceFiles::new(options.sources.clone()),
        job,
        open: &mut open,
        close: &mut close,
        current: Some(first),
        passed: Passed::new(options.escape_log),
        run: Run::Each,
        stops: options.stop_at_misfit,
        ending: false,
        starting: None,
        stopped: None,
    };
    let mut lines = input.into_lines();
    let mut line = 0;
    read_into(&mut lines, &mut deframer, &mut line, &mut writing)?;
    let Writing {
        mut output,
        mut sources,
        job,
        close,
        current,
        mut passed,
        stopped,
        ..
    } = writing;
    passed.write(lines.buffered(), &mut output)?;
    if let Some((seg, kept)) = current {
        let closed = Closed {
            written: stopped.unwrap_or(line),
            halted: stopped.is_some() || seg.halted(),
        };
        close(job, seg, kept, &mut output, &mut sources, closed)?;
    }
    Ok(output.flush()?)
}

/// What makes a log's annotator as it starts: handed what the caller keeps from one log to the
/// next, and where the log starts; gives the annotator and what the caller keeps for it.
type Open<'j, 'p, 'o, 'd, J, T, E> =
    dyn FnMut(&mut J, &Opened<'_>) -> Result<(SegmentAnnotator<'p, 'o, 'd>, T), E> + 'j;

/// What takes a log's annotator back when the log ends, with the output and the source files.
type Close<'j, 'p, 'o, 'd, W, J, T, E> = dyn FnMut(
        &mut J,
        SegmentAnnotator<'p, 'o, 'd>,
        T,
        &mut W,
        &mut SourceFiles,
        Closed,
    ) -> Result<(), E>
    + 'j;

/// The annotating writer: a [`Sink`] of the one loop that writes each log's lines through its
/// annotator ([`SegmentAnnotator`]), and lines around the logs as they are. Lines that go out as
/// they came in are kept as spans of the reader's bytes ([`Passed`]) and written many at once,
/// before anything else is written and before the reader reads on.
struct Writing<'j, 'p, 'o, 'd, W, J, T, E> {
    output: W,
    options: &'j AnnotateOptions,
    sources: SourceFiles,
    job: &'j mut J,
    /// Makes the annotator of a log that starts (see [`write_logs`]) ...
    open: &'j mut Open<'j, 'p, 'o, 'd, J, T, E>,
    /// ... and takes it back when the log ends.
    close: &'j mut Close<'j, 'p, 'o, 'd, W, J, T, E>,
    /// The open log's annotator, and what the caller keeps for it.
    current: Option<(SegmentAnnotator<'p, 'o, 'd>, T)>,
    passed: Passed,
    /// How the line after one that went out as it came in is taken.
    run: Run,
    /// Whether an annotator that halts stops the reading ([`AnnotateOptions::stop_at_misfit`]
    /// of the options the annotators are made with).
    stops: bool,
    /// The open log ends before the line being placed ([`Sink::end`]) ...
    ending: bool,
    /// ... and one starts on it ([`Sink::start`]): both done once the line is handed over.
    starting: Option<SegmentStart>,
    /// The annotator halted in a run of lines: how many of the input's lines were written.
    stopped: Option<u64>,
}

/// Which lines after one that went out as it came in ([`Disposition::AsIs`]) are known, from
/// the annotator's state then, to go out as it did: a halted annotator stops the reading only
/// where such a run of lines ends.
#[derive(Clone, Copy)]
enum Run {
    /// Every line that ends with its line end ([`SegmentAnnotator::whole_lines_only_count`]).
    Whole,
    /// Every detail line ([`SegmentAnnotator::takes_details`]).
    Details,
    /// No line.
    Each,
}

impl<W: Write, J, T, E: From<io::Error>> Writing<'_, '_, '_, '_, W, J, T, E> {
    /// Whether the open log's annotator [halted](SegmentAnnotator::halted).
    #[inline]
    fn halted(&self) -> bool {
        self.current.as_ref().is_some_and(|(seg, _)| seg.halted())
    }

    /// Line `line_no` is not one of the run the lines before it started ([`Run`]): the run
    /// ends. An annotator that halted in the run stops the reading here, before the line, and
    /// `true` (the run's lines all written, as they were read with the lines before them).
    #[inline]
    fn run_ends_halted(&mut self, line_no: u64) -> bool {
        if matches!(std::mem::replace(&mut self.run, Run::Each), Run::Each) || !self.stops {
            return false;
        }
        if self.halted() {
            self.stopped = Some(line_no - 1);
        }
        self.stopped.is_some()
    }

    /// A line of the open log that the deframer found quiet: its annotator decides what it is
    /// ([`SegmentAnnotator::decide`]); a line that goes out as it came in is kept as a span of
    /// the reader's bytes, with the source line written before it when it has one. `in_run`:
    /// the line is one of the run the line before it started.
    #[inline(always)]
    fn asked(&mut self, line: &Placed<'_>, in_run: bool) -> Result<(), E> {
        let Some((seg, _)) = self.current.as_mut() else {
            return self.placed(*line, true);
        };
        let span = (line.at, line.at + line.text.len());
        let log_line = LogLine::from(line);
        match seg.decide(log_line) {
            Disposition::AsIs(_) if seg.holds_no_error() => {
                self.passed.add(span, line.bytes, &mut self.output)?;
                if !in_run {
                    // Detail lines change nothing `takes_details` looks at.
                    self.run = if seg.whole_lines_only_count() {
                        Run::Whole
                    } else if seg.takes_details() {
                        Run::Details
                    } else {
                        Run::Each
                    };
                }
            }
            Disposition::After(row, _) if seg.holds_no_error() => {
                self.run = Run::Each;
                self.passed.write(line.bytes, &mut self.output)?;
                seg.annotation(&mut self.output, &mut self.sources, row, &log_line)?;
                self.passed.add(span, line.bytes, &mut self.output)?;
            }
            disposition => {
                self.run = Run::Each;
                self.passed.write(line.bytes, &mut self.output)?;
                seg.write(
                    disposition,
                    log_line,
                    &mut self.output,
                    &mut NoRows,
                    &mut self.sources,
                )?;
            }
        }
        Ok(())
    }

    /// A line the deframer did not find quiet, or with no log open to take it: the log before it
    /// closed and one opened, as the deframer said, then the line written through the open log's
    /// annotator when it is in a log (`in_log`), as it is otherwise.
    #[inline(never)]
    fn placed(&mut self, line: Placed<'_>, in_log: bool) -> Result<(), E> {
        self.run = Run::Each;
        self.passed.write(line.bytes, &mut self.output)?;
        if std::mem::take(&mut self.ending)
            && let Some((seg, kept)) = self.current.take()
        {
            let closed = Closed {
                written: line.line_no - 1,
                halted: false,
            };
            (self.close)(
                self.job,
                seg,
                kept,
                &mut self.output,
                &mut self.sources,
                closed,
            )?;
        }
        if let Some(start) = self.starting.take() {
            let opened = Opened {
                line: line.line_no,
                start: Some(&start),
                payload: in_log.then_some(line.payload),
                lines_read: line.line_no,
                offset: line.offset_after(),
                deframer: line.deframer,
                rest: line.rest(),
            };
            let (mut seg, kept) = (self.open)(self.job, &opened)?;
            seg.load_failed = (start.load_failed.clone()).map(|f| f.at(opened.line));
            self.current = Some((seg, kept));
        }
        match self.current.as_mut() {
            Some((seg, _)) if in_log => {
                let line = LogLine::from(&line);
                let disposition = seg.decide(line);
                let (out, sources) = (&mut self.output, &mut self.sources);
                seg.write(disposition, line, out, &mut NoRows, sources)?;
            }
            _ => outside(
                &mut self.output,
                self.options,
                line.line_no,
                line.content(),
                line.newline,
            )?,
        }
        Ok(())
    }
}

impl<W: Write, J, T, E: From<io::Error>> Sink for Writing<'_, '_, '_, '_, W, J, T, E> {
    type Error = E;

    fn end(&mut self, _: u64) -> Result<(), E> {
        self.ending = true;
        Ok(())
    }

    fn start(&mut self, _: u64, start: SegmentStart) -> Result<(), E> {
        self.starting = Some(start);
        Ok(())
    }

    #[inline(always)]
    fn payload(&mut self, line: &Placed<'_>) -> Result<(), E> {
        if let Some((seg, _)) = self.current.as_mut()
            && line.quiet
        {
            // Most lines go out as they came in, as the line before them did: the lines that
            // only detail the verifier's work (a precision-tracking walk back, a callee's
            // states), and every line of a log that carries the kernel's own source lines.
            let in_run = match self.run {
                Run::Whole => !line.newline.is_empty(),
                Run::Details if is_detail(line.payload) => {
                    // What `decide` says of it, without asking: the annotator takes details
                    // through the run.
                    seg.detail(line.line_no, None);
                    let span = (line.at, line.at + line.text.len());
                    return Ok(self.passed.add(span, line.bytes, &mut self.output)?);
                }
                Run::Details | Run::Each => false,
            };
            if !in_run && self.run_ends_halted(line.line_no) {
                return Ok(());
            }
            return self.asked(line, in_run);
        }
        if self.run_ends_halted(line.line_no) {
            return Ok(());
        }
        self.placed(*line, true)
    }

    fn outside(&mut self, line: &Placed<'_>) -> Result<(), E> {
        if self.run_ends_halted(line.line_no) {
            return Ok(());
        }
        self.placed(*line, false)
    }

    /// An annotator that halted stops the reading, before any line but those of the run the
    /// line before them started (see [`run_ends_halted`](Writing::run_ends_halted)).
    #[inline]
    fn wants_more(&self) -> bool {
        // One load when the options do not stop at a misfit.
        !self.stops
            || (self.stopped.is_none() && (!matches!(self.run, Run::Each) || !self.halted()))
    }

    /// The reader reads on: a run ends with the lines read (the line after it is asked whether
    /// the annotator halted), what is kept is written, and the output flushed when the input
    /// would make it wait.
    fn reads_on(&mut self, lines: &mut impl Lines) -> Result<(), E> {
        self.run = Run::Each;
        self.passed.write(lines.buffered(), &mut self.output)?;
        if self.wants_more() && lines.would_wait() {
            self.output.flush()?;
        }
        Ok(())
    }
}

/// Lines that go out as they came in, not written yet, to be written together: their span in
/// the reader's bytes, and whether they are written escaped
/// ([`AnnotateOptions::escape_log`]). They are written before anything else is, and before the
/// reader reads on (the bytes move then).
struct Passed(Option<(usize, usize)>, bool);

impl Passed {
    fn new(escape: bool) -> Self {
        Self(None, escape)
    }

    /// Adds the line (or lines) at `span` of `bytes`.
    fn add(&mut self, span: (usize, usize), bytes: &[u8], out: &mut impl Write) -> io::Result<()> {
        match &mut self.0 {
            Some((_, end)) if *end == span.0 => *end = span.1,
            _ => {
                self.write(bytes, out)?;
                self.0 = Some(span);
            }
        }
        Ok(())
    }

    /// Writes them.
    fn write(&mut self, bytes: &[u8], out: &mut impl Write) -> io::Result<()> {
        match self.0.take() {
            Some((start, end)) => write_log_lines(out, &bytes[start..end], self.1),
            None => Ok(()),
        }
    }
}

/// A line around the logs: as it is, or as a JSON record.
fn outside(
    out: &mut impl Write,
    options: &AnnotateOptions,
    line_no: u64,
    content: &[u8],
    newline: &[u8],
) -> io::Result<()> {
    if options.format == crate::annotate::OutputFormat::Json {
        return crate::json::record(out, line_no, "outside", content, None, None);
    }
    write_log_lines(out, content, options.escape_log)?;
    out.write_all(newline)
}
