//! Input text as messages quote it.
//!
//! Objects and logs come from strangers: a name or a log line quoted in an error may be
//! megabytes long, hold terminal escapes (a window title, a cleared screen) or no UTF-8 at all.
//! Every message that quotes input text goes through [`excerpt`], so that it stays one line of
//! bounded length, safe on a terminal. It lives in this crate, the lowest one whose errors quote
//! input (section and symbol names), so that the log's and the command line's messages can use
//! the same one.

use std::fmt::Write as _;

/// The most bytes of input text a message quotes (escapes counted as written).
pub const EXCERPT_MAX: usize = 200;

/// `text` as a message quotes it: control characters escaped (`\n`, `\t`, `\r`, `\x1b`,
/// `\u{9b}`, and the bidirectional overrides and isolates, which reorder what a terminal shows),
/// bytes that are not UTF-8 as `\xNN`, and cut at a character boundary with `…` once the result
/// would pass [`EXCERPT_MAX`] bytes.
pub fn excerpt(text: &[u8]) -> String {
    let mut out = String::new();
    for chunk in text.utf8_chunks() {
        for c in chunk.valid().chars() {
            let start = out.len();
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", u32::from(c));
                }
                c if is_terminal_control(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
                }
                c => out.push(c),
            }
            if out.len() > EXCERPT_MAX {
                out.truncate(start);
                out.push('…');
                return out;
            }
        }
        for &b in chunk.invalid() {
            let start = out.len();
            let _ = write!(out, "\\x{b:02x}");
            if out.len() > EXCERPT_MAX {
                out.truncate(start);
                out.push('…');
                return out;
            }
        }
    }
    out
}

/// Whether `c` is one a terminal acts on instead of showing, when it comes from an untrusted
/// file: a C0 control but TAB, DEL, a C1 control (CSI is U+009B), or a character that changes
/// the order in which the text around it is shown (the bidirectional overrides and isolates).
/// Every place that shows such text escapes these ([`excerpt`] in messages, `bpflog`'s
/// `escape_controls` in output), each in its own notation.
pub fn is_terminal_control(c: char) -> bool {
    (c.is_control() && c != '\t') || is_bidi_control(c)
}

/// The characters that change the order in which a terminal shows the text around them
/// (Unicode's explicit directional formatting characters).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_kept() {
        assert_eq!(excerpt(b"xdp_parse"), "xdp_parse");
        assert_eq!(
            excerpt("r1 = *(u32 *)(r2 +0) ; é".as_bytes()),
            "r1 = *(u32 *)(r2 +0) ; é"
        );
        assert_eq!(excerpt(b""), "");
    }

    #[test]
    fn control_bytes_and_bad_utf8_are_escaped() {
        assert_eq!(
            excerpt(b"a\x1b]0;title\x07b\n\t\r\x7f\xff"),
            "a\\x1b]0;title\\x07b\\n\\t\\r\\x7f\\xff"
        );
        assert_eq!(
            excerpt("\u{9b}2J \u{202e}cba".as_bytes()),
            "\\u{9b}2J \\u{202e}cba"
        );
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary() {
        let long = "é".repeat(1000);
        let cut = excerpt(long.as_bytes());
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= EXCERPT_MAX + '…'.len_utf8(), "{}", cut.len());
        assert!(cut.len() >= EXCERPT_MAX - 1);
        assert!(long.starts_with(cut.trim_end_matches('…')));
        // Escapes count as written, and are never cut in half.
        let cut = excerpt(&[0x1b; 1000]);
        assert_eq!(cut, format!("{}…", "\\x1b".repeat(EXCERPT_MAX / 4)));
        let cut = excerpt(&[0xff; 1000]);
        assert_eq!(cut, format!("{}…", "\\xff".repeat(EXCERPT_MAX / 4)));
        // Text of exactly the limit is not cut.
        let exact = "a".repeat(EXCERPT_MAX);
        assert_eq!(excerpt(exact.as_bytes()), exact);
    }
}
