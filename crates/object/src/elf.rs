//! The ELF side of a BPF object: code sections, function symbols and relocations.
//!
//! Follows libbpf's `bpf_object__elf_collect` / `bpf_object__add_programs`: every `STT_FUNC`
//! symbol of non-zero size in an executable section is a function; functions in `.text` are
//! subprograms, all others entry programs, ordered by section and offset.

use crate::error::{At, Error, Result};
use crate::insn::{ByteOffset, INSN_SIZE, Insn, Slot};
use object::{
    Endianness, Object as _, ObjectSection as _, ObjectSymbol as _, RelocationTarget, SectionKind,
    SymbolFlags, SymbolKind, SymbolSection,
};
use std::collections::HashMap;

/// Identifies a function of an object: an index into [`Elf::functions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FunctionId(pub usize);

/// Identifies a code section: an index into [`Elf::sections`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SectionId(pub usize);

/// An executable ELF section.
#[derive(Debug)]
pub struct CodeSection<'data> {
    /// The section's name (`xdp`, `tc`, `.text`, ...).
    pub name: String,
    data: &'data [u8],
    /// Relocations sorted by the slot they patch.
    relocs: Vec<(Slot, Reloc)>,
}

/// What a relocation in a code section points at.
#[derive(Debug, Clone)]
pub(crate) enum Reloc {
    /// An undefined symbol: a kfunc, an extern, a ksym.
    Undefined {
        /// The symbol's name (a kfunc's, as the verifier names it).
        name: String,
    },
    /// A symbol defined in code section `section` (`None`: a data or map section).
    Defined {
        /// The code section the symbol lives in, if any.
        section: Option<SectionId>,
        /// `st_value`: the symbol's byte offset in its section.
        value: u64,
        /// The symbol's name, for errors.
        name: String,
        /// The name of the section it is in (`.maps`, `.rodata`, ...).
        section_name: String,
    },
}

/// A function symbol in a code section.
#[derive(Debug, Clone)]
pub struct Function {
    /// The symbol's name.
    pub name: String,
    /// The code section that holds it.
    pub section: SectionId,
    /// First slot inside the section.
    pub start: Slot,
    /// Length in slots.
    pub len: u32,
    /// Whether the symbol is global (`STB_GLOBAL`): global subprograms are verified on their own.
    pub global: bool,
    /// Whether the symbol is `STB_GLOBAL` with default or protected visibility: a function
    /// every loader hands the kernel as global (libbpf marks a hidden one static in the BTF it
    /// loads, `mark_btf_static`, and the kernel then verifies it with its caller).
    pub exported: bool,
}

/// The code, functions and relocations of a BPF ELF object.
#[derive(Debug)]
pub struct Elf<'data> {
    /// The byte order of the object (`-target bpfel` or `bpfeb`).
    pub endian: Endianness,
    /// The executable sections, in ELF order.
    pub sections: Vec<CodeSection<'data>>,
    /// The functions, sorted by section and start.
    pub functions: Vec<Function>,
    /// The `.text` section, where subprograms live.
    pub text: Option<SectionId>,
}

impl<'data> CodeSection<'data> {
    /// Number of instruction slots in the section.
    pub fn slots(&self) -> u32 {
        u32::try_from(self.data.len() as u64 / INSN_SIZE).unwrap_or(u32::MAX)
    }

    /// The section's size in bytes.
    pub fn size(&self) -> u64 {
        self.data.len() as u64
    }

    /// The instruction in `slot`, if the section has it.
    pub fn insn(&self, slot: Slot, endian: Endianness) -> Option<Insn> {
        let start = usize::try_from(u64::from(slot.0) * INSN_SIZE).ok()?;
        let bytes = self.data.get(start..start.checked_add(8)?)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        Some(Insn::decode(b, endian))
    }

    /// The relocation patching `slot`, if any.
    pub(crate) fn reloc(&self, slot: Slot) -> Option<&Reloc> {
        let i = self.relocs.partition_point(|(s, _)| *s < slot);
        self.relocs
            .get(i)
            .filter(|(s, _)| *s == slot)
            .map(|(_, r)| r)
    }

    /// Where `slot` is, for errors.
    pub(crate) fn at(&self, slot: Slot) -> At {
        At {
            section: self.name.clone(),
            offset: u64::from(slot.0) * INSN_SIZE,
        }
    }
}

/// The ELF index of each code section, to [`SectionId`]s.
type CodeIndex = HashMap<object::SectionIndex, SectionId>;

/// The code sections (executable, not empty) in the file's order, without their relocations.
fn code_sections<'data>(
    file: &object::File<'data>,
) -> Result<(Vec<CodeSection<'data>>, CodeIndex)> {
    let mut sections = Vec::new();
    let mut by_elf_index = HashMap::new();
    for section in file.sections() {
        if section.kind() != SectionKind::Text || section.size() == 0 {
            continue;
        }
        let name = section.name().map_err(Error::Elf)?.to_owned();
        let data = section.data().map_err(|source| Error::SectionData {
            section: name.clone(),
            source,
        })?;
        by_elf_index.insert(section.index(), SectionId(sections.len()));
        sections.push(CodeSection {
            name,
            data,
            relocs: Vec::new(),
        });
    }
    Ok((sections, by_elf_index))
}

/// The relocations of the code section `section` (named `name`) that name a symbol, by slot.
fn relocations(
    file: &object::File<'_>,
    section: &object::Section<'_, '_>,
    name: &str,
    by_elf_index: &CodeIndex,
) -> Result<Vec<(Slot, Reloc)>> {
    let mut relocs = Vec::new();
    for (offset, reloc) in section.relocations() {
        let at = At {
            section: name.to_owned(),
            offset,
        };
        let slot = match ByteOffset(offset).to_slot() {
            Ok(slot) => slot,
            Err(e) => {
                return Err(Error::BadReference {
                    at,
                    problem: format!("relocation offset {e}"),
                });
            }
        };
        let RelocationTarget::Symbol(index) = reloc.target() else {
            continue;
        };
        let symbol = file
            .symbol_by_index(index)
            .map_err(|_| Error::BadReference {
                at: at.clone(),
                problem: format!("relocation names symbol #{} which does not exist", index.0),
            })?;
        let target = match symbol.section() {
            SymbolSection::Undefined => Reloc::Undefined {
                name: symbol.name().unwrap_or("?").to_owned(),
            },
            SymbolSection::Section(s) => {
                let section_name = file
                    .section_by_index(s)
                    .and_then(|sec| sec.name().map(str::to_owned))
                    .unwrap_or_else(|_| "?".into());
                Reloc::Defined {
                    section: by_elf_index.get(&s).copied(),
                    value: symbol.address(),
                    // A section symbol has no name of its own: name its section.
                    name: match symbol.name() {
                        Ok(name) if !name.is_empty() => name.to_owned(),
                        _ => section_name.clone(),
                    },
                    section_name,
                }
            }
            _ => continue,
        };
        relocs.push((slot, target));
    }
    relocs.sort_by_key(|(slot, _)| *slot);
    Ok(relocs)
}

/// The functions (text symbols with a size) of the code sections, checked to lie within them,
/// by section and start.
fn functions(
    file: &object::File<'_>,
    sections: &[CodeSection<'_>],
    by_elf_index: &CodeIndex,
) -> Result<Vec<Function>> {
    let mut functions = Vec::new();
    for symbol in file.symbols() {
        if symbol.kind() != SymbolKind::Text || symbol.size() == 0 {
            continue;
        }
        let Some(&section) = symbol.section_index().and_then(|s| by_elf_index.get(&s)) else {
            continue;
        };
        let code = &sections[section.0];
        let name = symbol.name().map_err(Error::Elf)?.to_owned();
        let at = At {
            section: code.name.clone(),
            offset: symbol.address(),
        };
        let bad = |problem: String| Error::BadFunction {
            at: at.clone(),
            name: name.clone(),
            problem,
        };
        let start = ByteOffset(symbol.address())
            .to_slot()
            .map_err(|e| bad(format!("start {:#x} {e}", symbol.address())))?;
        if symbol.size() % INSN_SIZE != 0 {
            return Err(bad(format!(
                "size {} is not a multiple of 8",
                symbol.size()
            )));
        }
        let end = symbol
            .address()
            .checked_add(symbol.size())
            .filter(|&end| end <= code.size());
        if end.is_none() {
            return Err(bad(format!(
                "size {} runs past the end of the section ({} bytes)",
                symbol.size(),
                code.size()
            )));
        }
        let len = u32::try_from(symbol.size() / INSN_SIZE).map_err(|_| bad("too large".into()))?;
        functions.push(Function {
            name,
            section,
            start,
            len,
            global: symbol.is_global(),
            exported: matches!(symbol.flags(), SymbolFlags::Elf { st_info, st_other }
                if st_info >> 4 == object::elf::STB_GLOBAL
                    && matches!(st_other & 3, object::elf::STV_DEFAULT | object::elf::STV_PROTECTED)),
        });
    }
    functions.sort_by_key(|f| (f.section, f.start));
    Ok(functions)
}

impl<'data> Elf<'data> {
    /// Reads the code sections, functions and relocations of a BPF object.
    pub fn parse(file: &object::File<'data>) -> Result<Self> {
        if file.architecture() != object::Architecture::Bpf {
            return Err(Error::NotBpf(format!("{:?}", file.architecture())));
        }
        let endian = if file.is_little_endian() {
            Endianness::Little
        } else {
            Endianness::Big
        };
        let (mut sections, by_elf_index) = code_sections(file)?;
        for section in file.sections() {
            if let Some(&id) = by_elf_index.get(&section.index()) {
                let relocs = relocations(file, &section, &sections[id.0].name, &by_elf_index)?;
                sections[id.0].relocs = relocs;
            }
        }
        let functions = functions(file, &sections, &by_elf_index)?;
        let text = sections
            .iter()
            .position(|s| s.name == ".text")
            .map(SectionId);
        Ok(Elf {
            endian,
            sections,
            functions,
            text,
        })
    }

    /// The code section `id`.
    pub fn section(&self, id: SectionId) -> &CodeSection<'data> {
        &self.sections[id.0]
    }

    /// The function `id`.
    pub fn function(&self, id: FunctionId) -> &Function {
        &self.functions[id.0]
    }

    /// The `.text` function whose slots include `slot`.
    pub fn text_function_at(&self, slot: Slot) -> Option<FunctionId> {
        self.function_at(self.text?, slot)
    }

    /// The function of code section `section` whose slots include `slot`.
    pub fn function_at(&self, section: SectionId, slot: Slot) -> Option<FunctionId> {
        let i = self
            .functions
            .partition_point(|f| (f.section, f.start) <= (section, slot));
        let i = i.checked_sub(1)?;
        let f = self.functions.get(i)?;
        (f.section == section && slot.0 < f.start.0.saturating_add(f.len)).then_some(FunctionId(i))
    }

    /// Entry programs: functions outside `.text`, in libbpf's order (section, then offset).
    pub fn programs(&self) -> impl Iterator<Item = FunctionId> + '_ {
        self.functions
            .iter()
            .enumerate()
            .filter(|(_, f)| Some(f.section) != self.text)
            .map(|(i, _)| FunctionId(i))
    }
}
