//! Text from objects, shown safely: control bytes escaped, the same way by every renderer.
//!
//! Source line texts, file and function names come from the object (and source lines from the
//! files it names), which come from strangers. Written raw to a terminal, `ESC ] 0;... BEL`
//! retitles the window, `ESC [2J` clears the screen, and a C1 control such as CSI (the byte
//! 0x9b, or U+009B in UTF-8) does what `ESC [` does. Every renderer of such text to a terminal or
//! a text format (annotation lines, context, the diagnostic, the profile's table, CSV and source
//! view, flame graph frames, `bpflog lines`) passes it through [`escape_controls`]:
//!
//! - a C0 control other than TAB (0x00–0x08, 0x0a–0x1f) and DEL (0x7f) becomes `\xNN`
//!   (`\x1b` for ESC);
//! - a C1 control, U+0080–U+009F, and a bidirectional override or isolate (U+202A–U+202E,
//!   U+2066–U+2069, U+200E, U+200F: they reorder what a terminal shows, "Trojan Source") become
//!   `\u{NN}` when they are UTF-8 (`\u{9b}`, `\u{202e}`); a byte 0x80–0x9f outside any UTF-8
//!   sequence becomes `\xNN` (`\x9b`);
//! - everything else is left as it is: TAB, backslashes, UTF-8, other bytes that are not UTF-8.
//!
//! Which characters are escaped is decided in one place, [`bpflog_object::is_terminal_control`],
//! which messages use too ([`bpflog_object::excerpt`]).
//!
//! The escapes are for the eye, not to be read back (a backslash is not escaped). Real C source
//! lines hold no control byte but TAB, so the kernel's own `; text @ file:line` lines come out
//! byte for byte. Lines that are in the log already (the kernel printed them, with the object's
//! texts and names in them) are written by [`write_log_lines`]: as read, or escaped the same way
//! when the caller asks ([`AnnotateOptions::escape_log`](crate::AnnotateOptions::escape_log):
//! the CLI asks for a terminal). JSON output is escaped by JSON's rules instead.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `b` may start something [`escape_controls`] escapes (bytes from 0x80 on only when
/// not part of a UTF-8 character outside C1).
#[inline]
fn suspect(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b >= 0x7f
}

/// `text` with its control bytes escaped, one escape for every control byte (see the module
/// docs); borrowed when it has none.
pub fn escape_controls(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.iter().copied().any(suspect) {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 8);
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !bpflog_object::is_terminal_control(c) {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            } else if c.is_ascii() {
                out.extend_from_slice(format!("\\x{:02x}", u32::from(c)).as_bytes());
            } else {
                out.extend_from_slice(format!("\\u{{{:x}}}", u32::from(c)).as_bytes());
            }
        }
        for &b in chunk.invalid() {
            if (0x80..=0x9f).contains(&b) {
                out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            } else {
                out.push(b);
            }
        }
    }
    if out == text {
        // Only UTF-8 outside C1 among the bytes looked at twice.
        return Cow::Borrowed(text);
    }
    Cow::Owned(out)
}

/// Writes `bytes`, lines of a log (whole lines with their line ends, or a part of one): as they
/// are, or, when `escape`, each line with its control bytes escaped by [`escape_controls`], its
/// line end (`\n`, `\r\n`) kept. Bytes without anything to escape (a scan for a control byte
/// but TAB and LF, or a byte from 0x7f on) are written as they are, in one write.
pub fn write_log_lines(
    out: &mut (impl Write + ?Sized),
    bytes: &[u8],
    escape: bool,
) -> io::Result<()> {
    if !escape || !has_suspect_in_lines(bytes) {
        return out.write_all(bytes);
    }
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let content = line.strip_suffix(b"\n").unwrap_or(line);
        let content = if content.len() < line.len() {
            content.strip_suffix(b"\r").unwrap_or(content)
        } else {
            content
        };
        out.write_all(&escape_controls(content))?;
        out.write_all(&line[content.len()..])?;
    }
    Ok(())
}

/// Whether any byte of `bytes` but LF is [`suspect`]: 64 bytes at a time, without a branch
/// inside a block (the compiler makes each block a few vector instructions).
fn has_suspect_in_lines(bytes: &[u8]) -> bool {
    bytes.chunks(64).any(|block| {
        block
            .iter()
            .fold(false, |any, &b| any | (suspect(b) && b != b'\n'))
    })
}

/// [`escape_controls`] of a string (the escapes are ASCII: it stays a string).
pub fn escape_controls_str(text: &str) -> Cow<'_, str> {
    match escape_controls(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &[u8]) -> String {
        String::from_utf8_lossy(&escape_controls(text)).into_owned()
    }

    #[test]
    fn bidirectional_overrides_are_escaped_as_messages_escape_them() {
        // A source line that reads one way and runs another ("Trojan Source").
        let line =
            "if (access_level != \u{202e} \u{2066}// Check if admin\u{2069} \u{2066}\"user\")";
        let out = shown(line.as_bytes());
        assert!(
            !out.contains('\u{202e}') && !out.contains('\u{2066}'),
            "{out}"
        );
        assert!(out.contains("\\u{202e} \\u{2066}// Check"), "{out}");
        // The same characters as in a message.
        assert!(bpflog_object::excerpt(line.as_bytes()).contains("\\u{202e}"));
        // Other UTF-8 stays.
        assert_eq!(shown("é → ü".as_bytes()), "é → ü");
    }

    #[test]
    fn controls_are_escaped_visibly() {
        assert_eq!(
            shown(b"\x1b]0;pwned\x07 x \x1b[2J\x7f"),
            "\\x1b]0;pwned\\x07 x \\x1b[2J\\x7f"
        );
        assert_eq!(shown(b"a\x00b\nc\rd"), "a\\x00b\\x0ac\\x0dd");
        // C1: as UTF-8, and as a byte on its own.
        assert_eq!(shown("a\u{9b}2Jb\u{85}".as_bytes()), "a\\u{9b}2Jb\\u{85}");
        assert_eq!(shown(b"a\x9b2J\x80"), "a\\x9b2J\\x80");
    }

    fn log_lines(bytes: &[u8], escape: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write_log_lines(&mut out, bytes, escape).unwrap();
        out
    }

    #[test]
    fn log_lines_are_escaped_line_by_line_when_asked() {
        let log = b"0: (b7) r0 = 0\n; \x1b]0;t\x07 @ x.c:1\r\nR0=\x9b2J\t\xc2\x9b\n\x1b[2J";
        assert_eq!(log_lines(log, false), log);
        assert_eq!(
            log_lines(log, true),
            b"0: (b7) r0 = 0\n; \\x1b]0;t\\x07 @ x.c:1\r\nR0=\\x9b2J\t\\u{9b}\n\\x1b[2J"
        );
        // A lone CR inside a line is escaped; line ends are not.
        assert_eq!(log_lines(b"a\rb\r\n\n", true), b"a\\x0db\r\n\n");
        // Clean lines, past a block of 64 bytes, as they are.
        let clean =
            b"12: (85) call bpf_map_lookup_elem#1     ; R0_w=map_value_or_null(id=1)\n".repeat(3);
        assert_eq!(log_lines(&clean, true), clean);
        let mut late = clean.clone();
        late.extend_from_slice(b"\x1b\n");
        assert!(log_lines(&late, true).ends_with(b"\\x1b\n"));
    }

    #[test]
    fn source_text_is_left_as_it_is() {
        for text in [
            &b"\tif (x > 0) /* \xc3\xa9t\xc3\xa9 \xe2\x82\xac */"[..],
            b"bpf_printk(\"%d\\n\", x);",
            b"latin-1 \xe9t\xe9 and \xff",
            b"",
        ] {
            assert!(
                matches!(escape_controls(text), Cow::Borrowed(_)),
                "{text:?}"
            );
        }
        // U+0080..U+009F are C1, U+00A0 on are not; continuation bytes 0x80..0x9f inside
        // characters are not C1 either.
        assert_eq!(
            shown("\u{a0}\u{100}\u{2080}".as_bytes()),
            "\u{a0}\u{100}\u{2080}"
        );
        assert_eq!(escape_controls_str("x\u{1b}y"), "x\\x1by");
    }
}
