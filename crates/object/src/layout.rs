//! The load-time layout of one entry program, as libbpf builds it.
//!
//! Mirrors libbpf's `bpf_object__reloc_code` (tools/lib/bpf/libbpf.c): the entry program's own
//! instructions come first; then its instructions are walked in order and every `.text` function
//! they use that is not yet placed is appended at the end and walked at once, depth-first. Uses are
//! BPF-to-BPF calls (`src_reg == BPF_PSEUDO_CALL`) and `ld_imm64` relocated against `.text`
//! (callbacks for `bpf_loop`, timers, ...). Calls relocated against undefined symbols (kfuncs) are
//! not uses. Verifier log indices are indices into this layout, not section offsets.

use crate::elf::{Elf, FunctionId};
use crate::error::{Error, Result};
use crate::insn::{ByteOffset, Slot};

/// One function placed in a loaded program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The function.
    pub function: FunctionId,
    /// Its first instruction index in the loaded program.
    pub start: u32,
    /// Its length in instruction slots.
    pub len: u32,
}

/// The instructions of one entry program as the kernel receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The entry program, then each appended subprogram in placement order.
    pub parts: Vec<Part>,
    /// Total number of instruction slots.
    pub len: u32,
}

impl Layout {
    /// Lays out entry program `program` the way libbpf does.
    pub fn libbpf(elf: &Elf<'_>, program: FunctionId) -> Result<Layout> {
        let entry = elf.function(program);
        let mut parts = vec![Part {
            function: program,
            start: 0,
            len: entry.len,
        }];
        let mut placed = vec![false; elf.functions.len()];
        placed[program.0] = true;
        let mut len = entry.len;
        // Depth-first walk with an explicit stack of (part index, next slot to look at).
        let mut stack = vec![(0usize, 0u32)];
        while let Some(top) = stack.last_mut() {
            let (part_index, i) = *top;
            let part = parts[part_index];
            if i >= part.len {
                stack.pop();
                continue;
            }
            top.1 = i + 1;
            let Some(target) = use_at(elf, part.function, i)? else {
                continue;
            };
            if placed[target.0] {
                continue;
            }
            placed[target.0] = true;
            let sub_len = elf.function(target).len;
            parts.push(Part {
                function: target,
                start: len,
                len: sub_len,
            });
            len = len
                .checked_add(sub_len)
                .ok_or_else(|| Error::BadReference {
                    at: elf.section(entry.section).at(entry.start),
                    problem: "loaded program is larger than 2^32 instructions".into(),
                })?;
            stack.push((parts.len() - 1, 0));
        }
        Ok(Layout { parts, len })
    }

    /// The part holding loaded instruction `index`, and the offset inside it.
    pub fn locate(&self, index: u32) -> Option<(&Part, u32)> {
        let i = self
            .parts
            .partition_point(|p| p.start <= index)
            .checked_sub(1)?;
        let part = self.parts.get(i)?;
        let offset = index - part.start;
        (offset < part.len).then_some((part, offset))
    }
}

/// The `.text` function used by slot `i` of `function`, if that slot is a use.
fn use_at(elf: &Elf<'_>, function: FunctionId, i: u32) -> Result<Option<FunctionId>> {
    let f = elf.function(function);
    let section = elf.section(f.section);
    let slot = Slot(f.start.0 + i);
    let Some(insn) = section.insn(slot, elf.endian) else {
        return Ok(None);
    };
    let reloc = section.reloc(slot);
    let bad = |problem: String| Error::BadReference {
        at: section.at(slot),
        problem,
    };
    let target = if insn.is_pseudo_call() {
        match reloc {
            Some(crate::elf::Reloc::Undefined) => return Ok(None),
            Some(crate::elf::Reloc::Defined {
                section: target,
                value,
                name,
            }) => {
                if *target != elf.text || elf.text.is_none() {
                    return Err(bad(format!(
                        "call relocated against '{name}', which is not in .text"
                    )));
                }
                let base = ByteOffset(*value)
                    .to_slot()
                    .map_err(|e| bad(format!("call target '{name}' at {value:#x} {e}")))?;
                i64::from(base.0) + i64::from(insn.imm) + 1
            }
            // A call within one section needs no relocation: relative to the caller.
            None => i64::from(slot.0) + i64::from(insn.imm) + 1,
        }
    } else if insn.is_ld_imm64() {
        match reloc {
            Some(crate::elf::Reloc::Defined {
                section: Some(target),
                value,
                ..
            }) if Some(*target) == elf.text => {
                let bytes = i64::try_from(*value)
                    .unwrap_or(i64::MAX)
                    .saturating_add(i64::from(insn.imm));
                if bytes % 8 != 0 {
                    return Err(bad(format!(
                        "ld_imm64 of a .text address {bytes:#x} that is not a multiple of 8"
                    )));
                }
                bytes / 8
            }
            _ => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let found = u32::try_from(target)
        .ok()
        .and_then(|t| elf.text_function_at(Slot(t)));
    match found {
        Some(id) => Ok(Some(id)),
        None => Err(bad(format!(
            "call or callback reference to .text instruction {target}, where no function is"
        ))),
    }
}
