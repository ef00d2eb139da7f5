//! Backtracking lines (`mark_precise:`, log level 2): the verifier walking back from an
//! instruction to find where a register or stack slot it needs to be precise was set.

/// The instruction a backtracking line stands at: the `N` of `mark_precise: ... before N: (op)
/// ...`; `None` for its other lines (`last_idx 11 first_idx 11 ...`).
pub fn precise_index(line: &[u8]) -> Option<u64> {
    static BEFORE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b" before "));
    let at = BEFORE.find(line)? + 8;
    let rest = &line[at..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || !rest[digits..].starts_with(b": ") {
        return None;
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
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
    }
}
