//! Reading DWARF once into the indexes: the line programs (without units as well as with them),
//! the subprograms and inlined calls of each unit, names through their abstract origins, paths
//! joined to their directories.

use std::borrow::Cow;
use std::collections::HashMap;

use gimli::AttributeValue;
use object::{Object as _, ObjectSection as _, SectionKind};

use super::reloc::{GimliDwarf, OFFSET_MASK, Reader, TAG_SHIFT};
use super::{Dwarf, DwarfRow, Inline, OffsetMap, Pos, SectionIndex, Spans, dwarf_error};
use crate::elf::{Elf, SectionId};
use crate::error::{Error, Result};

/// How many unit or entry errors are kept.
const MAX_ERRORS: usize = 16;
/// How many `DW_AT_abstract_origin` / `DW_AT_specification` links are followed for a name.
const MAX_ORIGIN_HOPS: usize = 16;
/// The file name of a row whose file index names no file.
const UNKNOWN_FILE: &str = "<unknown>";

type Unit<'data, 'map> = gimli::Unit<Reader<'data, 'map>>;
type LineHeader<'data, 'map> = gimli::LineProgramHeader<Reader<'data, 'map>>;
type Entry<'data, 'map> = gimli::DebuggingInformationEntry<Reader<'data, 'map>>;

/// Collects rows and ranges while the units are read.
pub(super) struct Builder {
    /// ELF section index to code section.
    code_sections: OffsetMap<usize, SectionId>,
    /// The code section of untagged addresses: only when there is exactly one.
    only: Option<SectionId>,
    strings: Vec<Box<str>>,
    interned: HashMap<Box<str>, u32>,
    sequences: Vec<Vec<(u64, u64, Vec<DwarfRow>)>>,
    functions: Vec<Vec<(u64, u64, Option<u32>)>>,
    inlined: Vec<Vec<(u64, u64, Inline)>>,
    errors: Vec<Error>,
    /// How many units were read.
    units_read: usize,
    /// How many line programs were read.
    programs_read: usize,
}

impl Builder {
    pub(super) fn new(file: &object::File<'_>, elf: &Elf<'_>) -> Self {
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

    pub(super) fn finish(mut self) -> Result<Dwarf> {
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
    pub(super) fn read(&mut self, dwarf: &GimliDwarf<'_, '_>) {
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
        let mut rows: Vec<DwarfRow> = raw
            .into_iter()
            .filter_map(|(address, pos)| match self.split(address) {
                Some((s, address)) if s == section && address < end => {
                    Some(DwarfRow { address, pos })
                }
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
    enum NameStep<T> {
        Name(Option<String>),
        Origin(T),
    }
    let step = |entry: &Entry<'_, '_>| {
        if let Some(name) = entry.attr_value(gimli::DW_AT_name) {
            return NameStep::Name(attr_string(dwarf, Some(unit), name));
        }
        let origin = entry
            .attr_value(gimli::DW_AT_abstract_origin)
            .or_else(|| entry.attr_value(gimli::DW_AT_specification));
        match origin {
            Some(AttributeValue::UnitRef(offset)) => NameStep::Origin(offset),
            Some(AttributeValue::DebugInfoRef(offset)) => match offset.to_unit_offset(&unit.header)
            {
                Some(offset) => NameStep::Origin(offset),
                None => NameStep::Name(None),
            },
            _ => NameStep::Name(None),
        }
    };
    let mut next = match step(entry) {
        NameStep::Name(name) => return name,
        NameStep::Origin(offset) => offset,
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
            NameStep::Name(found) => {
                name = found;
                break;
            }
            NameStep::Origin(offset) => next = offset,
        }
    }
    cache.insert(first, name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
