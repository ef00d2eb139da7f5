//! The reader gimli is given: each debug section with its own relocations applied, a relocated
//! address tagged with its code section (see the module docs of [`super`]).

use gimli::{EndianSlice, RelocateReader, RunTimeEndian};
use object::{
    Object as _, ObjectSection as _, ObjectSymbol as _, RelocationFlags, RelocationTarget,
    SymbolSection,
};

use super::{OffsetMap, dwarf_error};
use crate::error::Result;

/// Bit position of the section tag in a relocated address.
pub(super) const TAG_SHIFT: u32 = 40;
/// The offset part of a relocated address.
pub(super) const OFFSET_MASK: u64 = (1 << TAG_SHIFT) - 1;
/// The largest section tag that fits above [`TAG_SHIFT`].
const MAX_TAG: u64 = (1 << (64 - TAG_SHIFT)) - 1;

pub(super) type Slice<'data> = EndianSlice<'data, RunTimeEndian>;
pub(super) type Reader<'data, 'map> = RelocateReader<Slice<'data>, &'map RelocMap>;
pub(super) type GimliDwarf<'data, 'map> = gimli::Dwarf<Reader<'data, 'map>>;

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
pub(super) struct RelocMap(OffsetMap<usize, RelocTarget>);

impl RelocMap {
    pub(super) fn build(
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

#[cfg(test)]
mod tests {
    use super::*;

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
