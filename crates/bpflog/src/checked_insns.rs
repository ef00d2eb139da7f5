//! Instruction lines found to fit a program, remembered across the logs of a job.
//!
//! The fit check ([`crate::select`](mod@crate::select)) compares the first line of each instruction
//! in a log with the program's instruction there; later lines of the log are taken on their opcode.
//! A file of many logs of one program (a CI job's, a loader's retries) would pay for the first
//! lines of every log again. The check's answer depends on nothing but the program, the index, the
//! opcode and the instruction text, so [`FittedLines`] keeps, per index, the opcode and text of a
//! line that fitted the program: a later line with the same ones fits too, without comparing again.
//! A later line is matched by the bytes that settle its text (its key, up to the first ` ; `),
//! without the text being searched for. Held up to a budget of bytes.
//!
//! The job that reads the logs owns them ([`Fitted`], one per program it reads logs of): each
//! log's selector takes its candidates' ([`crate::Selector::remembering`]) and gives them back
//! when the log ends ([`crate::Selector::forget`]). Logs read at once (the parts of a parallel
//! pass) each start from their own, and their joining keeps the larger.

use bpflog_log::{InsnHead, InsnLine};

/// Bytes of opcodes and texts held per program (beyond, lines are compared each log).
const BUDGET: usize = 8 << 20;

/// The line that fitted an instruction.
#[derive(Debug, Clone, Copy)]
struct Held {
    opcode: u8,
    /// Where its bytes start in [`FittedLines::bytes`]: the line's key
    /// ([`InsnLine::text_key`]), which starts with the text, or the text alone.
    start: u32,
    /// The text's length.
    text: u16,
    /// The bytes' length (the key's, or the text's when the line had no key).
    len: u32,
}

/// One program's instruction lines that fitted it in the logs read so far, up to [`BUDGET`]
/// bytes.
#[derive(Debug, Default)]
pub(crate) struct FittedLines {
    /// Per instruction index (as far as the logs went), the line that fitted it. Held in place
    /// (16 bytes an instruction): the lookup of every instruction line of a log, one load.
    by_insn: Vec<Option<Held>>,
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
        self.by_insn[at] = Some(Held {
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

    /// What was remembered for instruction `index` with `opcode`: its text, and the key that
    /// settles it ([`InsnLine::text_key`]) when the line had one.
    #[inline]
    fn remembered(&self, index: u64, opcode: u8) -> Option<(&[u8], Option<&[u8]>)> {
        self.get(u32::try_from(index).ok()?, opcode)
    }

    /// Whether a line of instruction `index` with `opcode` and `text` fitted before.
    pub(crate) fn fitted(&self, index: u64, opcode: u8, text: &[u8]) -> bool {
        self.remembered(index, opcode)
            .is_some_and(|(t, _)| t == text)
    }

    /// [`fitted`](Self::fitted) for the head of a line: most lines start with the key
    /// remembered, the others have their text compared.
    #[inline]
    pub(crate) fn fitted_head(&self, head: &InsnHead<'_>) -> bool {
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
            self.hold(index, len, opcode, n, key);
        }
    }

    /// These lines or `other`'s, whichever hold more: what two readers of logs of the same
    /// program at once (the parts of a parallel pass) leave.
    pub(crate) fn keep_larger(&mut self, other: FittedLines) {
        if other.len() > self.len() {
            *self = other;
        }
    }
}

/// The lines that fitted each program a job reads logs of, across its logs: one
/// [`FittedLines`] per program, in the order of the job's programs.
#[derive(Debug, Default)]
pub(crate) struct Fitted(Vec<FittedLines>);

impl Fitted {
    /// Nothing remembered yet for any of `programs` programs.
    pub(crate) fn new(programs: usize) -> Self {
        Fitted((0..programs).map(|_| FittedLines::default()).collect())
    }

    /// The lines of the programs at `candidates`, taken for a log's selector (empty for a
    /// position the job has no program at).
    pub(crate) fn take(&mut self, candidates: &[usize]) -> Vec<FittedLines> {
        (candidates.iter())
            .map(|&i| self.0.get_mut(i).map(std::mem::take).unwrap_or_default())
            .collect()
    }

    /// The lines a log's selector [took](Self::take) for the programs at `candidates`, given
    /// back with what the log added.
    pub(crate) fn give_back(&mut self, candidates: &[usize], lines: Vec<FittedLines>) {
        for (&i, lines) in candidates.iter().zip(lines) {
            if let Some(home) = self.0.get_mut(i) {
                home.keep_larger(lines);
            }
        }
    }

    /// Each program's lines, these or `other`'s, whichever hold more (see
    /// [`FittedLines::keep_larger`]).
    pub(crate) fn join(&mut self, other: Fitted) {
        for (home, lines) in self.0.iter_mut().zip(other.0) {
            home.keep_larger(lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::{Line, classify, insn_head};

    /// Remembers `line` (`N: (xx) text`) as fitting a program of 10 instructions.
    fn fits(lines: &mut FittedLines, line: &[u8]) {
        let Line::Insn(insn) = classify(line) else {
            panic!("not an instruction line");
        };
        lines.fits(insn.index, 10, insn.opcode.unwrap(), &insn, insn.text());
    }

    /// Whether `line` fitted before, read as a head and as a classified line.
    fn fitted(lines: &FittedLines, line: &[u8]) -> bool {
        let head = insn_head(line).unwrap();
        let Line::Insn(insn) = classify(line) else {
            panic!("not an instruction line");
        };
        let by_text = lines.fitted(insn.index, insn.opcode.unwrap(), insn.text());
        assert_eq!(
            lines.fitted_head(&head),
            by_text,
            "{}",
            String::from_utf8_lossy(line)
        );
        by_text
    }

    #[test]
    fn lines_fitted_before_are_those_of_the_same_opcode_and_text() {
        let mut lines = FittedLines::default();
        assert!(!fitted(&lines, b"3: (b7) r0 = 0   ; R0=0"));
        fits(&mut lines, b"3: (b7) r0 = 0   ; R0=0");
        fits(&mut lines, b"4: (95) exit");
        fits(&mut lines, b"5: (18) r1 = map[id:7][0]+0 ; R1=map_ptr()");
        fits(&mut lines, b"10: (95) exit");
        // The same text: with the key, another state, another padding, no state, a path resumed.
        assert!(fitted(&lines, b"3: (b7) r0 = 0   ; R0=1"));
        assert!(fitted(&lines, b"3: (b7) r0 = 0 ; R0=1"));
        assert!(fitted(&lines, b"3: (b7) r0 = 0"));
        assert!(fitted(&lines, b"3: (b7) r0 = 0 2: R0=0"));
        assert!(fitted(&lines, b"4: (95) exit   ; R0=1"));
        assert!(fitted(
            &lines,
            b"5: (18) r1 = map[id:7][0]+0 ; R1=map_ptr(ks=4)"
        ));
        // Another opcode, another text, another instruction, past the program.
        assert!(!fitted(&lines, b"3: (bf) r0 = 0   ; R0=0"));
        assert!(!fitted(&lines, b"3: (b7) r0 = 1   ; R0=1"));
        assert!(!fitted(&lines, b"3: (b7) r0 = 00   ; R0=0"));
        assert!(!fitted(&lines, b"6: (95) exit"));
        assert!(!fitted(&lines, b"10: (95) exit"));
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
    fn a_job_lends_each_program_s_lines_to_a_log_and_keeps_the_larger_of_two() {
        let mut job = Fitted::new(3);
        // A log of candidates 0 and 2 adds to theirs; they are given back.
        let mut taken = job.take(&[0, 2]);
        fits(&mut taken[0], b"3: (b7) r0 = 0   ; R0=0");
        fits(&mut taken[1], b"4: (95) exit");
        job.give_back(&[0, 2], taken);
        let again = job.take(&[2, 0, 1, 7]);
        assert!(fitted(&again[0], b"4: (95) exit"));
        assert!(fitted(&again[1], b"3: (b7) r0 = 0"));
        assert!(!fitted(&again[1], b"4: (95) exit"));
        assert_eq!(again[2].len(), 0);
        assert_eq!(again[3].len(), 0, "no program there");
        // Taken, the lines are not there for another log read at the same time.
        assert_eq!(job.take(&[2])[0].len(), 0);
        job.give_back(&[2, 0, 1, 7], again);
        // Two passes read at once: each program keeps the larger of the two.
        let mut other = Fitted::new(3);
        let mut more = other.take(&[0]);
        for line in [&b"5: (95) exit"[..], b"6: (95) exit", b"7: (95) exit"] {
            fits(&mut more[0], line);
        }
        other.give_back(&[0], more);
        job.join(other);
        let joined = job.take(&[0, 2]);
        assert!(fitted(&joined[0], b"6: (95) exit"));
        assert!(!fitted(&joined[0], b"3: (b7) r0 = 0"));
        assert!(
            fitted(&joined[1], b"4: (95) exit"),
            "the first pass's, the larger"
        );
    }
}
