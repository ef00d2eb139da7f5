//! Whole BPF ELF objects built in memory with `object::write`, well-formed and malformed: the
//! loaded layout, the rebased line table, and the exact message of every error.

use bpflog_object::{BpfObject, FunctionId, Layout, Part};
use object::write::{
    Object, Relocation, SectionId, Symbol, SymbolId, SymbolSection as WriteSymbolSection,
};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionKind, SymbolFlags, SymbolKind,
    SymbolScope,
};

/// `R_BPF_64_64`: relocation of an `ld_imm64`.
const R_BPF_64_64: u32 = 1;
/// `R_BPF_64_32`: relocation of a call.
const R_BPF_64_32: u32 = 10;

// ---------------------------------------------------------------------------------------------
// Instructions
// ---------------------------------------------------------------------------------------------

/// One 8-byte instruction slot before encoding.
#[derive(Clone, Copy)]
struct I {
    code: u8,
    dst: u8,
    src: u8,
    off: i16,
    imm: i32,
}

/// `r{dst} = imm` (BPF_ALU64 | BPF_MOV | BPF_K).
fn mov(dst: u8, imm: i32) -> I {
    I {
        code: 0xb7,
        dst,
        src: 0,
        off: 0,
        imm,
    }
}

/// `exit`.
fn exit() -> I {
    I {
        code: 0x95,
        dst: 0,
        src: 0,
        off: 0,
        imm: 0,
    }
}

/// `call pc+imm` (BPF_PSEUDO_CALL).
fn pcall(imm: i32) -> I {
    I {
        code: 0x85,
        dst: 0,
        src: 1,
        off: 0,
        imm,
    }
}

/// A helper call `call imm` (src_reg 0).
fn helper(imm: i32) -> I {
    I {
        code: 0x85,
        dst: 0,
        src: 0,
        off: 0,
        imm,
    }
}

/// `r{dst} = imm64 ll`: two slots.
fn ld_imm64(dst: u8, imm: i32) -> [I; 2] {
    [
        I {
            code: 0x18,
            dst,
            src: 0,
            off: 0,
            imm,
        },
        I {
            code: 0,
            dst: 0,
            src: 0,
            off: 0,
            imm: 0,
        },
    ]
}

fn encode(insns: &[I], big: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(insns.len() * 8);
    for i in insns {
        out.push(i.code);
        if big {
            out.push((i.dst << 4) | (i.src & 0xf));
            out.extend_from_slice(&i.off.to_be_bytes());
            out.extend_from_slice(&i.imm.to_be_bytes());
        } else {
            out.push((i.src << 4) | (i.dst & 0xf));
            out.extend_from_slice(&i.off.to_le_bytes());
            out.extend_from_slice(&i.imm.to_le_bytes());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// .BTF and .BTF.ext
// ---------------------------------------------------------------------------------------------

fn u32b(v: u32, big: bool) -> [u8; 4] {
    if big {
        v.to_be_bytes()
    } else {
        v.to_le_bytes()
    }
}

/// A BTF string table under construction: offset 0 is the empty string.
struct Strings {
    table: Vec<u8>,
}

impl Strings {
    fn new() -> Self {
        Strings { table: vec![0] }
    }

    /// Adds `s` (NUL-terminated) and returns its offset; an existing string is reused.
    fn add(&mut self, s: &str) -> u32 {
        let mut needle = s.as_bytes().to_vec();
        needle.push(0);
        if let Some(pos) = self
            .table
            .windows(needle.len())
            .position(|w| w == needle.as_slice())
            .filter(|&p| p == 0 || self.table[p - 1] == 0)
        {
            return pos as u32;
        }
        let off = self.table.len() as u32;
        self.table.extend_from_slice(&needle);
        off
    }
}

/// A `.BTF` section with no types and the raw string table `table`.
fn btf(table: &[u8], big: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&if big {
        0xeb9fu16.to_be_bytes()
    } else {
        0xeb9fu16.to_le_bytes()
    });
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&u32b(24, big)); // hdr_len
    out.extend_from_slice(&u32b(0, big)); // type_off
    out.extend_from_slice(&u32b(0, big)); // type_len
    out.extend_from_slice(&u32b(0, big)); // str_off
    out.extend_from_slice(&u32b(table.len() as u32, big)); // str_len
    out.extend_from_slice(table);
    out
}

/// One info kind: `rec_size` then blocks `(sec_name_off, records as u32 words)`.
fn info_kind(rec_size: u32, blocks: &[(u32, Vec<Vec<u32>>)], big: bool) -> Vec<u8> {
    if blocks.is_empty() {
        return Vec::new();
    }
    let mut out = u32b(rec_size, big).to_vec();
    for (name, recs) in blocks {
        out.extend_from_slice(&u32b(*name, big));
        out.extend_from_slice(&u32b(recs.len() as u32, big));
        for rec in recs {
            for w in rec {
                out.extend_from_slice(&u32b(*w, big));
            }
        }
    }
    out
}

/// A `.BTF.ext` with a 32-byte header; the kinds follow each other from offset 32.
///
/// So the line info's `rec_size` is at 0x20 + len(func), and its first record 12 bytes later.
fn btf_ext(func: &[u8], line: &[u8], core: &[u8], big: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&if big {
        0xeb9fu16.to_be_bytes()
    } else {
        0xeb9fu16.to_le_bytes()
    });
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&u32b(32, big));
    let (f, l, c) = (func.len() as u32, line.len() as u32, core.len() as u32);
    for w in [0, f, f, l, f + l, c] {
        out.extend_from_slice(&u32b(w, big));
    }
    out.extend_from_slice(func);
    out.extend_from_slice(line);
    out.extend_from_slice(core);
    out
}

/// A line record: insn_off, file_name_off, line_off, line_col.
fn line_rec(insn_off: u32, file: u32, text: u32, line: u32, col: u32) -> Vec<u32> {
    vec![insn_off, file, text, (line << 10) | col]
}

/// A `.BTF.ext` holding only line info with 16-byte records.
fn line_ext(blocks: &[(u32, Vec<Vec<u32>>)], big: bool) -> Vec<u8> {
    btf_ext(&[], &info_kind(16, blocks, big), &[], big)
}

// ---------------------------------------------------------------------------------------------
// ELF
// ---------------------------------------------------------------------------------------------

/// A BPF relocatable object under construction.
struct Elf {
    obj: Object<'static>,
    big: bool,
}

impl Elf {
    fn new(big: bool) -> Self {
        Self::for_arch(Architecture::Bpf, big)
    }

    fn for_arch(arch: Architecture, big: bool) -> Self {
        let endian = if big {
            Endianness::Big
        } else {
            Endianness::Little
        };
        Elf {
            obj: Object::new(BinaryFormat::Elf, arch, endian),
            big,
        }
    }

    /// An executable section `name` holding `insns`.
    fn code(&mut self, name: &str, insns: &[I]) -> SectionId {
        let id = self
            .obj
            .add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::Text);
        let data = encode(insns, self.big);
        self.obj.append_section_data(id, &data, 8);
        id
    }

    /// A non-code section `name` (`.BTF`, `.BTF.ext`, ...) holding `data`.
    fn raw(&mut self, name: &str, data: &[u8]) -> SectionId {
        let id = self
            .obj
            .add_section(Vec::new(), name.as_bytes().to_vec(), SectionKind::Other);
        self.obj.append_section_data(id, data, 4);
        id
    }

    /// `.BTF` with the strings `table`, and `.BTF.ext` `ext`.
    fn btf(&mut self, table: &Strings, ext: &[u8]) {
        let data = btf(&table.table, self.big);
        self.raw(".BTF", &data);
        self.raw(".BTF.ext", ext);
    }

    /// An `STT_FUNC` symbol at byte `value` of `section`, `size` bytes long.
    fn func(&mut self, section: SectionId, name: &str, value: u64, size: u64) -> SymbolId {
        self.symbol(section, name, value, size, SymbolScope::Linkage)
    }

    /// A static (`STB_LOCAL`) `STT_FUNC` symbol.
    fn static_func(&mut self, section: SectionId, name: &str, value: u64, size: u64) -> SymbolId {
        self.symbol(section, name, value, size, SymbolScope::Compilation)
    }

    fn symbol(
        &mut self,
        section: SectionId,
        name: &str,
        value: u64,
        size: u64,
        scope: SymbolScope,
    ) -> SymbolId {
        self.obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size,
            kind: SymbolKind::Text,
            scope,
            weak: false,
            section: WriteSymbolSection::Section(section),
            flags: SymbolFlags::None,
        })
    }

    /// An undefined function symbol (a kfunc or extern).
    fn undefined(&mut self, name: &str) -> SymbolId {
        self.obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Text,
            scope: SymbolScope::Linkage,
            weak: false,
            section: WriteSymbolSection::Undefined,
            flags: SymbolFlags::None,
        })
    }

    /// The `STT_SECTION` symbol of `section`.
    fn section_symbol(&mut self, section: SectionId) -> SymbolId {
        self.obj.section_symbol(section)
    }

    /// A relocation of raw ELF type `r_type` at byte `offset` of `section` against `symbol`.
    ///
    /// BPF uses REL (implicit addends): the addend is already in the instruction's imm.
    fn reloc(&mut self, section: SectionId, offset: u64, symbol: SymbolId, r_type: u32) {
        self.obj
            .add_relocation(
                section,
                Relocation {
                    offset,
                    symbol,
                    addend: 0,
                    flags: RelocationFlags::Elf { r_type },
                },
            )
            .unwrap();
    }

    fn finish(&self) -> Vec<u8> {
        self.obj.write().unwrap()
    }
}

fn parse_err(data: &[u8]) -> String {
    BpfObject::parse(data).unwrap_err().to_string()
}

/// The program called `name` and its layout.
fn layout_of(object: &BpfObject<'_>, name: &str) -> (FunctionId, Layout) {
    let p = object.program(name).unwrap();
    (p, object.layout(p).unwrap())
}

/// The function names of a layout's parts with their starts and lengths.
fn parts(object: &BpfObject<'_>, layout: &Layout) -> Vec<(String, u32, u32)> {
    layout
        .parts
        .iter()
        .map(|p: &Part| (object.function(p.function).name.clone(), p.start, p.len))
        .collect()
}

/// A line table as `(insn, file, line, col, text)`.
type Row = (u32, String, u32, u32, String);

fn rows(object: &BpfObject<'_>, layout: &Layout) -> Vec<Row> {
    object
        .line_table(layout)
        .unwrap()
        .rows()
        .iter()
        .map(|r| {
            (
                r.insn,
                String::from_utf8_lossy(r.file).into_owned(),
                r.line,
                r.col,
                String::from_utf8_lossy(r.text).into_owned(),
            )
        })
        .collect()
}

fn row(insn: u32, file: &str, line: u32, col: u32, text: &str) -> Row {
    (insn, file.to_owned(), line, col, text.to_owned())
}

// ---------------------------------------------------------------------------------------------
// Not a BPF object
// ---------------------------------------------------------------------------------------------

#[test]
fn random_bytes_are_not_an_elf_file() {
    // A pseudo-random block, and plain text: neither has a known file magic.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..256)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    assert_eq!(
        parse_err(&bytes),
        "not a valid ELF file: Unknown file magic"
    );
    assert_eq!(
        parse_err(b"this is not an ELF file, only some text that is long enough"),
        "not a valid ELF file: Unknown file magic"
    );
    // Too short to hold any magic.
    assert_eq!(
        parse_err(&[]),
        "not a valid ELF file: Could not read file magic"
    );
    assert_eq!(
        parse_err(b"\x7fELF"),
        "not a valid ELF file: Could not read file magic"
    );
}

#[test]
fn truncated_elf_header_is_an_elf_error() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    let data = elf.finish();
    let err = parse_err(&data[..40]);
    assert_eq!(
        err,
        "not a valid ELF file: Invalid ELF header size or alignment"
    );
}

#[test]
fn x86_64_elf_is_not_bpf() {
    let mut elf = Elf::for_arch(Architecture::X86_64, false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    elf.func(text, "f", 0, 16);
    assert_eq!(
        parse_err(&elf.finish()),
        "not a BPF object: ELF machine is X86_64 (expected BPF, e_machine 247)"
    );
}

// ---------------------------------------------------------------------------------------------
// A well-formed object: XDP program calling a static .text function
// ---------------------------------------------------------------------------------------------

/// `xdp_prog` (4 slots in `xdp`) calls the static `helper` at byte 16 of `.text` through a
/// relocation against the `.text` section symbol (as clang emits static calls). `.text` also
/// holds the unused `other` at byte 0.
fn xdp_with_static_call(big: bool) -> Vec<u8> {
    let mut elf = Elf::new(big);
    let text = elf.code(
        ".text",
        &[
            mov(0, 0),
            exit(),
            // helper: 3 slots at byte 16
            mov(0, 1),
            mov(1, 2),
            exit(),
        ],
    );
    let xdp = elf.code(
        "xdp",
        &[
            mov(1, 0),
            // call relative to the section symbol: target = 0/8 + 1 + 1 = slot 2
            pcall(1),
            mov(0, 2),
            exit(),
        ],
    );
    elf.static_func(text, "other", 0, 16);
    elf.static_func(text, "helper", 16, 24);
    elf.func(xdp, "xdp_prog", 0, 32);
    let text_sym = elf.section_symbol(text);
    elf.reloc(xdp, 8, text_sym, R_BPF_64_32);

    let mut s = Strings::new();
    let sec_xdp = s.add("xdp");
    let sec_text = s.add(".text");
    let file = s.add("/src/a.c");
    let l10 = s.add("int xdp_prog(struct xdp_md *ctx)");
    let l11 = s.add("\treturn helper();");
    let l3 = s.add("static int other(void)");
    let l5 = s.add("static int helper(void)");
    let l6 = s.add("\treturn 1;");
    let line = info_kind(
        16,
        &[
            (
                sec_xdp,
                vec![line_rec(0, file, l10, 10, 1), line_rec(8, file, l11, 11, 9)],
            ),
            (
                sec_text,
                vec![
                    line_rec(0, file, l3, 3, 0),
                    line_rec(16, file, l5, 5, 1),
                    line_rec(32, file, l6, 6, 2),
                ],
            ),
        ],
        big,
    );
    let func = info_kind(
        8,
        &[
            (sec_xdp, vec![vec![0, 3]]),
            (sec_text, vec![vec![0, 4], vec![16, 5]]),
        ],
        big,
    );
    // One CO-RE relocation, on helper's last instruction (.text byte 32).
    let core = info_kind(16, &[(sec_text, vec![vec![32, 1, 0, 0]])], big);
    elf.btf(&s, &btf_ext(&func, &line, &core, big));
    elf.finish()
}

fn expected_xdp_rows() -> Vec<Row> {
    vec![
        row(0, "/src/a.c", 10, 1, "int xdp_prog(struct xdp_md *ctx)"),
        row(1, "/src/a.c", 11, 9, "\treturn helper();"),
        // helper's records: section slots 2 and 4, rebased to 4 + 0 and 4 + 2.
        row(4, "/src/a.c", 5, 1, "static int helper(void)"),
        row(6, "/src/a.c", 6, 2, "\treturn 1;"),
    ]
}

fn check_xdp_with_static_call(big: bool) {
    let data = xdp_with_static_call(big);
    let object = BpfObject::parse(&data).unwrap();
    let endian = if big {
        Endianness::Big
    } else {
        Endianness::Little
    };
    assert_eq!(object.elf().endian, endian);
    let programs = object.programs();
    assert_eq!(programs.len(), 1);
    assert_eq!(object.function(programs[0]).name, "xdp_prog");
    assert_eq!(object.section_name(programs[0]), "xdp");

    let (program, layout) = layout_of(&object, "xdp_prog");
    assert_eq!(program, programs[0]);
    assert_eq!(
        parts(&object, &layout),
        [("xdp_prog".into(), 0, 4), ("helper".into(), 4, 3)]
    );
    assert_eq!(layout.len, 7);
    assert_eq!(object.section_name(layout.parts[1].function), ".text");

    // Loaded instruction 4 is helper's first, `r0 = 1`.
    let insn = object.insn(&layout, 4).unwrap();
    assert_eq!((insn.code, insn.dst, insn.imm), (0xb7, 0, 1));
    let call = object.insn(&layout, 1).unwrap();
    assert!(call.is_pseudo_call());
    assert_eq!(call.imm, 1);
    let insn = object.insn(&layout, 5).unwrap();
    assert_eq!((insn.code, insn.dst, insn.imm), (0xb7, 1, 2));
    assert!(object.insn(&layout, 7).is_none());

    assert_eq!(rows(&object, &layout), expected_xdp_rows());
    let table = object.line_table(&layout).unwrap();
    assert_eq!(table.program_len(), 7);
    let line_at = |i| table.find(i).map(|r| r.line);
    assert_eq!(
        (0..8).map(line_at).collect::<Vec<_>>(),
        [
            Some(10),
            Some(11),
            Some(11),
            Some(11),
            Some(5),
            Some(5),
            Some(6),
            None
        ]
    );
    let r = table.find(6).unwrap();
    assert_eq!(r.basename(), b"a.c");
    assert_eq!(r.trimmed_text(), b"return 1;");
    for i in 0..8 {
        assert_eq!(table.find(i), table.find_linear(i));
    }

    let funcs: Vec<_> = object
        .func_rows(&layout)
        .iter()
        .map(|f| (f.insn, f.type_id))
        .collect();
    assert_eq!(funcs, [(0, 3), (4, 5)]);
    assert!(object.has_core_relo(&layout, 6));
    assert!(!object.has_core_relo(&layout, 5));
    assert!(!object.has_core_relo(&layout, 100));
}

#[test]
fn static_call_little_endian() {
    check_xdp_with_static_call(false);
}

#[test]
fn static_call_big_endian() {
    check_xdp_with_static_call(true);
}

#[test]
fn static_call_same_table_in_both_byte_orders() {
    let le = xdp_with_static_call(false);
    let be = xdp_with_static_call(true);
    let le = BpfObject::parse(&le).unwrap();
    let be = BpfObject::parse(&be).unwrap();
    let (_, le_layout) = layout_of(&le, "xdp_prog");
    let (_, be_layout) = layout_of(&be, "xdp_prog");
    assert_eq!(le_layout, be_layout);
    assert_eq!(rows(&le, &le_layout), rows(&be, &be_layout));
}

// ---------------------------------------------------------------------------------------------
// Layout order
// ---------------------------------------------------------------------------------------------

/// `.text`: A (0..3 slots), B (3..5), C (5..7). The entry calls A then B; A calls C.
/// A's call to C is against C's global symbol with imm -1, as clang emits global calls.
fn depth_first(big: bool) -> Vec<u8> {
    let mut elf = Elf::new(big);
    let text = elf.code(
        ".text",
        &[
            // A
            mov(0, 0),
            pcall(-1),
            exit(),
            // B
            mov(0, 1),
            exit(),
            // C
            mov(0, 2),
            exit(),
        ],
    );
    let entry = elf.code(
        "tc",
        &[
            // call A: section symbol, target 0 + imm + 1 = 0
            pcall(-1),
            // call B: section symbol, target 0 + 2 + 1 = 3
            pcall(2),
            // A again: already placed
            pcall(-1),
            exit(),
        ],
    );
    elf.static_func(text, "A", 0, 24);
    elf.static_func(text, "B", 24, 16);
    let c = elf.func(text, "C", 40, 16);
    elf.func(entry, "entry", 0, 32);
    let text_sym = elf.section_symbol(text);
    elf.reloc(entry, 0, text_sym, R_BPF_64_32);
    elf.reloc(entry, 8, text_sym, R_BPF_64_32);
    elf.reloc(entry, 16, text_sym, R_BPF_64_32);
    elf.reloc(text, 8, c, R_BPF_64_32);
    elf.finish()
}

#[test]
fn subprograms_are_appended_depth_first() {
    for big in [false, true] {
        let data = depth_first(big);
        let object = BpfObject::parse(&data).unwrap();
        let (_, layout) = layout_of(&object, "entry");
        assert_eq!(
            parts(&object, &layout),
            [
                ("entry".into(), 0, 4),
                ("A".into(), 4, 3),
                ("C".into(), 7, 2),
                ("B".into(), 9, 2),
            ],
            "big endian: {big}"
        );
        assert_eq!(layout.len, 11);
        // No .BTF at all: the line table names the missing section.
        assert_eq!(
            object.line_table(&layout).unwrap_err().to_string(),
            "no .BTF section (was the object compiled with clang -g?)"
        );
    }
}

#[test]
fn ld_imm64_callback_against_text_is_appended() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let text = elf.code(
            ".text",
            &[
                // pad: unused
                mov(0, 0),
                exit(),
                // cb at byte 16
                mov(0, 1),
                exit(),
            ],
        );
        let [l0, l1] = ld_imm64(2, 16);
        let xdp = elf.code("xdp", &[mov(1, 8), l0, l1, helper(181), exit()]);
        elf.static_func(text, "pad", 0, 16);
        elf.static_func(text, "cb", 16, 16);
        elf.func(xdp, "loop_prog", 0, 40);
        let text_sym = elf.section_symbol(text);
        elf.reloc(xdp, 8, text_sym, R_BPF_64_64);
        let data = elf.finish();
        let object = BpfObject::parse(&data).unwrap();
        let (_, layout) = layout_of(&object, "loop_prog");
        assert_eq!(
            parts(&object, &layout),
            [("loop_prog".into(), 0, 5), ("cb".into(), 5, 2)]
        );
    }
}

#[test]
fn ld_imm64_callback_not_at_a_multiple_of_8() {
    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    let [l0, l1] = ld_imm64(2, 4);
    let xdp = elf.code("xdp", &[l0, l1, exit()]);
    elf.static_func(text, "cb", 0, 16);
    elf.func(xdp, "prog", 0, 24);
    let text_sym = elf.section_symbol(text);
    elf.reloc(xdp, 0, text_sym, R_BPF_64_64);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let p = object.program("prog").unwrap();
    assert_eq!(
        object.layout(p).unwrap_err().to_string(),
        "section xdp at offset 0x0: ld_imm64 of a .text address 0x4 that is not a multiple of 8"
    );
}

#[test]
fn ld_imm64_of_a_map_is_not_a_use() {
    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    let maps = elf.raw(".maps", &[0; 32]);
    let [l0, l1] = ld_imm64(1, 0);
    let xdp = elf.code("xdp", &[l0, l1, exit()]);
    elf.static_func(text, "unused", 0, 16);
    elf.func(xdp, "prog", 0, 24);
    let map = elf.obj.add_symbol(Symbol {
        name: b"my_map".to_vec(),
        value: 0,
        size: 32,
        kind: SymbolKind::Data,
        scope: SymbolScope::Linkage,
        weak: false,
        section: WriteSymbolSection::Section(maps),
        flags: SymbolFlags::None,
    });
    elf.reloc(xdp, 0, map, R_BPF_64_64);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let (_, layout) = layout_of(&object, "prog");
    assert_eq!(parts(&object, &layout), [("prog".into(), 0, 3)]);
}

#[test]
fn two_programs_in_one_section_each_start_at_zero() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let text = elf.code(".text", &[mov(0, 7), exit()]);
        let xdp = elf.code(
            "xdp",
            &[
                // first: 3 slots
                mov(0, 0),
                pcall(-1),
                exit(),
                // second: 2 slots at byte 24
                mov(0, 1),
                exit(),
            ],
        );
        let f = elf.func(text, "shared", 0, 16);
        // Symbols added out of order: programs are sorted by offset.
        elf.func(xdp, "second", 24, 16);
        elf.func(xdp, "first", 0, 24);
        elf.reloc(xdp, 8, f, R_BPF_64_32);
        let mut s = Strings::new();
        let sec = s.add("xdp");
        let file = s.add("b.c");
        let t = s.add("x");
        let ext = line_ext(
            &[(
                sec,
                vec![
                    line_rec(0, file, t, 1, 0),
                    line_rec(8, file, t, 2, 0),
                    line_rec(24, file, t, 7, 0),
                    line_rec(32, file, t, 8, 0),
                ],
            )],
            big,
        );
        elf.btf(&s, &ext);
        let data = elf.finish();
        let object = BpfObject::parse(&data).unwrap();
        let names: Vec<_> = object
            .programs()
            .iter()
            .map(|&p| object.function(p).name.clone())
            .collect();
        assert_eq!(names, ["first", "second"]);

        let (_, first) = layout_of(&object, "first");
        assert_eq!(
            parts(&object, &first),
            [("first".into(), 0, 3), ("shared".into(), 3, 2)]
        );
        let (_, second) = layout_of(&object, "second");
        assert_eq!(parts(&object, &second), [("second".into(), 0, 2)]);
        assert_eq!(second.len, 2);

        let lines = |layout| -> Vec<(u32, u32)> {
            rows(&object, layout)
                .into_iter()
                .map(|r| (r.0, r.2))
                .collect()
        };
        assert_eq!(lines(&first), [(0, 1), (1, 2)]);
        assert_eq!(lines(&second), [(0, 7), (1, 8)]);
    }
}

// ---------------------------------------------------------------------------------------------
// Bad function symbols
// ---------------------------------------------------------------------------------------------

#[test]
fn function_start_not_a_multiple_of_8() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let xdp = elf.code("xdp", &[mov(0, 0), mov(0, 0), exit()]);
        elf.func(xdp, "prog", 4, 16);
        assert_eq!(
            parse_err(&elf.finish()),
            "section xdp at offset 0x4: function prog: start 0x4 is not a multiple of 8"
        );
    }
}

#[test]
fn function_size_not_a_multiple_of_8() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), mov(0, 0), exit()]);
    elf.func(xdp, "prog", 8, 12);
    assert_eq!(
        parse_err(&elf.finish()),
        "section xdp at offset 0x8: function prog: size 12 is not a multiple of 8"
    );
}

#[test]
fn function_runs_past_its_section() {
    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), mov(0, 0), exit()]);
    elf.func(text, "sub", 8, 24);
    assert_eq!(
        parse_err(&elf.finish()),
        "section .text at offset 0x8: function sub: size 24 runs past the end of the section (24 bytes)"
    );
}

#[test]
fn zero_size_function_symbols_are_skipped() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "label", 4, 0);
    elf.func(xdp, "prog", 0, 16);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    assert_eq!(object.programs().len(), 1);
    assert_eq!(
        object.program("label").unwrap_err().to_string(),
        "no program named 'label' (programs: prog)"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad .BTF.ext line records
// ---------------------------------------------------------------------------------------------

/// `xdp` with one 4-slot program, `.BTF` strings `xdp`, `a.c`, `x = 1;` and a `.BTF.ext` whose
/// single line block for `xdp` holds `records`. The first record is at `.BTF.ext` offset 0x2c.
fn with_line_records(big: bool, records: Vec<Vec<u32>>) -> Vec<u8> {
    let mut elf = Elf::new(big);
    let xdp = elf.code("xdp", &[mov(0, 0), mov(1, 1), mov(2, 2), exit()]);
    elf.func(xdp, "prog", 0, 32);
    let mut s = Strings::new();
    let sec = s.add("xdp");
    assert_eq!((s.add("a.c"), s.add("x = 1;")), file_and_text());
    elf.btf(&s, &line_ext(&[(sec, records)], big));
    elf.finish()
}

/// The string-table offsets `with_line_records` uses for a file and a line.
fn file_and_text() -> (u32, u32) {
    let mut s = Strings::new();
    s.add("xdp");
    (s.add("a.c"), s.add("x = 1;"))
}

#[test]
fn line_records_resolve_against_the_string_table() {
    let (file, text) = file_and_text();
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let xdp = elf.code("xdp", &[mov(0, 0), mov(1, 1), mov(2, 2), exit()]);
        elf.func(xdp, "prog", 0, 32);
        let mut s = Strings::new();
        let sec = s.add("xdp");
        assert_eq!((s.add("a.c"), s.add("x = 1;")), (file, text));
        // Records out of order in the file: the kernel refuses them (`check_btf_line`), so
        // the object cannot have produced a log; the second record is named.
        elf.btf(
            &s,
            &line_ext(
                &[(
                    sec,
                    vec![
                        line_rec(16, file, text, 3, 5),
                        line_rec(0, file, text, 2, 1),
                    ],
                )],
                big,
            ),
        );
        let data = elf.finish();
        assert_eq!(
            parse_err(&data),
            "section .BTF.ext at offset 0x3c: line_info insn_off 0 is not after the previous \
             record's 16 (records must be sorted, as the kernel requires)"
        );
    }
}

#[test]
fn line_insn_off_not_a_multiple_of_8() {
    let (file, text) = file_and_text();
    for big in [false, true] {
        let data = with_line_records(big, vec![line_rec(12, file, text, 1, 0)]);
        assert_eq!(
            parse_err(&data),
            "section .BTF.ext at offset 0x2c: line_info insn_off 12 is not a multiple of 8"
        );
    }
}

#[test]
fn line_insn_off_past_the_end_of_the_section() {
    let (file, text) = file_and_text();
    // 32 is one past the last slot of the 32-byte section.
    let data = with_line_records(
        false,
        vec![
            line_rec(0, file, text, 1, 0),
            line_rec(32, file, text, 2, 0),
        ],
    );
    assert_eq!(
        parse_err(&data),
        "section .BTF.ext at offset 0x3c: line_info insn_off 32 is past the end of section xdp (32 bytes)"
    );
    let data = with_line_records(true, vec![line_rec(0xffff_fff8, file, text, 1, 0)]);
    assert_eq!(
        parse_err(&data),
        "section .BTF.ext at offset 0x2c: line_info insn_off 4294967288 is past the end of section xdp (32 bytes)"
    );
}

#[test]
fn line_file_name_off_outside_the_string_table() {
    let (_, text) = file_and_text();
    // The table: "\0xdp\0a.c\0x = 1;\0" is 16 bytes.
    for big in [false, true] {
        let data = with_line_records(big, vec![line_rec(0, 17, text, 1, 0)]);
        assert_eq!(
            parse_err(&data),
            "section .BTF.ext at offset 0x30: string offset 17 is outside the string table (string table is 16 bytes)"
        );
        let data = with_line_records(big, vec![line_rec(0, u32::MAX, text, 1, 0)]);
        assert_eq!(
            parse_err(&data),
            "section .BTF.ext at offset 0x30: string offset 4294967295 is outside the string table (string table is 16 bytes)"
        );
    }
}

/// An offset equal to the table's length names no byte of the table, so it is outside it.
#[test]
fn string_offset_equal_to_table_length_is_outside_the_table() {
    let (_, text) = file_and_text();
    let data = with_line_records(false, vec![line_rec(0, 16, text, 1, 0)]);
    assert_eq!(
        parse_err(&data),
        "section .BTF.ext at offset 0x30: string offset 16 is outside the string table (string table is 16 bytes)"
    );
}

#[test]
fn line_off_outside_the_string_table() {
    let (file, _) = file_and_text();
    let data = with_line_records(false, vec![line_rec(0, file, 1000, 1, 0)]);
    assert_eq!(
        parse_err(&data),
        "section .BTF.ext at offset 0x34: string offset 1000 is outside the string table (string table is 16 bytes)"
    );
}

#[test]
fn string_without_nul_terminator() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
        elf.func(xdp, "prog", 0, 16);
        // "\0xdp\0a.c\0abc": the last string runs to the end of the table.
        let table = Strings {
            table: b"\0xdp\0a.c\0abc".to_vec(),
        };
        elf.btf(
            &table,
            &line_ext(&[(1, vec![line_rec(0, 5, 9, 1, 0)])], big),
        );
        assert_eq!(
            parse_err(&elf.finish()),
            "section .BTF.ext at offset 0x34: string offset 9 has no NUL terminator (string table is 12 bytes)"
        );
    }
}

#[test]
fn section_name_without_nul_terminator() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    let table = Strings {
        table: b"\0xdp".to_vec(),
    };
    elf.btf(
        &table,
        &line_ext(&[(1, vec![line_rec(0, 0, 0, 1, 0)])], false),
    );
    // The block header (sec_name_off) is at 0x24, after line_info's rec_size.
    assert_eq!(
        parse_err(&elf.finish()),
        "section .BTF.ext at offset 0x24: string offset 1 has no NUL terminator (string table is 4 bytes)"
    );
}

#[test]
fn block_for_a_missing_section_is_ignored() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
        elf.func(xdp, "prog", 0, 16);
        let mut s = Strings::new();
        let sec = s.add("xdp");
        let gone = s.add("kprobe/gone");
        let file = s.add("a.c");
        let text = s.add("return 0;");
        // The block for the missing section has records that would be invalid anywhere.
        let ext = line_ext(
            &[
                (gone, vec![line_rec(4, 999, 999, 1, 0)]),
                (sec, vec![line_rec(0, file, text, 4, 2)]),
            ],
            big,
        );
        elf.btf(&s, &ext);
        let data = elf.finish();
        let object = BpfObject::parse(&data).unwrap();
        let (_, layout) = layout_of(&object, "prog");
        assert_eq!(rows(&object, &layout), [row(0, "a.c", 4, 2, "return 0;")]);
    }
}

#[test]
fn func_info_insn_off_not_a_multiple_of_8() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    let mut s = Strings::new();
    let sec = s.add("xdp");
    let func = info_kind(8, &[(sec, vec![vec![2, 1]])], false);
    elf.btf(&s, &btf_ext(&func, &[], &[], false));
    assert_eq!(
        parse_err(&elf.finish()),
        "section .BTF.ext at offset 0x2c: func_info insn_off 2 is not a multiple of 8"
    );
}

#[test]
fn btf_in_the_wrong_byte_order() {
    let mut elf = Elf::new(true);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    let s = Strings::new();
    // Little-endian .BTF inside a big-endian object.
    elf.raw(".BTF", &btf(&s.table, false));
    assert_eq!(
        parse_err(&elf.finish()),
        "section .BTF at offset 0x0: bad magic 0x9feb (expected 0xeb9f in the ELF's byte order; this one is byte-swapped)"
    );
}

// ---------------------------------------------------------------------------------------------
// Calls and relocations
// ---------------------------------------------------------------------------------------------

#[test]
fn kfunc_call_is_not_a_use() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let text = elf.code(".text", &[mov(0, 0), exit()]);
        // The kfunc call's imm, taken relative to a section, would land on `sub`.
        let xdp = elf.code("xdp", &[pcall(-1), helper(-1), exit()]);
        elf.static_func(text, "sub", 0, 16);
        elf.func(xdp, "prog", 0, 24);
        let kfunc = elf.undefined("bpf_task_acquire");
        elf.reloc(xdp, 0, kfunc, R_BPF_64_32);
        elf.reloc(xdp, 8, kfunc, R_BPF_64_32);
        let data = elf.finish();
        let object = BpfObject::parse(&data).unwrap();
        let (_, layout) = layout_of(&object, "prog");
        assert_eq!(parts(&object, &layout), [("prog".into(), 0, 3)]);
        assert_eq!(layout.len, 3);
    }
}

/// The entry calls `sub` (in `.text`), whose unrelocated call has immediate `imm`.
fn text_call(big: bool, imm: i32) -> String {
    let mut elf = Elf::new(big);
    // .text: sub (0..3), a gap slot 3, other (4..6)
    let text = elf.code(
        ".text",
        &[mov(0, 0), pcall(imm), exit(), mov(0, 9), mov(0, 1), exit()],
    );
    let xdp = elf.code("xdp", &[pcall(-1), exit()]);
    let sub = elf.func(text, "sub", 0, 24);
    elf.static_func(text, "other", 32, 16);
    elf.func(xdp, "prog", 0, 16);
    elf.reloc(xdp, 0, sub, R_BPF_64_32);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let p = object.program("prog").unwrap();
    match object.layout(p) {
        Ok(layout) => format!("{:?}", parts(&object, &layout)),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unrelocated_call_in_text_is_relative_to_the_caller() {
    for big in [false, true] {
        // slot 1 + 2 + 1 = 4: other.
        assert_eq!(
            text_call(big, 2),
            r#"[("prog", 0, 2), ("sub", 2, 3), ("other", 5, 2)]"#
        );
        // A recursive call to sub itself: placed once.
        assert_eq!(text_call(big, -2), r#"[("prog", 0, 2), ("sub", 2, 3)]"#);
    }
}

#[test]
fn unrelocated_call_into_nowhere() {
    for big in [false, true] {
        // slot 1 + 1 + 1 = 3: the gap between sub and other.
        assert_eq!(
            text_call(big, 1),
            "section .text at offset 0x8: call or callback reference to .text instruction 3, where no function is"
        );
        // Past the end of .text.
        assert_eq!(
            text_call(big, 100),
            "section .text at offset 0x8: call or callback reference to .text instruction 102, where no function is"
        );
        // Before the start of .text.
        assert_eq!(
            text_call(big, -5),
            "section .text at offset 0x8: call or callback reference to .text instruction -3, where no function is"
        );
    }
}

#[test]
fn call_relocated_against_another_entry_section() {
    for big in [false, true] {
        let mut elf = Elf::new(big);
        let text = elf.code(".text", &[mov(0, 0), exit()]);
        let tc = elf.code("tc", &[mov(0, 0), exit()]);
        let xdp = elf.code("xdp", &[mov(0, 0), pcall(-1), exit()]);
        elf.static_func(text, "sub", 0, 16);
        let target = elf.func(tc, "tc_prog", 0, 16);
        elf.func(xdp, "xdp_prog", 0, 24);
        elf.reloc(xdp, 8, target, R_BPF_64_32);
        let data = elf.finish();
        let object = BpfObject::parse(&data).unwrap();
        let p = object.program("xdp_prog").unwrap();
        assert_eq!(
            object.layout(p).unwrap_err().to_string(),
            "section xdp at offset 0x8: call relocated against 'tc_prog', which is not in .text"
        );
        // The other program is unaffected.
        let (_, layout) = layout_of(&object, "tc_prog");
        assert_eq!(parts(&object, &layout), [("tc_prog".into(), 0, 2)]);
    }
}

#[test]
fn call_relocated_against_a_data_symbol() {
    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    let rodata = elf.raw(".rodata", &[0; 8]);
    let xdp = elf.code("xdp", &[pcall(-1), exit()]);
    elf.static_func(text, "sub", 0, 16);
    elf.func(xdp, "prog", 0, 16);
    let sym = elf.section_symbol(rodata);
    elf.reloc(xdp, 0, sym, R_BPF_64_32);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let p = object.program("prog").unwrap();
    // The STT_SECTION symbol has an empty name: the message names its section, like libbpf.
    assert_eq!(
        object.layout(p).unwrap_err().to_string(),
        "section xdp at offset 0x0: call relocated against '.rodata', which is not in .text"
    );
}

#[test]
fn call_without_a_text_section() {
    let mut elf = Elf::new(false);
    let tc = elf.code("tc", &[mov(0, 0), exit()]);
    let xdp = elf.code("xdp", &[pcall(-1), exit()]);
    let target = elf.func(tc, "tc_prog", 0, 16);
    elf.func(xdp, "prog", 0, 16);
    elf.reloc(xdp, 0, target, R_BPF_64_32);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    assert!(object.elf().text.is_none());
    let p = object.program("prog").unwrap();
    assert_eq!(
        object.layout(p).unwrap_err().to_string(),
        "section xdp at offset 0x0: call relocated against 'tc_prog', which is not in .text"
    );
}

#[test]
fn relocation_offset_not_a_multiple_of_8() {
    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    let xdp = elf.code("xdp", &[pcall(-1), exit()]);
    let sub = elf.static_func(text, "sub", 0, 16);
    elf.func(xdp, "prog", 0, 16);
    elf.reloc(xdp, 4, sub, R_BPF_64_32);
    assert_eq!(
        parse_err(&elf.finish()),
        "section xdp at offset 0x4: relocation offset is not a multiple of 8"
    );
}

// ---------------------------------------------------------------------------------------------
// Missing sections and unknown programs
// ---------------------------------------------------------------------------------------------

#[test]
fn btf_ext_without_btf() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    elf.raw(
        ".BTF.ext",
        &line_ext(&[(1, vec![line_rec(0, 0, 0, 1, 0)])], false),
    );
    assert_eq!(
        parse_err(&elf.finish()),
        "no .BTF section (was the object compiled with clang -g?)"
    );
}

#[test]
fn btf_without_btf_ext() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    elf.raw(".BTF", &btf(&Strings::new().table, false));
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let (_, layout) = layout_of(&object, "prog");
    assert_eq!(
        object.line_table(&layout).unwrap_err().to_string(),
        "no .BTF.ext section (was the object compiled with clang -g?)"
    );
    assert!(object.func_rows(&layout).is_empty());
}

#[test]
fn neither_btf_nor_btf_ext() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0, 16);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let (_, layout) = layout_of(&object, "prog");
    // .BTF is checked first.
    assert_eq!(
        object.line_table(&layout).unwrap_err().to_string(),
        "no .BTF section (was the object compiled with clang -g?)"
    );
}

#[test]
fn unknown_program_lists_the_programs() {
    let data = depth_first(false);
    let object = BpfObject::parse(&data).unwrap();
    assert_eq!(
        object.program("nope").unwrap_err().to_string(),
        "no program named 'nope' (programs: entry)"
    );
    // .text functions are subprograms, not programs.
    assert_eq!(
        object.program("A").unwrap_err().to_string(),
        "no program named 'A' (programs: entry)"
    );

    let data = xdp_with_static_call(false);
    let object = BpfObject::parse(&data).unwrap();
    assert_eq!(
        object.program("helper").unwrap_err().to_string(),
        "no program named 'helper' (programs: xdp_prog)"
    );

    let mut elf = Elf::new(false);
    let a = elf.code("xdp", &[mov(0, 0), exit()]);
    let b = elf.code("tc", &[mov(0, 0), exit()]);
    elf.func(b, "tc_prog", 0, 16);
    elf.func(a, "xdp_prog", 0, 16);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    assert_eq!(
        object.program("nope").unwrap_err().to_string(),
        "no program named 'nope' (programs: xdp_prog, tc_prog)"
    );

    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    elf.func(text, "sub", 0, 16);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    assert!(object.programs().is_empty());
    assert_eq!(
        object.program("nope").unwrap_err().to_string(),
        "no program named 'nope' (programs: )"
    );
}

/// Byte offsets that are multiples of 8 but too large for a `u32` slot are reported as "not a
/// multiple of 8", because `ByteOffset::to_slot` returns `None` for both reasons.
#[test]
fn huge_aligned_offsets_are_not_called_misaligned() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 0x8_0000_0000, 16);
    let err = parse_err(&elf.finish());
    assert!(
        err.starts_with("section xdp at offset 0x800000000: function prog: "),
        "{err}"
    );
    assert!(!err.contains("not a multiple of 8"), "{err}");

    let mut elf = Elf::new(false);
    let text = elf.code(".text", &[mov(0, 0), exit()]);
    let xdp = elf.code("xdp", &[pcall(-1), exit()]);
    elf.func(text, "sub", 0, 16);
    let far = elf.symbol(text, "far", 0x8_0000_0000, 0, SymbolScope::Linkage);
    elf.func(xdp, "prog", 0, 16);
    elf.reloc(xdp, 0, far, R_BPF_64_32);
    let data = elf.finish();
    let object = BpfObject::parse(&data).unwrap();
    let p = object.program("prog").unwrap();
    let err = object.layout(p).unwrap_err().to_string();
    assert!(err.starts_with("section xdp at offset 0x0: "), "{err}");
    assert!(!err.contains("not at a multiple of 8"), "{err}");
}

#[test]
fn function_size_overflowing_u64_runs_past_the_section() {
    let mut elf = Elf::new(false);
    let xdp = elf.code("xdp", &[mov(0, 0), exit()]);
    elf.func(xdp, "prog", 8, u64::MAX - 7);
    assert_eq!(
        parse_err(&elf.finish()),
        "section xdp at offset 0x8: function prog: size 18446744073709551608 runs past the end of the section (16 bytes)"
    );
}
