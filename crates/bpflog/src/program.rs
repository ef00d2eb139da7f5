//! [`Program`]: one program of an object as a loader laid it out, with its line table; or a
//! loader's own line info. What every log is read against.

use crate::source::{SourceFiles, SourceSearch};
use bpflog_object::{BpfObject, FunctionId, KernelBtf, Layout, LineTable, Loader};
use std::path::PathBuf;

/// What a [`Program`] was built from.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'o, 'data> {
    /// Entry program `function` of `object`, laid out as a loader lays it out.
    Object {
        /// The object.
        object: &'o BpfObject<'data>,
        /// The entry program's function.
        function: FunctionId,
    },
    /// A loader's own `bpf_line_info` records ([`Program::from_line_info`]): no instructions,
    /// functions or DWARF are known.
    LineInfo {
        /// The program's name, as the loader calls it.
        name: &'o str,
    },
}

/// One program as the kernel received it: its layout and its line table.
///
/// Built from an object ([`Program::new`], [`Program::with_loader`]) or, by a loader that
/// already has its final line info, from its `bpf_line_info` records
/// ([`Program::from_line_info`]).
#[derive(Debug)]
pub struct Program<'o, 'data> {
    /// What the program was built from.
    pub origin: Origin<'o, 'data>,
    /// The loader whose layout this is ([`Loader::Libbpf`] for a program built from line info).
    pub loader: Loader,
    /// Its load-time layout (no parts for a program built from line info).
    pub layout: Layout,
    /// Its line table.
    pub lines: LineTable<'o>,
    /// The byte offsets a kernel's BTF gives the program's CO-RE field relocations, by loaded
    /// index ([`Program::with_kernel_btf`]; empty without one).
    pub(crate) core_offsets: Vec<(u32, u32)>,
    /// Whether a kernel's BTF was given ([`Program::with_kernel_btf`]).
    pub(crate) kernel_btf: bool,
}

impl<'o, 'data> Program<'o, 'data> {
    /// Lays out program `id` of `object` as libbpf does and builds its line table.
    pub fn new(object: &'o BpfObject<'data>, id: FunctionId) -> Result<Self, bpflog_object::Error> {
        Program::with_loader(object, id, Loader::Libbpf)
    }

    /// Lays out program `id` of `object` as `loader` does and builds its line table.
    pub fn with_loader(
        object: &'o BpfObject<'data>,
        id: FunctionId,
        loader: Loader,
    ) -> Result<Self, bpflog_object::Error> {
        let layout = object.layout_for(id, loader)?;
        Program::with_layout(object, id, loader, layout)
    }

    /// Program `id` of `object` under a layout the caller made (e.g. libbpf before 1.3, which
    /// appends no exception callback: [`Layout::new`]).
    pub fn with_layout(
        object: &'o BpfObject<'data>,
        id: FunctionId,
        loader: Loader,
        layout: Layout,
    ) -> Result<Self, bpflog_object::Error> {
        let lines = object.line_table(&layout)?;
        Ok(Program {
            origin: Origin::Object {
                object,
                function: id,
            },
            loader,
            layout,
            lines,
            core_offsets: Vec::new(),
            kernel_btf: false,
        })
    }

    /// The program as loaded into the kernel whose BTF is `kernel`: the offsets its CO-RE field
    /// relocations get there are known, and a log that shows others is not its log (see
    /// [`BpfObject::core_field_offsets`]; those the BTF does not settle stay unknown).
    pub fn with_kernel_btf(mut self, kernel: &KernelBtf<'_>) -> Self {
        if let Some(object) = self.object() {
            self.core_offsets = object.core_field_offsets(&self.layout, kernel);
        }
        self.kernel_btf = true;
        self
    }

    /// The byte offset the kernel's BTF gives the CO-RE field relocation of loaded instruction
    /// `index`, when known ([`Program::with_kernel_btf`]).
    pub(crate) fn core_offset(&self, index: u32) -> Option<u32> {
        let i = (self.core_offsets)
            .binary_search_by_key(&index, |&(at, _)| at)
            .ok()?;
        self.core_offsets.get(i).map(|&(_, offset)| offset)
    }

    /// The object the program comes from, if it comes from one.
    pub fn object(&self) -> Option<&'o BpfObject<'data>> {
        match self.origin {
            Origin::Object { object, .. } => Some(object),
            Origin::LineInfo { .. } => None,
        }
    }

    /// The entry program's function in [`object`](Self::object), if it comes from one.
    pub fn function(&self) -> Option<FunctionId> {
        match self.origin {
            Origin::Object { function, .. } => Some(function),
            Origin::LineInfo { .. } => None,
        }
    }

    /// The program's name (its function symbol, or the name the loader gave it).
    pub fn name(&self) -> &'o str {
        match self.origin {
            Origin::Object { object, function } => &object.function(function).name,
            Origin::LineInfo { name } => name,
        }
    }
}

/// The files `search` would read source lines of `programs` from, as found, without reading any
/// ([`SourceFiles::find`]): those of every file name their objects' debug info gives a line
/// ([`BpfObject::source_names`]; a loader's line info: its records'), as the line table names
/// it and as [`crate::locate()`] does (without a leading `./`).
pub fn source_paths(programs: &[Program<'_, '_>], search: &SourceSearch) -> Vec<PathBuf> {
    let mut objects: Vec<&BpfObject<'_>> = Vec::new();
    let mut names: Vec<&[u8]> = Vec::new();
    for program in programs {
        match program.object() {
            Some(object) if objects.iter().any(|o| std::ptr::eq(*o, object)) => {}
            Some(object) => {
                objects.push(object);
                names.extend(object.source_names());
            }
            None => names.extend(program.lines.rows().iter().map(|r| r.file)),
        }
    }
    let dotless: Vec<&[u8]> = names.iter().filter_map(|n| n.strip_prefix(b"./")).collect();
    names.extend(dotless);
    names.sort_unstable();
    names.dedup();
    let files = SourceFiles::new(search.clone());
    names
        .into_iter()
        .filter_map(|name| files.find(name))
        .collect()
}
