//! A self-contained HTML report: the annotated log and the real source side by side, linked.
//!
//! One file, inline CSS and JavaScript, no request to anything (a Content-Security-Policy of
//! `default-src 'none'` says so to the browser as well). It has to stay usable on logs up to the
//! kernel's limit (about 1 GB), so it carries no HTML per log line and not the log's text as it
//! is: the page is a template (`report.html`, `report.css`, `report.js`) around
//!
//! - the log as the annotator writes it in kernel style (the kernel's `; text @ file:line` lines
//!   kept or inserted), in compressed pieces the page inflates when their rows are shown
//!   (`chunks.rs`), each row with the frame the verifier is in, what the page draws and follows
//!   of it as the log crate decoded it (`Fields`: the parts of an instruction line and the
//!   instruction a jump goes to, the two instructions of `from X to Y`, a liveness row's
//!   instruction; the page reads no row's text but to show it), and the register state it
//!   prints, decoded (`state.rs`) for the page's state panel;
//! - `#bpflog-data`, a JSON data block (`<script type="application/json">`, read with
//!   `JSON.parse`), compact metadata (`REPORT_DATA_VERSION`): one character per log line for
//!   its kind (`i`: the instruction after the previous instruction line's, `j`: the instruction
//!   named by the next entry of `jumps`, `a` annotation, `s` state, `n` an indented line under
//!   `caller:` and the like, `f` `from X to Y`, ...; see `kind_char`), per loaded instruction
//!   its source line (the kernel's `find_linfo` record, as the profile counts it) and its
//!   location (DWARF column, function, inline chain, via [`locate`]), the profile's counts per
//!   source line, the source files, and the rejection: `diag`, the rustc-style diagnostic's
//!   parts, and `explain` (`null` for an accepted log), the explanation
//!   ([`crate::explain`]): the object `bpflog explain --format json` writes (`class`, `error`,
//!   `location`, `chain`, `help`), with the class's `title` and `requires`, and `steps`, per
//!   step of the chain `[row, loc]`: the log row of its instruction on the failing path (`-1`
//!   when not known) and its location in `locs` (`-1`: none); for a log with no rejection
//!   whose load failed, `load_failed`, `[line, text]`: the loader's line in the input and what
//!   [`LoadFailure`] says (absent otherwise).
//!
//! The page keeps a few inflated pieces and draws only the rows on screen. The log is streamed:
//! it is read once, annotated, counted and written as it goes; memory is a byte per log line
//! plus the program's tables and one piece. The annotator hands the report its rows, not its
//! output's bytes (`AnnotatedRows`): each line of the log with the kind the annotator decoded
//! (classified here when it did not need to), so that each line is classified once, and each
//! source line it inserts as a row of kind `a`. The page's rows, the profiler and the explainer
//! observe those lines together (`sink::Both`, through `sink::decode` for a line the annotator
//! did not classify): the profile and the explanation come from the same pass and the same
//! decoding.
//!
//! Bytes: log lines and source files need not be UTF-8; they are shown as lossy UTF-8 (an
//! invalid sequence becomes U+FFFD), and line terminators (`\n`, `\r\n`) are dropped. The
//! data block is escaped for `<script>` by one writer (`ScriptSafe`) over `serde_json`'s
//! output: `<` (so that no `</script>` or `<!--` can end or confuse it), U+2028 and U+2029. The
//! pieces are base64, which needs no escaping.

mod chunks;

use crate::Program;
use crate::annotate::{AnnotatedRows, annotate_rows};
use crate::explain::{Concluded, Explainer, Explanation, LoadFailure};
use crate::frame::LoadFailedAt;
use crate::input::{Input, LogData};
use crate::locate::{InsnSource, locate};
use crate::profile::{NothingToProfile, Profile, Profiler};
use crate::sink::{Both, Observer, decode};
use crate::source::{SourceFiles, SourceSearch};
use crate::take::{JobError, Note, take};
use bpflog_log::LogInput;
use bpflog_log::{InsnHead, Line};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{self, Write};

/// The version of the layout of the report's data (`#bpflog-data`).
pub(crate) const REPORT_DATA_VERSION: u32 = 4;

/// Source files larger than this are embedded as excerpts around their lines with code.
const WHOLE_FILE_LIMIT: usize = 1 << 20;
/// Lines kept before and after each line with code in an excerpt.
const EXCERPT_CONTEXT: u32 = 3;

const TEMPLATE: &str = include_str!("report.html");
const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// How to build a report: [`ReportOptions::default`], then a method per field that differs.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReportOptions {
    /// The page's title (the program's name when empty).
    pub title: String,
    /// Where to look for source files.
    pub sources: SourceSearch,
}

setters!(ReportOptions {
    title: String,
    sources: SourceSearch,
});

/// What writing a report did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportStats {
    /// Lines of the log as shown (annotation lines included).
    pub lines: u64,
    /// Instruction lines among them.
    pub instructions: u64,
    /// Whether the log ended in a rejection.
    pub rejected: bool,
    /// Whether the log says how it ended: its summary, or a rejection.
    pub verdict: bool,
    /// The first line of the log read (from 1) that showed more call frames than the kernel
    /// allows ([`MAX_CALL_FRAMES`](crate::MAX_CALL_FRAMES)): the call stack of the rejection
    /// is followed no deeper.
    pub too_deep: Option<u64>,
    /// Why the log has nothing to profile: no instruction line (the page has the log alone).
    pub nothing_to_profile: Option<NothingToProfile>,
}

/// Writes the HTML report of the log read from `input` (the logs of `program`) to `out`, of a
/// log whose loader said its load failed (`failed`).
fn report_of(
    program: &Program<'_, '_>,
    input: impl LogInput,
    mut out: impl Write,
    options: &ReportOptions,
    failed: Option<LoadFailedAt>,
) -> io::Result<ReportStats> {
    let mut parts = Template::new(TEMPLATE);
    let title = title(program, options);
    out.write_all(parts.until("{{TITLE}}").as_bytes())?;
    write_html_text(&mut out, title)?;
    out.write_all(parts.until("{{CSS}}").as_bytes())?;
    out.write_all(CSS.as_bytes())?;
    out.write_all(parts.until("{{LOG}}").as_bytes())?;
    let streamed = stream(program, input, Some(&mut out), failed)?;
    let stats = streamed.stats;
    let data = data(program, title, streamed, options);
    out.write_all(parts.until("{{DATA}}").as_bytes())?;
    write_data(&mut out, &data)?;
    out.write_all(parts.until("{{JS}}").as_bytes())?;
    out.write_all(JS.as_bytes())?;
    out.write_all(parts.rest().as_bytes())?;
    out.flush()?;
    Ok(stats)
}

/// A report written, and of which program.
#[derive(Debug)]
#[non_exhaustive]
pub struct Reported {
    /// The program the logs are of (an index into the programs given).
    pub program: usize,
    /// What writing it did.
    pub stats: ReportStats,
    /// What to tell the user, in order.
    pub notes: Vec<Note>,
}

/// Writes to `out` the HTML report of the logs of `input`. Of one program given as a stream,
/// its logs are read once, as they are; otherwise the program is the one named, or the one the
/// logs are found to be of, and its logs are taken out of the file (`take`, which reads it twice:
/// a stream is [`JobError::NeedsFile`]).
pub fn report<R: LogInput>(
    input: Input<'_, '_, '_, R>,
    out: impl Write,
    options: &ReportOptions,
) -> Result<Reported, JobError> {
    input.check()?;
    let Input {
        programs,
        prog,
        log,
    } = input;
    let file = match (log, programs) {
        (LogData::File(file), _) => file,
        (LogData::Stream(stream), [program]) => {
            return Ok(Reported {
                program: 0,
                stats: report_of(program, stream, out, options, None)?,
                notes: Vec::new(),
            });
        }
        (LogData::Stream(_), _) => return Err(JobError::NeedsFile),
    };
    let taken = take(programs, file, prog)?;
    let program = programs.get(taken.program).ok_or(JobError::NoPrograms)?;
    // The page says how the last log ended.
    let failed = taken.load_failed.last().cloned().flatten();
    Ok(Reported {
        program: taken.program,
        stats: report_of(program, taken.logs, out, options, failed)?,
        notes: taken.notes,
    })
}

/// The HTML report of `program`'s log read from `input` as it is, written to `out`: for the
/// tests of the page itself (feature `testing`); [`report`] is the entry point.
#[cfg(feature = "testing")]
pub fn report_bare(
    program: &Program<'_, '_>,
    input: impl LogInput,
    out: impl Write,
    options: &ReportOptions,
) -> io::Result<ReportStats> {
    report_of(program, input, out, options, None)
}

/// The report's embedded data alone (`#bpflog-data`), for the tests (feature `testing`).
#[cfg(feature = "testing")]
pub fn report_data(
    program: &Program<'_, '_>,
    input: impl LogInput,
    options: &ReportOptions,
) -> io::Result<Value> {
    let streamed = stream(program, input, None::<io::Sink>, None)?;
    let data = data(program, title(program, options), streamed, options);
    // As the page has it: one writer of the data, read back.
    let mut text = Vec::new();
    write_data(&mut text, &data)?;
    serde_json::from_slice(&text).map_err(io::Error::other)
}

/// The `#bpflog-data` object. The members with an entry for every log line (`kinds`, a byte
/// each; `jumps`), every source line (`src`), location (`locs`) or instruction (`insn_src`,
/// `insn_loc`) are kept out of the JSON values (32 bytes each) of the rest: they are written
/// from these (a tuple is an array).
struct Data<'p> {
    rest: serde_json::Map<String, Value>,
    kinds: String,
    jumps: Vec<u64>,
    /// Per source line: file, line, visits, instructions, paths.
    src: Vec<(usize, u32, u64, u64, u64)>,
    insn_src: Vec<i64>,
    locs: Vec<PageLocation<'p>>,
    insn_loc: Vec<i64>,
}

/// A location: file, line, column, function, and the inline chain (caller, file or -1, line,
/// column).
type PageLocation<'a> = (usize, u32, u32, &'a str, Vec<(&'a str, i64, u32, u32)>);

/// Writes the data object, safe inside `<script>`: the rest's members with the ones kept out of
/// it among them in key order (as a map of values writes its members), each written as it is
/// serialized.
fn write_data(out: &mut impl Write, data: &Data<'_>) -> io::Result<()> {
    let members = &data.rest;
    let mut safe = ScriptSafe { out, held: 0 };
    let mut keys: Vec<&str> = (members.keys().map(String::as_str))
        .chain(["insn_loc", "insn_src", "jumps", "kinds", "locs", "src"])
        .collect();
    keys.sort_unstable();
    safe.write_all(b"{")?;
    for (k, &key) in keys.iter().enumerate() {
        if k > 0 {
            safe.write_all(b",")?;
        }
        // Through bpflog's JSON formatter, as every JSON document: C1 controls escaped too.
        let compact = crate::json::JsonLayout::Compact;
        crate::json::write(&mut safe, compact, &key)?;
        safe.write_all(b":")?;
        match key {
            "insn_loc" => crate::json::write(&mut safe, compact, &data.insn_loc),
            "insn_src" => crate::json::write(&mut safe, compact, &data.insn_src),
            "jumps" => crate::json::write(&mut safe, compact, &data.jumps),
            "kinds" => crate::json::write(&mut safe, compact, &data.kinds),
            "locs" => crate::json::write(&mut safe, compact, &data.locs),
            "src" => crate::json::write(&mut safe, compact, &data.src),
            _ => crate::json::write(&mut safe, compact, &members[key]),
        }?;
    }
    safe.write_all(b"}")?;
    safe.finish()
}

fn title<'a>(program: &'a Program<'_, '_>, options: &'a ReportOptions) -> &'a str {
    if options.title.is_empty() {
        program.name()
    } else {
        &options.title
    }
}

/// What reading the log gathered.
struct Streamed {
    profile: Profile,
    /// The rejection the log ends in, explained (its diagnostic's parts in
    /// [`Explanation::report`]).
    explanation: Option<Explanation>,
    /// Else, the load that failed all the same.
    load_failure: Option<LoadFailure>,
    kinds: String,
    jumps: Vec<u64>,
    stats: ReportStats,
}

/// Annotates the log (kernel style) into the page's pieces (none without `out`), counting and
/// tracking it on the way; `failed`: the loader said the load of its last log failed.
fn stream(
    program: &Program<'_, '_>,
    input: impl LogInput,
    out: Option<impl Write>,
    failed: Option<LoadFailedAt>,
) -> io::Result<Streamed> {
    let mut rows = PageRows::new(program, out.map(chunks::Chunks::new));
    // The depth is watched on the log as read, whose line numbers the user knows (the rows
    // include the annotation lines).
    let annotated = annotate_rows(program, input, &mut rows)?;
    if let Some(chunks) = rows.page.chunks.take() {
        chunks.finish()?;
    }
    let profile = rows.profiler.finish();
    // The complexity limit's help names the hot lines of the same profile.
    let (explanation, load_failure) = match rows.explainer.conclude(program, Some(&profile), failed)
    {
        Some(Concluded::Rejected(e)) => (Some(*e), None),
        Some(Concluded::LoadFailed(f)) => (None, Some(f)),
        None => (None, None),
    };
    Ok(Streamed {
        stats: ReportStats {
            lines: rows.page.lines,
            instructions: rows.page.instructions,
            rejected: explanation.is_some(),
            verdict: profile.summary.verdict != crate::profile::Verdict::Unknown,
            too_deep: annotated.too_deep,
            nothing_to_profile: profile.nothing_to_profile(),
        },
        profile,
        explanation,
        load_failure,
        kinds: rows.page.kinds,
        jumps: rows.page.jumps,
    })
}

/// The template, handed out piece by piece up to each placeholder.
struct Template<'t> {
    rest: &'t str,
}

impl<'t> Template<'t> {
    fn new(text: &'t str) -> Self {
        Template { rest: text }
    }

    /// The text before `marker` (the marker itself is skipped); everything left when missing.
    fn until(&mut self, marker: &str) -> &'t str {
        match self.rest.find(marker) {
            Some(at) => {
                let head = &self.rest[..at];
                self.rest = &self.rest[at + marker.len()..];
                head
            }
            None => std::mem::take(&mut self.rest),
        }
    }

    fn rest(self) -> &'t str {
        self.rest
    }
}

/// Takes the annotated log row by row, each decoded once (by the annotator, or here through
/// [`decode`] when it did not need to), and hands it to its observers: the page's rows
/// ([`Page`]), the profiler and the explainer.
struct PageRows<'p, 'o, 'd, W: Write> {
    page: Page<W>,
    profiler: Profiler<'p, 'o, 'd>,
    /// Fed the log's lines numbered by their rows (from 0): its failure tracker's error lines
    /// are counted in rows too.
    explainer: Explainer,
    /// The text of an inserted row, as the annotator writes it.
    inserted: Vec<u8>,
}

impl<'p, 'o, 'd, W: Write> PageRows<'p, 'o, 'd, W> {
    fn new(program: &'p Program<'o, 'd>, chunks: Option<chunks::Chunks<W>>) -> Self {
        PageRows {
            page: Page {
                chunks,
                frames: bpflog_log::state::Frames::default(),
                kinds: String::new(),
                jumps: Vec::new(),
                last_insn: None,
                lines: 0,
                instructions: 0,
                failed: None,
            },
            profiler: Profiler::new(program),
            explainer: Explainer::new(1),
            inserted: Vec::new(),
        }
    }
}

impl<W: Write> AnnotatedRows for PageRows<'_, '_, '_, W> {
    fn line(&mut self, kind: Option<&Line<'_>>, content: &[u8], _: u64) -> io::Result<()> {
        let row = self.page.lines;
        // Its call depth is watched by the annotator, on the lines read.
        let observers = &mut Both(&mut self.profiler, &mut self.explainer);
        let observers = &mut Both(&mut self.page, observers);
        match kind {
            Some(kind) => observers.observe(kind, content, row),
            None => {
                decode(content, row, observers);
            }
        }
        self.page.failed.take().map_or(Ok(()), Err)
    }

    fn inserted(&mut self, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        // An annotation line: it tells the profile and the failure nothing but its place.
        self.explainer.details(1, self.page.lines);
        let mut text = std::mem::take(&mut self.inserted);
        text.clear();
        write(&mut text)?;
        let annotation = Line::Annotation(bpflog_log::Annotation {
            text: &[],
            location: None,
        });
        let row = self.page.row(kind_char(&annotation), &annotation, &text);
        self.inserted = text;
        row
    }
}

/// The page's rows: each row's kind character, and its text with what was decoded of it (its
/// [`Fields`], the frame and the state it prints) into the pieces.
struct Page<W: Write> {
    chunks: Option<chunks::Chunks<W>>,
    frames: bpflog_log::state::Frames,
    kinds: String,
    jumps: Vec<u64>,
    /// The instruction index of the last instruction line.
    last_insn: Option<u64>,
    lines: u64,
    instructions: u64,
    /// Why a row could not be written (the observer's calls return nothing).
    failed: Option<io::Error>,
}

impl<W: Write> Page<W> {
    /// A row of the page: its kind character, and its text with what `kind` decoded of it.
    fn row(&mut self, c: char, kind: &Line<'_>, content: &[u8]) -> io::Result<()> {
        self.kinds.push(c);
        self.lines += 1;
        if let Some(chunks) = &mut self.chunks {
            // Most lines are valid UTF-8, which is checked many bytes at a time.
            let text = match std::str::from_utf8(content) {
                Ok(text) => std::borrow::Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(content),
            };
            let state = bpflog_log::state::decode(&text, kind);
            let frame = self.frames.after(kind, state.as_ref());
            let fields = Fields::of(kind, content);
            chunks.row(&text, frame, fields.as_ref(), state.as_ref())?;
        }
        Ok(())
    }
}

/// Every row is drawn with its kind: every line is classified.
impl<W: Write> Observer for Page<W> {
    fn ignores_details(&self) -> bool {
        false
    }

    fn insn_seen(&mut self, _: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        false
    }

    fn observe(&mut self, kind: &Line<'_>, content: &[u8], _: u64) {
        let c = match *kind {
            // Indices past i32 (hostile logs) are not instructions of any program.
            Line::Insn(insn) if i32::try_from(insn.index).is_ok() => {
                self.instructions += 1;
                let next = self.last_insn.map_or(0, |i| i + 1);
                self.last_insn = Some(insn.index);
                if insn.index == next {
                    'i'
                } else {
                    self.jumps.push(insn.index);
                    'j'
                }
            }
            Line::Other if content.starts_with(b" ") || content.starts_with(b"\t") => 'n',
            ref other => kind_char(other),
        };
        if let Err(e) = self.row(c, kind, content) {
            self.failed.get_or_insert(e);
        }
    }
}

/// What the page draws of a row beside its text, from the row's decoded line: the parts of its
/// text as offsets into it (in UTF-16 code units, as the page's strings count), and the
/// instructions it links to. Written as an array of numbers:
///
/// - an instruction line: `[op, code, end]`, the text being the index (`N: `) up to `op`, the
///   opcode (`(xx) `) up to `code`, the instruction up to `end`, then what the verifier printed
///   after it (its state); a jump or a call of a subprogram adds `[at, target]`: its operation
///   (`goto pc+N`, the instruction's last two words) from `at`, to instruction `target`;
/// - `from X to Y`: `[from_at, from_end, to_at, to_end, X, Y]`, where X and Y are in the text;
///   the state follows `to_end`;
/// - a row of the liveness listing: `[index]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fields {
    values: [u64; 6],
    len: usize,
}

impl Fields {
    fn new(values: &[u64]) -> Self {
        let mut all = [0; 6];
        all[..values.len()].copy_from_slice(values);
        Fields {
            values: all,
            len: values.len(),
        }
    }

    /// The numbers, as written.
    pub(crate) fn values(&self) -> &[u64] {
        &self.values[..self.len]
    }

    /// The fields of a row whose text is `content`, decoded as `kind` (`None`: none to draw).
    fn of(kind: &Line<'_>, content: &[u8]) -> Option<Self> {
        match *kind {
            Line::Insn(insn) if i32::try_from(insn.index).is_ok() => {
                let text = insn.text();
                let code = offset_in(text, content)?;
                let op = match insn.opcode {
                    // `(xx) ` is the five bytes before the instruction's text.
                    Some(_) => code.checked_sub(5)?,
                    None => code,
                };
                let end = utf16_len(&content[..code + text.len()]);
                let Some(target) = jump_target(&insn) else {
                    return Some(Fields::new(&[op as u64, code as u64, end]));
                };
                // The operation and its offset are printed last: `goto pc+N`, `call pc+N`.
                let last = memchr::memrchr(b' ', text)?;
                let at = memchr::memrchr(b' ', &text[..last]).map_or(0, |i| i + 1);
                let at = utf16_len(&content[..code + at]);
                Some(Fields::new(&[op as u64, code as u64, end, at, target]))
            }
            Line::FromTo { from, to } => {
                // `from X to Y`, as the classifier read it.
                let digits = |at: usize| {
                    at + (content.get(at..).unwrap_or_default().iter())
                        .take_while(|b| b.is_ascii_digit())
                        .count()
                };
                let from_end = digits(5);
                let to_at = from_end + 4;
                let to_end = digits(to_at);
                let spans = [5, from_end, to_at, to_end].map(|n| n as u64);
                Some(Fields::new(&[
                    spans[0], spans[1], spans[2], spans[3], from, to,
                ]))
            }
            Line::LiveRegsRow { index, .. } => Some(Fields::new(&[index])),
            _ => None,
        }
    }
}

/// Where `part`, a slice of `whole`, starts in it (`None` when it is not one).
fn offset_in(part: &[u8], whole: &[u8]) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at + part.len() <= whole.len()).then_some(at)
}

/// The length in UTF-16 code units of `bytes` shown as lossy UTF-8 (`bytes` ends before an
/// ASCII byte, or at the end of the text).
fn utf16_len(bytes: &[u8]) -> u64 {
    if bytes.is_ascii() {
        return bytes.len() as u64;
    }
    String::from_utf8_lossy(bytes).encode_utf16().count() as u64
}

/// The instruction a jump or a call of a subprogram goes to, in the program's numbering.
fn jump_target(insn: &bpflog_log::InsnLine<'_>) -> Option<u64> {
    use bpflog_object::opcode::{CLASS_JMP, CLASS_JMP32, class};
    // Only a jump's text is decoded: it is most of the instruction lines.
    if !matches!(class(insn.opcode?), CLASS_JMP | CLASS_JMP32) {
        return None;
    }
    let off = match insn.decode().op {
        bpflog_log::Op::Jump { off, .. } => off,
        bpflog_log::Op::Call(bpflog_log::Callee::Pc(off)) => off,
        _ => return None,
    };
    let target = i64::try_from(insn.index)
        .ok()?
        .checked_add(1)?
        .checked_add(off)?;
    u32::try_from(target).ok().map(u64::from)
}

/// [`kind_char`], for the tests that hold the page's kinds to the log's lines (feature
/// `testing`).
#[cfg(feature = "testing")]
pub fn line_kind_char(line: &Line<'_>) -> char {
    kind_char(line)
}

/// The kind character of a line that is not an instruction line (see the module docs). The page
/// calls an indented [`Line::Other`] (a state under `caller:` and the like) `n`: that needs the
/// line's text, which the report's sink has.
pub(crate) fn kind_char(line: &Line<'_>) -> char {
    match line {
        Line::Blank => 'b',
        // Instruction lines are `i` or `j`; one whose index is out of range is shown as text.
        Line::Insn(_) => 'o',
        Line::State { .. } => 's',
        Line::Safe { .. } => 'p',
        Line::FromTo { .. } => 'f',
        Line::FuncStart { .. } => 'F',
        Line::Validating { .. } => 'v',
        Line::GlobalFunc { .. } => 'g',
        Line::CallerCallee | Line::Returning => 'c',
        Line::MarkPrecise => 'm',
        Line::LiveRegsHeader => 'L',
        Line::LiveRegsRow { .. } => 'l',
        Line::Annotation(_) => 'a',
        Line::Trace => 't',
        Line::Summary => 'S',
        Line::Stats => 'x',
        Line::Loader | Line::Other => 'o',
    }
}

/// Source files by the name the debug info uses, merged when two names find the same file.
struct FileTable {
    /// `(display name, found path, names)`.
    entries: Vec<FileEntry>,
    by_name: HashMap<Vec<u8>, usize>,
}

struct FileEntry {
    name: String,
    file: Option<std::sync::Arc<crate::SourceFile>>,
    /// Lines with code, and their BTF text when known (for excerpts and missing files).
    lines: std::collections::BTreeMap<u32, String>,
}

impl FileTable {
    fn id(&mut self, name: &[u8], files: &mut SourceFiles) -> usize {
        let name = name.strip_prefix(b"./").unwrap_or(name);
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let file = files.get(name);
        let same = file.as_ref().and_then(|f| {
            self.entries.iter().position(|e| {
                // One file however named: the cache hands out one `Arc` per file.
                e.file
                    .as_ref()
                    .is_some_and(|g| std::sync::Arc::ptr_eq(g, f))
            })
        });
        // Without the file, names that agree on the base name are one file (as `locate` does).
        let same = same.or_else(|| {
            if file.is_some() {
                return None;
            }
            let base = |p: &[u8]| memchr::memrchr(b'/', p).map_or(p, |i| &p[i + 1..]).to_vec();
            self.entries
                .iter()
                .position(|e| e.file.is_none() && base(e.name.as_bytes()) == base(name))
        });
        let id = same.unwrap_or_else(|| {
            self.entries.push(FileEntry {
                name: String::from_utf8_lossy(name).into_owned(),
                file,
                lines: Default::default(),
            });
            self.entries.len() - 1
        });
        self.by_name.insert(name.to_vec(), id);
        id
    }
}

/// The `#bpflog-data` object.
fn data<'p>(
    program: &'p Program<'_, '_>,
    title: &str,
    streamed: Streamed,
    options: &ReportOptions,
) -> Data<'p> {
    let Streamed {
        mut profile,
        explanation,
        load_failure,
        kinds,
        jumps,
        ..
    } = streamed;
    let files = &mut SourceFiles::new(options.sources.clone());
    profile.fill_sources(files);
    let profile = &profile;
    let mut table = FileTable {
        entries: Vec::new(),
        by_name: HashMap::new(),
    };
    // Source lines: the profile's, in file and line order.
    let mut src_lines: Vec<&crate::profile::LineProfile> = profile.lines.iter().collect();
    src_lines.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let mut src_id: HashMap<(&str, u32), usize> = HashMap::new();
    let mut src = Vec::with_capacity(src_lines.len());
    let mut file_visits: HashMap<usize, u64> = HashMap::new();
    for (k, l) in src_lines.iter().enumerate() {
        let file = table.id(l.file.as_bytes(), files);
        *file_visits.entry(file).or_insert(0) += l.counts.visits;
        table.entries[file]
            .lines
            .entry(l.line)
            .or_insert_with(|| l.source.clone());
        src_id.insert((l.file.as_str(), l.line), k);
        src.push((
            file,
            l.line,
            l.counts.visits,
            l.counts.insns,
            l.counts.paths,
        ));
    }
    // Per loaded instruction: its source line (the kernel's record) and its location.
    let len = program.lines.program_len();
    let mut insn_src = Vec::with_capacity(len as usize);
    let mut insn_loc = Vec::with_capacity(len as usize);
    let mut locs: Vec<PageLocation<'p>> = Vec::new();
    let mut loc_ids: HashMap<PageLocation<'p>, usize> = HashMap::new();
    let mut loc_of =
        |src: Option<InsnSource<'p>>, table: &mut FileTable, files: &mut SourceFiles| {
            let Some(src) = src else {
                return -1i64;
            };
            let file = table.id(src.file, files);
            table.entries[file].lines.entry(src.line).or_default();
            let chain: Vec<(&str, i64, u32, u32)> = src
                .inlined
                .iter()
                .map(|step| match step.call_site {
                    Some((f, line, col)) => {
                        let f = table.id(f, files);
                        table.entries[f].lines.entry(line).or_default();
                        (step.caller, f as i64, line, col)
                    }
                    None => (step.caller, -1, 0, 0),
                })
                .collect();
            let key = (file, src.line, src.column, src.function, chain);
            let next = locs.len();
            let id = *loc_ids.entry(key).or_insert_with_key(|key| {
                locs.push(key.clone());
                next
            });
            id as i64
        };
    for index in 0..len {
        let row = program.lines.find(index);
        insn_src.push(
            row.and_then(|r| {
                src_id
                    .get(&(String::from_utf8_lossy(r.file).as_ref(), r.line))
                    .copied()
            })
            .map_or(-1, |k| k as i64),
        );
        insn_loc.push(loc_of(locate(program, index), &mut table, files));
    }
    let diag = explanation.as_ref().map(|e| {
        let f = &e.report;
        let loc = u32::try_from(f.index)
            .ok()
            .map_or(-1, |i| loc_of(locate(program, i), &mut table, files));
        let stack: Vec<Value> = f
            .stack
            .iter()
            .map(|&call| {
                let loc = u32::try_from(call)
                    .ok()
                    .map_or(-1, |i| loc_of(locate(program, i), &mut table, files));
                json!([call, loc])
            })
            .collect();
        let insn_text = f.insn_line.split(|&b| b == b';').next().unwrap_or_default();
        json!({
            "errors": f.errors.iter().map(|(line, text)| json!([line, lossy(text)])).collect::<Vec<_>>(),
            "insn": f.index,
            "insn_text": lossy(insn_text).trim_end(),
            "loc": loc,
            "stack": stack,
            "pass": f.pass.as_deref().map(lossy),
            "state": f.state.as_ref().map(|(at, text)| json!([at, lossy(text)])),
        })
    });
    let explain = explanation.as_ref().map(|e| {
        let steps: Vec<Value> = (e.chain.iter())
            .map(|step| {
                let row = step.read_at.map_or(-1, |r| i64::try_from(r).unwrap_or(-1));
                let loc = u32::try_from(step.location.insn)
                    .ok()
                    .map_or(-1, |i| loc_of(locate(program, i), &mut table, files));
                json!([row, loc])
            })
            .collect();
        let mut value = e.to_json();
        if let Value::Object(members) = &mut value {
            members.insert("title".into(), e.class().title.into());
            members.insert("requires".into(), e.class().requires.into());
            members.insert("steps".into(), steps.into());
        }
        value
    });
    let file_values: Vec<Value> = table
        .entries
        .iter()
        .enumerate()
        .map(|(k, e)| file_value(e, file_visits.get(&k).copied().unwrap_or(0)))
        .collect();
    let s = &profile.summary;
    let Value::Object(rest) = json!({
        "version": REPORT_DATA_VERSION,
        "title": title,
        "program": profile.program,
        "loader": program.loader.name(),
        "line_count": kinds.len(),
        "files": file_values,
        "functions": profile.functions.iter().map(|f| json!([f.name, f.kind.as_str(), f.counts.visits, f.counts.insns, f.counts.paths])).collect::<Vec<_>>(),
        "summary": {
            "verdict": s.verdict.as_str(),
            "error": s.error,
            "insns": s.insns,
            "insns_limit": s.insns_limit,
            "max_states_per_insn": s.max_states_per_insn,
            "total_states": s.total_states,
            "peak_states": s.peak_states,
            "mark_read": s.mark_read,
            "duration": s.duration,
            "stack_depth": s.stack_depth(),
        },
        "totals": {
            "insn_lines": profile.totals.insn_lines,
            "paths": profile.totals.paths,
            "unattributed": profile.totals.unattributed,
        },
        "diag": diag,
        "explain": explain,
    }) else {
        unreachable!("an object literal is an object")
    };
    let mut rest = rest;
    if let Some(f) = &load_failure {
        rest.insert("load_failed".into(), json!([f.line, f.to_string()]));
    }
    Data {
        rest,
        kinds,
        jumps,
        src,
        insn_src,
        locs,
        insn_loc,
    }
}

/// One file: its whole text when found and not too large, otherwise the lines that matter
/// (with context from the file, or the text BTF stores).
fn file_value(entry: &FileEntry, visits: u64) -> Value {
    match &entry.file {
        Some(f) => {
            let whole = (1..=f.line_count())
                .map(|n| f.line(n).map_or(0, |t| t.len() + 1))
                .sum::<usize>();
            if whole <= WHOLE_FILE_LIMIT {
                let text: Vec<String> = (1..=f.line_count())
                    .map(|n| lossy(f.line(n).unwrap_or_default()))
                    .collect();
                return json!({
                    "name": entry.name,
                    "found": true,
                    "visits": visits,
                    "text": text.join("\n"),
                    "excerpt": null,
                });
            }
            let mut keep = std::collections::BTreeMap::new();
            for &n in entry.lines.keys() {
                let from = n.saturating_sub(EXCERPT_CONTEXT).max(1);
                let to = n.saturating_add(EXCERPT_CONTEXT).min(f.line_count());
                for k in from..=to {
                    keep.entry(k)
                        .or_insert_with(|| lossy(f.line(k).unwrap_or_default()));
                }
            }
            json!({
                "name": entry.name,
                "found": true,
                "visits": visits,
                "text": null,
                "excerpt": keep.into_iter().map(|(n, t)| json!([n, t])).collect::<Vec<_>>(),
            })
        }
        None => json!({
            "name": entry.name,
            "found": false,
            "visits": visits,
            "text": null,
            "excerpt": entry.lines.iter().map(|(n, t)| json!([n, t])).collect::<Vec<_>>(),
        }),
    }
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A writer of JSON text that escapes what must not appear inside `<script>`: `<`, U+2028 and
/// U+2029 (they can only occur inside strings).
struct ScriptSafe<'w, W: Write> {
    out: &'w mut W,
    /// How many bytes of a possible U+2028 or U+2029 (E2 80 A8, E2 80 A9) ended the last write
    /// and were held back.
    held: usize,
}

impl<W: Write> ScriptSafe<'_, W> {
    /// Writes what was held back.
    fn finish(&mut self) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        self.out.write_all(&[0xe2, 0x80][..held])
    }
}

impl<W: Write> Write for ScriptSafe<'_, W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // The bytes held back, then these: looked at as one text.
        let held = std::mem::take(&mut self.held);
        let mut text: Vec<u8>;
        let all: &[u8] = if held > 0 {
            text = [0xe2, 0x80][..held].to_vec();
            text.extend_from_slice(data);
            &text
        } else {
            data
        };
        let mut from = 0;
        let mut i = 0;
        while let Some(k) = memchr::memchr2(b'<', 0xe2, &all[i..]) {
            let at = i + k;
            let rest = &all[at..];
            let (escape, len): (&[u8], usize) = match rest {
                [b'<', ..] => (b"\\u003c", 1),
                [0xe2, 0x80, 0xa8, ..] => (b"\\u2028", 3),
                [0xe2, 0x80, 0xa9, ..] => (b"\\u2029", 3),
                // A sequence the next write may finish.
                [0xe2] | [0xe2, 0x80] => {
                    self.out.write_all(&all[from..at])?;
                    self.held = rest.len();
                    return Ok(data.len());
                }
                _ => {
                    i = at + 1;
                    continue;
                }
            };
            self.out.write_all(&all[from..at])?;
            self.out.write_all(escape)?;
            from = at + len;
            i = from;
        }
        self.out.write_all(&all[from..])?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Writes `s` escaped as HTML text.
fn write_html_text(out: &mut impl Write, s: &str) -> io::Result<()> {
    for c in s.chars() {
        match c {
            '<' => out.write_all(b"&lt;")?,
            '>' => out.write_all(b"&gt;")?,
            '&' => out.write_all(b"&amp;")?,
            '"' => out.write_all(b"&quot;")?,
            c => write!(out, "{c}")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s` as the data block writes a string: bpflog's JSON, made safe inside `<script>`.
    fn body(s: &str) -> String {
        let mut out = Vec::new();
        let mut safe = ScriptSafe {
            out: &mut out,
            held: 0,
        };
        crate::json::write(&mut safe, crate::json::JsonLayout::Compact, &s).unwrap();
        safe.finish().unwrap();
        let quoted = String::from_utf8(out).unwrap();
        quoted[1..quoted.len() - 1].to_string()
    }

    #[test]
    fn strings_are_json_and_cannot_close_the_script() {
        assert_eq!(body("a\"b\\c"), "a\\\"b\\\\c");
        assert_eq!(body("</script><!--"), "\\u003c/script>\\u003c!--");
        // Controls as bpflog's JSON writes them: DEL and C1 too.
        assert_eq!(
            body("\u{0}\u{1f}\u{7f}\u{9b}\t\r"),
            "\\u0000\\u001f\\u007f\\u009b\\t\\r"
        );
        assert_eq!(body("x\u{2028}y\u{2029}é"), "x\\u2028y\\u2029é");
        let lossy = String::from_utf8_lossy(b"R1=\xff\xfe ok");
        assert_eq!(body(&lossy), "R1=\u{fffd}\u{fffd} ok");
        // Every escaped body parses back to the original as a JSON string.
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        let parsed: String = serde_json::from_str(&format!("\"{}\"", body(&all))).unwrap();
        assert_eq!(parsed, all);
    }

    #[test]
    fn the_template_has_every_placeholder_once_in_order() {
        let mut at = 0;
        for marker in ["{{TITLE}}", "{{CSS}}", "{{LOG}}", "{{DATA}}", "{{JS}}"] {
            assert_eq!(TEMPLATE.matches(marker).count(), 1, "{marker}");
            let found = TEMPLATE.find(marker).unwrap();
            assert!(found > at, "{marker} out of order");
            at = found;
        }
    }

    #[test]
    fn script_json_is_escaped_across_writes() {
        // The text cut at every place, separators and brackets across the cuts.
        let text = "a<b\u{2028}c\u{2029}d\u{e9}\u{2027}<\u{2028}";
        let expected = "a\\u003cb\\u2028c\\u2029d\u{e9}\u{2027}\\u003c\\u2028";
        let bytes = text.as_bytes();
        for cut in 0..=bytes.len() {
            for second in cut..=bytes.len() {
                let mut out = Vec::new();
                let mut safe = ScriptSafe {
                    out: &mut out,
                    held: 0,
                };
                for piece in [&bytes[..cut], &bytes[cut..second], &bytes[second..]] {
                    safe.write_all(piece).unwrap();
                }
                safe.finish().unwrap();
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    expected,
                    "cut at {cut}, {second}"
                );
            }
        }
    }
}
