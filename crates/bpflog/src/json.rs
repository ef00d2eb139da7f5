//! JSON output: `annotate --format json`'s records and the profile's documents.
//!
//! What has a structure (a record's `"source"` member, the profile and its comparison) is a
//! struct that derives `Serialize`, written by serde_json through one [`Formatter`] that
//! decides how text is escaped and how a document is laid out. Why a formatter of our own: the
//! escapes are the documented ones, stricter than serde_json's (every control character a
//! terminal acts on, C0, DEL and C1, is written `\u00XX`: a record printed to a terminal cannot
//! drive it), and the profile keeps its layout, one member or row to a line. Text from the log
//! or the object is bytes, written as its lossy UTF-8 by one escaper ([`write_body`], [`Text`]).
//!
//! A record's shell (`line`, `kind`, `text`, `program`, `index`, `from`, `to`) is written by
//! hand: there is one record per log line, and serde_json's work per member (each key escaped,
//! a write per piece) took `annotate --format json` from 0.22 s to 0.29 s of CPU on a 100 MiB
//! `branchy.o` log and from 0.27 s to 0.36 s on a `loop_callback.o` one (the record put
//! together in a buffer; written straight to the output, 0.36 s on the first). The `"source"`
//! member is written by serde, once per instruction ([`SourceCache`]).
//!
//! `annotate --format json` schema (every object on its own line):
//!
//! ```text
//! {"line": 12,                      // line number in the input, from 1
//!  "kind": "insn",                  // see below
//!  "text": "7: (61) r2 = ...",      // the line without its newline (invalid UTF-8 as U+FFFD)
//!  "program": "xdp_prog",           // the program of the log the line is in, when known
//!  "index": 7,                      // insn, state, safe, live_regs_row, mark_precise (before N)
//!  "from": 3, "to": 7,              // from_to
//!  "source": {"file": "prog.c", "line": 48, "column": 6, "function": "parse",
//!             "inlined": [{"into": "xdp_prog", "file": "prog.c", "line": 104, "column": 8}],
//!             "text": "if (x)"}}    // insn only: where it comes from (DWARF, else BTF)
//! {"line": 40, "kind": "error", "text": "R1 invalid mem access ...", "program": "xdp_prog",
//!  "explanation": {"class": ..., "error": ..., "location": ..., "chain": [...], "help": ...}}
//!                                   // the first error record of a rejected log, with the
//!                                   // diagnostic: explain's JSON object (`JsonExplanation`)
//! ```
//!
//! Kinds: `insn`, `state`, `safe`, `from_to`, `func_start`, `validating`, `global_func`,
//! `caller_callee`, `returning`, `mark_precise`, `live_regs_header`, `live_regs_row`, `trace`,
//! `annotation` (the kernel's own `;` lines), `summary`, `stats`, `error` (the verifier's
//! message after the last instruction), `blank`, `loader` (libbpf's own message, written into a
//! log by its stderr), `other` (anything else inside a log), `outside` (lines around the logs:
//! loader chatter), `cut` (the cut first line of a truncated log).

use crate::Program;
use crate::insn_bytes::InsnBytes;
use crate::locate::{InlinedFrom, InsnSource, locate};
use crate::style::write_number;
use bpflog_log::Line;
use serde::{Serialize, Serializer};
use serde_json::ser::CharEscape;
use std::io::{self, Write};

/// How a JSON document is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JsonLayout {
    /// On one line, without spaces: a record's `"source"` member.
    Compact,
    /// The profile's: each member of the outer object on a line, each item of the arrays it
    /// holds on a line; anything deeper on one line, with `, ` and `: `.
    Rows,
    /// Every member and item on a line of its own, indented by two spaces a level (serde_json's
    /// `to_writer_pretty`): the SARIF log.
    Pretty,
}

/// serde_json's formatter with the escapes and layouts of bpflog's JSON.
struct Formatter {
    layout: JsonLayout,
    /// Objects and arrays open.
    depth: usize,
    /// Whether the array of the outer object that is open has items.
    rows: bool,
    /// In [`JsonLayout::Pretty`], whether the object or array open (or the value just ended) has a
    /// member or item: its closing bracket goes on a line of its own.
    has_value: bool,
}

impl Formatter {
    fn new(layout: JsonLayout) -> Self {
        Formatter {
            layout,
            depth: 0,
            rows: false,
            has_value: false,
        }
    }

    /// [`JsonLayout::Pretty`]: a new line, indented to the depth.
    fn pretty_line(&self, out: &mut (impl Write + ?Sized), first: bool) -> io::Result<()> {
        out.write_all(if first { b"\n" } else { b",\n" })?;
        for _ in 0..self.depth {
            out.write_all(b"  ")?;
        }
        Ok(())
    }

    /// [`JsonLayout::Pretty`]: the end of an object or array, `bracket`.
    fn pretty_end(&mut self, out: &mut (impl Write + ?Sized), bracket: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.pretty_line(out, true)?;
        }
        out.write_all(bracket)
    }

    /// In [`JsonLayout::Rows`], whether the next thing opened or written is one of the outer
    /// object's members (`1`) or one of the items of an array it holds (`2`).
    fn rows_at(&self, depth: usize) -> bool {
        self.layout == JsonLayout::Rows && self.depth == depth
    }
}

/// Writes `\u00XX`.
fn control(out: &mut (impl Write + ?Sized), c: u8) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let (high, low) = (HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]);
    out.write_all(&[b'\\', b'u', b'0', b'0', high, low])
}

// Compact is the one written often (a member per instruction of each log): its writes are of
// constant bytes, which the compiler turns into stores.
impl serde_json::ser::Formatter for Formatter {
    #[inline]
    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        out.write_all(b"{")
    }

    #[inline]
    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.layout == JsonLayout::Pretty {
            return self.pretty_end(out, b"}");
        }
        self.depth = self.depth.saturating_sub(1);
        if self.rows_at(0) {
            return out.write_all(b"\n}");
        }
        out.write_all(b"}")
    }

    #[inline]
    fn begin_object_key<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        match (self.layout, first) {
            (JsonLayout::Compact, true) => Ok(()),
            (JsonLayout::Compact, false) => out.write_all(b","),
            (JsonLayout::Pretty, _) => self.pretty_line(out, first),
            (JsonLayout::Rows, _) => out.write_all(match (first, self.depth == 1) {
                (true, true) => b"\n  ",
                (false, true) => b",\n  ",
                (true, false) => b"",
                (false, false) => b", ",
            }),
        }
    }

    #[inline]
    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        match self.layout {
            JsonLayout::Compact => out.write_all(b":"),
            JsonLayout::Rows | JsonLayout::Pretty => out.write_all(b": "),
        }
    }

    #[inline]
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    #[inline]
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        if self.rows_at(2) {
            self.rows = false;
        }
        out.write_all(b"[")
    }

    #[inline]
    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.layout == JsonLayout::Pretty {
            return self.pretty_end(out, b"]");
        }
        let rows = self.rows_at(2) && self.rows;
        self.depth = self.depth.saturating_sub(1);
        if rows {
            return out.write_all(b"\n  ]");
        }
        out.write_all(b"]")
    }

    #[inline]
    fn begin_array_value<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        match (self.layout, first) {
            (JsonLayout::Compact, true) => Ok(()),
            (JsonLayout::Compact, false) => out.write_all(b","),
            (JsonLayout::Pretty, _) => self.pretty_line(out, first),
            (JsonLayout::Rows, _) => {
                let rows = self.rows_at(2);
                self.rows |= rows;
                out.write_all(match (first, rows) {
                    (true, true) => b"\n    ",
                    (false, true) => b",\n    ",
                    (true, false) => b"",
                    (false, false) => b", ",
                })
            }
        }
    }

    #[inline]
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    /// serde_json's escapes, but control characters all as `\u00XX` (not `\b`, `\f`).
    fn write_char_escape<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        escape: CharEscape,
    ) -> io::Result<()> {
        out.write_all(match escape {
            CharEscape::Quote => b"\\\"",
            CharEscape::ReverseSolidus => b"\\\\",
            CharEscape::Solidus => b"\\/",
            CharEscape::LineFeed => b"\\n",
            CharEscape::CarriageReturn => b"\\r",
            CharEscape::Tab => b"\\t",
            CharEscape::Backspace => return control(out, 0x08),
            CharEscape::FormFeed => return control(out, 0x0c),
            CharEscape::AsciiControl(c) => return control(out, c),
        })
    }

    /// Bytes are [`Text`]: a string of their lossy UTF-8, escaped as `&str`s are.
    fn write_byte_array<W: ?Sized + Write>(&mut self, out: &mut W, text: &[u8]) -> io::Result<()> {
        string(out, text)
    }

    /// What serde_json leaves as it is: also escapes DEL and the C1 controls (U+0080 to
    /// U+009F, `C2 80` to `C2 9F` in UTF-8), which JSON does not ask for but a terminal acts on.
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        // Keys and names: short and plain ASCII (a loop on the bytes, not a search).
        if !bytes.iter().any(|&b| b >= 0x7f) {
            return out.write_all(bytes);
        }
        let mut run = 0;
        for at in memchr::memchr2_iter(0x7f, 0xc2, bytes) {
            let (c, len) = match (bytes[at], bytes.get(at + 1)) {
                (0x7f, _) => (0x7f, 1),
                (_, Some(&c @ 0x80..=0x9f)) => (c, 2),
                _ => continue,
            };
            out.write_all(&bytes[run..at])?;
            control(out, c)?;
            run = at + len;
        }
        out.write_all(&bytes[run..])
    }
}

/// Writes `value` as JSON laid out as `layout` says.
pub(crate) fn write(
    out: &mut impl Write,
    layout: JsonLayout,
    value: &impl Serialize,
) -> io::Result<()> {
    let mut json = serde_json::Serializer::with_formatter(out, Formatter::new(layout));
    value.serialize(&mut json).map_err(io::Error::from)
}

/// Writes `value` as one JSON document on one line (no line end), with bpflog's escapes: what
/// the command writes as JSON that the library does not (`verify`'s tables) goes through the
/// same formatter as every JSON document.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    write(out, JsonLayout::Compact, value)
}

/// Bytes from the log or the object, written by [`write`](fn@write) as a JSON string of their lossy
/// UTF-8 ([`write_body`]). They go to the formatter as bytes (`serialize_bytes`), which is
/// what lets it write them so: another serializer would see bytes.
#[derive(Debug, Clone, Copy)]
struct Text<'a>(&'a [u8]);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// Writes `s` as a JSON string (lossy UTF-8): how [`Text`] is written, and the same bytes as
/// [`write`](fn@write) writes for a `&str` of that text (`strings_read_back_as_the_lossy_text`),
/// without serde's work per fragment: what the report's pieces write their rows' text with.
pub(crate) fn string(out: &mut (impl Write + ?Sized), s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    write_body(out, s)?;
    out.write_all(b"\"")
}

/// One record with only line, kind, text and program (and `index` when given).
pub(crate) fn record(
    out: &mut impl Write,
    line_no: u64,
    kind: &str,
    text: &[u8],
    program: Option<&Program<'_, '_>>,
    index: Option<u64>,
) -> io::Result<()> {
    write_number(out, b"{\"line\":", line_no)?;
    out.write_all(b",\"kind\":\"")?;
    out.write_all(kind.as_bytes())?;
    out.write_all(b"\",\"text\":")?;
    string(out, text)?;
    if let Some(p) = program {
        out.write_all(b",\"program\":")?;
        string(out, p.name().as_bytes())?;
    }
    if let Some(i) = index {
        write_number(out, b",\"index\":", i)?;
    }
    out.write_all(b"}\n")
}

/// The record of an `error` line that carries the explanation of the rejection (`explanation`:
/// the object `explain --format json` writes, `explain::JsonExplanation`).
pub(crate) fn explained_error(
    out: &mut impl Write,
    line_no: u64,
    text: &[u8],
    program: &Program<'_, '_>,
    explanation: &impl serde::Serialize,
) -> io::Result<()> {
    write_number(out, b"{\"line\":", line_no)?;
    out.write_all(b",\"kind\":\"error\",\"text\":")?;
    string(out, text)?;
    out.write_all(b",\"program\":")?;
    string(out, program.name().as_bytes())?;
    out.write_all(b",\"explanation\":")?;
    write(out, JsonLayout::Compact, explanation)?;
    out.write_all(b"}\n")
}

/// The record of a classified log line of `program`'s log: [`record`]'s members (the
/// `"program"` member as [`SourceCache`] holds it), with `from` and `to` for `from X to Y` and
/// the `"source"` member of an instruction.
pub(crate) fn line(
    out: &mut impl Write,
    line_no: u64,
    kind: &Line<'_>,
    text: &[u8],
    program: &Program<'_, '_>,
    sources: &mut SourceCache,
) -> io::Result<()> {
    // Put together in a buffer and written at once: a write to the output is a call and a copy
    // of unknown length per piece, ten pieces a record (callgrind, 5 MB `branchy.o` log:
    // 114.9 M instructions written piece by piece, 107.6 M at once).
    let mut record = std::mem::take(&mut sources.record);
    record.clear();
    line_into(&mut record, line_no, kind, text, program, sources)?;
    let written = out.write_all(&record);
    sources.record = record;
    written
}

/// [`line()`]'s record, into `out`.
fn line_into(
    out: &mut Vec<u8>,
    line_no: u64,
    kind: &Line<'_>,
    text: &[u8],
    program: &Program<'_, '_>,
    sources: &mut SourceCache,
) -> io::Result<()> {
    let (name, index) = match kind {
        Line::Blank => ("blank", None),
        Line::Insn(i) => ("insn", Some(i.index)),
        Line::State { index } => ("state", Some(*index)),
        Line::Safe { index } => ("safe", Some(*index)),
        Line::FromTo { .. } => ("from_to", None),
        Line::FuncStart { .. } => ("func_start", None),
        Line::Validating { .. } => ("validating", None),
        Line::GlobalFunc { .. } => ("global_func", None),
        Line::CallerCallee => ("caller_callee", None),
        Line::MarkPrecise => ("mark_precise", bpflog_log::precise_index(text)),
        Line::LiveRegsHeader => ("live_regs_header", None),
        Line::LiveRegsRow { index, .. } => ("live_regs_row", Some(*index)),
        Line::Annotation(_) => ("annotation", None),
        Line::Returning => ("returning", None),
        Line::Trace => ("trace", None),
        Line::Summary => ("summary", None),
        Line::Stats => ("stats", None),
        Line::Loader => ("loader", None),
        Line::Other => ("other", None),
    };
    write_number(out, b"{\"line\":", line_no)?;
    out.write_all(b",\"kind\":\"")?;
    out.write_all(name.as_bytes())?;
    out.write_all(b"\",\"text\":")?;
    string(out, text)?;
    out.write_all(sources.program_member(program))?;
    if let Line::FromTo { from, to } = kind {
        write_number(out, b",\"from\":", *from)?;
        write_number(out, b",\"to\":", *to)?;
    }
    if let Some(i) = index {
        write_number(out, b",\"index\":", i)?;
    }
    if let Line::Insn(insn) = kind
        && let Ok(index) = u32::try_from(insn.index)
    {
        sources.write(out, program, index)?;
    }
    out.write_all(b"}\n")
}

/// The `"source"` members of a log's instruction records, each put together the first time
/// its instruction comes and copied after (a log visits an instruction many times): locating
/// it, its inline chain and escaping its names cost more than the copy. Held up to
/// [`SourceCache::BUDGET`] bytes; instructions beyond are put together each time.
///
/// It holds the record's `"program"` member too, escaped once rather than on every line.
pub(crate) struct SourceCache {
    members: InsnBytes,
    /// The program's name and its `,"program":"..."` member.
    program: (String, Vec<u8>),
    /// The record being put together ([`line()`]).
    record: Vec<u8>,
}

impl Default for SourceCache {
    fn default() -> Self {
        SourceCache::with_budget(Self::BUDGET)
    }
}

impl SourceCache {
    /// The most bytes held: members run to 200–300 bytes, so about 60,000 instructions.
    const BUDGET: usize = 16 << 20;

    fn with_budget(budget: usize) -> Self {
        SourceCache {
            members: InsnBytes::with_budget(budget),
            program: Default::default(),
            record: Vec::new(),
        }
    }

    /// The `"program"` member of `program`'s records, with its comma, as [`record`] writes it.
    fn program_member(&mut self, program: &Program<'_, '_>) -> &[u8] {
        let (name, member) = &mut self.program;
        if name != program.name() || member.is_empty() {
            name.clear();
            name.push_str(program.name());
            member.clear();
            member.extend_from_slice(b",\"program\":");
            // Cannot fail: a `Vec` takes every write.
            let _ = string(member, program.name().as_bytes());
        }
        member
    }

    /// Writes the `"source"` member of instruction `index`, if anything says where it comes
    /// from.
    fn write(
        &mut self,
        out: &mut impl Write,
        program: &Program<'_, '_>,
        index: u32,
    ) -> io::Result<()> {
        let len = program.layout.len;
        self.members
            .write(out, index, len, |bytes| source(bytes, program, index))
            .map(|_| ())
    }
}

/// The `"source"` member of an instruction's record: where it comes from (DWARF, else BTF).
#[derive(Serialize)]
struct Source<'a> {
    file: Text<'a>,
    line: u32,
    column: u32,
    function: Text<'a>,
    inlined: Chain<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Text<'a>>,
}

/// [`Source`]'s inline chain, innermost first, written as it is read (no list put together).
struct Chain<'a>(&'a [InlinedFrom<'a>]);

impl Serialize for Chain<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|step| Inlined {
            into: Text(step.caller.as_bytes()),
            file: step.call_site.map(|(file, _, _)| Text(file)),
            line: step.call_site.map(|(_, line, _)| line),
            column: step.call_site.map(|(_, _, column)| column),
        }))
    }
}

/// One step of [`Source`]'s inline chain: the function it was inlined into, and where.
#[derive(Serialize)]
struct Inlined<'a> {
    into: Text<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<Text<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    column: Option<u32>,
}

impl<'a> From<&'a InsnSource<'a>> for Source<'a> {
    fn from(src: &'a InsnSource<'a>) -> Self {
        Source {
            file: Text(src.file),
            line: src.line,
            column: src.column,
            function: Text(src.function.as_bytes()),
            inlined: Chain(&src.inlined),
            text: src.btf_text.map(|t| Text(t.trim_ascii_start())),
        }
    }
}

/// The `"source"` member of instruction `index`'s record: where it comes from (DWARF, else
/// BTF); nothing when nothing says.
fn source(out: &mut Vec<u8>, program: &Program<'_, '_>, index: u32) -> io::Result<()> {
    let Some(src) = locate(program, index) else {
        return Ok(());
    };
    out.write_all(b",\"source\":")?;
    write(out, JsonLayout::Compact, &Source::from(&src))
}

/// Writes the inside of a JSON string that holds `s` (lossy UTF-8), without its quotes. DEL
/// and the C1 controls (U+0080 to U+009F) are escaped as the C0 ones are, though JSON does not
/// ask it: a terminal acts on them.
///
/// Log lines are ASCII with nothing to escape nearly always: they are looked at 32 bytes at a
/// time (a loop the compiler turns into vector compares) and written in runs between escapes.
/// At the first byte that is not ASCII, the rest is made valid UTF-8 (a copy, only then) and
/// written the same way: in valid UTF-8 the bytes that need escaping stand only for
/// themselves. (serde_json's own escaping, a byte at a time after a UTF-8 check, took 0.13 s
/// more of CPU than this on the records of a 100 MiB log.)
fn write_body(out: &mut (impl Write + ?Sized), s: &[u8]) -> io::Result<()> {
    if let Some(at) = escaped(out, s, true)? {
        escaped(out, String::from_utf8_lossy(&s[at..]).as_bytes(), false)?;
    }
    Ok(())
}

/// Whether `b` may need an escape: it needs one, or it is not ASCII. Without a branch: below
/// 0x20, DEL and from 0x80 on are the bytes that fall outside 0x5f once 0x20 is taken away.
#[inline]
fn special(b: u8) -> bool {
    (b.wrapping_sub(0x20) >= 0x5f) | (b == b'"') | (b == b'\\')
}

/// Whether no byte of `chunk` is [`special`]: the bytes' tests or-ed together as numbers, which
/// the compiler turns into a few vector compares.
#[inline]
fn plain(chunk: &[u8; CHUNK]) -> bool {
    chunk.iter().fold(0u8, |any, &b| any | u8::from(special(b))) == 0
}

/// The bytes [`escaped`] looks at at once.
const CHUNK: usize = 32;

/// Writes `text` with JSON's escapes; when `ascii`, stops at the first byte that is not ASCII
/// and returns where it is.
fn escaped(out: &mut (impl Write + ?Sized), text: &[u8], ascii: bool) -> io::Result<Option<usize>> {
    let mut run = 0;
    let mut i = 0;
    let chunk = |at: usize| -> Option<&[u8; CHUNK]> { text.get(at..at + CHUNK)?.try_into().ok() };
    while i < text.len() {
        // Not one byte of a chunk is special: the usual case, decided without a branch a byte.
        if chunk(i).is_some_and(plain) {
            i += CHUNK;
            continue;
        }
        // Fewer bytes left than a chunk: the text's last chunk holds them.
        if i + CHUNK > text.len()
            && let Some(last) = text.len().checked_sub(CHUNK)
            && chunk(last).is_some_and(plain)
        {
            break;
        }
        // The first special byte among the next ones.
        let end = (i + CHUNK).min(text.len());
        match text[i..end].iter().position(|&b| special(b)) {
            Some(k) => i += k,
            None => {
                i = end;
                continue;
            }
        }
        let b = text[i];
        // C1 controls, U+0080 to U+009F (C2 80 to C2 9F): escaped, as the control bytes below
        // U+0020 are, so that no terminal takes one for a command.
        let c1 = match (b, text.get(i + 1)) {
            (0xc2, Some(&c @ 0x80..=0x9f)) => Some(c),
            _ => None,
        };
        // Past the first non-ASCII byte, the others are written as they are.
        if b >= 0x80 && !ascii && c1.is_none() {
            i += 1;
            continue;
        }
        out.write_all(&text[run..i])?;
        run = i + 1;
        match (b, c1) {
            (0x80.., _) if ascii => return Ok(Some(i)),
            (_, Some(c)) => {
                control(out, c)?;
                run = i + 2;
                i += 1;
            }
            (b'"', _) => out.write_all(b"\\\"")?,
            (b'\\', _) => out.write_all(b"\\\\")?,
            (b'\n', _) => out.write_all(b"\\n")?,
            (b'\r', _) => out.write_all(b"\\r")?,
            (b'\t', _) => out.write_all(b"\\t")?,
            // Other control bytes and DEL.
            _ => control(out, b)?,
        }
        i += 1;
    }
    out.write_all(&text[run..])?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_members_are_the_same_held_or_not() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        // Inlined calls (branchy.c), subprograms (xdp_subprogs.c), BTF only (nodwarf).
        for name in ["branchy.o", "xdp_subprogs.o", "xdp_subprogs.nodwarf.o"] {
            let data = std::fs::read(fixtures.join("obj").join(name)).unwrap();
            let object = bpflog_object::BpfObject::parse(&data).unwrap();
            let program = Program::new(&object, object.programs()[0]).unwrap();
            // Every instruction, some past the end, three times over in a scattered order.
            let len = program.layout.len + 3;
            let order: Vec<u32> = (0..3 * len).map(|k| (k * 7) % len).collect();
            let mut each_time = Vec::new();
            for &i in &order {
                source(&mut each_time, &program, i).unwrap();
            }
            // A budget of 0 holds none, 300 bytes the first one or two.
            for budget in [0, 300, SourceCache::BUDGET] {
                let mut cache = SourceCache::with_budget(budget);
                let mut out = Vec::new();
                for &i in &order {
                    cache.write(&mut out, &program, i).unwrap();
                }
                assert_eq!(out, each_time, "{name}, budget {budget}");
            }
            assert!(String::from_utf8(each_time).unwrap().contains("\"source\""));
        }
    }

    #[test]
    fn pretty_is_serde_jsons_layout_with_bpflogs_escapes() {
        // Nested objects and arrays, empty ones, and text with controls.
        let value = serde_json::json!({
            "a": [1, {"b": [], "c": {}, "d": [[2], {"e": null}]}],
            "f": {"g": "x\u{1b}]0;t\u{7}\u{9b}\u{7f}y"},
            "h": [],
        });
        let mut ours = Vec::new();
        write(&mut ours, JsonLayout::Pretty, &value).unwrap();
        let theirs = serde_json::to_string_pretty(&value).unwrap();
        let ours = String::from_utf8(ours).unwrap();
        // The same but for the escapes of DEL and C1, which serde_json leaves raw.
        assert_eq!(
            ours,
            theirs
                .replace('\u{9b}', "\\u009b")
                .replace('\u{7f}', "\\u007f")
        );
        assert!(
            ours.contains(r#""x\u001b]0;t\u0007\u009b\u007fy""#),
            "{ours}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&ours).unwrap(),
            value
        );
    }

    #[test]
    fn rows_put_the_outer_members_and_their_items_on_lines() {
        #[derive(Serialize)]
        struct Inner {
            a: u8,
            b: [u8; 2],
        }
        #[derive(Serialize)]
        struct Doc {
            name: &'static str,
            inner: Inner,
            rows: Vec<(u8, u8)>,
            none: Vec<u8>,
        }
        let doc = Doc {
            name: "a",
            inner: Inner { a: 1, b: [2, 3] },
            rows: vec![(4, 5), (6, 7)],
            none: Vec::new(),
        };
        let mut out = Vec::new();
        write(&mut out, JsonLayout::Rows, &doc).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"name\": \"a\",\n  \"inner\": {\"a\": 1, \"b\": [2, 3]},\n  \"rows\": [\n    [4, 5],\n    \
             [6, 7]\n  ],\n  \"none\": []\n}"
        );
        let mut out = Vec::new();
        write(&mut out, JsonLayout::Compact, &doc).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"name":"a","inner":{"a":1,"b":[2,3]},"rows":[[4,5],[6,7]],"none":[]}"#
        );
    }

    #[test]
    fn strings_read_back_as_the_lossy_text() {
        // Lengths around the 32-byte chunks, escapes and non-ASCII at every place in them.
        let pieces: [&[u8]; 17] = [
            b"a",
            b"\"",
            b"\\",
            b"\n",
            b"\x08",
            b"\x1f",
            b"\x7f",
            b"<",
            b"\xc3\xa9",
            b"\xff",
            b"\xe2\x82",
            b"\xe2\x80\xa8",
            b"\xe2\x80\xa9",
            b"\xe2\x80",
            b"0123456789abcdef",
            // C1 controls: U+009B, U+0080.
            b"\xc2\x9b",
            b"\xc2\x80",
        ];
        let mut seed = 7u64;
        for _ in 0..3_000 {
            let mut s = Vec::new();
            for _ in 0..seed % 40 {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                s.extend_from_slice(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            let lossy = String::from_utf8_lossy(&s);
            let mut out = Vec::new();
            write(&mut out, JsonLayout::Compact, &Text(&s)).unwrap();
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, lossy, "{s:?}");
            // No control character a terminal acts on: C0, DEL, C1.
            let controls = |t: &str| t.contains(|c| matches!(u32::from(c), 0..0x20 | 0x7f..=0x9f));
            assert!(!controls(std::str::from_utf8(&out).unwrap()), "{s:?}");
            // A `&str` (serde_json's escaping, and the formatter's) is written the same way.
            let mut via_str = Vec::new();
            write(&mut via_str, JsonLayout::Compact, &lossy).unwrap();
            assert_eq!(via_str, out, "{s:?}");
        }
    }

    #[test]
    fn strings_are_escaped_and_invalid_bytes_replaced() {
        let mut out = Vec::new();
        write(
            &mut out,
            JsonLayout::Compact,
            &Text(b"a\"b\\c\td\x01\x08\x0c\x7f\xffe"),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\td\\u0001\\u0008\\u000c\\u007f\u{fffd}e\""
        );
    }
}
