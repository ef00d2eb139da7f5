//! Colors, decided once by the caller and handed to the printer as data.

use crate::escape::escape_controls;
use owo_colors::Style;
use std::io::{self, Write};

/// The styles of each element of annotated output; all plain when color is off.
#[derive(Debug, Clone, Copy, Default)]
pub struct Palette {
    /// The `; ` and ` @ ` punctuation of annotation lines.
    pub punct: Style,
    /// The source text of annotation lines.
    pub source: Style,
    /// Source lines shown around the annotated one (`--context`).
    pub context: Style,
    /// `file:line[:col]` of annotation lines and the diagnostic.
    pub location: Style,
    /// Function names.
    pub function: Style,
    /// Call sites of inlined functions.
    pub inline: Style,
    /// The verifier's error message(s) at the end of a rejected log.
    pub error: Style,
    /// The caret under the failing column.
    pub caret: Style,
    /// The diagnostic's gutter (`-->`, ` | `, `= note:`).
    pub gutter: Style,
}

impl Palette {
    /// The palette for `color` on or off.
    pub fn new(color: bool) -> Self {
        if !color {
            return Palette::default();
        }
        Palette {
            punct: Style::new().dimmed(),
            source: Style::new().green(),
            context: Style::new().dimmed(),
            location: Style::new().cyan(),
            function: Style::new().yellow(),
            inline: Style::new().magenta(),
            error: Style::new().red().bold(),
            caret: Style::new().red().bold(),
            gutter: Style::new().blue().bold(),
        }
    }
}

/// Writes `bytes` in `style` (raw bytes: the log need not be UTF-8).
pub(crate) fn write_styled(
    out: &mut (impl Write + ?Sized),
    style: Style,
    bytes: &[u8],
) -> io::Result<()> {
    if style.is_plain() || bytes.is_empty() {
        return out.write_all(bytes);
    }
    write!(out, "{}", style.prefix_formatter())?;
    out.write_all(bytes)?;
    write!(out, "{}", style.suffix_formatter())
}

/// Writes `text` from the object, its control bytes escaped, in `style`.
pub(crate) fn write_shown(
    out: &mut (impl Write + ?Sized),
    style: Style,
    text: &[u8],
) -> io::Result<()> {
    write_styled(out, style, &escape_controls(text))
}

/// Writes `file:line`, or `file:line:col` (column 0 is left out), in `style`; the file name
/// comes from the object, its control bytes escaped ([`escape_controls`]).
pub(crate) fn write_location(
    out: &mut (impl Write + ?Sized),
    style: Style,
    file: &[u8],
    line: u32,
    col: u32,
) -> io::Result<()> {
    if !style.is_plain() {
        write!(out, "{}", style.prefix_formatter())?;
    }
    out.write_all(&escape_controls(file))?;
    write_number(out, b":", line)?;
    if col > 0 {
        write_number(out, b":", col)?;
    }
    if !style.is_plain() {
        write!(out, "{}", style.suffix_formatter())?;
    }
    Ok(())
}

/// `prefix` and `n` in decimal, in one write (`write!` goes through the formatter, piece by
/// piece: it showed in profiles of logs that get a source line every few instructions, and in
/// JSON records). Inlined: each call's prefix is a constant, copied without a call.
#[inline(always)]
pub(crate) fn write_number(
    out: &mut (impl Write + ?Sized),
    prefix: &[u8],
    n: impl Into<u64>,
) -> io::Result<()> {
    // Two digits a step: numbers are written for every JSON record, most of them of 4 to 7
    // digits.
    const PAIRS: [u8; 200] = {
        let mut pairs = [0u8; 200];
        let mut k = 0;
        while k < 100 {
            pairs[2 * k] = b'0' + (k / 10) as u8;
            pairs[2 * k + 1] = b'0' + (k % 10) as u8;
            k += 1;
        }
        pairs
    };
    let mut n = n.into();
    let mut buf = [0u8; 40];
    let mut at = buf.len();
    while n >= 100 {
        let pair = usize::try_from(n % 100).unwrap_or(0) * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = usize::try_from(n).unwrap_or(0) * 2;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    let Some(start) = at.checked_sub(prefix.len()) else {
        out.write_all(prefix)?;
        return out.write_all(&buf[at..]);
    };
    buf[start..at].copy_from_slice(prefix);
    out.write_all(&buf[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [
            0,
            7,
            9,
            10,
            11,
            99,
            100,
            101,
            4_096,
            65_535,
            999_999,
            1_000_000,
            12_345_678,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            write_number(&mut out, b":", n).unwrap();
            assert_eq!(out, format!(":{n}").into_bytes());
            out.clear();
            let long = [b'x'; 30];
            write_number(&mut out, &long, n).unwrap();
            assert_eq!(out, format!("{}{n}", "x".repeat(30)).into_bytes());
        }
    }

    #[test]
    fn locations_leave_column_0_out() {
        let mut out = Vec::new();
        write_location(&mut out, Style::new(), b"a.c", 3, 0).unwrap();
        out.push(b' ');
        write_location(&mut out, Style::new(), b"a.c", 3, 7).unwrap();
        assert_eq!(out, b"a.c:3 a.c:3:7");
    }
}
