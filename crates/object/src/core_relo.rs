//! CO-RE field relocations: which field an instruction reads, and where a kernel's BTF puts it.
//!
//! The verifier's log prints an instruction after libbpf relocated it against the kernel's BTF,
//! so the offset it shows ties to a field only through that BTF. This module mirrors libbpf's
//! `relo_core.c`: [`FieldAccess::parse`] reads a relocation's access string (`0:1:2`) against the
//! object's own BTF as `bpf_core_parse_spec` does (the first number indexes the root as an
//! array, each next one a member or an array element; anonymous members are walked but named
//! by nothing); [`KernelBtf::field_byte_offset`] finds the same path in the kernel's BTF as
//! `bpf_core_find_cands` + `bpf_core_spec_match` + `bpf_core_calc_field_relo` do: candidate
//! roots of the same kind whose names agree up to a `___flavor` suffix, members matched by
//! name (searching anonymous struct and union members), types checked as
//! `bpf_core_fields_are_compat` checks them, and every matching candidate must agree on the
//! offset. Only `BPF_CORE_FIELD_BYTE_OFFSET` (kind 0) of a field that is no bitfield is
//! computed; anything else, and any path that does not match or matches ambiguously, is
//! `None`: unknown, never a guess.

use crate::btf::Btf;
use crate::btf_types::{
    KIND_ARRAY, KIND_ENUM, KIND_ENUM64, KIND_FLOAT, KIND_FWD, KIND_INT, KIND_PTR, KIND_STRUCT,
    KIND_UNION, Type, Types,
};
use crate::error::{Error, Result};
use object::{Endianness, Object as _, ObjectSection as _};
use std::collections::HashMap;

/// `BPF_CORE_FIELD_BYTE_OFFSET`: the relocation kind whose value is a field's byte offset.
pub const FIELD_BYTE_OFFSET: u32 = 0;

/// The longest access path libbpf accepts (`BPF_CORE_SPEC_MAX_LEN`).
const SPEC_MAX_LEN: usize = 64;

/// The kinds of relocation that follow a field path (`core_relo_is_field_based`).
const FIELD_KINDS: std::ops::RangeInclusive<u32> = 0..=5;

/// A CO-RE relocation record of one instruction (`struct bpf_core_relo` without its offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreRelo {
    /// The relocation kind (`enum bpf_core_relo_kind`).
    pub kind: u32,
    /// The local root type.
    pub type_id: u32,
    /// String-table offset of the access string.
    pub access_str_off: u32,
}

/// One named step of a path: a member (with its name) or an array element (without).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Accessor<'data> {
    /// The struct or union holding the member, or the array's element type.
    type_id: u32,
    /// The member's index or the element's.
    idx: u32,
    /// The member's name; `None` for an array element.
    name: Option<&'data [u8]>,
}

/// The field path of a field relocation, read against the object's own BTF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldAccess<'data> {
    /// The relocation kind.
    pub kind: u32,
    /// The root type's kind.
    root_kind: u32,
    /// The root type's name.
    root_name: &'data [u8],
    /// The named steps (the first is the index into the root as an array).
    accessors: Vec<Accessor<'data>>,
}

impl<'data> FieldAccess<'data> {
    /// Reads the access string of a field relocation against `types` (libbpf's
    /// `bpf_core_parse_spec`); `None` for other kinds and for paths that do not fit the types.
    pub fn parse(types: &Types<'data>, relo: &CoreRelo) -> Option<Self> {
        if !FIELD_KINDS.contains(&relo.kind) {
            return None;
        }
        let raw = parse_access(types.name_at(relo.access_str_off))?;
        let root = types.get(relo.type_id)?;
        let root_name = types.name(&root);
        let (&first, rest) = raw.split_first()?;
        let mut t = types.skip_mods_and_typedefs(relo.type_id)?;
        let mut accessors = vec![Accessor {
            type_id: t.id,
            idx: first,
            name: None,
        }];
        types.resolve_size(t.id)?;
        let mut id = t.id;
        for &idx in rest {
            t = types.skip_mods_and_typedefs(id)?;
            if matches!(t.kind, KIND_STRUCT | KIND_UNION) {
                let m = types.member(&t, idx)?;
                if m.name_off != 0 {
                    let name = types.name_at(m.name_off);
                    if name.is_empty() {
                        return None;
                    }
                    accessors.push(Accessor {
                        type_id: t.id,
                        idx,
                        name: Some(name),
                    });
                }
                id = m.type_id;
            } else if t.kind == KIND_ARRAY {
                let (elem, nelems) = types.array(&t)?;
                let flex = is_flex(types, accessors.last(), nelems);
                let elem = types.skip_mods_and_typedefs(elem)?;
                if !flex && idx >= nelems {
                    return None;
                }
                accessors.push(Accessor {
                    type_id: elem.id,
                    idx,
                    name: None,
                });
                types.resolve_size(elem.id)?;
                id = elem.id;
            } else {
                return None;
            }
        }
        Some(FieldAccess {
            kind: relo.kind,
            root_kind: root.kind,
            root_name,
            accessors,
        })
    }

    /// The root type as C names it: `struct tcp_sock`.
    pub fn root(&self) -> String {
        let keyword = match self.root_kind {
            KIND_STRUCT => "struct ",
            KIND_UNION => "union ",
            KIND_ENUM | KIND_ENUM64 => "enum ",
            _ => "",
        };
        format!("{keyword}{}", String::from_utf8_lossy(self.root_name))
    }

    /// The path below the root as C writes it: `snd_cwnd`, `inet_conn.icsk_ca_state`, `a[3]`
    /// (with `[N]` first when the root itself is indexed).
    pub fn path(&self) -> String {
        let mut out = String::new();
        for (i, a) in self.accessors.iter().enumerate() {
            match a.name {
                Some(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(&String::from_utf8_lossy(name));
                }
                None if i == 0 && a.idx == 0 => {}
                None => out.push_str(&format!("[{}]", a.idx)),
            }
        }
        out
    }
}

/// The access string's numbers (`0:1:2`), at most [`SPEC_MAX_LEN`] of them.
fn parse_access(s: &[u8]) -> Option<Vec<u32>> {
    let s = std::str::from_utf8(s).ok()?;
    if s.is_empty() {
        return None;
    }
    let raw = s
        .split(':')
        .map(|n| n.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()?;
    (raw.len() <= SPEC_MAX_LEN).then_some(raw)
}

/// Whether an array of `nelems` reached through `previous` is a flexible array member: no
/// elements, the last member of its struct (libbpf's `is_flex_arr`).
fn is_flex(types: &Types<'_>, previous: Option<&Accessor<'_>>, nelems: u32) -> bool {
    let Some(previous) = previous.filter(|a| a.name.is_some() && nelems == 0) else {
        return false;
    };
    types
        .get(previous.type_id)
        .is_some_and(|t| previous.idx.checked_add(1) == Some(t.vlen))
}

/// The length of `name` without a `___flavor` suffix (libbpf's
/// `bpf_core_essential_name_len`): cut before the last `X___Y` where X and Y are not `_`.
pub fn essential_name(name: &[u8]) -> &[u8] {
    let cut = name.windows(5).rposition(|w| {
        w[0] != b'_' && w[1] == b'_' && w[2] == b'_' && w[3] == b'_' && w[4] != b'_'
    });
    match cut {
        Some(i) => name.get(..=i).unwrap_or(name),
        None => name,
    }
}

/// Struct and union ids by essential name, hashed with foldhash's fast hasher (the names are
/// the kernel's, and the index is built once per run).
type NameIndex<'data> = HashMap<&'data [u8], Vec<u32>, foldhash::fast::RandomState>;

/// A kernel's BTF (its `/sys/kernel/btf/vmlinux`, or the `.BTF` of an ELF file), with its named
/// types indexed by essential name, to relocate field paths against.
#[derive(Debug, Clone)]
pub struct KernelBtf<'data> {
    types: Types<'data>,
    /// Type ids by essential name, in id order.
    by_name: NameIndex<'data>,
}

impl<'data> KernelBtf<'data> {
    /// Reads raw BTF (by its magic, in either byte order) or the `.BTF` section of an ELF file.
    pub fn parse(data: &'data [u8]) -> Result<Self> {
        let btf = match data.get(..2) {
            Some([0x9f, 0xeb]) => Btf::parse(data, Endianness::Little)?,
            Some([0xeb, 0x9f]) => Btf::parse(data, Endianness::Big)?,
            _ if data.starts_with(b"\x7fELF") => {
                let file = object::File::parse(data)?;
                let endian = if file.is_little_endian() {
                    Endianness::Little
                } else {
                    Endianness::Big
                };
                let section = file
                    .section_by_name(".BTF")
                    .ok_or(Error::MissingSection(".BTF"))?;
                let bytes = section.data().map_err(|source| Error::SectionData {
                    section: ".BTF".into(),
                    source,
                })?;
                Btf::parse(bytes, endian)?
            }
            _ => return Err(Error::NotBtf),
        };
        // Struct and union names, by essential name (a vmlinux BTF has some 10,000).
        let mut named: Vec<(u32, u32)> = Vec::new();
        let types = Types::parse_each(btf, |id, kind, name_off| {
            if name_off != 0 && matches!(kind, KIND_STRUCT | KIND_UNION) {
                named.push((id, name_off));
            }
        })?;
        let mut by_name = NameIndex::default();
        for (id, name_off) in named {
            let name = essential_name(types.name_at(name_off));
            if !name.is_empty() {
                by_name.entry(name).or_default().push(id);
            }
        }
        Ok(KernelBtf { types, by_name })
    }

    /// How many types it has.
    pub fn len(&self) -> u32 {
        self.types.len()
    }

    /// Whether it has no types.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The byte offset this BTF gives `access` (read against `local`), as libbpf relocates a
    /// `BPF_CORE_FIELD_BYTE_OFFSET`: `None` unless every candidate root that matches agrees and
    /// the field is no bitfield.
    pub fn field_byte_offset(&self, local: &Types<'_>, access: &FieldAccess<'_>) -> Option<u32> {
        if access.kind != FIELD_BYTE_OFFSET || !matches!(access.root_kind, KIND_STRUCT | KIND_UNION)
        {
            return None;
        }
        let candidates = self.by_name.get(essential_name(access.root_name))?;
        let mut found = None;
        for &id in candidates {
            let Some(t) = self.types.get(id) else {
                continue;
            };
            if t.kind != access.root_kind {
                continue;
            }
            match self.match_spec(local, access, id) {
                Match::No => {}
                Match::Error => return None,
                Match::Offset(off) => match found {
                    None => found = Some(off),
                    Some(seen) if seen == off => {}
                    Some(_) => return None,
                },
            }
        }
        found
    }

    /// `access` matched against candidate root `root` (libbpf's `bpf_core_spec_match`, then
    /// `bpf_core_calc_field_relo` for a byte offset).
    fn match_spec(&self, local: &Types<'_>, access: &FieldAccess<'_>, root: u32) -> Match {
        let target = &self.types;
        let mut bit_offset: u64 = 0;
        let mut id = root;
        // The target's last step: the struct and member index of a named one.
        let mut last: Option<(Type, u32)> = None;
        let mut raw_len = 0usize;
        for (i, acc) in access.accessors.iter().enumerate() {
            let Some(t) = target.skip_mods_and_typedefs(id) else {
                return Match::Error;
            };
            id = t.id;
            if acc.name.is_some() {
                let mut searched = Searched::default();
                let found = self.match_member(
                    local,
                    acc,
                    t.id,
                    &mut bit_offset,
                    &mut raw_len,
                    0,
                    &mut searched,
                );
                match found {
                    MemberMatch::Found { holder, idx, next } => {
                        last = Some((holder, idx));
                        id = next;
                    }
                    MemberMatch::No { .. } => return Match::No,
                    MemberMatch::Error => return Match::Error,
                }
            } else {
                if i > 0 {
                    if t.kind != KIND_ARRAY {
                        return Match::No;
                    }
                    let Some((elem, nelems)) = target.array(&t) else {
                        return Match::Error;
                    };
                    let flex = last.is_some_and(|(holder, idx)| {
                        nelems == 0 && idx.checked_add(1) == Some(holder.vlen)
                    });
                    if !flex && acc.idx >= nelems {
                        return Match::No;
                    }
                    let Some(elem) = target.skip_mods_and_typedefs(elem) else {
                        return Match::Error;
                    };
                    id = elem.id;
                }
                raw_len += 1;
                if raw_len > SPEC_MAX_LEN {
                    return Match::Error;
                }
                let Some(size) = target.resolve_size(id) else {
                    return Match::Error;
                };
                let Some(add) = u64::from(acc.idx)
                    .checked_mul(size)
                    .and_then(|b| b.checked_mul(8))
                else {
                    return Match::Error;
                };
                bit_offset = bit_offset.saturating_add(add);
                last = None;
            }
        }
        if let Some((holder, idx)) = last {
            let Some(m) = target.member(&holder, idx) else {
                return Match::Error;
            };
            if m.bitfield_size > 0 {
                // libbpf works a bitfield's load out from its size: left unknown here.
                return Match::Error;
            }
        }
        if !bit_offset.is_multiple_of(8) {
            return Match::Error;
        }
        u32::try_from(bit_offset / 8).map_or(Match::Error, Match::Offset)
    }

    /// Finds the member `acc` names in target struct or union `targ_id`, searching anonymous
    /// members too (libbpf's `bpf_core_match_member`), adding its bit offset.
    ///
    /// libbpf walks the anonymous members as a tree; types are a graph, and a type that many
    /// members share is searched once (`searched`): the work grows with the types and their
    /// members, not with the ways down to them.
    #[allow(clippy::too_many_arguments)]
    fn match_member(
        &self,
        local: &Types<'_>,
        acc: &Accessor<'_>,
        targ_id: u32,
        bit_offset: &mut u64,
        raw_len: &mut usize,
        depth: usize,
        searched: &mut Searched,
    ) -> MemberMatch {
        let target = &self.types;
        let Some(t) = target.skip_mods_and_typedefs(targ_id) else {
            return MemberMatch::Error;
        };
        if !matches!(t.kind, KIND_STRUCT | KIND_UNION) {
            return MemberMatch::No { levels: None };
        }
        let (Some(local_t), Some(name)) = (local.get(acc.type_id), acc.name) else {
            return MemberMatch::Error;
        };
        let Some(local_m) = local.member(&local_t, acc.idx) else {
            return MemberMatch::Error;
        };
        // Searched before, without a match and leaving the path as it was: the same again,
        // unless its members, read this deep, reach the longest path (libbpf's error).
        if let Some(&levels) = searched.get(&t.id) {
            return match levels {
                Some(l) if (*raw_len).max(depth) + l >= SPEC_MAX_LEN => MemberMatch::Error,
                levels => MemberMatch::No { levels },
            };
        }
        let entered = *raw_len;
        // The deepest level below `t` (0: its own) whose members were read.
        let mut deepest: Option<usize> = None;
        for i in 0..t.vlen {
            crate::count_work(1);
            let Some(m) = target.member(&t, i) else {
                return MemberMatch::Error;
            };
            if *raw_len >= SPEC_MAX_LEN || depth >= SPEC_MAX_LEN {
                return MemberMatch::Error;
            }
            deepest = deepest.max(Some(0));
            let here = u64::from(m.bit_offset);
            let targ_name = target.name_at(m.name_off);
            if targ_name.is_empty() {
                *bit_offset = bit_offset.saturating_add(here);
                *raw_len += 1;
                let inner = self.match_member(
                    local,
                    acc,
                    m.type_id,
                    bit_offset,
                    raw_len,
                    depth + 1,
                    searched,
                );
                match inner {
                    MemberMatch::No { levels } => {
                        *bit_offset = bit_offset.saturating_sub(here);
                        *raw_len -= 1;
                        deepest = deepest.max(levels.map(|l| l + 1));
                    }
                    found => return found,
                }
            } else if targ_name == name {
                *bit_offset = bit_offset.saturating_add(here);
                *raw_len += 1;
                // An incompatible type is no match, and (as libbpf) the path keeps the member.
                return match fields_compatible(local, local_m.type_id, target, m.type_id) {
                    Some(true) => MemberMatch::Found {
                        holder: t,
                        idx: i,
                        next: m.type_id,
                    },
                    Some(false) => MemberMatch::No { levels: deepest },
                    None => MemberMatch::Error,
                };
            }
        }
        // Remembered only when the path is as it was: a member kept by a search below
        // (an incompatible one) changes what comes after.
        if *raw_len == entered {
            searched.insert(t.id, deepest);
        }
        MemberMatch::No { levels: deepest }
    }
}

/// The types a member search went through without a match, the path left as it was: for each,
/// the deepest level of members below it that was read (0: its own; `None`: none were).
type Searched = HashMap<u32, Option<usize>>;

/// What matching a path against one candidate root gave.
enum Match {
    /// The candidate has no such field.
    No,
    /// The BTF does not allow an answer (libbpf would fail the relocation, or its answer is
    /// not computed here).
    Error,
    /// The field's byte offset.
    Offset(u32),
}

/// What searching a struct for a member gave.
enum MemberMatch {
    /// No such member; `levels`: the deepest level of members read below the struct (0: its
    /// own), `None` when none were.
    No {
        levels: Option<usize>,
    },
    Error,
    /// Member `idx` of `holder`, of type `next`.
    Found {
        holder: Type,
        idx: u32,
        next: u32,
    },
}

/// Whether a local field type and a target one are compatible for a field relocation (libbpf's
/// `bpf_core_fields_are_compat`); `None` when the BTF does not allow an answer.
fn fields_compatible(
    local: &Types<'_>,
    local_id: u32,
    target: &Types<'_>,
    targ_id: u32,
) -> Option<bool> {
    let (mut local_id, mut targ_id) = (local_id, targ_id);
    for _ in 0..32 {
        let l = local.skip_mods_and_typedefs(local_id)?;
        let t = target.skip_mods_and_typedefs(targ_id)?;
        let composite = |k| matches!(k, KIND_STRUCT | KIND_UNION);
        if composite(l.kind) && composite(t.kind) {
            return Some(true);
        }
        let enums = |k| matches!(k, KIND_ENUM | KIND_ENUM64);
        if l.kind != t.kind && !(enums(l.kind) && enums(t.kind)) {
            return Some(false);
        }
        match l.kind {
            KIND_PTR | KIND_FLOAT => return Some(true),
            KIND_FWD | KIND_ENUM | KIND_ENUM64 => {
                let a = essential_name(local.name(&l));
                let b = essential_name(target.name(&t));
                return Some(a.is_empty() || b.is_empty() || a == b);
            }
            KIND_INT => {
                return Some(local.int_offset(&l)? == 0 && target.int_offset(&t)? == 0);
            }
            KIND_ARRAY => {
                local_id = local.array(&l)?.0;
                targ_id = target.array(&t)?.0;
            }
            _ => return Some(false),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WORK;
    use crate::btf_types::KIND_CONST;
    use crate::btf_types::tests::{build, info};
    use std::cell::Cell;

    /// A kernel BTF whose task_struct holds 16 anonymous members of a struct holding 16 of the
    /// next, `depth` levels deep, before `pid` (tests/fixtures/hostile/costs.py): the member
    /// search reads members in proportion to the levels, not 16^levels, and finds the offsets
    /// of the BTF the levels were added to.
    #[test]
    fn anonymous_members_shared_are_searched_once() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let data = std::fs::read(fixtures.join("select/obj/core_field.o")).unwrap();
        let object = crate::BpfObject::parse(&data).unwrap();
        let types = object.types().unwrap();
        let layout = object.layout(object.programs()[0]).unwrap();
        let accesses: Vec<FieldAccess<'_>> = (object.core_accesses(&layout).into_iter())
            .filter_map(|(_, _, access)| access)
            .collect();
        assert!(!accesses.is_empty());
        let offsets = |btf: &std::path::Path| {
            let data = std::fs::read(btf).unwrap();
            let kernel = KernelBtf::parse(&data).unwrap();
            WORK.with(|w| w.set(0));
            let offsets: Vec<Option<u32>> = (accesses.iter())
                .map(|a| kernel.field_byte_offset(&types, a))
                .collect();
            (offsets, WORK.with(Cell::get))
        };
        let (expected, _) = offsets(&fixtures.join("select/btf/vmlinux.min.btf"));
        assert!(expected.iter().all(Option::is_some));
        let mut work: Vec<u64> = Vec::new();
        for depth in [2, 4, 8] {
            let btf = fixtures.join(format!("hostile/costs/fanout.{depth}.btf"));
            let (found, read) = offsets(&btf);
            assert_eq!(found, expected, "depth {depth}");
            // Twice the levels, at most a little more than twice the members read.
            if let Some(&before) = work.last() {
                assert!(
                    read * 5 < before * 12,
                    "members read at depths 2, 4, 8: {work:?} then {read}"
                );
            }
            work.push(read);
        }
        eprintln!("members read at depths 2, 4, 8: {work:?}");
    }

    #[test]
    fn essential_names_drop_the_flavor() {
        assert_eq!(essential_name(b"tcp_sock___old"), b"tcp_sock");
        assert_eq!(essential_name(b"a___b___c"), b"a___b");
        assert_eq!(essential_name(b"tcp_sock"), b"tcp_sock");
        assert_eq!(essential_name(b"___x"), b"___x");
        assert_eq!(essential_name(b"x____"), b"x____");
    }

    /// The byte-offset relocation of local type 2 with the access string at `access_str_off`.
    fn field<'a>(local: &Types<'a>, access_str_off: u32) -> Option<FieldAccess<'a>> {
        let relo = CoreRelo {
            kind: FIELD_BYTE_OFFSET,
            type_id: 2,
            access_str_off,
        };
        FieldAccess::parse(local, &relo)
    }

    /// A local BTF: 1 int; 2 struct sk___local { int a; int b; }; strings for the access
    /// strings "0:1" and "0:0".
    fn local() -> Vec<u8> {
        build(
            &[
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![5, info(KIND_STRUCT, 2), 8, 16, 1, 0, 18, 1, 32],
            ],
            &["int", "sk___local", "a", "b", "0:1", "0:0"],
        )
    }

    /// A kernel BTF: 1 int; 2 struct sk { int x; union { int a; }; const int b; }.
    fn kernel() -> Vec<u8> {
        build(
            &[
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![5, info(KIND_STRUCT, 3), 16, 8, 1, 0, 0, 3, 32, 12, 4, 64],
                vec![0, info(KIND_UNION, 1), 4, 10, 1, 0],
                vec![0, info(KIND_CONST, 0), 1],
            ],
            &["int", "sk", "x", "a", "b"],
        )
    }

    #[test]
    fn field_offsets_follow_names_through_anonymous_members() {
        let local_data = local();
        let local = Types::parse(Btf::parse(&local_data, Endianness::Little).unwrap()).unwrap();
        let kernel_data = kernel();
        let kernel = KernelBtf::parse(&kernel_data).unwrap();
        let access = |off| field(&local, off).unwrap();
        // "0:1" (b): local offset 4, the kernel's 8 (through `const int`).
        let b = access(20);
        assert_eq!(
            (b.root(), b.path()),
            ("struct sk___local".into(), "b".into())
        );
        assert_eq!(kernel.field_byte_offset(&local, &b), Some(8));
        // "0:0" (a): inside the kernel's anonymous union at 4.
        let a = access(24);
        assert_eq!(a.path(), "a");
        assert_eq!(kernel.field_byte_offset(&local, &a), Some(4));
    }

    /// A struct searched once without a match answers as searched again would, at any depth:
    /// where its members, read deeper, reach libbpf's longest path, the search fails there
    /// too. Struct sk { anonymous S; anonymous K; int b; }, S a chain of 4 anonymous structs,
    /// K one of `k`, its last holding S (shared) or a copy of S: the same answers for each `k`,
    /// found for short chains and unknown for long ones.
    #[test]
    fn a_struct_searched_again_deeper_reaches_the_longest_path_as_before() {
        let local_data = local();
        let local = Types::parse(Btf::parse(&local_data, Endianness::Little).unwrap()).unwrap();
        let b = field(&local, 20).unwrap();
        // Anonymous structs from `first` on, each holding the next, the last holding `last`
        // (or nothing).
        let chain = |first: u32, len: u32, last: Option<u32>| -> Vec<Vec<u32>> {
            (0..len)
                .map(|i| match (i + 1 < len, last) {
                    (true, _) => vec![0, info(KIND_STRUCT, 1), 0, 0, first + i + 1, 0],
                    (false, Some(t)) => vec![0, info(KIND_STRUCT, 1), 0, 0, t, 0],
                    (false, None) => vec![0, info(KIND_STRUCT, 0), 0],
                })
                .collect()
        };
        let offset = |k: u32, shared: bool| {
            let (s, chain_k) = (3, 7);
            let mut types = vec![
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![5, info(KIND_STRUCT, 3), 8, 0, s, 0, 0, chain_k, 0, 8, 1, 32],
            ];
            types.extend(chain(s, 4, None));
            let copy = chain_k + k;
            types.extend(chain(chain_k, k, Some(if shared { s } else { copy })));
            types.extend(chain(copy, 4, None));
            let data = build(&types, &["int", "sk", "b"]);
            let kernel = KernelBtf::parse(&data).unwrap();
            kernel.field_byte_offset(&local, &b)
        };
        let answers: Vec<Option<u32>> = (40..70).map(|k| offset(k, false)).collect();
        assert_eq!(answers.first(), Some(&Some(4)));
        assert_eq!(answers.last(), Some(&None));
        for (k, answer) in (40..70).zip(answers) {
            assert_eq!(offset(k, true), answer, "a chain of {k}");
        }
    }

    #[test]
    fn unknown_when_the_field_or_root_is_missing_or_ambiguous() {
        let local_data = local();
        let local = Types::parse(Btf::parse(&local_data, Endianness::Little).unwrap()).unwrap();
        let b = field(&local, 20).unwrap();
        // b's offset in a kernel BTF of these types (after 1: int) and names.
        let offset = |types: &[Vec<u32>], names: &[&str]| {
            let mut all = vec![vec![1, info(KIND_INT, 0), 4, 32]];
            all.extend_from_slice(types);
            let data = build(&all, names);
            KernelBtf::parse(&data)
                .unwrap()
                .field_byte_offset(&local, &b)
        };
        // No member b.
        let no_b = [vec![5, info(KIND_STRUCT, 1), 4, 8, 1, 0]];
        assert_eq!(offset(&no_b, &["int", "sk", "x"]), None);
        // Two roots `sk` and `sk___v2` putting b at different offsets: unknown; agreeing: known.
        let names = ["int", "sk", "b", "sk___v2"];
        let disagree = [
            vec![5, info(KIND_STRUCT, 1), 4, 8, 1, 0],
            vec![10, info(KIND_STRUCT, 1), 8, 8, 1, 32],
        ];
        assert_eq!(offset(&disagree, &names), None);
        let agree = [
            vec![5, info(KIND_STRUCT, 1), 4, 8, 1, 32],
            vec![10, info(KIND_STRUCT, 1), 8, 8, 1, 32],
        ];
        assert_eq!(offset(&agree, &names), Some(4));
    }

    #[test]
    fn arrays_root_indices_and_bitfields() {
        // Local: 1 int; 2 struct s { int n; int arr[4]; }; 3 int[4].
        let local_data = build(
            &[
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![5, info(KIND_STRUCT, 2), 20, 7, 1, 0, 9, 3, 32],
                vec![0, info(KIND_ARRAY, 0), 0, 1, 1, 4],
            ],
            &["int", "s", "n", "arr", "0:1:2", "1:0", "0:0", "0:1:9"],
        );
        let local = Types::parse(Btf::parse(&local_data, Endianness::Little).unwrap()).unwrap();
        let access = |off| field(&local, off).unwrap();
        // Kernel: struct s { int n: 3 (a bitfield, kflag); long pad; int arr[8]; } of 24 bytes,
        // arr at 12.
        let kernel_data = build(
            &[
                vec![1, info(KIND_INT, 0), 4, 32],
                vec![
                    5,
                    1 << 31 | info(KIND_STRUCT, 2),
                    24,
                    7,
                    1,
                    3 << 24,
                    9,
                    3,
                    96,
                ],
                vec![0, info(KIND_ARRAY, 0), 0, 1, 1, 8],
            ],
            &["int", "s", "n", "arr"],
        );
        let kernel = KernelBtf::parse(&kernel_data).unwrap();
        // "0:1:2": arr[2], at 12 + 2 * 4.
        let element = access(13);
        assert_eq!(element.path(), "arr[2]");
        assert_eq!(kernel.field_byte_offset(&local, &element), Some(20));
        // "1:0": s[1].n, a bitfield in the kernel: unknown.
        let second = access(19);
        assert_eq!(second.path(), "[1].n");
        assert_eq!(kernel.field_byte_offset(&local, &second), None);
        // Another kind than a byte offset: unknown.
        let mut exists = access(23);
        exists.kind = 2;
        assert_eq!(kernel.field_byte_offset(&local, &exists), None);
        // An index past the local array: no path.
        assert_eq!(field(&local, 27), None);
        assert_eq!(parse_access(b"0:x"), None);
        assert_eq!(parse_access(b""), None);
        assert_eq!(parse_access(&b"0:".repeat(70)[..139]), None);
    }

    #[test]
    fn not_btf_is_an_error() {
        assert_eq!(
            KernelBtf::parse(b"hello").unwrap_err().to_string(),
            "neither raw BTF (magic 0xeb9f) nor an ELF file with a .BTF section"
        );
    }
}
