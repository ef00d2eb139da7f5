//! Finding verifier logs inside what loaders print around them.
//!
//! Users paste whatever their tool printed. A [`Deframer`] reads a file line by line and says,
//! for each line, whether it belongs to a program's log and with which prefix, and where one
//! program's log ends and the next begins. It knows:
//!
//! - libbpf (bpftool -d, any libbpf-based tool's stderr): `libbpf: prog 'NAME': -- BEGIN PROG LOAD
//!   LOG --` ... `-- END PROG LOAD LOG --` (`bpf_object_load_prog` in tools/lib/bpf/libbpf.c);
//! - veristat -v: `PROCESSING FILE/PROG, DURATION US: N, VERDICT: V, VERIFIER LOG:` then the log
//!   (`process_prog` in tools/testing/selftests/bpf/veristat.c);
//! - cilium/ebpf's `VerifierError` printed with `%+v`: `...program NAME: load program: CAUSE:` then
//!   each log line behind a tab (`VerifierError.Format` in internal/errors.go);
//! - aya's `ProgramError::LoadError`: `... Verifier output: ` followed on the same line by the
//!   log's first line, the log ending at its `processed ...` summary.
//!
//! A file without any of these is one bare log; libbpf's own messages (`libbpf: ...`) that come
//! before any line of the kernel's are the loader's, around the logs.

use bpflog_log::{InsnLine, Line, classify, is_loader, is_stats, is_summary};

/// How a log is wrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Wrapper {
    /// No wrapper: the file is a log.
    Bare,
    /// libbpf's `-- BEGIN PROG LOAD LOG --` block.
    Libbpf,
    /// veristat -v's `PROCESSING ... VERIFIER LOG:` block.
    Veristat,
    /// cilium/ebpf's tab-indented `%+v` error.
    Cilium,
    /// aya's `Verifier output: ` error.
    Aya,
    /// The kernel selftests' test_progs (`test_loader.c`): `VERIFIER LOG:`, a rule of `=`, the
    /// log, the rule again.
    TestProgs,
}

impl Wrapper {
    /// The wrapper's name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Wrapper::Bare => "bare",
            Wrapper::Libbpf => "libbpf",
            Wrapper::Veristat => "veristat",
            Wrapper::Cilium => "cilium/ebpf",
            Wrapper::Aya => "aya",
            Wrapper::TestProgs => "test_progs",
        }
    }
}

/// A program's log begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentStart {
    /// How it is wrapped.
    pub wrapper: Wrapper,
    /// The program's name, when the wrapper gives it.
    pub program: Option<String>,
    /// The loader's line before the log that says the load of its program failed, when it
    /// names the log's program or no program.
    pub load_failed: Option<LoadFailed>,
}

/// The loader's line that says the load of a log's program failed (libbpf's `libbpf: prog
/// 'PROG': BPF program load failed: REASON`, or an older libbpf's `libbpf: load bpf program
/// failed: REASON`), before the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailed {
    /// How many lines before the log's first line (its wrapper's) it is.
    pub before: u64,
    /// Its text, cut and escaped for a message.
    pub text: String,
}

impl LoadFailed {
    /// Where it is, for the log that starts on line `log_line`.
    pub fn at(self, log_line: u64) -> LoadFailedAt {
        LoadFailedAt {
            log_line,
            line: log_line.saturating_sub(self.before),
            text: self.text,
        }
    }
}

/// A [`LoadFailed`] placed in its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadFailedAt {
    /// The line (from 1) the log it belongs to starts on ...
    pub log_line: u64,
    /// ... and the loader's line's own.
    pub line: u64,
    /// Its text, cut and escaped for a message.
    pub text: String,
}

/// What one line of the file is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Deframed {
    /// The log open so far ends before this line.
    pub ends: bool,
    /// A log starts at this line.
    pub starts: Option<SegmentStart>,
    /// This line is a line of the open log: its first `prefix` bytes are the wrapper's, the rest
    /// is the kernel's. `None`: the line is outside any log.
    pub prefix: Option<usize>,
    /// Lines written before an inserted annotation line inside this log (cilium's tab).
    pub indent: &'static [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// The input's first lines, none of them the kernel's yet: a bare log's (it may start with
    /// its error, or be cut), unless a loader's message ([`is_loader`]) says the input is a
    /// loader's output.
    Start,
    /// After a loader's messages, before any log: the next line of the kernel's opens a bare
    /// log (cut at the top, or whole), as a wrapper's line opens its log.
    Loader,
    /// Inside a log of this wrapper.
    In(Wrapper),
    /// Outside any log (after a wrapped log ended).
    Out,
    /// Inside an aya log after its summary line: stats lines may follow, then it ends.
    AyaAfterSummary,
    /// Inside a bare log after its summary line: stats lines may follow, then the next log may
    /// start (logs pasted one after another).
    BareAfterSummary,
    /// Inside the one log the whole input is ([`Deframer::whole`]): every line its own.
    Whole,
}

const LIBBPF_BEGIN: &[u8] = b": -- BEGIN PROG LOAD LOG --";
const LIBBPF_END: &[u8] = b"-- END PROG LOAD LOG --";
const TEST_PROGS_RULE: &[u8] = b"=============";
const AYA_MARK: &[u8] = b"Verifier output: ";
/// Every line is searched for aya's mark: the searcher is built once.
static AYA_FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(AYA_MARK));

/// Splits a file into program logs, line by line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deframer {
    state: Framing,
    /// The program a line ending in `:` named, for a cilium block that may follow it.
    cilium_header: Option<Option<String>>,
    /// The line before was test_progs' `VERIFIER LOG:`.
    test_progs_header: bool,
    /// [`quiet_framing`](Deframer::quiet_framing), worked out when the framing changes.
    framing_quiet: bool,
    /// The loader's line outside any log that said a load failed, for the next log: the
    /// program it names, and the line.
    load_failed: Option<Box<(Option<String>, LoadFailed)>>,
}

impl Default for Deframer {
    fn default() -> Self {
        Deframer {
            state: Framing::Start,
            cilium_header: None,
            test_progs_header: false,
            framing_quiet: false,
            load_failed: None,
        }
    }
}

impl Deframer {
    /// A deframer for an input that is one bare log and nothing else (what a loader holds):
    /// every line is the log's own, whole, and no wrapper or other log is looked for.
    pub fn whole() -> Self {
        Deframer {
            state: Framing::Whole,
            framing_quiet: true,
            ..Deframer::default()
        }
    }

    /// The deframer inside a bare log, its lines taken as they are: where a reader of a part of
    /// a file that starts at a line inside it starts (a log's line, as far as it can tell), and
    /// where a reader of the part before it must be for the two to be one pass.
    pub fn in_bare_log() -> Self {
        Deframer {
            state: Framing::In(Wrapper::Bare),
            framing_quiet: true,
            ..Deframer::default()
        }
    }

    /// Reads the next line (without its newline).
    #[inline]
    pub fn step(&mut self, line: &[u8]) -> Deframed {
        // Most lines are the open log's own and change nothing in the framing: told apart in
        // a few comparisons, for every reader of lines.
        if self.quiet(line) {
            return Deframed {
                prefix: Some(0),
                ..Deframed::default()
            };
        }
        let step = self.step_framing(line);
        self.framing_quiet = (matches!(self.state, Framing::In(w) if w != Wrapper::Cilium)
            || self.state == Framing::Whole)
            && self.cilium_header.is_none()
            && !self.test_progs_header;
        step
    }

    /// What [`step`](Self::step) does with a line that is not [`quiet`](Self::quiet) (and
    /// would do with one that is: the test of `quiet` holds them to that).
    fn step_framing(&mut self, line: &[u8]) -> Deframed {
        if self.state == Framing::Whole {
            return Deframed {
                prefix: Some(0),
                ..Deframed::default()
            };
        }
        if let Some(failed) = &mut self.load_failed {
            failed.1.before += 1;
        }
        let header = std::mem::take(&mut self.cilium_header);
        let after_test_progs_header =
            std::mem::replace(&mut self.test_progs_header, line == b"VERIFIER LOG:");
        if after_test_progs_header && line == TEST_PROGS_RULE {
            self.state = Framing::In(Wrapper::TestProgs);
            return Deframed {
                ends: true,
                starts: Some(self.segment_start(Wrapper::TestProgs, None)),
                prefix: None,
                indent: b"",
            };
        }
        // Most lines are the kernel's own; none of those opens a wrapper.
        let opens = !is_kernel_line(line);
        if opens && let Some(program) = libbpf_begin(line) {
            self.state = Framing::In(Wrapper::Libbpf);
            return Deframed {
                ends: true,
                starts: Some(self.segment_start(Wrapper::Libbpf, program)),
                prefix: None,
                indent: b"",
            };
        }
        if opens && let Some(program) = veristat_begin(line) {
            self.state = Framing::In(Wrapper::Veristat);
            return Deframed {
                ends: true,
                starts: Some(self.segment_start(Wrapper::Veristat, program)),
                prefix: None,
                indent: b"",
            };
        }
        if opens && let Some(at) = AYA_FINDER.find(line) {
            self.state = Framing::In(Wrapper::Aya);
            return Deframed {
                ends: true,
                starts: Some(self.segment_start(Wrapper::Aya, None)),
                prefix: Some(at + AYA_MARK.len()),
                indent: b"",
            };
        }
        match self.state {
            // libbpf's chatter before the first log (`libbpf: prog 'p': BPF program load
            // failed: ...` before `-- BEGIN PROG LOAD LOG --`): no log's lines.
            Framing::Start | Framing::Loader if is_loader(line) => {
                let ended = self.state == Framing::Start;
                self.state = Framing::Loader;
                return self.outside(line, ended);
            }
            Framing::Start if !line.is_empty() && !opens => self.state = Framing::In(Wrapper::Bare),
            Framing::Start if is_summary(line) => self.state = Framing::BareAfterSummary,
            Framing::Loader if (!line.is_empty() && !opens) || starts_a_log(line) => {
                return self.bare_log();
            }
            Framing::In(Wrapper::Cilium) => {
                if line.first() == Some(&b'\t') {
                    return Deframed {
                        prefix: Some(1),
                        indent: b"\t",
                        ..Deframed::default()
                    };
                }
                self.state = Framing::Out;
                return self.outside(line, true);
            }
            Framing::In(Wrapper::TestProgs) if line == TEST_PROGS_RULE => {
                self.state = Framing::Out;
                return Deframed {
                    ends: true,
                    ..Deframed::default()
                };
            }
            Framing::In(Wrapper::Libbpf) if line == LIBBPF_END => {
                self.state = Framing::Out;
                return Deframed {
                    ends: true,
                    ..Deframed::default()
                };
            }
            Framing::In(Wrapper::Veristat) if veristat_end(line) => {
                self.state = Framing::Out;
                return Deframed {
                    ends: true,
                    ..Deframed::default()
                };
            }
            Framing::In(Wrapper::Aya) if line.starts_with(b"Caused by:") => {
                self.state = Framing::Out;
                return Deframed {
                    ends: true,
                    ..Deframed::default()
                };
            }
            Framing::In(Wrapper::Aya) => {
                if is_summary(line) {
                    self.state = Framing::AyaAfterSummary;
                }
                return Deframed {
                    prefix: Some(0),
                    ..Deframed::default()
                };
            }
            Framing::AyaAfterSummary => {
                if is_stats(line) {
                    return Deframed {
                        prefix: Some(0),
                        ..Deframed::default()
                    };
                }
                self.state = Framing::Out;
                return self.outside(line, true);
            }
            Framing::In(Wrapper::Bare) => {
                // `processed N insns ...` ends a log; another may follow it.
                if is_summary(line) {
                    self.state = Framing::BareAfterSummary;
                }
            }
            Framing::BareAfterSummary => {
                if is_stats(line) {
                    return Deframed {
                        prefix: Some(0),
                        ..Deframed::default()
                    };
                }
                self.state = Framing::Out;
                if starts_a_log(line) {
                    return self.bare_log();
                }
                return self.outside(line, true);
            }
            Framing::Out if starts_a_log(line) => return self.bare_log(),
            // A whole log was answered above.
            Framing::In(_) | Framing::Out | Framing::Whole | Framing::Start | Framing::Loader => {}
        }
        // A tab-indented log line right after `...: CAUSE:` opens a cilium/ebpf block.
        if let Some(program) = header
            && line.first() == Some(&b'\t')
            && !matches!(classify(&line[1..]), Line::Other | Line::Blank)
        {
            self.state = Framing::In(Wrapper::Cilium);
            return Deframed {
                ends: true,
                starts: Some(self.segment_start(Wrapper::Cilium, program)),
                prefix: Some(1),
                indent: b"\t",
            };
        }
        if line.ends_with(b":") {
            self.cilium_header = Some(cilium_program(line));
        }
        match self.state {
            Framing::In(_) | Framing::BareAfterSummary | Framing::Start => Deframed {
                prefix: Some(0),
                ..Deframed::default()
            },
            _ => {
                self.loader_line(line);
                Deframed::default()
            }
        }
    }

    /// Whether [`step`](Self::step) would take `line` as a whole line of the open log and change
    /// nothing: a kernel line that opens, closes and announces nothing, in a log whose lines carry
    /// no prefix. Far cheaper than `step`, for the bulk of a long log.
    #[inline(always)]
    pub fn quiet(&self, line: &[u8]) -> bool {
        self.quiet_framing() && !line.ends_with(b":") && is_kernel_line(line)
    }

    /// The part of [`quiet`](Self::quiet) that is the same for every line: whether the open log
    /// takes its kernel lines as they are. It holds until a line that is not quiet.
    #[inline]
    pub fn quiet_framing(&self) -> bool {
        self.framing_quiet
    }

    /// A bare log starts at this line.
    fn bare_log(&mut self) -> Deframed {
        self.state = Framing::In(Wrapper::Bare);
        Deframed {
            ends: true,
            starts: Some(self.segment_start(Wrapper::Bare, None)),
            prefix: Some(0),
            indent: b"",
        }
    }

    /// A line outside any log: a loader's line saying a load failed is kept for the log after
    /// it.
    fn loader_line(&mut self, line: &[u8]) {
        if let Some(program) = load_failed(line) {
            self.load_failed = Some(Box::new((
                program,
                LoadFailed {
                    before: 0,
                    text: bpflog_object::excerpt(line),
                },
            )));
        }
    }

    /// A log of `wrapper` starts, of the program it names: it takes the loader's line that
    /// said the load of that program (or of a program unnamed) failed, if one came before it.
    fn segment_start(&mut self, wrapper: Wrapper, program: Option<String>) -> SegmentStart {
        let load_failed = (self.load_failed.take())
            .filter(|f| f.0.is_none() || program.is_none() || f.0 == program)
            .map(|f| f.1);
        SegmentStart {
            wrapper,
            program,
            load_failed,
        }
    }

    /// A line outside any log; `ended` when it closes the log open before it.
    fn outside(&mut self, line: &[u8], ended: bool) -> Deframed {
        self.loader_line(line);
        if line.ends_with(b":") {
            self.cilium_header = Some(cilium_program(line));
        }
        Deframed {
            ends: ended,
            ..Deframed::default()
        }
    }
}

/// The first lines a kernel log can start with: `func#0 @0`, `0: R1=ctx() R10=fp0`, the first
/// instruction, or a global function's own pass.
fn starts_a_log(line: &[u8]) -> bool {
    matches!(
        classify(line),
        Line::FuncStart { func: 0, .. }
            | Line::State { index: 0 }
            | Line::Insn(InsnLine { index: 0, .. })
            | Line::Validating { .. }
    )
}

/// Lines that only the kernel prints: `N: ...`, `mark_precise: ...`, `; ...`, `from N to M`,
/// indented states, empty lines.
#[inline(always)]
pub(crate) fn is_kernel_line(line: &[u8]) -> bool {
    match line.first() {
        Some(b'0'..=b'9') => {
            let digits = leading_digits(line);
            line.get(digits..)
                .is_some_and(|rest| rest.starts_with(b": "))
        }
        // `;` annotations; indented states and liveness rows; blank lines.
        Some(b';' | b' ') | None => true,
        Some(b'm') => line.starts_with(b"mark_precise: "),
        Some(b'f') => line.starts_with(b"from ") || line.starts_with(b"func#"),
        _ => false,
    }
}

/// How many ASCII digits `line` starts with: the first 8 bytes told apart at once (an
/// instruction's index has fewer digits), the rest one by one.
#[inline(always)]
fn leading_digits(line: &[u8]) -> usize {
    if let Some(chunk) = line.first_chunk::<8>() {
        // A digit's byte is 0..=9 after the xor; adding 0x76 to any other sets its high bit
        // (or it is set already), and no sum carries into the next byte.
        let x = u64::from_le_bytes(*chunk) ^ 0x3030_3030_3030_3030;
        let other =
            (((x & 0x7f7f_7f7f_7f7f_7f7f) + 0x7676_7676_7676_7676) | x) & 0x8080_8080_8080_8080;
        if other != 0 {
            return (other.trailing_zeros() / 8) as usize;
        }
    }
    line.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// `libbpf: prog 'NAME': -- BEGIN PROG LOAD LOG --` → `Some(Some(NAME))`.
fn libbpf_begin(line: &[u8]) -> Option<Option<String>> {
    if !line.ends_with(LIBBPF_BEGIN) {
        return None;
    }
    let head = &line[..line.len() - LIBBPF_BEGIN.len()];
    Some(quoted_after(head, b"prog '"))
}

/// The loader's line, printed before the log, that says the `bpf(BPF_PROG_LOAD)` call failed:
/// libbpf's `libbpf: prog 'PROG': BPF program load failed: REASON` (libbpf 0.7 to 1.7) →
/// `Some(Some(PROG))`; an older libbpf's `libbpf: load bpf program failed: REASON`, which names
/// no program → `Some(None)`.
fn load_failed(line: &[u8]) -> Option<Option<String>> {
    if line.starts_with(b"libbpf: load bpf program failed: ") {
        return Some(None);
    }
    let rest = line.strip_prefix(b"libbpf: prog '")?;
    let end = memchr::memchr(b'\'', rest)?;
    rest[end..]
        .starts_with(b"': BPF program load failed: ")
        .then(|| Some(String::from_utf8_lossy(&rest[..end]).into_owned()))
}

/// `PROCESSING FILE/PROG, DURATION US: N, VERDICT: V, VERIFIER LOG:` → `Some(Some(PROG))`.
fn veristat_begin(line: &[u8]) -> Option<Option<String>> {
    let rest = line.strip_prefix(b"PROCESSING ")?;
    if !line.ends_with(b", VERIFIER LOG:") {
        return None;
    }
    let comma = memchr::memmem::find(rest, b", DURATION US: ")?;
    let path = &rest[..comma];
    let slash = memchr::memrchr(b'/', path)?;
    Some(
        std::str::from_utf8(&path[slash + 1..])
            .ok()
            .map(str::to_owned),
    )
}

/// The end of a veristat log: its results table or final count.
fn veristat_end(line: &[u8]) -> bool {
    let table = line.starts_with(b"File ")
        && memchr::memmem::find(line, b"Program").is_some()
        && memchr::memmem::find(line, b"Verdict").is_some();
    table || line.starts_with(b"Done. Processed ")
}

/// The NAME in `... program NAME: ...` of a cilium/ebpf error header.
fn cilium_program(line: &[u8]) -> Option<String> {
    let at = memchr::memmem::find(line, b"program ")? + 8;
    let rest = &line[at..];
    let end = rest.iter().position(|&b| b == b':' || b == b' ')?;
    (end > 0).then(|| String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The text between `open` and the next `'`.
fn quoted_after(line: &[u8], open: &[u8]) -> Option<String> {
    let at = memchr::memmem::find(line, open)? + open.len();
    let rest = &line[at..];
    let end = memchr::memchr(b'\'', rest)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_digits_are_counted_as_one_by_one() {
        // Every byte after a run of digits of every length, in lines shorter and longer than 8.
        for digits in 0..12 {
            for after in 0..=255u8 {
                for tail in [&b""[..], b"x", b"123: (bf) r1 = r2"] {
                    let mut line = vec![b'7'; digits];
                    line.push(after);
                    line.extend_from_slice(tail);
                    let expected = line.iter().take_while(|b| b.is_ascii_digit()).count();
                    assert_eq!(leading_digits(&line), expected, "{line:?}");
                    assert_eq!(leading_digits(&line[..digits]), digits);
                }
            }
        }
    }

    fn steps(text: &str) -> Vec<Deframed> {
        let mut d = Deframer::default();
        text.lines().map(|l| d.step(l.as_bytes())).collect()
    }

    /// Every fixture log, bare and inside each wrapper, with the lines around that set the
    /// deframer's flags (a header ending in `:`, `VERIFIER LOG:`) in front of kernel lines.
    fn wrapped_fixture_logs() -> Vec<Vec<u8>> {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut files = Vec::new();
        for dir in ["logs", "wrapped"] {
            for entry in std::fs::read_dir(fixtures.join(dir)).unwrap() {
                files.push(std::fs::read(entry.unwrap().path()).unwrap());
            }
        }
        let mut inputs = Vec::new();
        for log in &files {
            let tabbed: Vec<u8> = log
                .split_inclusive(|&b| b == b'\n')
                .flat_map(|l| [&b"\t"[..], l].concat())
                .collect();
            let wrap = |head: &[u8], body: &[u8], tail: &[u8]| [head, body, tail].concat();
            inputs.push(log.clone());
            inputs.push(wrap(
                b"libbpf: prog 'p': -- BEGIN PROG LOAD LOG --\n",
                log,
                b"-- END PROG LOAD LOG --\nlibbpf: done:\n  1: R1=0\n",
            ));
            inputs.push(wrap(
                b"PROCESSING a.o/p, DURATION US: 5, VERDICT: failure, VERIFIER LOG:\n",
                log,
                b"Done. Processed 1 files\nx:\n mark_precise: x\n",
            ));
            inputs.push(wrap(
                b"VERIFIER LOG:\n=============\n",
                log,
                b"=============\n",
            ));
            inputs.push(wrap(b"VERIFIER LOG:\n 0: R1=ctx()\n", log, b""));
            inputs.push(wrap(
                b"load program p: program p: permission denied:\n",
                &tabbed,
                b"after\n",
            ));
            inputs.push(wrap(b"Error: Verifier output: ", log, b"Caused by:\n  x\n"));
            inputs.push(wrap(b"a header:\n", log, b"x:\n\t 1: R1=0\n"));
            // A cilium block that a bare kernel line ends.
            inputs.push(wrap(b"program p: load program: x:\n", &tabbed, log));
            // `VERIFIER LOG:` inside an aya log, where it sets no cilium header.
            inputs.push(wrap(
                b"Verifier output: 0: (b7) r0 = 0\nVERIFIER LOG:\n",
                log,
                b"",
            ));
        }
        // Kernel lines that end in `:`, as an old kernel's annotation of a C label would.
        inputs
            .push(b"0: (b7) r0 = 0\n; out:\n mark_precise: x:\n 1: R1=0\nfrom 1 to 2:\n".to_vec());
        inputs
    }

    #[test]
    fn a_quiet_line_is_one_step_would_take_whole_and_change_nothing() {
        let mut quiet = 0;
        for input in wrapped_fixture_logs() {
            let mut d = Deframer::default();
            for line in input.split(|&b| b == b'\n') {
                if d.quiet(line) {
                    quiet += 1;
                    let mut stepped = d.clone();
                    let step = stepped.step_framing(line);
                    let whole = Deframed {
                        prefix: Some(0),
                        ..Deframed::default()
                    };
                    let text = String::from_utf8_lossy(line);
                    assert_eq!(step, whole, "{text}");
                    assert_eq!(stepped, d, "{text}");
                }
                d.step(line);
            }
        }
        assert!(quiet > 40_000, "{quiet}");
    }

    #[test]
    fn a_whole_log_takes_every_line_as_its_own_and_looks_for_no_wrapper() {
        let whole = Deframed {
            prefix: Some(0),
            ..Deframed::default()
        };
        let mut quiet = 0;
        for input in wrapped_fixture_logs() {
            let mut d = Deframer::whole();
            for line in input.split(|&b| b == b'\n') {
                let text = String::from_utf8_lossy(line);
                quiet += usize::from(d.quiet(line));
                assert_eq!(d.step(line), whole, "{text}");
                assert_eq!(d, Deframer::whole(), "{text}");
            }
        }
        // Kernel lines are taken by the fast path, as in a bare log.
        assert!(quiet > 40_000, "{quiet}");
    }

    #[test]
    fn a_file_without_wrappers_is_one_bare_log() {
        let s = steps("0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\nprocessed 1 insns (limit 1000000)");
        assert!(
            s.iter()
                .all(|s| s.prefix == Some(0) && s.starts.is_none() && !s.ends)
        );
    }

    #[test]
    fn bare_logs_one_after_another_are_separate_logs() {
        let s = steps(
            "0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\nprocessed 1 insns (limit 1000000)\nverification time 3 usec\nfunc#0 @0\n0: (b7) r0 = 1\nprocessed 1 insns (limit 1000000)\nbpflog: done\n0: R1=ctx() R10=fp0",
        );
        assert!(
            s[..4]
                .iter()
                .all(|s| s.prefix == Some(0) && s.starts.is_none()),
            "stats stay with their log"
        );
        assert!(
            s[4].ends && s[4].starts.is_some() && s[4].prefix == Some(0),
            "func#0 @0 starts the next"
        );
        assert!(
            s[7].ends && s[7].prefix.is_none(),
            "chatter after a summary is outside"
        );
        assert!(
            s[8].starts.is_some() && s[8].prefix == Some(0),
            "a state at 0 starts a log"
        );
    }

    #[test]
    fn test_progs_blocks() {
        let s = steps(
            "#12/3 verifier_x/bad:FAIL\nVERIFIER LOG:\n=============\n0: (b7) r0 = 0\nR0 !read_ok\nprocessed 1 insns (limit 1000000)\n=============\n#12/4 verifier_x/good:OK",
        );
        assert_eq!(
            s[2].starts.as_ref().map(|s| s.wrapper),
            Some(Wrapper::TestProgs)
        );
        assert_eq!(
            (s[3].prefix, s[4].prefix, s[5].prefix),
            (Some(0), Some(0), Some(0))
        );
        assert!(s[6].ends && s[6].prefix.is_none());
        assert_eq!(s[7], Deframed::default());
    }

    #[test]
    fn libbpf_blocks_with_chatter_around() {
        let s = steps(
            "libbpf: loading object 'x.o'\nlibbpf: prog 'xdp_a': -- BEGIN PROG LOAD LOG --\n0: (b7) r0 = 0\n-- END PROG LOAD LOG --\nlibbpf: prog 'xdp_a': failed to load: -13",
        );
        // libbpf's own line: the loader's, no log's (it ends the bare log the input may have
        // been, empty).
        assert!(s[0].ends && s[0].prefix.is_none() && s[0].starts.is_none());
        assert_eq!(
            s[1].starts,
            Some(SegmentStart {
                wrapper: Wrapper::Libbpf,
                program: Some("xdp_a".into()),
                load_failed: None,
            })
        );
        assert_eq!(s[1].prefix, None);
        assert_eq!(s[2].prefix, Some(0));
        assert!(s[3].ends && s[3].prefix.is_none());
        assert_eq!(s[4], Deframed::default());
    }

    #[test]
    fn loader_lines_before_any_kernel_line_are_no_logs() {
        let outside = |s: &Deframed| s.prefix.is_none() && s.starts.is_none();
        // A line of another program's, then libbpf's chatter, then a log cut at the top, not
        // wrapped: the first line may have been a bare log's (it ends there), the chatter is
        // outside, the kernel's first line opens a bare log.
        let s = steps(
            "loading x.o\nlibbpf: prog 'xdp_a': BPF program load failed: Permission denied\nlibbpf: prog 'xdp_a': failed to load: -13\n\n37: (77) r3 >>= 32\nlibbpf: late\nR1 invalid mem access 'scalar'\n",
        );
        assert_eq!(s[0].prefix, Some(0));
        assert!(s[1].ends && outside(&s[1]));
        assert!(!s[2].ends && outside(&s[2]));
        assert!(!s[3].ends && outside(&s[3]));
        // The loader's line that said the load failed is the log's after it, three lines on.
        let failed = LoadFailed {
            before: 3,
            text: "libbpf: prog 'xdp_a': BPF program load failed: Permission denied".into(),
        };
        let bare = Some(SegmentStart {
            wrapper: Wrapper::Bare,
            program: None,
            load_failed: None,
        });
        let failed_bare = Some(SegmentStart {
            load_failed: Some(failed),
            ..bare.clone().unwrap()
        });
        assert_eq!(s[4].starts, failed_bare);
        assert_eq!(s[4].prefix, Some(0));
        // Inside the log, a loader's line is the log's (classified as the loader's).
        assert_eq!((s[5].prefix, s[6].prefix), (Some(0), Some(0)));
        assert_eq!(classify(b"libbpf: late"), Line::Loader);
        // A log's first line, a wrapper's: as without chatter.
        let s = steps("libbpf: x\nValidating f() func#1...\n");
        assert_eq!(s[1].starts, bare);
        // A log that starts with its error: the kernel's lines, then chatter after its end.
        let s = steps(
            "unknown opcode 8d\nprocessed 0 insns (limit 1000000) max_states_per_insn 0\nlibbpf: prog 'p': failed to load: -22\n",
        );
        assert_eq!((s[0].prefix, s[1].prefix), (Some(0), Some(0)));
        assert!(s[2].ends && outside(&s[2]));
    }

    #[test]
    fn veristat_blocks() {
        let s = steps(
            "PROCESSING obj/x.o/xdp_a, DURATION US: 12, VERDICT: failure, VERIFIER LOG:\n0: (b7) r0 = 0\n\nPROCESSING obj/x.o/xdp_b, DURATION US: 3, VERDICT: success, VERIFIER LOG:\nprocessed 1 insns (limit 1000000)\nFile  Program  Verdict\n",
        );
        assert_eq!(
            s[0].starts.as_ref().unwrap().program.as_deref(),
            Some("xdp_a")
        );
        assert_eq!(s[2].prefix, Some(0));
        assert!(s[3].ends);
        assert_eq!(
            s[3].starts.as_ref().unwrap().program.as_deref(),
            Some("xdp_b")
        );
        assert!(s[5].ends && s[5].prefix.is_none());
    }

    #[test]
    fn cilium_blocks_are_tab_indented_after_their_header() {
        let s = steps(
            "field Xdp: program xdp_a: load program: permission denied:\n\t0: R1=ctx() R10=fp0\n\t0: (b7) r0 = 0\n\t(3 line(s) omitted)\nexit status 1",
        );
        assert_eq!(s[0].prefix, Some(0));
        assert_eq!(
            s[1].starts,
            Some(SegmentStart {
                wrapper: Wrapper::Cilium,
                program: Some("xdp_a".into()),
                load_failed: None,
            })
        );
        assert_eq!((s[1].prefix, s[1].indent), (Some(1), &b"\t"[..]));
        assert_eq!(s[3].prefix, Some(1));
        assert!(s[4].ends && s[4].prefix.is_none());
    }

    #[test]
    fn aya_logs_start_mid_line_and_end_after_their_summary() {
        let s = steps(
            "Error: the BPF_PROG_LOAD syscall failed. Verifier output: 0: R1=ctx() R10=fp0\n0: (b7) r0 = 0\nprocessed 1 insns (limit 1000000)\nverification time 5 usec\n\nCaused by:\n    Permission denied (os error 13)",
        );
        let first = &s[0];
        assert_eq!(first.starts.as_ref().unwrap().wrapper, Wrapper::Aya);
        assert_eq!(
            first.prefix,
            Some("Error: the BPF_PROG_LOAD syscall failed. Verifier output: ".len())
        );
        assert_eq!(s[2].prefix, Some(0));
        assert_eq!(
            s[3].prefix,
            Some(0),
            "stats after the summary belong to the log"
        );
        assert!(s[4].ends && s[4].prefix.is_none());
        assert_eq!(s[5], Deframed::default());
    }
}
