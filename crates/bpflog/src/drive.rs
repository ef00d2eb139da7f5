//! The annotating loop ([`drive`]): a file read line by line, split into logs, each log's lines
//! given to its annotator and written; lines around the logs passed through. Its users that
//! know each log's program before it starts: [`annotate_planned`] (after a first pass) and
//! [`stream_each`] (one program, its fit checked on the way). The one-pass annotation of
//! several programs is in [`crate::one_pass`]; [`crate::AnnotateJob`] chooses between them.
//!
//! It reads and deframes as every reader of logs does ([`crate::sink`]), and adds what only a
//! writer needs: lines that go out as they came in are written as spans of the reader's buffer,
//! in runs, and a live input is flushed when it pauses.

use crate::Program;
use crate::annotate::{AnnotateOptions, AnnotateStats, LogLine, Pass, SegmentAnnotator};
use crate::checked_insns::FittedLines;
use crate::frame::{Deframer, SegmentStart, Wrapper};
use crate::plan::{ExistingAnnotations, Plan};
use crate::select::SelectError;
use crate::sink::{Framed, framed};
use crate::source::SourceFiles;
use bpflog_log::{LogInput, is_detail, split_newline};
use std::io::{self, Write};

/// Annotates a planned file: each log with its program, everything else passed through.
///
/// `input` must read the same bytes [`plan`](crate::plan()) read. The reference the one-pass
/// strategies are tested against; [`crate::AnnotateJob`] is the entry point.
#[doc(hidden)]
pub fn annotate_planned(
    plan: &Plan,
    programs: &[Program<'_, '_>],
    input: impl LogInput,
    output: impl Write,
    options: &AnnotateOptions,
) -> io::Result<Vec<AnnotateStats>> {
    let mut next = plan.segments.iter();
    let mut stats = Vec::with_capacity(plan.segments.len());
    drive::<_, _, _, io::Error>(
        input,
        output,
        options,
        &mut (),
        |(), _| {
            let annotator = match next.next() {
                Some(s) => SegmentAnnotator::new(
                    s.program.and_then(|p| programs.get(p)),
                    options,
                    s.existing,
                    s.partial_first_line,
                ),
                None => SegmentAnnotator::new(None, options, ExistingAnnotations::Unknown, false),
            };
            Ok((annotator, ()))
        },
        |(), seg, (), out, sources, _| {
            stats.push(seg.finish(out, sources)?);
            Ok(())
        },
    )?;
    Ok(stats)
}

/// What annotating one log in a single pass found.
#[derive(Debug)]
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
/// those of [`plan`](crate::plan()) and [`annotate_planned`] for every log that fits (tested over every fixture,
/// whole, stripped and cut at the top); what a misfit means for output already written is the
/// caller's choice. For the tests that hold the strategies against each other;
/// [`crate::AnnotateJob`] is the entry point.
#[doc(hidden)]
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

/// [`annotate_stream`], handing each log to `each` as it ends, with the output written so far
/// (memory stays bounded however many logs the file holds). An error from `each` stops it.
pub(crate) fn stream_each<W: Write, E: From<io::Error>>(
    program: &Program<'_, '_>,
    input: impl LogInput,
    output: W,
    options: &AnnotateOptions,
    mut each: impl FnMut(StreamedSegment, &mut W) -> Result<(), E>,
) -> Result<(), E> {
    // The instruction lines that fitted the program, from one log to the next.
    let mut fitted = FittedLines::default();
    drive::<_, _, _, E>(
        input,
        output,
        options,
        &mut fitted,
        |fitted, opened| {
            let annotator =
                SegmentAnnotator::new(Some(program), options, ExistingAnnotations::Unknown, false)
                    .checking(fitted);
            Ok((annotator, (opened.line, opened.start.cloned())))
        },
        |fitted, seg, (line, start), out, sources, closed| {
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

/// How a log's reading ends, for [`drive`]'s `close`.
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

/// Reads a file line by line, splitting it into logs (see [`crate::frame`]): `open` makes the
/// annotator of each log as it starts, with what the caller keeps for it, and `close` takes both
/// when it ends; both are handed `job`, what the caller keeps from one log to the next. Lines
/// outside any log are passed through. An annotator that [halts](SegmentAnnotator::halted) stops
/// the reading: it is closed with the number of the last line read (all of them written), and
/// nothing more is read.
///
/// When the input would make it wait ([`LineReader::would_wait`]: a pipe that pauses), what is
/// written so far is flushed first, so that a live log flows.
pub(crate) fn drive<'p, 'o: 'p, 'd: 'o, W: Write, J, T, E: From<io::Error>>(
    input: impl LogInput,
    mut output: W,
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
    let mut sources = SourceFiles::new(options.sources.clone());
    let mut deframer = Deframer::default();
    let mut current = Some(open(
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
    )?);
    let mut lines = input.into_lines();
    let mut line_no = 0u64;
    let mut offset = 0u64;
    let mut passed = Passed::default();
    loop {
        if current.as_ref().is_some_and(|(seg, _)| seg.halted()) {
            passed.write(lines.buffered(), &mut output)?;
            if let Some((seg, kept)) = current.take() {
                let closed = Closed {
                    written: line_no,
                    halted: true,
                };
                close(job, seg, kept, &mut output, &mut sources, closed)?;
            }
            return Ok(output.flush()?);
        }
        let span = match lines.next_line_span(false)? {
            Some(span) => span,
            None => {
                passed.write(lines.buffered(), &mut output)?;
                if lines.would_wait() {
                    output.flush()?;
                }
                match lines.next_line_span(true)? {
                    Some(span) => span,
                    None => break,
                }
            }
        };
        let bytes = lines.buffered();
        let (buf, rest) = (&bytes[span.0..span.1], &bytes[span.1..]);
        line_no += 1;
        offset += buf.len() as u64;
        let (content, newline) = split_newline(buf);
        // Most lines are the open log's own and change nothing in the framing.
        let quiet = deframer.quiet(content);
        if quiet && let Some((seg, _)) = current.as_mut() {
            let line = LogLine::bare(line_no, buf, (content, newline));
            match seg.passes(&line) {
                Pass::Line => {
                    passed.add(span, bytes, &mut output)?;
                    // Most lines go out as they came in, only counted: the lines that only
                    // detail the verifier's work (a precision-tracking walk back, a callee's
                    // states), and every line of a log that carries the kernel's own source
                    // lines. The lines after this one that are read already and go the same
                    // way are taken as one run.
                    let first = line_no;
                    let (run, n) = if seg.whole_lines_only_count() {
                        // `deframer.quiet`, its framing's part asked once.
                        let quiet = deframer.quiet_framing();
                        lines.next_run(|text| {
                            let (content, newline) = split_newline(text);
                            let taken = quiet
                                && !newline.is_empty()
                                && !content.ends_with(b":")
                                && seg.count_whole(line_no + 1, content);
                            line_no += u64::from(taken);
                            taken
                        })
                    } else {
                        // Detail lines change nothing `takes_details` looks at: asked again
                        // only after another line.
                        let mut details = seg.takes_details();
                        lines.next_run(|text| {
                            let (content, newline) = split_newline(text);
                            if !deframer.quiet(content) {
                                return false;
                            }
                            let taken = if details && is_detail(content) {
                                seg.detail(line_no + 1);
                                true
                            } else {
                                let line = LogLine::bare(line_no + 1, text, (content, newline));
                                let taken = seg.only_counts(&line);
                                details = seg.takes_details();
                                taken
                            };
                            line_no += u64::from(taken);
                            taken
                        })
                    };
                    debug_assert_eq!(line_no - first, n);
                    if n > 0 {
                        offset += (run.1 - run.0) as u64;
                        passed.add(run, lines.buffered(), &mut output)?;
                    }
                }
                Pass::After(row) => {
                    passed.write(bytes, &mut output)?;
                    seg.annotation(&mut output, &mut sources, row, &line)?;
                    passed.add(span, bytes, &mut output)?;
                }
                Pass::No => {
                    passed.write(bytes, &mut output)?;
                    seg.line(&mut output, &mut sources, line)?;
                }
            }
            continue;
        }
        passed.write(bytes, &mut output)?;
        let Framed {
            ends,
            starts,
            payload,
            indent,
        } = if quiet {
            // A quiet line with no log open to take it: passed through.
            Framed {
                ends: false,
                starts: None,
                payload: None,
                indent: b"",
            }
        } else {
            framed(&mut deframer, content)
        };
        if ends && let Some((seg, kept)) = current.take() {
            let closed = Closed {
                written: line_no - 1,
                halted: false,
            };
            close(job, seg, kept, &mut output, &mut sources, closed)?;
        }
        if let Some(start) = &starts {
            current = Some(open(
                job,
                &Opened {
                    line: line_no,
                    start: Some(start),
                    payload: payload.map(|(_, p)| p),
                    lines_read: line_no,
                    offset,
                    deframer: &deframer,
                    rest,
                },
            )?);
        }
        match (payload, current.as_mut()) {
            (Some((prefix, payload)), Some((seg, _))) => {
                let line = LogLine {
                    line_no,
                    text: buf,
                    prefix,
                    payload,
                    newline,
                    indent,
                };
                seg.line(&mut output, &mut sources, line)?;
            }
            _ => outside(&mut output, options, line_no, content, newline)?,
        }
    }
    passed.write(lines.buffered(), &mut output)?;
    if let Some((seg, kept)) = current.take() {
        let closed = Closed {
            written: line_no,
            halted: false,
        };
        close(job, seg, kept, &mut output, &mut sources, closed)?;
    }
    Ok(output.flush()?)
}

/// Lines that go out as they came in, not written yet, to be written together: their span in
/// the reader's bytes. They are written before anything else is, and before the reader reads
/// on (the bytes move then).
#[derive(Default)]
struct Passed(Option<(usize, usize)>);

impl Passed {
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
            Some((start, end)) => out.write_all(&bytes[start..end]),
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
    out.write_all(content)?;
    out.write_all(newline)
}
