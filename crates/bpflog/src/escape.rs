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
//! - a C1 control, U+0080–U+009F, becomes `\u{NN}` when it is UTF-8 (`\u{9b}`), `\xNN` when it
//!   is a byte 0x80–0x9f outside any UTF-8 sequence (`\x9b`);
//! - everything else is left as it is: TAB, backslashes, UTF-8, other bytes that are not UTF-8.
//!
//! The escapes are for the eye, not to be read back (a backslash is not escaped). Real C source
//! lines hold no control byte but TAB, so the kernel's own `; text @ file:line` lines come out
//! byte for byte; lines that are in the log already (the kernel printed them) are not touched.
//! JSON output is escaped by JSON's rules instead.

use owo_colors::Style;
use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `b` may start something [`escape_controls`] escapes (bytes from 0x80 on only when
/// not part of a UTF-8 character outside C1).
#[inline]
fn suspect(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b >= 0x7f
}

/// `text` with its control bytes escaped (see the [module](self) docs); borrowed when it has
/// none.
pub fn escape_controls(text: &[u8]) -> Cow<'_, [u8]> {
    if !text.iter().copied().any(suspect) {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len() + 8);
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            match u32::from(c) {
                n @ (0x00..=0x08 | 0x0a..=0x1f | 0x7f) => {
                    out.extend_from_slice(format!("\\x{n:02x}").as_bytes());
                }
                n @ 0x80..=0x9f => out.extend_from_slice(format!("\\u{{{n:x}}}").as_bytes()),
                _ => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
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

/// [`escape_controls`] of a string (the escapes are ASCII: it stays a string).
pub fn escape_controls_str(text: &str) -> Cow<'_, str> {
    match escape_controls(text.as_bytes()) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

/// Writes `text` from the object, its control bytes escaped, in `style`.
pub(crate) fn write_shown(
    out: &mut (impl Write + ?Sized),
    style: Style,
    text: &[u8],
) -> io::Result<()> {
    crate::style::write_styled(out, style, &escape_controls(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &[u8]) -> String {
        String::from_utf8_lossy(&escape_controls(text)).into_owned()
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
