//! The log in the page: compressed pieces (raw deflate), each a `<script
//! type="application/deflate">` block.
//!
//! A verifier log may reach the kernel's limit of about 1 GB; a JavaScript string cannot hold
//! that much, and a page that holds the text as it is weighs as much as the log. So the rows go
//! in pieces of at most [`CHUNK_ROWS`] rows or [`CHUNK_BYTES`] bytes, each compressed with
//! deflate and written as base64 (which cannot end a `<script>` element). The deflate is raw: no
//! header and no checksum, whose computing would be a tenth of the compressing (a piece that does
//! not inflate is shown as such). The page inflates a piece with the browser's own
//! `DecompressionStream` when one of its rows is wanted, and forgets pieces it has not used
//! lately.
//!
//! A piece inflates to a JSON array with one element per log line (see [`Chunks::row`]): its text
//! alone (frame 0, nothing decoded to draw, no state), `[text, frame]`, `[text, frame, fields]`
//! (the parts of the text and the instructions it links to, [`Fields`]), or `[text, frame,
//! fields or 0, full, [[frame, name, value, order], ...]]` when the line prints a state
//! ([`bpflog_log::state`]). The state repeats text of the same line, which deflate stores as a
//! short back-reference.

use super::Fields;
use base64::Engine;
use bpflog_log::state::State;
use flate2::Compression;
use flate2::write::DeflateEncoder;
use std::io::{self, Write};
use std::sync::mpsc;

/// Most rows in one piece.
pub(super) const CHUNK_ROWS: usize = 4096;
/// A piece is closed once its JSON passes this many bytes (long lines make fewer rows).
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// How many pieces are compressed at once, each on a thread of its own.
const COMPRESSORS: usize = 2;

/// Writes the log's rows as compressed pieces to `out`. Pieces are compressed on threads of
/// their own ([`COMPRESSORS`]) while the next one is put together (compressing is most of the
/// page's cost: on two cores, one compressing thread took longer than the rest of the work),
/// and written in order, the oldest when a new one closes and none is free. Each piece is
/// compressed alone, so the page is the same bytes however many threads compress.
pub(super) struct Chunks<W: Write> {
    out: W,
    /// The JSON of the open piece, without its closing `]`.
    json: Vec<u8>,
    /// Rows in the open piece.
    rows: usize,
    /// Rows written before it.
    first: u64,
    /// The compressing threads; piece `k` goes to thread `k % COMPRESSORS`.
    workers: Vec<Compressor>,
    /// The pieces handed to the threads and not written yet, oldest first: the thread that has
    /// each, and its row count.
    busy: std::collections::VecDeque<(usize, usize)>,
    /// Pieces handed to the threads so far.
    sent: usize,
}

/// A thread that compresses pieces one at a time: a piece's JSON in, compressed and in base64 out
/// (with the JSON's buffer back, to be reused).
struct Compressor {
    to: Option<mpsc::Sender<Vec<u8>>>,
    from: mpsc::Receiver<io::Result<(Vec<u8>, String)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Compressor {
    fn new() -> Self {
        let (to, inbox) = mpsc::channel::<Vec<u8>>();
        let (outbox, from) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            // One encoder for every piece, reset after each (its buffers made and zeroed once).
            let mut encoder = DeflateEncoder::new(Vec::new(), Compression::new(LEVEL));
            let mut packed = Vec::new();
            for json in inbox {
                if outbox
                    .send(compress(json, &mut encoder, &mut packed))
                    .is_err()
                {
                    return;
                }
            }
        });
        Compressor {
            to: Some(to),
            from,
            thread: Some(thread),
        }
    }

    /// Hands a piece's JSON to the thread.
    fn send(&self, json: Vec<u8>) -> io::Result<()> {
        (self.to.as_ref())
            .and_then(|to| to.send(json).ok())
            .ok_or_else(|| io::Error::other("the compressing thread has stopped"))
    }

    /// The piece handed last, compressed, and its JSON buffer back.
    fn receive(&self) -> io::Result<(Vec<u8>, String)> {
        self.from
            .recv()
            .map_err(|_| io::Error::other("the compressing thread has stopped"))?
    }
}

impl Drop for Compressor {
    fn drop(&mut self) {
        // Closing the channel ends the thread.
        self.to = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Writes `n` in decimal.
fn number(out: &mut Vec<u8>, mut n: u64) {
    // Most are of one digit (frames, the order of a state's registers): a byte, not a copy.
    if n < 10 {
        out.push(b'0' + n as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The deflate level: 2, no lazy matching. On a 5 MB cut of branchy.o's level-2 log, zlib-rs
/// compressed the pieces (a new encoder each) in 122 M instructions at level 2 against 224 M at
/// the default level (6), into 1.65 times the bytes (level 1: 88 M and 2.1 times; level 4: 167 M
/// and 1.17 times); with an encoder reused a thread, level 2 takes 114 M.
const LEVEL: u32 = 2;

/// `json` deflated at [`LEVEL`] in base64 by `encoder` (a stream of its own: the encoder, made
/// at that level, is reset after it), and `json`'s buffer back, cleared. `packed` is the
/// encoder's next output buffer, and holds the compressed piece after.
fn compress(
    mut json: Vec<u8>,
    encoder: &mut DeflateEncoder<Vec<u8>>,
    packed: &mut Vec<u8>,
) -> io::Result<(Vec<u8>, String)> {
    encoder.write_all(&json)?;
    packed.clear();
    *packed = encoder.reset(std::mem::take(packed))?;
    let mut b64 = String::with_capacity(packed.len() / 3 * 4 + 4);
    base64::engine::general_purpose::STANDARD.encode_string(&*packed, &mut b64);
    json.clear();
    Ok((json, b64))
}

impl<W: Write> Chunks<W> {
    /// Pieces written to `out`.
    pub fn new(out: W) -> Self {
        Chunks {
            out,
            json: Vec::with_capacity(CHUNK_BYTES + (64 << 10)),
            rows: 0,
            first: 0,
            workers: (0..COMPRESSORS).map(|_| Compressor::new()).collect(),
            busy: std::collections::VecDeque::new(),
            sent: 0,
        }
    }

    /// Adds the row of one log line: its text (lossy UTF-8, no terminator), the frame the
    /// verifier is in after it, what the page draws of its text ([`Fields`]) and the state it
    /// prints.
    pub fn row(
        &mut self,
        text: &str,
        frame: u32,
        fields: Option<&Fields>,
        state: Option<&State<'_>>,
    ) -> io::Result<()> {
        use crate::json::string;
        self.json.push(if self.rows == 0 { b'[' } else { b',' });
        let json = &mut self.json;
        let numbers = fields.map(Fields::values);
        if state.is_none() && numbers.is_none() && frame == 0 {
            string(json, text.as_bytes())?;
            return self.end_row();
        }
        // `[text, frame, ...]`: the numbers written here, the strings by the JSON writer's
        // escaper (serde's way through a string, a fragment at a time, was a third of the
        // main thread's work).
        json.push(b'[');
        string(json, text.as_bytes())?;
        json.push(b',');
        number(json, u64::from(frame));
        match (numbers, state) {
            (Some(numbers), _) => {
                json.extend_from_slice(b",[");
                for (k, &n) in numbers.iter().enumerate() {
                    if k > 0 {
                        json.push(b',');
                    }
                    number(json, n);
                }
                json.push(b']');
            }
            // No fields: 0.
            (None, Some(_)) => json.extend_from_slice(b",0"),
            (None, None) => {}
        }
        if let Some(s) = state {
            // `[[frame, name, value, order], ...]`.
            json.extend_from_slice(if s.full { b",1,[" } else { b",0,[" });
            for (k, r) in s.regs.iter().enumerate() {
                json.extend_from_slice(if k > 0 { b",[" } else { b"[" });
                number(json, u64::from(r.frame));
                json.push(b',');
                string(json, r.name.as_bytes())?;
                json.push(b',');
                string(json, r.value.as_bytes())?;
                json.push(b',');
                number(json, u64::from(r.order));
                json.push(b']');
            }
            json.push(b']');
        }
        json.push(b']');
        self.end_row()
    }

    /// A row written: the piece is closed when full.
    fn end_row(&mut self) -> io::Result<()> {
        self.rows += 1;
        if self.rows >= CHUNK_ROWS || self.json.len() >= CHUNK_BYTES {
            self.close()?;
        }
        Ok(())
    }

    /// Closes the open piece, if it has rows, and hands it to the next compressing thread: the
    /// oldest piece is written first when every thread has one.
    fn close(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        self.json.push(b']');
        let spare = if self.busy.len() == COMPRESSORS {
            self.write_busy()?
        } else {
            None
        };
        let json = std::mem::replace(&mut self.json, spare.unwrap_or_default());
        let worker = self.sent % COMPRESSORS;
        self.workers[worker].send(json)?;
        self.busy.push_back((worker, self.rows));
        self.sent += 1;
        self.rows = 0;
        Ok(())
    }

    /// Writes the oldest piece handed out, once compressed; its JSON buffer, to be reused.
    fn write_busy(&mut self) -> io::Result<Option<Vec<u8>>> {
        let Some((worker, rows)) = self.busy.pop_front() else {
            return Ok(None);
        };
        let (json, b64) = self.workers[worker].receive()?;
        write!(
            self.out,
            "<script type=\"application/deflate\" class=\"bpflog-log\" data-first=\"{}\" data-rows=\"{}\">",
            self.first, rows
        )?;
        self.out.write_all(b64.as_bytes())?;
        self.out.write_all(b"</script>\n")?;
        self.first += rows as u64;
        Ok(Some(json))
    }

    /// Writes the last pieces; the number of rows written.
    pub fn finish(mut self) -> io::Result<u64> {
        self.close()?;
        while !self.busy.is_empty() {
            self.write_busy()?;
        }
        Ok(self.first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `branchy.o`'s level-2 fixture log: a real log's rows.
    fn branchy_log() -> Vec<u8> {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        std::fs::read(fixtures.join("logs/branchy.xdp_branchy.l2.log")).unwrap()
    }

    /// Each piece of a real log is raw deflate at [`LEVEL`]: inflated, then deflated again at
    /// that level, it is the same bytes, and it inflates to the rows written.
    #[test]
    fn pieces_are_deflated_at_the_level() {
        let log = String::from_utf8(branchy_log()).unwrap();
        let mut chunks = Chunks::new(Vec::new());
        for line in log.lines() {
            chunks.row(line, 0, None, None).unwrap();
        }
        chunks.close().unwrap();
        while !chunks.busy.is_empty() {
            chunks.write_busy().unwrap();
        }
        let page = String::from_utf8(std::mem::take(&mut chunks.out)).unwrap();
        let b64 = page.split_once("\">").unwrap().1;
        let b64 = b64.split_once("</script>").unwrap().0;
        let packed = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        let mut json = Vec::new();
        flate2::write::DeflateDecoder::new(&mut json)
            .write_all(&packed)
            .unwrap();
        let rows: Vec<String> = serde_json::from_slice(&json).unwrap();
        assert_eq!(rows, log.lines().collect::<Vec<_>>());
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::new(LEVEL));
        encoder.write_all(&json).unwrap();
        let again = encoder.finish().unwrap();
        assert!(
            packed == again,
            "a piece of {} bytes, {} at level {LEVEL}",
            packed.len(),
            again.len()
        );
    }

    /// Pieces compressed one after another by one encoder, reset after each, are the bytes a
    /// new encoder makes of each.
    #[test]
    fn each_piece_is_deflated_as_by_a_new_encoder() {
        let log = branchy_log();
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::new(LEVEL));
        let mut packed = Vec::new();
        // Pieces that differ, one of them empty, one repeated after another.
        let thirds = log.len() / 3;
        for piece in [
            &log[..thirds],
            &log[thirds..],
            b"",
            &log[..thirds],
            &log[..],
        ] {
            let (json, b64) = compress(piece.to_vec(), &mut encoder, &mut packed).unwrap();
            assert!(json.is_empty());
            let mut alone = DeflateEncoder::new(Vec::new(), Compression::new(LEVEL));
            alone.write_all(piece).unwrap();
            let alone = alone.finish().unwrap();
            assert!(packed == alone, "{} bytes", piece.len());
            assert_eq!(
                b64,
                base64::engine::general_purpose::STANDARD.encode(&alone)
            );
        }
    }
}
