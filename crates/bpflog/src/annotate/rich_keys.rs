//! [`RichKeys`]: which instructions print the same rich location, worked out once each; and
//! [`ProgramCache`], what the outputs work out once about a program (the rich style's
//! locations and lines, the kernel style's source lines, JSON's source members), carried by a
//! job from one log of the program to the next ([`CarriedCache`]): a file often holds many logs
//! of one program.

use crate::Program;
#[cfg(not(test))]
use crate::insn_bytes::InsnBytes;
use crate::locate::InsnSource;
#[cfg(not(test))]
use crate::locate::locate;
use bpflog_log::SourceLines;
use std::collections::HashMap;
#[cfg(test)]
use tests::{InsnBytes, locate};

/// The most bytes of rich annotation lines held for a program (see
/// [`Writer::rich_annotation`](super::writer::Writer::rich_annotation)): with their colors they
/// run to 60–200 bytes an instruction.
const RICH_LINES_HELD: usize = 16 << 20;

/// The most bytes of the kernel style's source lines held for a program (see
/// [`SegmentAnnotator::annotation`](super::SegmentAnnotator::annotation)).
const KERNEL_LINES_HELD: usize = 16 << 20;

/// What the outputs work out about a program, the same for every log of it in a job (whose
/// options and source files are the same): each instruction's location number and its
/// annotation lines; and what the other outputs put together once for it, the kernel style's
/// source line of each record of its line table and JSON records' `"source"` members. What
/// belongs to one log (the location printed last) is not in it.
pub(super) struct ProgramCache {
    /// The number of each instruction's location.
    pub(super) keys: RichKeys,
    /// The lines of each instruction's rich annotation, once put together (see
    /// [`Writer::rich_annotation`](super::writer::Writer::rich_annotation)), up to
    /// [`RICH_LINES_HELD`] bytes.
    pub(super) lines: InsnBytes,
    /// The kernel style's source line of each record (by its place in the line table), once
    /// put together from the text `.BTF` holds, in the form it was put together in (see
    /// [`SegmentAnnotator::annotation`](super::SegmentAnnotator::annotation)), up to
    /// [`KERNEL_LINES_HELD`] bytes.
    pub(super) kernel: (SourceLines, crate::insn_bytes::InsnBytes),
    /// The `"program"` and `"source"` members of JSON records.
    pub(super) json: crate::json::SourceCache,
}

impl ProgramCache {
    /// [`kernel`](Self::kernel)'s lines, for lines of `form`: those of another form are let
    /// go.
    pub(super) fn kernel_lines(&mut self, form: SourceLines) -> &mut crate::insn_bytes::InsnBytes {
        if self.kernel.0 != form {
            self.kernel = (
                form,
                crate::insn_bytes::InsnBytes::with_budget(KERNEL_LINES_HELD),
            );
        }
        &mut self.kernel.1
    }
}

impl Default for ProgramCache {
    fn default() -> Self {
        ProgramCache {
            keys: RichKeys::default(),
            lines: InsnBytes::with_budget(RICH_LINES_HELD),
            kernel: (
                SourceLines::default(),
                crate::insn_bytes::InsnBytes::with_budget(KERNEL_LINES_HELD),
            ),
            json: crate::json::SourceCache::default(),
        }
    }
}

/// The [`ProgramCache`] of the program of a job's last log, which the next log starts from when it
/// is of the same program. One program's at a time: memory stays that of one log's.
#[derive(Default)]
pub(crate) struct CarriedCache(Option<(usize, ProgramCache)>);

impl CarriedCache {
    /// The cache for a log of the job's program number `program`: the one carried when it is
    /// that program's, a new one otherwise.
    pub(super) fn take(&mut self, program: usize) -> ProgramCache {
        match self.0.take() {
            Some((p, cache)) if p == program => cache,
            _ => ProgramCache::default(),
        }
    }

    /// Keeps `cache`, program number `program`'s, for the next log.
    pub(super) fn keep(&mut self, program: usize, cache: ProgramCache) {
        self.0 = Some((program, cache));
    }
}

/// Each instruction's rich location as a number, worked out on its first visit: instructions
/// print the same rich annotation exactly when their numbers are equal (the number stands for
/// what the rich style prints of the location, columns aside, like the kernel).
#[derive(Default)]
pub(super) struct RichKeys {
    /// Per instruction, as far as the logs go.
    slots: Vec<RichSlot>,
    /// The number of each location met ([`location_bytes`]), hashed with foldhash's fast
    /// hasher (seeded per process): a log of a large program meets thousands, one per line.
    numbers: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    /// The bytes of a location being looked up.
    scratch: Vec<u8>,
    /// The bytes of the location looked up last, and its number: most instructions share the
    /// location of the one before, known then without hashing.
    previous: Vec<u8>,
    previous_number: Option<u32>,
}

/// What [`RichKeys`] knows of an instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum RichSlot {
    /// Not located yet.
    #[default]
    Unknown,
    /// The instruction has no location.
    Nowhere,
    /// Its location's number.
    At(u32),
}

impl RichKeys {
    pub(super) fn get(&mut self, program: &Program<'_, '_>, index: u64) -> Option<u32> {
        let i = u32::try_from(index).ok()?;
        if i >= program.layout.len {
            // Past the program: located (or not) every time, as it is rare.
            return locate(program, i).map(|src| self.number(&src));
        }
        // The table grows as far as the logs go: one of the whole program made for every log
        // costs a file of many logs of a large program most of its time.
        if self.slots.len() <= i as usize {
            self.slots.resize(i as usize + 1, RichSlot::Unknown);
        }
        if self.slots[i as usize] == RichSlot::Unknown {
            self.slots[i as usize] = match locate(program, i) {
                Some(src) => RichSlot::At(self.number(&src)),
                None => RichSlot::Nowhere,
            };
        }
        match self.slots[i as usize] {
            RichSlot::At(n) => Some(n),
            RichSlot::Unknown | RichSlot::Nowhere => None,
        }
    }

    /// The number of `src`'s location, given on its first meeting.
    fn number(&mut self, src: &InsnSource<'_>) -> u32 {
        self.scratch.clear();
        location_bytes(src, &mut self.scratch);
        if let Some(n) = self.previous_number
            && self.scratch == self.previous
        {
            return n;
        }
        let n = match self.numbers.get(&self.scratch[..]) {
            Some(&n) => n,
            None => {
                let n = u32::try_from(self.numbers.len()).unwrap_or(u32::MAX);
                self.numbers.insert(self.scratch.as_slice().into(), n);
                n
            }
        };
        std::mem::swap(&mut self.scratch, &mut self.previous);
        self.previous_number = Some(n);
        n
    }
}

/// What the rich style prints of a location (columns aside, like the kernel), as bytes: each
/// field preceded by its length, so that different locations never give the same bytes.
pub(super) fn location_bytes(src: &InsnSource<'_>, out: &mut Vec<u8>) {
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    field(src.file);
    field(&src.line.to_le_bytes());
    field(src.function.as_bytes());
    for step in &src.inlined {
        field(step.caller.as_bytes());
        match step.call_site {
            Some((file, line, col)) => {
                field(b"@");
                field(file);
                field(&line.to_le_bytes());
                field(&col.to_le_bytes());
            }
            None => field(b""),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// The rich style's work on this thread: how many instructions were located for
        /// [`RichKeys`] ([`locate`]), how many rich annotations put together for
        /// [`ProgramCache::lines`] ([`InsnBytes::write`]).
        static WORK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }

    /// [`crate::locate::locate`], counted in [`WORK`].
    pub(super) fn locate<'a>(program: &'a Program<'_, 'a>, index: u32) -> Option<InsnSource<'a>> {
        WORK.with(|w| w.set((w.get().0 + 1, w.get().1)));
        crate::locate::locate(program, index)
    }

    /// [`crate::insn_bytes::InsnBytes`], each annotation it has put together counted in [`WORK`].
    pub(crate) struct InsnBytes(crate::insn_bytes::InsnBytes);

    impl InsnBytes {
        pub(super) fn with_budget(budget: usize) -> Self {
            InsnBytes(crate::insn_bytes::InsnBytes::with_budget(budget))
        }

        pub(crate) fn write(
            &mut self,
            out: &mut impl std::io::Write,
            index: u32,
            len: u32,
            make: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
        ) -> std::io::Result<usize> {
            self.0.write(out, index, len, |bytes| {
                WORK.with(|w| w.set((w.get().0, w.get().1 + 1)));
                make(bytes)
            })
        }
    }

    /// Two instructions get the same rich number exactly when the rich style prints the same
    /// location for them (file, line, function and inline chain; columns aside): over every
    /// instruction of objects with inlined calls, nested subprograms and no DWARF.
    #[test]
    fn rich_numbers_are_equal_exactly_for_equal_locations() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/obj");
        let mut pairs = 0u64;
        for name in [
            "reject_nested.o",
            "xdp_subprogs.o",
            "two_in_one.o",
            "reject_entry.nodwarf.o",
        ] {
            let data = std::fs::read(fixtures.join(name)).unwrap();
            let object = bpflog_object::BpfObject::parse(&data).unwrap();
            for id in object.programs() {
                let program = Program::new(&object, id).unwrap();
                let mut keys = RichKeys::default();
                let located: Vec<(Option<u32>, Option<String>)> = (0..program.layout.len)
                    .map(|i| {
                        let shown = locate(&program, i).map(|src| {
                            let chain: Vec<String> = (src.inlined.iter())
                                .map(|s| format!("{}{:?}", s.caller, s.call_site))
                                .collect();
                            format!("{:?}:{}:{}:{chain:?}", src.file, src.line, src.function)
                        });
                        (keys.get(&program, u64::from(i)), shown)
                    })
                    .collect();
                for (a, shown_a) in &located {
                    for (b, shown_b) in &located {
                        assert_eq!(
                            a == b,
                            shown_a == shown_b,
                            "{name}: {shown_a:?} {shown_b:?}"
                        );
                        pairs += 1;
                    }
                }
                assert!(located.iter().any(|(k, _)| k.is_some()), "{name}");
            }
        }
        assert!(pairs > 10_000, "{pairs} pairs");
    }

    /// The outputs of the strategies a job chooses between, over `input` with `programs`, in
    /// rich style (one pass over a file, a first pass then the annotation, and, with one
    /// program, that program in stream), each with the rich style's work it took ([`WORK`]).
    fn jobs(programs: &[Program<'_, '_>], input: &[u8], name: &str) -> Vec<(Vec<u8>, (u64, u64))> {
        let options = crate::AnnotateOptions {
            style: crate::Style::Rich,
            ..Default::default()
        };
        let path = std::env::temp_dir().join(format!("bpflog-{name}-{}", std::process::id()));
        std::fs::write(&path, input).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let mut done = Vec::new();
        let mut run = |job: &mut dyn FnMut(&mut Vec<u8>)| {
            WORK.with(|w| w.set((0, 0)));
            let mut out = Vec::new();
            job(&mut out);
            done.push((out, WORK.with(Cell::get)));
        };
        run(&mut |out| {
            crate::annotate_file(programs, &file, out, &options, None).unwrap();
        });
        run(&mut |out| {
            let plan = crate::plan(programs, input, None).unwrap();
            crate::annotate_planned(&plan, programs, input, out, &options).unwrap();
        });
        if let [program] = programs {
            run(&mut |out| {
                crate::annotate_stream(program, input, out, &options).unwrap();
            });
        }
        let _ = std::fs::remove_file(&path);
        done
    }

    /// The programs of fixture `OBJECT.o` and its log `OBJECT.LOG.log` for each of `logs`.
    fn with_logs(object: &str, logs: &[&str], f: impl FnOnce(&[Program<'_, '_>], &[Vec<u8>])) {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let data = std::fs::read(fixtures.join(format!("obj/{object}.o"))).unwrap();
        let parsed = bpflog_object::BpfObject::parse(&data).unwrap();
        let programs: Vec<Program> = (parsed.programs().into_iter())
            .map(|id| Program::new(&parsed, id).unwrap())
            .collect();
        let logs: Vec<Vec<u8>> = (logs.iter())
            .map(|l| std::fs::read(fixtures.join(format!("logs/{object}.{l}.log"))).unwrap())
            .collect();
        f(&programs, &logs);
    }

    /// A job carries what the rich style works out about a program from one of its logs to the
    /// next: three copies of a log take the work of one (instructions located, annotations
    /// put together), whatever the strategy; two programs' logs take the work of each once when
    /// each program's logs come together (one program's is carried at a time).
    #[test]
    fn a_jobs_logs_of_one_program_share_the_rich_styles_work() {
        with_logs("branchy", &["xdp_branchy.l2"], |programs, logs| {
            let one = jobs(programs, &logs[0], "rich-one");
            let three = jobs(programs, &logs[0].repeat(3), "rich-three");
            assert_eq!(one.len(), 3);
            for ((out1, work1), (out3, work3)) in one.iter().zip(&three) {
                assert!(work1.0 > 20 && work1.1 > 10, "{work1:?}");
                assert_eq!(work3, work1, "three logs of one program");
                assert!(*out3 == out1.repeat(3));
            }
        });
        with_logs(
            "two_in_one",
            &["xdp_first.l2", "xdp_second.l2"],
            |programs, logs| {
                let (a, b) = (&logs[0][..], &logs[1][..]);
                let work = |input: &[u8], name| -> Vec<(u64, u64)> {
                    jobs(programs, input, name)
                        .into_iter()
                        .map(|(_, w)| w)
                        .collect()
                };
                let (wa, wb) = (work(a, "rich-a"), work(b, "rich-b"));
                let sum = |w: &[(u64, u64)], v: &[(u64, u64)], k| -> Vec<(u64, u64)> {
                    w.iter()
                        .zip(v)
                        .map(|(x, y)| (k * x.0 + y.0, k * x.1 + y.1))
                        .collect()
                };
                assert_eq!(wa.len(), 2);
                assert!(
                    wa.iter().chain(&wb).all(|w| w.0 > 0 && w.1 > 0),
                    "{wa:?} {wb:?}"
                );
                assert_eq!(work(&[a, a, b, b].concat(), "rich-aabb"), sum(&wa, &wb, 1));
                assert_eq!(work(&[a, b, a].concat(), "rich-aba"), sum(&wa, &wb, 2));
            },
        );
    }

    /// What belongs to a log is not carried to the next: a log whose first instruction is at the
    /// location printed last in the log before it gets that location's lines all the same, as
    /// when it is annotated alone. The log before is the real log cut after its first
    /// instruction, with its summary line.
    #[test]
    fn the_location_printed_last_is_each_logs_own() {
        with_logs("branchy", &["xdp_branchy.l2"], |programs, logs| {
            let log = &logs[0];
            let lines: Vec<&[u8]> = log.split_inclusive(|&b| b == b'\n').collect();
            let first_insn = (lines.iter())
                .position(|l| bpflog_log::insn_head(l).is_some_and(|h| h.index == 0))
                .unwrap();
            let summary = lines
                .iter()
                .rfind(|l| l.starts_with(b"processed "))
                .unwrap();
            let cut = [&lines[..=first_insn].concat()[..], summary].concat();
            let alone: Vec<Vec<u8>> = [&cut, log]
                .iter()
                .map(|l| jobs(programs, l, "rich-alone")[0].0.clone())
                .collect();
            // The cut log ends with its first instruction's lines, written last.
            let rich_lines = |out: &[u8]| {
                out.split(|&b| b == b'\n')
                    .filter(|l| l.starts_with(b"; "))
                    .count()
            };
            assert!(
                rich_lines(&alone[0]) == 1,
                "{}",
                String::from_utf8_lossy(&alone[0])
            );
            for (out, _) in jobs(programs, &[&cut[..], log].concat(), "rich-cut") {
                assert_eq!(
                    rich_lines(&out),
                    rich_lines(&alone[0]) + rich_lines(&alone[1])
                );
                assert!(out == alone.concat());
            }
        });
    }
}
