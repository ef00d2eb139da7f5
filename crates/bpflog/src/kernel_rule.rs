//! The kernel's rule for when a source line goes before an instruction line (`verbose_linfo`,
//! kernel/bpf/log.c): the annotator inserts lines by it, and the selector checks a log's own
//! annotation lines against it.

use crate::Program;
use bpflog_log::{InsnHead, InsnLine};
use bpflog_object::{Flow, LineRow};

/// The kernel's choice of when to print a source line, as a state machine.
#[derive(Debug, Clone, Default)]
pub struct KernelRule {
    /// `(file_name_off, line)` of the record printed last.
    last: Option<(u32, u32)>,
}

impl KernelRule {
    /// Forgets the record printed last, as the kernel does when a verification pass starts.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The record the kernel prints before instruction `index`, if it prints one; remembered as
    /// printed.
    pub fn before_insn<'t, 'o>(
        &mut self,
        program: &'t Program<'o, '_>,
        index: u64,
    ) -> Option<&'t LineRow<'o>> {
        let at = self.row_before_insn(program, index)?;
        program.lines.rows().get(at)
    }

    /// [`before_insn`](Self::before_insn), as the record's position in the line table.
    pub(crate) fn row_before_insn(
        &mut self,
        program: &Program<'_, '_>,
        index: u64,
    ) -> Option<usize> {
        let (at, key) = Self::record(program, index)?;
        if self.last == Some(key) {
            return None;
        }
        self.last = Some(key);
        Some(at)
    }

    /// Whether [`before_insn`](Self::before_insn) would print a record before instruction
    /// `index` (and change what was printed last).
    pub(crate) fn prints_before(&self, program: &Program<'_, '_>, index: u64) -> bool {
        Self::record(program, index).is_some_and(|(_, key)| self.last != Some(key))
    }

    /// The position in the line table of the record covering instruction `index`, and what the
    /// kernel compares of it with the record printed last.
    fn record(program: &Program<'_, '_>, index: u64) -> Option<(usize, (u32, u32))> {
        let at = program.lines.find_index(u32::try_from(index).ok()?)?;
        let row = program.lines.rows().get(at)?;
        Some((at, (row.file_name_off, row.line)))
    }

    /// Whether [`after_insn`](Self::after_insn) does anything with the instruction line read
    /// as `head`: only a jump's (classes BPF_JMP and BPF_JMP32) that may resume a path.
    #[inline]
    pub(crate) fn reads_after(head: &InsnHead<'_>) -> bool {
        Self::is_jump(head.opcode) && head.may_resume()
    }

    /// Whether `opcode` is a jump's, the only instructions [`after_insn`](Self::after_insn)
    /// looks at.
    #[inline]
    fn is_jump(opcode: u8) -> bool {
        bpflog_object::opcode::is_jump_class(opcode)
    }

    /// What the instruction line `insn` says of a path whose text is gone.
    ///
    /// At log level 1 the kernel drops the text of a path once it ends and goes on with the one
    /// it put aside last (`pop_stack` rewinds the log to where `push_stack` was called): the
    /// instruction line of the branch is then followed by the state of the instruction it
    /// resumes at ([`InsnLine::resumed`]). The text is gone but
    /// not the source line printed last on it (`env->prev_linfo`), which decides whether the
    /// next is printed. A conditional jump resumed at its target dropped the path that went on
    /// from the next instruction: it is followed here as far as it runs straight (through `ja`
    /// and helper calls, until an `exit`, a branch, or a call to a kfunc or a function, which
    /// clang emits alike: a kfunc may never return, as `bpf_throw`), and the source lines the
    /// kernel printed along it are taken as printed. Further than that the path is not known,
    /// and the kernel may have cut it short anywhere it found a state it had seen (`N: safe`).
    pub fn after_insn(&mut self, program: &Program<'_, '_>, insn: &InsnLine<'_>) {
        if !insn.opcode.is_some_and(Self::is_jump) {
            return;
        }
        let (Some(resumed), Some(object)) = (insn.resumed(), program.object()) else {
            return;
        };
        let Ok(at) = u32::try_from(insn.index) else {
            return;
        };
        let flow = |index: u32| object.insn(&program.layout, index).map(|i| i.flow());
        match flow(at) {
            Some(Flow::Branch(off)) if i64::from(at) + 1 + off == resumed as i64 => {}
            _ => return,
        }
        let mut index = at + 1;
        // A path that runs straight is short; a bound keeps a loop of `ja` from running on.
        for _ in 0..4096 {
            if let Some(row) = program.lines.find(index) {
                self.last = Some((row.file_name_off, row.line));
            }
            let next = match flow(index) {
                Some(Flow::Next(width)) => u64::from(index) + width,
                Some(Flow::Jump(off)) => (i64::from(index) + 1 + off).max(0) as u64,
                _ => break,
            };
            match u32::try_from(next) {
                Ok(next) => index = next,
                Err(_) => break,
            }
        }
    }
}
