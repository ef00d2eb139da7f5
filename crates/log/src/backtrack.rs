//! Backtracking lines (`mark_precise:`, log level 2): the verifier walking back from an
//! instruction to find where a register or stack slot it needs to be precise was set.

/// The instruction a backtracking line stands at: the `N` of `mark_precise: ... before N: (op)
/// ...`; `None` for its other lines (`last_idx 11 first_idx 11 ...`).
pub fn precise_index(line: &[u8]) -> Option<u64> {
    // The first ` before `: found from its `b` (a search of one byte; a substring searcher's
    // start-up cost most of the time on these short lines, which JSON records ask of every
    // backtracking line).
    let at = memchr::memchr_iter(b'b', line)
        .find(|&b| b > 0 && line[b - 1] == b' ' && line[b..].starts_with(b"before "))?
        + 7;
    let rest = &line[at..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || !rest[digits..].starts_with(b": ") {
        return None;
    }
    // The digits' value, `None` past `u64` (as `str::parse` would say).
    rest[..digits].iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backtracking_lines_name_their_instruction() {
        assert_eq!(
            precise_index(b"mark_precise: frame0: regs=r1 stack= before 9: (b7) r4 = 0"),
            Some(9)
        );
        assert_eq!(
            precise_index(b"mark_precise: frame0: last_idx 11 first_idx 11 subseq_idx -1"),
            None
        );
        // The first ` before ` counts; a `b` elsewhere is passed over.
        assert_eq!(
            precise_index(
                b"mark_precise: frame1: regs=r0 stack=-8 before 12: (bf) r1 = r0 before 3: "
            ),
            Some(12)
        );
        assert_eq!(precise_index(b"before 9: (b7) r4 = 0"), None);
        assert_eq!(precise_index(b"x before"), None);
        assert_eq!(precise_index(b"x before 9 (b7)"), None);
        // Up to the largest `u64`, and none past it.
        assert_eq!(
            precise_index(b"x before 18446744073709551615: (b7)"),
            Some(u64::MAX)
        );
        assert_eq!(precise_index(b"x before 18446744073709551616: (b7)"), None);
        assert_eq!(precise_index(b"x before 99999999999999999999: (b7)"), None);
    }

    /// Every line of the fixtures' logs: the index of the first ` before N: `, as a substring
    /// search finds it.
    #[test]
    fn every_fixture_line_agrees_with_a_substring_search() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        let mut found = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read(entry.unwrap().path()).unwrap();
            for line in text.split(|&b| b == b'\n') {
                let expected = memchr::memmem::find(line, b" before ").and_then(|at| {
                    let rest = &line[at + 8..];
                    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
                    (digits > 0 && rest[digits..].starts_with(b": "))
                        .then(|| std::str::from_utf8(&rest[..digits]).ok()?.parse().ok())
                        .flatten()
                });
                assert_eq!(
                    precise_index(line),
                    expected,
                    "{}",
                    String::from_utf8_lossy(line)
                );
                found += usize::from(expected.is_some());
            }
        }
        assert!(found > 1000, "{found}");
    }
}
