//! The bodies of bpflog's fuzz targets, one function per target.
//!
//! Each takes arbitrary bytes and must return without panicking, hanging or allocating without
//! bound; the checks inside are invariants that hold for any input. `fuzz_targets/*.rs` hands
//! them to libFuzzer (`cargo fuzz run <target>`), and the workspace test `tests/fuzz_smoke.rs`
//! includes this file to run them over deterministic mutations of the fixtures in `cargo test`.
//! So this file depends on nothing but `bpflog` and `std`.

#![forbid(unsafe_code)]

use bpflog::object::{BpfObject, FunctionId, Layout};
use bpflog::{AnnotateOptions, OutputFormat, Palette, Program, SourceFiles, SourceSearch, Style};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Separates the object from the log in an input of the `annotate` target.
pub const LOG_SEPARATOR: &[u8] = b"\n==BPFLOG-LOG==\n";

/// At most this many instruction indices are probed per program (inputs are small, but a layout
/// can repeat no function, so its length is bounded by the input's size anyway).
const MAX_PROBES: u32 = 4096;

/// Instruction indices worth probing in a program of `len` instructions: the edges, a spread
/// through it, and the first indices past it.
fn probes(len: u32) -> impl Iterator<Item = u32> {
    let step = (len / 64).max(1);
    (0..len.min(MAX_PROBES)).step_by(step as usize).chain([
        len.saturating_sub(1),
        len,
        len.saturating_add(1),
        u32::MAX,
    ])
}

/// Checks what must hold of any layout.
fn check_layout(object: &BpfObject<'_>, program: FunctionId, layout: &Layout) {
    let mut next = 0u32;
    for part in &layout.parts {
        assert_eq!(part.start, next, "parts tile the program");
        assert_eq!(part.len, object.function(part.function).len);
        next = next.checked_add(part.len).expect("layout length fits u32");
    }
    assert_eq!(next, layout.len);
    assert_eq!(layout.parts.first().map(|p| p.function), Some(program));
}

/// `object`: bytes → [`BpfObject::parse`] → for every program: layout, line table, lookups at a
/// few indices, function rows.
pub fn object(data: &[u8]) {
    let Ok(object) = BpfObject::parse(data) else {
        return;
    };
    let _ = object.dwarf_error().map(ToString::to_string);
    for program in object.programs() {
        let _ = object.section_name(program);
        let layout = match object.layout(program) {
            Ok(layout) => layout,
            Err(e) => {
                let _ = e.to_string();
                continue;
            }
        };
        check_layout(&object, program, &layout);
        for i in probes(layout.len) {
            assert_eq!(object.insn(&layout, i).is_some(), i < layout.len);
            let _ = object.has_core_relo(&layout, i);
        }
        match object.line_table(&layout) {
            Ok(table) => {
                assert_eq!(table.program_len(), layout.len);
                assert!(table.rows().windows(2).all(|w| w[0].insn <= w[1].insn));
                assert!(table.rows().iter().all(|r| r.insn < layout.len));
                for i in probes(layout.len) {
                    let row = table.find(i);
                    assert_eq!(row, table.find_linear(i));
                    if let Some(row) = row {
                        let _ = (row.basename(), row.trimmed_text());
                    }
                }
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
        let rows = object.func_rows(&layout);
        assert!(rows.windows(2).all(|w| w[0].insn <= w[1].insn));
        assert!(rows.iter().all(|r| r.insn < layout.len));
    }
}

/// `dwarf`: bytes → [`BpfObject::parse`] → the debug location of every instruction of every
/// program, and every line row of every code section.
pub fn dwarf(data: &[u8]) {
    let Ok(object) = BpfObject::parse(data) else {
        return;
    };
    let _ = object.dwarf_error().map(ToString::to_string);
    if let Some(dwarf) = object.dwarf() {
        for e in dwarf.errors() {
            let _ = e.to_string();
        }
        for (k, section) in object.elf().sections.iter().enumerate() {
            let id = bpflog::object::SectionId(k);
            let rows = dwarf.rows(id, 0, u64::MAX);
            assert!(rows.windows(2).all(|w| w[0].0 < w[1].0));
            let _ = dwarf.locate(id, section.size());
        }
    }
    for program in object.programs() {
        let Ok(layout) = object.layout(program) else {
            continue;
        };
        for i in 0..layout.len.min(MAX_PROBES) {
            if let Some(location) = object.debug_location(&layout, i) {
                let _ = format!("{location:?}");
            }
        }
        assert!(object.debug_location(&layout, layout.len).is_none());
    }
}

/// `classify`: bytes split into lines → [`bpflog::log::classify`] on each.
pub fn classify(data: &[u8]) {
    for raw in data.split_inclusive(|&b| b == b'\n') {
        let (content, newline) = bpflog::log::split_newline(raw);
        assert_eq!(content.len() + newline.len(), raw.len());
        let line = bpflog::log::classify(content);
        let _ = format!("{line:?}");
        if let bpflog::log::Line::Insn(insn) = line {
            // The text is a part of the line.
            assert!(insn.text().len() <= content.len());
        }
    }
}

/// Splits an `annotate` input into object bytes and log bytes at [`LOG_SEPARATOR`] (no
/// separator: all object, no log).
pub fn split_annotate_input(data: &[u8]) -> (&[u8], &[u8]) {
    match data
        .windows(LOG_SEPARATOR.len())
        .position(|w| w == LOG_SEPARATOR)
    {
        Some(at) => (&data[..at], &data[at + LOG_SEPARATOR.len()..]),
        None => (data, &[]),
    }
}

/// `annotate`: object bytes and log bytes (see [`split_annotate_input`]) → parse, and if it
/// parses, select a program and annotate the log in kernel and rich style with the diagnostic on.
pub fn annotate(data: &[u8]) {
    let (object_bytes, log) = split_annotate_input(data);
    let Ok(object) = BpfObject::parse(object_bytes) else {
        return;
    };
    let programs: Vec<Program<'_, '_>> = object
        .programs()
        .into_iter()
        .filter_map(|id| Program::new(&object, id).ok())
        .collect();
    if programs.is_empty() {
        return;
    }
    let chosen = match bpflog::select(&programs, log) {
        Ok(selection) => {
            assert!(selection.chosen < programs.len());
            selection.chosen
        }
        Err(e) => {
            let _ = e.to_string();
            0
        }
    };
    // What the command does: plan the log's segments (wrapped logs, several programs), then
    // annotate by the plan.
    if let Ok(plan) = bpflog::plan(&programs, log, None) {
        let options = AnnotateOptions::default()
            .style(Style::Rich)
            .diagnostic(true);
        let stats = bpflog::annotate_planned(&plan, &programs, log, io::sink(), &options)
            .expect("writing to a sink");
        assert!(stats.iter().all(|s| s.out_of_range <= s.instructions));
    }
    let program = &programs[chosen];
    // Kernel style, plain: every input byte is written back (but for a pre-6.9 kernel's
    // annotation lines, which are replaced), so the output is never shorter.
    let mut out = Vec::new();
    let plain = AnnotateOptions::default();
    let stats = bpflog::annotate_bare(program, log, &mut out, &plain).expect("writing to a Vec");
    assert!(stats.replaced > 0 || out.len() >= log.len());
    assert!(stats.instructions <= stats.lines);
    // The same with the log's own lines escaped, as for a terminal: no control character a
    // terminal acts on is left, but the line ends.
    let mut shown = Vec::new();
    let escaped = AnnotateOptions::default().escape_log(true);
    bpflog::annotate_bare(program, log, &mut shown, &escaped).expect("writing to a Vec");
    for line in shown.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        for chunk in line.utf8_chunks() {
            assert!(
                !chunk
                    .valid()
                    .chars()
                    .any(bpflog::object::is_terminal_control),
                "{line:?}"
            );
            assert!(!chunk.invalid().iter().any(|b| (0x80..=0x9f).contains(b)));
        }
    }
    // Every other way, into a sink: these must only not fail.
    for (style, color, format) in [
        (Style::Kernel, true, OutputFormat::Text),
        (Style::Rich, false, OutputFormat::Text),
        (Style::Rich, true, OutputFormat::Text),
        (Style::Kernel, false, OutputFormat::Json),
    ] {
        let options = AnnotateOptions::default()
            .style(style)
            .palette(Palette::new(color))
            .context(1)
            .diagnostic(true)
            // The profile beside the diagnostic, as `verify` keeps it.
            .hot_lines(true)
            .annotate_all(true)
            // No directories and no roots: the names the object gives are tried, and none
            // may be read (the `source` target fuzzes what may).
            .sources(SourceSearch::default())
            .format(format)
            .stop_at_misfit(false)
            // As on a terminal, with the colors.
            .escape_log(color)
            // A kernel's bare source lines one way in two, else as the log shows.
            .kernel_lines((!color).then_some(bpflog::log::SourceLines::Bare));
        bpflog::annotate_bare(program, log, io::sink(), &options).expect("writing to a sink");
    }
}

/// `profile`: object bytes and log bytes as for [`annotate`] → profile the log for every
/// program, render it in every format, compare it with itself.
pub fn profile(data: &[u8]) {
    use bpflog::profile::{
        Format, ProfileRequest, RenderOptions, compare, profile, render, render_comparison,
    };
    let (object_bytes, log) = split_annotate_input(data);
    let Ok(object) = BpfObject::parse(object_bytes) else {
        return;
    };
    for id in object.programs() {
        let Ok(program) = Program::new(&object, id) else {
            continue;
        };
        // Through the job's entry, the log taken as the program's: nothing but reading fails.
        let input = bpflog::Input::of(&program, bpflog::LogData::Stream(log));
        let mut files = SourceFiles::new(SourceSearch::default());
        let request = ProfileRequest::default();
        let p = (profile(input, &request, &mut files).expect("reading a slice")).profile;
        let visits: u64 = p.lines.iter().map(|l| l.counts.visits).sum();
        assert!(visits <= p.totals.insn_lines);
        for (format, color) in [
            (Format::Table, false),
            (Format::Table, true),
            (Format::Csv, false),
            (Format::Json, false),
        ] {
            let options = RenderOptions::default()
                .format(format)
                .top(5)
                .palette(Palette::new(color));
            render(&p, &mut io::sink(), &options).expect("writing to a sink");
            let mut files = bpflog::SourceFiles::new(SourceSearch::default());
            bpflog::profile::render_source(&p, &mut files, &mut io::sink(), &options)
                .expect("writing to a sink");
            let same = compare(p.clone(), p.clone());
            render_comparison(&same, &mut io::sink(), &options).expect("writing to a sink");
        }
    }
}

/// On every line of the files outside the roots of the [`source`] target's tree.
pub const SOURCE_SECRET: &[u8] = b"BPFLOG-FUZZ-SECRET";

/// What `--source-dir` and `--source-map` targets the `source` target may choose: all inside
/// `inside/` of its tree (a missing directory and a file among them).
const SOURCE_DIRS: [&str; 5] = [
    "inside",
    "inside/sub",
    "inside/sub/deep",
    "inside/missing",
    "inside/a.c",
];

/// At most this many of each are taken from one `source` input.
const MAX_SOURCE_ITEMS: usize = 16;

/// Makes the tree the `source` target reads in, at `base` (emptied first); returns its real
/// path. `inside/` holds sources, a hard link, links that stay inside, links out (`link.c`,
/// `abs.c`, `dirlink/`) and a link loop; `outside/` holds [`SOURCE_SECRET`] files.
pub fn source_tree(base: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::symlink;
    let _ = std::fs::remove_dir_all(base);
    std::fs::create_dir_all(base.join("inside/sub/deep"))?;
    std::fs::create_dir_all(base.join("outside/sub"))?;
    let base = std::fs::canonicalize(base)?;
    let secret = [SOURCE_SECRET, b"\n"].concat().repeat(8);
    std::fs::write(base.join("outside/secret.c"), &secret)?;
    std::fs::write(base.join("outside/sub/b.c"), &secret)?;
    std::fs::write(base.join("inside/a.c"), "int a;\nint aa;\n")?;
    std::fs::write(base.join("inside/sub/b.c"), "int b;\r\n")?;
    std::fs::write(base.join("inside/sub/deep/c.c"), "int c;\n".repeat(600))?;
    std::fs::hard_link(base.join("inside/a.c"), base.join("inside/hard.c"))?;
    symlink("sub/b.c", base.join("inside/soft.c"))?;
    symlink("../outside/secret.c", base.join("inside/link.c"))?;
    symlink(base.join("outside/secret.c"), base.join("inside/abs.c"))?;
    symlink("../outside", base.join("inside/dirlink"))?;
    symlink("loop", base.join("inside/loop"))?;
    Ok(base)
}

/// `name` with each `@` replaced by `tree` (so that inputs can name the tree's files wherever
/// it is).
fn expand(tree: &Path, name: &[u8]) -> Vec<u8> {
    let tree = tree.as_os_str().as_encoded_bytes();
    let mut out = Vec::with_capacity(name.len());
    for &b in name {
        if b == b'@' {
            out.extend_from_slice(tree);
        } else {
            out.push(b);
        }
    }
    out
}

/// `source`: arbitrary names, `--source-map`s and `--source-dir`s → [`SourceFiles`] in a tree
/// made once under the temporary directory ([`source_tree`]). See [`source_in`].
pub fn source(data: &[u8]) {
    static TREE: OnceLock<Option<PathBuf>> = OnceLock::new();
    let tree = TREE.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("bpflog-fuzz-source-{}", std::process::id()));
        source_tree(&base).ok()
    });
    if let Some(tree) = tree {
        source_in(tree, data);
    }
}

/// The body of `source`, in the tree at `tree`. The input is lines; the first byte of each
/// says what the rest is: (mod 4) 0 a name debug info gives (`@` stands for the tree), 1 a
/// `--source-dir` (its first byte picks one inside), 2 a `--source-map FROM=TO` (FROM any bytes,
/// TO a directory inside, then letters), 3 the limits (two bytes: 64 × the first for a file,
/// 256 × the second for all). Whatever the input, every file read lies under `inside/`, holds
/// no [`SOURCE_SECRET`], is within the limit, is the same `Arc` when asked again, and a file
/// refused is reported once.
pub fn source_in(tree: &Path, data: &[u8]) {
    let pick =
        |rest: &[u8]| SOURCE_DIRS[rest.first().map_or(0, |&b| usize::from(b)) % SOURCE_DIRS.len()];
    let mut search = SourceSearch::default();
    let mut names = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Some((&kind, rest)) = line.split_first() else {
            continue;
        };
        match kind % 4 {
            0 if names.len() < MAX_SOURCE_ITEMS * 4 => names.push(expand(tree, rest)),
            1 if search.dirs.len() < MAX_SOURCE_ITEMS => search.dirs.push(tree.join(pick(rest))),
            2 if search.maps.len() < MAX_SOURCE_ITEMS => {
                let at = rest.iter().position(|&b| b == b'=').unwrap_or(rest.len());
                let (from, to) = (&rest[..at], rest.get(at + 1..).unwrap_or(&[]));
                let from = String::from_utf8_lossy(&expand(tree, from)).into_owned();
                if from.is_empty() {
                    continue;
                }
                // Letters only after the directory: no `/` or `..` that would leave it.
                let tail: String = to
                    .iter()
                    .skip(1)
                    .map(|&b| char::from(b'a' + b % 26))
                    .collect();
                let to = format!("{}/{}/{tail}", tree.display(), pick(to));
                search.maps.push((from, to));
            }
            3 => {
                let byte = |i: usize| u64::from(rest.get(i).copied().unwrap_or(u8::MAX));
                search.limits.file = 64 * byte(0);
                search.limits.total = 256 * byte(1);
            }
            _ => {}
        }
    }
    let limits = search.limits;
    let refusals = search.refusals.clone();
    let inside = tree.join("inside");
    let mut files = SourceFiles::new(search);
    for name in &names {
        let shown = String::from_utf8_lossy(name);
        let Some(file) = files.get(name) else {
            continue;
        };
        let real = std::fs::canonicalize(&file.path).expect("a file read is still there");
        assert!(
            real.starts_with(&inside),
            "{} read for {shown:?}",
            real.display()
        );
        let mut len = 0u64;
        for n in 1..=file.line_count() {
            let line = file.line(n).expect("every line numbered is there");
            assert!(
                !line
                    .windows(SOURCE_SECRET.len())
                    .any(|w| w == SOURCE_SECRET),
                "{shown:?}"
            );
            len += line.len() as u64;
        }
        assert!(len <= limits.file, "{shown:?}: {len} bytes");
        let again = files.get(name).expect("found once, found again");
        assert!(Arc::ptr_eq(&file, &again), "{shown:?}");
    }
    let mut refused: Vec<PathBuf> = refusals.take().into_iter().map(|r| r.path).collect();
    let all = refused.len();
    refused.sort();
    refused.dedup();
    assert_eq!(refused.len(), all, "one refusal per file");
}
