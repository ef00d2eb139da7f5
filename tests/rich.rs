//! Rich style, source context and the rejection diagnostic, over the real fixtures.
//!
//! Snapshots live in `snapshots/rich__*.snap`. Source files are found through
//! `tests/fixtures/src`, the directory the fixtures were compiled in.

mod common;

use bpflog::object::BpfObject;
use bpflog::{AnnotateOptions, Palette, Program, SourceSearch, Style, annotate_bare};
use common::{fixtures, strip_annotations};

/// Annotates fixture log `log` (stripped of the kernel's lines) of object `object`.
fn run(object: &str, log: &str, options: AnnotateOptions) -> String {
    let data = std::fs::read(fixtures().join("obj").join(object)).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let log = std::fs::read(fixtures().join("logs").join(log)).unwrap();
    let program_name = log_program(&log, &object);
    let program = Program::new(&object, object.program(&program_name).unwrap()).unwrap();
    let mut out = Vec::new();
    annotate_bare(&program, &strip_annotations(&log)[..], &mut out, &options).unwrap();
    String::from_utf8(out).unwrap()
}

/// The program a fixture log belongs to, found by bpflog itself.
fn log_program(log: &[u8], object: &BpfObject<'_>) -> String {
    let programs: Vec<Program> = object
        .programs()
        .into_iter()
        .map(|id| Program::new(object, id).unwrap())
        .collect();
    let selection = bpflog::select(&programs, log).unwrap();
    programs[selection.chosen].name().to_owned()
}

fn rich() -> AnnotateOptions {
    AnnotateOptions::default()
        .style(Style::Rich)
        .diagnostic(true)
        .sources(
            SourceSearch::default()
                .dirs(vec![fixtures().join("src")])
                .maps(Vec::new()),
        )
}

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(format!("rich__{name}"), text);
    });
}

/// The diagnostic block: everything after the log's summary line.
fn diagnostic(out: &str) -> &str {
    let at = out.find("\nprocessed ").expect("summary line");
    let rest = &out[at + 1..];
    &rest[rest.find('\n').map_or(rest.len(), |i| i + 1)..]
}

#[test]
fn rejection_inside_nested_always_inline_helpers() {
    let out = run(
        "reject_entry.o",
        "reject_entry.xdp_reject_entry.l2.log",
        rich(),
    );
    snapshot("reject_entry.l2", &out);
    let d = diagnostic(&out);
    assert!(
        d.contains("error: invalid access to packet, off=20 size=1"),
        "{d}"
    );
    // DWARF gives the failing load line 0 (clang merged the IPv4 and IPv6 paths) and puts it
    // just past parse_iphdr's inlined range; .BTF.ext keeps line 48, the kernel's own answer.
    assert!(d.contains("--> reject_entry.c:48:6"), "{d}");
    assert!(d.contains("note: in xdp_reject_entry"), "{d}");
    // Earlier instructions do lie inside inlined helpers.
    assert!(out.contains("; *proto = eth->h_proto; @ reject_entry.c:36:16 in parse_ethhdr\n;   inlined from xdp_reject_entry at reject_entry.c:97:6\n"), "{out}");
}

#[test]
fn rejection_three_inlined_helpers_deep() {
    for object in ["reject_nested.o", "reject_nested.dwarf4.o"] {
        let log = format!("{}.xdp_reject_nested.l2.log", object.trim_end_matches(".o"));
        let out = run(object, &log, rich());
        snapshot(&format!("{}.l2", object.trim_end_matches(".o")), &out);
        let d = diagnostic(&out);
        // Values read with llvm-dwarfdump-19 --debug-info --debug-line on the object.
        assert!(d.contains("--> reject_nested.c:37:6"), "{d}");
        assert!(d.contains("note: in read_opt_byte"), "{d}");
        let chain: Vec<&str> = d
            .lines()
            .filter(|l| l.contains("note: inlined from"))
            .collect();
        assert_eq!(
            chain,
            [
                "   = note: inlined from parse_ipv4_opts at reject_nested.c:48:19",
                "   = note: inlined from parse_l3 at reject_nested.c:67:9",
                "   = note: inlined from xdp_reject_nested at reject_nested.c:84:10",
            ],
            "{d}"
        );
    }
}

#[test]
fn rejection_inside_a_static_subprogram() {
    let out = run(
        "reject_subprog.o",
        "reject_subprog.xdp_reject_subprog.l2.log",
        rich(),
    );
    snapshot("reject_subprog.l2", &out);
    let d = diagnostic(&out);
    assert!(d.contains("note: in update_flow"), "{d}");
    assert!(
        d.contains("note: called from xdp_reject_subprog at reject_subprog.c:80:"),
        "{d}"
    );
    // The level-1 log shows the same failing path.
    let l1 = run(
        "reject_subprog.o",
        "reject_subprog.xdp_reject_subprog.l1.log",
        rich(),
    );
    assert_eq!(
        diagnostic(&l1)
            .lines()
            .filter(|l| l.contains("called from"))
            .count(),
        1,
        "{l1}"
    );
}

#[test]
fn rejection_inside_a_callback() {
    for level in [1, 2] {
        let out = run(
            "reject_callback.o",
            &format!("reject_callback.xdp_reject_callback.l{level}.log"),
            rich(),
        );
        snapshot(&format!("reject_callback.l{level}"), &out);
        let d = diagnostic(&out);
        assert!(
            d.contains("error: invalid unbounded variable-offset write to stack R2"),
            "{d}"
        );
        assert!(
            d.contains("note: called from xdp_reject_callback at reject_callback.c:"),
            "{d}"
        );
    }
}

#[test]
fn rejection_inside_a_global_function() {
    let out = run(
        "reject_global.o",
        "reject_global.xdp_reject_global.l2.log",
        rich(),
    );
    snapshot("reject_global.l2", &out);
    let d = diagnostic(&out);
    assert!(d.contains("note: in sum_counters"), "{d}");
    assert!(
        d.contains(
            "note: verified on its own as a global function: Validating sum_counters() func#1..."
        ),
        "{d}"
    );
}

#[test]
fn context_lines_come_from_the_real_files() {
    let out = run(
        "reject_entry.o",
        "reject_entry.xdp_reject_entry.l1.log",
        rich().context(2),
    );
    snapshot("reject_entry.l1.context2", &out);
    let source = std::fs::read_to_string(fixtures().join("src/reject_entry.c")).unwrap();
    // Every numbered context line is the file's line of that number.
    let numbered: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(';') && l.contains(" | "))
        .collect();
    assert!(numbered.len() > 20, "{out}");
    for line in numbered {
        let (number, text) = line[3..].split_once(" | ").unwrap();
        let n: usize = number.trim().parse().unwrap();
        assert_eq!(source.lines().nth(n - 1).unwrap(), text, "{line}");
    }
}

#[test]
fn kernel_style_with_context_and_diagnostic_keeps_the_kernel_lines() {
    let kernel =
        std::fs::read_to_string(fixtures().join("logs/reject_entry.xdp_reject_entry.l2.log"))
            .unwrap();
    let options = (rich().style(Style::Kernel)).diagnostic(true);
    let out = run(
        "reject_entry.o",
        "reject_entry.xdp_reject_entry.l2.log",
        options,
    );
    assert!(
        out.starts_with(&kernel),
        "kernel style output starts with the kernel's log"
    );
    assert!(
        out[kernel.len()..].contains("\nerror: invalid access to packet"),
        "{}",
        &out[kernel.len()..]
    );
}

#[test]
fn without_dwarf_btf_alone_still_pinpoints() {
    let out = run(
        "reject_entry.nodwarf.o",
        "reject_entry.nodwarf.xdp_reject_entry.l2.log",
        rich(),
    );
    snapshot("reject_entry.nodwarf.l2", &out);
    assert!(!out.contains("inlined from"), "no DWARF, no inline chain");
    assert!(
        diagnostic(&out).contains("--> ./reject_entry.c:")
            || diagnostic(&out).contains("--> reject_entry.c:"),
        "{out}"
    );
}

#[test]
fn without_btf_ext_dwarf_alone_annotates() {
    for style in [Style::Kernel, Style::Rich] {
        let out = run(
            "reject_entry.nobtfext.o",
            "reject_entry.nobtfext.xdp_reject_entry.l2.log",
            rich().style(style),
        );
        snapshot(
            &format!("reject_entry.nobtfext.l2.{style:?}").to_lowercase(),
            &out,
        );
        assert!(
            out.lines().any(|l| l.starts_with("; ")),
            "annotations from DWARF"
        );
    }
}

#[test]
fn colored_rich_output() {
    let out = run(
        "reject_subprog.o",
        "reject_subprog.xdp_reject_subprog.l1.log",
        rich().palette(Palette::new(true)),
    );
    snapshot("reject_subprog.l1.colored", &out);
}

#[test]
fn annotate_all_resolves_backtracking_and_liveness_rows() {
    let options = rich().annotate_all(true);
    let out = run(
        "loop_callback.o",
        "loop_callback.loop_nested.l2.log",
        options,
    );
    let precise: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("mark_precise:") && l.contains(" before "))
        .collect();
    assert!(!precise.is_empty());
    assert!(
        precise.iter().all(|l| l.contains("  // loop_callback.c:")),
        "{precise:?}"
    );
    let live: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  ") && l.contains(": ") && l.contains(" ("))
        .collect();
    assert!(
        live.iter().any(|l| l.contains("  // loop_callback.c:")),
        "{live:?}"
    );
    snapshot("loop_callback.loop_nested.l2.annotate_all", &out);
}
