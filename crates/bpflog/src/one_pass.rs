//! Annotating a file in one pass, each log with the program a first pass would choose.
//!
//! Choosing a log's program (`plan`) mostly takes its first lines: the other
//! candidates stop fitting at the first instructions that tell them apart. So when a log starts,
//! a second reader looks ahead in the file, going on with the first pass only until its choice
//! is settled (see [`Pending::settled`]) or the log ends. The log is then annotated with that
//! program, in stream, while the first pass goes on over the rest of the log beside it; when it
//! ends, the first pass says what it concludes, exactly as `plan` would have. Where
//! the candidates cannot be told apart before the end (twin programs), the log is read twice,
//! as with `plan` and `annotate_planned`.

use crate::Program;
use crate::annotate::{
    AnnotateOptions, AnnotateStats, CarriedCache, OutputFormat, SegmentAnnotator,
};
use crate::checked_insns::Fitted;
use crate::file_range::Growing;
use crate::file_range::{FileRange, LogFile};
use crate::frame::{Deframer, SegmentStart};
use crate::plan::{ExistingAnnotations, Pending, PlanError, SegmentPlan, close, open};
use crate::sink::{Placed, Sink, decode, read_into};
use crate::writing::{Opened, write_logs};
use bpflog_log::{HeldLines, LineReader};
use std::fs::File;
use std::io::Write;
use std::sync::Arc;

/// One log of a file annotated by `annotate_file` (feature `testing`) or [`crate::annotate()`].
#[derive(Debug)]
#[non_exhaustive]
pub struct AnnotatedLog {
    /// What a first pass over the whole log found (`plan`).
    pub plan: SegmentPlan,
    /// What annotating it did.
    pub stats: AnnotateStats,
    /// How many of its lines were read twice: ahead, until its program was settled.
    pub looked_ahead: u64,
}

/// The size of the blocks the log is read in.
pub(crate) const BLOCK: usize = 1 << 20;

/// Annotates a file in about one pass: what `plan` and
/// `annotate_planned` would write, and the plan (tested over every
/// fixture, alone, stripped, cut, between other logs and in wrappers, in kernel and rich style,
/// text and JSON). JSON output reads each log to its end before annotating it: it marks a cut
/// first line as such, which only the log's end tells.
///
/// Where the plan fails, the error is the plan's, but found where the log that fails it ends:
/// what was written before that (the logs before it, and the part of it annotated in stream)
/// is the caller's to hold back or to disown. `file` must be a regular file (it is read at
/// offsets, from its start); `forced` is `plan`'s.
///
/// For the tests that hold the strategies against each other (feature `testing`);
/// [`crate::annotate()`] is the entry point.
#[cfg(feature = "testing")]
pub fn annotate_file<'f>(
    programs: &[Program<'_, '_>],
    file: impl Into<LogFile<'f>>,
    output: impl Write,
    options: &AnnotateOptions,
    forced: Option<&str>,
) -> Result<Vec<AnnotatedLog>, PlanError> {
    let mut done = Vec::new();
    annotate_file_in(
        programs,
        file.into(),
        output,
        options,
        forced,
        BLOCK,
        |log, _| {
            done.push(log);
            Ok(())
        },
    )?;
    Ok(done)
}

/// `annotate_file`, reading blocks of at most `block` bytes and handing each log to `each` as
/// it ends, with the output written so far (memory stays bounded however many logs the file
/// holds). An error from `each` stops it.
pub(crate) fn annotate_file_in<W: Write>(
    programs: &[Program<'_, '_>],
    log: LogFile<'_>,
    output: W,
    options: &AnnotateOptions,
    forced: Option<&str>,
    block: usize,
    mut each: impl FnMut(AnnotatedLog, &mut W) -> Result<(), PlanError>,
) -> Result<(), PlanError> {
    let (input, len) = log.read_ahead(block)?;
    let file = log.file;
    let mut ahead = Lookahead {
        file,
        growing: log.growing,
        len,
        // JSON marks the cut first line of a log as such, which only the log's end can tell.
        settle: options.format == OutputFormat::Text,
        lines: LineReader::with_capacity(block, FileRange::new(file, 0, 0)),
    };
    // The instruction lines that fitted each program, and what the rich style worked out for
    // the last log's program, from one log to the next.
    let mut job = (Fitted::new(programs.len()), CarriedCache::default());
    write_logs::<_, _, _, PlanError>(
        input,
        output,
        options,
        &mut job,
        |(fitted, rich), opened| {
            // The line the log starts on is not written yet.
            let written = opened.line - 1;
            let mut pending = open(programs, fitted, opened.line, opened.start.cloned(), forced)
                .map_err(|e| e.with_written(written))?;
            if let Some(payload) = opened.payload {
                decode(payload, opened.line, &mut pending);
            }
            let ahead = ahead
                .read(pending, opened, fitted)
                .map_err(|e| e.with_written(written))?;
            let looked_ahead = ahead.lines_read - opened.lines_read;
            Ok(match ahead.found {
                LookedAhead::Ended(plan) => {
                    let annotator = SegmentAnnotator::new(
                        plan.program.and_then(|p| programs.get(p)),
                        options,
                        plan.existing,
                        plan.partial_first_line,
                    )
                    .showing(plan.source_lines)
                    .carrying(rich, plan.program);
                    (annotator, (Some(plan), looked_ahead))
                }
                LookedAhead::Settled { pending, program } => {
                    // When the plan's word on the log's annotation lines is in already, the log
                    // is annotated as planned; otherwise its first lines wait, as in stream.
                    let (existing, skip_first) = pending
                        .settled_annotations()
                        .unwrap_or((ExistingAnnotations::Unknown, false));
                    let annotator =
                        SegmentAnnotator::new(programs.get(program), options, existing, skip_first)
                            .carrying(rich, Some(program));
                    let after = ahead.lines_read;
                    (annotator.planning(pending, after), (None, looked_ahead))
                }
            })
        },
        |(fitted, rich), mut seg, (planned, looked_ahead), out, sources, closed| {
            seg.carry_back(out, sources, rich)?;
            // Planned before it was annotated, or planning while it was.
            let (stats, planning) = seg.finish_planning(out, sources, fitted)?;
            let planning = planning
                .transpose()
                .map_err(|e| e.with_written(closed.written))?;
            match planned.or(planning) {
                Some(plan) => each(
                    AnnotatedLog {
                        plan,
                        stats,
                        looked_ahead,
                    },
                    out,
                ),
                None => Ok(()),
            }
        },
    )
}

/// What looking ahead in a log found, and the lines read by then (from the top of the file).
struct Ahead<'c, 'o, 'd> {
    found: LookedAhead<'c, 'o, 'd>,
    lines_read: u64,
}

enum LookedAhead<'c, 'o, 'd> {
    /// The log ended: the first pass's conclusion.
    Ended(SegmentPlan),
    /// The program is settled; the first pass goes on from where it stopped.
    Settled {
        pending: Pending<'c, 'o, 'd>,
        program: usize,
    },
}

/// The second reader, which looks ahead from where a log starts.
struct Lookahead<'f> {
    file: &'f File,
    /// The file is still being written: its reads wait at its end.
    growing: Option<&'f Arc<Growing>>,
    len: u64,
    /// Whether to stop once the program is settled, or read every log to its end.
    settle: bool,
    /// Its buffer serves every log in turn.
    lines: LineReader<FileRange<&'f File>>,
}

impl Lookahead<'_> {
    /// Goes on with the first pass over a log that has just opened, until its program is settled
    /// or it ends: over the lines the main reader holds already, then on from the file. A log
    /// that ends gives the instruction lines that fitted its candidates back to `fitted`.
    fn read<'c, 'o, 'd>(
        &mut self,
        pending: Pending<'c, 'o, 'd>,
        opened: &Opened<'_>,
        fitted: &mut Fitted,
    ) -> Result<Ahead<'c, 'o, 'd>, PlanError> {
        let mut log = AheadLog {
            pending,
            settle: self.settle,
            ended: None,
        };
        let mut deframer: Deframer = opened.deframer.clone();
        let mut line_no = opened.lines_read;
        let mut held = HeldLines::new(opened.rest, opened.offset);
        read_into(&mut held, &mut deframer, &mut line_no, &mut log)?;
        if log.wants_more() {
            let at = held.offset();
            let mut range = FileRange::growing(self.file, at, self.len);
            if let Some(growing) = self.growing {
                range = range.written_by(growing.clone());
            }
            self.lines.restart(range);
            self.lines.count_from(line_no);
            read_into(&mut self.lines, &mut deframer, &mut line_no, &mut log)?;
        }
        let AheadLog { pending, ended, .. } = log;
        if ended.is_none()
            && let Some(program) = pending.settled().filter(|_| self.settle)
        {
            return Ok(Ahead {
                found: LookedAhead::Settled { pending, program },
                lines_read: line_no,
            });
        }
        Ok(Ahead {
            found: LookedAhead::Ended(close(pending, fitted)?),
            lines_read: ended.map_or(line_no, |line| line - 1),
        })
    }
}

/// The first pass over a log, looking ahead until its program is settled or it ends.
struct AheadLog<'c, 'o, 'd> {
    pending: Pending<'c, 'o, 'd>,
    /// Whether to stop once the program is settled.
    settle: bool,
    /// The line before which the log ended.
    ended: Option<u64>,
}

impl Sink for AheadLog<'_, '_, '_> {
    type Error = PlanError;

    fn end(&mut self, line: u64) -> Result<(), PlanError> {
        self.ended.get_or_insert(line);
        Ok(())
    }

    fn start(&mut self, _: u64, _: SegmentStart) -> Result<(), PlanError> {
        Ok(())
    }

    #[inline]
    fn payload(&mut self, line: &Placed<'_>) -> Result<(), PlanError> {
        if self.ended.is_none() {
            decode(line.payload, line.line_no, &mut self.pending);
        }
        Ok(())
    }

    fn wants_more(&self) -> bool {
        self.ended.is_none() && !(self.settle && self.pending.settled().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::BpfObject;
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// Small blocks: logs start near a block's end and the lookahead goes on from the file
    /// (tests/one_pass.rs covers every fixture, mostly read in one block).
    #[test]
    fn lookahead_across_blocks_is_two_passes() {
        let datas: Vec<Vec<u8>> = ["branchy.o", "tc_prog.o", "two_in_one.o", "xdp_subprogs.o"]
            .iter()
            .map(|o| std::fs::read(fixtures().join("obj").join(o)).unwrap())
            .collect();
        let objects: Vec<BpfObject> = datas.iter().map(|d| BpfObject::parse(d).unwrap()).collect();
        let mut programs = Vec::new();
        for object in &objects {
            for id in object.programs() {
                for loader in crate::object::Loader::ALL {
                    if let Ok(p) = Program::with_loader(object, id, loader)
                        && !programs
                            .iter()
                            .any(|q: &Program| q.layout == p.layout && q.name() == p.name())
                    {
                        programs.push(p);
                    }
                }
            }
        }
        let log = |name: &str| std::fs::read(fixtures().join("logs").join(name)).unwrap();
        let (branchy, tc) = (
            log("branchy.xdp_branchy.l1.log"),
            log("tc_prog.tc_count.l2.log"),
        );
        let first = log("two_in_one.xdp_first.l2.log");
        let inputs = [
            [&branchy[..], &tc, &first, &branchy].concat(),
            [&first[..], &first, &tc, &first].concat(),
            log("xdp_subprogs.xdp_parse.l2.log"),
        ];
        let path = std::env::temp_dir().join(format!("bpflog-blocks-{}", std::process::id()));
        let mut compared = 0;
        for input in &inputs {
            std::fs::write(&path, input).unwrap();
            let file = File::open(&path).unwrap();
            let options = AnnotateOptions::default();
            let plan = crate::plan(&programs, &input[..], None).unwrap();
            let mut two = Vec::new();
            crate::annotate_planned(&plan, &programs, &input[..], &mut two, &options).unwrap();
            for block in [1, 100, 1000, 4096, 10_000] {
                let mut one = Vec::new();
                let mut logs = Vec::new();
                annotate_file_in(
                    &programs,
                    (&file).into(),
                    &mut one,
                    &options,
                    None,
                    block,
                    |l, _| {
                        logs.push(l);
                        Ok(())
                    },
                )
                .unwrap();
                assert!(one == two, "block {block}: the outputs differ");
                let plans: Vec<String> = logs.iter().map(|l| format!("{:?}", l.plan)).collect();
                let planned: Vec<String> = plan.segments.iter().map(|s| format!("{s:?}")).collect();
                assert_eq!(plans, planned, "block {block}");
                compared += 1;
            }
        }
        let _ = std::fs::remove_file(&path);
        assert_eq!(compared, 15);
    }
}
