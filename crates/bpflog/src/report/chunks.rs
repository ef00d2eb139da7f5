//! The log in the page: gzip-compressed pieces, each a `<script type="application/gzip">` block.
//!
//! A verifier log may reach the kernel's limit of about 1 GB; a JavaScript string cannot hold
//! that much, and a page that holds the text as it is weighs as much as the log. So the rows go
//! in pieces of at most [`CHUNK_ROWS`] rows or [`CHUNK_BYTES`] bytes, each compressed with gzip
//! and written as base64 (which cannot end a `<script>` element). The page inflates a piece with
//! the browser's own `DecompressionStream` when one of its rows is wanted, and forgets pieces it
//! has not used lately.
//!
//! A piece inflates to a JSON array with one element per log line (see [`Chunks::row`]): its text
//! alone (frame 0, no state), `[text, frame]`, or `[text, frame, full, [[frame, name, value,
//! order], ...]]` when the line prints a state ([`super::state`]). The state repeats text of the
//! same line, which gzip stores as a short back-reference.

use super::state::State;
use base64::Engine;
use flate2::Compression;
use flate2::write::GzEncoder;
use std::io::{self, Write};

/// Most rows in one piece.
pub(super) const CHUNK_ROWS: usize = 4096;
/// A piece is closed once its JSON passes this many bytes (long lines make fewer rows).
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// Writes the log's rows as compressed pieces to `out`.
pub(super) struct Chunks<W: Write> {
    out: W,
    /// The JSON of the open piece, without its closing `]`.
    json: Vec<u8>,
    /// Rows in the open piece.
    rows: usize,
    /// Rows written before it.
    first: u64,
    /// The piece compressed, reused.
    gz: Vec<u8>,
    /// Its base64, reused.
    b64: String,
}

impl<W: Write> Chunks<W> {
    /// Pieces written to `out`.
    pub fn new(out: W) -> Self {
        Chunks {
            out,
            json: Vec::with_capacity(CHUNK_BYTES + (64 << 10)),
            rows: 0,
            first: 0,
            gz: Vec::new(),
            b64: String::new(),
        }
    }

    /// Adds the row of one log line: its text (lossy UTF-8, no terminator), the frame the
    /// verifier is in after it, and the state it prints.
    pub fn row(&mut self, text: &str, frame: u32, state: Option<&State<'_>>) -> io::Result<()> {
        self.json.push(if self.rows == 0 { b'[' } else { b',' });
        let json = &mut self.json;
        match state {
            Some(s) => {
                let regs: Vec<(u32, &str, &str, u32)> = (s.regs.iter())
                    .map(|r| (r.frame, r.name, r.value, r.order))
                    .collect();
                serde_json::to_writer(json, &(text, frame, u8::from(s.full), regs))
            }
            None if frame != 0 => serde_json::to_writer(json, &(text, frame)),
            None => serde_json::to_writer(json, text),
        }
        .map_err(io::Error::other)?;
        self.rows += 1;
        if self.rows >= CHUNK_ROWS || self.json.len() >= CHUNK_BYTES {
            self.close()?;
        }
        Ok(())
    }

    /// Writes the open piece, if it has rows.
    fn close(&mut self) -> io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        self.json.push(b']');
        self.gz.clear();
        // zlib's default level: half the page of level 1 for a third more time (a 90 MB log:
        // 7.2 MB and 1.0 s against 13.7 MB and 0.74 s).
        let mut gz = GzEncoder::new(std::mem::take(&mut self.gz), Compression::default());
        gz.write_all(&self.json)?;
        self.gz = gz.finish()?;
        self.b64.clear();
        base64::engine::general_purpose::STANDARD.encode_string(&self.gz, &mut self.b64);
        write!(
            self.out,
            "<script type=\"application/gzip\" class=\"bpflog-log\" data-first=\"{}\" data-rows=\"{}\">",
            self.first, self.rows
        )?;
        self.out.write_all(self.b64.as_bytes())?;
        self.out.write_all(b"</script>\n")?;
        self.first += self.rows as u64;
        self.rows = 0;
        self.json.clear();
        Ok(())
    }

    /// Writes the last piece; the number of rows written.
    pub fn finish(mut self) -> io::Result<u64> {
        self.close()?;
        Ok(self.first)
    }
}
