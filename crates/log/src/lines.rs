//! Reading a log line by line without copying each line.
//!
//! A [`LineReader`] reads large blocks into one buffer and hands out each line as a slice of it,
//! terminator included. Memory is the buffer (1 MiB) or the longest line, whichever is larger;
//! nothing is allocated per line. It is the reading half of "annotate at the speed of copying".

use std::io::{self, Read};

/// The buffer size: large reads, few system calls.
const DEFAULT_CAPACITY: usize = 1 << 20;

/// Lines of a byte stream, as slices of one reused buffer.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// The next line starts here.
    start: usize,
    /// Bytes before `scan` (from `start`) hold no newline.
    scan: usize,
    /// Bytes read end here.
    end: usize,
    eof: bool,
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
            buf: vec![0; capacity.max(1)],
            start: 0,
            scan: 0,
            end: 0,
            eof: false,
        }
    }

    /// The next line with its terminator (the last line of the input may have none); `None` at
    /// the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<&[u8]>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.scan..self.end]) {
                let line_end = self.scan + i + 1;
                let start = self.start;
                self.start = line_end;
                self.scan = line_end;
                return Ok(Some(&self.buf[start..line_end]));
            }
            self.scan = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let start = self.start;
                self.start = self.end;
                return Ok(Some(&self.buf[start..self.end]));
            }
            self.fill()?;
        }
    }

    /// Reads more: moves the unfinished line to the front, grows the buffer when it is full.
    fn fill(&mut self) -> io::Result<()> {
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
