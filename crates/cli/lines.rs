//! `bpflog lines`: the object's view of a loaded program, one row per instruction.
//!
//! For each program, laid out as the chosen loader lays it out: the functions placed in it
//! (`func#N @START`, as the verifier's level-2 log numbers them), then per instruction its index
//! and opcode (as the verifier log and `bpftool prog dump xlated` print them; the second slot of
//! an `ld_imm64` is left out, as there), the function it belongs to (the innermost inlined one),
//! `file:line:col`, the chain of calls it was inlined through and the source line. Names, files
//! and source text come from the object (or the files it names): their control bytes are
//! escaped ([`bpflog::escape_controls`]).

use crate::args::LoaderChoice;
use crate::files::{InputFile, Output};
use crate::{Failure, IO_BUFFER};
use bpflog::object::{BpfObject, Loader};
use bpflog::{Program, SourceFiles, escape_controls, escape_controls_str as shown};
use std::io::{self, Write};
use std::path::PathBuf;

/// Arguments of `bpflog lines`.
#[derive(Debug, clap::Args)]
pub struct LinesArgs {
    /// The BPF object file (clang -g -target bpf).
    #[arg(value_name = "OBJ")]
    pub object: PathBuf,
    /// The program to list (its function name); every program otherwise.
    #[arg(long, value_name = "NAME")]
    pub prog: Option<String>,
    /// The loader whose layout to list: libbpf (bpftool, libbpf-rs, ...), aya or cilium
    /// (cilium/ebpf).
    #[arg(long, value_enum, default_value_t = LoaderChoice::Libbpf, value_name = "LOADER")]
    pub loader: LoaderChoice,
    /// Where to find the source files debug info names (the line stored in BTF stands in for a
    /// file that is not found).
    #[command(flatten)]
    pub sources: crate::args::SourceArgs,
}

/// Runs `bpflog lines`.
pub(crate) fn run(args: &LinesArgs) -> Result<(), Failure> {
    let path = &args.object;
    crate::files::refuse_overwrite(
        &[InputFile::File("the object", Some(path))],
        &[Output::Stdout],
    )?;
    let data = crate::limits::OBJECT.read(path)?;
    let object = BpfObject::parse(&data).map_err(|e| Failure::at(path, e))?;
    let loader = match args.loader {
        LoaderChoice::Libbpf => Loader::Libbpf,
        LoaderChoice::Aya => Loader::Aya,
        LoaderChoice::Cilium => Loader::Cilium,
    };
    let ids = match &args.prog {
        Some(name) => vec![object.program(name).map_err(|e| Failure::at(path, e))?],
        None => object.programs(),
    };
    let programs = ids
        .into_iter()
        .map(|id| Program::with_loader(&object, id, loader))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::at(path, e))?;
    let search = args.sources.search(&[path]);
    crate::files::refuse_over_sources(true, &programs, &search, &[Output::Stdout])?;
    let mut files = SourceFiles::new(search.clone());
    let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
    let written = programs.iter().enumerate().try_for_each(|(k, program)| {
        if k > 0 {
            writeln!(out)?;
        }
        write_program(program, &object, &mut files, &mut out)
    });
    let written = written.and_then(|()| out.flush());
    crate::args::source_notes(&search, &[path]);
    written.map_err(Failure::stdout)
}

/// One row of the table.
struct SourceRow {
    index: String,
    op: String,
    function: String,
    location: String,
    inlined: String,
    source: String,
}

/// The table of one program.
fn write_program(
    program: &Program<'_, '_>,
    object: &BpfObject<'_>,
    files: &mut SourceFiles,
    out: &mut impl Write,
) -> io::Result<()> {
    let layout = &program.layout;
    writeln!(
        out,
        "# {}: {} instructions, {} layout",
        shown(program.name()),
        layout.len,
        program.loader.name()
    )?;
    for (k, part) in layout.parts.iter().enumerate() {
        writeln!(
            out,
            "# func#{k} @{} {} ({})",
            part.start,
            shown(&object.function(part.function).name),
            shown(object.section_name(part.function))
        )?;
    }
    let mut rows = vec![SourceRow {
        index: "index".into(),
        op: "op".into(),
        function: "function".into(),
        location: "location".into(),
        inlined: "inlined into".into(),
        source: "source".into(),
    }];
    let mut second_slot = false;
    for index in 0..layout.len {
        if std::mem::take(&mut second_slot) {
            continue;
        }
        let insn = object.insn(layout, index);
        second_slot = insn.is_some_and(|i| i.is_ld_imm64());
        let part_name = layout
            .locate(index)
            .map(|(part, _)| object.function(part.function).name.as_str())
            .unwrap_or_default();
        let src = bpflog::locate(program, index);
        let Some(src) = src else {
            rows.push(SourceRow {
                index: index.to_string(),
                op: insn
                    .map(|i| format!("({:02x})", i.code))
                    .unwrap_or_default(),
                function: shown(part_name).into_owned(),
                location: "-".into(),
                inlined: String::new(),
                source: String::new(),
            });
            continue;
        };
        let file = files.get(src.file);
        let text = file
            .as_ref()
            .and_then(|f| f.line(src.line))
            .or(src.btf_text)
            .map(|t| {
                String::from_utf8_lossy(&escape_controls(t))
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default();
        let inlined = src
            .inlined
            .iter()
            .map(|step| match step.call_site {
                Some((file, line, col)) => {
                    format!("{} ({})", shown(step.caller), location(file, line, col))
                }
                None => shown(step.caller).into_owned(),
            })
            .collect::<Vec<_>>()
            .join(" < ");
        rows.push(SourceRow {
            index: index.to_string(),
            op: insn
                .map(|i| format!("({:02x})", i.code))
                .unwrap_or_default(),
            function: shown(src.function).into_owned(),
            location: location(src.file, src.line, src.column),
            inlined,
            source: text,
        });
    }
    let width = |f: fn(&SourceRow) -> &str| rows.iter().map(|r| f(r).chars().count()).max();
    let w_index = width(|r| &r.index).unwrap_or(0);
    let w_op = width(|r| &r.op).unwrap_or(0);
    let w_function = width(|r| &r.function).unwrap_or(0);
    let w_location = width(|r| &r.location).unwrap_or(0);
    let w_inlined = width(|r| &r.inlined).unwrap_or(0);
    for r in &rows {
        let line = format!(
            "{:>w_index$}  {:<w_op$}  {:<w_function$}  {:<w_location$}  {:<w_inlined$}  {}",
            r.index, r.op, r.function, r.location, r.inlined, r.source
        );
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// `file:line` or `file:line:col` (column 0 is unknown and left out).
fn location(file: &[u8], line: u32, col: u32) -> String {
    let file = String::from_utf8_lossy(&escape_controls(file)).into_owned();
    if col > 0 {
        format!("{file}:{line}:{col}")
    } else {
        format!("{file}:{line}")
    }
}
