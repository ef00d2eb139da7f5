//! Read a BPF ELF object the way libbpf loads it.
//!
//! A verifier log numbers instructions as the loader handed them to `BPF_PROG_LOAD`: the entry
//! program first, then every `.text` subprogram it uses, appended depth-first. This crate reads
//! the object's code sections, function symbols and relocations (through the `object` crate), its
//! `.BTF` string table and `.BTF.ext` line and function info, reproduces that layout for each
//! entry program, and builds the per-program [`LineTable`] the kernel's `find_linfo` searches.
//!
//! ```no_run
//! let data = std::fs::read("prog.o")?;
//! let object = bpflog_object::BpfObject::parse(&data)?;
//! for program in object.programs() {
//!     let layout = object.layout(program)?;
//!     let table = object.line_table(&layout)?;
//!     if let Some(row) = table.find(0) {
//!         println!("{}: {}", object.function(program).name, String::from_utf8_lossy(row.text));
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod btf;
mod btf_ext;
mod btf_types;
mod core_relo;
mod dwarf;
mod elf;
mod error;
mod excerpt;
mod insn;
mod layout;
mod line_table;
pub mod opcode;
mod reader;

pub use btf::Btf;
pub use btf_ext::{Block, BtfExt, CoreRecord, FuncRecord, LineRecord};
pub use btf_types::{Member, Type, Types};
pub use core_relo::{CoreRelo, FIELD_BYTE_OFFSET, FieldAccess, KernelBtf, essential_name};
pub use dwarf::{DebugLocation, Dwarf, InlinedCall, SourcePos};
pub use elf::{CodeSection, Elf, Function, FunctionId, SectionId};
pub use error::{At, Error, NAMES_MAX, Result, excerpt_name, excerpt_names};
pub use excerpt::{EXCERPT_MAX, excerpt, is_terminal_control};
pub use insn::{ByteOffset, Flow, INSN_SIZE, Insn, Slot, SlotError};
pub use layout::{Layout, Loader, Part};
pub use line_table::{LineOrigin, LineRow, LineTable};

use object::{Object as _, ObjectSection as _};
use std::collections::HashMap;

/// Counts `n` steps of work on this thread, for the tests that check how the work grows with
/// the input (nothing otherwise).
#[inline(always)]
pub(crate) fn count_work(n: u64) {
    #[cfg(test)]
    WORK.with(|w| w.set(w.get() + n));
    let _ = n;
}

#[cfg(test)]
thread_local! {
    /// The steps of work counted on this thread ([`count_work`]).
    pub(crate) static WORK: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A line record of a code section, its strings resolved, keyed by section slot.
#[derive(Debug, Clone, Copy)]
struct SectionLine<'data> {
    slot: Slot,
    row: LineRow<'data>,
}

/// Builds a line table from DWARF rows, as clang builds `.BTF.ext` from them: rows with line 0
/// are dropped; files are keyed by name, the source text is left empty.
fn dwarf_line_table<'a>(elf: &Elf<'_>, dwarf: &'a Dwarf, layout: &Layout) -> LineTable<'a> {
    let mut files: HashMap<&'a str, u32> = HashMap::new();
    let mut rows = Vec::new();
    for part in &layout.parts {
        let f = elf.function(part.function);
        let start = u64::from(f.start.0) * INSN_SIZE;
        let end = u64::from(f.start.0 + f.len) * INSN_SIZE;
        for (offset, pos) in dwarf.rows(f.section, start, end) {
            if pos.line == 0 {
                continue;
            }
            let next_id = u32::try_from(files.len()).unwrap_or(u32::MAX);
            let file_id = *files.entry(pos.file).or_insert(next_id);
            let slot = u32::try_from(offset / INSN_SIZE).unwrap_or(u32::MAX);
            rows.push(LineRow {
                insn: part.start + slot.saturating_sub(f.start.0),
                file_name_off: file_id,
                file: pos.file.as_bytes(),
                line: pos.line,
                col: pos.column,
                text: b"",
            });
        }
    }
    LineTable::new(rows, layout.len, LineOrigin::Dwarf)
}

/// Checks that a line or function info record comes after the previous one of its block.
///
/// The kernel requires strictly increasing `insn_off` (`check_btf_line`, `check_btf_func` in
/// kernel/bpf/verifier.c) and refuses to load a program otherwise, so an object breaking the
/// rule never produced the log at hand: better said than sorted silently.
fn check_sorted(
    kind: &'static str,
    insn_off: u32,
    at: u64,
    previous: &mut Option<u32>,
) -> Result<()> {
    if let Some(prev) = *previous
        && insn_off <= prev
    {
        return Err(Error::BadInsnOff {
            at: At {
                section: ".BTF.ext".into(),
                offset: at,
            },
            kind,
            insn_off,
            problem: format!(
                "is not after the previous record's {prev} (records must be sorted, as the kernel requires)"
            ),
        });
    }
    *previous = Some(insn_off);
    Ok(())
}

/// A function info record rebased onto a loaded program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncRow {
    /// Loaded instruction index of the function's first instruction.
    pub insn: u32,
    /// BTF type id of the function.
    pub type_id: u32,
}

/// The symbol a relocation of an instruction names (see [`BpfObject::reloc_symbol`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelocSymbol<'a> {
    /// An undefined symbol (a kfunc, an extern): its name.
    Undefined(&'a str),
    /// A defined symbol: its name (its section's, for a section symbol) and its section's.
    Defined {
        /// The symbol's name.
        name: &'a str,
        /// The name of its section (`.maps`, `.rodata`, `.bss`, ...).
        section: &'a str,
    },
}

/// Functions' exception callbacks (see [`BpfObject::exception_callback`]).
type ExceptionCallbacks = HashMap<FunctionId, FunctionId>;

/// A parsed BPF object: code, functions, and the BTF line and function info of each code section.
#[derive(Debug)]
pub struct BpfObject<'data> {
    elf: Elf<'data>,
    btf: Option<Btf<'data>>,
    has_btf_ext: bool,
    /// Per code section: its line records sorted by slot.
    lines: Vec<Vec<SectionLine<'data>>>,
    /// Per code section: its func info records `(slot, type_id)` sorted by slot.
    funcs: Vec<Vec<(Slot, u32)>>,
    /// Per code section: the slots that carry a CO-RE relocation, with the relocation, sorted.
    core: Vec<Vec<(Slot, CoreRelo)>>,
    /// The index of the types of `.BTF`, made when first asked for (`None`: no `.BTF`, or it
    /// could not be read: CO-RE paths are then unknown). Kept apart from the bytes, which a
    /// cell would tie to one lifetime.
    type_index: std::sync::OnceLock<Option<std::sync::Arc<[u32]>>>,
    /// The exception callback of each function the BTF names one for that `.text` has, made
    /// when first asked for: the types are read once, not once a program.
    exception_callbacks: std::sync::OnceLock<ExceptionCallbacks>,
    /// The DWARF line table and inline tree, if the object has DWARF and it could be read.
    dwarf: Option<Dwarf>,
    /// Why the DWARF could not be read.
    dwarf_error: Option<Error>,
}

impl<'data> BpfObject<'data> {
    /// Parses an object file: ELF, `.BTF` and `.BTF.ext` (either may be absent).
    pub fn parse(data: &'data [u8]) -> Result<Self> {
        let file = object::File::parse(data)?;
        let elf = Elf::parse(&file)?;
        let section_data = |name: &'static str| -> Result<Option<&'data [u8]>> {
            match file.section_by_name(name) {
                Some(s) => s.data().map(Some).map_err(|source| Error::SectionData {
                    section: name.into(),
                    source,
                }),
                None => Ok(None),
            }
        };
        let btf = section_data(".BTF")?
            .map(|d| Btf::parse(d, elf.endian))
            .transpose()?;
        let ext = section_data(".BTF.ext")?
            .map(|d| BtfExt::parse(d, elf.endian))
            .transpose()?;
        // DWARF is optional enrichment: an error in it must not make the object unusable.
        let (dwarf, dwarf_error) = match Dwarf::parse(&file, &elf) {
            Ok(dwarf) => (dwarf, None),
            Err(e) => (None, Some(e)),
        };
        let n = elf.sections.len();
        let mut object = BpfObject {
            dwarf,
            dwarf_error,
            has_btf_ext: ext.is_some(),
            elf,
            btf,
            lines: vec![Vec::new(); n],
            funcs: vec![Vec::new(); n],
            core: vec![Vec::new(); n],
            type_index: std::sync::OnceLock::new(),
            exception_callbacks: std::sync::OnceLock::new(),
        };
        if let Some(ext) = ext {
            let Some(btf) = object.btf else {
                return Err(Error::MissingSection(".BTF"));
            };
            object.index_ext(&btf, &ext)?;
        }
        Ok(object)
    }

    /// Matches `.BTF.ext` blocks to code sections by name and resolves their records.
    fn index_ext(&mut self, btf: &Btf<'data>, ext: &BtfExt) -> Result<()> {
        let ext_at = |offset| At {
            section: ".BTF.ext".into(),
            offset,
        };
        let section_of = |sec_name_off: u32, at: u64| -> Result<Option<SectionId>> {
            let name = btf.string(sec_name_off, || ext_at(at))?;
            Ok(self
                .elf
                .sections
                .iter()
                .position(|s| s.name.as_bytes() == name)
                .map(SectionId))
        };
        let slot_of = |kind: &'static str, insn_off: u32, at: u64, id: SectionId| -> Result<Slot> {
            let section = self.elf.section(id);
            let bad = |problem: String| Error::BadInsnOff {
                at: ext_at(at),
                kind,
                insn_off,
                problem,
            };
            let slot = ByteOffset(u64::from(insn_off))
                .to_slot()
                .map_err(|e| bad(e.to_string()))?;
            if slot.0 >= section.slots() {
                return Err(bad(format!(
                    "is past the end of section {} ({} bytes)",
                    error::excerpt_name(&section.name),
                    section.size()
                )));
            }
            Ok(slot)
        };
        let mut lines = vec![Vec::new(); self.elf.sections.len()];
        for block in &ext.line_info {
            let Some(id) = section_of(block.sec_name_off, block.at)? else {
                continue;
            };
            let mut previous = None;
            for r in &block.records {
                let slot = slot_of("line_info", r.insn_off, r.at, id)?;
                check_sorted("line_info", r.insn_off, r.at, &mut previous)?;
                let row = LineRow {
                    insn: 0,
                    file_name_off: r.file_name_off,
                    file: btf.string(r.file_name_off, || ext_at(r.at + 4))?,
                    line: r.line,
                    col: r.col,
                    text: btf.string(r.line_off, || ext_at(r.at + 8))?,
                };
                lines[id.0].push(SectionLine { slot, row });
            }
        }
        for (section, list) in lines.iter_mut().enumerate() {
            list.sort_by_key(|l| l.slot);
            self.lines[section] = std::mem::take(list);
        }
        for block in &ext.func_info {
            let Some(id) = section_of(block.sec_name_off, block.at)? else {
                continue;
            };
            let mut previous = None;
            for r in &block.records {
                let slot = slot_of("func_info", r.insn_off, r.at, id)?;
                check_sorted("func_info", r.insn_off, r.at, &mut previous)?;
                self.funcs[id.0].push((slot, r.type_id));
            }
            self.funcs[id.0].sort_by_key(|(slot, _)| *slot);
        }
        for block in &ext.core_relo {
            let Some(id) = section_of(block.sec_name_off, block.at)? else {
                continue;
            };
            for r in &block.records {
                let slot = slot_of("core_relo", r.insn_off, r.at, id)?;
                let relo = CoreRelo {
                    kind: r.kind,
                    type_id: r.type_id,
                    access_str_off: r.access_str_off,
                };
                self.core[id.0].push((slot, relo));
            }
            self.core[id.0].sort_by_key(|&(slot, _)| slot);
        }
        Ok(())
    }

    /// The object's `.BTF`, if it has one (`clang -g`).
    pub fn btf(&self) -> Option<&Btf<'data>> {
        self.btf.as_ref()
    }

    /// DWARF of the object, if it has any.
    pub fn dwarf(&self) -> Option<&Dwarf> {
        self.dwarf.as_ref()
    }

    /// Every file name its debug info gives a line: `.BTF.ext`'s line records, DWARF's line rows
    /// and inlined call sites; each once.
    pub fn source_names(&self) -> Vec<&[u8]> {
        let btf = self.lines.iter().flatten().map(|l| l.row.file);
        let dwarf = self.dwarf.iter().flat_map(Dwarf::files).map(str::as_bytes);
        let mut names: Vec<&[u8]> = btf.chain(dwarf).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Why the object's DWARF could not be read (or the first unit of it that was skipped).
    pub fn dwarf_error(&self) -> Option<&Error> {
        self.dwarf_error
            .as_ref()
            .or_else(|| self.dwarf.as_ref()?.errors().first())
    }

    /// What DWARF says about loaded instruction `index` of a laid-out program.
    pub fn debug_location(&self, layout: &Layout, index: u32) -> Option<DebugLocation<'_>> {
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        let dwarf = self.dwarf.as_ref()?;
        let byte = (u64::from(f.start.0) + u64::from(offset)).checked_mul(INSN_SIZE)?;
        Some(dwarf.locate(f.section, byte))
    }

    /// The ELF side: byte order, code sections, functions.
    pub fn elf(&self) -> &Elf<'data> {
        &self.elf
    }

    /// The function `id`.
    pub fn function(&self, id: FunctionId) -> &Function {
        self.elf.function(id)
    }

    /// The ELF section name of function `id`.
    pub fn section_name(&self, id: FunctionId) -> &str {
        &self.elf.section(self.function(id).section).name
    }

    /// Entry programs in libbpf's order.
    pub fn programs(&self) -> Vec<FunctionId> {
        self.elf.programs().collect()
    }

    /// The entry program called `name`.
    pub fn program(&self, name: &str) -> Result<FunctionId> {
        let programs = self.programs();
        programs
            .iter()
            .copied()
            .find(|&p| self.function(p).name == name)
            .ok_or_else(|| Error::UnknownProgram {
                name: name.to_owned(),
                available: programs
                    .iter()
                    .map(|&p| self.function(p).name.clone())
                    .collect(),
            })
    }

    /// Lays out entry program `program` the way libbpf does.
    pub fn layout(&self, program: FunctionId) -> Result<Layout> {
        Layout::libbpf(&self.elf, program)
    }

    /// Lays out entry program `program` the way `loader` does.
    pub fn layout_for(&self, program: FunctionId, loader: Loader) -> Result<Layout> {
        Layout::with_exception_callback(
            &self.elf,
            program,
            loader,
            self.exception_callback(program),
        )
    }

    /// The exception callback of entry program `program`, when its BTF names one (a decl tag
    /// `exception_callback:NAME`, libbpf's `__exception_cb`) and `.text` has that function.
    pub fn exception_callback(&self, program: FunctionId) -> Option<FunctionId> {
        let callbacks = self.exception_callbacks.get_or_init(|| {
            let mut callbacks = ExceptionCallbacks::new();
            let Some(btf) = self.btf.as_ref() else {
                return callbacks;
            };
            // The first tag of each program, by name.
            let mut tags: HashMap<&[u8], &[u8]> = HashMap::new();
            for (program, callback) in btf.exception_callbacks() {
                tags.entry(program).or_insert(callback);
            }
            if tags.is_empty() {
                return callbacks;
            }
            // The first function of each name in `.text`.
            let mut in_text: HashMap<&[u8], FunctionId> = HashMap::new();
            for (i, f) in self.elf.functions.iter().enumerate() {
                if Some(f.section) == self.elf.text {
                    in_text.entry(f.name.as_bytes()).or_insert(FunctionId(i));
                }
            }
            for (i, f) in self.elf.functions.iter().enumerate() {
                let tagged = tags.get(f.name.as_bytes());
                if let Some(&callback) = tagged.and_then(|name| in_text.get(name)) {
                    callbacks.insert(FunctionId(i), callback);
                }
            }
            callbacks
        });
        callbacks.get(&program).copied()
    }

    /// The loaded indices of the `ld_imm64` instructions that take the address of `function`
    /// (a callback handed to a helper or kfunc: `bpf_timer_set_callback`, `bpf_loop`), first
    /// first.
    pub fn callback_references(&self, layout: &Layout, function: FunctionId) -> Vec<u32> {
        let mut found = Vec::new();
        for part in &layout.parts {
            for i in 0..part.len {
                let Some(insn) = self.insn(layout, part.start + i) else {
                    continue;
                };
                let target = insn
                    .is_ld_imm64()
                    .then(|| layout::use_at(&self.elf, part.function, i, Loader::Cilium).ok())
                    .flatten()
                    .flatten();
                if target == Some(function) {
                    found.push(part.start + i);
                }
            }
        }
        found
    }

    /// The instruction at loaded index `index`.
    pub fn insn(&self, layout: &Layout, index: u32) -> Option<Insn> {
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        self.elf
            .section(f.section)
            .insn(Slot(f.start.0 + offset), self.elf.endian)
    }

    /// The function the instruction at loaded index `index` calls (a BPF-to-BPF call) or takes
    /// the address of (an `ld_imm64` of a callback), as `loader` resolves it.
    pub fn function_used_at(
        &self,
        layout: &Layout,
        loader: Loader,
        index: u32,
    ) -> Option<FunctionId> {
        let (part, offset) = layout.locate(index)?;
        layout::use_at(&self.elf, part.function, offset, loader)
            .ok()
            .flatten()
    }

    /// The symbol the relocation of the instruction at loaded index `index` names, if it has
    /// one: a kfunc's for a call, a map's or a variable's for a 64-bit load.
    pub fn reloc_symbol(&self, layout: &Layout, index: u32) -> Option<RelocSymbol<'_>> {
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        let reloc = self
            .elf
            .section(f.section)
            .reloc(Slot(f.start.0 + offset))?;
        Some(match reloc {
            elf::Reloc::Undefined { name } => RelocSymbol::Undefined(name),
            elf::Reloc::Defined {
                name, section_name, ..
            } => RelocSymbol::Defined {
                name,
                section: section_name,
            },
        })
    }

    /// The byte offset in a data section (`.rodata`, `.bss`, `.data.x`) that the 64-bit load at
    /// loaded index `index` takes the address of, when its relocation names a symbol there: the
    /// symbol's offset in its section plus the addend the instruction carries, as libbpf
    /// writes it into the instruction's second half (`bpf_object__relocate_data`) and the
    /// verifier gives the register (`map_value(...,off=25)`). `None` for other instructions and
    /// for a map of `.maps`.
    pub fn data_offset(&self, layout: &Layout, index: u32) -> Option<i64> {
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        let slot = Slot(f.start.0 + offset);
        let section = self.elf.section(f.section);
        let insn = section.insn(slot, self.elf.endian)?;
        if !insn.is_ld_imm64() {
            return None;
        }
        match section.reloc(slot)? {
            elf::Reloc::Defined {
                section: None,
                value,
                section_name,
                ..
            } if section_name != ".maps" => {
                i64::try_from(*value).ok()?.checked_add(i64::from(insn.imm))
            }
            _ => None,
        }
    }

    /// Whether the instruction at loaded index `index` carries a CO-RE relocation (libbpf may
    /// have rewritten its offset, immediate or size).
    pub fn has_core_relo(&self, layout: &Layout, index: u32) -> bool {
        let Some((part, offset)) = layout.locate(index) else {
            return false;
        };
        let f = self.function(part.function);
        self.core_relo(f.section, Slot(f.start.0 + offset))
            .is_some()
    }

    /// The CO-RE relocation of `slot` in `section`: its kind and local type.
    fn core_relo(&self, section: SectionId, slot: Slot) -> Option<(u32, u32)> {
        self.core_record(section, slot)
            .map(|relo| (relo.kind, relo.type_id))
    }

    /// The CO-RE relocation of `slot` in `section`.
    fn core_record(&self, section: SectionId, slot: Slot) -> Option<CoreRelo> {
        let relos = self.core.get(section.0)?;
        let i = relos.binary_search_by_key(&slot, |&(s, _)| s).ok()?;
        relos.get(i).map(|&(_, relo)| relo)
    }

    /// The object's own BTF types, indexed once (`None` without a readable `.BTF`).
    pub fn types(&self) -> Option<Types<'data>> {
        let btf = self.btf?;
        let index = self
            .type_index
            .get_or_init(|| Types::parse(btf).ok().map(|t| t.index()))
            .clone()?;
        Some(Types::with_index(btf, index))
    }

    /// The field path of the CO-RE field relocation of the instruction at loaded index
    /// `index`, read against the object's BTF (see [`FieldAccess`]).
    pub fn core_access(&self, layout: &Layout, index: u32) -> Option<FieldAccess<'data>> {
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        let relo = self.core_record(f.section, Slot(f.start.0 + offset))?;
        FieldAccess::parse(&self.types()?, &relo)
    }

    /// Every CO-RE-relocated instruction of a laid-out program, by loaded index: its
    /// relocation and, for a field relocation, its field path (see [`FieldAccess`]).
    pub fn core_accesses(
        &self,
        layout: &Layout,
    ) -> Vec<(u32, CoreRelo, Option<FieldAccess<'data>>)> {
        let types = self.types();
        let mut out = Vec::new();
        for part in &layout.parts {
            let f = self.function(part.function);
            let relos = self.core.get(f.section.0).map_or(&[][..], Vec::as_slice);
            let from = relos.partition_point(|&(s, _)| s < f.start);
            let end = Slot(f.start.0 + f.len);
            for &(slot, relo) in relos.get(from..).unwrap_or_default() {
                if slot >= end {
                    break;
                }
                let access = types.as_ref().and_then(|t| FieldAccess::parse(t, &relo));
                out.push((part.start + (slot.0 - f.start.0), relo, access));
            }
        }
        out.sort_unstable_by_key(|&(index, _, _)| index);
        out
    }

    /// For each instruction of a laid-out program whose CO-RE relocation is a field byte
    /// offset that `kernel` settles (see [`KernelBtf::field_byte_offset`]): its loaded index
    /// and the offset libbpf gives it there, by index.
    pub fn core_field_offsets(&self, layout: &Layout, kernel: &KernelBtf<'_>) -> Vec<(u32, u32)> {
        let Some(types) = self.types() else {
            return Vec::new();
        };
        self.core_accesses(layout)
            .into_iter()
            .filter_map(|(index, relo, access)| {
                let access = access.filter(|_| relo.kind == FIELD_BYTE_OFFSET)?;
                Some((index, kernel.field_byte_offset(&types, &access)?))
            })
            .collect()
    }

    /// The value libbpf gives the instruction at loaded index `index` when its CO-RE
    /// relocation asks for a local type's BTF id (`BPF_CORE_TYPE_ID_LOCAL`, kind 6): that id,
    /// which the object alone decides.
    pub fn core_local_type_id(&self, layout: &Layout, index: u32) -> Option<u32> {
        const BPF_CORE_TYPE_ID_LOCAL: u32 = 6;
        let (part, offset) = layout.locate(index)?;
        let f = self.function(part.function);
        let (kind, type_id) = self.core_relo(f.section, Slot(f.start.0 + offset))?;
        (kind == BPF_CORE_TYPE_ID_LOCAL).then_some(type_id)
    }

    /// The line table of a laid-out program: `.BTF.ext` line info rebased onto the layout, or,
    /// for an object without `.BTF.ext`, the DWARF line rows of the same instructions.
    pub fn line_table<'a>(&'a self, layout: &Layout) -> Result<LineTable<'a>> {
        if self.btf.is_some() && self.has_btf_ext {
            return Ok(self.btf_line_table(layout));
        }
        if let Some(dwarf) = &self.dwarf {
            return Ok(dwarf_line_table(&self.elf, dwarf, layout));
        }
        Err(Error::MissingSection(if self.btf.is_none() {
            ".BTF"
        } else {
            ".BTF.ext"
        }))
    }

    fn btf_line_table(&self, layout: &Layout) -> LineTable<'data> {
        let mut rows = Vec::new();
        for part in &layout.parts {
            let f = self.function(part.function);
            let lines = &self.lines[f.section.0];
            let from = lines.partition_point(|l| l.slot < f.start);
            let end = Slot(f.start.0 + f.len);
            for l in lines
                .get(from..)
                .unwrap_or_default()
                .iter()
                .take_while(|l| l.slot < end)
            {
                rows.push(LineRow {
                    insn: part.start + (l.slot.0 - f.start.0),
                    ..l.row
                });
            }
        }
        LineTable::new(rows, layout.len, LineOrigin::Btf)
    }

    /// Function info rebased onto a laid-out program, sorted by instruction index.
    pub fn func_rows(&self, layout: &Layout) -> Vec<FuncRow> {
        let mut rows = Vec::new();
        for part in &layout.parts {
            let f = self.function(part.function);
            let end = Slot(f.start.0 + f.len);
            let funcs = self.funcs.get(f.section.0).map_or(&[][..], Vec::as_slice);
            let from = funcs.partition_point(|(s, _)| *s < f.start);
            for &(slot, type_id) in
                (funcs.get(from..).unwrap_or_default().iter()).take_while(|(s, _)| *s < end)
            {
                rows.push(FuncRow {
                    insn: part.start + (slot.0 - f.start.0),
                    type_id,
                });
            }
        }
        rows.sort_by_key(|r| r.insn);
        rows
    }
}
