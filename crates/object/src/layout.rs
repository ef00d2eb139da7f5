//! The load-time layout of one entry program, as a loader builds it.
//!
//! Verifier log indices are indices into this layout, not section offsets. Every loader puts the
//! entry program's own instructions first and appends the functions it uses after them; they
//! differ in the order and in where a callee may live:
//!
//! - libbpf (`bpf_object__reloc_code`, tools/lib/bpf/libbpf.c): walks the instructions in order
//!   and appends each `.text` function not yet placed at its first use, walking it at once
//!   (depth-first). Uses are BPF-to-BPF calls (`src_reg == BPF_PSEUDO_CALL`) and `ld_imm64`
//!   relocated against `.text` (callbacks for `bpf_loop`, timers, ...).
//! - aya (`FunctionLinker::relocate` in aya-obj): depth-first the same way, but a callee may live
//!   in any code section.
//! - cilium/ebpf (`flattenInstructions` in linker.go): breadth-first; each function's references
//!   are deduplicated and sorted by name before they are queued.
//!
//! Calls relocated against undefined symbols (kfuncs, externs) are never uses.

use crate::elf::{Elf, FunctionId, Reloc};
use crate::error::{Error, Result};
use crate::insn::{ByteOffset, Slot};
use std::collections::VecDeque;

/// The loader whose layout to reproduce.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Loader {
    /// libbpf (bpftool, libbpf-rs, libbpf-based tools): `.text` callees, depth-first.
    #[default]
    Libbpf,
    /// aya: callees from any code section, depth-first.
    Aya,
    /// cilium/ebpf: callees from any code section, breadth-first, references sorted by name.
    Cilium,
}

impl Loader {
    /// Every loader, libbpf first.
    pub const ALL: [Loader; 3] = [Loader::Libbpf, Loader::Aya, Loader::Cilium];

    /// The loader's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Loader::Libbpf => "libbpf",
            Loader::Aya => "aya",
            Loader::Cilium => "cilium",
        }
    }
}

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
    /// The entry program, then each appended function in placement order.
    pub parts: Vec<Part>,
    /// Total number of instruction slots.
    pub len: u32,
}

/// Places functions one after another, each once.
struct Placer<'e, 'data> {
    elf: &'e Elf<'data>,
    parts: Vec<Part>,
    /// The functions placed (a set of the program's own: not one flag for each function of
    /// the object, which every program of an object of many would pay for).
    placed: std::collections::HashSet<FunctionId>,
    len: u32,
}

impl Placer<'_, '_> {
    /// Appends `f` unless it is placed already; the index of its part when appended.
    fn place(&mut self, f: FunctionId) -> Result<Option<usize>> {
        crate::count_work(1);
        if !self.placed.insert(f) {
            return Ok(None);
        }
        let function = self.elf.function(f);
        self.parts.push(Part {
            function: f,
            start: self.len,
            len: function.len,
        });
        self.len = self
            .len
            .checked_add(function.len)
            .ok_or_else(|| Error::BadReference {
                at: self.elf.section(function.section).at(function.start),
                problem: "loaded program is larger than 2^32 instructions".into(),
            })?;
        Ok(Some(self.parts.len() - 1))
    }
}

impl Layout {
    /// Lays out entry program `program` the way libbpf does.
    pub fn libbpf(elf: &Elf<'_>, program: FunctionId) -> Result<Layout> {
        Layout::new(elf, program, Loader::Libbpf)
    }

    /// Lays out entry program `program` the way `loader` does.
    pub fn new(elf: &Elf<'_>, program: FunctionId, loader: Loader) -> Result<Layout> {
        Layout::with_exception_callback(elf, program, loader, None)
    }

    /// Lays out entry program `program` the way `loader` does, with the exception callback
    /// its BTF names (`__exception_cb`, a decl tag `exception_callback:NAME`): libbpf appends
    /// it after everything else unless a call placed it already (`bpf_object__relocate`).
    pub fn with_exception_callback(
        elf: &Elf<'_>,
        program: FunctionId,
        loader: Loader,
        callback: Option<FunctionId>,
    ) -> Result<Layout> {
        let mut placer = Placer {
            elf,
            parts: Vec::new(),
            placed: std::collections::HashSet::new(),
            len: 0,
        };
        placer.place(program)?;
        match loader {
            Loader::Libbpf | Loader::Aya => {
                // Depth-first walk with an explicit stack of (part index, next slot to look at).
                let mut stack = vec![(0usize, 0u32)];
                let mut callback = callback.filter(|_| loader == Loader::Libbpf);
                loop {
                    let Some(top) = stack.last_mut() else {
                        // Then the exception callback, walked the same way.
                        match callback
                            .take()
                            .map(|cb| placer.place(cb))
                            .transpose()?
                            .flatten()
                        {
                            Some(part) => {
                                stack.push((part, 0));
                                continue;
                            }
                            None => break,
                        }
                    };
                    let (part_index, i) = *top;
                    let part = placer.parts[part_index];
                    if i >= part.len {
                        stack.pop();
                        continue;
                    }
                    top.1 = i + 1;
                    if let Some(target) = use_at(elf, part.function, i, loader)?
                        && let Some(new_part) = placer.place(target)?
                    {
                        stack.push((new_part, 0));
                    }
                }
            }
            Loader::Cilium => {
                let mut pending: VecDeque<FunctionId> = references(elf, program)?.into();
                while let Some(f) = pending.pop_front() {
                    if placer.place(f)?.is_some() {
                        pending.extend(references(elf, f)?);
                    }
                }
            }
        }
        Ok(Layout {
            parts: placer.parts,
            len: placer.len,
        })
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

/// The functions `function` uses, deduplicated and sorted by name (cilium/ebpf's
/// `FunctionReferences`).
fn references(elf: &Elf<'_>, function: FunctionId) -> Result<Vec<FunctionId>> {
    let mut refs = Vec::new();
    for i in 0..elf.function(function).len {
        if let Some(target) = use_at(elf, function, i, Loader::Cilium)? {
            refs.push(target);
        }
    }
    refs.sort_by(|a, b| {
        elf.function(*a)
            .name
            .cmp(&elf.function(*b).name)
            .then(a.cmp(b))
    });
    refs.dedup();
    Ok(refs)
}

/// The function used by slot `i` of `function`, if that slot is a use.
pub(crate) fn use_at(
    elf: &Elf<'_>,
    function: FunctionId,
    i: u32,
    loader: Loader,
) -> Result<Option<FunctionId>> {
    crate::count_work(1);
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
    // libbpf takes callees from `.text` only; aya and cilium/ebpf from any code section.
    let text_only = loader == Loader::Libbpf;
    let (target_section, target) = if insn.is_pseudo_call() {
        match reloc {
            Some(Reloc::Undefined { .. }) => return Ok(None),
            Some(Reloc::Defined {
                section: target,
                value,
                name,
                ..
            }) => {
                let allowed = match (text_only, target) {
                    (true, Some(t)) => Some(*t) == elf.text,
                    (false, t) => t.is_some(),
                    (true, None) => false,
                };
                let Some(target) = target.filter(|_| allowed) else {
                    let place = if text_only { ".text" } else { "a code section" };
                    return Err(bad(format!(
                        "call relocated against '{}', which is not in {place}",
                        crate::excerpt_name(name)
                    )));
                };
                let base = ByteOffset(*value).to_slot().map_err(|e| {
                    bad(format!(
                        "call target '{}' at {value:#x} {e}",
                        crate::excerpt_name(name)
                    ))
                })?;
                (target, i64::from(base.0) + i64::from(insn.imm) + 1)
            }
            // A call within one section needs no relocation: relative to the caller. libbpf
            // looks the target up in `.text` whatever the caller's section.
            None => {
                let target_section = if text_only { elf.text } else { Some(f.section) };
                let Some(target_section) = target_section else {
                    return Err(bad(
                        "call without relocation, and the object has no .text".into()
                    ));
                };
                (target_section, i64::from(slot.0) + i64::from(insn.imm) + 1)
            }
        }
    } else if insn.is_ld_imm64() {
        match reloc {
            Some(Reloc::Defined {
                section: Some(target),
                value,
                ..
            }) if !text_only || Some(*target) == elf.text => {
                let bytes = i64::try_from(*value)
                    .unwrap_or(i64::MAX)
                    .saturating_add(i64::from(insn.imm));
                if bytes % 8 != 0 {
                    let what = if text_only { ".text" } else { "code" };
                    return Err(bad(format!(
                        "ld_imm64 of a {what} address {bytes:#x} that is not a multiple of 8"
                    )));
                }
                (*target, bytes / 8)
            }
            _ => return Ok(None),
        }
    } else {
        return Ok(None);
    };
    let found = u32::try_from(target)
        .ok()
        .and_then(|t| elf.function_at(target_section, Slot(t)));
    match found {
        Some(id) => Ok(Some(id)),
        None => Err(bad(format!(
            "call or callback reference to {} instruction {target}, where no function is",
            crate::excerpt_name(&elf.section(target_section).name)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::{BpfObject, Loader, WORK};
    use std::cell::Cell;

    /// Every program of an object of many (tests/fixtures/hostile/costs.py: N programs of two
    /// instructions) laid out by every loader, with its line table, as a command lays them
    /// out: the work grows with the programs, not with the programs times the object.
    #[test]
    fn laying_out_every_program_of_many_is_linear() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/hostile/costs");
        let mut work: Vec<u64> = Vec::new();
        for n in [100, 200, 400] {
            let data = std::fs::read(fixtures.join(format!("programs.{n}.o"))).unwrap();
            let object = BpfObject::parse(&data).unwrap();
            WORK.with(|w| w.set(0));
            let mut rows = 0;
            for (k, id) in object.programs().into_iter().enumerate() {
                assert_eq!(object.function(id).name, format!("p{k}"));
                for loader in Loader::ALL {
                    let layout = object.layout_for(id, loader).unwrap();
                    assert_eq!(layout.len, 2);
                    rows += object.line_table(&layout).unwrap().rows().len();
                }
            }
            assert_eq!(rows, 3 * n);
            let steps = WORK.with(Cell::get);
            // Twice the programs, at most a little more than twice the work.
            if let Some(&before) = work.last() {
                assert!(
                    steps * 5 < before * 12,
                    "steps for 100, 200, 400 programs: {work:?} then {steps}"
                );
            }
            work.push(steps);
        }
        eprintln!("steps for 100, 200, 400 programs: {work:?}");
    }
}
