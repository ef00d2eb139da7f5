//! The failing path as it is read: the instruction lines kept, their bytes end to end in
//! blocks, cut back at each `from X to Y`; decoded once ([`Path::decode`]) when a log ends in a
//! rejection.

use super::decoded::{Decoded, PathInsn};
use super::kept::{KeptLine, MAX_LINE};
use bpflog_log::{Line, Op, classify};
use std::collections::VecDeque;

/// At most this many instruction lines of the failing path are kept (the latest ones): a walk
/// back that needs more stops at the oldest kept.
pub(crate) const MAX_PATH: usize = 8192;
/// The bytes of a block of [`Path`]'s lines: well under the size from which an allocator maps
/// memory of its own, so that the blocks of one log are reused for the next.
const BLOCK: usize = 16 << 10;

/// The instructions in a chunk of [`Path`]'s (14 KiB of them), for the same reason.
const CHUNK: usize = 256;

/// The instruction lines of the path being verified, latest last.
///
/// Their bytes are kept end to end in blocks of [`BLOCK`] bytes, in the order of the lines (a
/// line that does not fit the last block starts the next), and the instructions in chunks of
/// [`CHUNK`], so that keeping a line costs a copy and rarely an allocation: a log starts with
/// an empty path (each log has its own), and most of its lines are dropped again at the next
/// branch. (One buffer for the whole path grows to hundreds of KiB in a log of a large program
/// and is mapped and unmapped for every log: a page fault a page.)
#[derive(Debug, Default)]
pub(crate) struct Path {
    /// The instructions kept, in chunks of [`CHUNK`]: from position `skipped` of the first on.
    insns: VecDeque<Vec<KeptLine>>,
    /// Instructions of the first chunk dropped past [`MAX_PATH`].
    skipped: usize,
    /// How many instructions are kept.
    len: usize,
    /// The lines' bytes: the blocks from that of `insns[0]` on.
    blocks: VecDeque<Vec<u8>>,
    /// Blocks dropped from the front (their lines dropped past [`MAX_PATH`]).
    dropped: usize,
    /// Instructions of the path were dropped (beyond [`MAX_PATH`], or a branch not kept): its
    /// first kept instruction is not where it started.
    cut: bool,
}

impl Path {
    /// Instruction `index`, verified in `frame`, with its line (`N: (xx) text ; state`, the
    /// kernel's part), read at line `read_at`; `packet_check`: see [`PathInsn::packet_check`].
    pub(crate) fn push(
        &mut self,
        index: u64,
        frame: usize,
        line: &[u8],
        packet_check: bool,
        read_at: u64,
    ) {
        if self.len == MAX_PATH {
            self.cut = true;
            self.len -= 1;
            self.skipped += 1;
            if self.skipped == CHUNK {
                self.insns.pop_front();
                self.skipped = 0;
            }
            // The blocks before the first kept line's go.
            let first = self.kept(0).map_or(self.dropped, |i| i.block);
            while self.dropped < first && self.blocks.pop_front().is_some() {
                self.dropped += 1;
            }
        }
        let kept = line.get(..MAX_LINE).unwrap_or(line);
        let full = |b: &Vec<u8>| b.capacity() - b.len() < kept.len();
        if self.blocks.back().is_none_or(full) {
            self.blocks
                .push_back(Vec::with_capacity(BLOCK.max(kept.len())));
        }
        let block = self.dropped + self.blocks.len() - 1;
        let Some(bytes) = self.blocks.back_mut() else {
            return;
        };
        let start = bytes.len();
        bytes.extend_from_slice(kept);
        let end = bytes.len();
        if self.insns.back().is_none_or(|c| c.len() == CHUNK) {
            self.insns.push_back(Vec::with_capacity(CHUNK));
        }
        let Some(chunk) = self.insns.back_mut() else {
            return;
        };
        self.len += 1;
        chunk.push(KeptLine {
            index,
            frame,
            block,
            start,
            end,
            cut: line.len() > MAX_LINE,
            full_state: false,
            packet_check,
            read_at,
        });
    }

    /// A path resumes at a branch of instruction `from`: the path is what led to it.
    pub(crate) fn resume(&mut self, from: u64) {
        // The latest line of `from`, searched for chunk by chunk from the end.
        let at = (self.insns.iter().enumerate().rev()).find_map(|(c, chunk)| {
            let first = if c == 0 { self.skipped } else { 0 };
            let kept = chunk.get(first..).unwrap_or_default();
            let i = kept.iter().rposition(|i| i.index == from)?;
            Some(c * CHUNK + first + i - self.skipped)
        });
        match at {
            Some(at) => self.drop_from(at + 1),
            None => {
                self.drop_from(0);
                self.cut = true;
            }
        }
    }

    /// The state printed after the last instruction kept, on a line of its own (Linux 5.10
    /// prints the state before each instruction at level 2: `6: R1_w=fp-8 ...`, the state after
    /// instruction 5), kept as if printed on its line after ` ; `, as later kernels print it;
    /// `packet_check`: see [`PathInsn::packet_check`]. Nothing when the line kept shows a state
    /// already, or there is none.
    pub(crate) fn state_after_last(&mut self, state: &[u8], packet_check: bool) {
        let Some(at) = self.len.checked_sub(1) else {
            return;
        };
        let pos = self.skipped + at;
        let Some(kept) = self
            .insns
            .get_mut(pos / CHUNK)
            .and_then(|c| c.get_mut(pos % CHUNK))
        else {
            return;
        };
        let Some(bytes) = kept
            .block
            .checked_sub(self.dropped)
            .and_then(|b| self.blocks.get_mut(b))
        else {
            return;
        };
        let line = bytes.get(kept.start..kept.end).unwrap_or_default();
        if kept.cut || kept.end != bytes.len() || memchr::memmem::find(line, b" ; ").is_some() {
            return;
        }
        let room = MAX_LINE.saturating_sub(line.len() + 3);
        bytes.extend_from_slice(b" ; ");
        bytes.extend_from_slice(state.get(..room).unwrap_or(state));
        kept.end = bytes.len();
        kept.cut = state.len() > room;
        kept.packet_check |= packet_check;
        kept.full_state = true;
    }

    /// A path resumes at instruction `to` after a branch the log does not name (Linux 5.10 at
    /// log level 2: [`Resumes`](bpflog_log::state::Resumes)): the path is what led to the
    /// latest conditional jump kept that goes on at `to`, taken or not.
    pub(crate) fn resume_at(&mut self, to: u64) {
        let from = (0..self.len).rev().find_map(|at| {
            let kept = self.kept(at)?;
            let bytes = self.blocks.get(kept.block.checked_sub(self.dropped)?)?;
            let Line::Insn(insn) = classify(bytes.get(kept.start..kept.end)?) else {
                return None;
            };
            let Op::Jump { cond: Some(_), off } = insn.decode().op else {
                return None;
            };
            let next = kept.index.checked_add(1)?;
            (next == to || next.checked_add_signed(off) == Some(to)).then_some(kept.index)
        });
        match from {
            Some(from) => self.resume(from),
            None => {
                self.drop_from(0);
                self.cut = true;
            }
        }
    }

    /// A verification pass (or a log) starts.
    pub(crate) fn clear(&mut self) {
        self.drop_from(0);
        self.cut = false;
    }

    /// Drops the instructions from position `at` on, and their bytes.
    fn drop_from(&mut self, at: usize) {
        if let Some(first) = self.kept(at).copied() {
            let k = first.block.saturating_sub(self.dropped);
            self.blocks.truncate(k + 1);
            if let Some(bytes) = self.blocks.get_mut(k) {
                bytes.truncate(first.start);
            }
            let pos = self.skipped + at;
            self.insns.truncate(pos / CHUNK + 1);
            if let Some(chunk) = self.insns.back_mut() {
                chunk.truncate(pos % CHUNK);
            }
            self.len = at;
        }
        if self.len == 0 {
            self.insns.clear();
            self.skipped = 0;
            self.blocks.clear();
            self.dropped = 0;
        }
    }

    /// What is kept of the instruction at position `at` (0: the first kept).
    fn kept(&self, at: usize) -> Option<&KeptLine> {
        if at >= self.len {
            return None;
        }
        let pos = self.skipped + at;
        self.insns.get(pos / CHUNK)?.get(pos % CHUNK)
    }

    /// How many instructions the path holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The path decoded: each kept line's instruction and state, once, at the end of a
    /// rejected log.
    pub(crate) fn decode(&self) -> Decoded<'_> {
        let insns = (0..self.len)
            .filter_map(|at| {
                let kept = self.kept(at)?;
                let bytes = self.blocks.get(kept.block.checked_sub(self.dropped)?)?;
                let line = bytes.get(kept.start..kept.end).unwrap_or_default();
                Some(PathInsn::decode(kept, line))
            })
            .collect();
        Decoded {
            insns,
            cut: self.cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path's lines share blocks of bytes: lines dropped from its front (past
    /// [`MAX_PATH`]) and from its end (a path resumed at a branch) leave every kept line's text
    /// as it was read, a line cut at [`MAX_LINE`] included, and take their blocks with them.
    #[test]
    fn kept_lines_read_back_as_pushed() {
        let line = |k: u64| {
            let pad = "x".repeat((k % 7) as usize * 13 + usize::from(k % 1000 == 3) * MAX_LINE);
            format!(
                "{k}: (bf) r{} = r{} ; R0_w=scalar() {pad}",
                k % 10,
                (k + 1) % 10
            )
        };
        // Line `k` is of instruction `k % period`: instructions come again, as in a loop, far
        // apart or within a chunk.
        for period in [1500, 100] {
            let mut path = Path::default();
            let mut expected: VecDeque<u64> = VecDeque::new();
            for k in 0..5 * MAX_PATH as u64 {
                // Every 1000th line, the path resumes at the instruction 500 lines back, at its
                // latest line (at first; then the path only grows, past its bound).
                if k % 1000 == 500 && k > 1000 && k < 2 * MAX_PATH as u64 {
                    let from = expected[expected.len() - 500] % period;
                    path.resume(from);
                    let at = expected.iter().rposition(|&e| e % period == from).unwrap();
                    expected.truncate(at + 1);
                    let last = path.decode().last().map(|i| i.read_at);
                    assert_eq!(
                        (path.len(), last),
                        (expected.len(), expected.back().copied())
                    );
                }
                path.push(k % period, 0, line(k).as_bytes(), false, k);
                expected.push_back(k);
                if expected.len() > MAX_PATH {
                    expected.pop_front();
                }
                // The kept lines end to end in their blocks, the first block that of the first line.
                if k % 97 == 0 {
                    let kept: Vec<KeptLine> = (0..path.len)
                        .filter_map(|at| path.kept(at).copied())
                        .collect();
                    assert_eq!(kept.len(), path.len);
                    assert!(path.skipped < CHUNK);
                    assert_eq!(path.insns.len(), (path.skipped + path.len).div_ceil(CHUNK));
                    let ends = kept.iter().zip(kept.iter().skip(1));
                    assert!(
                        ends.clone()
                            .all(|(a, b)| (a.block, a.end) == (b.block, b.start)
                                || (a.block + 1, 0) == (b.block, b.start))
                    );
                    let (first, last) = (kept.first().unwrap(), kept.last().unwrap());
                    assert_eq!(first.block, path.dropped, "line {k}");
                    assert_eq!(path.blocks.len(), last.block - first.block + 1, "line {k}");
                    assert_eq!(path.blocks.back().map(Vec::len), Some(last.end), "line {k}");
                }
            }
            assert_eq!(path.len(), expected.len());
            assert!(path.dropped > 0);
            let decoded = path.decode();
            for (at, (kept, &k)) in decoded.iter().zip(&expected).enumerate() {
                assert_eq!((kept.index, kept.read_at), (k % period, k));
                let text = line(k);
                let want = &text.as_bytes()[..text.len().min(MAX_LINE)];
                assert_eq!(kept.line, want, "line {k}");
                assert_eq!(kept.cut, text.len() > MAX_LINE, "line {k}");
                assert_eq!(
                    decoded.get(at).unwrap().text,
                    format!("r{} = r{}", k % 10, (k + 1) % 10).as_bytes()
                );
            }
            let latest = expected
                .iter()
                .rev()
                .find(|&&e| e % period == expected[10] % period);
            assert_eq!(
                decoded.last_of(expected[10] % period).map(|i| i.read_at),
                latest.copied()
            );
            path.clear();
            assert!(path.blocks.is_empty() && path.decode().first().is_none());
        }
    }
}
