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

use std::collections::HashMap;

/// A map keyed by section offsets or indices, looked up by the hundred thousand while DWARF is
/// read: hashed with foldhash's fast hasher. (The standard SipHash guards against keys chosen to
/// collide; these are offsets in the object being read, and the lookups cost more with it than
/// the rest of reading the line programs. foldhash's seed is still random per process.)
type OffsetMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

use gimli::{RelocateReader, RunTimeEndian};
use object::{CompressionFormat, Object as _, ObjectSection as _};

use crate::elf::{Elf, SectionId};
use crate::error::{At, Error, Result};
use build::Builder;
use reloc::{RelocMap, Slice};

mod build;
mod reloc;

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
struct DwarfRow {
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
    lines: Spans<Vec<DwarfRow>>,
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
        let mut found: Vec<&DwarfRow> = Vec::new();
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
}
