//! The kernel's rule for when a source line goes before an instruction line (`verbose_linfo`,
//! kernel/bpf/log.c; kernel/bpf/verifier.c in 5.10 and 6.1): the annotator inserts lines by it, and
//! the selector checks a log's own annotation lines against it. Which record the kernel
//! compares with the one printed last depends on the kernel ([`SourceLines`]).

use crate::Program;
use bpflog_log::{InsnHead, InsnLine, SourceLines};
use bpflog_object::opcode::OP_CALL;
use bpflog_object::{BpfObject, Flow, RelocSymbol};
use std::collections::HashMap;

/// The most instructions of a dropped path followed: a path that runs on is short, and a bound
/// keeps the walk of one line small whatever the object.
const MAX_DROPPED: usize = 4096;

/// The kernel's choice of when to print a source line, as a state machine.
#[derive(Debug, Clone, Default)]
pub struct KernelRule {
    /// What the kernel compares of the record printed last: `(file_name_off, line)`
    /// ([`SourceLines::Located`]), or `(0, position)` of the record in the line table
    /// ([`SourceLines::Bare`]: the kernel compares the record itself).
    last: Option<(u32, u32)>,
    /// The kernel's form of source lines, which says what it compares.
    form: SourceLines,
    /// The instructions of the dropped paths followed in this verification pass
    /// ([`after_insn`](Self::after_insn)), each with the number of the last walk that went
    /// through it.
    dropped: HashMap<u32, u64>,
    /// How many dropped paths were followed in this verification pass.
    walks: u64,
}

impl KernelRule {
    /// The rule of a kernel that prints source lines in `form`, at the start of a log.
    pub fn new(form: SourceLines) -> Self {
        KernelRule {
            form,
            ..KernelRule::default()
        }
    }

    /// The form of source lines this rule is a kernel's.
    pub fn form(&self) -> SourceLines {
        self.form
    }

    /// Forgets the record printed last, as the kernel does when a verification pass starts, and
    /// the paths of the pass before.
    pub fn reset(&mut self) {
        self.last = None;
        self.dropped.clear();
        self.walks = 0;
    }

    /// The position in the line table of the record the kernel prints before instruction
    /// `index`, if it prints one; remembered as printed.
    pub(crate) fn row_before_insn(
        &mut self,
        program: &Program<'_, '_>,
        index: u64,
    ) -> Option<usize> {
        let (at, key) = self.record(program, index)?;
        if self.last == Some(key) {
            return None;
        }
        self.last = Some(key);
        Some(at)
    }

    /// Whether [`row_before_insn`](Self::row_before_insn) would print a record before instruction
    /// `index` (and change what was printed last).
    pub(crate) fn prints_before(&self, program: &Program<'_, '_>, index: u64) -> bool {
        self.record(program, index)
            .is_some_and(|(_, key)| self.last != Some(key))
    }

    /// The position in the line table of the record covering instruction `index`, and what the
    /// kernel compares of it with the record printed last.
    fn record(&self, program: &Program<'_, '_>, index: u64) -> Option<(usize, (u32, u32))> {
        let at = program.lines.find_index(u32::try_from(index).ok()?)?;
        let row = program.lines.rows().get(at)?;
        let key = match self.form {
            SourceLines::Located => (row.file_name_off, row.line),
            SourceLines::Bare => (0, u32::try_from(at).unwrap_or(u32::MAX)),
        };
        Some((at, key))
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
    /// instruction line where the path was put aside is then followed by the state of the
    /// instruction it resumes at ([`InsnLine::resumed`]). The text is gone but not the source
    /// line printed last on it (`env->prev_linfo`), which decides whether the next is printed.
    /// The dropped path began at the next instruction: after a conditional jump resumed at its
    /// target (the verifier goes on to the fall-through and puts the target aside,
    /// `check_cond_jmp_op`), and after a call that put a state aside (a callback's,
    /// `push_callback_call`; an iterator's next round, `process_iter_next_call`). It is
    /// followed in the object the way the verifier went, and the source lines the kernel
    /// printed along it are taken as printed.
    pub fn after_insn(&mut self, program: &Program<'_, '_>, insn: &InsnLine<'_>) {
        if !insn.opcode.is_some_and(Self::is_jump) {
            return;
        }
        if let Some(resumed) = insn.resumed() {
            self.resumed_after(program, insn.index, resumed);
        }
    }

    /// The verifier resumed at instruction `resumed` right after the line of instruction
    /// `index`, whose path it dropped: what [`after_insn`](Self::after_insn) does with a line
    /// that says so. Linux 5.10 says it on a line of its own at log level 1 (`from 10 to 16:`
    /// after the line of instruction 10).
    pub fn resumed_after(&mut self, program: &Program<'_, '_>, index: u64, resumed: u64) {
        let Some(object) = program.object() else {
            return;
        };
        let Ok(at) = u32::try_from(index) else {
            return;
        };
        match object.insn(&program.layout, at) {
            Some(i) if i.code == OP_CALL => {}
            Some(i) => match i.flow() {
                Flow::Branch(off) if i64::from(at) + 1 + off == resumed as i64 => {}
                _ => return,
            },
            None => return,
        }
        if let Some(next) = at.checked_add(1) {
            self.follow_dropped(program, object, next);
        }
    }

    /// Follows the path the kernel dropped from instruction `start` as the verifier went: on
    /// through `ja`, through calls (helpers, kfuncs and functions return to the next
    /// instruction; `bpf_throw` ends the path), and at a conditional jump to its target, which
    /// the verifier puts aside and takes up last (the fall-through first), so that the path
    /// ending last, whose source line was printed last, went on from there. The path ends at
    /// an `exit`, at an instruction it went through already (a loop: the verifier ends it
    /// where a state repeats, or goes on in ways not known here), and at the instruction after
    /// a call that a dropped path went through before: the verifier looks for a state it has
    /// seen there (`visit_func_call_insn` makes it a pruning point) and ends the path
    /// (`N: safe`) before printing its source line. The verifier may also end a path at other
    /// pruning points, or follow one way only where it knows the jump's outcome: the state is
    /// not known here, and this is the path as far as the object tells it.
    fn follow_dropped(&mut self, program: &Program<'_, '_>, object: &BpfObject<'_>, start: u32) {
        self.walks += 1;
        let walk = self.walks;
        let mut index = start;
        for _ in 0..MAX_DROPPED {
            if self.dropped.insert(index, walk) == Some(walk) {
                break;
            }
            if let Some((_, key)) = self.record(program, u64::from(index)) {
                self.last = Some(key);
            }
            let Some(insn) = object.insn(&program.layout, index) else {
                break;
            };
            let next = if insn.code == OP_CALL {
                let throws = matches!(
                    object.reloc_symbol(&program.layout, index),
                    Some(RelocSymbol::Undefined("bpf_throw"))
                );
                let next = index.checked_add(1);
                if throws || next.is_none_or(|next| self.dropped.contains_key(&next)) {
                    break;
                }
                u64::from(index) + 1
            } else {
                match insn.flow() {
                    Flow::Next(width) => u64::from(index) + width,
                    Flow::Jump(off) | Flow::Branch(off) => {
                        (i64::from(index) + 1 + off).max(0) as u64
                    }
                    Flow::Call(_) | Flow::Exit => break,
                }
            };
            match u32::try_from(next) {
                Ok(next) => index = next,
                Err(_) => break,
            }
        }
    }
}
