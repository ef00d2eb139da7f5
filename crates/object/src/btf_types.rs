//! The type section of a `.BTF`: each type by id, with its members and array data.
//!
//! CO-RE relocations name a local type and a path of members through it; to say which fields
//! two programs read, and to find the offset a kernel's BTF gives the same path, the types must
//! be readable by id. [`Types::parse`] walks the section once (as the kernel's
//! `btf_check_all_metas` does: `struct btf_type` and each kind's trailing data, see
//! `btf_type_size`), keeping where each type starts; a type is read again only when asked for.
//! Every count is checked against the bytes that remain before anything is kept, so a hostile
//! `vlen` or a truncated section is an error naming the offset, never an allocation.

use crate::btf::Btf;
use crate::error::{At, Error, Result};
use crate::reader::Reader;
use std::sync::Arc;

/// `BTF_KIND_INT`.
pub const KIND_INT: u32 = 1;
/// `BTF_KIND_PTR`.
pub const KIND_PTR: u32 = 2;
/// `BTF_KIND_ARRAY`.
pub const KIND_ARRAY: u32 = 3;
/// `BTF_KIND_STRUCT`.
pub const KIND_STRUCT: u32 = 4;
/// `BTF_KIND_UNION`.
pub const KIND_UNION: u32 = 5;
/// `BTF_KIND_ENUM`.
pub const KIND_ENUM: u32 = 6;
/// `BTF_KIND_FWD`.
pub const KIND_FWD: u32 = 7;
/// `BTF_KIND_TYPEDEF`.
pub const KIND_TYPEDEF: u32 = 8;
/// `BTF_KIND_VOLATILE`.
pub const KIND_VOLATILE: u32 = 9;
/// `BTF_KIND_CONST`.
pub const KIND_CONST: u32 = 10;
/// `BTF_KIND_RESTRICT`.
pub const KIND_RESTRICT: u32 = 11;
/// `BTF_KIND_FLOAT`.
pub const KIND_FLOAT: u32 = 16;
/// `BTF_KIND_DATASEC`.
pub const KIND_DATASEC: u32 = 15;
/// `BTF_KIND_TYPE_TAG`.
pub const KIND_TYPE_TAG: u32 = 18;
/// `BTF_KIND_ENUM64`.
pub const KIND_ENUM64: u32 = 19;

/// How deep chains of modifiers and typedefs, and array nesting, are followed: the kernel's
/// and libbpf's `MAX_RESOLVE_DEPTH` (32). A loop in a hostile BTF ends here.
const RESOLVE_DEPTH: u32 = 32;

/// One type's common part (`struct btf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Type {
    /// Its id.
    pub id: u32,
    /// The kind (`BTF_KIND_*`).
    pub kind: u32,
    /// String-table offset of its name (0: anonymous).
    pub name_off: u32,
    /// How many members, enumerators or parameters follow it.
    pub vlen: u32,
    /// The kind flag (for a struct or union: member offsets carry a bitfield size).
    pub kflag: bool,
    /// Its size (int, struct, union, enum, float, datasec) or the type it refers to.
    pub size_or_type: u32,
    /// Where its trailing data starts inside the section.
    data_at: u64,
}

/// One member of a struct or union (`struct btf_member`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// String-table offset of its name (0: an anonymous struct or union member).
    pub name_off: u32,
    /// Its type.
    pub type_id: u32,
    /// Its offset in bits from the start of the struct.
    pub bit_offset: u32,
    /// Its size in bits when a bitfield (0 otherwise).
    pub bitfield_size: u32,
}

/// The type section of a `.BTF`, indexed by type id.
#[derive(Debug, Clone)]
pub struct Types<'data> {
    btf: Btf<'data>,
    /// Where each type starts inside the type section, by id - 1 (shared: an object keeps its
    /// index apart from its bytes, see [`crate::BpfObject::types`]).
    starts: Arc<[u32]>,
}

impl<'data> Types<'data> {
    /// Walks the type section of `btf`, checking each type's trailing data fits.
    pub fn parse(btf: Btf<'data>) -> Result<Self> {
        Types::parse_each(btf, |_, _, _| {})
    }

    /// [`Types::parse`], telling `each` every type's id, kind and name offset on the way (one
    /// walk for an index of one's own).
    pub(crate) fn parse_each(btf: Btf<'data>, mut each: impl FnMut(u32, u32, u32)) -> Result<Self> {
        let mut r = btf.type_reader();
        // Each type is at least 12 bytes: the index is bounded by the section's size.
        let mut starts = Vec::with_capacity(r.remaining() / 12);
        while !r.is_empty() {
            let start = r.offset();
            let name_off = r.u32("type name_off")?;
            let info_at = r.at();
            let info = r.u32("type info")?;
            let _size_or_type = r.u32("type size")?;
            let kind = (info >> 24) & 0x1f;
            let vlen = u64::from(info & 0xffff);
            let extra = match kind {
                KIND_INT | 14 | 17 => 4, // INT, VAR, DECL_TAG
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => vlen * 12,
                KIND_ENUM | 13 => vlen * 8, // ENUM, FUNC_PROTO
                KIND_PTR | KIND_FWD..=12 | KIND_FLOAT | KIND_TYPE_TAG => 0,
                _ => {
                    return Err(Error::BadHeader {
                        at: info_at,
                        what: format!(
                            "type {}: unknown BTF kind {kind}",
                            starts.len().saturating_add(1)
                        ),
                    });
                }
            };
            r.skip(extra, "type's members")?;
            let start = start.saturating_sub(btf.types_offset());
            each(
                u32::try_from(starts.len())
                    .unwrap_or(u32::MAX)
                    .saturating_add(1),
                kind,
                name_off,
            );
            starts.push(u32::try_from(start).map_err(|_| Error::BadHeader {
                at: info_at,
                what: "type section larger than 4 GiB".into(),
            })?);
        }
        Ok(Types {
            btf,
            starts: starts.into(),
        })
    }

    /// The types of `btf` under an index [`Types::parse`] made of it earlier.
    pub(crate) fn with_index(btf: Btf<'data>, starts: Arc<[u32]>) -> Self {
        Types { btf, starts }
    }

    /// The index, to keep apart from the bytes.
    pub(crate) fn index(&self) -> Arc<[u32]> {
        Arc::clone(&self.starts)
    }

    /// The `.BTF` the types belong to (its strings).
    pub fn btf(&self) -> &Btf<'data> {
        &self.btf
    }

    /// How many types there are (ids 1 to this; 0 is void).
    pub fn len(&self) -> u32 {
        u32::try_from(self.starts.len()).unwrap_or(u32::MAX)
    }

    /// Whether there are no types.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Type `id` (`None` for void, 0, and ids past the last).
    pub fn get(&self, id: u32) -> Option<Type> {
        let start = *self.starts.get(usize::try_from(id).ok()?.checked_sub(1)?)?;
        let mut r = self.btf.type_reader();
        r.skip(u64::from(start), "type").ok()?;
        let name_off = r.u32("type name_off").ok()?;
        let info = r.u32("type info").ok()?;
        let size_or_type = r.u32("type size").ok()?;
        Some(Type {
            id,
            kind: (info >> 24) & 0x1f,
            name_off,
            vlen: info & 0xffff,
            kflag: info >> 31 == 1,
            size_or_type,
            data_at: r.offset(),
        })
    }

    /// The name of `t` (empty when anonymous or when its offset is bad).
    pub fn name(&self, t: &Type) -> &'data [u8] {
        self.name_at(t.name_off)
    }

    /// The string at `offset` (empty when bad).
    pub fn name_at(&self, offset: u32) -> &'data [u8] {
        self.btf
            .string(offset, || At {
                section: ".BTF".into(),
                offset: 0,
            })
            .unwrap_or_default()
    }

    /// Member `i` of struct or union `t`.
    pub fn member(&self, t: &Type, i: u32) -> Option<Member> {
        if !matches!(t.kind, KIND_STRUCT | KIND_UNION) || i >= t.vlen {
            return None;
        }
        let mut r = self.data_reader(t)?;
        r.skip(u64::from(i) * 12, "member").ok()?;
        let name_off = r.u32("member name_off").ok()?;
        let type_id = r.u32("member type").ok()?;
        let offset = r.u32("member offset").ok()?;
        let (bit_offset, bitfield_size) = if t.kflag {
            (offset & 0xff_ffff, offset >> 24)
        } else {
            (offset, 0)
        };
        Some(Member {
            name_off,
            type_id,
            bit_offset,
            bitfield_size,
        })
    }

    /// The element type and element count of array `t`.
    pub fn array(&self, t: &Type) -> Option<(u32, u32)> {
        if t.kind != KIND_ARRAY {
            return None;
        }
        let mut r = self.data_reader(t)?;
        let elem = r.u32("array type").ok()?;
        let _index = r.u32("array index_type").ok()?;
        let nelems = r.u32("array nelems").ok()?;
        Some((elem, nelems))
    }

    /// The bit offset of int `t`'s value inside its storage (deprecated bitfield-like ints
    /// have one).
    pub fn int_offset(&self, t: &Type) -> Option<u32> {
        if t.kind != KIND_INT {
            return None;
        }
        let mut r = self.data_reader(t)?;
        let encoding = r.u32("int encoding").ok()?;
        Some((encoding >> 16) & 0xff)
    }

    fn data_reader(&self, t: &Type) -> Option<Reader<'data>> {
        let mut r = self.btf.type_reader();
        let start = t.data_at.checked_sub(self.btf.types_offset())?;
        r.skip(start, "type data").ok()?;
        Some(r)
    }

    /// Type `id` with its modifiers and typedefs skipped (libbpf's `skip_mods_and_typedefs`).
    pub fn skip_mods_and_typedefs(&self, id: u32) -> Option<Type> {
        let mut t = self.get(id)?;
        for _ in 0..RESOLVE_DEPTH {
            if !matches!(
                t.kind,
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG
            ) {
                return Some(t);
            }
            t = self.get(t.size_or_type)?;
        }
        None
    }

    /// The size in bytes of type `id` (libbpf's `btf__resolve_size`; a pointer is 8 bytes).
    pub fn resolve_size(&self, id: u32) -> Option<u64> {
        let mut id = id;
        let mut count = 1u64;
        for _ in 0..RESOLVE_DEPTH {
            let t = self.get(id)?;
            match t.kind {
                KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_DATASEC
                | KIND_FLOAT => return count.checked_mul(u64::from(t.size_or_type)),
                KIND_PTR => return count.checked_mul(8),
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG | 14 => {
                    id = t.size_or_type
                }
                KIND_ARRAY => {
                    let (elem, nelems) = self.array(&t)?;
                    count = count.checked_mul(u64::from(nelems))?;
                    id = elem;
                }
                _ => return None,
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use object::Endianness;

    /// Builds a little-endian `.BTF` from type records (each as u32 words) and strings.
    pub(crate) fn build(types: &[Vec<u32>], strings: &[&str]) -> Vec<u8> {
        let mut table = vec![0u8];
        for s in strings {
            table.extend_from_slice(s.as_bytes());
            table.push(0);
        }
        let body: Vec<u8> = types
            .iter()
            .flatten()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        let mut out = Vec::new();
        out.extend_from_slice(&0xeb9fu16.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for w in [
            24,
            0,
            body.len() as u32,
            body.len() as u32,
            table.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&body);
        out.extend_from_slice(&table);
        out
    }

    /// `info` of a type of `kind` with `vlen` entries.
    pub(crate) fn info(kind: u32, vlen: u32) -> u32 {
        kind << 24 | vlen
    }

    #[test]
    fn reads_types_members_arrays_and_sizes() {
        // 1: int (4 bytes); 2: struct s { int a; int b[3]; } (16 bytes); 3: int[3]; 4: const s.
        let data = build(
            &[
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![5, info(KIND_STRUCT, 2), 16, 7, 1, 0, 9, 3, 32],
                vec![0, info(KIND_ARRAY, 0), 0, 1, 1, 3],
                vec![0, info(KIND_CONST, 0), 2],
            ],
            &["int", "s", "a", "b"],
        );
        let btf = Btf::parse(&data, Endianness::Little).unwrap();
        let types = Types::parse(btf).unwrap();
        assert_eq!(types.len(), 4);
        let s = types.skip_mods_and_typedefs(4).unwrap();
        assert_eq!((s.id, types.name(&s)), (2, &b"s"[..]));
        let b = types.member(&s, 1).unwrap();
        assert_eq!((types.name_at(b.name_off), b.bit_offset), (&b"b"[..], 32));
        assert_eq!(types.member(&s, 2), None);
        assert_eq!(types.array(&types.get(3).unwrap()), Some((1, 3)));
        assert_eq!(types.resolve_size(3), Some(12));
        assert_eq!(types.resolve_size(4), Some(16));
        assert_eq!(types.get(0), None);
        assert_eq!(types.get(5), None);
    }

    #[test]
    fn hostile_types_are_errors_naming_the_offset() {
        // A struct claiming 0xffff members in a section that holds one.
        let data = build(&[vec![1, info(KIND_STRUCT, 0xffff), 4, 0, 0, 0]], &["s"]);
        let btf = Btf::parse(&data, Endianness::Little).unwrap();
        assert_eq!(
            Types::parse(btf).unwrap_err().to_string(),
            "section .BTF at offset 0x24: truncated: type's members needs 786420 bytes, 12 remain"
        );
        let data = build(&[vec![1, info(25, 0), 4]], &["s"]);
        let btf = Btf::parse(&data, Endianness::Little).unwrap();
        assert_eq!(
            Types::parse(btf).unwrap_err().to_string(),
            "section .BTF at offset 0x1c: type 1: unknown BTF kind 25"
        );
        // A typedef that names itself: no loop.
        let data = build(&[vec![1, info(KIND_TYPEDEF, 0), 1]], &["t"]);
        let btf = Btf::parse(&data, Endianness::Little).unwrap();
        let types = Types::parse(btf).unwrap();
        assert_eq!(types.skip_mods_and_typedefs(1), None);
        assert_eq!(types.resolve_size(1), None);
    }
}
