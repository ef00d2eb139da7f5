//! [`profile_checked`](super::profile_checked) of a file on every core.
//!
//! The file is cut into as many parts as there are cores, each at a line start, and each part is
//! read and counted by a thread of its own as if it were the start of a file. The parts are then
//! joined in order ([`CheckedPass::join`]). A join that cannot be exact (the part before ended
//! inside a wrapper or another program's log, on an annotation line or on error lines, or the
//! fit check would have judged a line differently) is not taken: that part is read again, on
//! from the part before it. The profile and the verdict on the fit are those of one pass.

use super::{Checked, CheckedPass, Reading};
use crate::Program;
use crate::file_range::FileRange;
use bpflog_log::LogInput;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Parts smaller than this are not worth a thread.
pub(crate) const MIN_PART: u64 = 4 << 20;

/// Like [`profile_checked`](super::profile_checked) over the whole of `file`, with up to
/// `threads` threads (one when the file is small, or is not a regular file).
/// Also says how the file was read.
pub(crate) fn profile_checked_file(
    program: &Program<'_, '_>,
    file: &File,
    threads: usize,
) -> io::Result<(Checked, Reading)> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        // A pipe or a device: no length to cut, read as it comes.
        return Ok((super::profile_checked(program, file)?, Reading::OnePass));
    }
    let (pass, joined) = in_parts(file, threads, MIN_PART, |at_start| {
        CheckedPass::new(program, at_start)
    })?;
    let reading = Reading::of(part_count(meta.len(), threads, MIN_PART), joined);
    Ok((pass.finish(), reading))
}

/// How many parts [`in_parts`] reads a file of `len` bytes in.
pub(crate) fn part_count(len: u64, threads: usize, min_part: u64) -> u64 {
    u64::try_from(threads.max(1))
        .unwrap_or(1)
        .min(len / min_part.max(1))
        .max(1)
}

/// A pass over a file that can be read in parts and joined.
pub(crate) trait Pass: Send + Sized {
    /// Takes every line of `input`, the lines after those it took before (an error names a line
    /// by its number counted from there).
    fn read(&mut self, input: impl LogInput) -> io::Result<()>;
    /// This pass followed by `later`, which read the lines after this one's from a fresh start:
    /// what reading on would have given, in place; `false`, and nothing changed, when it cannot
    /// say (then `later`'s lines are read again, on from this pass).
    fn join(&mut self, later: Self) -> bool;
}

/// The pass over the regular file `file`, read in up to `threads` parts of at least `min_part`
/// bytes, each by a pass made by `new` (`true` for the one at the start of the file); and how
/// many parts were joined without being read again.
pub(crate) fn in_parts<P: Pass>(
    file: &File,
    threads: usize,
    min_part: u64,
    new: impl Fn(bool) -> P + Sync,
) -> io::Result<(P, usize)> {
    let len = file.metadata()?.len();
    let parts = part_count(len, threads, min_part);
    let mut starts = vec![0];
    for k in 1..parts {
        let start = line_start_after(file, len / parts * k, len)?;
        let before = starts.last().copied().unwrap_or(0);
        starts.push(start.max(before));
    }
    starts.push(len);
    let ranges: Vec<(u64, u64)> = starts.windows(2).map(|w| (w[0], w[1])).collect();
    let new = &new;
    let passes: Vec<io::Result<P>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .iter()
            .map(|&(start, end)| {
                scope.spawn(move || {
                    let mut pass = new(start == 0);
                    pass.read(FileRange::new(file, start, end))?;
                    Ok(pass)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a thread panicked")))
            })
            .collect()
    });
    let mut passes = passes.into_iter().zip(&ranges);
    let Some((first, _)) = passes.next() else {
        return Ok((new(true), 0));
    };
    let mut joined = first?;
    let mut joins = 0;
    for (later, &(start, end)) in passes {
        // A part that cannot be joined is read again, on from the part before; so is one that
        // failed, so that its error counts lines from the start of the file.
        if later.is_ok_and(|later| joined.join(later)) {
            joins += 1;
        } else {
            joined.read(FileRange::new(file, start, end))?;
        }
    }
    Ok((joined, joins))
}

/// The offset just after the first newline at or after `at` (`len` when there is none, or none
/// within the longest line a reader takes: the part before then ends the read with that line).
fn line_start_after(file: &File, mut at: u64, len: u64) -> io::Result<u64> {
    let mut window = vec![0u8; 64 * 1024];
    let give_up = at.saturating_add(bpflog_log::MAX_LINE as u64 + 1).min(len);
    while at < give_up {
        let n = file.read_at(&mut window, at)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &window[..n]) {
            return Ok(at + i as u64 + 1);
        }
        at += n as u64;
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::profile_checked;
    use bpflog_object::BpfObject;
    use std::path::{Path, PathBuf};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
    }

    /// Runs `f` with each fixture log (`OBJECT.PROGRAM.LEVEL.log`): its name, its program, and
    /// its bytes. The host's logs, and Linux 5.10's at level 2 (paths resumed with no `from X
    /// to Y` line).
    fn each_fixture_log(mut f: impl FnMut(&str, &Program<'_, '_>, Vec<u8>)) {
        let host = std::fs::read_dir(fixtures().join("logs")).unwrap();
        let old = std::fs::read_dir(fixtures().join("kernels/5.10/logs")).unwrap();
        for entry in host.chain(old) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".log") else {
                continue;
            };
            if path.starts_with(fixtures().join("kernels")) && !stem.ends_with(".l2") {
                continue;
            }
            let mut parts = stem.rsplitn(3, '.');
            let (_level, program, object) = (parts.next(), parts.next(), parts.next());
            let (Some(program), Some(object)) = (program, object) else {
                continue;
            };
            let object_path = fixtures().join("obj").join(format!("{object}.o"));
            // A kernel's log of an object of `explain/obj` is not one of these.
            if path.starts_with(fixtures().join("kernels")) && !object_path.exists() {
                continue;
            }
            let data = std::fs::read(object_path).unwrap();
            let object = BpfObject::parse(&data).unwrap();
            let program = Program::new(&object, object.program(program).unwrap()).unwrap();
            f(&name, &program, std::fs::read(&path).unwrap());
        }
    }

    /// A detail line ends the error lines read before it when it is a precision-tracking line
    /// or a liveness row, not when it is an indented state; otherwise it counts nothing. So a
    /// profiler that passes over detail lines unclassified while it holds no error line counts
    /// as one that classifies every line. Lines of a newer kernel (unknown here, so maybe the
    /// error) before each detail line and before the summary try both.
    #[test]
    fn detail_lines_passed_over_change_nothing() {
        use crate::profile::Profiler;
        use bpflog_log::{classify, is_detail, split_newline};
        let mut compared = 0;
        each_fixture_log(|name, program, log| {
            // Before each line of `at`, `insert`.
            let with = |at: fn(&[u8]) -> bool, insert: &[u8]| -> Vec<u8> {
                (log.split_inclusive(|&b| b == b'\n'))
                    .flat_map(|l| [if at(l) { insert } else { b"" }, l].concat())
                    .collect()
            };
            let summary = |l: &[u8]| l.starts_with(b"processed ");
            let inputs = [
                log.clone(),
                with(is_detail, b"a new line\n"),
                // Before the summary: cleared by the detail line, or not.
                with(
                    summary,
                    b"a new line\nmark_precise: frame0: regs=r0 stack= before 0: (b7) r0 = 0\n",
                ),
                with(summary, b"a new line\n      0: .......... (b7) r0 = 0\n"),
                with(summary, b"a new line\n   R1=ctx()\n"),
            ];
            for input in &inputs {
                let (mut skipping, mut every) = (Profiler::new(program), Profiler::new(program));
                for line in input.split_inclusive(|&b| b == b'\n') {
                    skipping.line(line);
                    let (content, _) = split_newline(line);
                    every.classified(&classify(content), content);
                }
                assert_eq!(skipping.finish(), every.finish(), "{name}");
                compared += 1;
            }
        });
        assert!(compared > 100, "{compared} comparisons");
    }

    /// Most instruction lines are of an instruction seen before, and only counted without
    /// being classified: the profile and the fit are those of classifying every line. The log
    /// once, twice (the second copy all seen before), and twice with an instruction of the
    /// second copy given another opcode (a misfit found on that short path).
    #[test]
    fn instructions_seen_before_count_as_classified() {
        use crate::profile::Profiler;
        use crate::select::Selector;
        use bpflog_log::{classify, insn_head, split_newline};
        let mut misfits = 0;
        each_fixture_log(|name, program, log| {
            let twice = [&log[..], &log[..]].concat();
            // A line of a newer kernel (maybe the error) before each instruction line.
            let new_lines: Vec<u8> = (twice.split_inclusive(|&b| b == b'\n'))
                .flat_map(|l| {
                    [
                        if insn_head(l).is_some() {
                            &b"a new line\n"[..]
                        } else {
                            b""
                        },
                        l,
                    ]
                    .concat()
                })
                .collect();
            let mut inputs = vec![log.clone(), new_lines, twice.clone()];
            // In the second copy, the first line of instruction 1 (or the first instruction line
            // of a log without one) and the instruction line after it given another opcode (one
            // line alone among lines that fit would be noise).
            let second = log.len() + memchr::memmem::find(&log, b"\n1: (").unwrap_or(0);
            let first = memchr::memmem::find(&twice[second..], b": (").map(|i| second + i + 3);
            let next = first.and_then(|at| {
                // The next line that starts with an instruction index.
                let mut start = at + memchr::memchr(b'\n', &twice[at..])? + 1;
                loop {
                    let line = &twice[start..];
                    let digits = line.iter().take_while(|b| b.is_ascii_digit()).count();
                    if digits > 0 && line[digits..].starts_with(b": (") {
                        return Some(start + digits + 3);
                    }
                    start += memchr::memchr(b'\n', line)? + 1;
                }
            });
            if let (Some(first), Some(next)) = (first, next) {
                let mut changed = twice;
                for at in [first, next] {
                    // Of another class (only the class is compared where libbpf relocates).
                    let other = if changed[at + 1] == b'7' {
                        b"61"
                    } else {
                        b"b7"
                    };
                    changed[at..at + 2].copy_from_slice(other);
                }
                inputs.push(changed);
            }
            let changed = inputs.len() - 1;
            for (n, input) in inputs.into_iter().enumerate() {
                let (profile, fit) = profile_checked(program, &input[..]).unwrap();
                let mut every = Profiler::new(program);
                let mut selector = Selector::new(vec![program]);
                for (i, line) in input.split_inclusive(|&b| b == b'\n').enumerate() {
                    let (content, _) = split_newline(line);
                    let kind = classify(content);
                    every.classified(&kind, content);
                    selector.observe_text(&kind, content, i as u64 + 1);
                }
                let expected = (selector.finish()).map(|s| {
                    (
                        s.candidates[0].evidence.noise.clone(),
                        s.candidates[0].evidence.noise_lines,
                    )
                });
                let fit = fit.map(|e| (e.noise, e.noise_lines));
                assert_eq!(profile, every.finish(), "{name}");
                assert_eq!(format!("{fit:?}"), format!("{expected:?}"), "{name}");
                if n == changed && n > 2 {
                    assert!(fit.is_err(), "{name}: the changed opcode fits");
                    misfits += 1;
                }
            }
        });
        assert!(misfits > 10, "{misfits} misfits");
    }

    /// Every fixture log, alone, repeated, followed by another program's log, and inside
    /// bpftool's wrapped output: in every number of parts, the profile and the verdict of one
    /// pass.
    #[test]
    fn parts_joined_are_one_pass() {
        let dir = std::env::temp_dir().join(format!("bpflog-parallel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let other =
            std::fs::read(fixtures().join("logs/reject_entry.xdp_reject_entry.l2.log")).unwrap();
        let wrapped = std::fs::read(fixtures().join("wrapped/bpftool-d.txt")).unwrap();
        let (mut compared, mut joins) = (0, 0);
        each_fixture_log(|name, program, log| {
            let inputs = [
                log.clone(),
                log.repeat(3),
                [log.as_slice(), other.as_slice(), log.as_slice()].concat(),
                [wrapped.as_slice(), log.as_slice(), wrapped.as_slice()].concat(),
            ];
            for input in inputs {
                let file_path = dir.join("log");
                std::fs::write(&file_path, &input).unwrap();
                let file = File::open(&file_path).unwrap();
                let (profile, fit) = profile_checked(program, &input[..]).unwrap();
                let fit = fit.map_err(|e| e.to_string());
                for threads in 2..=7 {
                    let (pass, j) = in_parts(&file, threads, 1, |at_start| {
                        CheckedPass::new(program, at_start)
                    })
                    .unwrap();
                    let (p, f) = pass.finish();
                    assert_eq!(p, profile, "{name}, {threads} parts");
                    assert_eq!(f.map_err(|e| e.to_string()), fit, "{name}, {threads} parts");
                    compared += 1;
                    joins += j;
                }
            }
        });
        let _ = std::fs::remove_dir_all(&dir);
        // The joins themselves were tested, not only the parts read again.
        assert!(compared > 1000, "{compared} comparisons");
        assert!(joins > compared, "{joins} joins in {compared} comparisons");
    }

    /// A line longer than a reader takes, in a part after the first: the error of one pass,
    /// naming the line by its number in the file, whatever the number of parts.
    #[test]
    fn a_line_too_long_in_a_later_part_is_numbered_from_the_start_of_the_file() {
        use bpflog_log::{LineTooLong, MAX_LINE};
        let log = std::fs::read(fixtures().join("logs/branchy.xdp_branchy.l2.log")).unwrap();
        let data = std::fs::read(fixtures().join("obj/branchy.o")).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        let program = Program::new(&object, object.program("xdp_branchy").unwrap()).unwrap();
        // More before the long line than the line and what follows: the first cut is before it.
        let before = (MAX_LINE + log.len()) / log.len() + 1;
        let lines = log.iter().filter(|&&b| b == b'\n').count() as u64 * before as u64;
        let mut input = log.repeat(before);
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 1));
        input.push(b'\n');
        input.extend_from_slice(&log);
        let path = std::env::temp_dir().join(format!("bpflog-long-part-{}", std::process::id()));
        std::fs::write(&path, &input).unwrap();
        let file = File::open(&path).unwrap();
        let error = |e: io::Error| {
            e.get_ref()
                .and_then(|e| e.downcast_ref::<LineTooLong>().copied())
        };
        let one = profile_checked(&program, &input[..])
            .map(drop)
            .map_err(error);
        assert_eq!(one, Err(Some(LineTooLong { line: lines + 1 })));
        for threads in [2, 3] {
            let parts = in_parts(&file, threads, 1, |at_start| {
                CheckedPass::new(&program, at_start)
            });
            assert_eq!(parts.map(drop).map_err(error), one, "{threads} parts");
        }
        let _ = std::fs::remove_file(&path);
    }
}
