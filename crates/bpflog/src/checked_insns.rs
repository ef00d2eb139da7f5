//! Instruction lines found to fit a program, remembered across logs.
//!
//! The fit check ([`crate::select`]) compares the first line of each instruction in a log with
//! the program's instruction there; later lines of the log are taken on their opcode. A file of
//! many logs of one program (a CI job's, a loader's retries) would pay for the first lines of
//! every log again. The check's answer depends on nothing but the program, the index, the
//! opcode and the instruction text, so [`CheckedInsns`] keeps, per program and per index, the
//! opcode and text of a line that fitted: a later line with the same ones fits too, without
//! comparing again. Held up to a budget of bytes, like [`InsnBytes`].

use crate::insn_bytes::InsnBytes;
use bpflog_log::InsnHead;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Bytes of opcodes and texts held per program (beyond, lines are compared each log).
const BUDGET: usize = 8 << 20;

/// A program's instruction lines that fitted it, across logs: each instruction's opcode, then
/// its text. Each log's selector takes them for as long as it reads
/// ([`CheckedInsns::lend`]).
#[derive(Default)]
pub(crate) struct CheckedInsns(Mutex<Option<InsnBytes>>);

impl fmt::Debug for CheckedInsns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CheckedInsns")
    }
}

impl CheckedInsns {
    /// The lines, lent to a selector reading a log of the program: taken from here when first
    /// needed, given back when the selector is dropped.
    pub(crate) fn lend(&self) -> Lent<'_> {
        Lent {
            home: self,
            taken: false,
            lines: InsnBytes::with_budget(BUDGET),
        }
    }
}

/// The lines of [`CheckedInsns`] lent to a selector.
pub(crate) struct Lent<'p> {
    home: &'p CheckedInsns,
    /// Whether `lines` were taken: at the first instruction looked up. Several logs read at
    /// once (the chunks of a parallel pass) do not share: one takes them, the others start
    /// empty.
    taken: bool,
    lines: InsnBytes,
}

impl Lent<'_> {
    #[inline]
    fn taken(&mut self) -> &mut InsnBytes {
        if !self.taken {
            self.take();
        }
        &mut self.lines
    }

    #[cold]
    fn take(&mut self) {
        let mut home = self.home.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lines) = home.take() {
            self.lines = lines;
        }
        self.taken = true;
    }

    /// Whether a line of instruction `index` with opcode `opcode` and text `text_is` fitted
    /// before.
    #[inline]
    pub(crate) fn fitted(
        &mut self,
        index: u64,
        opcode: u8,
        text_is: impl FnOnce(&[u8]) -> bool,
    ) -> bool {
        let Ok(index) = u32::try_from(index) else {
            return false;
        };
        match self.taken().get(index) {
            Some([op, text @ ..]) => *op == opcode && text_is(text),
            _ => false,
        }
    }

    /// [`fitted`](Self::fitted) for the head of a line.
    #[inline]
    pub(crate) fn fitted_head(&mut self, head: &InsnHead<'_>) -> bool {
        self.fitted(head.index, head.opcode, |text| head.text_is(text))
    }

    /// Remembers that a line of instruction `index` (of a program of `len` instructions) with
    /// `opcode` and `text` fits, if none was remembered for it.
    pub(crate) fn fits(&mut self, index: u64, len: u32, opcode: u8, text: &[u8]) {
        if let Ok(index) = u32::try_from(index) {
            self.taken().hold(index, len, &[&[opcode], text]);
        }
    }
}

impl Drop for Lent<'_> {
    /// Gives the lines back, unless another reader gave back more.
    fn drop(&mut self) {
        if !self.taken {
            return;
        }
        let mut home = self.home.0.lock().unwrap_or_else(PoisonError::into_inner);
        if home.as_ref().is_none_or(|h| h.len() < self.lines.len()) {
            *home = Some(std::mem::replace(
                &mut self.lines,
                InsnBytes::with_budget(0),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_lent_to_one_reader_at_a_time_and_the_most_kept() {
        let home = CheckedInsns::default();
        let text_is = |want: &'static [u8]| move |text: &[u8]| text == want;
        let mut first = home.lend();
        assert!(!first.fitted(3, 0xb7, text_is(b"r0 = 0")));
        first.fits(3, 10, 0xb7, b"r0 = 0");
        first.fits(4, 10, 0x95, b"exit");
        first.fits(10, 10, 0x95, b"exit");
        assert!(first.fitted(3, 0xb7, text_is(b"r0 = 0")));
        // Another opcode, another text, past the program: not fitted.
        assert!(!first.fitted(3, 0xbf, text_is(b"r0 = 0")));
        assert!(!first.fitted(3, 0xb7, text_is(b"r0 = 1")));
        assert!(!first.fitted(10, 0x95, text_is(b"exit")));
        // Read at the same time, a second reader starts empty.
        let mut second = home.lend();
        assert!(!second.fitted(3, 0xb7, text_is(b"r0 = 0")));
        second.fits(5, 10, 0x95, b"exit");
        drop(first);
        // The second gives back less than the first did: the first's are kept.
        drop(second);
        let mut third = home.lend();
        assert!(third.fitted(4, 0x95, text_is(b"exit")));
        assert!(!third.fitted(5, 0x95, text_is(b"exit")));
    }
}
