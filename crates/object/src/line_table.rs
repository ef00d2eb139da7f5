//! A program's line table: source lines keyed by loaded instruction index.
//!
//! Looked up the way the kernel's `find_linfo` (kernel/bpf/log.c) answers: the rightmost record
//! whose instruction index is `<=` the one asked for. Four ways to get that answer are kept,
//! compared in `benches/lookup.rs` and proved equal by a property test:
//!
//! - `find_linear` (feature `testing`, as the next two): the scan the kernel used before 5.x;
//! - `find_binary`: the upper-bound binary search of today's kernel,
//!   the reference;
//! - `find_near`: the binary search after checking the last hit and its
//!   successor (a log's indices mostly rise by one or two);
//! - [`find`](LineTable::find), the default: a dense index built once, 4 bytes per instruction,
//!   one array read per lookup. Programs past [`DENSE_LIMIT`] instructions fall back to the
//!   binary search.

/// One line record placed in a loaded program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRow<'data> {
    /// Loaded instruction index where the record starts.
    pub insn: u32,
    /// String-table offset of the file name: the kernel compares records by it.
    pub file_name_off: u32,
    /// The file name as the compiler recorded it (often a path).
    pub file: &'data [u8],
    /// Line number.
    pub line: u32,
    /// Column (10 bits in `.BTF.ext`; 0 when unknown).
    pub col: u32,
    /// The source line text as stored in `.BTF`, leading whitespace included.
    pub text: &'data [u8],
}

impl LineRow<'_> {
    /// The file name after the last `/`, as the kernel prints it (`kbasename`).
    pub fn basename(&self) -> &[u8] {
        match memchr::memrchr(b'/', self.file) {
            Some(i) => self.file.get(i + 1..).unwrap_or_default(),
            None => self.file,
        }
    }

    /// The source text with leading whitespace removed, as the kernel prints it (`ltrim`).
    pub fn trimmed_text(&self) -> &[u8] {
        self.text.trim_ascii_start()
    }
}

/// Where a line table's records come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LineOrigin {
    /// `.BTF.ext` line info: what the kernel itself annotates with.
    #[default]
    Btf,
    /// DWARF line rows, for objects without `.BTF.ext`: no source text, `file_name_off` is an
    /// index of the file name.
    Dwarf,
}

/// The line records of one loaded program, sorted by instruction index.
#[derive(Debug, Clone, Default)]
pub struct LineTable<'data> {
    rows: Vec<LineRow<'data>>,
    len: u32,
    origin: LineOrigin,
    /// For each instruction, the position of its row (`NO_ROW` before the first).
    dense: Vec<u32>,
}

/// Programs up to this many instructions get a dense index (16 MiB at most); the kernel takes
/// at most 1M instructions.
pub const DENSE_LIMIT: u32 = 1 << 22;

const NO_ROW: u32 = u32::MAX;

impl<'data> LineTable<'data> {
    /// A table over `rows` for a program of `len` instructions; rows are sorted (stably) here.
    pub fn new(mut rows: Vec<LineRow<'data>>, len: u32, origin: LineOrigin) -> Self {
        rows.sort_by_key(|r| r.insn);
        let mut dense = Vec::new();
        if len <= DENSE_LIMIT && u32::try_from(rows.len()).is_ok_and(|n| n < NO_ROW) {
            dense = vec![NO_ROW; len as usize];
            // Each row covers its instruction up to the next row's; a later row at the same
            // instruction wins, as the rightmost does.
            for (i, row) in rows.iter().enumerate() {
                let end = rows.get(i + 1).map_or(len, |next| next.insn.min(len));
                if let Some(slots) = dense.get_mut(row.insn as usize..end as usize) {
                    slots.fill(i as u32);
                }
            }
        }
        LineTable {
            rows,
            len,
            origin,
            dense,
        }
    }

    /// Where the records come from.
    pub fn origin(&self) -> LineOrigin {
        self.origin
    }

    /// The rows, sorted by instruction index.
    pub fn rows(&self) -> &[LineRow<'data>] {
        &self.rows
    }

    /// Number of instructions in the program.
    pub fn program_len(&self) -> u32 {
        self.len
    }

    /// The record covering instruction `insn`, like `find_linfo`: the rightmost record at or
    /// before it. `None` past the end of the program or before the first record.
    pub fn find(&self, insn: u32) -> Option<&LineRow<'data>> {
        self.find_index(insn).and_then(|i| self.rows.get(i))
    }

    /// The position in [`rows`](Self::rows) of the record covering `insn`.
    pub fn find_index(&self, insn: u32) -> Option<usize> {
        if self.dense.is_empty() {
            return self.find_binary_index(insn);
        }
        match *self.dense.get(insn as usize)? {
            NO_ROW => None,
            i => Some(i as usize),
        }
    }

    /// The same answer by the kernel's upper-bound binary search: the reference [`find`] is
    /// tested against, and one of the strategies `benches/lookup.rs` measures it beside (not an
    /// API to build on: [`find`] is the lookup).
    ///
    /// [`find`]: Self::find
    #[cfg(any(test, feature = "testing"))]
    pub fn find_binary(&self, insn: u32) -> Option<&LineRow<'data>> {
        self.find_binary_index(insn).and_then(|i| self.rows.get(i))
    }

    fn find_binary_index(&self, insn: u32) -> Option<usize> {
        if insn >= self.len {
            return None;
        }
        self.rows.partition_point(|r| r.insn <= insn).checked_sub(1)
    }

    /// The same answer, checking the last hit (`hint`) and its successor before searching;
    /// `hint` is updated. A strategy measured beside [`find`](Self::find), not an API to build on.
    #[cfg(any(test, feature = "testing"))]
    pub fn find_near(&self, insn: u32, hint: &mut usize) -> Option<&LineRow<'data>> {
        if insn >= self.len {
            return None;
        }
        let covers = |i: usize| {
            self.rows.get(i).is_some_and(|r| r.insn <= insn)
                && self.rows.get(i + 1).is_none_or(|next| next.insn > insn)
        };
        let found = if covers(*hint) {
            Some(*hint)
        } else if covers(*hint + 1) {
            Some(*hint + 1)
        } else {
            self.find_binary_index(insn)
        };
        if let Some(i) = found {
            *hint = i;
        }
        found.and_then(|i| self.rows.get(i))
    }

    /// The same answer by a linear scan (the kernel's pre-5.x lookup): what the fuzz target and
    /// the malformed-object tests hold [`find`](Self::find) to, not an API to build on.
    #[cfg(any(test, feature = "testing"))]
    pub fn find_linear(&self, insn: u32) -> Option<&LineRow<'data>> {
        if insn >= self.len {
            return None;
        }
        self.rows.iter().rev().find(|r| r.insn <= insn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row(insn: u32, line: u32) -> LineRow<'static> {
        LineRow {
            insn,
            file_name_off: 1,
            file: b"dir/a.c",
            line,
            col: 0,
            text: b"  x = 1;",
        }
    }

    #[test]
    fn finds_rightmost_record_at_or_before() {
        let t = LineTable::new(
            vec![row(0, 10), row(3, 11), row(3, 12), row(7, 13)],
            9,
            LineOrigin::Btf,
        );
        assert_eq!(t.find(0).map(|r| r.line), Some(10));
        assert_eq!(t.find(2).map(|r| r.line), Some(10));
        // Two records at one index: the rightmost wins, as in the kernel.
        assert_eq!(t.find(3).map(|r| r.line), Some(12));
        assert_eq!(t.find(8).map(|r| r.line), Some(13));
        assert_eq!(t.find(9), None);
        assert_eq!(t.find(u32::MAX), None);
        assert_eq!(row(0, 1).basename(), b"a.c");
        assert_eq!(row(0, 1).trimmed_text(), b"x = 1;");
    }

    proptest! {
        #[test]
        fn every_lookup_strategy_agrees(
            mut starts in proptest::collection::vec(0u32..2000, 0..200),
            len in 0u32..2100,
            probes in proptest::collection::vec(0u32..2200, 1..100),
        ) {
            starts.sort_unstable();
            let rows: Vec<_> = starts.iter().enumerate().map(|(i, &s)| row(s, i as u32)).collect();
            let t = LineTable::new(rows, len, LineOrigin::Btf);
            let mut hint = 0;
            for p in probes {
                let reference = t.find_binary(p);
                prop_assert_eq!(t.find(p), reference);
                prop_assert_eq!(t.find_linear(p), reference);
                prop_assert_eq!(t.find_near(p, &mut hint), reference);
            }
        }
    }
}
