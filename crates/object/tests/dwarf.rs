//! DWARF of the committed fixture objects: line rows, inlined-call chains and subprograms per code
//! section, two code sections whose addresses both start at 0, big endian, objects without DWARF,
//! and corrupted DWARF.
//!
//! Expected values were read with, from `tests/fixtures/obj/`:
//! - `llvm-dwarfdump-19 --debug-line X.o` (rows: address, line, column, file; sequences),
//! - `llvm-dwarfdump-19 --debug-info X.o` (subprograms, inlined subroutines, call sites),
//! - `llvm-objdump-19 -d -l X.o` (instruction numbers and the section each one is in).

use bpflog_object::{
    BpfObject, DebugLocation, Error, INSN_SIZE, InlinedCall, SectionId, SourcePos,
};
use object::{Object as _, ObjectSection as _};
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../tests/fixtures/obj/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn section(object: &BpfObject<'_>, name: &str) -> SectionId {
    let index = object
        .elf()
        .sections
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no code section {name}"));
    SectionId(index)
}

fn pos(file: &str, line: u32, column: u32) -> SourcePos<'_> {
    SourcePos { file, line, column }
}

fn call<'a>(function: &'a str, file: &'a str, line: u32, column: u32) -> InlinedCall<'a> {
    InlinedCall {
        function,
        call_site: Some(pos(file, line, column)),
    }
}

const RE: &str = "reject_entry.c";
const XS: &str = "xdp_subprogs.c";

// ---------------------------------------------------------------------------------------------
// reject_entry.o: one code section (`xdp`; `.text` is empty), always-inline helpers.
// ---------------------------------------------------------------------------------------------

#[test]
fn reject_entry_instruction_inside_inlined_parse_iphdr() {
    let data = fixture("reject_entry.o");
    let object = BpfObject::parse(&data).expect("parse");
    assert!(object.dwarf_error().is_none(), "{:?}", object.dwarf_error());
    let dwarf = object.dwarf().expect("reject_entry.o has DWARF");
    let xdp = section(&object, "xdp");

    // llvm-objdump-19 -d -l: insn 28 (byte 0xe0) `if r3 > r2 goto +0xc`, ./reject_entry.c:48.
    // llvm-dwarfdump-19 --debug-line: 0xe0 line 48 column 6.
    // llvm-dwarfdump-19 --debug-info: DW_TAG_inlined_subroutine parse_iphdr [0xa8, 0xe8),
    // call_line 104, call_column 8, inside DW_TAG_subprogram xdp_reject_entry [0, 0x150).
    let expected = DebugLocation {
        pos: Some(pos(RE, 48, 6)),
        function: Some("xdp_reject_entry"),
        inlined: vec![call("parse_iphdr", RE, 104, 8)],
    };
    assert_eq!(dwarf.locate(xdp, 28 * INSN_SIZE), expected);

    // The same through the loaded layout: the entry program is laid out first, so index 28.
    let program = object.program("xdp_reject_entry").expect("program");
    let layout = object.layout(program).expect("layout");
    assert_eq!(object.debug_location(&layout, 28), Some(expected));

    // Insn 25 (0xc8): `r2 = *(u8 *)(r2 + 0x0)`, reject_entry.c:47:17 in parse_iphdr.
    assert_eq!(
        dwarf.locate(xdp, 0xc8).pos,
        Some(pos(RE, 47, 17)),
        "the row at 0xc8"
    );
}

#[test]
fn reject_entry_mac_kind_has_two_ranges() {
    let data = fixture("reject_entry.o");
    let object = BpfObject::parse(&data).expect("parse");
    let dwarf = object.dwarf().expect("DWARF");
    let xdp = section(&object, "xdp");
    let mac_kind = call("mac_kind", RE, 99, 9);

    // llvm-dwarfdump-19 --debug-info: mac_kind DW_AT_ranges (rnglistx 0)
    // [0x40, 0x68) and [0x80, 0x88), call_line 99, call_column 9.
    // --debug-line: 0x48 71:29, 0x68 line 0 column 0, 0x80 73:6.
    let at_0x48 = dwarf.locate(xdp, 0x48);
    assert_eq!(at_0x48.pos, Some(pos(RE, 71, 29)));
    assert_eq!(at_0x48.inlined, vec![mac_kind.clone()]);

    // Between the two ranges: no inlined call, and a line-0 row (code the compiler attributes
    // to no source line).
    let at_0x68 = dwarf.locate(xdp, 0x68);
    assert_eq!(at_0x68.pos, Some(pos(RE, 0, 0)));
    assert_eq!(at_0x68.inlined, vec![]);
    assert_eq!(at_0x68.function, Some("xdp_reject_entry"));

    let at_0x80 = dwarf.locate(xdp, 0x80);
    assert_eq!(at_0x80.pos, Some(pos(RE, 73, 6)));
    assert_eq!(at_0x80.inlined, vec![mac_kind]);

    // parse_ethhdr [0x18, 0x40) call 97:6; verdict_for [0x128, 0x140) call 115:9.
    assert_eq!(
        dwarf.locate(xdp, 0x30).inlined,
        vec![call("parse_ethhdr", RE, 97, 6)]
    );
    assert_eq!(
        dwarf.locate(xdp, 0x138).inlined,
        vec![call("verdict_for", RE, 115, 9)]
    );
}

#[test]
fn reject_entry_failing_instruction_has_dwarf_line_0_but_btf_line_48() {
    let data = fixture("reject_entry.o");
    let object = BpfObject::parse(&data).expect("parse");
    let program = object.program("xdp_reject_entry").expect("program");
    let layout = object.layout(program).expect("layout");

    // logs/reject_entry.xdp_reject_entry.l1.log fails at `30: (71) r1 = *(u8 *)(r1 +0)`.
    // llvm-dwarfdump-19 --debug-line: row 0xe8 has line 0 column 0, the next row is 0xf8, so
    // insn 30 (0xf0) has line 0: the IPv4 and IPv6 loads were merged (parse_ip6hdr has no
    // DW_TAG_inlined_subroutine at all), and it lies past parse_iphdr's [0xa8, 0xe8).
    let location = object.debug_location(&layout, 30).expect("in the layout");
    assert_eq!(
        location,
        DebugLocation {
            pos: Some(pos(RE, 0, 0)),
            function: Some("xdp_reject_entry"),
            inlined: vec![],
        }
    );
    // .BTF.ext drops line-0 rows, so the kernel's line for insn 30 is still 48.
    let table = object.line_table(&layout).expect("line table");
    assert_eq!(table.find(30).map(|r| r.line), Some(48));
}

#[test]
fn reject_entry_rows_and_sequence_end() {
    let data = fixture("reject_entry.o");
    let object = BpfObject::parse(&data).expect("parse");
    let dwarf = object.dwarf().expect("DWARF");
    let xdp = section(&object, "xdp");

    // llvm-dwarfdump-19 --debug-line, rows 0x40..0x68.
    assert_eq!(
        dwarf.rows(xdp, 0x40, 0x68),
        vec![
            (0x40, pos(RE, 69, 6)),
            (0x48, pos(RE, 71, 29)),
            (0x50, pos(RE, 0, 29)),
            (0x58, pos(RE, 71, 32)),
            (0x60, pos(RE, 71, 6)),
        ]
    );
    // The sequence ends at 0x150 (end_sequence row, excluded); the section is 0x150 bytes.
    assert_eq!(
        dwarf.rows(xdp, 0x140, u64::MAX),
        vec![(0x140, pos(RE, 0, 6)), (0x148, pos(RE, 116, 1))]
    );
    assert_eq!(dwarf.locate(xdp, 0x148).pos, Some(pos(RE, 116, 1)));
    assert_eq!(dwarf.locate(xdp, 0x150), DebugLocation::default());
    assert_eq!(dwarf.locate(SectionId(99), 0), DebugLocation::default());
    assert_eq!(dwarf.rows(SectionId(99), 0, u64::MAX), vec![]);
    assert_eq!(dwarf.rows(xdp, 0x48, 0x48), vec![]);
    assert_eq!(dwarf.rows(xdp, 0, u64::MAX).len(), 35);
}

// ---------------------------------------------------------------------------------------------
// xdp_subprogs.o: code in `xdp` (xdp_parse) and `.text` (classify_proto, csum_fold_words).
// ---------------------------------------------------------------------------------------------

#[test]
fn same_offset_in_two_code_sections_resolves_differently() {
    let data = fixture("xdp_subprogs.o");
    let object = BpfObject::parse(&data).expect("parse");
    assert!(object.dwarf_error().is_none(), "{:?}", object.dwarf_error());
    let dwarf = object.dwarf().expect("DWARF");
    let xdp = section(&object, "xdp");
    let text = section(&object, ".text");
    assert_ne!(xdp, text);

    // llvm-dwarfdump-19 --debug-line has three sequences, all starting at address 0 or 0x60:
    // .text [0, 0x60) classify_proto, .text [0x60, 0x110) csum_fold_words, xdp [0, 0x1a0).
    // Which is which is only known from .rel.debug_line / .rel.debug_addr (section symbols).
    // 0x38: xdp 44:19 inside parse_eth (call 127:6); .text 103:3 in classify_proto.
    assert_eq!(
        dwarf.locate(xdp, 0x38),
        DebugLocation {
            pos: Some(pos(XS, 44, 19)),
            function: Some("xdp_parse"),
            inlined: vec![call("parse_eth", XS, 127, 6)],
        }
    );
    assert_eq!(
        dwarf.locate(text, 0x38),
        DebugLocation {
            pos: Some(pos(XS, 103, 3)),
            function: Some("classify_proto"),
            inlined: vec![],
        }
    );
    // 0x80: xdp 56:19 inside parse_ipv4 (call 132:8); .text 82:7 in csum_fold_words.
    assert_eq!(
        dwarf.locate(xdp, 0x80),
        DebugLocation {
            pos: Some(pos(XS, 56, 19)),
            function: Some("xdp_parse"),
            inlined: vec![call("parse_ipv4", XS, 132, 8)],
        }
    );
    assert_eq!(
        dwarf.locate(text, 0x80),
        DebugLocation {
            pos: Some(pos(XS, 82, 7)),
            function: Some("csum_fold_words"),
            inlined: vec![],
        }
    );
    // Address 0: xdp 119:34 (prologue_end row), .text 94:0.
    assert_eq!(dwarf.locate(xdp, 0).pos, Some(pos(XS, 119, 34)));
    assert_eq!(dwarf.locate(text, 0).pos, Some(pos(XS, 94, 0)));
    assert_ne!(dwarf.rows(xdp, 0, 0x60), dwarf.rows(text, 0, 0x60));
}

#[test]
fn text_sequence_boundary_at_0x60() {
    let data = fixture("xdp_subprogs.o");
    let object = BpfObject::parse(&data).expect("parse");
    let dwarf = object.dwarf().expect("DWARF");
    let text = section(&object, ".text");

    // llvm-dwarfdump-19 --debug-line: the classify_proto sequence ends (end_sequence) at 0x60,
    // where the csum_fold_words sequence starts with 74:0.
    assert_eq!(dwarf.locate(text, 0x58).pos, Some(pos(XS, 111, 2)));
    assert_eq!(dwarf.locate(text, 0x58).function, Some("classify_proto"));
    assert_eq!(dwarf.locate(text, 0x60).pos, Some(pos(XS, 74, 0)));
    assert_eq!(dwarf.locate(text, 0x60).function, Some("csum_fold_words"));
    assert_eq!(
        dwarf.rows(text, 0x50, 0x70),
        vec![
            (0x50, pos(XS, 0, 3)),
            (0x58, pos(XS, 111, 2)),
            (0x60, pos(XS, 74, 0)),
        ]
    );
    // .text is 0x110 bytes; the last sequence ends there.
    assert_eq!(dwarf.locate(text, 0x108).pos, Some(pos(XS, 86, 2)));
    assert_eq!(dwarf.locate(text, 0x110).pos, None);
}

#[test]
fn debug_location_inside_appended_text_subprogram() {
    let data = fixture("xdp_subprogs.o");
    let object = BpfObject::parse(&data).expect("parse");
    let program = object.program("xdp_parse").expect("program");
    let layout = object.layout(program).expect("layout");
    let part = layout
        .parts
        .iter()
        .find(|p| object.function(p.function).name == "csum_fold_words")
        .expect("csum_fold_words is appended");
    // xdp_parse is 0x1a0 bytes = 52 slots; csum_fold_words, called first, is appended right after.
    assert_eq!(part.start, 52);

    // Loaded index 55 = csum_fold_words + 3 = .text byte 0x60 + 0x18 = 0x78:
    // llvm-dwarfdump-19 --debug-line row 0x78 is 82:10 (prologue_end).
    assert_eq!(
        object.debug_location(&layout, 55),
        Some(DebugLocation {
            pos: Some(pos(XS, 82, 10)),
            function: Some("csum_fold_words"),
            inlined: vec![],
        })
    );
    // Loaded index 7 is xdp byte 0x38, not .text byte 0x38.
    assert_eq!(
        object.debug_location(&layout, 7).and_then(|l| l.function),
        Some("xdp_parse")
    );
    assert_eq!(object.debug_location(&layout, layout.len), None);
}

#[test]
fn big_endian_object_gives_the_same_answers() {
    let le_data = fixture("xdp_subprogs.o");
    let be_data = fixture("xdp_subprogs.bpfeb.o");
    let le = BpfObject::parse(&le_data).expect("parse little endian");
    let be = BpfObject::parse(&be_data).expect("parse big endian");
    assert!(be.dwarf_error().is_none(), "{:?}", be.dwarf_error());
    let (le_dwarf, be_dwarf) = (le.dwarf().expect("DWARF"), be.dwarf().expect("DWARF"));

    // llvm-dwarfdump-19 --debug-line on both: identical rows for xdp below 0xa8 and for all of
    // .text (the big-endian xdp code is one instruction shorter from 0xa8 on).
    for name in ["xdp", ".text"] {
        let (l, b) = (section(&le, name), section(&be, name));
        for offset in [0, 0x38, 0x50, 0x78, 0x80, 0xa0] {
            assert_eq!(
                le_dwarf.locate(l, offset),
                be_dwarf.locate(b, offset),
                "{name} {offset:#x}"
            );
        }
    }
    let (l, b) = (section(&le, ".text"), section(&be, ".text"));
    assert_eq!(le_dwarf.rows(l, 0, u64::MAX), be_dwarf.rows(b, 0, u64::MAX));
    assert_eq!(
        be_dwarf.locate(section(&be, "xdp"), 0x80).inlined,
        vec![call("parse_ipv4", XS, 132, 8)]
    );
    // Big endian, 0xa8: line 0 column 11 (little endian has that row at 0xb8 with column 0).
    assert_eq!(
        be_dwarf.locate(section(&be, "xdp"), 0xa8).pos,
        Some(pos(XS, 0, 11))
    );
}

#[test]
fn objects_without_dwarf_or_without_btf_ext() {
    // `llvm-strip -g`: .BTF and .BTF.ext stay, no .debug_* section.
    let data = fixture("xdp_subprogs.nodwarf.o");
    let object = BpfObject::parse(&data).expect("parse");
    assert!(object.dwarf().is_none());
    assert!(object.dwarf_error().is_none());
    let program = object.program("xdp_parse").expect("program");
    let layout = object.layout(program).expect("layout");
    assert_eq!(object.debug_location(&layout, 7), None);

    // .BTF.ext removed: DWARF is all there is.
    let data = fixture("xdp_subprogs.nobtfext.o");
    let object = BpfObject::parse(&data).expect("parse");
    assert!(object.dwarf_error().is_none());
    let dwarf = object.dwarf().expect("DWARF is kept");
    assert_eq!(
        dwarf.locate(section(&object, "xdp"), 0x38).pos,
        Some(pos(XS, 44, 19))
    );
}

// ---------------------------------------------------------------------------------------------
// Corrupted DWARF: never a panic, the object stays usable, the error is reported.
// ---------------------------------------------------------------------------------------------

/// File offset and size of section `name`.
fn file_range(data: &[u8], name: &str) -> (usize, usize) {
    let file = object::File::parse(data).expect("ELF");
    let section = file.section_by_name(name).expect("section");
    let (offset, size) = section.file_range().expect("in the file");
    (offset as usize, size as usize)
}

/// The object still parses, its layout and BTF line table still work.
fn still_usable(object: &BpfObject<'_>) {
    let program = object.program("xdp_parse").expect("program");
    let layout = object.layout(program).expect("layout");
    assert!(object.line_table(&layout).is_ok());
    for index in 0..layout.len {
        let _ = object.debug_location(&layout, index);
    }
}

fn dwarf_error_section(error: Option<&Error>) -> Option<&str> {
    match error {
        Some(Error::Dwarf { at, .. }) => Some(at.section.as_str()),
        _ => None,
    }
}

#[test]
fn truncated_debug_info_unit_keeps_line_table() {
    let mut data = fixture("xdp_subprogs.o");
    let (offset, size) = file_range(&data, ".debug_info");
    // unit_length (DWARF32) claims 0x100 bytes more than the section holds.
    let claimed = u32::try_from(size - 4 + 0x100).expect("small");
    data[offset..offset + 4].copy_from_slice(&claimed.to_le_bytes());
    let object = BpfObject::parse(&data).expect("the object still parses");
    still_usable(&object);
    let error = object.dwarf_error();
    assert_eq!(dwarf_error_section(error), Some(".debug_info"), "{error:?}");
    // .debug_line is read on its own: rows are there, subprograms and inlined calls are not.
    let dwarf = object.dwarf().expect("line table survives");
    assert_eq!(dwarf.errors().len(), 1);
    let location = dwarf.locate(section(&object, "xdp"), 0x38);
    assert_eq!(location.pos, Some(pos(XS, 44, 19)));
    assert_eq!(location.function, None);
    assert_eq!(location.inlined, vec![]);
}

#[test]
fn garbled_debug_info_entries_are_reported() {
    let mut data = fixture("xdp_subprogs.o");
    let (offset, size) = file_range(&data, ".debug_info");
    // Keep the 12-byte DWARF 5 unit header, garble every entry after it.
    data[offset + 12..offset + size].fill(0xfe);
    let object = BpfObject::parse(&data).expect("the object still parses");
    still_usable(&object);
    assert_eq!(
        dwarf_error_section(object.dwarf_error()),
        Some(".debug_info")
    );
    assert!(object.dwarf().is_some());
}

#[test]
fn garbled_debug_info_and_debug_line_leave_no_dwarf() {
    let mut data = fixture("xdp_subprogs.o");
    for name in [".debug_info", ".debug_line"] {
        let (offset, size) = file_range(&data, name);
        data[offset..offset + size].fill(0xff);
    }
    let object = BpfObject::parse(&data).expect("the object still parses");
    still_usable(&object);
    assert!(object.dwarf().is_none());
    let error = object.dwarf_error().expect("an error is reported");
    assert!(error.to_string().contains(".debug_info"), "{error}");
}

#[test]
fn relocation_against_missing_symbol_is_an_error() {
    let mut data = fixture("xdp_subprogs.o");
    let (offset, _) = file_range(&data, ".rel.debug_line");
    // Elf64_Rel: r_offset (8), r_info (8) = sym << 32 | type. Point the first at symbol 0xffff.
    let info = (0xffffu64 << 32) | 3;
    data[offset + 8..offset + 16].copy_from_slice(&info.to_le_bytes());
    let object = BpfObject::parse(&data).expect("the object still parses");
    still_usable(&object);
    assert!(object.dwarf().is_none());
    let error = object.dwarf_error().expect("an error is reported");
    assert_eq!(dwarf_error_section(Some(error)), Some(".debug_line"));
    assert!(error.to_string().contains("symbol #65535"), "{error}");
}

/// `reject_entry.o` (one code section, so unrelocated addresses are used as they are) with its
/// `.debug_addr` relocations turned into R_BPF_NONE and, if `fill`, every address u64::MAX:
/// where DWARF places instruction 28: its line, its function, the functions inlined there.
fn unrelocated_debug_addr(fill: bool) -> (Option<u32>, Option<String>, Vec<String>) {
    let mut data = fixture("reject_entry.o");
    let (rel, rel_size) = file_range(&data, ".rel.debug_addr");
    assert!(rel_size >= 16, "the fixture relocates .debug_addr");
    for at in (rel..rel + rel_size).step_by(16) {
        let info = u64::from_le_bytes(data[at + 8..at + 16].try_into().expect("8 bytes"));
        data[at + 8..at + 16].copy_from_slice(&(info & !0xffff_ffff).to_le_bytes());
    }
    if fill {
        // After the 8-byte DWARF 5 header, 8-byte addresses.
        let (offset, size) = file_range(&data, ".debug_addr");
        data[offset + 8..offset + size].fill(0xff);
    }
    let object = BpfObject::parse(&data).expect("the object still parses");
    let dwarf = object.dwarf().expect("DWARF");
    let location = dwarf.locate(section(&object, "xdp"), 28 * INSN_SIZE);
    (
        location.pos.map(|p| p.line),
        location.function.map(str::to_owned),
        location
            .inlined
            .iter()
            .map(|c| c.function.to_owned())
            .collect(),
    )
}

#[test]
fn high_pc_past_the_end_of_the_address_space_drops_the_range() {
    // The edit alone: the in-place addresses are the offsets, the ranges are found.
    let (line, function, inlined) = unrelocated_debug_addr(false);
    assert_eq!(line, Some(48));
    assert_eq!(function.as_deref(), Some("xdp_reject_entry"));
    assert_eq!(inlined, ["parse_iphdr"]);
    // Each `DW_AT_low_pc` at u64::MAX plus its `DW_AT_high_pc` size is past the end of the
    // address space (gimli 0.34's own `die_ranges` panics on it with overflow checks on): the
    // ranges are dropped, the line rows (relocated through .debug_line) stay.
    let (line, function, inlined) = unrelocated_debug_addr(true);
    assert_eq!(line, Some(48));
    assert_eq!(function, None);
    assert!(inlined.is_empty(), "{inlined:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random bytes written over the DWARF and its relocations never panic, and the object
    /// stays usable.
    #[test]
    fn random_debug_bytes_never_panic(
        name in prop::sample::select(vec![
            ".debug_info", ".debug_line", ".debug_abbrev", ".debug_addr", ".debug_rnglists",
            ".debug_str_offsets", ".debug_line_str", ".rel.debug_info", ".rel.debug_line",
            ".rel.debug_addr",
        ]),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
    ) {
        let mut data = fixture("xdp_subprogs.o");
        let (offset, size) = file_range(&data, name);
        for (index, byte) in edits {
            data[offset + index.index(size)] = byte;
        }
        let object = BpfObject::parse(&data).expect("the object still parses");
        still_usable(&object);
        if let Some(dwarf) = object.dwarf() {
            for (i, code) in object.elf().sections.iter().enumerate() {
                let _ = dwarf.rows(SectionId(i), 0, u64::MAX);
                for offset in (0..code.size() + 16).step_by(8) {
                    let _ = dwarf.locate(SectionId(i), offset);
                }
            }
        }
    }
}
