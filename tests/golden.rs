//! Golden tests over the real fixture logs, with the kernel as the oracle.
//!
//! For every kernel log in `tests/fixtures/logs`: the log with its annotation lines removed,
//! annotated, is the kernel's log byte for byte; the kernel's log itself comes back unchanged; the
//! program is found without being named; and the colored output is an insta snapshot.

mod common;

use bpflog::object::BpfObject;
use bpflog::{AnnotateOptions, Palette, Program, annotate_bare, select};
use common::{FixtureLog, fixture_logs, strip_annotations};

fn annotate_bytes(program: &Program<'_, '_>, log: &[u8], color: bool) -> Vec<u8> {
    let mut out = Vec::new();
    annotate_bare(
        program,
        log,
        &mut out,
        &AnnotateOptions::default().palette(Palette::new(color)),
    )
    .expect("annotate");
    out
}

/// Runs `check` with the fixture's object parsed and its programs laid out.
fn with_programs(fixture: &FixtureLog, check: impl FnOnce(&[Program<'_, '_>], &[u8])) {
    let data = std::fs::read(&fixture.object).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let programs = object
        .programs()
        .into_iter()
        .map(|id| Program::new(&object, id))
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let log = std::fs::read(&fixture.log).unwrap();
    check(&programs, &log);
}

/// Fixtures whose object carries `.BTF.ext`: the kernel annotated their logs from the same
/// records bpflog reads, so bpflog must reproduce them exactly. (Objects without it get their
/// annotations from DWARF, where the kernel printed none: see `dwarf_only_objects_...`.)
fn kernel_exact() -> impl Iterator<Item = FixtureLog> {
    fixture_logs()
        .into_iter()
        .filter(|f| !f.name.contains(".nobtfext."))
}

fn named<'a, 'o, 'd>(programs: &'a [Program<'o, 'd>], name: &str) -> &'a Program<'o, 'd> {
    programs
        .iter()
        .find(|p| p.name() == name)
        .unwrap_or_else(|| panic!("no program {name}"))
}

#[test]
fn stripped_logs_come_back_as_the_kernel_printed_them() {
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let stripped = strip_annotations(log);
            let out = annotate_bytes(program, &stripped, false);
            assert!(
                out == log,
                "{}: annotated stripped log differs from the kernel's",
                fixture.name
            );
        });
    }
}

#[test]
fn stripped_logs_come_back_with_the_same_diagnostic() {
    // A log with the kernel's lines and one without go different ways through the annotator
    // (lines kept, lines inserted). The diagnostic reads every instruction either way, and
    // follows both the same. Twice too: the fit check takes the second copy's instructions on
    // its short path, as seen before. (Taken as one log, the second copy of the stripped log
    // may lack its first source line: the first copy's last line was the same.)
    let mut diagnostics = 0;
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let options = AnnotateOptions::default().diagnostic(true);
            for input in [log.to_vec(), [log, log].concat()] {
                let (mut whole, mut stripped) = (Vec::new(), Vec::new());
                annotate_bare(program, &input[..], &mut whole, &options).unwrap();
                let input_stripped = strip_annotations(&input);
                annotate_bare(program, &input_stripped[..], &mut stripped, &options).unwrap();
                let diagnostic = whole.strip_prefix(&input[..]).unwrap();
                let last_line = log.split_inclusive(|&b| b == b'\n').next_back().unwrap();
                let before = stripped.strip_suffix(diagnostic);
                assert!(
                    before.is_some_and(|b| b.ends_with(last_line)),
                    "{}: the diagnostic differs without the kernel's lines",
                    fixture.name
                );
                diagnostics += usize::from(!diagnostic.is_empty());
            }
        });
    }
    assert!(diagnostics > 20, "{diagnostics} diagnostics");
}

/// `text` without its color escapes (`ESC [ ... m`).
fn without_colors(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == 0x1b && text.get(i + 1) == Some(&b'[') {
            let end = text[i..].iter().position(|&b| b == b'm').unwrap();
            i += end + 1;
            continue;
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// `log` with a line of a newer kernel (unknown here, so maybe the error: with colors, held
/// back until the next line says otherwise) before each line that `before` picks.
fn with_new_lines(log: &[u8], before: fn(&[u8]) -> bool) -> Vec<u8> {
    (log.split_inclusive(|&b| b == b'\n'))
        .flat_map(|l| [if before(l) { &b"a new line\n"[..] } else { b"" }, l].concat())
        .collect()
}

/// Whether `line` is an instruction's (`N: (xx) ...`).
fn is_insn_line(line: &[u8]) -> bool {
    line.first().is_some_and(u8::is_ascii_digit) && line.windows(3).any(|w| w == b": (")
}

#[test]
fn plain_output_is_colored_output_without_its_colors() {
    // Read as a file, plain, most lines of a log go out in runs, only counted (instructions
    // seen before on a short path, see `SegmentAnnotator::only_counts`); with colors, lines
    // that may be the error are held until the next line says, and only instruction lines
    // join runs. Logs with and without the kernel's lines, once and twice (the second copy's
    // instructions all seen before, jumps that resume a path at level 1 among them), and with
    // an unknown line before each instruction.
    let mut compared = 0;
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let stripped = strip_annotations(log);
            let twice = [log, log].concat();
            let stripped_twice = [&stripped[..], &stripped[..]].concat();
            let inputs = [
                log.to_vec(),
                with_new_lines(&twice, is_insn_line),
                with_new_lines(&stripped_twice, is_insn_line),
                twice,
                stripped,
                stripped_twice,
            ];
            for input in inputs {
                let streamed = |color: bool| {
                    let options = AnnotateOptions::default().palette(Palette::new(color));
                    let mut out = Vec::new();
                    bpflog::annotate_stream(program, &input[..], &mut out, &options).unwrap();
                    out
                };
                let (plain, colored) = (streamed(false), streamed(true));
                assert!(
                    plain == without_colors(&colored),
                    "{}: plain output differs from colored output",
                    fixture.name
                );
                compared += 1;
            }
        });
    }
    assert!(compared > 100, "{compared}");
}

#[test]
fn kernel_logs_come_back_unchanged() {
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            let out = annotate_bytes(named(programs, &fixture.program), log, false);
            assert!(out == log, "{}: the kernel's log was changed", fixture.name);
        });
    }
}

#[test]
fn every_prefix_of_a_log_comes_back_too() {
    // The kernel's rule only looks back: any prefix of a log, stripped and annotated, is the same
    // prefix of the kernel's log (the property a log cut short by a full buffer relies on).
    for fixture in kernel_exact().filter(|f| f.level == 2) {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let lines: Vec<&[u8]> = log.split_inclusive(|&b| b == b'\n').collect();
            for cut in (0..lines.len()).step_by(lines.len() / 20 + 1) {
                let prefix: Vec<u8> = lines[..cut].concat();
                let out = annotate_bytes(program, &strip_annotations(&prefix), false);
                // A prefix may end with annotation lines whose instruction was cut off.
                let expected_len = prefix.len() - trailing_annotations(&lines[..cut]);
                assert!(
                    out == prefix[..expected_len],
                    "{}: prefix of {cut} lines differs",
                    fixture.name
                );
            }
        });
    }
}

fn trailing_annotations(lines: &[&[u8]]) -> usize {
    lines
        .iter()
        .rev()
        .take_while(|l| l.starts_with(b";"))
        .map(|l| l.len())
        .sum()
}

#[test]
fn crlf_logs_keep_their_line_endings() {
    for fixture in kernel_exact().filter(|f| f.level == 2) {
        with_programs(&fixture, |programs, log| {
            let crlf: Vec<u8> = log
                .split_inclusive(|&b| b == b'\n')
                .flat_map(|l| [&l[..l.len() - 1], b"\r\n"].concat())
                .collect();
            let out = annotate_bytes(
                named(programs, &fixture.program),
                &strip_annotations(&crlf),
                false,
            );
            assert!(out == crlf, "{}: CRLF log differs", fixture.name);
        });
    }
}

#[test]
fn dwarf_only_objects_add_lines_and_change_nothing_else() {
    let mut annotated = 0;
    for fixture in fixture_logs()
        .into_iter()
        .filter(|f| f.name.contains(".nobtfext."))
    {
        with_programs(&fixture, |programs, log| {
            assert!(
                !log.starts_with(b";") && !log.windows(2).any(|w| w == b"\n;"),
                "the kernel printed no source lines"
            );
            let out = annotate_bytes(named(programs, &fixture.program), log, false);
            assert!(
                strip_annotations(&out) == log,
                "{}: only annotation lines are added",
                fixture.name
            );
            annotated += usize::from(out.len() > log.len());
        });
    }
    assert!(annotated >= 2, "DWARF annotated the rejected logs");
}

#[test]
fn the_program_is_found_without_being_named() {
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            for input in [log.to_vec(), strip_annotations(log)] {
                if fixture.program.starts_with("xdp_copy_") && input.len() != log.len() {
                    continue; // Same code, other lines: see `twins_are_told_apart_only_when_their_output_differs`.
                }
                let selection = select(programs, &input[..])
                    .unwrap_or_else(|e| panic!("{}: {e}", fixture.name));
                let fitting: Vec<&str> = std::iter::once(selection.chosen)
                    .chain(selection.equivalent.iter().copied())
                    .map(|i| programs[i].name())
                    .collect();
                assert!(
                    fitting.contains(&fixture.program.as_str()),
                    "{}: chose {fitting:?}",
                    fixture.name
                );
                // Whichever was chosen annotates the log exactly.
                let out =
                    annotate_bytes(&programs[selection.chosen], &strip_annotations(log), false);
                assert!(
                    out == log,
                    "{}: chosen program {} annotates differently",
                    fixture.name,
                    programs[selection.chosen].name()
                );
            }
        });
    }
}

/// The selection for a log of twins.c: programs that fit, chosen first.
fn fitting(log: &str, strip: bool) -> Result<Vec<String>, bpflog::SelectError> {
    let fixture = fixture_logs().into_iter().find(|f| f.name == log).unwrap();
    let data = std::fs::read(&fixture.object).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let programs: Vec<Program> = object
        .programs()
        .into_iter()
        .map(|id| Program::new(&object, id).unwrap())
        .collect();
    let mut input = std::fs::read(&fixture.log).unwrap();
    if strip {
        input = strip_annotations(&input);
    }
    let selection = select(&programs, &input[..])?;
    Ok(std::iter::once(selection.chosen)
        .chain(selection.equivalent)
        .map(|i| programs[i].name().to_owned())
        .collect())
}

#[test]
fn twins_are_told_apart_only_when_their_output_differs() {
    // Three programs made by one macro on one source line: same code, same line info. Any serves.
    for strip in [false, true] {
        assert_eq!(
            fitting("twins.xdp_twin_b.l2.log", strip).unwrap(),
            ["xdp_twin_a", "xdp_twin_b", "xdp_twin_c"]
        );
    }
    // Copy-pasted twins: same code, other line numbers. The kernel's annotations tell them apart...
    assert_eq!(
        fitting("twins.xdp_copy_two.l2.log", false).unwrap(),
        ["xdp_copy_two"]
    );
    // A level-1 log of an accepted program is the summary line alone: every program fits it and
    // none would add a line, so any serves.
    assert_eq!(fitting("twins.xdp_copy_one.l1.log", true).unwrap().len(), 5);
    // ...and without them bpflog refuses to guess.
    match fitting("twins.xdp_copy_two.l2.log", true) {
        Err(bpflog::SelectError::Ambiguous(names, _)) => {
            assert_eq!(names, ["xdp_copy_one", "xdp_copy_two"])
        }
        other => panic!("expected an ambiguity, got {other:?}"),
    }
}

#[test]
fn colored_output_snapshots() {
    for fixture in fixture_logs() {
        with_programs(&fixture, |programs, log| {
            let out = annotate_bytes(
                named(programs, &fixture.program),
                &strip_annotations(log),
                true,
            );
            let text = String::from_utf8(out).expect("fixture logs are UTF-8");
            insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
                insta::assert_snapshot!(format!("colored__{}", fixture.name.trim_end_matches(".log")), text);
            });
        });
    }
}

#[test]
fn the_verdict_is_read_from_the_log_in_every_output_mode() {
    let manifest = std::fs::read_to_string(common::fixtures().join("logs/MANIFEST")).unwrap();
    for fixture in kernel_exact() {
        let rejected = manifest
            .lines()
            .any(|l| l.starts_with(&fixture.name) && l.contains("rejected"));
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            for (color, diagnostic) in [(false, false), (true, false), (false, true)] {
                let options = AnnotateOptions::default()
                    .palette(Palette::new(color))
                    .diagnostic(diagnostic);
                let stats = annotate_bare(program, log, std::io::sink(), &options).unwrap();
                // An accepted level-1 log holds no instruction: nothing to reject.
                assert_eq!(
                    stats.rejected,
                    rejected && stats.instructions > 0,
                    "{} (color {color}, diagnostic {diagnostic})",
                    fixture.name
                );
            }
        });
    }
}

#[test]
fn a_cut_log_with_the_kernels_lines_comes_back_unchanged_from_the_streaming_annotator() {
    // Cut at the top, a log may start with instructions whose source line the kernel printed
    // before the cut: the annotator waits for the first annotation line before it decides.
    for fixture in kernel_exact().filter(|f| f.level == 2) {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            for cut in [log.len() / 3, log.len() / 2 + 11] {
                let tail = &log[cut..];
                // A tail without any annotation line cannot say the kernel printed them.
                if !tail.split(|&b| b == b'\n').any(|l| l.starts_with(b";")) {
                    continue;
                }
                assert!(
                    annotate_bytes(program, tail, false) == tail,
                    "{}: cut at {cut}",
                    fixture.name
                );
            }
        });
    }
}

#[test]
fn one_pass_and_two_passes_agree() {
    // `bpflog annotate` of an object with one program streams in one pass; with several it plans
    // first. Both must write the same bytes for every log the program fits: whole, stripped, and
    // cut at the top (where the one pass cannot know beforehand that the log was cut).
    let styles = [bpflog::Style::Kernel, bpflog::Style::Rich];
    let mut compared = 0;
    for fixture in fixture_logs() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let index = programs.iter().position(|p| p.name() == program.name());
            let stripped = strip_annotations(log);
            let cuts = [0, log.len() / 3, log.len() / 2 + 11];
            let inputs = cuts
                .iter()
                .map(|&cut| &log[cut..])
                .chain([&stripped[..], &stripped[stripped.len() / 2..]]);
            for input in inputs {
                let plan = bpflog::plan(programs, input, Some(program.name())).expect("plan");
                if plan.segments.iter().any(|s| s.misfit.is_some()) {
                    continue;
                }
                for style in styles {
                    let options = AnnotateOptions::default().style(style);
                    let mut one = Vec::new();
                    let streamed =
                        bpflog::annotate_stream(program, input, &mut one, &options).unwrap();
                    assert!(streamed.iter().all(|s| s.misfit.is_none()));
                    let mut two = Vec::new();
                    bpflog::annotate_planned(&plan, programs, input, &mut two, &options).unwrap();
                    assert!(
                        plan.segments
                            .iter()
                            .all(|s| s.program.is_none() || s.program == index)
                    );
                    assert!(
                        one == two,
                        "{} ({style:?}, {} bytes): one pass and two differ",
                        fixture.name,
                        input.len()
                    );
                    compared += 1;
                }
            }
        });
    }
    assert!(compared > 300, "{compared} comparisons");
}

#[test]
fn logs_read_as_files_are_annotated_as_line_by_line() {
    // `annotate_stream` reads a file (finding its logs) and passes the lines that only detail the
    // verifier's work through without classifying them, where they change nothing; `annotate`
    // gives every line to the annotator (which takes lines of a log that goes out as it came in a
    // shorter way). Bytes and counts must agree, with and without the kernel's lines in the log,
    // in both styles, with the options that turn the shortcuts off (`--annotate-all`), and with
    // those that hold lines back (colors, the diagnostic), while detail lines take the shortcut
    // only when no line is held.
    use bpflog::Style::{Kernel, Rich};
    let mut compared = 0;
    for fixture in fixture_logs() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let stripped = strip_annotations(log);
            let cut = &log[log.len() / 2..];
            // New lines before detail lines, and before instruction lines, which may join runs
            // too.
            let unknown = with_new_lines(log, bpflog::log::is_detail);
            let unknown_insns = with_new_lines(log, is_insn_line);
            let variants = [
                (Kernel, false, false, false),
                (Kernel, true, false, false),
                (Kernel, false, true, false),
                (Kernel, false, false, true),
                (Kernel, true, false, true),
                (Rich, false, false, false),
                (Rich, false, false, true),
                (Rich, true, false, true),
            ];
            for input in [log, &stripped[..], cut, &unknown[..], &unknown_insns[..]] {
                // What a log's lines do to the counts does not depend on colors, which take
                // every line through the whole annotator.
                let mut plain = None;
                for (style, color, annotate_all, diagnostic) in variants {
                    let options = AnnotateOptions::default()
                        .style(style)
                        .palette(Palette::new(color))
                        .annotate_all(annotate_all)
                        .diagnostic(diagnostic);
                    let mut by_line = Vec::new();
                    let stats = annotate_bare(program, input, &mut by_line, &options).unwrap();
                    let mut streamed = Vec::new();
                    let logs =
                        bpflog::annotate_stream(program, input, &mut streamed, &options).unwrap();
                    let name = &fixture.name;
                    assert_eq!(logs.len(), 1, "{name}: one log");
                    assert_eq!(
                        logs[0].stats,
                        stats,
                        "{name} ({} bytes, {style:?}, {color})",
                        input.len()
                    );
                    assert!(
                        by_line == streamed,
                        "{name} ({} bytes, {style:?}, {color})",
                        input.len()
                    );
                    if style == Kernel && !annotate_all && !diagnostic {
                        let plain = *plain.get_or_insert(stats);
                        assert_eq!(stats, plain, "{name} ({} bytes): colors", input.len());
                    }
                    compared += 1;
                }
            }
        });
    }
    assert!(compared > 100, "{compared} comparisons");
}

#[test]
fn a_log_cut_after_an_annotation_line_gets_its_line_end() {
    // An annotation line kept from the log is written whole, line end included, even when the
    // input ends right after its text (as an inserted one would be).
    let mut checked = 0;
    for fixture in kernel_exact().filter(|f| f.level == 2) {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            // The last one: by then the log is known to have the kernel's lines.
            let Some(at) = log.windows(3).rposition(|w| w == b"\n; ") else {
                return;
            };
            let end = at + 1 + log[at + 1..].iter().position(|&b| b == b'\n').unwrap();
            let cut = &log[..end];
            let expected = [cut, b"\n"].concat();
            assert!(
                annotate_bytes(program, cut, false) == expected,
                "{}",
                fixture.name
            );
            let mut streamed = Vec::new();
            bpflog::annotate_stream(program, cut, &mut streamed, &AnnotateOptions::default())
                .unwrap();
            assert!(streamed == expected, "{}", fixture.name);
            checked += 1;
        });
    }
    assert!(checked > 5, "{checked}");
}

/// `log` with the first register named on each of the first two instruction lines that name
/// one (`r1`, `w2`) renamed: the same instructions and opcodes with other registers (one line
/// alone among lines that fit would be noise, not a misfit); `None` if no two lines name one.
fn with_registers_renamed(log: &[u8]) -> Option<Vec<u8>> {
    let mut at = 0;
    let mut changed = log.to_vec();
    let mut renamed = 0;
    for line in log.split_inclusive(|&b| b == b'\n') {
        // The text after `N: (xx) `.
        let text = bpflog::log::insn_head(line).map(|_| line.splitn(2, |&b| b == b')').nth(1));
        if let Some(Some(text)) = text
            && let Some(i) = (text.windows(2))
                .position(|w| (w[0] == b'r' || w[0] == b'w') && w[1].is_ascii_digit())
        {
            let digit = at + (line.len() - text.len()) + i + 1;
            changed[digit] = if changed[digit] == b'9' {
                b'8'
            } else {
                changed[digit] + 1
            };
            renamed += 1;
            if renamed == 2 {
                return Some(changed);
            }
        }
        at += line.len();
    }
    None
}

#[test]
fn each_log_of_a_file_is_checked_whole() {
    // Instruction lines that fitted a program in one log are taken as fitting in the next logs
    // when their opcode and text are the same. A file of a log three times, with registers
    // renamed in the third copy, must fit in the first two and, in the third, be what that copy
    // alone is: read in one pass and planned first.
    let mut misfits = 0;
    for fixture in kernel_exact() {
        with_programs(&fixture, |programs, log| {
            let program = named(programs, &fixture.program);
            let Some(changed) = with_registers_renamed(log) else {
                return;
            };
            let fits = |input: &[u8]| -> Vec<bool> {
                let streamed = bpflog::annotate_stream(
                    program,
                    input,
                    std::io::sink(),
                    &AnnotateOptions::default(),
                )
                .unwrap();
                let plan = bpflog::plan(programs, input, Some(program.name())).unwrap();
                let planned = plan.segments.iter().map(|s| s.misfit.is_none());
                let streamed: Vec<bool> = streamed.iter().map(|s| s.misfit.is_none()).collect();
                assert_eq!(streamed, planned.collect::<Vec<_>>(), "{}", fixture.name);
                streamed
            };
            let alone = fits(&changed);
            if alone.len() != 1 {
                return;
            }
            let thrice = fits(&[log, log, &changed].concat());
            assert_eq!(thrice, [true, true, alone[0]], "{}", fixture.name);
            misfits += usize::from(!alone[0]);
        });
    }
    assert!(misfits > 20, "{misfits} logs misfit with registers renamed");
}

#[test]
fn dwarf_only_objects_take_the_kernels_source_lines_of_the_full_object() {
    // The logs of the full objects carry the `;` lines the kernel printed from the `.BTF.ext`
    // the loader passed. The object without it has DWARF's rows, no text: what can be compared
    // (the file, the line) is, and the log comes back unchanged, as the stripped log does.
    let mut checked = 0;
    for fixture in fixture_logs()
        .into_iter()
        .filter(|f| f.name.contains(".nobtfext."))
    {
        let full = fixture.name.replace(".nobtfext.", ".");
        let log = std::fs::read(fixture.log.with_file_name(&full)).unwrap();
        if !log.windows(2).any(|w| w == b"\n;") {
            continue; // An accepted program's level-1 log: its summary.
        }
        with_programs(&fixture, |programs, _| {
            // Lines that do not fit the program chosen (noise among lines that do), or none
            // fits.
            let misfits = |log: &[u8]| match select(programs, log) {
                Ok(s) => {
                    assert_eq!(programs[s.chosen].name(), fixture.program, "{full}");
                    s.candidates[s.chosen].evidence.noise_lines
                }
                Err(e) => {
                    eprintln!("{full}: {e}");
                    u64::MAX
                }
            };
            assert_eq!(misfits(&log), 0, "{full}");
            let program = named(programs, &fixture.program);
            assert!(
                annotate_bytes(program, &log, false) == log,
                "{full}: the log with the kernel's lines changed"
            );
            let stripped = strip_annotations(&log);
            assert!(
                strip_annotations(&annotate_bytes(program, &stripped, false)) == stripped,
                "{full}: stripped"
            );
            // A source line the program does not have still does not fit: its line moved by
            // one, on an instruction inside a function (not its first).
            let text = String::from_utf8(log.clone()).unwrap();
            let (at, moved) = text
                .match_indices("\n; ")
                .find_map(|(at, _)| {
                    let line = &text[at + 1..][..text[at + 1..].find('\n')?];
                    let next = &text[at + 2 + line.len()..];
                    let index: u32 = next[..next.find(':')?].parse().ok()?;
                    let first = program.layout.parts.iter().any(|p| p.start == index);
                    let (_, number) = line.rsplit_once(':')?;
                    let number: u32 = number.parse().ok()?;
                    (!first).then(|| {
                        (
                            at + 1,
                            line.replace(&format!(":{number}"), &format!(":{}", number + 1)),
                        )
                    })
                })
                .unwrap();
            let end = at + text[at..].find('\n').unwrap();
            let wrong = format!("{}{moved}{}", &text[..at], &text[end..]);
            assert!(
                misfits(wrong.as_bytes()) > 0,
                "{full}: a moved source line fits"
            );
            checked += 1;
        });
    }
    assert_eq!(
        checked, 3,
        "xdp_subprogs at level 2, reject_entry at levels 1 and 2"
    );
}
