//! Experiment (not kept): addr2line over the same relocated DWARF as `dwarf.rs`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gimli::{RelocateReader, RunTimeEndian};
use object::{Object as _, ObjectSection as _};

use super::dwarf::{DebugLocation, Dwarf, RelocMap, SECTIONS, Slice};
use crate::elf::{Elf, SectionId};

type R<'d, 'm> = RelocateReader<Slice<'d>, &'m RelocMap>;

fn load<'d>(
    file: &object::File<'d>,
) -> (RunTimeEndian, Vec<(gimli::SectionId, &'d [u8], RelocMap)>) {
    let endian = if file.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let mut loaded = Vec::new();
    for id in SECTIONS {
        let Some(section) = file.section_by_name(id.name()) else {
            continue;
        };
        let data = section.data().expect("data");
        let relocs = RelocMap::build(file, &section, id.name()).expect("relocs");
        loaded.push((id, data, relocs));
    }
    (endian, loaded)
}

fn gimli_dwarf<'d, 'm>(
    endian: RunTimeEndian,
    loaded: &'m [(gimli::SectionId, &'d [u8], RelocMap)],
    empty: &'m RelocMap,
) -> gimli::Dwarf<R<'d, 'm>> {
    let Ok(dwarf) = gimli::Dwarf::load(|id| {
        Ok::<_, std::convert::Infallible>(match loaded.iter().find(|(i, _, _)| *i == id) {
            Some((_, data, relocs)) => RelocateReader::new(Slice::new(data, endian), relocs),
            None => RelocateReader::new(Slice::new(&[], endian), empty),
        })
    });
    dwarf
}

/// ELF section index + 1 of each code section, as the tag of its addresses.
fn tags(file: &object::File<'_>, elf: &Elf<'_>) -> Vec<u64> {
    elf.sections
        .iter()
        .map(|s| file.section_by_name(&s.name).expect("section").index().0 as u64 + 1)
        .collect()
}

type Pos = (String, u32, u32);

#[derive(Debug, Clone, PartialEq)]
struct Answer {
    pos: Option<Pos>,
    function: Option<String>,
    /// (inlined function, call site), innermost first.
    inlined: Vec<(String, Option<Pos>)>,
}

fn ours(d: &DebugLocation<'_>) -> Answer {
    let p = |p: &super::dwarf::SourcePos<'_>| (p.file.to_owned(), p.line, p.column);
    Answer {
        pos: d.pos.as_ref().map(p),
        function: d.function.map(str::to_owned),
        inlined: d
            .inlined
            .iter()
            .map(|c| (c.function.to_owned(), c.call_site.as_ref().map(p)))
            .collect(),
    }
}

fn loc(l: &addr2line::Location<'_>) -> Pos {
    (
        l.file.unwrap_or("").to_owned(),
        l.line.unwrap_or(0),
        l.column.unwrap_or(0),
    )
}

fn theirs<Rd: gimli::Reader>(ctx: &addr2line::Context<Rd>, probe: u64) -> Result<Answer, String> {
    let location = ctx.find_location(probe).map_err(|e| e.to_string())?;
    let mut frames = ctx
        .find_frames(probe)
        .skip_all_loads()
        .map_err(|e| e.to_string())?;
    let mut list = Vec::new();
    while let Some(f) = frames.next().map_err(|e| e.to_string())? {
        let name = match &f.function {
            Some(n) => Some(n.raw_name().map_err(|e| e.to_string())?.into_owned()),
            None => None,
        };
        list.push((name, f.location.as_ref().map(loc)));
    }
    let function = list.last().and_then(|(n, _)| n.clone());
    let n = list.len();
    let inlined = (0..n.saturating_sub(1))
        .map(|i| (list[i].0.clone().unwrap_or_default(), list[i + 1].1.clone()))
        .collect();
    let first = list.first().and_then(|(_, l)| l.clone());
    let pos = location.as_ref().map(loc);
    if n > 0 && first != pos {
        return Err(format!(
            "find_frames' first location {first:?} != find_location {pos:?}"
        ));
    }
    Ok(Answer {
        pos,
        function,
        inlined,
    })
}

/// Same file: equal, or addr2line's is ours behind a directory (the compilation directory).
fn same_file(a2l: &str, ours: &str) -> bool {
    a2l == ours || a2l.strip_suffix(ours).is_some_and(|p| p.ends_with('/'))
}

/// Kinds of disagreement between two answers (empty: they agree modulo the file prefix).
fn kinds(o: &Answer, t: &Answer) -> Vec<&'static str> {
    let mut k = Vec::new();
    let pos_kind = |o: &Option<Pos>,
                    t: &Option<Pos>,
                    what: &'static [&'static str; 4]|
     -> Option<&'static str> {
        match (o, t) {
            (None, None) => None,
            (Some(_), None) => Some(what[0]),
            (None, Some(_)) => Some(what[1]),
            (Some(a), Some(b)) => {
                if !same_file(&b.0, &a.0) {
                    Some(what[2])
                } else if a.1 == b.1 && a.2 == b.2 {
                    None
                } else if a.1 == 0 && b.1 == 0 && b.2 == 0 {
                    Some(what[3])
                } else {
                    Some("pos: line/column differ")
                }
            }
        }
    };
    if let Some(x) = pos_kind(
        &o.pos,
        &t.pos,
        &[
            "pos: only dwarf.rs has a row",
            "pos: only addr2line has a row",
            "pos: file differs",
            "pos: line 0, addr2line drops the column",
        ],
    ) {
        k.push(x);
    }
    if o.pos
        .as_ref()
        .zip(t.pos.as_ref())
        .is_some_and(|(a, b)| a.0 != b.0 && same_file(&b.0, &a.0))
    {
        k.push("file: addr2line prefixes the compilation directory");
    }
    if o.function != t.function {
        k.push(match (&o.function, &t.function) {
            (Some(_), None) => "function: only dwarf.rs names one",
            (None, Some(_)) => "function: only addr2line names one",
            _ => "function: different names",
        });
    }
    if o.inlined.len() != t.inlined.len() {
        k.push("inline chain: different depth");
    } else {
        for (a, b) in o.inlined.iter().zip(&t.inlined) {
            if a.0 != b.0 {
                k.push("inline chain: different function");
            }
            if let Some(x) = pos_kind(
                &a.1,
                &b.1,
                &[
                    "call site: only dwarf.rs has one",
                    "call site: only addr2line has one",
                    "call site: file differs",
                    "call site: line 0, column dropped",
                ],
            ) {
                k.push(x);
            }
            if a.1
                .as_ref()
                .zip(b.1.as_ref())
                .is_some_and(|(a, b)| a.0 != b.0 && same_file(&b.0, &a.0))
            {
                k.push("call site file: addr2line prefixes the compilation directory");
            }
        }
    }
    k.sort();
    k.dedup();
    k
}

fn objects() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut paths: Vec<String> = std::fs::read_dir(format!("{root}/tests/fixtures/obj"))
        .expect("dir")
        .map(|e| e.expect("entry").path().display().to_string())
        .filter(|p| p.ends_with(".o"))
        .collect();
    paths.sort();
    paths.push(format!("{root}/benches/fixtures/unrolled.o"));
    if let Ok(extra) = std::env::var("A2L_OBJ") {
        paths.push(extra);
    }
    paths
}

#[derive(Default)]
struct Tally {
    insns: usize,
    exact: usize,
    agree_modulo_prefix: usize,
    kinds: BTreeMap<&'static str, (usize, String)>,
    errors: Vec<String>,
    files: BTreeMap<(String, String), usize>,
}

fn compare(path: &str, data: &[u8], tally: &mut Tally) {
    let file = object::File::parse(data).expect("ELF");
    let elf = Elf::parse(&file).expect("elf");
    let ours_dwarf = match Dwarf::parse(&file, &elf) {
        Ok(Some(d)) => d,
        Ok(None) => return,
        Err(e) => {
            tally.errors.push(format!("{path}: dwarf.rs error {e}"));
            return;
        }
    };
    let (endian, loaded) = load(&file);
    let empty = RelocMap::default();
    let ctx = match addr2line::Context::from_dwarf(gimli_dwarf(endian, &loaded, &empty)) {
        Ok(c) => c,
        Err(e) => {
            tally
                .errors
                .push(format!("{path}: addr2line context error {e}"));
            return;
        }
    };
    let tags = tags(&file, &elf);
    let name = path.rsplit('/').next().unwrap_or(path);
    for (i, section) in elf.sections.iter().enumerate() {
        for off in (0..section.size()).step_by(8) {
            tally.insns += 1;
            let o = ours(&ours_dwarf.locate(SectionId(i), off));
            let t = match theirs(&ctx, tags[i] << 40 | off) {
                Ok(t) => t,
                Err(e) => {
                    tally
                        .errors
                        .push(format!("{name} {} {off:#x}: {e}", section.name));
                    continue;
                }
            };
            let mut pairs: Vec<(String, String)> = Vec::new();
            if let (Some(a), Some(b)) = (&o.pos, &t.pos) {
                pairs.push((a.0.clone(), b.0.clone()));
            }
            for (a, b) in o.inlined.iter().zip(&t.inlined) {
                if let (Some(a), Some(b)) = (&a.1, &b.1) {
                    pairs.push((a.0.clone(), b.0.clone()));
                }
            }
            for p in pairs {
                *tally.files.entry(p).or_default() += 1;
            }
            if o == t {
                tally.exact += 1;
            }
            let k = kinds(&o, &t);
            if k.iter()
                .all(|k| k.contains("prefixes the compilation directory"))
            {
                tally.agree_modulo_prefix += 1;
            }
            for kind in k {
                let entry = tally.kinds.entry(kind).or_insert_with(|| {
                    (
                        0,
                        format!(
                            "{name} {} {off:#x}:\n      dwarf.rs:  {o:?}\n      addr2line: {t:?}",
                            section.name
                        ),
                    )
                });
                entry.0 += 1;
            }
        }
    }
}

#[test]
fn a2l_compare_fixtures() {
    let mut tally = Tally::default();
    for path in objects() {
        let data = std::fs::read(&path).expect("read");
        let before = tally.insns;
        compare(&path, &data, &mut tally);
        eprintln!("{path}: {} instructions", tally.insns - before);
    }
    eprintln!(
        "instructions {}; identical {}; agree but for addr2line's absolute file names {}",
        tally.insns, tally.exact, tally.agree_modulo_prefix
    );
    for (kind, (count, example)) in &tally.kinds {
        eprintln!("  {count:6} {kind}\n    e.g. {example}");
    }
    for ((a, b), n) in &tally.files {
        eprintln!("  file {n:6}: dwarf.rs {a:?} addr2line {b:?}");
    }
    for e in &tally.errors {
        eprintln!("  error: {e}");
    }
}

/// Best of 5 of `f`.
fn best(mut f: impl FnMut() -> usize) -> (Duration, usize) {
    let mut best = Duration::MAX;
    let mut n = 0;
    for _ in 0..5 {
        let t = Instant::now();
        n = std::hint::black_box(f());
        best = best.min(t.elapsed());
    }
    (best, n)
}

#[test]
#[ignore]
fn a2l_speed() {
    let path = std::env::var("A2L_OBJ").expect("A2L_OBJ");
    let which = std::env::var("A2L_WHICH").unwrap_or_default();
    let data = std::fs::read(&path).expect("read");
    let file = object::File::parse(&*data).expect("ELF");
    let elf = Elf::parse(&file).expect("elf");
    let tags = tags(&file, &elf);
    let insns: usize = elf.sections.iter().map(|s| s.size() as usize / 8).sum();
    eprintln!("{path}: {} bytes, {insns} instructions", data.len());
    if which.is_empty() || which == "ours" {
        let (t, n) = best(|| {
            let d = Dwarf::parse(&file, &elf).expect("parse").expect("dwarf");
            let mut n = 0;
            for (i, s) in elf.sections.iter().enumerate() {
                for off in (0..s.size()).step_by(8) {
                    let l = d.locate(SectionId(i), off);
                    n += l.pos.map_or(0, |p| p.line as usize)
                        + l.inlined.len()
                        + l.function.map_or(0, str::len);
                }
            }
            n
        });
        eprintln!("dwarf.rs  build + locate every insn: best of 5 {t:?} ({n})");
    }
    if which == "a2lf" {
        let (t, n) = best(|| {
            let (endian, loaded) = load(&file);
            let empty = RelocMap::default();
            let ctx =
                addr2line::Context::from_dwarf(gimli_dwarf(endian, &loaded, &empty)).expect("ctx");
            let mut n = 0;
            for (i, s) in elf.sections.iter().enumerate() {
                for off in (0..s.size()).step_by(8) {
                    let probe = tags[i] << 40 | off;
                    let mut frames = ctx.find_frames(probe).skip_all_loads().expect("frames");
                    let mut first = true;
                    while let Some(f) = frames.next().expect("frame") {
                        if first {
                            n += f.location.and_then(|l| l.line).unwrap_or(0) as usize;
                            first = false;
                        }
                        n += 1 + f
                            .function
                            .map_or(0, |f| f.raw_name().map_or(0, |n| n.len()));
                    }
                }
            }
            n
        });
        eprintln!("addr2line context + find_frames only every insn: best of 5 {t:?} ({n})");
    }
    if which.is_empty() || which == "a2l" {
        let (t, n) = best(|| {
            let (endian, loaded) = load(&file);
            let empty = RelocMap::default();
            let ctx =
                addr2line::Context::from_dwarf(gimli_dwarf(endian, &loaded, &empty)).expect("ctx");
            let mut n = 0;
            for (i, s) in elf.sections.iter().enumerate() {
                for off in (0..s.size()).step_by(8) {
                    let probe = tags[i] << 40 | off;
                    let l = ctx.find_location(probe).expect("location");
                    n += l.and_then(|l| l.line).unwrap_or(0) as usize;
                    let mut frames = ctx.find_frames(probe).skip_all_loads().expect("frames");
                    while let Some(f) = frames.next().expect("frame") {
                        n += 1 + f
                            .function
                            .map_or(0, |f| f.raw_name().map_or(0, |n| n.len()));
                    }
                }
            }
            n
        });
        eprintln!(
            "addr2line context + find_location + find_frames every insn: best of 5 {t:?} ({n})"
        );
    }
}

/// File offset and size of section `name`.
fn file_range(data: &[u8], name: &str) -> (usize, usize) {
    let file = object::File::parse(data).expect("ELF");
    let section = file.section_by_name(name).expect("section");
    let (offset, size) = section.file_range().expect("in the file");
    (offset as usize, size as usize)
}

/// What both say about every instruction of a (hostile) object: panics caught.
#[derive(Debug, Default)]
struct Hostile {
    insns: usize,
    agree: usize,
    differ: Vec<String>,
    ours_panic: Option<String>,
    a2l_panic: Option<String>,
    a2l_ctx_error: Option<String>,
    a2l_lookup_errors: usize,
    ours_error: Option<String>,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

fn hostile(data: &[u8]) -> Hostile {
    let mut h = Hostile::default();
    let Ok(file) = object::File::parse(data) else {
        return h;
    };
    let Ok(elf) = Elf::parse(&file) else { return h };
    let ours_answers =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match Dwarf::parse(&file, &elf) {
                Ok(Some(d)) => Ok(elf
                    .sections
                    .iter()
                    .enumerate()
                    .flat_map(|(i, s)| (0..s.size()).step_by(8).map(move |o| (i, o)))
                    .map(|(i, o)| ours(&d.locate(SectionId(i), o)))
                    .collect::<Vec<_>>()),
                Ok(None) => Ok(Vec::new()),
                Err(e) => Err(e.to_string()),
            }
        }));
    let ours_answers = match ours_answers {
        Ok(Ok(a)) => Some(a),
        Ok(Err(e)) => {
            h.ours_error = Some(e);
            None
        }
        Err(p) => {
            h.ours_panic = Some(panic_text(p));
            None
        }
    };
    let tags = tags(&file, &elf);
    let theirs_answers = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut loaded = Vec::new();
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        for id in SECTIONS {
            let Some(section) = file.section_by_name(id.name()) else {
                continue;
            };
            let data = section.data().map_err(|e| e.to_string())?;
            let relocs = RelocMap::build(&file, &section, id.name()).map_err(|e| e.to_string())?;
            loaded.push((id, data, relocs));
        }
        let empty = RelocMap::default();
        let ctx = addr2line::Context::from_dwarf(gimli_dwarf(endian, &loaded, &empty))
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for (i, s) in elf.sections.iter().enumerate() {
            for off in (0..s.size()).step_by(8) {
                out.push(theirs(&ctx, tags[i] << 40 | off));
            }
        }
        Ok::<_, String>(out)
    }));
    let theirs_answers = match theirs_answers {
        Ok(Ok(a)) => Some(a),
        Ok(Err(e)) => {
            h.a2l_ctx_error = Some(e);
            None
        }
        Err(p) => {
            h.a2l_panic = Some(panic_text(p));
            None
        }
    };
    if let (Some(o), Some(t)) = (ours_answers, theirs_answers) {
        for (o, t) in o.iter().zip(&t) {
            h.insns += 1;
            match t {
                Err(_) => h.a2l_lookup_errors += 1,
                Ok(t) => {
                    let k = kinds(o, t);
                    let k: Vec<_> = k
                        .into_iter()
                        .filter(|k| !k.contains("prefixes") && !k.contains("drops the column"))
                        .collect();
                    if k.is_empty() {
                        h.agree += 1;
                    } else if h.differ.len() < 3 {
                        h.differ.push(format!(
                            "{k:?}\n      dwarf.rs:  {o:?}\n      addr2line: {t:?}"
                        ));
                    }
                }
            }
        }
    }
    h
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/../../tests/fixtures/obj/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

#[test]
fn a2l_hostile() {
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    // tests/dwarf.rs's edits.
    let mut data = fixture("xdp_subprogs.o");
    let (offset, size) = file_range(&data, ".debug_info");
    let claimed = u32::try_from(size - 4 + 0x100).expect("small");
    data[offset..offset + 4].copy_from_slice(&claimed.to_le_bytes());
    cases.push(("truncated_debug_info_unit".into(), data));
    let mut data = fixture("xdp_subprogs.o");
    data[offset + 12..offset + size].fill(0xfe);
    cases.push(("garbled_debug_info_entries".into(), data));
    let mut data = fixture("xdp_subprogs.o");
    for name in [".debug_info", ".debug_line"] {
        let (offset, size) = file_range(&data, name);
        data[offset..offset + size].fill(0xff);
    }
    cases.push(("garbled_debug_info_and_debug_line".into(), data));
    let mut data = fixture("xdp_subprogs.o");
    let (rel, _) = file_range(&data, ".rel.debug_line");
    data[rel + 8..rel + 16].copy_from_slice(&((0xffffu64 << 32) | 3).to_le_bytes());
    cases.push(("relocation_against_missing_symbol".into(), data));
    for fill in [false, true] {
        let mut data = fixture("reject_entry.o");
        let (rel, rel_size) = file_range(&data, ".rel.debug_addr");
        for at in (rel..rel + rel_size).step_by(16) {
            let info = u64::from_le_bytes(data[at + 8..at + 16].try_into().expect("8 bytes"));
            data[at + 8..at + 16].copy_from_slice(&(info & !0xffff_ffff).to_le_bytes());
        }
        if fill {
            let (offset, size) = file_range(&data, ".debug_addr");
            data[offset + 8..offset + size].fill(0xff);
        }
        cases.push((format!("unrelocated_debug_addr fill={fill}"), data));
    }
    // The malformed corpus.
    let dir = format!(
        "{}/../../tests/fixtures/malformed",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("e").path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    names.sort();
    for p in names {
        cases.push((
            p.file_name().expect("name").to_string_lossy().into_owned(),
            std::fs::read(&p).expect("read"),
        ));
    }
    std::panic::set_hook(Box::new(|_| {}));
    for (name, data) in &cases {
        let h = hostile(data);
        if h.insns == h.agree
            && h.ours_panic.is_none()
            && h.a2l_panic.is_none()
            && h.a2l_ctx_error.is_none()
            && h.ours_error.is_none()
            && h.a2l_lookup_errors == 0
            && name.ends_with(".o")
        {
            continue;
        }
        eprintln!(
            "{name}: insns {} agree {} ours_error {:?} ours_panic {:?} a2l_ctx_error {:?} a2l_panic {:?} a2l_lookup_errors {}",
            h.insns,
            h.agree,
            h.ours_error,
            h.ours_panic,
            h.a2l_ctx_error,
            h.a2l_panic,
            h.a2l_lookup_errors
        );
        for d in &h.differ {
            eprintln!("    {d}");
        }
    }
    eprintln!("malformed corpus: others agree fully");
    // Random edits, as tests/dwarf.rs's proptest.
    let names = [
        ".debug_info",
        ".debug_line",
        ".debug_abbrev",
        ".debug_addr",
        ".debug_rnglists",
        ".debug_str_offsets",
        ".debug_line_str",
        ".rel.debug_info",
        ".rel.debug_line",
        ".rel.debug_addr",
    ];
    let base = fixture("xdp_subprogs.o");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let cases = std::env::var("A2L_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let (mut ours_p, mut a2l_p, mut a2l_err, mut ours_err, mut differ, mut lookup_err, mut both) =
        (0, 0, 0, 0, 0, 0, 0);
    let mut examples: BTreeMap<String, String> = BTreeMap::new();
    for _ in 0..cases {
        let name = names[(next() % names.len() as u64) as usize];
        let (offset, size) = file_range(&base, name);
        let mut data = base.clone();
        let edits = 1 + next() % 15;
        for _ in 0..edits {
            data[offset + (next() % size as u64) as usize] = next() as u8;
        }
        let h = hostile(&data);
        if let Some(p) = &h.ours_panic {
            ours_p += 1;
            examples
                .entry(format!("dwarf.rs panic: {p}"))
                .or_insert(name.into());
        }
        if let Some(p) = &h.a2l_panic {
            a2l_p += 1;
            examples
                .entry(format!("addr2line panic: {p}"))
                .or_insert(name.into());
        }
        if let Some(e) = &h.a2l_ctx_error
            && !e.contains("relocation names symbol")
        {
            a2l_err += 1;
            let ours = if h.ours_error.is_some() {
                "dwarf.rs errors too"
            } else {
                "dwarf.rs answers"
            };
            examples
                .entry(format!("addr2line context error ({ours}): {e}"))
                .or_insert(name.into());
            if h.ours_error.is_none() {
                examples
                    .entry(format!(
                        "addr2line context error while dwarf.rs answers, in {name}"
                    ))
                    .or_insert(e.clone());
            }
        }
        if let Some(e) = &h.ours_error
            && !e.contains("relocation names symbol")
        {
            ours_err += 1;
            let e: String = e.chars().filter(|c| !c.is_ascii_hexdigit()).collect();
            examples
                .entry(format!("dwarf.rs error: {e}"))
                .or_insert(name.into());
        }
        if h.a2l_lookup_errors > 0 {
            lookup_err += 1;
        }
        if !h.differ.is_empty() {
            differ += 1;
            let k = h.differ[0].lines().next().unwrap_or_default().to_owned();
            examples
                .entry(format!("differ {k} in {name}"))
                .or_insert(h.differ[0].clone());
        }
        if h.insns > 0 && h.insns == h.agree {
            both += 1;
        }
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "random: {cases} cases; both answer and agree {both}; answers differ {differ}; dwarf.rs panics {ours_p}; addr2line panics {a2l_p}; addr2line context errors {a2l_err}; dwarf.rs errors {ours_err}; cases with addr2line lookup errors {lookup_err}"
    );
    for (k, v) in examples.iter().take(80) {
        eprintln!("  [{v}] {k}");
    }
}
