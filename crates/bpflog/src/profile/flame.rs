//! Flame graphs of verification effort: where, by call stack, the verifier's visits went.
//!
//! A flame graph's stacks are usually sampled; here each instruction line of the log is one
//! sample, and its stack is what the verifier was inside when it printed it:
//!
//! 1. the entry program (every stack starts there, global functions verified on their own too);
//! 2. the BPF-to-BPF frames of the path as the log shows them — the same call stack the
//!    rejection diagnostic reports ([`crate::diagnostic::CallStack`]): a call followed by a jump
//!    into a subprogram or callback pushes a frame, an `exit` back to the instruction after the
//!    call pops it, `from X to Y` resumes the stack recorded at X; no deeper than the kernel's
//!    [`MAX_CALL_FRAMES`](crate::MAX_CALL_FRAMES) (a log that goes deeper says so in
//!    [`FoldedStacks::too_deep`]);
//! 3. the functions inlined at the instruction, outermost first (DWARF, via [`locate`]), named
//!    `name (inlined)`;
//! 4. the source line, `file:line text`, by the record the kernel itself uses (`find_linfo`), so
//!    a line frame's width is the line's `visits` in the profile (summed over its stacks).
//!
//! Widths are visits. The folded form (`frame;frame;... count`, one distinct stack per line) is
//! what inferno draws; a `;` inside a frame would split it, so names and source text have
//! their `;`s written as `；` (U+FF1B) (a source line's trailing one dropped), and a frame
//! ending in a number gets a no-break space before it (inferno would take ` N M` for a differential's two counts). Names
//! and texts come from the object: their control bytes are escaped
//! ([`escape_controls`](crate::escape_controls)), which also keeps the SVG well-formed XML.

use crate::Program;
use crate::diagnostic::{CallStack, Calls};
use crate::escape::escape_controls_str as shown;
use crate::locate::locate;
use crate::sink::Observer;
use crate::source::SourceFiles;
use bpflog_log::{InsnHead, Line};
use bpflog_object::LineOrigin;
use std::collections::HashMap;
use std::io::{self, Write};

/// Instruction lines counted per (call stack, instruction), as the log is read.
#[derive(Debug)]
pub(crate) struct StackCounter<'p, 'o, 'd> {
    program: &'p Program<'o, 'd>,
    calls: CallStack,
    /// Distinct call stacks seen (call instruction indices, outermost first; each at most as
    /// deep as the kernel allows).
    stacks: Vec<Calls>,
    stack_ids: HashMap<Calls, usize>,
    /// The stack of the current path: its id.
    current: usize,
    /// Visits per (stack id, instruction index).
    counts: HashMap<(usize, u64), u64>,
    /// Lines read.
    lines: u64,
    /// The first line that showed more call frames than the kernel allows.
    too_deep: Option<u64>,
}

impl<'p, 'o, 'd> StackCounter<'p, 'o, 'd> {
    /// A counter for `program`.
    pub fn new(program: &'p Program<'o, 'd>) -> Self {
        let mut stack_ids = HashMap::new();
        stack_ids.insert(Calls::new(), 0);
        StackCounter {
            program,
            calls: CallStack::default(),
            stacks: vec![Calls::new()],
            stack_ids,
            current: 0,
            counts: HashMap::new(),
            lines: 0,
            too_deep: None,
        }
    }

    /// Counts one log line (with or without its line terminator).
    #[cfg(test)]
    pub(crate) fn line(&mut self, raw: &[u8]) {
        let (content, _) = bpflog_log::split_newline(raw);
        crate::sink::decode(content, 0, self);
    }

    /// Counts one classified line (without its terminator).
    pub(crate) fn observe(&mut self, kind: &Line<'_>, content: &[u8]) {
        self.lines += 1;
        if self.calls.observe(kind, content) && self.too_deep.is_none() {
            self.too_deep = Some(self.lines);
        }
        if let Line::Insn(insn) = kind {
            let calls = self.calls.calls();
            if self.stacks.get(self.current) != Some(calls) {
                self.current = match self.stack_ids.get(calls) {
                    Some(&id) => id,
                    None => {
                        self.stacks.push(calls.clone());
                        self.stack_ids.insert(calls.clone(), self.stacks.len() - 1);
                        self.stacks.len() - 1
                    }
                };
            }
            *self.counts.entry((self.current, insn.index)).or_insert(0) += 1;
        }
    }

    /// The stacks, folded: one line per distinct stack, sorted (`frame;frame;... count`).
    pub fn finish(self, files: &mut SourceFiles) -> FoldedStacks {
        let program = self.program;
        let root = program.name().to_owned();
        // The frames below the BPF-to-BPF ones, per instruction: inlined functions, the line.
        let mut tails: HashMap<u64, Vec<String>> = HashMap::new();
        let mut folded: HashMap<String, u64> = HashMap::new();
        for ((stack, index), count) in self.counts {
            let mut frames = vec![frame(&root)];
            let calls = self
                .stacks
                .get(stack)
                .map(|c| c.as_slice())
                .unwrap_or_default();
            // Each call's frame is the function it was made from; the last, the instruction's.
            for at in calls.iter().map(|&c| u64::from(c)).chain([index]) {
                let name = function_at(program, at).unwrap_or("[outside the program]");
                if frames.len() == 1 && name == root {
                    continue;
                }
                frames.push(frame(name));
            }
            let tail = tails
                .entry(index)
                .or_insert_with(|| tail_frames(program, index, files));
            frames.extend(tail.iter().cloned());
            *folded.entry(frames.join(";")).or_insert(0) += count;
        }
        let mut lines: Vec<(String, u64)> = folded.into_iter().collect();
        lines.sort();
        FoldedStacks {
            program: root,
            lines,
            too_deep: self.too_deep,
        }
    }
}

/// The name of the function (entry program or subprogram) holding loaded instruction `index`.
fn function_at<'a>(program: &'a Program<'_, '_>, index: u64) -> Option<&'a str> {
    let (part, _) = program.layout.locate(u32::try_from(index).ok()?)?;
    Some(program.object()?.function(part.function).name.as_str())
}

/// The inlined functions (outermost first) and the source line of instruction `index`.
fn tail_frames(program: &Program<'_, '_>, index: u64, files: &mut SourceFiles) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(index) = u32::try_from(index) else {
        return out;
    };
    if let Some(src) = locate(program, index) {
        // `inlined` goes outward from the innermost function; its last caller is the
        // subprogram, which already has its frame.
        let mut chain: Vec<&str> = vec![src.function];
        chain.extend(src.inlined.iter().map(|step| step.caller));
        chain.pop();
        out.extend(
            chain
                .iter()
                .rev()
                .map(|f| format!("{} (inlined)", frame(f))),
        );
    }
    if let Some(row) = program.lines.find(index) {
        let text = match program.lines.origin() {
            LineOrigin::Dwarf => files
                .get(row.file)
                .and_then(|f| f.line(row.line).map(|t| t.trim_ascii_start().to_vec()))
                .unwrap_or_default(),
            _ => row.trimmed_text().to_vec(),
        };
        let text = String::from_utf8_lossy(&text);
        let text = text.trim_end();
        let text = frame(text.strip_suffix(';').unwrap_or(text));
        let base = frame(&String::from_utf8_lossy(row.basename()));
        out.push(if text.is_empty() {
            format!("{base}:{}", row.line)
        } else {
            numeric_tail_glued(format!("{base}:{} {text}", row.line))
        });
    } else {
        out.push("[no line info]".to_owned());
    }
    out
}

/// A name or text as a frame: control bytes escaped, `;` (which separates frames) as `；`.
fn frame(text: &str) -> String {
    shown(text).replace(';', "；")
}

/// A frame ending in ` 12345` would be read as a second sample count (a differential flame
/// graph's): its last space becomes a no-break space.
fn numeric_tail_glued(frame: String) -> String {
    match frame.rfind(' ') {
        Some(at)
            if frame[at + 1..]
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.') =>
        {
            format!("{}\u{a0}{}", &frame[..at], &frame[at + 1..])
        }
        _ => frame,
    }
}

/// Call stacks of a log with their visits, ready for a flame graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedStacks {
    /// The program's name.
    pub program: String,
    /// `(frames joined by ';', visits)`, sorted by frames.
    pub lines: Vec<(String, u64)>,
    /// The first line of the log (from 1) that showed more call frames than the kernel allows
    /// ([`MAX_CALL_FRAMES`](crate::MAX_CALL_FRAMES)): stacks are not followed deeper.
    pub too_deep: Option<u64>,
}

impl FoldedStacks {
    /// Writes the folded stacks, one `frames count` line each (the input of `flamegraph.pl`).
    pub fn write_folded(&self, out: &mut impl Write) -> io::Result<()> {
        for (frames, count) in &self.lines {
            writeln!(out, "{frames} {count}")?;
        }
        Ok(())
    }

    /// Writes the flame graph as SVG, with inferno's interactive search and zoom (feature
    /// `flamegraph`).
    #[cfg(feature = "flamegraph")]
    pub fn write_svg(&self, out: &mut impl Write) -> io::Result<()> {
        let mut options = inferno::flamegraph::Options::default();
        options.title = format!("Verification effort: {}", shown(&self.program));
        options.subtitle = Some(
            "stacks: program → BPF-to-BPF calls → inlined functions → source line; widths: instruction visits in the verifier log".to_owned(),
        );
        options.count_name = "visits".to_owned();
        options.name_type = "Frame:".to_owned();
        // Colors from the names, not random: the same log draws the same picture.
        options.deterministic = true;
        // `file:line` and the function names lead: cut long frames at their end.
        options.text_truncate_direction = inferno::flamegraph::TextTruncateDirection::Right;
        let folded: Vec<String> = self
            .lines
            .iter()
            .map(|(frames, count)| format!("{frames} {count}"))
            .collect();
        if folded.is_empty() {
            // inferno draws no graph without samples: an empty log gets a note instead.
            return out.write_all(EMPTY_SVG.as_bytes());
        }
        inferno::flamegraph::from_lines(&mut options, folded.iter().map(String::as_str), out)
    }
}

#[cfg(feature = "flamegraph")]
const EMPTY_SVG: &str = "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"1200\" height=\"60\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"600\" y=\"30\" text-anchor=\"middle\">no instruction lines in the log</text></svg>\n";

/// The stack counter follows calls through every line: it classifies each.
impl Observer for StackCounter<'_, '_, '_> {
    fn ignores_details(&self) -> bool {
        false
    }

    fn insn_seen(&mut self, _: &InsnHead<'_>, _: &[u8], _: u64) -> bool {
        false
    }

    fn observe(&mut self, kind: &Line<'_>, payload: &[u8], _: u64) {
        StackCounter::observe(self, kind, payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_CALL_FRAMES;

    #[test]
    fn stacks_are_no_deeper_than_the_kernels_frames() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let data = std::fs::read(fixtures.join("obj/reject_subprog.o")).unwrap();
        let object = bpflog_object::BpfObject::parse(&data).unwrap();
        let program = Program::new(&object, object.programs()[0]).unwrap();
        let (log, line) = crate::diagnostic::tests::nested(10_000);
        let mut counter = StackCounter::new(&program);
        for raw in log.split_inclusive(|&b| b == b'\n') {
            counter.line(raw);
        }
        // One stack per depth, from none to the kernel's deepest.
        assert_eq!(counter.stacks.len(), MAX_CALL_FRAMES);
        assert!(counter.stacks.iter().all(|s| s.len() < MAX_CALL_FRAMES));
        let folded = counter.finish(&mut SourceFiles::new(Default::default()));
        assert_eq!(folded.too_deep, Some(line));
    }
}
