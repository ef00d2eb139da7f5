//! Line info a loader already has: the `bpf_line_info` records and BTF strings it hands to
//! `BPF_PROG_LOAD`.
//!
//! A loader that laid its program out itself knows its final line info exactly: the records it
//! passes in `line_info` are the ones the kernel's `verbose_linfo` (kernel/bpf/log.c) looks up.
//! [`Program::from_line_info`] builds a [`Program`] from them, without an object, after the checks
//! the kernel's `check_btf_line` (kernel/bpf/verifier.c) makes, so that
//! [`annotate()`](fn@crate::annotate), [`profile`](crate::profile::profile) and
//! [`locate`](fn@crate::locate) work on it as on a program read from an object. Without an object
//! there are no instructions, functions or DWARF: the rich style shows the record's `file:line:col`
//! in the program, and a log is checked against it only by its instruction indices.

use crate::{Origin, Program};
use bpflog_object::{Layout, LineOrigin, LineRow, LineTable, Loader};

/// One `struct bpf_line_info` (include/uapi/linux/bpf.h), as a loader passes it to
/// `BPF_PROG_LOAD`.
///
/// Unlike the records of an object's `.BTF.ext`, whose `insn_off` counts bytes into an ELF
/// section, `insn_off` here is an instruction index in the loaded program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BpfLineInfo {
    /// Index of the first instruction the record covers.
    pub insn_off: u32,
    /// Offset of the file name in the BTF string section.
    pub file_name_off: u32,
    /// Offset of the source line's text in the BTF string section.
    pub line_off: u32,
    /// Line number `<< 10 |` column (`BPF_LINE_INFO_LINE_NUM`, `BPF_LINE_INFO_LINE_COL`).
    pub line_col: u32,
}

impl BpfLineInfo {
    /// The line number (`line_col >> 10`).
    pub fn line(&self) -> u32 {
        self.line_col >> 10
    }

    /// The column (`line_col & 0x3ff`; 0 when unknown).
    pub fn col(&self) -> u32 {
        self.line_col & 0x3ff
    }
}

/// Why line info records cannot describe a program: the kernel would refuse them too.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineInfoError {
    /// A record does not come after the previous one.
    #[error(
        "line_info[{index}].insn_off {insn_off} is not after the previous record's {previous} (records must be sorted, as the kernel requires)"
    )]
    Unsorted {
        /// The record's position.
        index: usize,
        /// Its `insn_off`.
        insn_off: u32,
        /// The previous record's `insn_off`.
        previous: u32,
    },
    /// A record starts past the program's last instruction.
    #[error("line_info[{index}].insn_off {insn_off} is past the program's {len} instructions")]
    PastEnd {
        /// The record's position.
        index: usize,
        /// Its `insn_off`.
        insn_off: u32,
        /// The program's instruction count.
        len: u32,
    },
    /// A string offset names no NUL-terminated string of the string section.
    #[error("line_info[{index}].{field} {offset} {problem} ({len}-byte string section)")]
    BadString {
        /// The record's position.
        index: usize,
        /// `file_name_off` or `line_off`.
        field: &'static str,
        /// The offset.
        offset: u32,
        /// What is wrong with it.
        problem: &'static str,
        /// The string section's size.
        len: usize,
    },
}

/// The NUL-terminated string at `offset` of `strings`, without its terminator.
fn string<'s>(
    strings: &'s [u8],
    index: usize,
    field: &'static str,
    offset: u32,
) -> Result<&'s [u8], LineInfoError> {
    let bad = |problem| LineInfoError::BadString {
        index,
        field,
        offset,
        problem,
        len: strings.len(),
    };
    let tail = usize::try_from(offset)
        .ok()
        .and_then(|o| strings.get(o..))
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad("is outside the string section"))?;
    let end = memchr::memchr(0, tail).ok_or_else(|| bad("has no NUL terminator"))?;
    Ok(tail.get(..end).unwrap_or_default())
}

impl<'o, 'data> Program<'o, 'data> {
    /// A program described by the line info a loader passes to `BPF_PROG_LOAD`: `records` (its
    /// `line_info`, sorted by `insn_off`), `strings` (the string section of the program's BTF:
    /// in a raw BTF blob, the `str_len` bytes at `hdr_len + str_off`), `insn_cnt` (the number of
    /// instructions loaded) and the program's name.
    ///
    /// The records are checked as the kernel checks them: strictly increasing `insn_off` below
    /// `insn_cnt`, and string offsets that name NUL-terminated strings.
    ///
    /// ```
    /// use bpflog::{AnnotateOptions, BpfLineInfo, Input, LogData, Program};
    /// let strings = b"\0prog.c\0\tint x = *p;\0\treturn x;\0";
    /// let records = [
    ///     BpfLineInfo { insn_off: 0, file_name_off: 1, line_off: 8, line_col: 3 << 10 | 10 },
    ///     BpfLineInfo { insn_off: 2, file_name_off: 1, line_off: 21, line_col: 4 << 10 | 2 },
    /// ];
    /// let program = Program::from_line_info("my_prog", &records, strings, 3)?;
    /// let log = "0: (79) r0 = *(u64 *)(r1 +0)\n1: (bf) r1 = r0\n2: (95) exit\n";
    /// let mut out = Vec::new();
    /// let input = Input::of(&program, LogData::Stream(log.as_bytes()));
    /// bpflog::annotate(input, &mut out, &AnnotateOptions::default(), |_, _| Ok(()))?;
    /// assert_eq!(
    ///     String::from_utf8(out)?,
    ///     "; int x = *p; @ prog.c:3\n0: (79) r0 = *(u64 *)(r1 +0)\n1: (bf) r1 = r0\n\
    ///      ; return x; @ prog.c:4\n2: (95) exit\n"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_line_info(
        name: &'o str,
        records: &[BpfLineInfo],
        strings: &'o [u8],
        insn_cnt: u32,
    ) -> Result<Self, LineInfoError> {
        let mut rows = Vec::with_capacity(records.len());
        let mut previous: Option<u32> = None;
        for (index, r) in records.iter().enumerate() {
            if let Some(previous) = previous
                && r.insn_off <= previous
            {
                return Err(LineInfoError::Unsorted {
                    index,
                    insn_off: r.insn_off,
                    previous,
                });
            }
            if r.insn_off >= insn_cnt {
                return Err(LineInfoError::PastEnd {
                    index,
                    insn_off: r.insn_off,
                    len: insn_cnt,
                });
            }
            previous = Some(r.insn_off);
            rows.push(LineRow {
                insn: r.insn_off,
                file_name_off: r.file_name_off,
                file: string(strings, index, "file_name_off", r.file_name_off)?,
                line: r.line(),
                col: r.col(),
                text: string(strings, index, "line_off", r.line_off)?,
            });
        }
        Ok(Program {
            origin: Origin::LineInfo { name },
            loader: Loader::Libbpf,
            layout: Layout {
                parts: Vec::new(),
                len: insn_cnt,
            },
            lines: LineTable::new(rows, insn_cnt, LineOrigin::Btf),
            core_offsets: Vec::new(),
            kernel_btf: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRINGS: &[u8] = b"\0a/b.c\0  x = 1;\0unterminated";

    fn rec(insn_off: u32, file_name_off: u32, line_off: u32) -> BpfLineInfo {
        BpfLineInfo {
            insn_off,
            file_name_off,
            line_off,
            line_col: 7 << 10 | 5,
        }
    }

    #[test]
    fn records_become_rows() {
        let p = Program::from_line_info("p", &[rec(0, 1, 7), rec(4, 1, 0)], STRINGS, 6).unwrap();
        assert_eq!(p.name(), "p");
        assert!(p.object().is_none() && p.function().is_none());
        let row = p.lines.find(3).unwrap();
        assert_eq!((row.file, row.line, row.col), (&b"a/b.c"[..], 7, 5));
        assert_eq!(row.trimmed_text(), b"x = 1;");
        assert_eq!(p.lines.find(5).unwrap().text, b"");
        assert_eq!(p.lines.find(6), None);
    }

    #[test]
    fn rich_style_locate_and_profile_without_an_object() {
        let p = Program::from_line_info("p", &[rec(0, 1, 7), rec(4, 1, 0)], STRINGS, 6).unwrap();
        let src = crate::locate(&p, 5).unwrap();
        assert_eq!((src.file, src.line, src.column), (&b"a/b.c"[..], 7, 5));
        assert_eq!((src.function, src.inlined.len()), ("p", 0));
        assert_eq!(crate::locate(&p, 6), None);
        let log = "0: (b7) r0 = 0\n4: (95) exit\n4: (95) exit\n7: (95) exit\n";
        let mut out = Vec::new();
        let options = crate::AnnotateOptions {
            style: crate::Style::Rich,
            ..crate::AnnotateOptions::default()
        };
        crate::annotate_bare(&p, log.as_bytes(), &mut out, &options).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "; x = 1; @ a/b.c:7:5 in p\n0: (b7) r0 = 0\n4: (95) exit\n4: (95) exit\n7: (95) exit\n"
        );
        let profile = crate::profile::profile_bare(&p, log.as_bytes()).unwrap();
        assert_eq!(profile.totals.insn_lines, 4);
        assert_eq!(profile.totals.unattributed, 1);
        assert_eq!(profile.functions.len(), 1);
        assert_eq!(profile.functions[0].name, "p");
        assert_eq!(profile.functions[0].counts.visits, 3);
        // The log fits it by its instruction indices alone.
        let ok = crate::select(
            std::slice::from_ref(&p),
            &b"0: (b7) r0 = 0\n5: (95) exit\n"[..],
        );
        assert!(ok.is_ok());
        let past = crate::select(std::slice::from_ref(&p), &b"9: (95) exit\n"[..]);
        assert!(matches!(past, Err(crate::SelectError::NoneFits(_))));
    }

    #[test]
    fn the_kernels_checks() {
        let err = |records: &[BpfLineInfo]| {
            Program::from_line_info("p", records, STRINGS, 6)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[rec(0, 1, 7), rec(0, 1, 7)]),
            "line_info[1].insn_off 0 is not after the previous record's 0 (records must be sorted, as the kernel requires)"
        );
        assert_eq!(
            err(&[rec(6, 1, 7)]),
            "line_info[0].insn_off 6 is past the program's 6 instructions"
        );
        assert_eq!(
            err(&[rec(0, 99, 7)]),
            "line_info[0].file_name_off 99 is outside the string section (28-byte string section)"
        );
        assert_eq!(
            err(&[rec(0, 1, 16)]),
            "line_info[0].line_off 16 has no NUL terminator (28-byte string section)"
        );
        assert_eq!(
            err(&[rec(0, 1, 28)]),
            "line_info[0].line_off 28 is outside the string section (28-byte string section)"
        );
    }
}
