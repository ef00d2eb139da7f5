//! The summary a verifier log ends with: verdict, error, and the kernel's statistics.
//!
//! The kernel's `print_verification_stats` (kernel/bpf/verifier.c) prints, with log level 4
//! (`BPF_LOG_STATS`), `verification time N usec` and `stack depth A+B+...` (one stack depth per
//! subprogram, `func#0` first), then always `processed N insns (limit M) max_states_per_insn N
//! total_states N peak_states N mark_read N` (before Linux 5.2: `processed N insns (limit M),
//! stack depth A+B`). An error is printed before all of that, right after the instruction that
//! failed.
//!
//! Names follow veristat's (tools/testing/selftests/bpf/veristat.c, `stat_defs`): `verdict`,
//! `duration` (us, from `verification time`), `insns` (alias of `total_insns`), `total_states`,
//! `peak_states`, `max_states_per_insn`, `mark_read` (alias of `max_mark_read_len`), and
//! `stack_depth`, which veristat's `parse_verif_log` computes as the sum of the `+`-separated
//! depths of `stack depth A+B`.

use crate::sink::{Observer, observe_whole};
use bpflog_log::{InsnHead, Line, LogInput};
use std::io;

/// Whether the kernel accepted the program.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verdict {
    /// The log ends with its summary and no error before it.
    Accepted,
    /// Error lines precede the summary.
    Rejected,
    /// The log has no summary line (cut short, or not a verifier log).
    #[default]
    Unknown,
}

impl Verdict {
    /// `accepted`, `rejected` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::Unknown => "unknown",
        }
    }
}

/// What the log says about itself; a statistic the log does not carry is `None`.
///
/// A log holding several summaries (logs of several loads concatenated) is described by its
/// last one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// Accepted or rejected.
    pub verdict: Verdict,
    /// The error lines of a rejection: the unindented lines the classifier does not recognise
    /// after the last verification line and before the summary (the first 16 lines, each cut
    /// at 1024 bytes).
    pub error: Vec<String>,
    /// `insns`: instructions processed.
    pub insns: Option<u64>,
    /// The kernel's limit on processed instructions.
    pub insns_limit: Option<u64>,
    /// `max_states_per_insn`.
    pub max_states_per_insn: Option<u64>,
    /// `total_states`.
    pub total_states: Option<u64>,
    /// `peak_states`.
    pub peak_states: Option<u64>,
    /// `mark_read`: the longest mark-read walk.
    pub mark_read: Option<u64>,
    /// `duration`: the verification time in microseconds (log level 4).
    pub duration: Option<u64>,
    /// The stack depth of each subprogram, `func#0` first (log level 4).
    pub stack_depths: Option<Vec<u64>>,
}

impl Summary {
    /// The summary of the log read from `input`, one bare log, with no program to count it
    /// against (a loader that only wants the kernel's figures).
    pub fn read(input: impl LogInput) -> io::Result<Summary> {
        let mut reader = SummaryReader::default();
        observe_whole(input, &mut reader)?;
        Ok(reader.finish())
    }

    /// `stack_depth`: the sum of the subprograms' stack depths, as veristat reports it.
    pub fn stack_depth(&self) -> Option<u64> {
        self.stack_depths
            .as_ref()
            .map(|d| d.iter().fold(0u64, |a, b| a.saturating_add(*b)))
    }
}

/// Reads the summary out of the log's lines, with bounded memory.
#[derive(Debug, Default)]
pub(crate) struct SummaryReader {
    summary: Summary,
    /// Which fields of `summary` lines have set (one bit per field, see [`SummaryField`]): what a reader
    /// of later lines sets overrides an earlier reader's (see [`SummaryReader::join`]).
    written: u16,
    /// Candidate error lines, back to back, and where each ends.
    pending: Vec<u8>,
    ends: Vec<usize>,
}

/// The summary reader takes the lines the summary is made of: an instruction line only ends the
/// error lines read before it.
impl Observer for SummaryReader {
    #[inline]
    fn ignores_details(&self) -> bool {
        self.is_clear()
    }

    #[inline]
    fn insn_seen(&mut self, _: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        self.clear();
        true
    }

    #[inline]
    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], _: u64) {
        self.line(kind, payload);
    }
}

/// The fields of a [`Summary`], as bits of [`SummaryReader::written`].
#[derive(Clone, Copy)]
enum SummaryField {
    /// `verdict` and `error`, set together.
    Verdict,
    Insns,
    InsnsLimit,
    MaxStatesPerInsn,
    TotalStates,
    PeakStates,
    MarkRead,
    Duration,
    StackDepths,
}

impl SummaryReader {
    /// Error lines kept at most.
    const MAX_ERROR_LINES: usize = 16;
    /// Bytes kept of one error line at most.
    const MAX_ERROR_LINE: usize = 1024;

    /// Reads one classified line.
    pub(crate) fn line(&mut self, kind: &Line<'_>, content: &[u8]) {
        match kind {
            Line::Other if !content.starts_with(b" ") && !content.starts_with(b"\t") => {
                if self.ends.len() < Self::MAX_ERROR_LINES {
                    let end = content.len().min(Self::MAX_ERROR_LINE);
                    self.pending
                        .extend_from_slice(content.get(..end).unwrap_or_default());
                    self.ends.push(self.pending.len());
                }
            }
            // Indented continuations, blank lines and statistics do not end an error.
            Line::Other | Line::Blank => {}
            Line::Stats => self.stats(content),
            Line::Summary => {
                self.processed(content);
                self.mark(SummaryField::Verdict);
                self.summary.error = self.pending_lines();
                self.summary.verdict = if self.ends.is_empty() {
                    Verdict::Accepted
                } else {
                    Verdict::Rejected
                };
                self.clear();
            }
            _ => self.clear(),
        }
    }

    pub(crate) fn finish(self) -> Summary {
        self.summary
    }

    /// This reader followed by `later`, which read the lines after this one's from a fresh start:
    /// what reading on would have given, in place. Only when [`joinable`](Self::joinable).
    pub(crate) fn join(&mut self, later: SummaryReader) {
        let (s, l) = (&mut self.summary, later.summary);
        let set = |f: SummaryField| later.written & (1 << f as u16) != 0;
        if set(SummaryField::Verdict) {
            s.verdict = l.verdict;
            s.error = l.error;
        }
        let numbers = [
            (SummaryField::Insns, &mut s.insns, l.insns),
            (SummaryField::InsnsLimit, &mut s.insns_limit, l.insns_limit),
            (
                SummaryField::MaxStatesPerInsn,
                &mut s.max_states_per_insn,
                l.max_states_per_insn,
            ),
            (
                SummaryField::TotalStates,
                &mut s.total_states,
                l.total_states,
            ),
            (SummaryField::PeakStates, &mut s.peak_states, l.peak_states),
            (SummaryField::MarkRead, &mut s.mark_read, l.mark_read),
            (SummaryField::Duration, &mut s.duration, l.duration),
        ];
        for (field, slot, value) in numbers {
            if set(field) {
                *slot = value;
            }
        }
        if set(SummaryField::StackDepths) {
            s.stack_depths = l.stack_depths;
        }
        self.written |= later.written;
        self.pending = later.pending;
        self.ends = later.ends;
    }

    /// Whether [`join`](Self::join) can say what reading on would have given: not when error
    /// lines are pending at the seam (a summary after it would have taken them).
    pub(crate) fn joinable(&self) -> bool {
        self.ends.is_empty()
    }

    fn mark(&mut self, field: SummaryField) {
        self.written |= 1 << field as u16;
    }

    /// Whether no candidate error line is held (then [`clear`](Self::clear) changes nothing).
    pub(crate) fn is_clear(&self) -> bool {
        self.ends.is_empty()
    }

    /// A line that ends the error lines read before it (an instruction's, a state's).
    pub(crate) fn clear(&mut self) {
        self.pending.clear();
        self.ends.clear();
    }

    fn pending_lines(&self) -> Vec<String> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let line = self.pending.get(start..end).unwrap_or_default();
                start = end;
                String::from_utf8_lossy(line).into_owned()
            })
            .collect()
    }

    /// `verification time N usec`, `stack depth A+B`.
    fn stats(&mut self, content: &[u8]) {
        if let Some(rest) = content.strip_prefix(b"verification time ") {
            self.summary.duration = number(rest.split(|b| *b == b' ').next().unwrap_or_default());
            self.mark(SummaryField::Duration);
        } else if let Some(rest) = content.strip_prefix(b"stack depth ") {
            self.summary.stack_depths = depths(rest);
            self.mark(SummaryField::StackDepths);
        }
    }

    /// `processed N insns (limit M) max_states_per_insn N total_states N peak_states N
    /// mark_read N`, or the older `processed N insns (limit M), stack depth A+B`.
    fn processed(&mut self, content: &[u8]) {
        let s = &mut self.summary;
        let mut written = 0u16;
        let mut words = content
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| w.trim_ascii_start_matches(b'(').trim_end_matches_any(b",)"));
        while let Some(word) = words.next() {
            let (field, slot) = match word {
                b"processed" => (SummaryField::Insns, &mut s.insns),
                b"limit" => (SummaryField::InsnsLimit, &mut s.insns_limit),
                b"max_states_per_insn" => {
                    (SummaryField::MaxStatesPerInsn, &mut s.max_states_per_insn)
                }
                b"total_states" => (SummaryField::TotalStates, &mut s.total_states),
                b"peak_states" => (SummaryField::PeakStates, &mut s.peak_states),
                b"mark_read" => (SummaryField::MarkRead, &mut s.mark_read),
                b"depth" => {
                    s.stack_depths = words.next().and_then(depths);
                    written |= 1 << SummaryField::StackDepths as u16;
                    continue;
                }
                _ => continue,
            };
            *slot = words.next().and_then(number);
            written |= 1 << field as u16;
        }
        self.written |= written;
    }
}

/// Trimming helpers on byte slices.
trait Trim {
    fn trim_ascii_start_matches(&self, b: u8) -> &[u8];
    fn trim_end_matches_any(&self, set: &[u8]) -> &[u8];
}

impl Trim for [u8] {
    fn trim_ascii_start_matches(&self, b: u8) -> &[u8] {
        let start = self.iter().position(|c| *c != b).unwrap_or(self.len());
        self.get(start..).unwrap_or_default()
    }

    fn trim_end_matches_any(&self, set: &[u8]) -> &[u8] {
        let end = self
            .iter()
            .rposition(|c| !set.contains(c))
            .map_or(0, |i| i + 1);
        self.get(..end).unwrap_or_default()
    }
}

/// A decimal number, the whole slice.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// `A+B+...`.
fn depths(s: &[u8]) -> Option<Vec<u64>> {
    let s = s.trim_ascii();
    s.split(|b| *b == b'+').map(number).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::classify;

    fn read(lines: &[&str]) -> Summary {
        let mut r = SummaryReader::default();
        for l in lines {
            r.line(&classify(l.as_bytes()), l.as_bytes());
        }
        r.finish()
    }

    #[test]
    fn a_log_read_alone_has_the_summary_its_every_line_gives() {
        // Every fixture log, whole and cut before its last lines (error lines pending).
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        let mut rejected = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let log = std::fs::read(entry.unwrap().path()).unwrap();
            let lines: Vec<&str> = std::str::from_utf8(&log).unwrap().lines().collect();
            for cut in [lines.len(), lines.len().saturating_sub(3)] {
                let text: String = lines[..cut].iter().map(|l| format!("{l}\n")).collect();
                let alone = Summary::read(text.as_bytes()).unwrap();
                assert_eq!(alone, read(&lines[..cut]), "{}", lines[0]);
                rejected += usize::from(alone.verdict == Verdict::Rejected);
            }
        }
        assert!(rejected > 10, "{rejected}");
        // A line the classifier does not know is an error line until an instruction line or a
        // detail of the verifier's work ends it.
        let summary = "processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0";
        for ender in [
            "1: (95) exit",
            "mark_precise: frame0: last_idx 1 first_idx 0 subseq_idx -1",
        ] {
            let text = format!("0: (b7) r0 = 0\nnot the verifier's\n{ender}\n{summary}\n");
            let alone = Summary::read(text.as_bytes()).unwrap();
            assert_eq!(alone.verdict, Verdict::Accepted, "{ender}");
            assert_eq!(alone, read(&text.lines().collect::<Vec<_>>()), "{ender}");
        }
    }

    #[test]
    fn accepted_with_statistics() {
        let s = read(&[
            "0: (b7) r0 = 0",
            "1: (95) exit",
            "verification time 366 usec",
            "stack depth 8+0+16",
            "processed 2 insns (limit 1000000) max_states_per_insn 1 total_states 3 peak_states 4 mark_read 5",
        ]);
        assert_eq!(s.verdict, Verdict::Accepted);
        assert!(s.error.is_empty());
        assert_eq!(
            (s.insns, s.insns_limit, s.max_states_per_insn),
            (Some(2), Some(1_000_000), Some(1))
        );
        assert_eq!(
            (s.total_states, s.peak_states, s.mark_read),
            (Some(3), Some(4), Some(5))
        );
        assert_eq!(s.duration, Some(366));
        assert_eq!(s.stack_depths, Some(vec![8, 0, 16]));
        assert_eq!(s.stack_depth(), Some(24));
    }

    #[test]
    fn rejected_with_the_error_lines_before_statistics_and_summary() {
        let s = read(&[
            "30: (71) r1 = *(u8 *)(r1 +0)",
            "invalid access to packet, off=20 size=1, R1(id=0,off=20,r=14)",
            "R1 offset is outside of the packet",
            "verification time 12 usec",
            "stack depth 0",
            "processed 63 insns (limit 1000000) max_states_per_insn 0 total_states 6 peak_states 6 mark_read 0",
        ]);
        assert_eq!(s.verdict, Verdict::Rejected);
        assert_eq!(
            s.error,
            [
                "invalid access to packet, off=20 size=1, R1(id=0,off=20,r=14)",
                "R1 offset is outside of the packet"
            ]
        );
        assert_eq!(s.stack_depth(), Some(0));
    }

    #[test]
    fn old_summaries_and_missing_ones() {
        let s = read(&["processed 16 insns (limit 131072), stack depth 0+8"]);
        assert_eq!(s.verdict, Verdict::Accepted);
        assert_eq!((s.insns, s.insns_limit), (Some(16), Some(131_072)));
        assert_eq!(s.stack_depths, Some(vec![0, 8]));
        assert_eq!(s.total_states, None);
        let s = read(&["0: (b7) r0 = 0", "something odd"]);
        assert_eq!(s.verdict, Verdict::Unknown);
        assert!(s.error.is_empty());
    }

    #[test]
    fn errors_are_bounded_and_interrupted_by_verification_lines() {
        let mut lines = vec!["not an error", "0: (b7) r0 = 0"];
        let long = "x".repeat(5000);
        lines.extend(std::iter::repeat_n(long.as_str(), 40));
        lines.push("processed 1 insns (limit 1000000)");
        let s = read(&lines);
        assert_eq!(s.error.len(), SummaryReader::MAX_ERROR_LINES);
        assert!(
            s.error
                .iter()
                .all(|l| l.len() == SummaryReader::MAX_ERROR_LINE)
        );
    }
}
