//! Instruction lines found to fit a program, remembered across logs.
//!
//! The fit check ([`crate::select`]) compares the first line of each instruction in a log with
//! the program's instruction there; later lines of the log are taken on their opcode. A file of
//! many logs of one program (a CI job's, a loader's retries) would pay for the first lines of
//! every log again. The check's answer depends on nothing but the program, the index, the
//! opcode and the instruction text, so [`CheckedInsns`] keeps, per program and per index, the
//! opcode and text of a line that fitted: a later line with the same ones fits too, without
//! comparing again. A later line is matched by the bytes that settle its text (its key, up to
//! the first ` ; `), without the text being searched for. Held up to a budget of bytes.

use bpflog_log::{InsnHead, InsnLine};
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Bytes of opcodes and texts held per program (beyond, lines are compared each log).
const BUDGET: usize = 8 << 20;

/// A program's instruction lines that fitted it, across logs ([`FittedLines`]). Each log's
/// selector takes them for as long as it reads ([`CheckedInsns::lend`]).
#[derive(Default)]
pub(crate) struct CheckedInsns(Mutex<Option<FittedLines>>);

/// The line that fitted an instruction.
#[derive(Debug, Clone, Copy)]
struct Fitted {
    opcode: u8,
    /// Where its bytes start in [`FittedLines::bytes`]: the line's key
    /// ([`InsnLine::text_key`]), which starts with the text, or the text alone.
    start: u32,
    /// The text's length.
    text: u16,
    /// The bytes' length (the key's, or the text's when the line had no key).
    len: u32,
}

/// Per instruction, the line that fitted it, up to [`BUDGET`] bytes.
#[derive(Debug, Default)]
pub(crate) struct FittedLines {
    /// Per instruction index (as far as the logs went), the line that fitted it. Held in place
    /// (16 bytes an instruction): the lookup of every instruction line of a log, one load.
    by_insn: Vec<Option<Fitted>>,
    bytes: Vec<u8>,
}

impl FittedLines {
    /// The line that fitted instruction `index`, if it had `opcode`: its text, and its key
    /// when it had one.
    #[inline]
    fn get(&self, index: u32, opcode: u8) -> Option<(&[u8], Option<&[u8]>)> {
        let f = (*self.by_insn.get(index as usize)?)?;
        if f.opcode != opcode {
            return None;
        }
        let bytes = self.bytes.get(f.start as usize..)?.get(..f.len as usize)?;
        let text = bytes.get(..usize::from(f.text))?;
        Some((text, (text.len() < bytes.len()).then_some(bytes)))
    }

    /// Holds `key` (starting with a text of `text` bytes) as the line that fitted instruction
    /// `index` of a program of `len` instructions, with `opcode`: unless one is held already,
    /// the index is past the program, or the budget is spent.
    fn hold(&mut self, index: u32, len: u32, opcode: u8, text: u16, key: &[u8]) {
        let at = index as usize;
        if index >= len || self.by_insn.get(at).is_some_and(Option::is_some) {
            return;
        }
        let (Ok(start), Ok(size)) = (u32::try_from(self.bytes.len()), u32::try_from(key.len()))
        else {
            return;
        };
        if self.bytes.len() + key.len() > BUDGET {
            return;
        }
        self.bytes.extend_from_slice(key);
        if self.by_insn.len() <= at {
            self.by_insn.resize(at + 1, None);
        }
        self.by_insn[at] = Some(Fitted {
            opcode,
            start,
            text,
            len: size,
        });
    }

    /// How many bytes of lines are held.
    fn len(&self) -> usize {
        self.bytes.len()
    }
}

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
            lines: FittedLines::default(),
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
    lines: FittedLines,
}

impl Lent<'_> {
    #[inline]
    fn taken(&mut self) -> &mut FittedLines {
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

    /// What was remembered for instruction `index` with `opcode`: its text, and the key that
    /// settles it ([`InsnLine::text_key`]) when the line had one.
    #[inline]
    fn remembered(&mut self, index: u64, opcode: u8) -> Option<(&[u8], Option<&[u8]>)> {
        let index = u32::try_from(index).ok()?;
        self.taken().get(index, opcode)
    }

    /// Whether a line of instruction `index` with `opcode` and `text` fitted before.
    pub(crate) fn fitted(&mut self, index: u64, opcode: u8, text: &[u8]) -> bool {
        self.remembered(index, opcode)
            .is_some_and(|(t, _)| t == text)
    }

    /// [`fitted`](Self::fitted) for the head of a line: most lines start with the key
    /// remembered, the others have their text compared.
    #[inline]
    pub(crate) fn fitted_head(&mut self, head: &InsnHead<'_>) -> bool {
        self.remembered(head.index, head.opcode)
            .is_some_and(|(text, key)| {
                key.is_some_and(|k| head.starts_with(k)) || head.text_is(text)
            })
    }

    /// Remembers that `line`, of instruction `index` (of a program of `len` instructions) with
    /// `opcode` and `text`, fits, if none was remembered for the instruction.
    pub(crate) fn fits(
        &mut self,
        index: u64,
        len: u32,
        opcode: u8,
        line: &InsnLine<'_>,
        text: &[u8],
    ) {
        let key = line.text_key().unwrap_or(text);
        if let (Ok(index), Ok(n)) = (u32::try_from(index), u16::try_from(text.len())) {
            self.taken().hold(index, len, opcode, n, key);
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
            *home = Some(std::mem::take(&mut self.lines));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::{Line, classify, insn_head};

    /// Remembers `line` (`N: (xx) text`) as fitting a program of 10 instructions.
    fn fits(lent: &mut Lent<'_>, line: &[u8]) {
        let Line::Insn(insn) = classify(line) else {
            panic!("not an instruction line");
        };
        lent.fits(insn.index, 10, insn.opcode.unwrap(), &insn, insn.text());
    }

    /// Whether `line` fitted before, read as a head and as a classified line.
    fn fitted(lent: &mut Lent<'_>, line: &[u8]) -> bool {
        let head = insn_head(line).unwrap();
        let Line::Insn(insn) = classify(line) else {
            panic!("not an instruction line");
        };
        let by_text = lent.fitted(insn.index, insn.opcode.unwrap(), insn.text());
        assert_eq!(
            lent.fitted_head(&head),
            by_text,
            "{}",
            String::from_utf8_lossy(line)
        );
        by_text
    }

    #[test]
    fn lines_fitted_before_are_those_of_the_same_opcode_and_text() {
        let home = CheckedInsns::default();
        let mut lent = home.lend();
        assert!(!fitted(&mut lent, b"3: (b7) r0 = 0   ; R0=0"));
        fits(&mut lent, b"3: (b7) r0 = 0   ; R0=0");
        fits(&mut lent, b"4: (95) exit");
        fits(&mut lent, b"5: (18) r1 = map[id:7][0]+0 ; R1=map_ptr()");
        fits(&mut lent, b"10: (95) exit");
        // The same text: with the key, another state, another padding, no state, a path resumed.
        assert!(fitted(&mut lent, b"3: (b7) r0 = 0   ; R0=1"));
        assert!(fitted(&mut lent, b"3: (b7) r0 = 0 ; R0=1"));
        assert!(fitted(&mut lent, b"3: (b7) r0 = 0"));
        assert!(fitted(&mut lent, b"3: (b7) r0 = 0 2: R0=0"));
        assert!(fitted(&mut lent, b"4: (95) exit   ; R0=1"));
        assert!(fitted(
            &mut lent,
            b"5: (18) r1 = map[id:7][0]+0 ; R1=map_ptr(ks=4)"
        ));
        // Another opcode, another text, another instruction, past the program.
        assert!(!fitted(&mut lent, b"3: (bf) r0 = 0   ; R0=0"));
        assert!(!fitted(&mut lent, b"3: (b7) r0 = 1   ; R0=1"));
        assert!(!fitted(&mut lent, b"3: (b7) r0 = 00   ; R0=0"));
        assert!(!fitted(&mut lent, b"6: (95) exit"));
        assert!(!fitted(&mut lent, b"10: (95) exit"));
    }

    #[test]
    fn lines_are_held_once_within_the_program_and_the_budget() {
        let mut lines = FittedLines::default();
        lines.hold(3, 8, 0xb7, 6, b"r0 = 0 ; ");
        lines.hold(3, 8, 0xbf, 6, b"r0 = r1");
        lines.hold(8, 8, 0x95, 4, b"exit");
        assert_eq!(
            lines.get(3, 0xb7),
            Some((&b"r0 = 0"[..], Some(&b"r0 = 0 ; "[..])))
        );
        assert_eq!(lines.get(3, 0xbf), None, "the first line held stays");
        assert_eq!(lines.get(8, 0x95), None, "past the program");
        assert_eq!(lines.get(2, 0xb7), None);
        // The budget: a line that would go over it is not held, a smaller one still is.
        let big = vec![b'x'; BUDGET - lines.len()];
        lines.hold(5, 8, 0x95, 4, &big[..4]);
        lines.hold(6, 8, 0x95, 4, &[&big[..], b"!"].concat());
        lines.hold(7, 8, 0x95, 4, &big[4..]);
        assert_eq!(lines.get(5, 0x95), Some((&b"xxxx"[..], None)));
        assert_eq!(lines.get(6, 0x95), None);
        assert!(lines.get(7, 0x95).is_some());
        assert_eq!(lines.len(), BUDGET);
    }

    #[test]
    fn lines_are_lent_to_one_reader_at_a_time_and_the_most_kept() {
        let home = CheckedInsns::default();
        let mut first = home.lend();
        fits(&mut first, b"3: (b7) r0 = 0   ; R0=0");
        fits(&mut first, b"4: (95) exit");
        // Read at the same time, a second reader starts empty.
        let mut second = home.lend();
        assert!(!fitted(&mut second, b"3: (b7) r0 = 0   ; R0=0"));
        fits(&mut second, b"5: (95) exit");
        drop(first);
        // The second gives back less than the first did: the first's are kept.
        drop(second);
        let mut third = home.lend();
        assert!(fitted(&mut third, b"4: (95) exit"));
        assert!(!fitted(&mut third, b"5: (95) exit"));
    }
}
