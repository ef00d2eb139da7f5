//! Logs as users paste them: wrapped by their loader, several in one file, from several objects,
//! cut at the top by a full buffer, from kernels before 6.9, laid out by other loaders.
//!
//! The real inputs are `tests/fixtures/wrapped/bpftool-d.txt` (bpftool -d over four rejected
//! objects), `veristat-garbled.txt` (a veristat capture with libbpf's stderr inside a `;` line,
//! made from the fixture logs by `veristat_garbled.py`) and the kernel logs of the fixtures; the
//! other wrappers (veristat, cilium/ebpf, aya), cut and old-kernel logs and a cilium/ebpf layout
//! are derived here from real logs, each by a function that says how.

mod common;

use bpflog::object::{BpfObject, Loader};
use bpflog::{AnnotateOptions, ExistingAnnotations, Program, annotate_planned, plan};
use common::{fixtures, strip_annotations};

/// Runs `f` with every program of the named fixture objects laid out by every loader.
fn with_programs<R>(objects: &[&str], f: impl FnOnce(&[Program<'_, '_>]) -> R) -> R {
    let datas: Vec<Vec<u8>> = objects
        .iter()
        .map(|o| std::fs::read(fixtures().join("obj").join(o)).unwrap())
        .collect();
    let parsed: Vec<BpfObject> = datas.iter().map(|d| BpfObject::parse(d).unwrap()).collect();
    let mut programs = Vec::new();
    for object in &parsed {
        for id in object.programs() {
            for loader in Loader::ALL {
                programs.push(Program::with_loader(object, id, loader).unwrap());
            }
        }
    }
    f(&programs)
}

/// Plans and annotates `input` in kernel style.
fn annotate(programs: &[Program<'_, '_>], input: &[u8]) -> Vec<u8> {
    let found = plan(programs, input, None).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    annotate_planned(
        &found,
        programs,
        input,
        &mut out,
        &AnnotateOptions::default(),
    )
    .unwrap();
    out
}

fn log(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join("logs").join(name)).unwrap()
}

/// Drops annotation lines, also behind a cilium/ebpf tab.
fn strip_all(text: &[u8]) -> Vec<u8> {
    text.split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b";") && !l.starts_with(b"\t;"))
        .flatten()
        .copied()
        .collect()
}

fn assert_round_trip(programs: &[Program<'_, '_>], original: &[u8], what: &str) {
    let from_stripped = annotate(programs, &strip_all(original));
    assert!(
        from_stripped == original,
        "{what}: the stripped file annotated differs:\n{}",
        String::from_utf8_lossy(&from_stripped)
    );
    assert!(
        annotate(programs, original) == original,
        "{what}: the file was changed"
    );
}

const BPFTOOL_OBJECTS: [&str; 4] = [
    "reject_subprog.o",
    "reject_entry.o",
    "reject_callback.o",
    "core_fail.o",
];

#[test]
fn bpftool_output_with_four_programs_from_four_objects() {
    let original = std::fs::read(fixtures().join("wrapped/bpftool-d.txt")).unwrap();
    with_programs(&BPFTOOL_OBJECTS, |programs| {
        let found = plan(programs, &original[..], None).unwrap();
        let named: Vec<Option<&str>> = found.segments.iter().map(|s| s.named.as_deref()).collect();
        assert_eq!(
            named,
            [
                None,
                Some("xdp_reject_subprog"),
                Some("xdp_reject_entry"),
                Some("xdp_reject_callback"),
                Some("raw_tp_reject_core")
            ]
        );
        for s in &found.segments[1..] {
            let p = &programs[s.program.unwrap()];
            assert_eq!(
                (p.name(), p.loader),
                (s.named.as_deref().unwrap(), Loader::Libbpf)
            );
            assert_eq!(s.existing, ExistingAnnotations::Current);
        }
        assert_round_trip(programs, &original, "bpftool -d");
    });
}

/// veristat -v: `PROCESSING FILE/PROG, DURATION US: N, VERDICT: V, VERIFIER LOG:`, the log, an
/// empty line (veristat.c prints "...LOG:\n%s\n"), then its table.
fn veristat(object: &str, logs: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, (prog, log, ok)) in logs.iter().enumerate() {
        let verdict = if *ok { "success" } else { "failure" };
        out.extend_from_slice(format!("PROCESSING tests/fixtures/obj/{object}/{prog}, DURATION US: {}, VERDICT: {verdict}, VERIFIER LOG:\n", 100 + k).as_bytes());
        out.extend_from_slice(log);
        out.push(b'\n');
    }
    out.extend_from_slice(
        b"File          Program     Verdict  Duration (us)  Insns  States  Peak states\n",
    );
    out.extend_from_slice(
        b"------------  ----------  -------  -------------  -----  ------  -----------\n",
    );
    out.extend_from_slice(b"Done. Processed 1 files, 0 skipped, 3 programs (0 skipped)\n");
    out
}

#[test]
fn veristat_output_with_three_programs_of_one_section() {
    let first = log("two_in_one.xdp_first.l2.log");
    let second = log("two_in_one.xdp_second.l2.log");
    let nested = log("two_in_one.xdp_nested.l2.log");
    let file = veristat(
        "two_in_one.o",
        &[
            ("xdp_first", &first, true),
            ("xdp_second", &second, true),
            ("xdp_nested", &nested, true),
        ],
    );
    with_programs(&["two_in_one.o"], |programs| {
        assert_round_trip(programs, &file, "veristat")
    });
}

/// cilium/ebpf's `fmt.Printf("%+v\n", err)` of a `VerifierError`: `SOURCE: CAUSE:` then each line
/// of the log behind a tab (internal/errors.go, `VerifierError.Format`).
fn cilium(prog: &str, log: &[u8]) -> Vec<u8> {
    let mut out =
        format!("field XdpReject: program {prog}: load program: permission denied:").into_bytes();
    let text = log.strip_suffix(b"\n").unwrap_or(log);
    for line in text.split(|&b| b == b'\n') {
        out.extend_from_slice(b"\n\t");
        out.extend_from_slice(line);
    }
    out.push(b'\n');
    out
}

#[test]
fn cilium_errors_behind_tabs() {
    for (object, name, prog) in [
        (
            "reject_subprog.o",
            "reject_subprog.xdp_reject_subprog.l2.log",
            "xdp_reject_subprog",
        ),
        (
            "reject_nested.o",
            "reject_nested.xdp_reject_nested.l1.log",
            "xdp_reject_nested",
        ),
    ] {
        let file = cilium(prog, &log(name));
        with_programs(&[object], |programs| {
            let found = plan(programs, &file[..], None).unwrap();
            assert_eq!(found.segments[1].named.as_deref(), Some(prog));
            assert_round_trip(programs, &file, "cilium");
        });
    }
}

/// A log cut short (no summary), then `go test -v` output: its lines are indented by four
/// spaces, as the kernel's liveness rows and states are, so the error's header `...: CAUSE:` looks
/// like a kernel line; only its `:` at the end tells it apart. Annotating takes most lines of a
/// log in runs, without asking the framing about each: the header must still open the
/// cilium/ebpf block behind it.
#[test]
fn a_header_indented_like_a_kernel_line_ends_the_log_before_it() {
    let first = log("reject_subprog.xdp_reject_subprog.l2.log");
    let lines: Vec<&[u8]> = first.split_inclusive(|&b| b == b'\n').collect();
    let summary = (lines.iter())
        .position(|l| l.starts_with(b"processed "))
        .unwrap();
    let mut file = lines[..summary - 1].concat();
    let block = cilium(
        "xdp_reject_nested",
        &log("reject_nested.xdp_reject_nested.l2.log"),
    );
    file.extend_from_slice(b"    main_test.go:42: ");
    file.extend_from_slice(&block);
    with_programs(&["reject_subprog.o", "reject_nested.o"], |programs| {
        let found = plan(programs, &file[..], None).unwrap();
        let named: Vec<_> = found.segments.iter().map(|s| s.named.as_deref()).collect();
        assert_eq!(named.last(), Some(&Some("xdp_reject_nested")), "{named:?}");
        // Annotated, each log ends where the plan says the next starts, with the plan's
        // instructions.
        let options = AnnotateOptions::default();
        let stats = annotate_planned(&found, programs, &file[..], Vec::new(), &options).unwrap();
        let counted: Vec<u64> = stats.iter().map(|s| s.instructions).collect();
        let planned: Vec<u64> = found.segments.iter().map(|s| s.instructions).collect();
        assert_eq!(counted, planned);
        for (s, pair) in stats.iter().zip(found.segments.windows(2)) {
            let (start, next) = (pair[0].line, pair[1].line);
            assert_eq!(s.lines, next - start, "the log from line {start} to {next}");
        }
        assert_round_trip(programs, &file, "go test");
    });
}

/// aya's `ProgramError::LoadError` through anyhow: `Error: the BPF_PROG_LOAD syscall failed.
/// Verifier output: ` and the log, then anyhow's `Caused by:` block.
fn aya(log: &[u8]) -> Vec<u8> {
    let mut out = b"Error: the BPF_PROG_LOAD syscall failed. Verifier output: ".to_vec();
    out.extend_from_slice(log);
    out.extend_from_slice(b"\nCaused by:\n    Permission denied (os error 13)\n");
    out
}

#[test]
fn aya_errors_glued_to_their_first_line() {
    let file = aya(&log("reject_callback.xdp_reject_callback.l2.log"));
    with_programs(&["reject_callback.o", "reject_subprog.o"], |programs| {
        let found = plan(programs, &file[..], None).unwrap();
        assert_eq!(
            programs[found.segments[1].program.unwrap()].name(),
            "xdp_reject_callback"
        );
        assert_round_trip(programs, &file, "aya");
    });
}

/// The tail of a log, as a kernel keeps it when the log overflows its buffer: cut `at` bytes in.
fn cut(log: &[u8], at: usize) -> &[u8] {
    &log[at..]
}

/// The lines up to the first instruction line, and the rest.
fn split_at_first_insn(text: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let first = lines
        .iter()
        .position(|l| {
            matches!(
                bpflog::log::classify(bpflog::log::split_newline(l).0),
                bpflog::log::Line::Insn(_)
            )
        })
        .unwrap_or(lines.len());
    (lines[..first].concat(), lines[first..].concat())
}

#[test]
fn logs_cut_at_the_top_come_back_from_their_first_instruction_on() {
    for (object, name) in [
        ("branchy.o", "branchy.xdp_branchy.l2.log"),
        ("loop_callback.o", "loop_callback.loop_sum.l2.log"),
        (
            "reject_callback.o",
            "reject_callback.xdp_reject_callback.l2.log",
        ),
    ] {
        let full = log(name);
        with_programs(&[object], |programs| {
            for third in [1, 2] {
                let tail = cut(&full, full.len() * third / 3 + 7);
                let found = plan(programs, tail, None).unwrap();
                assert!(found.segments[0].truncated, "{name}: cut log not noticed");
                // With the kernel's lines: unchanged.
                assert!(annotate(programs, tail) == tail, "{name}: cut log changed");
                // Without them: every line the kernel printed after the first instruction is back.
                let out = annotate(programs, &strip_annotations(tail));
                let (_, expected) = split_at_first_insn(tail);
                let (head, got) = split_at_first_insn(&out);
                assert!(got == expected, "{name}: cut at 1/{third}: differs");
                assert!(
                    strip_annotations(&head) == split_at_first_insn(&strip_annotations(tail)).0,
                    "{name}: only annotations are added before"
                );
            }
        });
    }
}

/// A log as a kernel before 6.9 printed it: `; text` without ` @ file:line`, printed whenever the
/// line record changes (not only the line), derived from a current log with the program's table.
fn old_kernel(current: &[u8], program: &Program<'_, '_>) -> Vec<u8> {
    use bpflog::log::{Line, classify, split_newline};
    let mut out = Vec::new();
    let mut last: Option<usize> = None;
    for line in current.split_inclusive(|&b| b == b'\n') {
        match classify(split_newline(line).0) {
            Line::Annotation(_) => continue,
            Line::Validating { .. } => last = None,
            Line::Insn(insn) => {
                let record = program.lines.find_index(insn.index as u32);
                if let Some(r) = record
                    && last != Some(r)
                {
                    out.extend_from_slice(b"; ");
                    out.extend_from_slice(program.lines.rows()[r].trimmed_text());
                    out.push(b'\n');
                    last = Some(r);
                }
            }
            _ => {}
        }
        out.extend_from_slice(line);
    }
    out
}

#[test]
fn old_kernel_annotations_come_out_as_a_current_kernel_prints_them() {
    let mut differing = 0;
    for fixture in common::fixture_logs()
        .into_iter()
        .filter(|f| f.level == 2 && !f.name.contains("nobtfext"))
    {
        let data = std::fs::read(&fixture.object).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        let program = Program::new(&object, object.program(&fixture.program).unwrap()).unwrap();
        let current = std::fs::read(&fixture.log).unwrap();
        let old = old_kernel(&current, &program);
        differing += usize::from(
            strip_annotations(&old) == strip_annotations(&current) && old.len() != current.len(),
        );
        let found = plan(std::slice::from_ref(&program), &old[..], None).unwrap();
        assert_eq!(
            found.segments[0].existing,
            ExistingAnnotations::Old,
            "{}",
            fixture.name
        );
        let mut out = Vec::new();
        annotate_planned(
            &found,
            std::slice::from_ref(&program),
            &old[..],
            &mut out,
            &AnnotateOptions::default(),
        )
        .unwrap();
        assert!(
            out == current,
            "{}: old-kernel log not brought to the current form",
            fixture.name
        );
        // The streaming API on its own does the same.
        let mut direct = Vec::new();
        bpflog::annotate_bare(&program, &old[..], &mut direct, &AnnotateOptions::default())
            .unwrap();
        assert!(direct == current, "{}: streaming", fixture.name);
    }
    assert!(
        differing > 5,
        "the old rule printed more lines in most logs"
    );
}

/// The log the kernel would print for a program laid out by cilium/ebpf, derived from libbpf's:
/// every instruction index moved from libbpf's layout to cilium/ebpf's (the rows of the
/// `Live regs before insn:` listing too, put in their new order), `func#` lines and `call pc+N`
/// offsets recomputed. (A row's liveness mask is left as it is: nothing reads it.)
fn relaid(log: &[u8], from: &Program<'_, '_>, to: &Program<'_, '_>) -> Vec<u8> {
    let map = |i: u64| -> u64 {
        let (part, off) = from.layout.locate(i as u32).unwrap();
        let target = to
            .layout
            .parts
            .iter()
            .find(|p| p.function == part.function)
            .unwrap();
        u64::from(target.start + off)
    };
    let text = String::from_utf8(log.to_vec()).unwrap();
    let mut starts: Vec<u32> = to.layout.parts.iter().map(|p| p.start).collect();
    starts.sort_unstable();
    let mut out = String::new();
    let number = |s: &str| -> Option<(u64, usize)> {
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| (s[..digits].parse().unwrap(), digits))
    };
    let relaid_call = |i: u64, new: u64, rest: &str| -> String {
        let Some(at) = rest.find("call pc+") else {
            return rest.to_owned();
        };
        let (k, kd) = number(&rest[at + 8..]).unwrap();
        let target = map(i + k + 1);
        format!(
            "{}call pc+{}{}",
            &rest[..at],
            target - new - 1,
            &rest[at + 8 + kd..]
        )
    };
    // The rows of the liveness listing, relaid, in their new order once the listing ends.
    let mut rows: Vec<(u64, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        let mut line = line.to_owned();
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        if indent > 0
            && let Some((i, n)) = number(&line[indent..])
            && line[indent + n..].starts_with(": ")
        {
            let new = map(i);
            let rest = relaid_call(i, new, &line[indent + n..]);
            rows.push((new, format!("{new:>7}{rest}")));
            continue;
        }
        rows.sort();
        out.extend(rows.drain(..).map(|(_, row)| row));
        if let Some(rest) = line.strip_prefix("func#") {
            let (k, _) = number(rest).unwrap();
            line = format!("func#{k} @{}\n", starts[k as usize]);
        } else if let Some(rest) = line.strip_prefix("from ") {
            let (x, n) = number(rest).unwrap();
            let after = &rest[n + 4..];
            let (y, m) = number(after).unwrap();
            line = format!("from {} to {}{}", map(x), map(y), &after[m..]);
        } else if let Some((i, n)) = number(&line) {
            if line[n..].starts_with(": ") {
                let new = map(i);
                line = format!("{new}{}", relaid_call(i, new, &line[n..]));
            }
        } else if let Some(at) = line.find(" before ")
            && let Some((i, n)) = number(&line[at + 8..])
        {
            line = format!("{}{}{}", &line[..at + 8], map(i), &line[at + 8 + n..]);
        } else if let Some(rest) = line.strip_prefix("to caller at ") {
            let (i, n) = number(rest).unwrap();
            line = format!("to caller at {}{}", map(i), &rest[n..]);
        }
        out.push_str(&line);
    }
    out.into_bytes()
}

#[test]
fn a_cilium_layout_is_recognised_from_the_log() {
    let libbpf_log = log("two_in_one.xdp_nested.l2.log");
    with_programs(&["two_in_one.o"], |programs| {
        let by = |loader| {
            programs
                .iter()
                .find(|p| p.name() == "xdp_nested" && p.loader == loader)
                .unwrap()
        };
        let cilium_log = relaid(&libbpf_log, by(Loader::Libbpf), by(Loader::Cilium));
        assert!(cilium_log != libbpf_log);
        let chosen = plan(programs, &strip_annotations(&cilium_log)[..], None).unwrap();
        assert_eq!(
            programs[chosen.segments[0].program.unwrap()].loader,
            Loader::Cilium
        );
        assert_round_trip(programs, &cilium_log, "cilium layout");
        // libbpf's own log still chooses libbpf's layout.
        let chosen = plan(programs, &libbpf_log[..], None).unwrap();
        assert_eq!(
            programs[chosen.segments[0].program.unwrap()].loader,
            Loader::Libbpf
        );
    });
}

#[test]
fn logs_pasted_one_after_another_are_told_apart() {
    // `bpflog verify --raw` of an object with three programs: three kernel logs, no wrapper.
    let original = std::fs::read(fixtures().join("wrapped/two_in_one.verify-raw.txt")).unwrap();
    with_programs(&["two_in_one.o"], |programs| {
        let found = plan(programs, &original[..], None).unwrap();
        let names: Vec<&str> = found
            .segments
            .iter()
            .filter_map(|s| s.program.map(|p| programs[p].name()))
            .collect();
        assert_eq!(names, ["xdp_first", "xdp_second", "xdp_nested"]);
        assert_round_trip(programs, &original, "three logs in a row");
    });
}

/// The kernel selftests' test_progs with `-v` (`emit_verifier_log` in test_loader.c):
/// `VERIFIER LOG:`, a rule, the log, the rule, between its own result lines.
fn test_progs(logs: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, (name, log)) in logs.iter().enumerate() {
        out.extend_from_slice(
            format!(
                "#{}/{} two_in_one/{name}:OK\nVERIFIER LOG:\n=============\n",
                400 + k,
                k + 1
            )
            .as_bytes(),
        );
        out.extend_from_slice(log);
        out.extend_from_slice(b"=============\n");
    }
    out.extend_from_slice(b"Summary: 1/2 PASSED, 0 SKIPPED, 0 FAILED\n");
    out
}

#[test]
fn test_progs_output_of_two_programs() {
    let file = test_progs(&[
        ("xdp_nested", &log("two_in_one.xdp_nested.l2.log")),
        ("xdp_first", &log("two_in_one.xdp_first.l2.log")),
    ]);
    with_programs(&["two_in_one.o"], |programs| {
        let found = plan(programs, &file[..], None).unwrap();
        let names: Vec<&str> = found
            .segments
            .iter()
            .filter_map(|s| s.program.map(|p| programs[p].name()))
            .collect();
        assert_eq!(names, ["xdp_nested", "xdp_first"]);
        assert_round_trip(programs, &file, "test_progs");
    });
}

/// `bpflog ARGS...` (exit status 0 asserted): its standard output.
fn bpflog(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(args)
        .output()
        .expect("run bpflog");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    out.stdout
}

#[test]
fn libbpf_chatter_before_a_log_is_no_rejection_in_any_command() {
    // bpftool -d prints libbpf's own lines before each log, among them `libbpf: prog 'X': BPF
    // program load failed: Permission denied`: the loader's, not a log with an error. Each of
    // the four logs is one rejection, placed where the kernel's error is, in every command.
    let file = fixtures().join("wrapped/bpftool-d.txt");
    let input = std::fs::read(&file).unwrap();
    let objects: Vec<std::path::PathBuf> = BPFTOOL_OBJECTS
        .iter()
        .map(|o| fixtures().join("obj").join(o))
        .collect();
    let subprog = objects[0].as_os_str();
    let arg = |s: &'static str| std::ffi::OsStr::new(s);

    // explain, of the first object: one explanation, the kernel's error.
    let text = String::from_utf8(bpflog(&[arg("explain"), subprog, file.as_os_str()])).unwrap();
    assert_eq!(text.matches("\nerror: ").count(), 1, "{text}");
    assert!(!text.contains("[unknown]"), "{text}");
    assert!(
        text.starts_with("\nerror: R1 invalid mem access 'map_value_or_null'\n"),
        "{text}"
    );
    let json = bpflog(&[
        arg("explain"),
        arg("--format"),
        arg("json"),
        subprog,
        file.as_os_str(),
    ]);
    let lines: Vec<serde_json::Value> = (json.split(|&b| b == b'\n'))
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["class"], "nullable-dereference");
    let sarif = bpflog(&[
        arg("explain"),
        arg("--format"),
        arg("sarif"),
        subprog,
        file.as_os_str(),
    ]);
    let sarif: serde_json::Value = serde_json::from_slice(&sarif).unwrap();
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["ruleId"], "nullable-dereference");

    // annotate, of the four objects: the chatter as it came, a diagnostic per log after it.
    let mut args = vec![arg("annotate"), arg("--style"), arg("rich"), arg("--color")];
    args.push(arg("never"));
    args.extend(objects.iter().map(|o| o.as_os_str()));
    args.extend([arg("--"), file.as_os_str()]);
    let rich = String::from_utf8(bpflog(&args)).unwrap();
    let chatter = input
        .split(|&b| b == b'\n')
        .take_while(|l| !l.ends_with(b"BEGIN PROG LOAD LOG --"));
    let chatter: Vec<u8> = chatter.flat_map(|l| [l, b"\n"].concat()).collect();
    assert!(chatter.len() > 1000);
    assert!(rich.as_bytes().starts_with(&chatter), "{rich}");
    assert_eq!(rich.matches("\nerror: ").count(), 4, "{rich}");
    assert!(!rich.contains("[unknown]"), "{rich}");
    // In JSON: libbpf's lines are outside the logs; four explained errors.
    args.splice(1..5, [arg("--format"), arg("json")]);
    let records: Vec<serde_json::Value> = (bpflog(&args).split(|&b| b == b'\n'))
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let chatter_lines = chatter.iter().filter(|&&b| b == b'\n').count();
    assert!(
        records[..chatter_lines]
            .iter()
            .all(|r| r["kind"] == "outside")
    );
    let explained = records.iter().filter(|r| r.get("explanation").is_some());
    assert_eq!(explained.count(), 4);

    // report and profile take the program's log alone, as before.
    let page = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bpftool-d.html");
    let prog = [
        arg("--prog"),
        arg("xdp_reject_subprog"),
        subprog,
        file.as_os_str(),
    ];
    bpflog(&[&[arg("report"), arg("-o"), page.as_os_str()][..], &prog].concat());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("nullable-dereference") && !html.contains("\"unknown\""));
    let profile = bpflog(&[&[arg("profile"), arg("--format"), arg("json")][..], &prog].concat());
    let profile: serde_json::Value = serde_json::from_slice(&profile).unwrap();
    let error = serde_json::json!(["R1 invalid mem access 'map_value_or_null'"]);
    assert_eq!(profile["summary"]["error"], error, "{profile}");
}

/// Whether `line` is an annotation line as the kernel (`; text @ file:line`) or bpflog's rich
/// style (`; text @ file:line:col in f`, `;   inlined from f at file:line:col`) writes it.
fn is_clean_annotation(line: &[u8]) -> bool {
    let line = String::from_utf8_lossy(line);
    let at = match line.strip_prefix(";   inlined from ") {
        Some(inlined) => inlined.rsplit_once(" at "),
        None => line.strip_prefix("; ").and_then(|l| l.rsplit_once(" @ ")),
    };
    let Some((_, at)) = at else {
        return false;
    };
    let at = at.split_once(" in ").map_or(at, |(at, _)| at);
    let mut parts = at.split(':');
    let file = parts.next().unwrap_or_default();
    let numbers: Vec<&str> = parts.collect();
    !file.is_empty()
        && !file.contains(' ')
        && (1..=2).contains(&numbers.len())
        && (numbers.iter()).all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn without_clean_annotations(text: &[u8]) -> Vec<u8> {
    text.split_inclusive(|&b| b == b'\n')
        .filter(|l| !is_clean_annotation(l.strip_suffix(b"\n").unwrap_or(l)))
        .flatten()
        .copied()
        .collect()
}

#[test]
fn a_garbled_annotation_line_is_passed_through_in_every_style() {
    // veristat -v with libbpf's stderr written into the middle of a `;` line of xdp_nested's
    // log (made by wrapped/veristat_garbled.py): the line is noise, passed through as it came,
    // with the libbpf text inside it; nothing else of the input is lost or changed.
    let file = fixtures().join("wrapped/veristat-garbled.txt");
    let input = std::fs::read(&file).unwrap();
    let garbled: &[u8] = b"; h ^= b + 0x7f4a7c15u + (h << libbpf: prog 'xdp_reject_subprog': BPF program load failed: Permission denied\n";
    assert_eq!(
        input
            .windows(garbled.len())
            .filter(|w| *w == garbled)
            .count(),
        1
    );
    let objects = [
        fixtures().join("obj/two_in_one.o"),
        fixtures().join("obj/reject_subprog.o"),
    ];
    let run = |style: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args([
                "annotate",
                "--no-diagnostic",
                "--color",
                "never",
                "--style",
                style,
            ])
            .args(&objects)
            .arg("--")
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{style}: {err}");
        assert!(
            err.contains(":367: a line that does not fit xdp_nested among lines that do, passed through as noise"),
            "{style}: {err}"
        );
        out.stdout
    };
    // Kernel style: the log carries the kernel's lines, all of it goes out as it came.
    assert!(run("kernel") == input);
    // Rich style: bpflog's own source lines in place of the kernel's; the garbled line kept.
    let rich = run("rich");
    assert_eq!(
        rich.windows(garbled.len())
            .filter(|w| *w == garbled)
            .count(),
        1
    );
    let (rich, input) = (
        without_clean_annotations(&rich),
        without_clean_annotations(&input),
    );
    assert!(rich == input, "{}", String::from_utf8_lossy(&rich));
    assert!(input.windows(garbled.len()).any(|w| w == garbled));
}

/// bpftool -d prog loadall of two_in_one.o whose last program's load failed after the verifier
/// accepted it (EMFILE): the kernel style gives the file back byte for byte, the loader's
/// line that said so included.
#[test]
fn bpftool_loadall_whose_last_load_failed_round_trips() {
    let original = std::fs::read(fixtures().join("wrapped/bpftool-d-loadall-emfile.txt")).unwrap();
    with_programs(&["two_in_one.o"], |programs| {
        assert_round_trip(programs, &original, "bpftool -d loadall, EMFILE");
    });
}
