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
use crate::locate::locate;
use bpflog_log::Line;
use std::io::{self, Write};

/// Writes `s` as a JSON string (lossy UTF-8).
fn string(out: &mut impl Write, s: &[u8]) -> io::Result<()> {
    out.write_all(b"\"")?;
    let text = String::from_utf8_lossy(s);
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let escaped: Option<&[u8]> = match c {
            '"' => Some(b"\\\""),
            '\\' => Some(b"\\\\"),
            '\n' => Some(b"\\n"),
            '\r' => Some(b"\\r"),
            '\t' => Some(b"\\t"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.write_all(&text.as_bytes()[start..i])?;
        match escaped {
            Some(e) => out.write_all(e)?,
            None => write!(out, "\\u{:04x}", c as u32)?,
        }
        start = i + c.len_utf8();
    }
    out.write_all(&text.as_bytes()[start..])?;
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
    write!(out, "{{\"line\":{line_no},\"kind\":\"{kind}\",\"text\":")?;
    string(out, text)?;
    if let Some(p) = program {
        out.write_all(b",\"program\":")?;
        string(out, p.name().as_bytes())?;
    }
    if let Some(i) = index {
        write!(out, ",\"index\":{i}")?;
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
) -> io::Result<()> {
    let (name, index) = match kind {
        Line::Blank => ("blank", None),
        Line::Insn(i) => ("insn", Some(i.index)),
        Line::State { index } => ("state", Some(*index)),
        Line::Safe { index } => ("safe", Some(*index)),
        Line::FromTo { from, to } => {
            write!(out, "{{\"line\":{line_no},\"kind\":\"from_to\",\"text\":")?;
            string(out, text)?;
            out.write_all(b",\"program\":")?;
            string(out, program.name().as_bytes())?;
            return writeln!(out, ",\"from\":{from},\"to\":{to}}}");
        }
        Line::FuncStart { .. } => ("func_start", None),
        Line::Validating { .. } => ("validating", None),
        Line::GlobalFunc => ("global_func", None),
        Line::CallerCallee => ("caller_callee", None),
        Line::MarkPrecise => ("mark_precise", crate::annotate::precise_index(text)),
        Line::LiveRegsHeader => ("live_regs_header", None),
        Line::LiveRegsRow { index } => ("live_regs_row", Some(*index)),
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
    write!(out, "{{\"line\":{line_no},\"kind\":\"insn\",\"text\":")?;
    string(out, text)?;
    out.write_all(b",\"program\":")?;
    string(out, program.name().as_bytes())?;
    write!(out, ",\"index\":{}", insn.index)?;
    if let Some(src) = u32::try_from(insn.index)
        .ok()
        .and_then(|i| locate(program, i))
    {
        out.write_all(b",\"source\":{\"file\":")?;
        string(out, src.file)?;
        write!(
            out,
            ",\"line\":{},\"column\":{},\"function\":",
            src.line, src.column
        )?;
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
                write!(out, ",\"line\":{l},\"column\":{c}")?;
            }
            out.write_all(b"}")?;
        }
        out.write_all(b"]")?;
        if let Some(t) = src.btf_text {
            out.write_all(b",\"text\":")?;
            string(out, crate::annotate::trim_start(t))?;
        }
        out.write_all(b"}")?;
    }
    out.write_all(b"}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

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
