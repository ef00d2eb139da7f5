//! Terminal escapes from the object, through the binary: every output that shows the object's
//! text escapes its control bytes visibly, and the kernel's own lines stay byte for byte.
//!
//! `tests/fixtures/hostile/escapes.py` makes `escapes.reject_subprog.o` from the real
//! reject_subprog.o: ESC ] 0;pwned BEL (window title), ESC [2J (clear screen) and the C1 CSI
//! (0x9b, and U+009B in UTF-8) in the file name (BTF and DWARF), in the text of line 54 (BTF,
//! where the program is rejected) and in `update_flow`'s DWARF name; and the level-1 log the
//! kernel prints for it (`escapes.xdp_reject_subprog.l1.log`: its `;` lines carry the bytes
//! raw). A source file with the same bytes stands in for "the files the object names".
//! `escapes.xdp_reject_global.l1.log` carries the bytes in the lines the diagnostic repeats (the
//! pass, the failing instruction, the registers), `escapes.utf8.reject_subprog.o` is an object
//! the kernel loads, for `verify`.
//!
//! Every command in every format: annotate (kernel, rich, JSON), explain (text, JSON, gcc,
//! SARIF), profile (table, CSV, JSON, source view, flame graph, `--compare`), report, lines,
//! verify (table, CSV, JSON: live, the file's name carrying the bytes too; `--compare` as table,
//! CSV and JSON).

mod common;

use common::{fixtures, strip_annotations};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hostile(name: &str) -> PathBuf {
    fixtures().join("hostile").join(name)
}

fn object() -> PathBuf {
    hostile("escapes.reject_subprog.o")
}

/// The kernel's log for the hostile object, as it printed it.
fn kernel_log() -> PathBuf {
    hostile("escapes.xdp_reject_subprog.l1.log")
}

/// A directory of the test's own under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("escapes")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The kernel's log without its `;` lines: bpflog inserts them from the object.
fn stripped_log(dir: &Path) -> PathBuf {
    let path = dir.join("stripped.log");
    let log = std::fs::read(kernel_log()).unwrap();
    std::fs::write(&path, strip_annotations(&log)).unwrap();
    path
}

/// Runs bpflog in `dir` (where no source file the object names is found).
fn bpflog(dir: &Path, args: &[&OsStr]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run bpflog");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The control characters a terminal acts on: C0 but TAB and LF, DEL, C1 (as UTF-8 or as a
/// byte alone).
fn raw_controls(bytes: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if matches!(u32::from(c), 0..=0x08 | 0x0b..=0x1f | 0x7f..=0x9f) {
                found.push(format!("{c:?}"));
            }
        }
        for &b in chunk.invalid() {
            if (0x80..=0x9f).contains(&b) {
                found.push(format!("{b:#x}"));
            }
        }
    }
    found
}

/// `out` holds no raw control character and shows each of `escapes`.
fn assert_safe(what: &str, out: &[u8], escapes: &[&str]) {
    let raw = raw_controls(out);
    assert!(raw.is_empty(), "{what}: raw control characters {raw:?}");
    let text = String::from_utf8_lossy(out);
    for escape in escapes {
        assert!(text.contains(escape), "{what}: no {escape:?} in\n{text}");
    }
}

/// The escaped hostile pieces: the window title, the clear screen, C1 CSI as UTF-8, alone.
const TITLE: &str = r"\x1b]0;pwned\x07";
const CLEAR: &str = r"\x1b[2J";
const CSI_UTF8: &str = r"\u{9b}";
const CSI_BYTE: &str = r"\x9b";

#[test]
fn kernel_style_escapes_what_it_inserts_and_keeps_the_kernels_lines() {
    let dir = scratch("kernel");
    let log = stripped_log(&dir);
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--style".as_ref(),
            "kernel".as_ref(),
            object().as_os_str(),
            log.as_os_str(),
        ],
    );
    assert_safe(
        "annotate --style kernel",
        &out.stdout,
        &[TITLE, CLEAR, CSI_UTF8, CSI_BYTE],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!(
        "; {TITLE}{CLEAR}{CSI_BYTE}2J @ {TITLE}{CSI_UTF8}Jx.c:54\n"
    )));

    // The kernel's own lines, raw as it printed them, go through untouched.
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--style".as_ref(),
            "kernel".as_ref(),
            object().as_os_str(),
            kernel_log().as_os_str(),
        ],
    );
    assert!(out.stdout == std::fs::read(kernel_log()).unwrap());
}

#[test]
fn rich_style_and_the_diagnostic_escape() {
    let dir = scratch("rich");
    let log = stripped_log(&dir);
    for context in ["0", "2"] {
        let out = bpflog(
            &dir,
            &[
                "annotate".as_ref(),
                "--style".as_ref(),
                "rich".as_ref(),
                "--color".as_ref(),
                "never".as_ref(),
                "--context".as_ref(),
                context.as_ref(),
                object().as_os_str(),
                log.as_os_str(),
            ],
        );
        let what = format!("annotate --style rich --context {context}");
        assert_safe(&what, &out.stdout, &[TITLE, CLEAR, CSI_UTF8, CSI_BYTE]);
        let text = String::from_utf8(out.stdout).unwrap();
        // The diagnostic: the file, the BTF line and the function, escaped; the caret under
        // column 12 as shown (the tab, then the escaped title).
        let shown = format!("\t{TITLE}{CLEAR}{CSI_BYTE}2J");
        let caret = format!("\t{}^", " ".repeat(TITLE.len()));
        assert!(
            text.contains(&format!("--> {TITLE}{CSI_UTF8}Jx.c:54:12\n")),
            "{text}"
        );
        assert!(text.contains(&format!("54 | {shown}\n")), "{text}");
        assert!(text.contains(&format!("   | {caret}\n")), "{text}");
        assert!(
            text.contains(&format!("= note: in {CLEAR}{CSI_UTF8}uflow\n")),
            "{text}"
        );
    }
    // In color, nothing but the palette's own escape sequences (SGR, `ESC [ ... m`).
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--style".as_ref(),
            "rich".as_ref(),
            "--color".as_ref(),
            "always".as_ref(),
            object().as_os_str(),
            log.as_os_str(),
        ],
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for sgr in text.split('\x1b').skip(1) {
        let end = sgr.find('m').expect("an SGR sequence");
        assert!(
            sgr.starts_with('[') && sgr[1..end].bytes().all(|b| b.is_ascii_digit() || b == b';'),
            "{sgr:?}"
        );
    }
    assert!(text.contains(TITLE) && text.contains(CSI_UTF8));
    assert!(raw_controls(text.replace('\x1b', "").as_bytes()).is_empty());
}

#[test]
fn source_files_the_object_names_are_shown_escaped() {
    // The real object and log, with a source file whose line 54 carries the bytes.
    let dir = scratch("source");
    let source = std::fs::read_to_string(fixtures().join("src/reject_subprog.c")).unwrap();
    let lines: Vec<String> = (source.lines().enumerate())
        .map(|(k, l)| match k + 1 {
            54 => "\tfv->bytes \x1b]0;pwned\x07+= len; /* \u{9b}2J */".to_owned(),
            _ => l.to_owned(),
        })
        .collect();
    std::fs::write(dir.join("reject_subprog.c"), lines.join("\n") + "\n").unwrap();
    let object = fixtures().join("obj/reject_subprog.o");
    let log = fixtures().join("logs/reject_subprog.xdp_reject_subprog.l1.log");
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--style".as_ref(),
            "rich".as_ref(),
            "--color".as_ref(),
            "never".as_ref(),
            "--context".as_ref(),
            "1".as_ref(),
            "--source-dir".as_ref(),
            dir.as_os_str(),
            object.as_os_str(),
            log.as_os_str(),
        ],
    );
    assert_safe("annotate --context 1", &out.stdout, &[TITLE, CSI_UTF8]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!("54 | \tfv->bytes {TITLE}+= len;")),
        "{text}"
    );
    let out = bpflog(
        &dir,
        &[
            "profile".as_ref(),
            "--source".as_ref(),
            "--color".as_ref(),
            "never".as_ref(),
            "--source-dir".as_ref(),
            dir.as_os_str(),
            object.as_os_str(),
            log.as_os_str(),
        ],
    );
    assert_safe("profile --source", &out.stdout, &[TITLE, CSI_UTF8]);
}

#[test]
fn annotate_json_escapes_every_control_character() {
    let dir = scratch("annotate-json");
    // The kernel's log, its `;` lines raw from the object, with a DEL at the end of each line.
    let log = std::fs::read(kernel_log()).unwrap();
    let mut with_del = Vec::new();
    for line in log.split_inclusive(|&b| b == b'\n') {
        with_del.extend_from_slice(line.strip_suffix(b"\n").unwrap_or(line));
        with_del.extend_from_slice(b"\x7f\n");
    }
    let path = dir.join("del.log");
    std::fs::write(&path, &with_del).unwrap();
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            // The `;` lines no longer match the object's: it is named.
            "--prog".as_ref(),
            "xdp_reject_subprog".as_ref(),
            object().as_os_str(),
            path.as_os_str(),
        ],
    );
    assert_safe(
        "annotate --format json",
        &out.stdout,
        &[r"\u001b]0;pwned\u0007", r"\u009b", r"\u007f"],
    );
    // Each record reads back as its line, lossy.
    let records: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&out.stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let lines: Vec<&[u8]> = with_del.split_inclusive(|&b| b == b'\n').collect();
    assert_eq!(records.len(), lines.len());
    for (record, line) in records.iter().zip(lines) {
        let line = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap());
        assert_eq!(record["text"], *line);
    }
}

#[test]
fn profile_table_csv_source_and_json() {
    let dir = scratch("profile");
    let (object, log) = (object(), kernel_log());
    let run = |args: &[&str]| {
        let mut all: Vec<&OsStr> = vec!["profile".as_ref(), object.as_os_str()];
        all.push(log.as_os_str());
        all.extend(args.iter().map(OsStr::new));
        bpflog(&dir, &all).stdout
    };
    // The profile's texts are UTF-8: the lone C1 byte is U+FFFD there.
    let table = run(&["--color", "never"]);
    assert_safe("profile", &table, &[TITLE, CLEAR, CSI_UTF8]);
    let csv = run(&["--format", "csv"]);
    assert_safe("profile --format csv", &csv, &[TITLE, CLEAR, CSI_UTF8]);
    let source = run(&["--source", "--color", "never"]);
    assert_safe("profile --source", &source, &[TITLE, CLEAR, CSI_UTF8]);
    // JSON: escaped by JSON's rules, C1 too; the values are the object's.
    let json = run(&["--format", "json"]);
    assert_safe(
        "profile --format json",
        &json,
        &[r"\u001b]0;pwned\u0007", r"\u009b"],
    );
    let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(value["lines"][0]["file"], "./\x1b]0;pwned\x07\u{9b}Jx.c");
    // --compare, the real log against the hostile one, in each format.
    let real = fixtures().join("logs/reject_subprog.xdp_reject_subprog.l1.log");
    let real_object = fixtures().join("obj/reject_subprog.o");
    for (format, escapes) in [
        ("table", [TITLE, CSI_UTF8]),
        ("csv", [TITLE, CSI_UTF8]),
        ("json", [r"\u001b]0;pwned\u0007", r"\u009b"]),
    ] {
        let args = [
            "profile",
            "--color",
            "never",
            "--format",
            format,
            "--compare",
        ];
        let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        all.extend([real.as_os_str(), log.as_os_str(), "--old-obj".as_ref()]);
        all.extend([
            real_object.as_os_str(),
            "--new-obj".as_ref(),
            object.as_os_str(),
        ]);
        let out = bpflog(&dir, &all).stdout;
        assert_safe(
            &format!("profile --compare --format {format}"),
            &out,
            &escapes,
        );
    }
}

#[test]
fn lines_escape() {
    let dir = scratch("lines");
    let out = bpflog(&dir, &["lines".as_ref(), object().as_os_str()]);
    assert_safe("lines", &out.stdout, &[TITLE, CLEAR, CSI_UTF8, CSI_BYTE]);
}

#[test]
fn the_flame_graph_and_the_report_hold_no_control_bytes() {
    let dir = scratch("pictures");
    let svg = dir.join("flame.svg");
    let log = kernel_log();
    bpflog(
        &dir,
        &[
            "profile".as_ref(),
            object().as_os_str(),
            log.as_os_str(),
            "--flamegraph".as_ref(),
            svg.as_os_str(),
        ],
    );
    // XML allows no C0 control but TAB, LF and CR. (`;` separates frames: `；` stands for it.)
    let svg = std::fs::read(&svg).unwrap();
    assert_safe("--flamegraph", &svg, &[&TITLE.replace(';', "；"), CSI_UTF8]);

    let html = dir.join("report.html");
    bpflog(
        &dir,
        &[
            "report".as_ref(),
            object().as_os_str(),
            log.as_os_str(),
            "-o".as_ref(),
            html.as_os_str(),
        ],
    );
    let page = std::fs::read_to_string(&html).unwrap();
    // JSON inside the page and in its log's pieces: no raw control character (C1 escaped too);
    // the data reads back as the object's names.
    assert_safe("report", page.as_bytes(), &[r"\u001b]0;pwned\u0007"]);
    for (_, _, json) in common::page::piece_texts(&page) {
        assert_safe("report: the log's pieces", json.as_bytes(), &[]);
    }
    let block = |id: &str| -> serde_json::Value {
        let open = format!("<script type=\"application/json\" id=\"{id}\">");
        let start = page.find(&open).unwrap() + open.len();
        let end = start + page[start..].find("</script>").unwrap();
        serde_json::from_str(&page[start..end]).unwrap()
    };
    let data = block("bpflog-data");
    let names: Vec<&str> = (data["files"].as_array().unwrap().iter())
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("\x1b]0;pwned\x07")),
        "{names:?}"
    );
    let log = common::page::shown_log(&page);
    assert!(log.iter().any(|l| l.contains("\x1b]0;pwned\x07")));
}

/// The real reject_global.o: the object's own texts are clean.
fn global_object() -> PathBuf {
    fixtures().join("obj/reject_global.o")
}

/// Its level-1 log with the bytes in the pass, the failing instruction and the state printed
/// last: what the diagnostic's notes repeat.
fn notes_log() -> PathBuf {
    hostile("escapes.xdp_reject_global.l1.log")
}

/// The notes of the diagnostic, escaped, as `explain` and the rich style write them.
fn assert_notes_escaped(what: &str, text: &str) {
    for note in [
        format!("= note: instruction 29: (79) r4 = *(u64 *)(r3 +0){CLEAR}{CSI_UTF8}2J\n"),
        format!(
            "= note: verified on its own as a global function: Validating sum_counters() func#1...{TITLE}{CSI_BYTE}\n"
        ),
        format!("R3=mem_or_null(id=5,sz=24) {TITLE}{CLEAR}{CSI_BYTE}\n"),
    ] {
        assert!(text.contains(&note), "{what}: no {note:?} in\n{text}");
    }
}

#[test]
fn explain_in_every_format_escapes_the_object_and_the_log() {
    let dir = scratch("explain");
    let cases = [
        ("object", object(), kernel_log()),
        ("log", global_object(), notes_log()),
    ];
    for (hostile, object, log) in &cases {
        let run = |format: &str| {
            let args = ["explain", "--format", format].map(OsStr::new);
            let all = [&args[..], &[object.as_os_str(), log.as_os_str()]].concat();
            bpflog(&dir, &all).stdout
        };
        let text = run("text");
        let gcc = run("gcc");
        let json = run("json");
        let sarif = run("sarif");
        let what = |format: &str| format!("explain --format {format}, hostile {hostile}");
        if *hostile == "object" {
            assert_safe(&what("text"), &text, &[TITLE, CSI_UTF8, CLEAR, CSI_BYTE]);
            assert_safe(&what("gcc"), &gcc, &[TITLE, CSI_UTF8]);
            let file = format!("{TITLE}{CSI_UTF8}Jx.c:54:12: error: ");
            assert!(String::from_utf8_lossy(&gcc).starts_with(&file));
        } else {
            assert_safe(&what("text"), &text, &[TITLE, CLEAR, CSI_UTF8, CSI_BYTE]);
            assert_notes_escaped(&what("text"), &String::from_utf8_lossy(&text));
            assert_safe(&what("gcc"), &gcc, &[CLEAR, CSI_UTF8]);
        }
        // JSON and SARIF: through bpflog's JSON formatter, C1 escaped too; valid, and the
        // values read back as the input's.
        assert_safe(&what("json"), &json, &[r"\u001b", r"\u009b"]);
        assert_safe(&what("sarif"), &sarif, &[r"\u001b", r"\u009b"]);
        let record: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let sarif: serde_json::Value = serde_json::from_slice(&sarif).unwrap();
        let result = &sarif["runs"][0]["results"][0];
        if *hostile == "object" {
            let file = "\x1b]0;pwned\x07\u{9b}Jx.c";
            assert_eq!(record["location"]["file"], file);
            assert!(result["message"]["text"].is_string());
            let help = result["properties"]["help"].as_str().unwrap();
            assert!(help.contains(file), "{help}");
        } else {
            let failed = record["chain"].as_array().unwrap().last().unwrap();
            let insn = "r4 = *(u64 *)(r3 +0)\x1b[2J\u{9b}2J";
            assert_eq!(failed["instruction"], insn, "{record}");
            let failed = &result["relatedLocations"]
                .as_array()
                .unwrap()
                .last()
                .unwrap();
            let message = failed["message"]["text"].as_str().unwrap();
            assert!(
                message.ends_with(&format!("(insn 29: {insn})")),
                "{message}"
            );
        }
    }
}

#[test]
fn the_diagnostic_repeats_the_log_escaped_and_passes_its_lines_as_they_are() {
    // Rich style: the log's own lines go out as the kernel printed them; what the diagnostic
    // repeats of them is escaped.
    let dir = scratch("notes");
    let out = bpflog(
        &dir,
        &[
            "annotate".as_ref(),
            "--style".as_ref(),
            "rich".as_ref(),
            "--color".as_ref(),
            "never".as_ref(),
            global_object().as_os_str(),
            notes_log().as_os_str(),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("\nerror: ").expect("a diagnostic");
    let (log, diagnostic) = out.stdout.split_at(at);
    assert_safe(
        "annotate --style rich: the diagnostic",
        diagnostic,
        &[TITLE],
    );
    assert_notes_escaped("annotate --style rich", &text[at..]);
    let own = std::fs::read(notes_log()).unwrap();
    for line in own
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !l.starts_with(b";"))
    {
        assert!(log.windows(line.len()).any(|w| w == line), "{line:?}");
    }
}

/// `out` with the palette's own escape sequences (SGR, `ESC [ digits ; m`) taken out.
fn without_sgr(out: &[u8]) -> Vec<u8> {
    let mut kept = Vec::with_capacity(out.len());
    let mut rest = out;
    while let Some(at) = rest.iter().position(|&b| b == 0x1b) {
        kept.extend_from_slice(&rest[..at]);
        let after = &rest[at + 1..];
        let params = after.get(1..).unwrap_or_default();
        let len = params
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b';')
            .count();
        if after.first() == Some(&b'[') && params.get(len) == Some(&b'm') {
            rest = &params[len + 1..];
        } else {
            kept.push(0x1b);
            rest = after;
        }
    }
    kept.extend_from_slice(rest);
    kept
}

/// The global log with the bytes in its own lines (the pass, an instruction, the registers, a
/// line before the error, held until the log shows it is not the error), wrapped as libbpf
/// prints a load log, with libbpf's and other lines around it carrying them too.
fn wrapped_notes_log(dir: &Path) -> PathBuf {
    let mut log = b"outside \x1b]0;pwned\x07 \xc2\x9b2J\n".to_vec();
    log.extend_from_slice(b"libbpf: prog 'xdp_reject_global': -- BEGIN PROG LOAD LOG --\n");
    let notes = std::fs::read(notes_log()).unwrap();
    let error = b"\nR3 invalid mem access";
    let at = notes.windows(error.len()).position(|w| w == error).unwrap() + 1;
    log.extend_from_slice(&notes[..at]);
    log.extend_from_slice(b"held \x1b]0;pwned\x07\n");
    log.extend_from_slice(&notes[at..]);
    log.extend_from_slice(b"-- END PROG LOAD LOG --\nafter \x1b[2J\x9b\n");
    let path = dir.join("wrapped-notes.log");
    std::fs::write(&path, log).unwrap();
    path
}

/// The styles the log's own lines go out in: kernel and rich, plain and colored, with the
/// liveness and backtracking lines' locations.
const STYLES: [&[&str]; 5] = [
    &["--style", "kernel", "--color", "never"],
    &["--style", "kernel", "--color", "always"],
    &["--style", "kernel", "--color", "never", "--annotate-all"],
    &["--style", "rich", "--color", "never"],
    &["--style", "rich", "--color", "always", "--context", "1"],
];

#[test]
fn escape_log_always_escapes_the_logs_own_lines_in_every_style() {
    // As on a terminal: the kernel's `;` lines of the hostile object, the global log's own
    // lines, the lines around the logs, from a file and from standard input.
    let dir = scratch("escape-log-always");
    let wrapped = wrapped_notes_log(&dir);
    let cases = [
        (object(), kernel_log(), &[TITLE, CSI_UTF8][..]),
        (
            global_object(),
            notes_log(),
            &[TITLE, CLEAR, CSI_BYTE, CSI_UTF8][..],
        ),
        (
            global_object(),
            wrapped,
            &[TITLE, CLEAR, CSI_BYTE, CSI_UTF8][..],
        ),
    ];
    for (object, log, escapes) in &cases {
        for style in STYLES {
            let args: Vec<&OsStr> = ["annotate", "--escape-log", "always"]
                .iter()
                .chain(style)
                .map(OsStr::new)
                .chain([object.as_os_str()])
                .collect();
            let what = format!("{args:?} {}", log.display());
            let from_file = bpflog(&dir, &[&args[..], &[log.as_os_str()]].concat());
            assert_safe(&what, &without_sgr(&from_file.stdout), escapes);
            assert_safe(&what, &from_file.stderr, &[]);
            let from_stdin = common::run_with_stdin(
                Command::new(env!("CARGO_BIN_EXE_bpflog"))
                    .current_dir(&dir)
                    .args(&args),
                &std::fs::read(log).unwrap(),
            );
            assert_eq!(from_stdin.status.code(), Some(0), "{what} (stdin)");
            assert_eq!(from_stdin.stdout, from_file.stdout, "{what} (stdin)");
        }
    }
}

#[test]
fn the_logs_own_lines_go_to_a_pipe_as_read_unless_told() {
    // To a pipe (as here), and with `--escape-log never`, the kernel's log comes back byte for
    // byte; `always` escapes the same lines, nothing else changes.
    let dir = scratch("escape-log-pipe");
    let wrapped = wrapped_notes_log(&dir);
    for (object, log) in [
        (object(), kernel_log()),
        (global_object(), notes_log()),
        (global_object(), wrapped),
    ] {
        let input = std::fs::read(&log).unwrap();
        let run = |escape: &[&str]| {
            let args: Vec<&OsStr> = ["annotate", "--style", "kernel"]
                .iter()
                .chain(escape)
                .map(OsStr::new)
                .chain([object.as_os_str(), log.as_os_str()])
                .collect();
            bpflog(&dir, &args).stdout
        };
        let what = log.display();
        assert!(run(&[]) == input, "{what}: the default to a pipe");
        assert!(
            run(&["--escape-log", "never"]) == input,
            "{what}: --escape-log never"
        );
        assert!(run(&["--escape-log", "auto"]) == input, "{what}: auto");
        let escaped = run(&["--escape-log", "always"]);
        assert!(!raw_controls(&input).is_empty());
        let lines = |b: &[u8]| b.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(lines(&escaped), lines(&input), "{what}");
        assert!(escaped == escaped_line_by_line(&input), "{what}: always");
    }
}

/// `bytes` as `--escape-log always` writes a log: each line's control bytes escaped by the
/// library's one escaping function.
fn escaped_line_by_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .flat_map(|line| {
            let content = line.strip_suffix(b"\n").unwrap_or(line);
            let mut out = bpflog::escape_controls(content).into_owned();
            out.extend_from_slice(&line[content.len()..]);
            out
        })
        .collect()
}

/// `verify` loads the hostile object (its UTF-8 variant: libbpf-rs refuses a string that is
/// not): the kernel rejects it, and what bpflog writes (the diagnostic, the table, CSV, JSON)
/// shows the object's texts escaped; the kernel's log lines go out as the kernel printed them,
/// as in `annotate`. Live: needs the `load` feature and the right to load programs.
#[cfg(feature = "load")]
#[test]
fn verify_escapes_the_objects_texts() {
    let dir = scratch("verify");
    if !can_load() {
        return;
    }
    // The object under a file name carrying the bytes too: the table's file_name.
    let object = dir.join("escapes\x1b]0;pwned\x07\u{9b}J.o");
    std::fs::copy(hostile("escapes.utf8.reject_subprog.o"), &object).unwrap();
    // The kernel's `;` lines, raw; everything else bpflog's, escaped.
    let ours = |out: &[u8]| -> Vec<u8> {
        (out.split_inclusive(|&b| b == b'\n'))
            .filter(|l| !l.starts_with(b"; "))
            .flatten()
            .copied()
            .collect()
    };
    for format in ["table", "csv", "json"] {
        // The table alone on standard output with -o csv and -o json: the log to stderr.
        let logs = if format == "table" {
            None
        } else {
            Some("--logs-to-stderr")
        };
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .current_dir(&dir)
            .args(["verify", "--color", "never", "-o", format])
            .args(logs)
            .arg(&object)
            .output()
            .unwrap();
        let what = format!("verify -o {format}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("rejected by the kernel"), "{what}: {err}");
        let (stdout, stderr) = (ours(&out.stdout), ours(&out.stderr));
        let (log, table) = match logs {
            None => (&stdout, &stdout),
            Some(_) => (&stderr, &stdout),
        };
        assert_safe(&what, &stderr, &[]);
        assert_safe(&what, log, &[TITLE, CLEAR, CSI_UTF8]);
        let log = String::from_utf8_lossy(log);
        assert!(
            log.contains(&format!("--> {TITLE}{CSI_UTF8}Jx.c:54:12\n")),
            "{what}: {log}"
        );
        assert_safe(&what, table, &[]);
        let table = String::from_utf8_lossy(table);
        let file_name = match format {
            "json" => r#""file_name":"escapes\u001b]0;pwned\u0007\u009bJ.o""#.to_owned(),
            _ => format!("escapes{TITLE}{CSI_UTF8}J.o"),
        };
        assert!(
            table.contains(&file_name),
            "{what}: no {file_name} in\n{table}"
        );
    }
}

/// Whether this process may load programs (CAP_BPF or CAP_SYS_ADMIN); says so when not.
#[cfg(feature = "load")]
fn can_load() -> bool {
    let caps = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let caps = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(caps.trim(), 16).ok()
        })
        .unwrap_or(0);
    let can = caps & (1 << 39) != 0 || caps & (1 << 21) != 0;
    if !can {
        eprintln!("skipping: this process has neither CAP_BPF nor CAP_SYS_ADMIN");
    }
    can
}

/// `verify` of the hostile object (live, as above): as on a terminal (`--escape-log always`),
/// the kernel's lines are escaped too, annotated and `--raw`; to a pipe, `--raw` is the log as
/// the kernel printed it.
#[cfg(feature = "load")]
#[test]
fn verify_escape_log_always_escapes_the_kernels_lines() {
    let dir = scratch("verify-escape-log");
    if !can_load() {
        return;
    }
    let object = hostile("escapes.utf8.reject_subprog.o");
    for how in [
        &[][..],
        &["--style", "rich"],
        &["--raw"],
        &["--logs-to-stderr"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .current_dir(&dir)
            .args(["verify", "--color", "never", "--escape-log", "always"])
            .args(how)
            .arg(&object)
            .output()
            .unwrap();
        let what = format!("verify --escape-log always {how:?}");
        assert_safe(&what, &out.stdout, &[]);
        assert_safe(&what, &out.stderr, &[]);
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains(&format!("{TITLE}{CSI_UTF8}Jx.c:54")),
            "{text}"
        );
    }
    let raw = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .current_dir(&dir)
        .args(["verify", "--raw"])
        .arg(&object)
        .output()
        .unwrap();
    assert!(
        !raw_controls(&raw.stdout).is_empty(),
        "verify --raw to a pipe"
    );
}

#[test]
fn verify_compare_escapes_the_names_of_its_tables() {
    // Two of verify's tables (the fixture's), a program's name carrying the bytes: the
    // comparison's table and CSV escape them visibly, its JSON by JSON's rules (C1 too).
    let dir = scratch("verify-compare");
    let csv = std::fs::read_to_string(fixtures().join("verify/bpflog.csv")).unwrap();
    let hostile = csv.replacen(",xdp_branchy,", ",xdp_branchy\x1b]0;pwned\x07\u{9b}J,", 1);
    assert_ne!(hostile, csv);
    let (base, comp) = (dir.join("base.csv"), dir.join("comp.csv"));
    std::fs::write(&base, &hostile).unwrap();
    std::fs::write(&comp, &hostile).unwrap();
    let run = |format: &str| {
        let args = ["verify", "--compare"].map(OsStr::new);
        let all = [
            &args[..],
            &[base.as_os_str(), comp.as_os_str()],
            &["-o", format].map(OsStr::new),
        ]
        .concat();
        bpflog(&dir, &all).stdout
    };
    assert_safe("verify --compare", &run("table"), &[TITLE, CSI_UTF8]);
    let csv = run("csv");
    assert_safe("verify --compare -o csv", &csv, &[TITLE, CSI_UTF8]);
    let row = String::from_utf8_lossy(&csv);
    assert!(
        row.contains(&format!(",xdp_branchy{TITLE}{CSI_UTF8}J,")),
        "{row}"
    );
    let json = run("json");
    assert_safe("verify --compare -o json", &json, &[r"\u001b", r"\u009b"]);
    let first: serde_json::Value =
        serde_json::from_slice(json.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first["prog_name"], "xdp_branchy\x1b]0;pwned\x07\u{9b}J");
}
