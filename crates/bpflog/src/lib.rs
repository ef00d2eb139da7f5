//! Annotate Linux BPF verifier logs with the C source they were compiled from.
//!
//! The verifier's log speaks in instruction indices of the program as the loader laid it out; this
//! crate joins it to the object file: it reads the object ([`bpflog_object`]), classifies the log's
//! lines ([`bpflog_log`]), chooses the program a log belongs to ([`select`](fn@select)) and writes
//! the log back with source lines between its instructions ([`annotate()`]), exactly where the
//! kernel prints them. Nothing here prints or exits: output goes to the `io::Write` given, errors
//! are typed ([`object::Error`], [`LineInfoError`], [`SelectError`], [`PlanError`], `io::Error`).
//!
//! # An object and its programs
//!
//! An object is parsed from its bytes; each entry program is laid out the way a loader lays it
//! out ([`object::Loader`]: libbpf, aya, cilium/ebpf), with its line table:
//!
//! ```
//! use bpflog::object::{BpfObject, Loader};
//! use bpflog::Program;
//! // Any bytes will do: a file read, a loader's buffer, `include_bytes!` (no alignment needed).
//! let data: &[u8] = include_bytes!("../../../tests/fixtures/obj/reject_subprog.o");
//! let object = BpfObject::parse(&data)?;
//! let names: Vec<&str> = object.programs().iter().map(|&id| object.function(id).name.as_str()).collect();
//! assert_eq!(names, ["xdp_reject_subprog"]);
//!
//! let program = Program::with_loader(&object, object.program("xdp_reject_subprog")?, Loader::Libbpf)?;
//! // The entry program first, then the `.text` function it calls.
//! let parts: Vec<(&str, u32)> = program.layout.parts.iter()
//!     .map(|p| (object.function(p.function).name.as_str(), p.start)).collect();
//! assert_eq!(parts, [("xdp_reject_subprog", 0), ("update_flow", 35)]);
//!
//! // Instruction 38, the one the verifier rejected: the kernel's record (`find_linfo`) ...
//! let row = program.lines.find(38).expect("a line record");
//! assert_eq!((row.basename(), row.line), (&b"reject_subprog.c"[..], 54));
//! assert_eq!(row.trimmed_text(), b"fv->bytes += len;");
//! // ... and what DWARF adds: the column, the function and the chain of inlined calls.
//! let src = bpflog::locate(&program, 38).expect("a location");
//! assert_eq!((src.line, src.column, src.function), (54, 12, "update_flow"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Annotating a log
//!
//! [`annotate()`] reads an [`Input`] (a log from any `io::Read`, a byte slice or a file, and the
//! program it is the log of) and writes it, annotated, to any `io::Write`, handing each log in
//! it to a closure as it ends. In [`Style::Kernel`] the lines are the kernel's own, byte for
//! byte: a log whose `;` lines were stripped gets exactly those lines back.
//!
//! ```
//! use bpflog::object::BpfObject;
//! use bpflog::{annotate, AnnotateOptions, Input, LogData, Palette, Program, Style};
//! let data = include_bytes!("../../../tests/fixtures/obj/reject_subprog.o").to_vec();
//! let object = BpfObject::parse(&data)?;
//! let program = Program::new(&object, object.program("xdp_reject_subprog")?)?;
//! let kernel: &[u8] = include_bytes!("../../../tests/fixtures/logs/reject_subprog.xdp_reject_subprog.l1.log");
//! let stripped: Vec<u8> = kernel.split_inclusive(|&b| b == b'\n')
//!     .filter(|line| !line.starts_with(b";")).flatten().copied().collect();
//!
//! let mut out = Vec::new();
//! let options = AnnotateOptions::default().style(Style::Kernel);
//! let mut inserted = 0;
//! let input = Input::of(&program, LogData::Stream(&stripped[..]));
//! annotate(input, &mut out, &options, |log, _| {
//!     inserted += log.stats().inserted;
//!     Ok(())
//! })?;
//! assert_eq!(out, kernel);
//! assert_eq!(inserted, 12);
//!
//! // Rich style with colors off, two lines of context from the C file, and the diagnostic.
//! let options = AnnotateOptions::default()
//!     .style(Style::Rich)
//!     .palette(Palette::new(false))
//!     .context(2)
//!     .diagnostic(true)
//!     .sources(bpflog::SourceSearch::default()
//!         .dirs(vec![concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/src").into()]));
//! let mut out = Vec::new();
//! annotate(Input::of(&program, LogData::Stream(&stripped[..])), &mut out, &options, |_, _| Ok(()))?;
//! let text = String::from_utf8(out)?;
//! assert!(text.contains("; reject_subprog.c:54:15 in update_flow\n"));
//! assert!(text.contains("; > 54 | \tfv->bytes += len;\n"));
//! assert!(text.contains("--> reject_subprog.c:54:12"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A log whose program is not known is given with every candidate (every program, under each
//! loader's layout: [`lay_out`]) as [`Input::among`]; each job then chooses how to read it: in
//! one pass, checking the fit on the way, when the program is known beforehand; else looking
//! ahead at each log's start for its program, as a first pass would choose it (a file holding
//! several logs, wrapped as tools print them). [`profile::profile`] chooses the same way (in one
//! pass, in parts on several threads, or after a first pass), as [`explain::explain`] and
//! [`report::report`] do. [`select`](fn@select) says which program a log is of, and why.
//!
//! # Profiling
//!
//! [`profile::profile`] counts a (level 2) log's instruction lines per source line and function:
//!
//! ```
//! use bpflog::object::BpfObject;
//! use bpflog::{profile, Input, LogData, Program, SourceFiles, SourceSearch};
//! let data = include_bytes!("../../../tests/fixtures/obj/loop_callback.o").to_vec();
//! let object = BpfObject::parse(&data)?;
//! let program = Program::new(&object, object.program("loop_sum")?)?;
//! let log: &[u8] = include_bytes!("../../../tests/fixtures/logs/loop_callback.loop_sum.l2.log");
//! let request = profile::ProfileRequest::default();
//! let mut files = SourceFiles::new(SourceSearch::default());
//! let p = profile::profile(Input::of(&program, LogData::Stream(log)), &request, &mut files)?.profile;
//! assert_eq!(p.summary.verdict, profile::Verdict::Accepted);
//! assert_eq!(p.totals.unattributed, 0);
//! let hottest = &p.lines[0];
//! assert!(hottest.counts.visits >= p.lines[1].counts.visits);
//! let mut table = Vec::new();
//! profile::render(&p, &mut table, &profile::RenderOptions::default())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A level 2 log's call stacks fold into [`profile::FoldedStacks`] (`flamegraph.pl`'s input); with
//! the default feature `flamegraph`, [`FoldedStacks::write_svg`](profile::FoldedStacks::write_svg)
//! draws them as an SVG flame graph with [`inferno`](https://docs.rs/inferno), which is CDDL-1.0:
//! `default-features = false` leaves it out.
//!
//! # Explaining a rejection
//!
//! [`explain::explain`] says why a log was rejected: the class of the verifier's error, the
//! chain of instructions the offending value went through from its origin, and what to change:
//!
//! ```
//! use bpflog::object::BpfObject;
//! use bpflog::{explain, Input, LogData, Program};
//! let data = include_bytes!("../../../tests/fixtures/obj/reject_subprog.o").to_vec();
//! let object = BpfObject::parse(&data)?;
//! let program = Program::new(&object, object.program("xdp_reject_subprog")?)?;
//! let log: &[u8] = include_bytes!("../../../tests/fixtures/logs/reject_subprog.xdp_reject_subprog.l1.log");
//! let mut explained = Vec::new();
//! explain::explain(Input::of(&program, LogData::Stream(log)), |_, e| {
//!     explained.push(e);
//!     Ok(())
//! })?;
//! let e = &explained[0];
//! assert_eq!(e.class().id.as_str(), "nullable-dereference");
//! let chain: Vec<(u64, &str)> = e.chain.iter().map(|s| (s.location.insn, s.role.as_str())).collect();
//! assert_eq!(chain, [(24, "origin"), (25, "moved"), (27, "passed"), (38, "failed")]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Line info from a loader
//!
//! A loader that has the final `bpf_line_info` records it passes to `BPF_PROG_LOAD` needs no
//! object: [`Program::from_line_info`] builds the program from them and the BTF strings.
//!
//! # One call per job
//!
//! Each job is one call on an [`Input`]: [`Input::of`] a program the caller holds (a loader's, a
//! binding's), or [`Input::among`] several (every program of the objects under each layout, as
//! the `bpflog` command reads a file of logs), [`prog`](Input::prog) restricting them to a name.
//!
//! | job | call | written by |
//! |---|---|---|
//! | open an object | [`object::BpfObject::parse`], [`Program::new`]; [`lay_out`] for each program under each [`object::Loader`]; [`OwnedObject`] to keep behind a handle, [`read_object`] to read a file within a bound | |
//! | choose the program, with the evidence | [`select`](fn@select) | |
//! | annotate | [`annotate()`] | itself |
//! | explain | [`explain::explain`] | [`explain::write`], [`explain::write_sarif`] |
//! | profile | [`profile::profile`] | [`profile::render`], [`profile::render_source`] |
//! | report | [`report::report`] | itself |
//! | lines | [`locate()`] and [`Program::lines`] | |
//!
//! Options are `Default` and grow without breaking callers: each field has a method of its name
//! ([`AnnotateOptions::default().style(Style::Rich)`](AnnotateOptions::style)). Results and
//! errors are `#[non_exhaustive]`: read their fields, match them with a `_` arm.
//!
//! What a binding (C, Go, Python) needs, each one call on the bytes it holds:
//!
//! ```
//! use bpflog::explain::{ExplainFormat, explain, write};
//! use bpflog::object::BpfObject;
//! use bpflog::{AnnotateOptions, Input, LogData, Palette, Program, SourceFiles, SourceSearch, Style};
//! let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
//! // Open an object from a path (or from any bytes: a loader's buffer).
//! let data = std::fs::read(format!("{dir}/obj/reject_subprog.o"))?;
//! let object = BpfObject::parse(&data)?;
//! // List its programs.
//! let names: Vec<&str> = object.programs().iter().map(|&id| object.function(id).name.as_str()).collect();
//! assert_eq!(names, ["xdp_reject_subprog"]);
//! let programs = object.programs().iter()
//!     .map(|&id| Program::new(&object, id))
//!     .collect::<Result<Vec<_>, _>>()?;
//! let log = std::fs::read(format!("{dir}/logs/reject_subprog.xdp_reject_subprog.l2.log"))?;
//!
//! // Annotate a log into a writer: the program named, or chosen from the log.
//! let program = Program::new(&object, object.program("xdp_reject_subprog")?)?;
//! let chosen = &programs[bpflog::select(&programs, &log[..])?.chosen];
//! assert_eq!(chosen.name(), program.name());
//! let mut out = Vec::new();
//! let options = AnnotateOptions::default().style(Style::Rich).palette(Palette::new(false));
//! let mut stats = Vec::new();
//! bpflog::annotate(Input::of(chosen, LogData::Stream(&log[..])), &mut out, &options, |log, _| {
//!     stats.push(*log.stats());
//!     Ok(())
//! })?;
//! assert!(stats[0].rejected && stats[0].inserted > 0);
//!
//! // Explain it, as JSON.
//! let mut json = Vec::new();
//! let mut sources = SourceFiles::new(SourceSearch::default());
//! explain(Input::of(&program, LogData::Stream(&log[..])), |program, e| {
//!     write(&e, program, ExplainFormat::Json, &mut sources, &Palette::new(false), &mut json)
//! })?;
//! let e: serde_json::Value = serde_json::from_slice(&json)?;
//! assert_eq!(e["class"], "nullable-dereference");
//!
//! // Profile it per source line: file, line, text, visits, states resumed there.
//! let request = bpflog::profile::ProfileRequest::default();
//! let input = Input::of(&program, LogData::Stream(&log[..]));
//! let p = bpflog::profile::profile(input, &request, &mut sources)?.profile;
//! let l = &p.lines[0];
//! let row = (l.file.as_str(), l.line, l.source.as_str(), l.counts.visits, l.counts.paths);
//! assert!(row.3 > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

/// The builder methods of options that grow without breaking callers (`#[non_exhaustive]`, built
/// from `Default`): for each field, a method of its name that sets it and returns the options,
/// `AnnotateOptions::default().style(Style::Rich).context(2)`.
macro_rules! setters {
    ($type:ident $(<$lt:lifetime>)? { $($field:ident: $ty:ty),* $(,)? }) => {
        impl$(<$lt>)? $type$(<$lt>)? {
            $(
                #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
                #[must_use]
                pub fn $field(mut self, $field: $ty) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

mod annotate;
mod annotate_job;
mod checked_insns;
mod diagnostic;
mod escape;
pub mod explain;
mod extract;
mod file_range;
mod frame;
mod input;
mod insn_bytes;
mod json;
mod kernel_rule;
mod line_info;
mod locate;
mod one_pass;
mod owned_object;
mod plan;
pub mod profile;
mod program;
pub mod report;
mod select;
mod sink;
pub mod sniff;
mod source;
mod style;
mod take;
mod writing;

#[cfg(feature = "testing")]
pub use annotate::annotate_bare;
pub use annotate::{AnnotateOptions, AnnotateStats, OutputFormat, Style};
pub use annotate_job::{LogAnnotated, annotate};
pub use bpflog_log as log;
pub use bpflog_object as object;
pub use diagnostic::MAX_CALL_FRAMES;
pub use escape::{escape_controls, escape_controls_str, write_log_lines};
pub use file_range::{Growing, LogFile};
pub use frame::Wrapper;
pub use input::{Input, LogData};
pub use json::write_json;
pub use line_info::{BpfLineInfo, LineInfoError};
pub use locate::{InlinedFrom, InsnSource, locate};
pub use one_pass::AnnotatedLog;
#[cfg(feature = "testing")]
pub use one_pass::annotate_file;
pub use owned_object::{LaidOut, OBJECT_MAX, OwnedObject, lay_out, read_object};
pub use plan::{ChoiceError, ExistingAnnotations, PlanError, SegmentPlan, select};
#[cfg(feature = "testing")]
pub use plan::{Plan, plan};
pub use program::{Origin, Program, source_paths};
pub(crate) use select::Selector;
pub use select::{Candidate, CoreFields, Evidence, Mismatch, SelectError, Selection, Shared};
pub use source::{
    RefusalReason, SourceFile, SourceFiles, SourceLimits, SourceRefusal, SourceRefusals,
    SourceSearch, SourcesRead, read_at_most,
};
pub use style::Palette;
pub use take::{JobError, Note, TakeError};
#[cfg(feature = "testing")]
pub use take::{Taken, take};
pub use writing::StreamedSegment;
#[cfg(feature = "testing")]
pub use writing::{annotate_planned, annotate_stream};

/// What the unit tests share.
#[cfg(test)]
pub(crate) mod testing {
    use crate::Program;

    /// Runs `f` with the program of the fixture `branchy.o` and its level-2 log.
    pub(crate) fn with_branchy(f: impl FnOnce(&Program<'_, '_>, &[u8])) {
        with_fixture("branchy", "xdp_branchy.l2", f);
    }

    /// Runs `f` with the first program of the fixture `OBJECT.o` and its log
    /// `OBJECT.LOG.log` (`LOG`: the program and the level, `xdp_parse.l2`).
    pub(crate) fn with_fixture(object: &str, log: &str, f: impl FnOnce(&Program<'_, '_>, &[u8])) {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let data = std::fs::read(fixtures.join(format!("obj/{object}.o"))).unwrap();
        let object_ = bpflog_object::BpfObject::parse(&data).unwrap();
        let program = Program::new(&object_, object_.programs()[0]).unwrap();
        let log = std::fs::read(fixtures.join(format!("logs/{object}.{log}.log"))).unwrap();
        f(&program, &log);
    }
}
