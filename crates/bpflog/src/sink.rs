//! The one loop over a file of logs, and the one place a log's line is decoded for those who
//! only look at it.
//!
//! Every reader of logs does the same with a line: the deframer ([`crate::frame`]) says whether it
//! is the open log's own (most are: [`Deframer::quiet`]), whether a log ends or starts there, and
//! which part of it is the kernel's. [`read_into`] reads the lines and [`deframe`] makes those
//! decisions, handing the result to a [`Sink`]: the first pass ([`crate::plan`](mod@crate::plan)),
//! the checked and planned profiles, the lookahead of the one-pass annotation,
//! [`crate::extract::Extract`], the explainer, the sniffer, and the annotating writer
//! ([`crate::writing`]). No reader has a loop of its own: what only a writer needs comes through
//! the same calls, each line's span in the reader's bytes ([`Placed`]: lines that go out as they
//! came in are written many at once) and the hook before the reader reads on ([`Sink::reads_on`]:
//! those spans written, a live input flushed).
//!
//! Then the kernel's part of a line goes to what observes it ([`Observer`]: the first pass,
//! the selector, the profiler, the annotator's checks), through [`decode`]: a detail line passed
//! over when it would change nothing, an instruction seen before only counted, anything else
//! classified once and observed.

use crate::frame::{Deframer, SegmentStart};
use crate::select::Selector;
use bpflog_log::{InsnHead, Line, Lines, LogInput, classify, insn_head, is_detail, split_newline};
use std::io;

/// What the deframer makes of a line that is not quiet ([`Deframer::quiet`]: most lines are the
/// open log's own, change nothing in the framing, and are all the kernel's).
struct Framed<'a> {
    /// The open log ends before this line.
    ends: bool,
    /// A log starts on this line.
    starts: Option<SegmentStart>,
    /// The wrapper's part and the kernel's part, for a line of a log; `None` outside any log.
    payload: Option<(&'a [u8], &'a [u8])>,
    /// Written before an annotation line inserted into this log.
    indent: &'static [u8],
}

/// What the deframer makes of `content` (a line without its newline), asked after
/// [`Deframer::quiet`].
fn framed<'a>(deframer: &mut Deframer, content: &'a [u8]) -> Framed<'a> {
    let step = deframer.step(content);
    Framed {
        ends: step.ends,
        starts: step.starts,
        payload: step.prefix.map(|prefix| {
            let prefix = prefix.min(content.len());
            (&content[..prefix], &content[prefix..])
        }),
        indent: step.indent,
    }
}

/// A line as the deframer placed it: what a [`Sink`] is handed.
#[derive(Clone, Copy)]
pub(crate) struct Placed<'a> {
    /// Its number in the whole input, from 1.
    pub(crate) line_no: u64,
    /// The reader's bytes it is cut from
    /// ([`LineReader::buffered`](bpflog_log::LineReader::buffered); the line alone, for a line told
    /// by itself) ...
    pub(crate) bytes: &'a [u8],
    /// ... and where it starts in them: a writer keeps spans of lines that go out as they came
    /// in, to write many at once (valid until the reader reads on: [`Sink::reads_on`]).
    pub(crate) at: usize,
    /// The whole line: prefix, payload and line end, one after another.
    pub(crate) text: &'a [u8],
    /// The wrapper's part of a line of a log (cilium/ebpf's tab, aya's message).
    pub(crate) prefix: &'a [u8],
    /// The kernel's part of a line of a log; all of a line outside any log, without its end.
    pub(crate) payload: &'a [u8],
    /// Its line end (`b""` for a last line without one).
    pub(crate) newline: &'a [u8],
    /// Written before a line inserted into the log here.
    pub(crate) indent: &'static [u8],
    /// The deframer found it quiet ([`Deframer::quiet`]): the open log's own, the framing
    /// unchanged, all the kernel's.
    pub(crate) quiet: bool,
    /// The deframer after the line ...
    pub(crate) deframer: &'a Deframer,
    /// ... and the input's offset of `bytes` (see [`offset_after`](Self::offset_after)).
    pub(crate) base: u64,
}

impl Placed<'_> {
    /// The line without its end.
    #[inline]
    pub(crate) fn content(&self) -> &[u8] {
        &self.text[..self.text.len() - self.newline.len()]
    }

    /// The bytes the reader holds after the line.
    pub(crate) fn rest(&self) -> &[u8] {
        &self.bytes[self.at + self.text.len()..]
    }

    /// The offset in the input after the line: a reader that looks ahead from a log's start
    /// goes on from there, with a copy of the deframer.
    pub(crate) fn offset_after(&self) -> u64 {
        self.base.wrapping_add((self.at + self.text.len()) as u64)
    }
}

/// What takes a file's lines once the deframer has placed them.
pub(crate) trait Sink {
    /// What stops the reading.
    type Error: From<io::Error>;

    /// The open log ends before line `line` (nothing, for a sink that takes lines alike in any
    /// log).
    fn end(&mut self, line: u64) -> Result<(), Self::Error> {
        let _ = line;
        Ok(())
    }

    /// A log starts on line `line`.
    fn start(&mut self, line: u64, start: SegmentStart) -> Result<(), Self::Error> {
        let _ = (line, start);
        Ok(())
    }

    /// A line of the open log ([`Placed::payload`]: the kernel's part).
    fn payload(&mut self, line: &Placed<'_>) -> Result<(), Self::Error>;

    /// A line outside any log ([`Placed::payload`]: all of it).
    fn outside(&mut self, line: &Placed<'_>) -> Result<(), Self::Error> {
        let _ = line;
        Ok(())
    }

    /// Whether it takes more lines.
    fn wants_more(&self) -> bool {
        true
    }

    /// The lines read are all handed out, and `lines` reads on: the bytes move then (a writer
    /// writes the lines it kept as spans first), and the input may make it wait
    /// ([`LineReader::would_wait`](bpflog_log::LineReader::would_wait): a writer flushes first).
    fn reads_on(&mut self, lines: &mut impl Lines) -> Result<(), Self::Error> {
        let _ = lines;
        Ok(())
    }
}

/// Hands line `line`, `text` (with its newline if it has one), to `sink`, as the deframer places
/// it; `text` starts at `start` of `bytes`, whose offset in the input is `base`.
#[inline(always)]
pub(crate) fn deframe<S: Sink>(
    deframer: &mut Deframer,
    text: &[u8],
    (bytes, start, base): (&[u8], usize, u64),
    line: u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    let (content, newline) = split_newline(text);
    // Most lines are the open log's own and change nothing in the framing.
    if deframer.quiet(content) {
        return sink.payload(&Placed {
            line_no: line,
            bytes,
            at: start,
            text,
            prefix: b"",
            payload: content,
            newline,
            indent: b"",
            quiet: true,
            deframer,
            base,
        });
    }
    let framed = framed(deframer, content);
    if framed.ends {
        sink.end(line)?;
    }
    if let Some(start) = framed.starts {
        sink.start(line, start)?;
    }
    let (prefix, payload) = framed.payload.unwrap_or((b"", content));
    let placed = Placed {
        line_no: line,
        bytes,
        at: start,
        text,
        prefix,
        payload,
        newline,
        indent: framed.indent,
        quiet: false,
        deframer,
        base,
    };
    match framed.payload {
        Some(_) => sink.payload(&placed),
        None => sink.outside(&placed),
    }
}

/// [`deframe`] of a line told by itself (with its newline if it has one).
#[inline(always)]
pub(crate) fn deframe_line<S: Sink>(
    deframer: &mut Deframer,
    text: &[u8],
    line: u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    deframe(deframer, text, (text, 0, 0), line, sink)
}

/// Hands the lines of `lines` to `sink` until it wants no more or they end, numbering them on
/// from `line` (the number of the line read last).
pub(crate) fn read_into<S: Sink>(
    lines: &mut impl Lines,
    deframer: &mut Deframer,
    line: &mut u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    // Counted in a register, not through the reference.
    let mut n = *line;
    let read = (|| {
        while sink.wants_more() {
            // The whole lines read already, their ends found in one sweep (a line end asked
            // for line by line costs a search from each line's start).
            let mut failed = None;
            let base = lines.offset_of(0);
            lines.next_run(|text, at, bytes| {
                if !sink.wants_more() {
                    return false;
                }
                n += 1;
                if let Err(e) = deframe(deframer, text, (bytes, at, base), n, sink) {
                    failed = Some(e);
                    return false;
                }
                true
            });
            if let Some(e) = failed {
                return Err(e);
            }
            if !sink.wants_more() {
                break;
            }
            // The line the bytes read so far end inside: read on (asked again: the sink may
            // stop once the lines read are all handed out).
            sink.reads_on(lines)?;
            if !sink.wants_more() {
                break;
            }
            let Some((start, end)) = lines.next_line_span(true)? else {
                break;
            };
            n += 1;
            let (bytes, base) = (lines.buffered(), lines.offset_of(0));
            deframe(deframer, &bytes[start..end], (bytes, start, base), n, sink)?;
        }
        Ok(())
    })();
    *line = n;
    read
}

/// [`read_into`] over the lines of `input`, the lines after the `line` read before (an error
/// names a line by its number counted from there): how a pass over a file in parts reads a part.
pub(crate) fn read_input_into<S: Sink>(
    input: impl LogInput,
    deframer: &mut Deframer,
    line: &mut u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    let mut lines = input.into_lines();
    lines.count_from(*line);
    read_into(&mut lines, deframer, line, sink)
}

/// Hands every line of `input`, one bare log and nothing else (what a loader holds:
/// [`Deframer::whole`]), to `observer` through [`decode`].
pub(crate) fn observe_whole(input: impl LogInput, observer: &mut impl Observer) -> io::Result<()> {
    /// The observer, as the sink of a whole log: it has no ends or starts.
    struct AsSink<'a, O>(&'a mut O);

    impl<O: Observer> Sink for AsSink<'_, O> {
        type Error = io::Error;

        #[inline(always)]
        fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
            decode(line.payload, line.line_no, self.0);
            Ok(())
        }
    }

    read_input_into(input, &mut Deframer::whole(), &mut 0, &mut AsSink(observer))
}

/// What looks at a log's lines without writing them.
pub(crate) trait Observer {
    /// Whether a detail line ([`is_detail`]) would change nothing now, so that it need not be
    /// classified.
    fn ignores_details(&self) -> bool;

    /// Takes line `line` (`payload`) of instruction `head` when counting it is all it would do
    /// with it (an instruction seen before): `false`, and nothing done, when it needs the line
    /// classified.
    fn insn_seen(&mut self, head: &InsnHead<'_>, payload: &[u8], line: u64) -> bool;

    /// Takes line `line` (`payload`, the kernel's part, without its newline), classified.
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line: u64);
}

/// Hands the kernel's part of line `line` to `observer`, decoded as little as it needs: the
/// line classified, when it was (not a detail line passed over, nor an instruction seen before,
/// only counted).
#[inline(always)]
pub(crate) fn decode<'a>(
    payload: &'a [u8],
    line: u64,
    observer: &mut impl Observer,
) -> Option<Line<'a>> {
    // A detail line has no instruction start: `decode_with` asks whether it is one.
    decode_with(insn_head(payload), payload, line, observer, classify)
}

/// [`decode`], with the line's instruction start parsed already (`None`: it has none), and the
/// line classified by `classify` when it needs to be.
#[inline(always)]
pub(crate) fn decode_with<'a>(
    head: Option<InsnHead<'a>>,
    payload: &'a [u8],
    line: u64,
    observer: &mut impl Observer,
    classify: impl FnOnce(&'a [u8]) -> Line<'a>,
) -> Option<Line<'a>> {
    let kind = match head {
        // Most lines: an instruction seen before, only counted.
        Some(head) if observer.insn_seen(&head, payload, line) => return None,
        // Its start is all `classify` would find of it.
        Some(head) => head.line(),
        None if is_detail(payload) && observer.ignores_details() => return None,
        None => classify(payload),
    };
    observer.observe(&kind, payload, line);
    Some(kind)
}

/// Two observers of the same lines, the first asked first.
pub(crate) struct Both<'a, A, B>(pub(crate) &'a mut A, pub(crate) &'a mut B);

impl<A: Observer, B: Observer> Observer for Both<'_, A, B> {
    #[inline(always)]
    fn ignores_details(&self) -> bool {
        self.0.ignores_details() && self.1.ignores_details()
    }

    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, payload: &[u8], line: u64) -> bool {
        if !self.0.insn_seen(head, payload, line) {
            return false;
        }
        // The first has counted it: the second takes it whole if it needs more.
        if !self.1.insn_seen(head, payload, line) {
            self.1.observe(&head.line(), payload, line);
        }
        true
    }

    #[inline(always)]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line: u64) {
        self.0.observe(kind, payload, line);
        self.1.observe(kind, payload, line);
    }
}

/// Nothing observing: every line is passed over.
impl Observer for () {
    #[inline(always)]
    fn ignores_details(&self) -> bool {
        true
    }

    #[inline(always)]
    fn insn_seen(&mut self, _: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        true
    }

    #[inline(always)]
    fn observe(&mut self, _: &Line<'_>, _: &[u8], _: u64) {}
}

/// The selector looks at instructions, annotation and function lines, and at the liveness
/// listing while it tells candidates apart.
impl Observer for Selector<'_, '_, '_> {
    #[inline(always)]
    fn ignores_details(&self) -> bool {
        Selector::ignores_details(self)
    }

    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        Selector::insn_seen(self, head)
    }

    #[inline]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], line: u64) {
        self.observe_text(kind, payload, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::{HeldLines, LineReader};

    /// Takes the kernel's part of each line until it holds `wanted` of them.
    struct Taking {
        wanted: usize,
        took: Vec<(Vec<u8>, u64)>,
    }

    impl Sink for Taking {
        type Error = io::Error;

        fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
            self.took.push((line.payload.to_vec(), line.line_no));
            Ok(())
        }

        fn wants_more(&self) -> bool {
            self.took.len() < self.wanted
        }
    }

    /// A real log.
    fn fixture_log() -> Vec<u8> {
        std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/logs/xdp_subprogs.xdp_parse.l2.log"),
        )
        .unwrap()
    }

    #[test]
    fn lines_are_taken_until_the_sink_wants_no_more_and_the_rest_left_to_read() {
        // A real log's lines, read in blocks smaller and larger than a line.
        let log = fixture_log();
        let all: Vec<&[u8]> = log.split_inclusive(|&b| b == b'\n').collect();
        for capacity in [16, 100, 4096, 1 << 20] {
            for wanted in [1, 2, 17, all.len() - 1, all.len(), all.len() + 5] {
                let mut lines = LineReader::with_capacity(capacity, &log[..]);
                let mut sink = Taking {
                    wanted,
                    took: Vec::new(),
                };
                let (mut deframer, mut line) = (Deframer::default(), 0);
                read_into(&mut lines, &mut deframer, &mut line, &mut sink).unwrap();
                let n = wanted.min(all.len());
                assert_eq!(line, n as u64, "{capacity} {wanted}");
                let expected: Vec<(Vec<u8>, u64)> = (all.iter().take(n).zip(1..))
                    .map(|(l, i)| (split_newline(l).0.to_vec(), i))
                    .collect();
                assert_eq!(sink.took, expected, "{capacity} {wanted}");
                // The lines not taken are still to be read, in order.
                let next = lines.next_line().unwrap().map(<[u8]>::to_vec);
                assert_eq!(next, all.get(n).map(|l| l.to_vec()), "{capacity} {wanted}");
            }
        }
    }

    #[test]
    fn lines_held_already_are_taken_as_read_and_the_rest_left_where_they_start() {
        // The bytes another reader holds: a real log's, cut inside a line, from an offset.
        let log = fixture_log();
        let cut = &log[..log.len() - 7];
        let whole: Vec<&[u8]> = cut
            .split_inclusive(|&b| b == b'\n')
            .filter(|l| l.ends_with(b"\n"))
            .collect();
        for wanted in [1, 2, 17, whole.len() - 1, whole.len(), whole.len() + 5] {
            let mut held = HeldLines::new(cut, 1000);
            let mut sink = Taking {
                wanted,
                took: Vec::new(),
            };
            let (mut deframer, mut line) = (Deframer::default(), 40);
            read_into(&mut held, &mut deframer, &mut line, &mut sink).unwrap();
            let n = wanted.min(whole.len());
            assert_eq!(line, 40 + n as u64, "{wanted}");
            let expected: Vec<(Vec<u8>, u64)> = (whole.iter().take(n).zip(41..))
                .map(|(l, i)| (split_newline(l).0.to_vec(), i))
                .collect();
            assert_eq!(sink.took, expected, "{wanted}");
            // Where the lines not taken start: the cut last line is never taken.
            let taken: usize = whole.iter().take(n).map(|l| l.len()).sum();
            assert_eq!(held.offset(), 1000 + taken as u64, "{wanted}");
        }
    }
}
