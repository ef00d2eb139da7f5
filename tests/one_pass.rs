//! `annotate_file` (one pass, each log's program chosen by looking ahead) against `plan` and
//! `annotate_planned` (two passes), the reference: the same bytes, the same plan, the same stats,
//! the same error, over every fixture log alone, stripped, cut at the top, between other
//! programs' logs and inside wrappers; for one object and for all of them at once, in kernel and
//! rich style, text and JSON, with and without the program named.

mod common;

use bpflog::object::{BpfObject, Loader};
use bpflog::{AnnotateOptions, OutputFormat, Program, Style};
use common::{fixture_logs, fixtures, strip_annotations};
use std::path::Path;

/// Every program of `objects` under every loader, one per distinct layout (as the CLI lays out).
fn lay_out<'o, 'd>(objects: &'o [BpfObject<'d>]) -> Vec<Program<'o, 'd>> {
    let mut programs: Vec<Program<'o, 'd>> = Vec::new();
    for object in objects {
        for id in object.programs() {
            let first = programs.len();
            for loader in Loader::ALL {
                if let Ok(p) = Program::with_loader(object, id, loader)
                    && !programs[first..].iter().any(|q| q.layout == p.layout)
                {
                    programs.push(p);
                }
            }
        }
    }
    programs
}

/// What one of the two ways gave: the output, each log's plan and stats; or the error.
type Outcome = Result<(Vec<u8>, Vec<String>), String>;

fn two_passes(
    programs: &[Program<'_, '_>],
    input: &[u8],
    options: &AnnotateOptions,
    forced: Option<&str>,
) -> Outcome {
    let plan = bpflog::plan(programs, input, forced).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let stats = bpflog::annotate_planned(&plan, programs, input, &mut out, options).unwrap();
    let logs = plan
        .segments
        .iter()
        .zip(&stats)
        .map(|(p, s)| format!("{p:?} {s:?}"))
        .collect();
    Ok((out, logs))
}

fn one_pass(
    programs: &[Program<'_, '_>],
    file: &Path,
    options: &AnnotateOptions,
    forced: Option<&str>,
    looked_ahead: &mut (u64, u64),
    late: &mut usize,
) -> Outcome {
    let file = std::fs::File::open(file).unwrap();
    let mut out = Vec::new();
    let logs = bpflog::annotate_file(programs, &file, &mut out, options, forced);
    // A log that failed the plan after its program was settled: found when it ended.
    *late += usize::from(logs.is_err() && !out.is_empty());
    let logs = logs.map_err(|e| e.to_string())?;
    for log in &logs {
        looked_ahead.0 += log.looked_ahead;
        looked_ahead.1 += log.stats.lines;
    }
    let logs = logs
        .iter()
        .map(|l| format!("{:?} {:?}", l.plan, l.stats))
        .collect();
    Ok((out, logs))
}

#[test]
fn one_pass_writes_what_two_passes_write() {
    let dir = std::env::temp_dir().join(format!("bpflog-one-pass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("log");
    let mut every_object: Vec<Vec<u8>> = std::fs::read_dir(fixtures().join("obj"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    every_object.sort();
    let every_object: Vec<BpfObject> = every_object
        .iter()
        .map(|d| BpfObject::parse(d).unwrap())
        .collect();
    let all = lay_out(&every_object);
    let other =
        std::fs::read(fixtures().join("logs/reject_entry.xdp_reject_entry.l2.log")).unwrap();
    let wrapped = std::fs::read(fixtures().join("wrapped/bpftool-d.txt")).unwrap();
    let options = [
        (Style::Kernel, OutputFormat::Text),
        (Style::Rich, OutputFormat::Text),
        (Style::Kernel, OutputFormat::Json),
    ]
    .map(|(style, format)| AnnotateOptions::default().style(style).format(format));
    let (mut compared, mut failed, mut late) = (0, 0, 0);
    let mut looked_ahead = (0, 0);
    for fixture in fixture_logs() {
        let data = std::fs::read(&fixture.object).unwrap();
        let objects = [BpfObject::parse(&data).unwrap()];
        let own = lay_out(&objects);
        let log = std::fs::read(&fixture.log).unwrap();
        // The first third of the log, then the second half of another program's: it fits at
        // first, then not.
        let lines: Vec<&[u8]> = log.split_inclusive(|&b| b == b'\n').collect();
        let other_lines: Vec<&[u8]> = other.split_inclusive(|&b| b == b'\n').collect();
        let spliced = [
            lines[..lines.len() / 3].concat(),
            other_lines[other_lines.len() / 2..].concat(),
        ]
        .concat();
        // Inside a wrapper that names the program (settled before the log's first line), cut at
        // the top to start at a detail line, which the first pass takes as the cut end of a line.
        let detail = (lines.len() / 3..lines.len())
            .find(|&i| lines[i].starts_with(b" "))
            .unwrap_or(lines.len() / 3);
        let named = [
            format!(
                "libbpf: prog '{}': -- BEGIN PROG LOAD LOG --\n",
                fixture.program
            )
            .as_bytes(),
            &lines[detail..].concat(),
            b"-- END PROG LOAD LOG --\n",
        ]
        .concat();
        let inputs = [
            log.clone(),
            strip_annotations(&log),
            log[log.len() / 3..].to_vec(),
            [log.as_slice(), other.as_slice(), log.as_slice()].concat(),
            [wrapped.as_slice(), log.as_slice()].concat(),
            spliced,
            named,
        ];
        for (i, input) in inputs.iter().enumerate() {
            std::fs::write(&file, input).unwrap();
            // Every program of every object, for the whole log and between others.
            let sets = if i == 0 || i == 3 { 2 } else { 1 };
            for programs in [&own[..], &all[..]].into_iter().take(sets) {
                for forced in [None, Some(fixture.program.as_str())] {
                    for options in &options {
                        let two = two_passes(programs, input, options, forced);
                        // JSON reads each log to its end before annotating it: not counted.
                        let mut ahead = (0, 0);
                        let one = one_pass(programs, &file, options, forced, &mut ahead, &mut late);
                        if options.format == OutputFormat::Text && two.is_ok() {
                            looked_ahead.0 += ahead.0;
                            looked_ahead.1 += ahead.1;
                        }
                        failed += usize::from(two.is_err());
                        assert!(
                            one == two,
                            "{}, {} bytes, {} programs, {forced:?}, {:?} {:?}: one pass {}, two passes {}",
                            fixture.name,
                            input.len(),
                            programs.len(),
                            options.style,
                            options.format,
                            describe(&one),
                            describe(&two),
                        );
                        compared += 1;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared > 2000, "{compared} comparisons");
    // Both ways were compared where the plan fails and where it succeeds.
    assert!(
        failed > 100 && failed < compared / 2,
        "{failed} of {compared} failed"
    );
    assert!(late > 20, "{late} failed late");
    // Most lines were read once: the programs were settled by looking a little ahead.
    let (ahead, lines) = looked_ahead;
    assert!(ahead * 4 < lines, "{ahead} of {lines} lines looked ahead");
    println!(
        "{compared} comparisons, {failed} failing ({late} late); {ahead} of {lines} lines looked ahead"
    );
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Ok((out, logs)) => format!("{} bytes, logs {logs:#?}", out.len()),
        Err(e) => format!("error: {e}"),
    }
}
