//! Classify the lines of a Linux BPF verifier log.
//!
//! The kernel's log format drifts from release to release, so this classifier is tolerant: it
//! recognises the line kinds of 5.x–6.18 logs (see [`Line`]) and calls everything else
//! [`Line::Other`], to be passed through unchanged. It works on bytes, never validates UTF-8, and
//! allocates nothing: a [`Line`] borrows from the input line.
//!
//! ```
//! use bpflog_log::{classify, Line};
//! assert!(matches!(classify(b"12: (61) r1 = *(u32 *)(r1 +4)"), Line::Insn(i) if i.index == 12));
//! assert!(matches!(classify(b"from 12 to 15: R0=0"), Line::FromTo { from: 12, to: 15 }));
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod backtrack;
mod classify;
mod dialect;
mod insn;
mod line_ends;
mod lines;
mod read_ahead;
pub mod state;

pub use backtrack::precise_index;
pub use classify::{
    Annotation, InsnHead, InsnLine, Line, classify, global_function_name, insn_head, is_detail,
    is_loader, is_stats, is_summary,
};
pub use dialect::{
    SourceLines, printed_by_a_bare_lines_kernel, source_line_before_error, source_lines_shown,
};
pub use insn::{Callee, Mem, Op, Operand, PrintedInsn, Reg};
pub use lines::{HeldLines, LineReader, LineTooLong, Lines, LogInput, MAX_LINE};
pub use read_ahead::{PAUSE, ReadAhead};

/// Splits a line read with its terminator into the content and the terminator (`\n`, `\r\n` or
/// nothing at the end of input).
#[inline]
pub fn split_newline(line: &[u8]) -> (&[u8], &[u8]) {
    let content_len = match line {
        [rest @ .., b'\r', b'\n'] => rest.len(),
        [rest @ .., b'\n'] => rest.len(),
        _ => line.len(),
    };
    line.split_at(content_len)
}
