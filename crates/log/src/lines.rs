//! Reading a log line by line without copying each line.
//!
//! A [`LineReader`] reads large blocks into one buffer and hands out each line as a slice of it,
//! terminator included. Memory is the buffer (1 MiB) or the longest line, whichever is larger;
//! nothing is allocated per line. A line is a slice, so it has to fit in memory whole: lines
//! longer than [`MAX_LINE`] end the lines with an error ([`LineTooLong`]) instead of growing the
//! buffer without bound (`/dev/zero`, a file without newlines). The kernel's own lines are a few
//! KB at most, so the cap is reached only by what is not a log. It is the reading half of
//! "annotate at the speed of copying".
//! [`LineReader::read_ahead`] takes its blocks from a thread that reads ahead
//! ([`ReadAhead`]).

use crate::line_ends::LineEnds;
use crate::read_ahead::{GAP, ReadAhead};
use std::io::{self, Read};

/// The buffer size: large reads, few system calls.
const DEFAULT_CAPACITY: usize = 1 << 20;

/// The longest line a [`LineReader`] hands out, its `\n` aside (a `\r` before it counts):
/// 16 MiB. The kernel's lines are a few KB at most (it formats them through a buffer of 1 KiB; a state line joins a few
/// hundred pieces), so no log comes near it; loader output around a log passes with room to spare.
pub const MAX_LINE: usize = 16 << 20;

/// The error that ends the lines of an input with a line longer than [`MAX_LINE`] (of kind
/// [`io::ErrorKind::InvalidData`]; reach it with [`io::Error::get_ref`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong {
    /// The line's number, counting from 1 (see [`LineReader::count_from`]).
    pub line: u64,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} is longer than {} MiB, the most bpflog reads of a line (a verifier log's \
             lines are a few KB at most)",
            self.line,
            MAX_LINE >> 20
        )
    }
}

impl std::error::Error for LineTooLong {}

impl LineTooLong {
    /// As the error that ends the lines.
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

/// What a log is read from: any reader, or a [`ReadAhead`] (then the reading happens on its
/// thread). The functions that read logs take this.
pub trait LogInput {
    /// The reader underneath.
    type Reader: Read;
    /// The lines of the input.
    fn into_lines(self) -> LineReader<Self::Reader>;
}

impl<R: Read> LogInput for R {
    type Reader = R;
    fn into_lines(self) -> LineReader<R> {
        LineReader::new(self)
    }
}

impl LogInput for ReadAhead {
    type Reader = io::Empty;
    fn into_lines(self) -> LineReader<io::Empty> {
        LineReader::read_ahead(self)
    }
}

/// Lines of a byte stream, as slices of one reused buffer.
pub struct LineReader<R> {
    inner: R,
    /// When set, blocks come from it, not from `inner`.
    ahead: Option<ReadAhead>,
    buf: Vec<u8>,
    /// The next line starts here.
    start: usize,
    /// Bytes before `scan` (from `start`) hold no newline.
    scan: usize,
    /// Bytes read end here.
    end: usize,
    eof: bool,
    /// Lines handed out, and lines before the input's start (see [`LineReader::count_from`]).
    lines: u64,
    /// The input's offset of the next line: the bytes of the lines handed out.
    handed: u64,
}

impl LineReader<io::Empty> {
    /// Lines of the blocks a [`ReadAhead`] reads on its thread: the same lines as
    /// [`LineReader::new`] over its source, without the read on this thread.
    pub fn read_ahead(ahead: ReadAhead) -> Self {
        LineReader {
            inner: io::empty(),
            ahead: Some(ahead),
            buf: Vec::new(),
            start: 0,
            scan: 0,
            end: 0,
            eof: false,
            lines: 0,
            handed: 0,
        }
    }
}

impl<R: Read> LineReader<R> {
    /// A reader with a 1 MiB buffer.
    pub fn new(inner: R) -> Self {
        Self::with_capacity(DEFAULT_CAPACITY, inner)
    }

    /// A reader with a buffer of `capacity` bytes (at least 1).
    pub fn with_capacity(capacity: usize, inner: R) -> Self {
        LineReader {
            inner,
            ahead: None,
            buf: vec![0; capacity.max(1)],
            start: 0,
            scan: 0,
            end: 0,
            eof: false,
            lines: 0,
            handed: 0,
        }
    }

    /// Counts the lines (in a [`LineTooLong`]) as if `before` lines came before the next one: for
    /// a reader that starts inside a file.
    pub fn count_from(&mut self, before: u64) {
        self.lines = before;
    }

    /// Reads `inner` from its start, keeping the buffer (and its size) of what was read before.
    pub fn restart(&mut self, inner: R) {
        self.inner = inner;
        self.ahead = None;
        self.start = 0;
        self.scan = 0;
        self.end = 0;
        self.eof = false;
        self.lines = 0;
        self.handed = 0;
        if self.buf.is_empty() {
            self.buf.resize(DEFAULT_CAPACITY, 0);
        }
    }

    /// The next line with its terminator (the last line of the input may have none); `None` at
    /// the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        Ok(self
            .next_span()?
            .map(|(start, end)| &self.bytes()[start..end]))
    }

    /// Like [`next_line`](Self::next_line), with the bytes after the line that were read
    /// already (for a reader that looks ahead without reading them again).
    pub fn next_line_with_rest(&mut self) -> io::Result<Option<(&[u8], &[u8])>> {
        Ok(self.next_span()?.map(|(start, end)| {
            let bytes = self.bytes();
            (&bytes[start..end], &bytes[end..self.end])
        }))
    }

    /// Where the next line is in [`buffered`](Self::buffered). With `read` false nothing more is
    /// read: `None` when the bytes read already hold no whole line (and the input goes on). A
    /// caller keeping spans of lines handed out uses them before it lets the reader read: the
    /// bytes move then. A line longer than [`MAX_LINE`] is an error ([`LineTooLong`]).
    pub fn next_line_span(&mut self, read: bool) -> io::Result<Option<(usize, usize)>> {
        loop {
            // A line end further than the longest line allows is not looked for.
            let limit = self.end.min(self.start.saturating_add(MAX_LINE + 1));
            let scan = self.scan.min(limit);
            if let Some(i) = find_newline(&self.bytes()[scan..limit]) {
                let line_end = scan + i + 1;
                let start = self.start;
                self.start = line_end;
                self.scan = line_end;
                self.lines += 1;
                self.handed += (line_end - start) as u64;
                return Ok(Some((start, line_end)));
            }
            if self.end - self.start > MAX_LINE {
                return Err(LineTooLong {
                    line: self.lines + 1,
                }
                .into_io());
            }
            self.scan = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let start = self.start;
                self.start = self.end;
                self.lines += 1;
                self.handed += (self.end - start) as u64;
                return Ok(Some((start, self.end)));
            }
            if !read {
                return Ok(None);
            }
            self.fill()?;
        }
    }

    /// Whether reading on would make the caller wait: the reader holds no whole line and its
    /// [`ReadAhead`], made [`live`](ReadAhead::live), has no block within its patience (a pipe
    /// or terminal that pauses). A writer flushes its output then, so that a live log flows.
    /// `false` for any other source, which is read as fast as it goes.
    pub fn would_wait(&mut self) -> bool {
        self.ahead.as_mut().is_some_and(|ahead| !ahead.ready())
    }

    /// The offset in the input (from where the reader started) of position `at` of
    /// [`buffered`](Self::buffered): of a line handed out, or of what follows the lines handed
    /// out, until the reader reads on.
    pub fn offset_of(&self, at: usize) -> u64 {
        // Positions before the next line's are those of lines handed out: at most its offset
        // before it.
        self.handed
            .wrapping_sub(self.start as u64)
            .wrapping_add(at as u64)
    }

    /// The bytes read so far that lines are cut from, as far as they go (see
    /// [`next_line_span`](Self::next_line_span)).
    pub fn buffered(&self) -> &[u8] {
        &self.bytes()[..self.end]
    }

    /// The longest run of whole lines from the next one that `take` accepts, among the bytes read
    /// already (nothing more is read): its span in [`buffered`](Self::buffered), and how many
    /// lines it holds. `take` is handed the line, where it starts in the bytes read, and those
    /// bytes ([`buffered`](Self::buffered)): a reader that keeps spans to write them later needs
    /// no search for them. A reader that treats many lines alike handles them at once; the lines after the
    /// run are read as usual (and a line longer than [`MAX_LINE`] is never in a run).
    pub fn next_run(
        &mut self,
        take: impl FnMut(&[u8], usize, &[u8]) -> bool,
    ) -> ((usize, usize), u64) {
        let start = self.start;
        // A line that ends within this many bytes is no longer than the longest line allows.
        let limit = self.end.min(start.saturating_add(MAX_LINE + 1));
        let haystack = &self.buf[start..limit];
        let (end, count) = run(&self.buf[..self.end], start, LineEnds::new(haystack), take);
        self.start = end;
        self.scan = end;
        self.lines += count;
        self.handed += (end - start) as u64;
        ((start, end), count)
    }

    /// What lines are cut from.
    #[inline]
    fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Where the next line is in [`bytes`](Self::bytes), reading more as needed.
    fn next_span(&mut self) -> io::Result<Option<(usize, usize)>> {
        self.next_line_span(true)
    }

    /// Reads more: moves the unfinished line to the front, grows the buffer when it is full.
    fn fill(&mut self) -> io::Result<()> {
        if self.ahead.is_some() {
            return self.fill_ahead();
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scan -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // One line longer than the buffer: keep it whole.
            let grown = self.buf.len().saturating_mul(2);
            self.buf.resize(grown, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes the next block read ahead. The unfinished line goes into the gap in front of its
    /// bytes, when it fits there and is no longer than they are; otherwise the block's bytes are
    /// added after it (a long line, or a source that hands out little at a time), and the buffer
    /// moves its lines to the front only when half of it is used up, so that no byte is moved
    /// more than a few times.
    fn fill_ahead(&mut self) -> io::Result<()> {
        let Some(ahead) = self.ahead.as_mut() else {
            return Ok(());
        };
        let Some((mut block, n)) = ahead.next_block()? else {
            self.eof = true;
            return Ok(());
        };
        let tail = self.end - self.start;
        if tail <= GAP && tail <= n {
            block[GAP - tail..GAP].copy_from_slice(&self.buf[self.start..self.end]);
            let used = std::mem::replace(&mut self.buf, block);
            ahead.give_back(used);
            self.start = GAP - tail;
            self.scan = GAP;
            self.end = GAP + n;
        } else {
            if self.start > 0 && self.start >= self.buf.len() / 2 {
                self.buf.copy_within(self.start..self.end, 0);
                self.start = 0;
            }
            self.buf.truncate(self.start + tail);
            self.scan = self.buf.len();
            self.buf.extend_from_slice(&block[GAP..GAP + n]);
            ahead.give_back(block);
            self.end = self.buf.len();
        }
        Ok(())
    }
}

/// The first line end in `haystack`.
#[inline]
fn find_newline(haystack: &[u8]) -> Option<usize> {
    LineEnds::new(haystack).next()
}

/// What the one loop reads lines from: a [`LineReader`], or [`HeldLines`], lines read already
/// by another reader. Each method is the [`LineReader`] method of the same name.
pub trait Lines {
    /// See [`LineReader::next_run`].
    fn next_run(&mut self, take: impl FnMut(&[u8], usize, &[u8]) -> bool) -> ((usize, usize), u64);

    /// See [`LineReader::next_line_span`].
    fn next_line_span(&mut self, read: bool) -> io::Result<Option<(usize, usize)>>;

    /// See [`LineReader::buffered`].
    fn buffered(&self) -> &[u8];

    /// See [`LineReader::offset_of`].
    fn offset_of(&self, at: usize) -> u64;

    /// See [`LineReader::would_wait`].
    fn would_wait(&mut self) -> bool;
}

impl<R: Read> Lines for LineReader<R> {
    #[inline(always)]
    fn next_run(&mut self, take: impl FnMut(&[u8], usize, &[u8]) -> bool) -> ((usize, usize), u64) {
        LineReader::next_run(self, take)
    }

    #[inline(always)]
    fn next_line_span(&mut self, read: bool) -> io::Result<Option<(usize, usize)>> {
        LineReader::next_line_span(self, read)
    }

    #[inline(always)]
    fn buffered(&self) -> &[u8] {
        LineReader::buffered(self)
    }

    #[inline(always)]
    fn offset_of(&self, at: usize) -> u64 {
        LineReader::offset_of(self, at)
    }

    #[inline(always)]
    fn would_wait(&mut self) -> bool {
        LineReader::would_wait(self)
    }
}

/// The whole lines of bytes another reader holds already, read where they are: a reader that
/// looks ahead from a line of another's goes on over them without reading or copying them
/// again. A last line without its end is not one of them (the input goes on after it).
#[derive(Debug, Clone)]
pub struct HeldLines<'a> {
    /// The bytes held; only lines that end in them are handed out.
    bytes: &'a [u8],
    /// The next line's start.
    start: usize,
    /// The input's offset of `bytes`.
    base: u64,
}

impl<'a> HeldLines<'a> {
    /// The whole lines of `bytes`, which start at offset `base` of the input.
    pub fn new(bytes: &'a [u8], base: u64) -> Self {
        HeldLines {
            bytes,
            start: 0,
            base,
        }
    }

    /// The input's offset after the lines handed out.
    pub fn offset(&self) -> u64 {
        self.base.wrapping_add(self.start as u64)
    }
}

impl Lines for HeldLines<'_> {
    fn next_run(&mut self, take: impl FnMut(&[u8], usize, &[u8]) -> bool) -> ((usize, usize), u64) {
        let start = self.start;
        let newlines = LineEnds::new(&self.bytes[start..]);
        let (end, count) = run(self.bytes, start, newlines, take);
        self.start = end;
        ((start, end), count)
    }

    fn next_line_span(&mut self, _read: bool) -> io::Result<Option<(usize, usize)>> {
        let start = self.start;
        Ok(find_newline(&self.bytes[start..]).map(|i| {
            self.start = start + i + 1;
            (start, self.start)
        }))
    }

    fn buffered(&self) -> &[u8] {
        self.bytes
    }

    fn offset_of(&self, at: usize) -> u64 {
        self.base.wrapping_add(at as u64)
    }

    fn would_wait(&mut self) -> bool {
        false
    }
}

/// [`LineReader::next_run`] from `start` of `bytes`, with the line ends `newlines` finds there:
/// where the run ends and how many lines it holds.
#[inline(always)]
fn run(
    bytes: &[u8],
    start: usize,
    newlines: impl Iterator<Item = usize>,
    mut take: impl FnMut(&[u8], usize, &[u8]) -> bool,
) -> (usize, u64) {
    let mut end = start;
    let mut count = 0;
    for newline in newlines {
        let line_end = start + newline + 1;
        if !take(&bytes[end..line_end], end, bytes) {
            break;
        }
        end = line_end;
        count += 1;
    }
    (end, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], capacity: usize) -> Vec<Vec<u8>> {
        let mut r = LineReader::with_capacity(capacity, input);
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(line.to_vec());
        }
        out
    }

    #[test]
    fn the_rest_is_what_was_read_after_the_line() {
        let mut r = LineReader::with_capacity(64, &b"a\nbb\ncc"[..]);
        let rest = |r: &mut LineReader<&[u8]>| {
            r.next_line_with_rest()
                .unwrap()
                .map(|(l, r)| (l.to_vec(), r.to_vec()))
        };
        assert_eq!(rest(&mut r), Some((b"a\n".to_vec(), b"bb\ncc".to_vec())));
        assert_eq!(rest(&mut r), Some((b"bb\n".to_vec(), b"cc".to_vec())));
        assert_eq!(rest(&mut r), Some((b"cc".to_vec(), b"".to_vec())));
        assert_eq!(rest(&mut r), None);
    }

    /// [`LineReader::next_run`], as bytes.
    fn run<R: Read>(r: &mut LineReader<R>, take: impl FnMut(&[u8]) -> bool) -> (Vec<u8>, u64) {
        let mut take = take;
        let ((start, end), n) = r.next_run(|line, _, _| take(line));
        (r.buffered()[start..end].to_vec(), n)
    }

    #[test]
    fn a_run_is_the_whole_lines_read_already_that_are_taken() {
        let input = b"a1\na2\nb\na3\na4";
        let mut r = LineReader::with_capacity(64, &input[..]);
        let is_a = |l: &[u8]| l.starts_with(b"a");
        // Nothing is read for a run: the buffer is still empty.
        assert_eq!(run(&mut r, is_a), (b"".to_vec(), 0));
        assert_eq!(r.next_line().unwrap(), Some(&b"a1\n"[..]));
        assert_eq!(run(&mut r, is_a), (b"a2\n".to_vec(), 1));
        assert_eq!(
            run(&mut r, is_a),
            (b"".to_vec(), 0),
            "stops at the first line not taken"
        );
        assert_eq!(r.next_line().unwrap(), Some(&b"b\n"[..]));
        // The last line has no terminator: it may go on, so it is not taken.
        assert_eq!(run(&mut r, is_a), (b"a3\n".to_vec(), 1));
        assert_eq!(r.next_line().unwrap(), Some(&b"a4"[..]));
        assert_eq!(r.next_line().unwrap(), None);
        // Across what a small buffer holds.
        let mut r = LineReader::with_capacity(4, &b"a\na\na\na\n"[..]);
        assert_eq!(r.next_line().unwrap(), Some(&b"a\n"[..]));
        let (bytes, n) = run(&mut r, |_| true);
        assert_eq!((bytes.len() as u64, n), (2 * n, n));
        let rest = std::iter::from_fn(|| r.next_line().unwrap().map(<[u8]>::to_vec)).count();
        assert_eq!(n + rest as u64, 3);
    }

    #[test]
    fn spans_without_reading_stop_where_the_bytes_read_do() {
        let mut r = LineReader::with_capacity(4, &b"ab\ncdef\ng"[..]);
        assert_eq!(r.next_line_span(false).unwrap(), None, "nothing read yet");
        let (start, end) = r.next_line_span(true).unwrap().unwrap();
        assert_eq!(&r.buffered()[start..end], b"ab\n");
        assert_eq!(
            r.next_line_span(false).unwrap(),
            None,
            "`c` is all there is of the next"
        );
        let (start, end) = r.next_line_span(true).unwrap().unwrap();
        assert_eq!(&r.buffered()[start..end], b"cdef\n");
        // The last line, without a line end, once the input is over.
        let mut last = None;
        while last.is_none() {
            last = match r.next_line_span(false).unwrap() {
                Some(span) => Some(span),
                None => r.next_line_span(true).unwrap(),
            };
        }
        let (start, end) = last.unwrap();
        assert_eq!(&r.buffered()[start..end], b"g");
        assert_eq!(r.next_line_span(false).unwrap(), None);
        assert_eq!(r.next_line_span(true).unwrap(), None);
    }

    #[test]
    fn a_restarted_reader_reads_its_new_input_from_the_start() {
        let mut r = LineReader::with_capacity(4, &b"first\nunfinished"[..]);
        assert_eq!(r.next_line().unwrap(), Some(&b"first\n"[..]));
        r.restart(&b"x\ny"[..]);
        assert_eq!(r.next_line().unwrap(), Some(&b"x\n"[..]));
        assert_eq!(r.next_line().unwrap(), Some(&b"y"[..]));
        assert_eq!(r.next_line().unwrap(), None);
        r.restart(&b""[..]);
        assert_eq!(r.next_line().unwrap(), None);
    }

    #[test]
    fn lines_keep_their_terminators_whatever_the_buffer_size() {
        let input = b"a\r\nbb\n\nccc";
        for capacity in [1, 2, 3, 5, 1024] {
            assert_eq!(
                all(input, capacity),
                [&b"a\r\n"[..], b"bb\n", b"\n", b"ccc"],
                "capacity {capacity}"
            );
        }
        assert!(all(b"", 4).is_empty());
        assert_eq!(all(b"x\n", 4), [b"x\n"]);
    }

    #[test]
    fn a_line_longer_than_the_buffer_stays_whole() {
        let mut input = vec![b'x'; 10_000];
        input.push(b'\n');
        input.extend_from_slice(b"tail");
        assert_eq!(
            all(&input, 16).iter().map(Vec::len).collect::<Vec<_>>(),
            [10_001, 4]
        );
    }

    /// A reader that hands out one byte at a time and is interrupted in between.
    struct Trickle<'a>(&'a [u8], bool);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = !self.1;
            if self.1 {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let Some((&b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    /// The lines of `input` read ahead in blocks of `capacity`, through a source that hands out
    /// at most `trickle` bytes a read.
    fn all_ahead(input: &[u8], capacity: usize, trickle: usize) -> Vec<Vec<u8>> {
        struct Pieces(Vec<u8>, usize, usize);
        impl Read for Pieces {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(self.2).min(self.0.len() - self.1);
                buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
                self.1 += n;
                Ok(n)
            }
        }
        let source = Pieces(input.to_vec(), 0, trickle);
        let mut r = LineReader::read_ahead(ReadAhead::new(source, capacity));
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            out.push(line.to_vec());
        }
        out
    }

    #[test]
    fn read_ahead_gives_the_same_lines() {
        // Short lines, lines across blocks, lines longer than the gap and than a block, no
        // final newline.
        let mut input = Vec::new();
        for i in 0..1_200usize {
            let len = match i {
                300 => GAP + 3,
                600 => 3 * GAP,
                900 => GAP,
                _ => i % 97,
            };
            input.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, len));
            input.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
        }
        input.extend_from_slice(b"last");
        let cases = [
            (1000, 333),
            (4096, 4096),
            (1 << 20, 1 << 20),
            (65_536, 10_000),
            (GAP, 1),
        ];
        for (capacity, trickle) in cases {
            let input = if trickle == 1 {
                &input[..20_000]
            } else {
                &input
            };
            assert!(
                all_ahead(input, capacity, trickle) == all(input, 1 << 20),
                "capacity {capacity}, trickle {trickle}"
            );
        }
        assert!(all_ahead(b"", 16, 16).is_empty());
    }

    #[test]
    fn a_read_error_ahead_reaches_the_lines_after_the_lines_before_it() {
        struct Fails(bool);
        impl Read for Fails {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("disk on fire"));
                }
                buf[..6].copy_from_slice(b"a\nbb\nc");
                Ok(6)
            }
        }
        let mut r = LineReader::read_ahead(ReadAhead::new(Fails(false), 64));
        assert_eq!(r.next_line().unwrap(), Some(&b"a\n"[..]));
        assert_eq!(r.next_line().unwrap(), Some(&b"bb\n"[..]));
        let e = r.next_line().expect_err("the error");
        assert_eq!(e.to_string(), "disk on fire");
    }

    #[test]
    fn dropping_a_reader_ahead_of_an_endless_source_does_not_hang() {
        let mut r = LineReader::read_ahead(ReadAhead::new(io::repeat(b'\n'), 16));
        assert_eq!(r.next_line().unwrap(), Some(&b"\n"[..]));
        drop(r);
    }

    /// The lengths of the lines of `input` up to the end or the first error, read by a plain
    /// reader and by one reading ahead (in blocks of `block`), which must agree.
    fn lengths(input: &[u8], block: usize) -> (Vec<usize>, Option<LineTooLong>) {
        fn drain<R: Read>(mut r: LineReader<R>) -> (Vec<usize>, Option<LineTooLong>) {
            let mut lens = Vec::new();
            loop {
                match r.next_line() {
                    Ok(Some(line)) => lens.push(line.len()),
                    Ok(None) => return (lens, None),
                    Err(e) => {
                        let long = e.get_ref().and_then(|e| e.downcast_ref::<LineTooLong>());
                        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
                        return (lens, Some(*long.expect("a LineTooLong")));
                    }
                }
            }
        }
        let plain = drain(LineReader::with_capacity(block, input));
        let ahead = drain(LineReader::read_ahead(ReadAhead::new(
            io::Cursor::new(input.to_vec()),
            block,
        )));
        assert_eq!(plain, ahead);
        plain
    }

    #[test]
    fn a_line_longer_than_the_cap_ends_the_lines_with_its_number() {
        for block in [1 << 20, 3 << 20] {
            // Exactly the cap (a `\r` counts), with a line end and without (the last line): handed
            // out whole.
            let mut input = b"a\n".to_vec();
            input.extend(std::iter::repeat_n(b'x', MAX_LINE - 1));
            input.extend_from_slice(b"\r\n");
            input.extend(std::iter::repeat_n(b'y', MAX_LINE));
            assert_eq!(
                lengths(&input, block),
                (vec![2, MAX_LINE + 1, MAX_LINE], None)
            );
            // One byte more, and a line end right after it: refused.
            let mut input = b"a\nb\n".to_vec();
            input.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
            input.extend_from_slice(b"\nc\n");
            let error = Some(LineTooLong { line: 3 });
            assert_eq!(lengths(&input, block), (vec![2, 2], error));
            // Without a line end ever (the end of the input after the cap, or none at all).
            input.truncate(input.len() - 3);
            assert_eq!(lengths(&input, block), (vec![2, 2], error));
        }
        // (Bounded here, so that a reader without the cap fails this test rather than the machine.)
        let zeros = LineReader::new(io::repeat(0).take(3 * MAX_LINE as u64))
            .next_line()
            .map(drop);
        let e = zeros.expect_err("/dev/zero has no lines");
        assert_eq!(
            e.to_string(),
            "line 1 is longer than 16 MiB, the most bpflog reads of a line (a verifier log's lines are a few KB at most)"
        );
    }

    #[test]
    fn runs_stop_before_a_line_longer_than_the_cap_and_count_their_lines() {
        let mut input = b"a\nb\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        input.extend_from_slice(b"\nc\n");
        // All of it in the buffer at once.
        let mut r = LineReader::with_capacity(input.len(), &input[..]);
        r.count_from(10);
        assert_eq!(r.next_line().unwrap(), Some(&b"a\n"[..]));
        let ((start, end), n) = r.next_run(|_, _, _| true);
        assert_eq!((&r.buffered()[start..end], n), (&b"b\n"[..], 1));
        let e = r.next_line().expect_err("too long");
        let long = e.get_ref().and_then(|e| e.downcast_ref::<LineTooLong>());
        assert_eq!(long, Some(&LineTooLong { line: 13 }));
    }

    #[test]
    fn short_and_interrupted_reads() {
        let mut r = LineReader::with_capacity(8, Trickle(b"one\ntwo\nthree", false));
        let mut lines = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            lines.push(l.to_vec());
        }
        assert_eq!(lines, [&b"one\n"[..], b"two\n", b"three"]);
    }
}
