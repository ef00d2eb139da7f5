//! The `.BTF.ext` section: function info, line info and CO-RE relocations.
//!
//! Mirrors libbpf's `btf_ext__new` / `btf_ext_parse_sec_info` (tools/lib/bpf/btf.c): the header is
//! read through its `hdr_len` (the CO-RE fields only when `hdr_len >= 32`, extra bytes ignored);
//! each info kind is `u32 rec_size` followed by blocks `{sec_name_off, num_info, records}` that must
//! tile the kind's length exactly. Records may be longer than the struct this reader knows; only
//! the known prefix is read. In an object file, `insn_off` is a byte offset in the ELF section.

use crate::btf::read_preamble;
use crate::error::{Error, Result};
use crate::reader::Reader;
use object::Endianness;

/// Smallest header: magic, version, flags, hdr_len, func_info_off/len, line_info_off/len.
const MIN_HDR_LEN: u32 = 24;
/// Header length from which the CO-RE relocation fields are present.
const CORE_HDR_LEN: u32 = 32;

/// One `bpf_line_info` record as stored in the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRecord {
    /// Byte offset of the instruction inside its ELF section.
    pub insn_off: u32,
    /// String-table offset of the file name.
    pub file_name_off: u32,
    /// String-table offset of the source line text.
    pub line_off: u32,
    /// Line number (`line_col >> 10`).
    pub line: u32,
    /// Column (`line_col & 0x3ff`).
    pub col: u32,
    /// Where the record starts inside `.BTF.ext`.
    pub at: u64,
}

/// One `bpf_func_info` record as stored in the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuncRecord {
    /// Byte offset of the function's first instruction inside its ELF section.
    pub insn_off: u32,
    /// BTF type id of the function (a `BTF_KIND_FUNC`).
    pub type_id: u32,
    /// Where the record starts inside `.BTF.ext`.
    pub at: u64,
}

/// One `bpf_core_relo` record: its instruction, type, access string and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreRecord {
    /// Byte offset of the relocated instruction inside its ELF section.
    pub insn_off: u32,
    /// The local BTF type it is about.
    pub type_id: u32,
    /// String-table offset of the access string (`0:1:2`).
    pub access_str_off: u32,
    /// The relocation kind (`enum bpf_core_relo_kind`).
    pub kind: u32,
    /// Where the record starts inside `.BTF.ext`.
    pub at: u64,
}

/// The records of one info kind for one ELF section.
#[derive(Debug, Clone)]
pub struct Block<T> {
    /// String-table offset of the ELF section name this block describes.
    pub sec_name_off: u32,
    /// Where the block header starts inside `.BTF.ext`.
    pub at: u64,
    /// The records, in file order.
    pub records: Vec<T>,
}

/// The parsed `.BTF.ext` section.
#[derive(Debug, Clone, Default)]
pub struct BtfExt {
    /// Function info blocks.
    pub func_info: Vec<Block<FuncRecord>>,
    /// Line info blocks.
    pub line_info: Vec<Block<LineRecord>>,
    /// CO-RE relocation blocks.
    pub core_relo: Vec<Block<CoreRecord>>,
}

impl BtfExt {
    /// Parses a `.BTF.ext` section.
    pub fn parse(data: &[u8], endian: Endianness) -> Result<Self> {
        let mut r = Reader::new(".BTF.ext", data, endian);
        let hdr_len = read_preamble(&mut r, "BTF.ext", MIN_HDR_LEN)?;
        // The header must fit, whatever its declared length.
        let whole = Reader::new(".BTF.ext", data, endian);
        whole.range(0, u64::from(hdr_len), "BTF.ext header")?;
        let func = (r.u32("func_info_off")?, r.u32("func_info_len")?);
        let line = (r.u32("line_info_off")?, r.u32("line_info_len")?);
        let core = if hdr_len >= CORE_HDR_LEN {
            (r.u32("core_relo_off")?, r.u32("core_relo_len")?)
        } else {
            (0, 0)
        };
        let body = whole.range(
            u64::from(hdr_len),
            (data.len() as u64).saturating_sub(u64::from(hdr_len)),
            "BTF.ext header",
        )?;

        let func_info = parse_kind(&body, func, "func_info", 8, |r, at| {
            Ok(FuncRecord {
                insn_off: r.u32("insn_off")?,
                type_id: r.u32("type_id")?,
                at,
            })
        })?;
        let line_info = parse_kind(&body, line, "line_info", 16, |r, at| {
            let insn_off = r.u32("insn_off")?;
            let file_name_off = r.u32("file_name_off")?;
            let line_off = r.u32("line_off")?;
            let line_col = r.u32("line_col")?;
            Ok(LineRecord {
                insn_off,
                file_name_off,
                line_off,
                line: line_col >> 10,
                col: line_col & 0x3ff,
                at,
            })
        })?;
        let core_relo = parse_kind(&body, core, "core_relo", 16, |r, at| {
            let insn_off = r.u32("insn_off")?;
            let type_id = r.u32("type_id")?;
            let access_str_off = r.u32("access_str_off")?;
            Ok(CoreRecord {
                insn_off,
                type_id,
                access_str_off,
                kind: r.u32("kind")?,
                at,
            })
        })?;
        Ok(BtfExt {
            func_info,
            line_info,
            core_relo,
        })
    }
}

/// Parses one info kind: `rec_size`, then blocks tiling `len` bytes at `off` of `body`.
fn parse_kind<'data, T>(
    body: &Reader<'data>,
    (off, len): (u32, u32),
    kind: &'static str,
    min: u32,
    read: impl Fn(&mut Reader<'data>, u64) -> Result<T>,
) -> Result<Vec<Block<T>>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let mut r = body.range(u64::from(off), u64::from(len), kind)?;
    let rec_size_at = r.at();
    let rec_size = r.u32("rec_size")?;
    if rec_size < min || rec_size % 4 != 0 {
        return Err(Error::BadRecordSize {
            at: rec_size_at,
            kind,
            rec_size,
            min,
        });
    }
    let mut blocks = Vec::new();
    while !r.is_empty() {
        let at = r.offset();
        if r.remaining() < 8 {
            return Err(Error::BadHeader {
                at: r.at(),
                what: format!(
                    "{kind}: {} trailing bytes do not form a block header",
                    r.remaining()
                ),
            });
        }
        let sec_name_off = r.u32("sec_name_off")?;
        let num_at = r.at();
        let num_info = r.u32("num_info")?;
        if num_info == 0 {
            return Err(Error::BadHeader {
                at: num_at,
                what: format!("{kind}: block has num_info 0"),
            });
        }
        let total = u64::from(num_info) * u64::from(rec_size);
        if total > r.remaining() as u64 {
            return Err(Error::BadHeader {
                at: num_at,
                what: format!(
                    "{kind}: num_info {num_info} x rec_size {rec_size} = {total} bytes, but only {} remain",
                    r.remaining()
                ),
            });
        }
        let mut records = Vec::with_capacity(num_info as usize);
        for _ in 0..num_info {
            let mut rec = r.split(u64::from(rec_size), "record")?;
            let rec_at = rec.offset();
            records.push(read(&mut rec, rec_at)?);
        }
        blocks.push(Block {
            sec_name_off,
            at,
            records,
        });
    }
    Ok(blocks)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a `.BTF.ext` with the given header length and raw kind payloads.
    pub(crate) fn build_ext(
        big: bool,
        hdr_len: u32,
        func: &[u8],
        line: &[u8],
        core: &[u8],
    ) -> Vec<u8> {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend_from_slice(&if big {
            0xeb9fu16.to_be_bytes()
        } else {
            0xeb9fu16.to_le_bytes()
        });
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&u32b(hdr_len));
        let lens = [func.len() as u32, line.len() as u32, core.len() as u32];
        out.extend_from_slice(&u32b(0));
        out.extend_from_slice(&u32b(lens[0]));
        out.extend_from_slice(&u32b(lens[0]));
        out.extend_from_slice(&u32b(lens[1]));
        if hdr_len >= 32 {
            out.extend_from_slice(&u32b(lens[0] + lens[1]));
            out.extend_from_slice(&u32b(lens[2]));
        }
        out.resize(hdr_len as usize, 0);
        out.extend_from_slice(func);
        out.extend_from_slice(line);
        out.extend_from_slice(core);
        out
    }

    /// Encodes an info kind from `(sec_name_off, records-as-u32-words)` blocks.
    pub(crate) fn kind(big: bool, rec_size: u32, blocks: &[(u32, Vec<Vec<u32>>)]) -> Vec<u8> {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = u32b(rec_size).to_vec();
        for (name, recs) in blocks {
            out.extend_from_slice(&u32b(*name));
            out.extend_from_slice(&u32b(recs.len() as u32));
            for rec in recs {
                let start = out.len();
                for w in rec {
                    out.extend_from_slice(&u32b(*w));
                }
                out.resize(start + rec_size as usize, 0);
            }
        }
        out
    }

    fn err(data: &[u8]) -> String {
        BtfExt::parse(data, Endianness::Little)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_all_kinds_both_orders_longer_records_and_headers() {
        for big in [false, true] {
            for hdr_len in [24, 32, 40] {
                let func = kind(big, 12, &[(1, vec![vec![0, 7, 99]])]);
                let line = kind(
                    big,
                    20,
                    &[
                        (
                            1,
                            vec![vec![0, 5, 9, (12 << 10) | 3], vec![16, 5, 11, 13 << 10]],
                        ),
                        (20, vec![vec![8, 5, 9, 1 << 10]]),
                    ],
                );
                let core = kind(big, 16, &[(1, vec![vec![8, 2, 3, 0]])]);
                let data = build_ext(big, hdr_len, &func, &line, &core);
                let endian = if big {
                    Endianness::Big
                } else {
                    Endianness::Little
                };
                let ext = BtfExt::parse(&data, endian).unwrap();
                assert_eq!(ext.func_info.len(), 1);
                assert_eq!(ext.func_info[0].records[0].type_id, 7);
                assert_eq!(ext.line_info.len(), 2);
                let l = ext.line_info[0].records[0];
                assert_eq!(
                    (l.insn_off, l.file_name_off, l.line_off, l.line, l.col),
                    (0, 5, 9, 12, 3)
                );
                assert_eq!(ext.line_info[0].records[1].insn_off, 16);
                assert_eq!(ext.line_info[1].sec_name_off, 20);
                // CO-RE records exist only when the header is long enough to locate them.
                assert_eq!(ext.core_relo.len(), usize::from(hdr_len >= 32));
            }
        }
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            err(&[0x9f, 0xeb, 2, 0]),
            "section .BTF.ext at offset 0x2: unsupported BTF.ext version 2 (expected 1)"
        );
        let ok = build_ext(false, 32, &[], &[], &[]);
        let mut short = ok.clone();
        short[4] = 20;
        assert_eq!(
            err(&short),
            "section .BTF.ext at offset 0x4: hdr_len 20 is smaller than the 24-byte BTF.ext header"
        );
        let mut long = ok.clone();
        long[4] = 64;
        assert_eq!(
            err(&long),
            "section .BTF.ext at offset 0x0: truncated: BTF.ext header needs 64 bytes, 32 remain"
        );
        assert_eq!(
            err(&ok[..12]),
            "section .BTF.ext at offset 0x0: truncated: BTF.ext header needs 32 bytes, 12 remain"
        );
    }

    #[test]
    fn record_and_block_errors() {
        let line = |rec_size, blocks: &[(u32, Vec<Vec<u32>>)]| {
            build_ext(false, 32, &[], &kind(false, rec_size, blocks), &[])
        };
        let one = vec![(1, vec![vec![0, 1, 1, 1 << 10]])];
        assert_eq!(
            err(&line(12, &one)),
            "section .BTF.ext at offset 0x20: line_info record size 12 is invalid (at least 16, a multiple of 4)"
        );
        assert_eq!(
            err(&line(18, &one)),
            "section .BTF.ext at offset 0x20: line_info record size 18 is invalid (at least 16, a multiple of 4)"
        );
        // An enormous record size: num_info * rec_size is checked against what remains.
        let mut huge = line(16, &one);
        huge[32..36].copy_from_slice(&0x4000_0000u32.to_le_bytes());
        assert_eq!(
            err(&huge),
            "section .BTF.ext at offset 0x28: line_info: num_info 1 x rec_size 1073741824 = 1073741824 bytes, but only 16 remain"
        );
        let mut data = line(16, &one);
        // num_info = u32::MAX: must not overflow or allocate.
        data[32 + 8..32 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            err(&data),
            "section .BTF.ext at offset 0x28: line_info: num_info 4294967295 x rec_size 16 = 68719476720 bytes, but only 16 remain"
        );
        let mut zero = line(16, &one);
        zero[32 + 8..32 + 12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            err(&zero),
            "section .BTF.ext at offset 0x28: line_info: block has num_info 0"
        );
        // Blocks that do not tile the length: line_info_len two bytes longer than its blocks.
        let mut payload = kind(false, 16, &one);
        payload.extend_from_slice(&[0, 0]);
        let untiled = build_ext(false, 32, &[], &payload, &[]);
        assert_eq!(
            err(&untiled),
            "section .BTF.ext at offset 0x3c: line_info: 2 trailing bytes do not form a block header"
        );
        // line_info_len pointing past the end of the section.
        let mut past = line(16, &one);
        past[20..24].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(
            err(&past),
            "section .BTF.ext at offset 0x20: truncated: line_info needs 1000 bytes, 28 remain"
        );
    }
}
