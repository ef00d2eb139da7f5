//! Where the verifier spends its effort: a verifier log counted per source line and function.
//!
//! veristat's `--top-src-lines` counts how often the kernel *printed* a source line, and the
//! kernel prints one only when the line changes (`verbose_linfo`, kernel/bpf/log.c), so those
//! counts are not the work done. The profile counts every instruction line of the log instead
//! and attributes it through the program's line table, by the record the kernel's own
//! annotation uses (`find_linfo`: the rightmost record at or before the instruction):
//!
//! - **visits** of a source line `(file, line)`: the instruction lines `N: (op) ...` whose
//!   covering record is on that file and line, that is, exactly the instruction lines the
//!   kernel's annotation puts under a `; ... @ file:line` line of that file and line. Lines
//!   that only mention an instruction (`N: R1=...` states, `N: safe`, `mark_precise:`
//!   backtracking, liveness rows) are not visits; the log's own `;` lines are ignored.
//! - **insns**: the distinct instruction indices among those visits.
//! - **paths**: the `from X to Y` lines (speculative ones included) whose `Y` is covered by a
//!   record of that line: how many times verification resumed a queued path there. Linux 5.10
//!   at log level 2 prints no such line: there a path resumes at the state printed right after
//!   the path before ended ([`Resumes`]), counted the same. The start of each verification pass
//!   is not counted.
//!
//! Functions get the same three totals over their instructions: the entry program and each
//! subprogram libbpf appended (the layout's parts), and, when the object has DWARF, every
//! function of an instruction's inline chain (the innermost inlined function and each caller up
//! to the subprogram), so an inlined function's totals are included in its callers'.
//!
//! Counting is a stream: one pass over the log, one reused line buffer, and two counters per
//! loaded instruction (a `Vec` indexed by instruction index); lines and functions are put
//! together from those counters at the end. At log level 1 the kernel discards the text of
//! every finished path, so such a log shows only the last path: profile level-2 logs.

mod compare;
mod flame;
mod parallel;
mod planned;
mod render;
mod strategy;
mod summary;

pub use compare::{Change, Comparison, FunctionChange, LineChange, compare};
pub use flame::FoldedStacks;
pub(crate) use flame::StackCounter;
pub use render::{Format, RenderOptions, render, render_comparison, render_source};
pub use strategy::{ProfileRequest, Profiled, profile};
pub use summary::{Summary, Verdict};

use crate::Program;
use crate::frame::SegmentStart;
use crate::locate::locate;
use crate::sink::{Both, Observer, Placed, Sink, decode, observe_whole, read_input_into};
use crate::source::SourceFiles;
use bpflog_log::state::Resumes;
use bpflog_log::{InsnHead, Line, LogInput};
use std::collections::HashMap;
use std::io;

/// How [`profile`] read a log: the strategy it chose (the profile is the same whichever).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reading {
    /// Once, from its start, by one thread: a stream, a file too small to cut, or one thread.
    OnePass,
    /// Once, cut into `parts` parts read at the same time by threads of their own; `joined` of
    /// the parts after the first were joined as read, the others read again on from the part
    /// before.
    InParts {
        /// Parts read by threads of their own.
        parts: usize,
        /// Parts after the first joined to the one before as read.
        joined: usize,
    },
    /// Twice: a first pass chose the program, then its logs were taken out and read.
    FirstPass,
}

impl Reading {
    /// The reading of a file in `parts` parts, `joined` of them joined as read.
    pub(crate) fn of(parts: u64, joined: usize) -> Reading {
        match usize::try_from(parts) {
            Ok(parts @ 2..) => Reading::InParts { parts, joined },
            _ => Reading::OnePass,
        }
    }
}

/// Visits, distinct instructions and path entries of a source line or function.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counts {
    /// Instruction lines attributed to it.
    pub visits: u64,
    /// Distinct instruction indices among those.
    pub insns: u64,
    /// `from X to Y` lines whose `Y` is attributed to it.
    pub paths: u64,
}

impl Counts {
    fn add_insn(&mut self, visits: u64, entries: u64) {
        self.visits += visits;
        self.insns += u64::from(visits > 0);
        self.paths += entries;
    }
}

/// One source line of the program and its counts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LineProfile {
    /// The file as the line record names it (often a path).
    pub file: String,
    /// Line number.
    pub line: u32,
    /// The source text without leading whitespace: from `.BTF`, or the source file when the
    /// line table comes from DWARF (see [`Profile::fill_sources`]); empty when unknown.
    pub source: String,
    /// Its counts.
    pub counts: Counts,
}

impl LineProfile {
    /// The file name after its last `/`, as the kernel prints it.
    pub fn basename(&self) -> &str {
        self.file.rsplit('/').next().unwrap_or(&self.file)
    }
}

/// What a function is in the loaded program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FunctionKind {
    /// The entry program.
    Entry,
    /// A `.text` function libbpf appended to the program.
    Subprogram,
    /// A function that exists only inlined (DWARF inline chains).
    Inlined,
}

impl FunctionKind {
    /// `entry`, `subprogram` or `inlined`.
    pub fn as_str(self) -> &'static str {
        match self {
            FunctionKind::Entry => "entry",
            FunctionKind::Subprogram => "subprogram",
            FunctionKind::Inlined => "inlined",
        }
    }
}

/// One function of the program and its counts (inlined callees included).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FunctionProfile {
    /// Its name.
    pub name: String,
    /// What it is; a function that is both placed as a subprogram and inlined elsewhere is a
    /// subprogram (its totals include the inlined copies).
    pub kind: FunctionKind,
    /// Its counts.
    pub counts: Counts,
}

/// Totals over the whole log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Totals {
    /// Instruction lines in the log.
    pub insn_lines: u64,
    /// `from X to Y` lines in the log, and the states a path resumes at that no such line
    /// heads (Linux 5.10 at level 2).
    pub paths: u64,
    /// Instruction lines attributed to no source line: outside the program, or before its first
    /// line record.
    pub unattributed: u64,
}

/// A verifier log profiled per source line and function.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Profile {
    /// The program's name.
    pub program: String,
    /// What the log's own summary says.
    pub summary: Summary,
    /// Totals over the log.
    pub totals: Totals,
    /// Every source line of the program, hottest first (then by file and line).
    pub lines: Vec<LineProfile>,
    /// The entry program, its subprograms and inlined functions, hottest first (then by name).
    pub functions: Vec<FunctionProfile>,
}

/// Why a log has no instruction line to count: no profile can be made of it
/// ([`Profile::nothing_to_profile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NothingToProfile {
    /// No summary line (`processed N insns ...`) either: a log cut before both, or no log.
    NoVerdict,
    /// The verifier checked no instruction (`processed 0 insns`): it stopped before the first
    /// (`rejected`: and says why, which `bpflog explain` explains).
    NothingVerified {
        /// The verdict is a rejection.
        rejected: bool,
    },
    /// The verifier processed `insns` instructions and the log keeps none: a level-1 log keeps
    /// no path the verifier finished (every path of an accepted program), a level-2 log keeps
    /// them all.
    NotKept {
        /// Instructions processed, as the summary says.
        insns: u64,
    },
}

impl NothingToProfile {
    /// Why a log with `insn_lines` instruction lines and the summary `summary` has nothing to
    /// profile; `None` when it has instruction lines.
    pub fn of(insn_lines: u64, summary: &Summary) -> Option<Self> {
        if insn_lines > 0 {
            return None;
        }
        Some(match (summary.verdict, summary.insns.unwrap_or(0)) {
            (Verdict::Unknown, _) => NothingToProfile::NoVerdict,
            (verdict, 0) => NothingToProfile::NothingVerified {
                rejected: verdict == Verdict::Rejected,
            },
            (_, insns) => NothingToProfile::NotKept { insns },
        })
    }
}

impl std::fmt::Display for NothingToProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NothingToProfile::NoVerdict => f.write_str("no instruction line and no verdict in it"),
            NothingToProfile::NothingVerified { rejected } => {
                f.write_str(
                    "no instruction line in it: the verifier checked none (processed 0 insns)",
                )?;
                if *rejected {
                    f.write_str("; `bpflog explain` says why it rejected the program")?;
                }
                Ok(())
            }
            NothingToProfile::NotKept { insns } => write!(
                f,
                "the log has no line of the {insns} instructions the verifier processed: \
                 a level-1 log keeps no path the verifier finished; a level-2 log keeps every one \
                 (`bpflog verify --level 2 --raw`, libbpf's kernel_log_level = 2, \
                 `bpftool -d prog load`, `veristat -l 2 -v`)"
            ),
        }
    }
}

impl Profile {
    /// Why the log has nothing to profile ([`NothingToProfile::of`]): no instruction line.
    pub fn nothing_to_profile(&self) -> Option<NothingToProfile> {
        NothingToProfile::of(self.totals.insn_lines, &self.summary)
    }

    /// Fills in the empty source texts (line tables from DWARF carry none) from the files.
    pub fn fill_sources(&mut self, files: &mut SourceFiles) {
        for l in self.lines.iter_mut().filter(|l| l.source.is_empty()) {
            if let Some(text) = files
                .get(l.file.as_bytes())
                .as_ref()
                .and_then(|f| f.line(l.line).map(|t| t.trim_ascii_start().to_vec()))
            {
                l.source = String::from_utf8_lossy(&text).into_owned();
            }
        }
    }
}

/// Whether profiling a log of one of `programs` may read source files ([`Profile::fill_sources`],
/// the flame graph's frames), [`render_source`] aside: when a line of their line tables
/// has no text (a DWARF line table keeps none).
pub fn reads_sources(programs: &[Program<'_, '_>]) -> bool {
    (programs.iter()).any(|p| (p.lines.rows().iter()).any(|r| r.trimmed_text().is_empty()))
}

/// Profiles the log read from `input` for `program`, one line at a time.
pub(crate) fn read_profile(program: &Program<'_, '_>, input: impl LogInput) -> io::Result<Profile> {
    let mut profiler = Profiler::new(program);
    observe_whole(input, &mut profiler)?;
    Ok(profiler.finish())
}

/// [`read_profile`], for the tests that check the profiler itself (feature `testing`);
/// [`profile`] is the entry point.
#[cfg(feature = "testing")]
pub fn profile_bare(program: &Program<'_, '_>, input: impl LogInput) -> io::Result<Profile> {
    read_profile(program, input)
}

/// A profile, and whether the log fits the program (see [`profile_checked`]): the program's
/// evidence (lines taken as noise among it), or why it does not fit.
pub(crate) type Checked = (Profile, Result<crate::Evidence, crate::SelectError>);

/// Profiles the logs of `program` in what `input` holds (loader output around them, other
/// programs' logs that a wrapper names are left out; see [`crate::frame`]), checking on the way
/// that they are the program's (for a program taken without a first pass over the file): the
/// profile, and why the logs do not fit when they do not.
///
/// [`parallel::profile_checked_file`] does the same over a file with every core.
pub(crate) fn profile_checked(
    program: &Program<'_, '_>,
    input: impl LogInput,
) -> io::Result<Checked> {
    use parallel::Pass;
    let mut pass = CheckedPass::new(program, true);
    pass.read(input)?;
    Ok(pass.finish())
}

/// The state of [`profile_checked`] between lines.
pub(crate) struct CheckedPass<'p, 'o, 'd> {
    /// The program's logs only: those wrappers give its name, and those no wrapper names.
    deframer: crate::frame::Deframer,
    line_no: u64,
    logs: CheckedLogs<'p, 'o, 'd>,
}

/// What [`CheckedPass`] does with the lines of the logs.
struct CheckedLogs<'p, 'o, 'd> {
    profiler: Profiler<'p, 'o, 'd>,
    selector: crate::Selector<'p, 'o, 'd>,
    keeping: bool,
}

impl<'p, 'o, 'd> CheckedPass<'p, 'o, 'd> {
    /// The pass over a file from its start (`at_start`), or over a part that starts at a line
    /// inside it.
    pub(crate) fn new(program: &'p Program<'o, 'd>, at_start: bool) -> Self {
        let deframer = if at_start {
            crate::frame::Deframer::default()
        } else {
            crate::frame::Deframer::in_bare_log()
        };
        CheckedPass {
            deframer,
            line_no: 0,
            logs: CheckedLogs {
                profiler: Profiler::new(program),
                selector: crate::Selector::new(vec![program]),
                keeping: true,
            },
        }
    }

    pub(crate) fn finish(self) -> Checked {
        let CheckedLogs {
            profiler, selector, ..
        } = self.logs;
        (profiler.finish(), selector.fit())
    }
}

impl Sink for CheckedLogs<'_, '_, '_> {
    type Error = io::Error;

    fn start(&mut self, _: u64, start: SegmentStart) -> io::Result<()> {
        let name = self.profiler.program.name();
        self.keeping = start.program.as_deref().is_none_or(|p| p == name);
        Ok(())
    }

    /// The kernel's part of a line of a log: profiled and checked when the log is kept.
    #[inline(always)]
    fn payload(&mut self, line: &Placed<'_>) -> io::Result<()> {
        let (payload, line) = (line.payload, line.line_no);
        if self.keeping {
            decode(
                payload,
                line,
                &mut Both(&mut self.selector, &mut self.profiler),
            );
        }
        Ok(())
    }
}

impl parallel::Pass for CheckedPass<'_, '_, '_> {
    fn read(&mut self, input: impl LogInput) -> io::Result<()> {
        let (deframer, line_no) = (&mut self.deframer, &mut self.line_no);
        read_input_into(input, deframer, line_no, &mut self.logs)
    }

    fn join(&mut self, later: Self) -> bool {
        // `later` started as a new pass of a part does: inside a bare log, keeping its lines.
        let (this, later_logs) = (&mut self.logs, later.logs);
        let joinable = self.deframer == crate::frame::Deframer::in_bare_log()
            && this.keeping
            && this.profiler.summary.joinable()
            && this.selector.joinable(&later_logs.selector);
        if !joinable {
            return false;
        }
        this.profiler.join(later_logs.profiler);
        this.selector.join(later_logs.selector, self.line_no);
        this.keeping = later_logs.keeping;
        self.deframer = later.deframer;
        self.line_no += later.line_no;
        true
    }
}

/// Profiles the log read from `input` for `program` and counts its call stacks for a flame
/// graph ([`StackCounter`]), in one pass.
pub(crate) fn profile_with_stacks(
    program: &Program<'_, '_>,
    input: impl LogInput,
    files: &mut SourceFiles,
) -> io::Result<(Profile, FoldedStacks)> {
    let mut profiler = Profiler::new(program);
    let mut stacks = StackCounter::new(program);
    observe_whole(input, &mut Both(&mut stacks, &mut profiler))?;
    Ok((profiler.finish(), stacks.finish(files)))
}

/// The counting state: fed lines one by one, turned into a [`Profile`] at the end.
#[derive(Debug)]
pub(crate) struct Profiler<'p, 'o, 'd> {
    program: &'p Program<'o, 'd>,
    /// Instruction lines per loaded instruction index.
    visits: Vec<u64>,
    /// `from X to Y` lines per target index `Y`, and the states a path resumes at where no
    /// such line heads it (Linux 5.10 at level 2).
    entries: Vec<u64>,
    /// Where a path resumes without a `from X to Y` line.
    resumes: Resumes,
    totals: Totals,
    summary: summary::SummaryReader,
}

impl<'p, 'o, 'd> Profiler<'p, 'o, 'd> {
    /// A profiler for `program`: its memory is two counters per loaded instruction.
    pub fn new(program: &'p Program<'o, 'd>) -> Self {
        let len = usize::try_from(program.lines.program_len()).unwrap_or(0);
        Profiler {
            program,
            visits: vec![0; len],
            entries: vec![0; len],
            resumes: Resumes::default(),
            totals: Totals::default(),
            summary: summary::SummaryReader::default(),
        }
    }

    /// Counts one log line (with or without its line terminator).
    #[cfg(test)]
    pub(crate) fn line(&mut self, raw: &[u8]) {
        let (content, _) = bpflog_log::split_newline(raw);
        decode(content, 0, self);
    }

    /// Whether a detail line ([`is_detail`](bpflog_log::is_detail)) would change nothing, so that
    /// it need not be classified: it counts nothing, and only ends the error lines read so far,
    /// when there are any (as a precision-tracking line or a liveness row does, not an indented
    /// state).
    #[inline]
    pub(crate) fn ignores_details(&self) -> bool {
        // Nothing else here looks at them: as the summary's reader says.
        Observer::ignores_details(&self.summary)
    }

    /// Takes one line already classified (`content` without its newline).
    pub fn classified(&mut self, kind: &Line<'_>, content: &[u8]) {
        match *kind {
            Line::Insn(insn) => self.count_insn(insn.index),
            Line::FromTo { to, .. } => self.count_entry(to),
            _ => {}
        }
        if let Some(to) = self.resumes.after(kind, content) {
            self.count_entry(to);
        }
        self.summary.line(kind, content);
    }

    /// A path enters instruction `to`.
    fn count_entry(&mut self, to: u64) {
        self.totals.paths += 1;
        if let Some(e) = usize::try_from(to)
            .ok()
            .and_then(|i| self.entries.get_mut(i))
        {
            *e += 1;
        }
    }

    /// What [`classified`](Self::classified) does with a line of instruction `index` and
    /// `opcode`.
    #[inline]
    pub(crate) fn insn(&mut self, index: u64, opcode: u8) {
        self.count_insn(index);
        self.resumes.insn(Some(opcode));
        // It ends the error lines read before it.
        self.summary.clear();
    }

    /// The counts of a line of instruction `index`. Whether a source line covers it is asked at
    /// the end ([`finish`](Self::finish)), once per instruction rather than once a line.
    #[inline]
    fn count_insn(&mut self, index: u64) {
        self.totals.insn_lines += 1;
        if let Some(v) = usize::try_from(index)
            .ok()
            .and_then(|i| self.visits.get_mut(i))
        {
            *v += 1;
        }
    }

    /// This profiler followed by `later`, which counted the lines after this one's from a fresh
    /// start, in place. Only when its summary is [`joinable`](summary::SummaryReader::joinable).
    fn join(&mut self, later: Profiler<'p, 'o, 'd>) {
        self.summary.join(later.summary);
        for (a, b) in self.visits.iter_mut().zip(&later.visits) {
            *a += b;
        }
        for (a, b) in self.entries.iter_mut().zip(&later.entries) {
            *a += b;
        }
        self.totals.insn_lines += later.totals.insn_lines;
        self.totals.paths += later.totals.paths;
        if let Some(to) = self.resumes.join(later.resumes) {
            self.count_entry(to);
        }
    }

    /// Back to a profiler that has read nothing, keeping its memory.
    fn clear(&mut self) {
        self.visits.fill(0);
        self.entries.fill(0);
        self.resumes = Resumes::default();
        self.totals = Totals::default();
        self.summary = summary::SummaryReader::default();
    }

    /// The position in the line table of the record covering instruction `index`.
    fn line_of(&self, index: usize) -> Option<usize> {
        self.program.lines.find_index(u32::try_from(index).ok()?)
    }

    /// The profile: counters put together per source line and per function.
    pub fn finish(self) -> Profile {
        let program = self.program;
        let rows = program.lines.rows();
        let mut lines: Vec<LineProfile> = Vec::new();
        let mut line_at: HashMap<(&[u8], u32), usize> = HashMap::new();
        let mut functions: Vec<FunctionProfile> = Vec::new();
        let mut function_at: HashMap<String, usize> = HashMap::new();
        let mut add_function = |name: &str, kind: FunctionKind, v: u64, e: u64| {
            let at = match function_at.get(name) {
                Some(&at) => at,
                None => {
                    functions.push(FunctionProfile {
                        name: name.to_owned(),
                        kind,
                        counts: Counts::default(),
                    });
                    function_at.insert(name.to_owned(), functions.len() - 1);
                    functions.len() - 1
                }
            };
            let f = &mut functions[at];
            f.kind = f.kind.min(kind);
            f.counts.add_insn(v, e);
        };
        let object = program.object();
        let has_dwarf = object.is_some_and(|o| o.dwarf().is_some());
        let mut chain: Vec<&str> = Vec::new();
        // Instruction lines outside the program, or of an instruction no record covers.
        let mut attributed = 0;
        for (index, (&v, &e)) in self.visits.iter().zip(&self.entries).enumerate() {
            let Ok(index32) = u32::try_from(index) else {
                break;
            };
            if let Some(row) = self.line_of(index).and_then(|r| rows.get(r)) {
                attributed += v;
                let at = *line_at.entry((row.file, row.line)).or_insert_with(|| {
                    lines.push(LineProfile {
                        file: String::from_utf8_lossy(row.file).into_owned(),
                        line: row.line,
                        source: String::from_utf8_lossy(row.trimmed_text()).into_owned(),
                        counts: Counts::default(),
                    });
                    lines.len() - 1
                });
                lines[at].counts.add_insn(v, e);
            }
            let (part_name, kind) = match object {
                Some(object) => {
                    let Some((part, _)) = program.layout.locate(index32) else {
                        continue;
                    };
                    let kind = if Some(part.function) == program.function() {
                        FunctionKind::Entry
                    } else {
                        FunctionKind::Subprogram
                    };
                    (object.function(part.function).name.as_str(), kind)
                }
                // Line info from a loader: no functions but the program.
                None => (program.name(), FunctionKind::Entry),
            };
            add_function(part_name, kind, v, e);
            if has_dwarf && let Some(src) = locate(program, index32) {
                chain.clear();
                chain.push(src.function);
                chain.extend(src.inlined.iter().map(|step| step.caller));
                chain.sort_unstable();
                chain.dedup();
                for name in chain.iter().filter(|n| **n != part_name) {
                    add_function(name, FunctionKind::Inlined, v, e);
                }
            }
        }
        lines.sort_by(|a, b| {
            (b.counts.visits, &a.file, a.line).cmp(&(a.counts.visits, &b.file, b.line))
        });
        functions.sort_by(|a, b| (b.counts.visits, &a.name).cmp(&(a.counts.visits, &b.name)));
        Profile {
            program: program.name().to_owned(),
            summary: self.summary.finish(),
            totals: Totals {
                unattributed: self.totals.insn_lines - attributed,
                ..self.totals
            },
            lines,
            functions,
        }
    }
}

/// The profiler observes every instruction line and `from X to Y` line, and the summary.
impl Observer for Profiler<'_, '_, '_> {
    #[inline]
    fn ignores_details(&self) -> bool {
        Profiler::ignores_details(self)
    }

    /// Always: an instruction line is only counted.
    #[inline(always)]
    fn insn_seen(&mut self, head: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        self.insn(head.index, head.opcode);
        true
    }

    #[inline]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], _: u64) {
        self.classified(kind, payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceSearch;
    use crate::testing::with_fixture;
    use std::path::Path;

    /// [`reads_sources`] says what a profile does: of an object with `.BTF.ext` (whose lines all
    /// have text) nothing is read, of one with DWARF alone its source is, for the profile and for
    /// the flame graph.
    #[test]
    fn reads_sources_says_whether_a_source_file_is_read() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/src");
        for object in ["reject_entry", "reject_entry.nobtfext"] {
            with_fixture(object, "xdp_reject_entry.l2", |program, log| {
                let search = SourceSearch {
                    dirs: vec![src.clone()],
                    ..SourceSearch::default()
                };
                let mut files = SourceFiles::new(search.clone());
                let (mut profile, _) = profile_with_stacks(program, log, &mut files).unwrap();
                profile.fill_sources(&mut files);
                assert_eq!(
                    search.read.holds(&src.join("reject_entry.c")),
                    reads_sources(std::slice::from_ref(program)),
                    "{object}"
                );
            });
        }
    }
}
