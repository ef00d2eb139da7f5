//! Annotate Linux BPF verifier logs with the C source they were compiled from.
//!
//! The verifier's log speaks in instruction indices of the program as the loader laid it out;
//! this crate joins it to the object file: it reads the object ([`bpflog_object`]), classifies the
//! log's lines ([`bpflog_log`]), chooses the program a log belongs to ([`select`]) and writes the
//! log back with source lines between its instructions ([`annotate()`]), exactly where the kernel
//! prints them.
//!
//! ```no_run
//! use bpflog::{annotate, AnnotateOptions, Program};
//! let data = std::fs::read("prog.o")?;
//! let object = bpflog::object::BpfObject::parse(&data)?;
//! let program = Program::new(&object, object.program("xdp_prog")?)?;
//! let log = std::io::BufReader::new(std::fs::File::open("log.txt")?);
//! annotate(&program, log, std::io::stdout().lock(), &AnnotateOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod annotate;
mod diagnostic;
mod digest;
pub mod frame;
mod locate;
mod plan;
pub mod profile;
mod select;
mod source;
mod style;

pub use annotate::{
    AnnotateOptions, AnnotateStats, ExistingAnnotations, KernelRule, Style, annotate,
};
pub use bpflog_log as log;
pub use bpflog_object as object;
pub use locate::{InlinedFrom, InsnSource, locate};
pub use plan::{Plan, PlanError, SegmentPlan, annotate_planned, plan};
pub use select::{Candidate, Evidence, Mismatch, SelectError, Selection, Selector, select};
pub use source::{SourceFile, SourceFiles, SourceSearch};
pub use style::Palette;

use bpflog_object::{BpfObject, FunctionId, Layout, LineTable, Loader};

/// One entry program of an object, laid out as a loader loads it, with its line table.
#[derive(Debug)]
pub struct Program<'o, 'data> {
    /// The object the program comes from.
    pub object: &'o BpfObject<'data>,
    /// The entry program's function.
    pub id: FunctionId,
    /// The loader whose layout this is.
    pub loader: Loader,
    /// Its load-time layout.
    pub layout: Layout,
    /// Its line table.
    pub lines: LineTable<'o>,
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
        let lines = object.line_table(&layout)?;
        Ok(Program {
            object,
            id,
            loader,
            layout,
            lines,
        })
    }

    /// The program's name (its function symbol).
    pub fn name(&self) -> &'o str {
        &self.object.function(self.id).name
    }
}
