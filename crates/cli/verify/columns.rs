//! Tables of text cells as `verify` prints them: aligned columns under a dashed line, as
//! veristat's table looks, or CSV, for the statistics (`table`) and the comparison (`compare`)
//! alike. Terminal controls in cells (file and program names come from the input) are escaped
//! ([`bpflog::escape_controls`]), as `profile --format csv` escapes them.

use std::io::{self, Write};

/// Writes `headers` and `rows` in aligned columns two spaces apart, a dashed line under the
/// headers; column `k` is aligned to the left when `left(k)`, to the right otherwise. Terminal
/// controls in cells are escaped.
pub(crate) fn aligned(
    out: &mut impl Write,
    headers: &[&str],
    rows: &[Vec<String>],
    left: impl Fn(usize) -> bool,
) -> io::Result<()> {
    let shown: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| bpflog::escape_controls_str(c).into_owned())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(k, header)| {
            shown
                .iter()
                .filter_map(|row| row.get(k))
                .map(|c| c.chars().count())
                .chain([header.chars().count()])
                .max()
                .unwrap_or_default()
        })
        .collect();
    let mut line = |texts: &mut dyn Iterator<Item = &str>| -> io::Result<()> {
        let mut text = String::new();
        for (k, t) in texts.enumerate() {
            if k > 0 {
                text.push_str("  ");
            }
            let pad = widths
                .get(k)
                .copied()
                .unwrap_or_default()
                .saturating_sub(t.chars().count());
            if left(k) {
                text.push_str(t);
                text.extend(std::iter::repeat_n(' ', pad));
            } else {
                text.extend(std::iter::repeat_n(' ', pad));
                text.push_str(t);
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(&mut headers.iter().copied())?;
    let dashes: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    line(&mut dashes.iter().map(String::as_str))?;
    for row in &shown {
        line(&mut row.iter().map(String::as_str))?;
    }
    Ok(())
}

/// Writes `headers` and `rows` as CSV (a header record, then one record per row, quoted where
/// RFC 4180 says). Terminal controls in cells are escaped.
pub(crate) fn csv<R: AsRef<[String]>>(
    out: &mut impl Write,
    headers: &[&str],
    rows: impl IntoIterator<Item = R>,
) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(headers)?;
    for row in rows {
        let row = row.as_ref();
        writer.write_record(row.iter().map(|c| bpflog::escape_controls(c.as_bytes())))?;
    }
    writer.flush()
}
