//! The `.BTF` section: its header and string table.
//!
//! Mirrors the checks of the kernel's `btf_parse_hdr` / `btf_parse_str_sec` (kernel/bpf/btf.c):
//! the header is read through its own `hdr_len`, so headers longer than the known 24 bytes are
//! accepted and their extra bytes ignored. The string table holds the section names, file names
//! and source line text that `.BTF.ext` records point into; the types are read by
//! [`crate::Types`].

use crate::error::{At, Error, Result};
use crate::reader::Reader;
use object::Endianness;

/// The magic number that starts `.BTF` and `.BTF.ext`.
pub(crate) const BTF_MAGIC: u16 = 0xeb9f;
/// The size of the header this reader knows (`struct btf_header`).
const KNOWN_HDR_LEN: u32 = 24;

/// Checks the magic at the start of `.BTF` or `.BTF.ext`, naming a byte-order mismatch.
pub(crate) fn check_magic(r: &mut Reader<'_>) -> Result<()> {
    let at = r.at();
    let found = r.u16("magic")?;
    if found == BTF_MAGIC {
        return Ok(());
    }
    let swapped = if found == BTF_MAGIC.swap_bytes() {
        " in the ELF's byte order; this one is byte-swapped"
    } else {
        ""
    };
    Err(Error::BadMagic { at, found, swapped })
}

/// Reads the preamble `.BTF` and `.BTF.ext` share (magic, version 1, flags, `hdr_len`) and
/// returns `hdr_len`, at least `min` (`what` names the format in messages).
pub(crate) fn read_preamble(r: &mut Reader<'_>, what: &str, min: u32) -> Result<u32> {
    check_magic(r)?;
    let version_at = r.at();
    let version = r.u8("version")?;
    if version != 1 {
        return Err(Error::BadHeader {
            at: version_at,
            what: format!("unsupported {what} version {version} (expected 1)"),
        });
    }
    let _flags = r.u8("flags")?;
    let hdr_len_at = r.at();
    let hdr_len = r.u32("hdr_len")?;
    if hdr_len < min {
        return Err(Error::BadHeader {
            at: hdr_len_at,
            what: format!("hdr_len {hdr_len} is smaller than the {min}-byte {what} header"),
        });
    }
    Ok(hdr_len)
}

/// The parsed `.BTF` section: a validated string table.
#[derive(Debug, Clone, Copy)]
pub struct Btf<'data> {
    /// The type section, and where it starts inside `.BTF`.
    types: &'data [u8],
    types_at: u64,
    endian: Endianness,
    strings: &'data [u8],
    strings_at: u64,
}

impl<'data> Btf<'data> {
    /// Parses the header of a `.BTF` section and locates its string table.
    pub fn parse(data: &'data [u8], endian: Endianness) -> Result<Self> {
        let mut r = Reader::new(".BTF", data, endian);
        let hdr_len = read_preamble(&mut r, "BTF", KNOWN_HDR_LEN)?;
        let type_off = r.u32("type_off")?;
        let type_len = r.u32("type_len")?;
        let str_off = r.u32("str_off")?;
        let str_len = r.u32("str_len")?;
        let whole = Reader::new(".BTF", data, endian);
        let body = whole.range(
            u64::from(hdr_len),
            (data.len() as u64).saturating_sub(u64::from(hdr_len)),
            "BTF header",
        )?;
        let strings = body.range(u64::from(str_off), u64::from(str_len), "string table")?;
        let strings_at = strings.offset();
        let mut s = strings;
        let bytes = s.bytes(u64::from(str_len), "string table")?;
        if bytes.first().is_some_and(|&b| b != 0) {
            return Err(Error::BadHeader {
                at: At {
                    section: ".BTF".into(),
                    offset: strings_at,
                },
                what: "string table does not start with an empty string".into(),
            });
        }
        let mut t = body.range(u64::from(type_off), u64::from(type_len), "type section")?;
        let types_at = t.offset();
        let types = t.bytes(u64::from(type_len), "type section")?;
        Ok(Btf {
            types,
            types_at,
            endian,
            strings: bytes,
            strings_at,
        })
    }

    /// The exception callbacks the types name: `(program, callback)` for each decl tag
    /// `exception_callback:CALLBACK` on a function `PROGRAM` (libbpf's `__exception_cb`).
    ///
    /// Walks the type section (`struct btf_type` and each kind's trailing data, as the
    /// kernel's `btf_type_size`); it stops quietly at a kind it does not know or at a type that
    /// runs past the section: what was read before still counts.
    pub fn exception_callbacks(&self) -> Vec<(&'data [u8], &'data [u8])> {
        const FUNC: u32 = 12;
        const DECL_TAG: u32 = 17;
        const PREFIX: &[u8] = b"exception_callback:";
        let at = || At {
            section: ".BTF".into(),
            offset: self.types_at,
        };
        let mut r = Reader::new(".BTF", self.types, self.endian);
        // Type ids count from 1; id 0 is void.
        let mut funcs: Vec<(u32, u32)> = Vec::new();
        let mut tags: Vec<(u32, u32)> = Vec::new();
        let mut id = 0u32;
        while !r.is_empty() {
            crate::count_work(1);
            id = id.saturating_add(1);
            let (Ok(name_off), Ok(info), Ok(size_or_type)) =
                (r.u32("name_off"), r.u32("info"), r.u32("type"))
            else {
                break;
            };
            let kind = (info >> 24) & 0x1f;
            let vlen = u64::from(info & 0xffff);
            let extra = match kind {
                1 | 14 | 17 => 4,             // INT, VAR, DECL_TAG
                3 => 12,                      // ARRAY
                4 | 5 | 15 | 19 => vlen * 12, // STRUCT, UNION, DATASEC, ENUM64
                6 | 13 => vlen * 8,           // ENUM, FUNC_PROTO
                2 | 7..=12 | 16 | 18 => 0, // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
                _ => break,
            };
            let mut component = None;
            if kind == DECL_TAG {
                component = r.u32("component_idx").ok();
            } else if r.skip(extra, "type data").is_err() {
                break;
            }
            match kind {
                FUNC => funcs.push((id, name_off)),
                DECL_TAG if component == Some(u32::MAX) => tags.push((size_or_type, name_off)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        for (target, tag) in tags {
            let Ok(tag) = self.string(tag, at) else {
                continue;
            };
            let Some(callback) = tag.strip_prefix(PREFIX) else {
                continue;
            };
            // `funcs` is in id order.
            let func = funcs.binary_search_by_key(&target, |&(fid, _)| fid);
            if let Some(&(_, name)) = func.ok().and_then(|i| funcs.get(i))
                && let Ok(program) = self.string(name, at)
            {
                out.push((program, callback));
            }
        }
        out
    }

    /// The NUL-terminated string at `offset` in the string table, without its terminator.
    ///
    /// `at` names the record that holds the offset, for the error.
    pub fn string(&self, offset: u32, at: impl FnOnce() -> At) -> Result<&'data [u8]> {
        let len = self.strings.len() as u64;
        // An offset equal to the length names no byte of the table.
        let Some(tail) = usize::try_from(offset)
            .ok()
            .filter(|&o| o < self.strings.len())
            .and_then(|o| self.strings.get(o..))
        else {
            return Err(Error::BadString {
                at: at(),
                offset,
                problem: "is outside the string table",
                len,
            });
        };
        match memchr::memchr(0, tail) {
            Some(end) => Ok(tail.get(..end).unwrap_or_default()),
            None => Err(Error::BadString {
                at: at(),
                offset,
                problem: "has no NUL terminator",
                len,
            }),
        }
    }

    /// A cursor over the type section (offsets are `.BTF`'s).
    pub(crate) fn type_reader(&self) -> Reader<'data> {
        Reader::new_at(".BTF", self.types, self.endian, self.types_at)
    }

    /// Where the type section starts inside `.BTF`.
    pub(crate) fn types_offset(&self) -> u64 {
        self.types_at
    }

    /// Where the string table starts inside `.BTF`.
    pub fn strings_offset(&self) -> u64 {
        self.strings_at
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a little- or big-endian `.BTF` with no types and the given strings.
    pub(crate) fn build_btf(strings: &[&str], big: bool, hdr_len: u32) -> Vec<u8> {
        let mut table = vec![0u8];
        for s in strings {
            table.extend_from_slice(s.as_bytes());
            table.push(0);
        }
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend_from_slice(&if big {
            BTF_MAGIC.to_be_bytes()
        } else {
            BTF_MAGIC.to_le_bytes()
        });
        out.push(1);
        out.push(0);
        out.extend_from_slice(&u32b(hdr_len));
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(table.len() as u32));
        out.resize(hdr_len as usize, 0);
        out.extend_from_slice(&table);
        out
    }

    fn at() -> At {
        At {
            section: ".BTF.ext".into(),
            offset: 0x20,
        }
    }

    #[test]
    fn reads_strings_in_both_byte_orders_and_longer_headers() {
        for big in [false, true] {
            for hdr_len in [24, 32] {
                let data = build_btf(&["xdp", "a.c"], big, hdr_len);
                let endian = if big {
                    Endianness::Big
                } else {
                    Endianness::Little
                };
                let btf = Btf::parse(&data, endian).unwrap();
                assert_eq!(btf.string(1, at).unwrap(), b"xdp");
                assert_eq!(btf.string(5, at).unwrap(), b"a.c");
                assert_eq!(btf.string(0, at).unwrap(), b"");
            }
        }
    }

    #[test]
    fn byte_swapped_magic_is_named() {
        let data = build_btf(&[], true, 24);
        let err = Btf::parse(&data, Endianness::Little)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "section .BTF at offset 0x0: bad magic 0x9feb (expected 0xeb9f in the ELF's byte order; this one is byte-swapped)"
        );
        let err = Btf::parse(&[0, 0], Endianness::Little)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "section .BTF at offset 0x0: bad magic 0x0000 (expected 0xeb9f)"
        );
    }

    #[test]
    fn header_errors() {
        let mut data = build_btf(&["x"], false, 24);
        data[2] = 2;
        assert_eq!(
            Btf::parse(&data, Endianness::Little)
                .unwrap_err()
                .to_string(),
            "section .BTF at offset 0x2: unsupported BTF version 2 (expected 1)"
        );
        let data = build_btf(&["x"], false, 24);
        let mut short = data.clone();
        short[4] = 16;
        assert_eq!(
            Btf::parse(&short, Endianness::Little)
                .unwrap_err()
                .to_string(),
            "section .BTF at offset 0x4: hdr_len 16 is smaller than the 24-byte BTF header"
        );
        assert_eq!(
            Btf::parse(&data[..10], Endianness::Little)
                .unwrap_err()
                .to_string(),
            "section .BTF at offset 0x8: truncated: type_off needs 4 bytes, 2 remain"
        );
        // str_len runs past the end of the section.
        let mut long = data.clone();
        long[20] = 200;
        assert_eq!(
            Btf::parse(&long, Endianness::Little)
                .unwrap_err()
                .to_string(),
            "section .BTF at offset 0x18: truncated: string table needs 200 bytes, 3 remain"
        );
        let mut nonempty = data.clone();
        nonempty[24] = b'x';
        assert_eq!(
            Btf::parse(&nonempty, Endianness::Little)
                .unwrap_err()
                .to_string(),
            "section .BTF at offset 0x18: string table does not start with an empty string"
        );
    }

    #[test]
    fn bad_string_offsets() {
        let data = build_btf(&["abc"], false, 24);
        let btf = Btf::parse(&data, Endianness::Little).unwrap();
        assert_eq!(
            btf.string(99, at).unwrap_err().to_string(),
            "section .BTF.ext at offset 0x20: string offset 99 is outside the string table (string table is 5 bytes)"
        );
        let mut unterminated = data.clone();
        unterminated.pop();
        unterminated[20] = 4;
        let btf = Btf::parse(&unterminated, Endianness::Little).unwrap();
        assert_eq!(
            btf.string(1, at).unwrap_err().to_string(),
            "section .BTF.ext at offset 0x20: string offset 1 has no NUL terminator (string table is 4 bytes)"
        );
    }
}
