//! `annotate --format json`: one JSON object per line of the input.
//!
//! Schema (every object on its own line):
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
//! ```
//!
//! Kinds: `insn`, `state`, `safe`, `from_to`, `func_start`, `validating`, `global_func`,
//! `caller_callee`, `returning`, `mark_precise`, `live_regs_header`, `live_regs_row`, `trace`,
//! `annotation` (the kernel's own `;` lines), `summary`, `stats`, `error` (the verifier's
//! message after the last instruction), `blank`, `other` (anything else inside a log), `outside`
//! (lines around the logs: loader chatter), `cut` (the cut first line of a truncated log).

use crate::Program;
use crate::insn_bytes::InsnBytes;
use crate::locate::locate;
use crate::style::write_number;
use bpflog_log::Line;
use std::io::{self, Write};

/// Writes `s` as a JSON string (lossy UTF-8).
fn string(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    write_body::<false>(out, s)?;
    out.write_all(b"\"")
}

/// Writes the inside of a JSON string that holds `s` (lossy UTF-8), without its quotes. C1
/// controls (U+0080 to U+009F) are escaped as the others are, though JSON does not ask it. With
/// `SCRIPT`, also escapes what must not appear inside an HTML `<script>`: `<` (so that neither
/// `</script>` nor `<!--` can end or open anything there), DEL, and the separators U+2028 and
/// U+2029 (line ends to older JavaScript).
///
/// Log lines are ASCII with nothing to escape nearly always: they are looked at 16 bytes at a
/// time (a loop the compiler turns into vector compares) and written in runs between escapes.
/// At the first byte that is not ASCII, the rest is made valid UTF-8 (a copy, only then) and
/// written the same way: in valid UTF-8 the bytes that need escaping stand only for
/// themselves.
pub(crate) fn write_body<const SCRIPT: bool>(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    if let Some(at) = escaped::<SCRIPT>(out, s, true)? {
        escaped::<SCRIPT>(out, String::from_utf8_lossy(&s[at..]).as_bytes(), false)?;
    }
    Ok(())
}

/// Whether `b` may need an escape: it needs one, or it is not ASCII. Without a branch: below
/// 0x20 and from 0x80 on are the bytes that fall outside 0x60 once 0x20 is taken away.
#[inline]
fn special<const SCRIPT: bool>(b: u8) -> bool {
    let json = (b.wrapping_sub(0x20) >= 0x60) | (b == b'"') | (b == b'\\');
    json | (SCRIPT & ((b == b'<') | (b == 0x7f)))
}

/// Whether no byte of `chunk` is [`special`].
#[inline]
fn plain<const SCRIPT: bool>(chunk: &[u8; 16]) -> bool {
    !chunk
        .iter()
        .fold(false, |any, &b| any | special::<SCRIPT>(b))
}

/// Writes `text` with JSON's escapes; when `ascii`, stops at the first byte that is not ASCII
/// and returns where it is.
fn escaped<const SCRIPT: bool>(
    out: &mut impl Write,
    text: &[u8],
    ascii: bool,
) -> io::Result<Option<usize>> {
    const CHUNK: usize = 16;
    let mut run = 0;
    let mut i = 0;
    let chunk = |at: usize| -> Option<&[u8; CHUNK]> { text.get(at..at + CHUNK)?.try_into().ok() };
    while i < text.len() {
        // Not one byte of a chunk is special: the usual case, decided without a branch a byte.
        if chunk(i).is_some_and(plain::<SCRIPT>) {
            i += CHUNK;
            continue;
        }
        // Fewer bytes left than a chunk: the text's last chunk holds them.
        if i + CHUNK > text.len()
            && let Some(last) = text.len().checked_sub(CHUNK)
            && chunk(last).is_some_and(plain::<SCRIPT>)
        {
            break;
        }
        // The first special byte among the next ones.
        let end = (i + CHUNK).min(text.len());
        match text[i..end].iter().position(|&b| special::<SCRIPT>(b)) {
            Some(k) => i += k,
            None => {
                i = end;
                continue;
            }
        }
        let b = text[i];
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
        let separator = SCRIPT
            && b == 0xe2
            && text.get(i + 1) == Some(&0x80)
            && matches!(text.get(i + 2), Some(0xa8 | 0xa9));
        // C1 controls, U+0080 to U+009F (C2 80 to C2 9F): escaped, as the control bytes below
        // U+0020 are, so that no terminal takes one for a command.
        let c1 = b == 0xc2 && matches!(text.get(i + 1), Some(0x80..=0x9f));
        // Past the first non-ASCII byte, the others are written as they are.
        if b >= 0x80 && !ascii && !separator && !c1 {
            i += 1;
            continue;
        }
        out.write_all(&text[run..i])?;
        run = i + 1;
        match b {
            0x80.. if ascii => return Ok(Some(i)),
            0xc2 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let low = HEX[usize::from(text[i + 1] & 15)];
                out.write_all(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(text[i + 1] >> 4)],
                    low,
                ])?;
                run = i + 2;
                i += 1;
            }
            0x80.. => {
                out.write_all(if text[i + 2] == 0xa8 {
                    b"\\u2028"
                } else {
                    b"\\u2029"
                })?;
                run = i + 3;
                i += 2;
            }
            b'"' => out.write_all(b"\\\"")?,
            b'\\' => out.write_all(b"\\\\")?,
            b'\n' => out.write_all(b"\\n")?,
            b'\r' => out.write_all(b"\\r")?,
            b'\t' => out.write_all(b"\\t")?,
            _ => {
                // Other control bytes, and in a script `<` and DEL.
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let (high, low) = (HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]);
                out.write_all(&[b'\\', b'u', b'0', b'0', high, low])?;
            }
        }
        i += 1;
    }
    out.write_all(&text[run..])?;
    Ok(None)
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

/// The record of a classified log line of `program`'s log.
pub(crate) fn line(
    out: &mut impl Write,
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
        Line::FromTo { from, to } => {
            write_number(out, b"{\"line\":", line_no)?;
            out.write_all(b",\"kind\":\"from_to\",\"text\":")?;
            string(out, text)?;
            out.write_all(b",\"program\":")?;
            string(out, program.name().as_bytes())?;
            write_number(out, b",\"from\":", *from)?;
            write_number(out, b",\"to\":", *to)?;
            return out.write_all(b"}\n");
        }
        Line::FuncStart { .. } => ("func_start", None),
        Line::Validating { .. } => ("validating", None),
        Line::GlobalFunc { .. } => ("global_func", None),
        Line::CallerCallee => ("caller_callee", None),
        Line::MarkPrecise => ("mark_precise", crate::annotate::precise_index(text)),
        Line::LiveRegsHeader => ("live_regs_header", None),
        Line::LiveRegsRow { index, .. } => ("live_regs_row", Some(*index)),
        Line::Annotation(_) => ("annotation", None),
        Line::Returning => ("returning", None),
        Line::Trace => ("trace", None),
        Line::Summary => ("summary", None),
        Line::Stats => ("stats", None),
        Line::Other => ("other", None),
    };
    let Line::Insn(insn) = kind else {
        return record(out, line_no, name, text, Some(program), index);
    };
    write_number(out, b"{\"line\":", line_no)?;
    out.write_all(b",\"kind\":\"insn\",\"text\":")?;
    string(out, text)?;
    out.write_all(b",\"program\":")?;
    string(out, program.name().as_bytes())?;
    write_number(out, b",\"index\":", insn.index)?;
    if let Ok(index) = u32::try_from(insn.index) {
        sources.write(out, program, index)?;
    }
    out.write_all(b"}\n")
}

/// The `"source"` members of a log's instruction records, each put together the first time
/// its instruction comes and copied after (a log visits an instruction many times): locating
/// it, its inline chain and escaping its names cost more than the copy. Held up to
/// [`SourceCache::BUDGET`] bytes; instructions beyond are put together each time.
pub(crate) struct SourceCache(InsnBytes);

impl Default for SourceCache {
    fn default() -> Self {
        SourceCache::with_budget(Self::BUDGET)
    }
}

impl SourceCache {
    /// The most bytes held: members run to 200–300 bytes, so about 60,000 instructions.
    const BUDGET: usize = 16 << 20;

    fn with_budget(budget: usize) -> Self {
        SourceCache(InsnBytes::with_budget(budget))
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
        self.0
            .write(out, index, len, |bytes| source(bytes, program, index))
            .map(|_| ())
    }
}

/// The `"source"` member of instruction `index`'s record: where it comes from (DWARF, else
/// BTF); nothing when nothing says.
fn source(out: &mut Vec<u8>, program: &Program<'_, '_>, index: u32) -> io::Result<()> {
    let Some(src) = locate(program, index) else {
        return Ok(());
    };
    out.write_all(b",\"source\":{\"file\":")?;
    string(out, src.file)?;
    write_number(out, b",\"line\":", src.line)?;
    write_number(out, b",\"column\":", src.column)?;
    out.write_all(b",\"function\":")?;
    string(out, src.function.as_bytes())?;
    out.write_all(b",\"inlined\":[")?;
    for (k, step) in src.inlined.iter().enumerate() {
        out.write_all(if k == 0 {
            b"{\"into\":"
        } else {
            b",{\"into\":"
        })?;
        string(out, step.caller.as_bytes())?;
        if let Some((file, l, c)) = step.call_site {
            out.write_all(b",\"file\":")?;
            string(out, file)?;
            write_number(out, b",\"line\":", l)?;
            write_number(out, b",\"column\":", c)?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"]")?;
    if let Some(t) = src.btf_text {
        out.write_all(b",\"text\":")?;
        string(out, t.trim_ascii_start())?;
    }
    out.write_all(b"}")
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
    fn strings_read_back_as_the_lossy_text() {
        // Lengths around the 16-byte chunks, escapes and non-ASCII at every place in them.
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
            string(&mut out, &s).unwrap();
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, lossy, "{s:?}");
            let c1 = |t: &str| t.contains(|c| ('\u{80}'..='\u{9f}').contains(&c));
            assert!(!c1(std::str::from_utf8(&out).unwrap()), "{s:?}");
            // In a script: the same text, with none of what could end it or a line there.
            out.clear();
            out.push(b'"');
            write_body::<true>(&mut out, &s).unwrap();
            out.push(b'"');
            let back: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, lossy, "{s:?}");
            let text = String::from_utf8(out).unwrap();
            assert!(
                !text.contains(['<', '\u{7f}', '\u{2028}', '\u{2029}']) && !c1(&text),
                "{text:?}"
            );
        }
    }

    #[test]
    fn strings_are_escaped_and_invalid_bytes_replaced() {
        let mut out = Vec::new();
        string(&mut out, b"a\"b\\c\td\x01\xffe").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"b\\\\c\\td\\u0001\u{fffd}e\""
        );
    }
}
