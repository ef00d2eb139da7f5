//! DWARF line tables and inline trees of a BPF object, indexed by code section and byte offset.
//!
//! A BPF object is relocatable: the addresses in `.debug_line`, `.debug_info`, `.debug_addr` and
//! `.debug_rnglists` are byte offsets inside *each* code section (`xdp` and `.text` both start at
//! 0), and only the relocation against an address says which section it belongs to. The `object`
//! crate's relocation map refuses BPF's relocation types (`R_BPF_64_ABS64`, `R_BPF_64_ABS32`,
//! `R_BPF_64_NODYLD32`), so this module builds its own map from each debug section's relocations
//! and gives gimli a reader that applies it. A relocated address carries its section in the high
//! bits, `(ELF section index + 1) << 40 | offset`, so every address read from DWARF says which code
//! section it is in. Values without a relocation stay as they are (an untagged address is only
//! used when the object has a single code section).
//!
//! Everything is read once into per-section indexes (line sequences, subprogram ranges, inlined
//! call ranges, each sorted by start address) and owned by [`Dwarf`]; lookups are binary searches.
//!
//! # Why not addr2line
//!
//! `addr2line` (0.27, over this module's relocated `gimli::Dwarf`, asked with tagged addresses)
//! gives the same functions and inline chains (names, call lines and columns) for every
//! instruction of the test and bench objects, but:
//! - its file names join the compilation directory (`./branchy.c` for `branchy.c`), and on
//!   line-0 rows it drops the column, which [`Dwarf::rows`] keeps;
//! - it gives up on the whole object where this module skips one unit: a truncated
//!   `.debug_info` unit, about one in eight random edits of the debug sections (as the proptest
//!   in `tests/dwarf.rs` makes), garbled entries (this module reads `.debug_line` on its own),
//!   an unrelocated `.debug_addr` (no instruction placed);
//! - it is slower: building and asking for every instruction of an object of 120,021
//!   instructions takes two to three times as long, for the same memory;
//! - the relocation map, the section tags, reading `.debug_line` without units and
//!   [`Dwarf::rows`] would all stay beside it.

use std::borrow::Cow;
use std::collections::HashMap;

/// A map keyed by section offsets or indices, looked up by the hundred thousand while DWARF is
/// read: hashed with foldhash's fast hasher. (The standard SipHash guards against keys chosen to
/// collide; these are offsets in the object being read, and the lookups cost more with it than
/// the rest of reading the line programs. foldhash's seed is still random per process.)
type OffsetMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

use gimli::{AttributeValue, EndianSlice, RelocateReader, RunTimeEndian};
use object::{
    CompressionFormat, Object as _, ObjectSection as _, ObjectSymbol as _, RelocationFlags,
    RelocationTarget, SectionKind, SymbolSection,
};

use crate::elf::{Elf, SectionId};
use crate::error::{At, Error, Result};

/// Bit position of the section tag in a relocated address.
const TAG_SHIFT: u32 = 40;
/// The offset part of a relocated address.
const OFFSET_MASK: u64 = (1 << TAG_SHIFT) - 1;
/// The largest section tag that fits above [`TAG_SHIFT`].
const MAX_TAG: u64 = (1 << (64 - TAG_SHIFT)) - 1;
/// How many unit or entry errors are kept.
const MAX_ERRORS: usize = 16;
/// How many `DW_AT_abstract_origin` / `DW_AT_specification` links are followed for a name.
const MAX_ORIGIN_HOPS: usize = 16;
/// The file name of a row whose file index names no file.
const UNKNOWN_FILE: &str = "<unknown>";

/// The debug sections read, besides the ones gimli asks for and this object lacks.
const SECTIONS: [gimli::SectionId; 9] = [
    gimli::SectionId::DebugAbbrev,
    gimli::SectionId::DebugAddr,
    gimli::SectionId::DebugInfo,
    gimli::SectionId::DebugLine,
    gimli::SectionId::DebugLineStr,
    gimli::SectionId::DebugStr,
    gimli::SectionId::DebugStrOffsets,
    gimli::SectionId::DebugRanges,
    gimli::SectionId::DebugRngLists,
];

type Slice<'data> = EndianSlice<'data, RunTimeEndian>;
type Reader<'data, 'map> = RelocateReader<Slice<'data>, &'map RelocMap>;
type GimliDwarf<'data, 'map> = gimli::Dwarf<Reader<'data, 'map>>;
type Unit<'data, 'map> = gimli::Unit<Reader<'data, 'map>>;
type LineHeader<'data, 'map> = gimli::LineProgramHeader<Reader<'data, 'map>>;
type Entry<'data, 'map> = gimli::DebuggingInformationEntry<Reader<'data, 'map>>;

/// A source position from DWARF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourcePos<'a> {
    /// The file: directory and name from the line table joined with `/` (relative to the
    /// compilation directory unless absolute), a leading `./` removed.
    pub file: &'a str,
    /// The line, from 1; 0 when the compiler attributes the code to no particular line.
    pub line: u32,
    /// The column, from 1; 0 when DWARF gives none.
    pub column: u32,
}

/// One inlined call, innermost first: `function` was inlined at `call_site`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlinedCall<'a> {
    /// The inlined function's name.
    pub function: &'a str,
    /// Where it was called (`DW_AT_call_file`, `DW_AT_call_line`, `DW_AT_call_column`).
    pub call_site: Option<SourcePos<'a>>,
}

/// What DWARF says about one instruction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DebugLocation<'a> {
    /// The line table row covering the instruction.
    pub pos: Option<SourcePos<'a>>,
    /// The `DW_TAG_subprogram` (outermost, not inlined) containing the instruction.
    pub function: Option<&'a str>,
    /// The inlined calls containing the instruction, innermost first.
    pub inlined: Vec<InlinedCall<'a>>,
}

/// The DWARF line table and inline tree of an object, indexed by code section and byte offset.
pub struct Dwarf {
    /// Interned file paths and function names.
    strings: Vec<Box<str>>,
    /// Per code section (indexed by [`SectionId`]).
    sections: Vec<SectionIndex>,
    /// Units, line programs or entries that could not be read and were skipped.
    errors: Vec<Error>,
}

/// A line table row, its address a byte offset in its code section.
#[derive(Debug, Clone, Copy)]
struct Row {
    address: u64,
    pos: Pos,
}

/// An interned source position.
#[derive(Debug, Clone, Copy)]
struct Pos {
    file: u32,
    line: u32,
    column: u32,
}

/// One inlined subroutine range.
#[derive(Debug, Clone, Copy)]
struct Inline {
    /// Depth of the DIE in the tree: deeper is more inner.
    depth: u32,
    /// Offset of the DIE in `.debug_info`, to count a DIE with several ranges once.
    die: u64,
    name: Option<u32>,
    call_site: Option<Pos>,
}

/// Ranges `[begin, end)` with a payload, sorted by `begin`, for "which ranges contain x" queries.
#[derive(Debug)]
struct Spans<T> {
    items: Vec<(u64, u64, T)>,
    /// `max_end[i]`: the largest `end` among `items[..=i]`, so a backwards scan knows when to stop.
    max_end: Vec<u64>,
}

impl<T> Default for Spans<T> {
    fn default() -> Self {
        Spans {
            items: Vec::new(),
            max_end: Vec::new(),
        }
    }
}

impl<T> Spans<T> {
    fn new(mut items: Vec<(u64, u64, T)>) -> Self {
        items.sort_by_key(|&(begin, _, _)| begin);
        let mut max = 0;
        let max_end = items
            .iter()
            .map(|&(_, end, _)| {
                max = max.max(end);
                max
            })
            .collect();
        Spans { items, max_end }
    }

    /// The payloads of the ranges containing `addr`, latest start first.
    fn containing(&self, addr: u64) -> impl Iterator<Item = &T> + '_ {
        let upto = self.items.partition_point(|&(begin, _, _)| begin <= addr);
        (0..upto)
            .rev()
            .take_while(move |&i| self.max_end.get(i).is_some_and(|&m| m > addr))
            .filter_map(move |i| match self.items.get(i) {
                Some((_, end, payload)) if *end > addr => Some(payload),
                _ => None,
            })
    }
}

/// The DWARF of one code section.
#[derive(Debug, Default)]
struct SectionIndex {
    /// Line sequences `[start, end)`, each with its rows sorted by address.
    lines: Spans<Vec<Row>>,
    /// Subprogram ranges and names.
    functions: Spans<Option<u32>>,
    /// Inlined subroutine ranges.
    inlined: Spans<Inline>,
}

impl std::fmt::Debug for Dwarf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = |g: fn(&SectionIndex) -> usize| self.sections.iter().map(g).sum::<usize>();
        f.debug_struct("Dwarf")
            .field("sections", &self.sections.len())
            .field(
                "rows",
                &count(|s| s.lines.items.iter().map(|(_, _, r)| r.len()).sum()),
            )
            .field("functions", &count(|s| s.functions.items.len()))
            .field("inlined", &count(|s| s.inlined.items.len()))
            .field("errors", &self.errors)
            .finish()
    }
}

impl Dwarf {
    /// Reads DWARF from the object; Ok(None) when it has no .debug_info and no .debug_line.
    ///
    /// A unit, line program or entry that cannot be read is skipped and kept in
    /// [`Dwarf::errors`]; an error is returned when nothing at all could be read.
    pub fn parse(file: &object::File<'_>, elf: &Elf<'_>) -> Result<Option<Dwarf>> {
        if file.section_by_name(".debug_info").is_none()
            && file.section_by_name(".debug_line").is_none()
        {
            return Ok(None);
        }
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut loaded = Vec::new();
        for id in SECTIONS {
            let name = id.name();
            let Some(section) = file.section_by_name(name) else {
                continue;
            };
            let range = section.compressed_file_range().map_err(Error::Elf)?;
            if range.format != CompressionFormat::None {
                return Err(dwarf_error(
                    name,
                    0,
                    "compressed debug sections are not supported",
                ));
            }
            let data = section.data().map_err(|source| Error::SectionData {
                section: name.into(),
                source,
            })?;
            loaded.push((id, data, RelocMap::build(file, &section, name)?));
        }
        let empty = RelocMap::default();
        let Ok(dwarf) = gimli::Dwarf::load(|id| {
            Ok::<_, std::convert::Infallible>(match loaded.iter().find(|(i, _, _)| *i == id) {
                Some((_, data, relocs)) => RelocateReader::new(Slice::new(data, endian), relocs),
                None => RelocateReader::new(Slice::new(&[], endian), &empty),
            })
        });

        let mut builder = Builder::new(file, elf);
        builder.read(&dwarf);
        builder.finish().map(Some)
    }

    /// What DWARF says about the instruction at `byte_offset` in code section `section`.
    pub fn locate(&self, section: SectionId, byte_offset: u64) -> DebugLocation<'_> {
        let Some(index) = self.sections.get(section.0) else {
            return DebugLocation::default();
        };
        let pos = index
            .lines
            .containing(byte_offset)
            .next()
            .and_then(|rows| {
                let i = rows
                    .partition_point(|r| r.address <= byte_offset)
                    .checked_sub(1)?;
                rows.get(i)
            })
            .map(|r| self.pos(r.pos));
        let function = index
            .functions
            .containing(byte_offset)
            .next()
            .and_then(|name| *name)
            .map(|name| self.string(name));
        let mut chain: Vec<&Inline> = index.inlined.containing(byte_offset).collect();
        chain.sort_by_key(|i| (std::cmp::Reverse(i.depth), i.die));
        chain.dedup_by_key(|i| i.die);
        let inlined = chain
            .into_iter()
            .map(|i| InlinedCall {
                function: i.name.map_or("", |n| self.string(n)),
                call_site: i.call_site.map(|p| self.pos(p)),
            })
            .collect();
        DebugLocation {
            pos,
            function,
            inlined,
        }
    }

    /// The line rows of `section` whose address lies in `[start, end)` bytes.
    ///
    /// As `(byte_offset, SourcePos)`, sorted by address, one per address (the last row at an
    /// address wins), `end_sequence` rows excluded.
    pub fn rows(&self, section: SectionId, start: u64, end: u64) -> Vec<(u64, SourcePos<'_>)> {
        let Some(index) = self.sections.get(section.0) else {
            return Vec::new();
        };
        let mut found: Vec<&Row> = Vec::new();
        for (seq_start, seq_end, rows) in &index.lines.items {
            if *seq_start >= end || *seq_end <= start {
                continue;
            }
            let from = rows.partition_point(|r| r.address < start);
            found.extend(
                rows.get(from..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|r| r.address < end),
            );
        }
        found.sort_by_key(|r| r.address);
        let mut out: Vec<(u64, SourcePos<'_>)> = Vec::with_capacity(found.len());
        for row in found {
            let item = (row.address, self.pos(row.pos));
            match out.last_mut() {
                Some(last) if last.0 == row.address => *last = item,
                _ => out.push(item),
            }
        }
        out
    }

    /// Every file a line row or an inlined call site names, each once.
    pub fn files(&self) -> Vec<&str> {
        let mut ids: Vec<u32> = Vec::new();
        for index in &self.sections {
            let rows = index.lines.items.iter().flat_map(|(_, _, rows)| rows);
            ids.extend(rows.map(|r| r.pos.file));
            let calls = index
                .inlined
                .items
                .iter()
                .filter_map(|(_, _, i)| i.call_site);
            ids.extend(calls.map(|p| p.file));
        }
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter().map(|id| self.string(id)).collect()
    }

    /// Units, line programs or entries that could not be read and were skipped.
    pub fn errors(&self) -> &[Error] {
        &self.errors
    }

    fn string(&self, id: u32) -> &str {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.strings.get(i))
            .map_or("", |s| s)
    }

    fn pos(&self, pos: Pos) -> SourcePos<'_> {
        SourcePos {
            file: self.string(pos.file),
            line: pos.line,
            column: pos.column,
        }
    }
}

/// Where a relocation in a debug section points.
#[derive(Debug, Clone, Copy)]
struct RelocTarget {
    /// ELF section index of the symbol's section; `None` for an absolute symbol.
    section: Option<usize>,
    /// The symbol's value (`st_value`): its offset in its section.
    value: u64,
    /// The explicit addend (RELA); `None` when the addend is the value in place (REL).
    addend: Option<i64>,
}

/// The relocations of one debug section, by the offset they patch.
#[derive(Debug, Default)]
struct RelocMap(OffsetMap<usize, RelocTarget>);

impl RelocMap {
    fn build(
        file: &object::File<'_>,
        section: &object::Section<'_, '_>,
        name: &str,
    ) -> Result<Self> {
        let mut map = OffsetMap::default();
        for (offset, reloc) in section.relocations() {
            // R_BPF_NONE patches nothing.
            if let RelocationFlags::Elf { r_type: 0 } = reloc.flags() {
                continue;
            }
            let RelocationTarget::Symbol(index) = reloc.target() else {
                continue;
            };
            let symbol = file.symbol_by_index(index).map_err(|_| {
                dwarf_error(
                    name,
                    offset,
                    &format!("relocation names symbol #{} which does not exist", index.0),
                )
            })?;
            let target_section = match symbol.section() {
                SymbolSection::Section(s) => Some(s.0),
                SymbolSection::Absolute => None,
                // Undefined or common: nothing to add, the value stays as it is.
                _ => continue,
            };
            let Ok(offset) = usize::try_from(offset) else {
                continue;
            };
            map.insert(
                offset,
                RelocTarget {
                    section: target_section,
                    value: symbol.address(),
                    addend: (!reloc.has_implicit_addend()).then_some(reloc.addend()),
                },
            );
        }
        Ok(RelocMap(map))
    }
}

impl RelocTarget {
    /// `S + A`: the symbol's value plus the addend (for REL, the value in place).
    fn apply(&self, in_place: u64) -> Option<u64> {
        match self.addend {
            None => in_place.checked_add(self.value),
            Some(addend) => u64::try_from(i128::from(self.value) + i128::from(addend)).ok(),
        }
    }
}

impl gimli::Relocate for &RelocMap {
    fn relocate_address(&self, offset: usize, value: u64) -> gimli::Result<u64> {
        let Some(target) = self.0.get(&offset) else {
            return Ok(value);
        };
        let address = target.apply(value).ok_or(gimli::Error::AddressOverflow)?;
        let Some(section) = target.section else {
            return Ok(address);
        };
        let tag = u64::try_from(section)
            .ok()
            .and_then(|s| s.checked_add(1))
            .filter(|&t| t <= MAX_TAG)
            .ok_or(gimli::Error::AddressOverflow)?;
        if address > OFFSET_MASK {
            return Err(gimli::Error::AddressOverflow);
        }
        Ok(tag << TAG_SHIFT | address)
    }

    fn relocate_offset(&self, offset: usize, value: usize) -> gimli::Result<usize> {
        let Some(target) = self.0.get(&offset) else {
            return Ok(value);
        };
        let value = value as u64;
        target
            .apply(value)
            .and_then(|v| usize::try_from(v).ok())
            .ok_or(gimli::Error::OffsetOutOfBounds(value))
    }
}

/// An [`Error::Dwarf`] at `offset` in debug section `section`.
fn dwarf_error(section: &str, offset: u64, message: &str) -> Error {
    Error::Dwarf {
        at: At {
            section: section.into(),
            offset,
        },
        message: message.into(),
    }
}

/// Collects rows and ranges while the units are read.
struct Builder {
    /// ELF section index to code section.
    code_sections: OffsetMap<usize, SectionId>,
    /// The code section of untagged addresses: only when there is exactly one.
    only: Option<SectionId>,
    strings: Vec<Box<str>>,
    interned: HashMap<Box<str>, u32>,
    sequences: Vec<Vec<(u64, u64, Vec<Row>)>>,
    functions: Vec<Vec<(u64, u64, Option<u32>)>>,
    inlined: Vec<Vec<(u64, u64, Inline)>>,
    errors: Vec<Error>,
    /// How many units were read.
    units_read: usize,
    /// How many line programs were read.
    programs_read: usize,
}

impl Builder {
    fn new(file: &object::File<'_>, elf: &Elf<'_>) -> Self {
        // Code sections are numbered the way `Elf::parse` numbers them.
        let mut code_sections = OffsetMap::default();
        let mut next = 0;
        for section in file.sections() {
            if section.kind() != SectionKind::Text || section.size() == 0 {
                continue;
            }
            let name = section.name().ok();
            let id = match elf.sections.get(next) {
                Some(s) if Some(s.name.as_str()) == name => Some(SectionId(next)),
                _ => elf
                    .sections
                    .iter()
                    .position(|s| Some(s.name.as_str()) == name)
                    .map(SectionId),
            };
            if let Some(id) = id {
                code_sections.insert(section.index().0, id);
            }
            next += 1;
        }
        let n = elf.sections.len();
        Builder {
            code_sections,
            only: (n == 1).then_some(SectionId(0)),
            strings: Vec::new(),
            interned: HashMap::new(),
            sequences: (0..n).map(|_| Vec::new()).collect(),
            functions: (0..n).map(|_| Vec::new()).collect(),
            inlined: (0..n).map(|_| Vec::new()).collect(),
            errors: Vec::new(),
            units_read: 0,
            programs_read: 0,
        }
    }

    fn finish(mut self) -> Result<Dwarf> {
        if self.units_read == 0 && self.programs_read == 0 && !self.errors.is_empty() {
            return Err(self.errors.swap_remove(0));
        }
        let mut sequences = self.sequences.into_iter();
        let mut functions = self.functions.into_iter();
        let mut inlined = self.inlined.into_iter();
        let mut sections = Vec::new();
        while let (Some(s), Some(f), Some(i)) = (sequences.next(), functions.next(), inlined.next())
        {
            sections.push(SectionIndex {
                lines: Spans::new(s),
                functions: Spans::new(f),
                inlined: Spans::new(i),
            });
        }
        Ok(Dwarf {
            strings: self.strings,
            sections,
            errors: self.errors,
        })
    }

    fn record(&mut self, section: &str, offset: u64, error: gimli::Error) {
        if self.errors.len() < MAX_ERRORS {
            self.errors
                .push(dwarf_error(section, offset, &error.to_string()));
        }
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.strings.push(s.into());
        self.interned.insert(s.into(), id);
        id
    }

    /// The code section and offset of a relocated address.
    fn split(&self, address: u64) -> Option<(SectionId, u64)> {
        let tag = address >> TAG_SHIFT;
        if tag == 0 {
            return self.only.map(|s| (s, address));
        }
        let index = usize::try_from(tag - 1).ok()?;
        let id = *self.code_sections.get(&index)?;
        Some((id, address & OFFSET_MASK))
    }

    /// Reads every unit; then, if no unit led to a line program, `.debug_line` on its own.
    fn read(&mut self, dwarf: &GimliDwarf<'_, '_>) {
        let mut units = dwarf.units();
        let mut offset = 0u64;
        loop {
            let header = match units.next() {
                Ok(Some(header)) => header,
                Ok(None) => break,
                Err(e) => {
                    self.record(".debug_info", offset, e);
                    break;
                }
            };
            let unit_offset = offset;
            offset = offset.saturating_add(header.length_including_self() as u64);
            let unit = match dwarf.unit(header) {
                Ok(unit) => unit,
                Err(e) => {
                    self.record(".debug_info", unit_offset, e);
                    continue;
                }
            };
            self.units_read += 1;
            if let Some(program) = unit.line_program.clone() {
                let at = program.header().offset().0 as u64;
                match self.read_lines(dwarf, Some(&unit), program) {
                    Ok(()) => self.programs_read += 1,
                    Err(e) => self.record(".debug_line", at, e),
                }
            }
            self.read_entries(dwarf, &unit, unit_offset);
        }
        if self.programs_read == 0 {
            self.read_line_section(dwarf);
        }
    }

    /// Reads the line programs of `.debug_line` one after the other, without units.
    fn read_line_section(&mut self, dwarf: &GimliDwarf<'_, '_>) {
        let mut offset = 0usize;
        let len = gimli::Reader::len(gimli::Section::reader(&dwarf.debug_line));
        while offset < len {
            let program =
                match dwarf
                    .debug_line
                    .program(gimli::DebugLineOffset(offset), 8, None, None)
                {
                    Ok(program) => program,
                    Err(e) => {
                        self.record(".debug_line", offset as u64, e);
                        return;
                    }
                };
            let header = program.header();
            let next = header
                .unit_length()
                .checked_add(header.format().initial_length_size().into())
                .and_then(|len| offset.checked_add(len));
            match self.read_lines(dwarf, None, program) {
                Ok(()) => self.programs_read += 1,
                Err(e) => self.record(".debug_line", offset as u64, e),
            }
            match next {
                Some(next) if next > offset => offset = next,
                _ => return,
            }
        }
    }

    /// Runs a line program and keeps its complete sequences.
    fn read_lines<'d, 'm>(
        &mut self,
        dwarf: &GimliDwarf<'d, 'm>,
        unit: Option<&Unit<'d, 'm>>,
        program: gimli::IncompleteLineProgram<Reader<'d, 'm>>,
    ) -> gimli::Result<()> {
        let mut files: OffsetMap<u64, u32> = OffsetMap::default();
        let mut sequence: Vec<(u64, Pos)> = Vec::new();
        let mut rows = program.rows();
        while let Some((header, row)) = rows.next_row()? {
            if row.end_sequence() {
                self.end_sequence(&mut sequence, row.address());
                continue;
            }
            let index = row.file_index();
            let file = match files.get(&index) {
                Some(&file) => file,
                None => {
                    let file = self.file(dwarf, unit, header, index);
                    files.insert(index, file);
                    file
                }
            };
            let line = row.line().map_or(0, |l| saturate(l.get()));
            let column = match row.column() {
                gimli::ColumnType::LeftEdge => 0,
                gimli::ColumnType::Column(c) => saturate(c.get()),
            };
            sequence.push((row.address(), Pos { file, line, column }));
        }
        Ok(())
    }

    /// Stores the rows of a sequence ending at `end` (a relocated address) under its section.
    fn end_sequence(&mut self, sequence: &mut Vec<(u64, Pos)>, end: u64) {
        let raw = std::mem::take(sequence);
        let Some((section, end)) = self.split(end) else {
            return;
        };
        let mut rows: Vec<Row> = raw
            .into_iter()
            .filter_map(|(address, pos)| match self.split(address) {
                Some((s, address)) if s == section && address < end => Some(Row { address, pos }),
                _ => None,
            })
            .collect();
        rows.sort_by_key(|r| r.address);
        let Some(start) = rows.first().map(|r| r.address) else {
            return;
        };
        if let Some(list) = self.sequences.get_mut(section.0) {
            list.push((start, end, rows));
        }
    }

    /// The interned path of file `index` of a line program.
    fn file<'d, 'm>(
        &mut self,
        dwarf: &GimliDwarf<'d, 'm>,
        unit: Option<&Unit<'d, 'm>>,
        header: &LineHeader<'d, 'm>,
        index: u64,
    ) -> u32 {
        let path = file_path(dwarf, unit, header, index);
        self.intern(path.as_deref().unwrap_or(UNKNOWN_FILE))
    }

    /// Records the ranges of every subprogram and inlined subroutine of a unit.
    fn read_entries(&mut self, dwarf: &GimliDwarf<'_, '_>, unit: &Unit<'_, '_>, unit_offset: u64) {
        let header = unit.line_program.as_ref().map(|p| p.header().clone());
        let mut files: OffsetMap<u64, u32> = OffsetMap::default();
        let mut names: OffsetMap<usize, Option<String>> = OffsetMap::default();
        let mut entries = unit.entries();
        loop {
            let entry = match entries.next_dfs() {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                Err(e) => {
                    let at = unit_offset.saturating_add(entries.next_offset().0 as u64);
                    self.record(".debug_info", at, e);
                    break;
                }
            };
            let inlined = match entry.tag() {
                gimli::DW_TAG_subprogram => false,
                gimli::DW_TAG_inlined_subroutine => true,
                _ => continue,
            };
            let die = unit_offset.saturating_add(entry.offset().0 as u64);
            let ranges = match die_ranges(dwarf, unit, entry) {
                Ok(ranges) => ranges,
                Err(e) => {
                    self.record(".debug_info", die, e);
                    continue;
                }
            };
            let ranges: Vec<(SectionId, u64, u64)> = ranges
                .into_iter()
                .filter_map(|(begin, end)| {
                    let (section, begin) = self.split(begin)?;
                    let (end_section, end) = self.split(end)?;
                    (section == end_section && begin < end).then_some((section, begin, end))
                })
                .collect();
            if ranges.is_empty() {
                continue;
            }
            let name = die_name(dwarf, unit, entry, &mut names).map(|n| self.intern(&n));
            if inlined {
                let call_site = self.call_site(dwarf, unit, header.as_ref(), entry, &mut files);
                let depth = u32::try_from(entry.depth()).unwrap_or(0);
                for (section, begin, end) in ranges {
                    if let Some(list) = self.inlined.get_mut(section.0) {
                        let inline = Inline {
                            depth,
                            die,
                            name,
                            call_site,
                        };
                        list.push((begin, end, inline));
                    }
                }
            } else {
                for (section, begin, end) in ranges {
                    if let Some(list) = self.functions.get_mut(section.0) {
                        list.push((begin, end, name));
                    }
                }
            }
        }
    }

    /// `DW_AT_call_file`, `DW_AT_call_line` and `DW_AT_call_column` of an inlined subroutine.
    fn call_site<'d, 'm>(
        &mut self,
        dwarf: &GimliDwarf<'d, 'm>,
        unit: &Unit<'d, 'm>,
        header: Option<&LineHeader<'d, 'm>>,
        entry: &Entry<'d, 'm>,
        files: &mut OffsetMap<u64, u32>,
    ) -> Option<Pos> {
        let number = |name| entry.attr_value(name).and_then(|v| v.udata_value());
        let file = match entry.attr_value(gimli::DW_AT_call_file) {
            Some(AttributeValue::FileIndex(index)) => Some(index),
            Some(value) => value.udata_value(),
            None => None,
        };
        let line = number(gimli::DW_AT_call_line);
        let column = number(gimli::DW_AT_call_column);
        if file.is_none() && line.is_none() && column.is_none() {
            return None;
        }
        let file = match (file, header) {
            (Some(index), Some(header)) => match files.get(&index) {
                Some(&file) => file,
                None => {
                    let file = self.file(dwarf, Some(unit), header, index);
                    files.insert(index, file);
                    file
                }
            },
            _ => self.intern(UNKNOWN_FILE),
        };
        Some(Pos {
            file,
            line: line.map_or(0, saturate),
            column: column.map_or(0, saturate),
        })
    }
}

fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A string attribute, lossily decoded.
fn attr_string(
    dwarf: &GimliDwarf<'_, '_>,
    unit: Option<&Unit<'_, '_>>,
    value: AttributeValue<Reader<'_, '_>>,
) -> Option<String> {
    use gimli::Reader as _;
    let string = match unit {
        Some(unit) => dwarf.attr_string(unit, value),
        None => dwarf.attr_line_string(value),
    };
    string.ok()?.to_string_lossy().ok().map(Cow::into_owned)
}

/// The path of file `index` of a line program: its directory and name joined, relative to the
/// compilation directory unless absolute, a leading `./` removed.
fn file_path(
    dwarf: &GimliDwarf<'_, '_>,
    unit: Option<&Unit<'_, '_>>,
    header: &LineHeader<'_, '_>,
    index: u64,
) -> Option<String> {
    let file = header.file(index)?;
    let mut path = attr_string(dwarf, unit, file.path_name())?;
    if !path.starts_with('/')
        && let Some(dir) = file
            .directory(header)
            .and_then(|d| attr_string(dwarf, unit, d))
    {
        path = join(&dir, &path);
    }
    // Directory 0 is the compilation directory (DWARF 5 lists it, gimli supplies it for DWARF 4);
    // other relative directories are relative to it.
    if !path.starts_with('/')
        && file.directory_index() != 0
        && let Some(base) = header
            .directory(0)
            .and_then(|d| attr_string(dwarf, unit, d))
    {
        path = join(&base, &path);
    }
    Some(strip_dot(path))
}

/// `dir/name`, or `name` when `dir` is empty or `name` absolute.
fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || name.starts_with('/') {
        name.to_owned()
    } else if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// `path` without leading `./` components (`./x.c` is `x.c`).
fn strip_dot(path: String) -> String {
    let mut rest = path.as_str();
    while let Some(r) = rest.strip_prefix("./") {
        rest = r.trim_start_matches('/');
    }
    if rest.len() == path.len() || rest.is_empty() {
        path
    } else {
        rest.to_owned()
    }
}

/// The address ranges of an entry, from `DW_AT_low_pc`/`DW_AT_high_pc` or `DW_AT_ranges`.
///
/// `gimli::Dwarf::die_ranges` less two things the object is not trusted for: gimli 0.34 adds a
/// `DW_AT_high_pc` size to `DW_AT_low_pc` unchecked (a panic with overflow checks on, a wrapped
/// end without; fixed upstream by gimli-rs/gimli#895, which 0.34.0 lacks), and it fails the entry
/// when `DW_AT_low_pc` is not an address where this drops only the range. Use gimli's once a
/// release has the fix (the test `high_pc_past_the_end_of_the_address_space_drops_the_range`).
fn die_ranges(
    dwarf: &GimliDwarf<'_, '_>,
    unit: &Unit<'_, '_>,
    entry: &Entry<'_, '_>,
) -> gimli::Result<Vec<(u64, u64)>> {
    let mut low = None;
    let mut high = None;
    let mut size = None;
    for attr in entry.attrs() {
        match attr.name() {
            gimli::DW_AT_low_pc => low = dwarf.attr_address(unit, attr.value())?,
            gimli::DW_AT_high_pc => match attr.value() {
                AttributeValue::Udata(s) => size = Some(s),
                value => high = dwarf.attr_address(unit, value)?,
            },
            gimli::DW_AT_ranges => {
                if let Some(mut list) = dwarf.attr_ranges(unit, attr.value())? {
                    let mut ranges = Vec::new();
                    while let Some(range) = list.next()? {
                        if range.begin < range.end {
                            ranges.push((range.begin, range.end));
                        }
                    }
                    return Ok(ranges);
                }
            }
            _ => {}
        }
    }
    let end = match (low, size) {
        (Some(low), Some(size)) => low.checked_add(size),
        _ => high,
    };
    Ok(match (low, end) {
        (Some(low), Some(end)) if low < end => vec![(low, end)],
        _ => Vec::new(),
    })
}

/// The name of an entry: `DW_AT_name`, else that of its `DW_AT_abstract_origin` or
/// `DW_AT_specification`, followed a bounded number of times.
fn die_name(
    dwarf: &GimliDwarf<'_, '_>,
    unit: &Unit<'_, '_>,
    entry: &Entry<'_, '_>,
    cache: &mut OffsetMap<usize, Option<String>>,
) -> Option<String> {
    enum Step<T> {
        Name(Option<String>),
        Origin(T),
    }
    let step = |entry: &Entry<'_, '_>| {
        if let Some(name) = entry.attr_value(gimli::DW_AT_name) {
            return Step::Name(attr_string(dwarf, Some(unit), name));
        }
        let origin = entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification));
        match origin {
            Some(AttributeValue::UnitRef(offset)) => Step::Origin(offset),
            Some(AttributeValue::DebugInfoRef(offset)) => match offset.to_unit_offset(&unit.header)
            {
                Some(offset) => Step::Origin(offset),
                None => Step::Name(None),
            },
            _ => Step::Name(None),
        }
    };
    let mut next = match step(entry) {
        Step::Name(name) => return name,
        Step::Origin(offset) => offset,
    };
    let first = next.0;
    if let Some(name) = cache.get(&first) {
        return name.clone();
    }
    let mut name = None;
    for _ in 0..MAX_ORIGIN_HOPS {
        let Ok(origin) = unit.entry(next) else {
            break;
        };
        match step(&origin) {
            Step::Name(found) => {
                name = found;
                break;
            }
            Step::Origin(offset) => next = offset,
        }
    }
    cache.insert(first, name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_find_nested_ranges_innermost_by_depth() {
        // An outer inline [0, 100) holding [10, 50) holding [20, 30), plus a disjoint [60, 70).
        let inline = |depth, die| Inline {
            depth,
            die,
            name: None,
            call_site: None,
        };
        let spans = Spans::new(vec![
            (20, 30, inline(4, 3)),
            (0, 100, inline(2, 1)),
            (60, 70, inline(3, 4)),
            (10, 50, inline(3, 2)),
        ]);
        let dies = |addr| {
            let mut found: Vec<&Inline> = spans.containing(addr).collect();
            found.sort_by_key(|i| std::cmp::Reverse(i.depth));
            found.iter().map(|i| i.die).collect::<Vec<_>>()
        };
        assert_eq!(dies(25), [3, 2, 1]);
        assert_eq!(dies(30), [2, 1]);
        assert_eq!(dies(65), [4, 1]);
        assert_eq!(dies(100), Vec::<u64>::new());
        assert_eq!(Spans::<()>::default().containing(5).count(), 0);
    }

    #[test]
    fn paths_are_joined_and_dot_stripped() {
        assert_eq!(strip_dot(join(".", "x.c")), "x.c");
        assert_eq!(strip_dot(join("./", "./x.c")), "x.c");
        assert_eq!(
            strip_dot(join("/usr/include", "linux/bpf.h")),
            "/usr/include/linux/bpf.h"
        );
        assert_eq!(strip_dot(join("src/", "x.c")), "src/x.c");
        assert_eq!(strip_dot(join("/a", "/b/x.h")), "/b/x.h");
        assert_eq!(strip_dot(join("", "x.c")), "x.c");
        assert_eq!(strip_dot("./".into()), "./");
    }

    #[test]
    fn relocated_addresses_carry_their_section() {
        let mut map = RelocMap::default();
        let target = |section, addend| RelocTarget {
            section,
            value: 0x10,
            addend,
        };
        map.0.insert(0, target(Some(3), None));
        map.0.insert(8, target(None, None));
        map.0.insert(16, target(Some(3), Some(8)));
        map.0.insert(24, target(Some(usize::MAX), None));
        let map = &map;
        use gimli::Relocate as _;
        assert_eq!(map.relocate_address(0, 0x20), Ok(4 << TAG_SHIFT | 0x30));
        assert_eq!(map.relocate_address(8, 0x20), Ok(0x30));
        assert_eq!(map.relocate_address(16, 0x20), Ok(4 << TAG_SHIFT | 0x18));
        assert_eq!(map.relocate_address(32, 0x20), Ok(0x20));
        assert!(map.relocate_address(24, 0).is_err());
        assert!(map.relocate_address(0, u64::MAX - 1).is_err());
        assert_eq!(map.relocate_offset(8, 4), Ok(0x14));
        assert!(map.relocate_offset(16, 0).is_ok());
    }
}
