//! What a log says of the form of its kernel's source lines (`verbose_linfo`).
//!
//! Linux 6.12 prints `; text @ file:line` and prints a source line again only when the file or
//! the line changes (kernel/bpf/log.c). 5.10 and 6.1 print `; text` alone, before each
//! instruction whose line-info record differs from the record printed last: two records of
//! one line (other columns) print it twice (kernel/bpf/verifier.c). A log without its source
//! lines says which of the two its kernel printed only through other lines that changed
//! before 6.12: [`printed_by_a_bare_lines_kernel`].

use crate::Line;

/// The form of a kernel's source lines and when it prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourceLines {
    /// `; text @ file:line`, printed when the file or the line differs from the one printed
    /// last (Linux 6.12 and later).
    #[default]
    Located,
    /// `; text`, printed when the line-info record differs from the one printed last (Linux
    /// 5.10, 6.1).
    Bare,
}

/// Whether a kernel that prints [`SourceLines::Bare`] printed the log line `payload`: a
/// register state in a form 6.12 no longer prints (`inv` scalars of 5.10,
/// `imm=` of a pointer on 5.10 and 6.1: `R1=ctx(off=0,imm=0)`), or precision tracking
/// without the `mark_precise: ` prefix (`last_idx 34 first_idx 33`, `regs=1 stack=0 before
/// 33: ...`). `false` says nothing: most lines look alike on every kernel.
pub fn printed_by_a_bare_lines_kernel(payload: &[u8]) -> bool {
    if payload.starts_with(b"last_idx ") || payload.starts_with(b"regs=") {
        return true;
    }
    // A source line's text may hold anything.
    if payload.starts_with(b";") {
        return false;
    }
    memchr::memchr_iter(b'=', payload)
        .any(|at| payload[at + 1..].starts_with(b"inv") || payload[..at].ends_with(b",imm"))
}

/// The form of source lines the line `payload`, classified as `kind`, shows its kernel to
/// print, if it shows one: [`SourceLines::Located`] for a source line with ` @ file:line` and
/// for the liveness listing (`Live regs before insn:`, Linux 6.15 on),
/// [`SourceLines::Bare`] where [`printed_by_a_bare_lines_kernel`] says so.
pub fn source_lines_shown(kind: &Line<'_>, payload: &[u8]) -> Option<SourceLines> {
    match kind {
        Line::Annotation(a) if a.location.is_some() => Some(SourceLines::Located),
        Line::LiveRegsHeader => Some(SourceLines::Located),
        _ => printed_by_a_bare_lines_kernel(payload).then_some(SourceLines::Bare),
    }
}

/// The instruction whose source line the kernel prints (by its rule, as before an instruction
/// line) before the error line `payload`, when the error is one it prints a source line for
/// an instruction other than the one on the line before: `infinite loop detected at insn N`
/// (`is_state_visited`).
pub fn source_line_before_error(payload: &[u8]) -> Option<u64> {
    let digits = payload.strip_prefix(b"infinite loop detected at insn ")?;
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_states_and_precision_lines_tell_a_bare_lines_kernel() {
        for line in [
            "0: R1=ctx(id=0,off=0,imm=0) R10=fp0",
            "1: R0_w=inv2 R1=ctx(id=0,off=0,imm=0) R10=fp0",
            "0: R1=ctx(off=0,imm=0) R10=fp0",
            "5: (bf) r2 = r1                       ; R1_w=pkt(off=0,r=0,imm=0)",
            "from 4 to 6: R0=inv(id=0,umax_value=255) R10=fp0",
            "last_idx 34 first_idx 33",
            "regs=1 stack=0 before 33: (bf) r0 = r6",
        ] {
            assert!(printed_by_a_bare_lines_kernel(line.as_bytes()), "{line}");
        }
        for line in [
            "0: R1=ctx() R10=fp0",
            "5: (bf) r2 = r1                       ; R1=pkt(off=0,r=0)",
            "mark_precise: frame0: last_idx 34 first_idx 33 subseq_idx -1",
            "3: (b7) r0 = 1                        ; R0_w=1",
            "12: (85) call bpf_map_lookup_elem#1",
            "invalid access to map value, value_size=8 off=8 size=4",
            "; x = (struct s){.imm=0, .id=0}; @ a.c:3",
        ] {
            assert!(!printed_by_a_bare_lines_kernel(line.as_bytes()), "{line}");
        }
    }

    #[test]
    fn the_infinite_loop_error_names_the_instruction_of_its_source_line() {
        assert_eq!(
            source_line_before_error(b"infinite loop detected at insn 3"),
            Some(3)
        );
        for line in [
            &b"infinite loop detected at insn "[..],
            b"infinite loop detected at insn 3x",
            b"infinite loop detected at insn 99999999999999999999999",
            b"back-edge from insn 3 to 2",
        ] {
            assert_eq!(source_line_before_error(line), None);
        }
    }
}
