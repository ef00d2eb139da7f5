//! Choosing the program from what the log shows: programs alike but for one constant, one map,
//! one helper, one CO-RE local type id, one offset into a data section or one CO-RE-relocated
//! field (the last told apart only with the kernel's BTF, `--btf`) (tests/fixtures/select, real
//! 6.18 logs), each log given without its kernel's `;` lines and without `--prog`.

mod common;

use common::{fixtures, strip_annotations};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The pairs of look_alike.c and what tells each pair apart.
const PAIRS: [(&str, &str); 4] = [
    ("xdp_limit_64", "xdp_limit_128"),
    ("xdp_count_in_a", "xdp_count_in_b"),
    ("xdp_cpu_hash", "xdp_random_hash"),
    ("xdp_type_a", "xdp_type_b"),
];

fn object() -> PathBuf {
    fixtures().join("select/obj/look_alike.o")
}

fn log(program: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("select/logs/look_alike.{program}.l2.log"))).unwrap()
}

/// `bpflog annotate` of `input` against look_alike.o, as `program` when one is named.
fn annotate_as(input: &[u8], program: Option<&str>) -> Output {
    annotate_in(&object(), input, program)
}

/// `bpflog annotate` of `input` against `object`, as `program` when one is named.
fn annotate_in(object: &std::path::Path, input: &[u8], program: Option<&str>) -> Output {
    // A file of its own: the tests run at once.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("bpflog-select-{}-{n}", std::process::id()));
    std::fs::write(&path, input).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpflog"));
    cmd.args(["annotate", "--color", "never"]);
    if let Some(program) = program {
        cmd.args(["--prog", program]);
    }
    let out = cmd.arg(object).arg(&path).output().unwrap();
    let _ = std::fs::remove_file(&path);
    out
}

/// `bpflog annotate` of `input` against look_alike.o, no program named.
fn annotate(input: &[u8]) -> Output {
    annotate_as(input, None)
}

/// Which of `a` and `b` annotating `input` without `--prog` chose: the one whose annotation it
/// gave (the two annotate every log of look_alike.c differently).
fn chosen<'a>(name: &str, input: &[u8], a: &'a str, b: &'a str) -> &'a str {
    let out = annotate(input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: {err}");
    let as_a = annotate_as(input, Some(a)).stdout;
    let as_b = annotate_as(input, Some(b)).stdout;
    assert!(as_a != as_b, "{name}: {a} and {b} annotate it alike");
    if out.stdout == as_a {
        a
    } else {
        assert!(out.stdout == as_b, "{name}: neither's annotation");
        b
    }
}

/// `log` without the lines for which `drop` holds.
fn without(log: &[u8], drop: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    log.split_inclusive(|&b| b == b'\n')
        .filter(|l| !drop(l))
        .flatten()
        .copied()
        .collect()
}

/// A row of the liveness listing, or its header.
fn listing(line: &[u8]) -> bool {
    line.starts_with(b"Live regs before insn:") || line.starts_with(b" ")
}

/// Each look-alike's log, made by `made` from its real log, annotated without `--prog`: given
/// back whole, the program's own annotation lines restored.
fn each_comes_back(made: impl Fn(Vec<u8>) -> Vec<u8>) {
    for program in PAIRS.iter().flat_map(|(a, b)| [*a, *b]) {
        let log = made(log(program));
        let out = annotate(&strip_annotations(&log));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{program}: {err}");
        assert!(out.stdout == log, "{program}: another program's annotation");
    }
}

#[test]
fn each_program_of_a_look_alike_pair_is_chosen_from_its_log() {
    each_comes_back(|log| log);
}

#[test]
fn without_the_listing_the_lines_verified_decide() {
    // A log of a kernel before 6.15: no liveness listing. The constant is in the jump's line,
    // the helper in the call's, the map in the state after the 64-bit load, the type id in the
    // load's line.
    each_comes_back(|log| without(&log, listing));
}

#[test]
fn the_listing_alone_decides_a_constant_a_helper_and_a_type_id() {
    // The listing and the first line verified, nothing else: the listing's rows name the
    // constant, the helper and the type id of instructions the log does not reach.
    for (a, b) in [PAIRS[0], PAIRS[2], PAIRS[3]] {
        for (program, other) in [(a, b), (b, a)] {
            let log = log(program);
            let end = memchr::memmem::find(&log, b"\n0: (").unwrap() + 1;
            let end = end + memchr::memchr(b'\n', &log[end..]).unwrap() + 1;
            let head = strip_annotations(&log[..end]);
            assert_eq!(chosen(program, &head, program, other), program);
        }
    }
}

#[test]
fn a_log_that_stops_before_the_difference_is_refused_saying_where_they_differ() {
    // The pair of constants, the listing gone and the log cut before the jump (instruction
    // 6): nothing tells them apart, and the error says where they would differ.
    let log = without(&log("xdp_limit_64"), listing);
    let end = memchr::memmem::find(&log, b"\n6: (").unwrap() + 1;
    let out = annotate(&strip_annotations(&log[..end]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("xdp_limit_64, xdp_limit_128")
            && err.contains("they first differ at instruction 6"),
        "{err}"
    );
}

#[test]
fn the_choice_follows_the_one_line_that_differs() {
    // Each log with what tells its pair apart rewritten to the other program's (the jump's
    // constant in the listing and the line verified, the map in the states, the helper in the
    // listing and the call, the type id in the listing and the load): it is then the other program's log in all it shows, and is taken
    // as the other program; as it came, as its own.
    let swaps: [(usize, &[u8], &[u8]); 4] = [
        (3, b"r2 = 0x21", b"r2 = 0x24"),
        (0, b"if r1 > 0x40 goto", b"if r1 > 0x80 goto"),
        (1, b"map=counts_a,", b"map=counts_b,"),
        (
            2,
            b"call bpf_get_smp_processor_id#8",
            b"call bpf_get_prandom_u32#7",
        ),
    ];
    for (pair, from, to) in swaps {
        let (program, other) = PAIRS[pair];
        let log = strip_annotations(&log(program));
        let swapped = replace(&log, from, to);
        assert!(swapped != log, "{program}: nothing swapped");
        assert_eq!(chosen(program, &log, program, other), program);
        assert_eq!(chosen(program, &swapped, program, other), other);
    }
}

/// `text` with every `from` replaced by `to`.
fn replace(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = memchr::memmem::find(rest, from) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(to);
        rest = &rest[at + from.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// Twins but for their names (global_name.c): the line `Global function NAME() doesn't return
/// scalar...` that the verifier prints before verifying a program returning `void` names it,
/// and is the only line that does once the `;` lines are gone. Without it, they are twins.
#[test]
fn a_global_functions_name_tells_twins_apart() {
    let object = fixtures().join("select/obj/global_name.o");
    let annotate = |input: &[u8], n: &str| -> Output {
        let path = std::env::temp_dir().join(format!("bpflog-global-{}-{n}", std::process::id()));
        std::fs::write(&path, input).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
            .args(["annotate", "--color", "never"])
            .arg(&object)
            .arg(&path)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        out
    };
    for program in ["xdp_named_first", "xdp_named_second"] {
        let kernel =
            std::fs::read(fixtures().join(format!("select/logs/global_name.{program}.l2.log")))
                .unwrap();
        let named = format!("Global function {program}() doesn't return scalar.");
        assert!(
            String::from_utf8_lossy(&kernel).contains(&named),
            "{program}"
        );
        let stripped = strip_annotations(&kernel);
        let out = annotate(&stripped, program);
        assert!(
            out.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout == kernel, "{program}: the log came back changed");
        // Without the line, nothing tells them apart.
        let text = String::from_utf8(stripped).unwrap();
        let without: String = (text.split_inclusive('\n'))
            .filter(|l| !l.starts_with("Global function "))
            .collect();
        let out = annotate(without.as_bytes(), &format!("{program}-without"));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{program}: chosen without the line");
        assert!(err.contains("twins"), "{program}: {err}");
    }
}

/// The programs of core_field.c: the same code but for the field a CO-RE relocation reads.
const CORE_PAIR: (&str, &str) = ("kprobe_read_pid", "kprobe_read_tgid");

/// `bpflog ARGS... core_field.o LOG` with `log` (without its `;` lines) as the log and the
/// kernel BTF `btf` of tests/fixtures/select/btf, when one is named.
fn core_field(command: &str, program: &str, btf: Option<&str>) -> Output {
    let log =
        std::fs::read(fixtures().join(format!("select/logs/core_field.{program}.l2.log"))).unwrap();
    let path = std::env::temp_dir().join(format!(
        "bpflog-core-field-{}-{command}-{program}-{}",
        std::process::id(),
        btf.unwrap_or("none")
    ));
    std::fs::write(&path, strip_annotations(&log)).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bpflog"));
    cmd.arg(command);
    match command {
        "annotate" => cmd.args(["--color", "never", "--style", "kernel"]),
        "report" => cmd.args(["-o", "-"]),
        _ => cmd.args(["--format", "json"]),
    };
    if let Some(btf) = btf {
        cmd.arg("--btf")
            .arg(fixtures().join("select/btf").join(btf));
    }
    let out = cmd
        .arg(fixtures().join("select/obj/core_field.o"))
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    out
}

#[test]
fn co_re_twins_are_refused_naming_the_field_each_reads() {
    // The log prints offsets relocated against the kernel's BTF: without it, no field.
    let (a, b) = CORE_PAIR;
    for program in [a, b] {
        let out = core_field("annotate", program, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{a}, {b} (the same code but for fields relocated by CO-RE (instruction 1: pid vs tgid of struct task_struct)"))
                && err.contains("pass --btf with the BTF of the kernel that printed the log")
                && !err.contains("twins"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn the_kernels_btf_tells_co_re_twins_apart_both_ways() {
    // The kernel's BTF as raw BTF and as an ELF file's .BTF: each log is its own program's.
    let (a, b) = CORE_PAIR;
    for btf in ["vmlinux.min.btf", "vmlinux.min.o"] {
        for program in [a, b] {
            let kernel =
                std::fs::read(fixtures().join(format!("select/logs/core_field.{program}.l2.log")))
                    .unwrap();
            let out = core_field("annotate", program, Some(btf));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{btf} {program}: {err}");
            assert!(
                out.stdout == kernel,
                "{btf} {program}: another program's annotation"
            );
        }
    }
    // profile, report and explain choose through the same place.
    for command in ["profile", "report", "explain"] {
        for program in [a, b] {
            let refused = core_field(command, program, None);
            let err = String::from_utf8_lossy(&refused.stderr);
            assert_eq!(refused.status.code(), Some(1), "{command} {program}");
            assert!(
                err.contains("relocated by CO-RE"),
                "{command} {program}: {err}"
            );
            let out = core_field(command, program, Some("vmlinux.min.btf"));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{command} {program}: {err}");
            if command == "report" {
                let page = String::from_utf8_lossy(&out.stdout);
                let other = if program == a { b } else { a };
                assert!(
                    page.contains(program) && !page.contains(other),
                    "{command} {program}"
                );
            }
        }
    }
}

#[test]
fn a_kernel_btf_without_the_field_never_picks_a_wrong_program() {
    // no_tgid.btf has no field tgid: kprobe_read_tgid's offset is unknown there, and an unknown
    // excludes nothing. The log of kprobe_read_pid fits both: refused, saying the BTF given
    // does not settle them; the log of kprobe_read_tgid shows another offset than the one the
    // BTF gives pid: kprobe_read_tgid's.
    let (a, b) = CORE_PAIR;
    let out = core_field("annotate", a, Some("no_tgid.btf"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("instruction 1: pid vs tgid of struct task_struct")
            && err.contains("the BTF given does not settle them")
            && !err.contains("pass --btf"),
        "{err}"
    );
    let kernel =
        std::fs::read(fixtures().join(format!("select/logs/core_field.{b}.l2.log"))).unwrap();
    let out = core_field("annotate", b, Some("no_tgid.btf"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == kernel, "another program's annotation");
}

#[test]
fn a_hostile_kernel_btf_is_a_one_line_error_naming_where() {
    let dir = fixtures().join("select/btf");
    for (btf, said) in [
        (
            "truncated.btf",
            "section .BTF at offset 0x64: truncated: string table needs 47 bytes, 23 remain",
        ),
        (
            "huge_vlen.btf",
            "section .BTF at offset 0x4c: truncated: type's members needs 786420 bytes, 24 remain",
        ),
        (
            "make.py",
            "neither raw BTF (magic 0xeb9f) nor an ELF file with a .BTF section",
        ),
    ] {
        for command in ["annotate", "profile"] {
            let out = core_field(command, CORE_PAIR.0, Some(btf));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{btf}: {err}");
            assert_eq!(
                err,
                format!("bpflog: error: {}: {said}\n", dir.join(btf).display()),
                "{command}"
            );
            assert!(out.stdout.is_empty(), "{btf}");
        }
    }
}

/// A `__weak` kfunc no kernel has, which a libbpf before 1.2 leaves unresolved: the kernel prints
/// its call `call #0` (no name, no BTF id), where the object's instruction calls the kfunc by
/// its relocation. The log is still its program's: chosen without `--prog`, stripped of its `;`
/// lines and given them back (`tests/fixtures/explain`'s reject_ksym, loaded with Debian's
/// libbpf 1.1 into Linux 6.18).
#[test]
fn an_unresolved_weak_kfunc_call_fits_its_program() {
    let dir = fixtures().join("explain");
    let log = std::fs::read(dir.join("logs/reject_ksym.tc_reject_ksym.l2.log")).unwrap();
    assert!(log.windows(8).any(|w| w == b"call #0 "), "the log calls #0");
    let path = std::env::temp_dir().join(format!("bpflog-ksym-{}", std::process::id()));
    std::fs::write(&path, strip_annotations(&log)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bpflog"))
        .args(["annotate", "--color", "never"])
        .arg(dir.join("obj/reject_ksym.o"))
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&log)
    );
}

/// The pairs of data_offset.c: the same code but for the offset a 64-bit load takes into a data
/// section (a format string's copy in .rodata, a .bss variable), shown only by the register's
/// state after the load (`off=12`, none for 0).
const OFFSET_PAIRS: [(&str, &str, &[u8]); 2] = [
    ("xdp_say_first", "xdp_say_second", b",off=12)"),
    ("xdp_mark_a", "xdp_mark_b", b",off=8)"),
];

fn offset_object() -> PathBuf {
    fixtures().join("select/obj/data_offset.o")
}

fn offset_log(program: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("select/logs/data_offset.{program}.l2.log"))).unwrap()
}

#[test]
fn the_offset_a_load_takes_into_a_data_section_tells_programs_apart() {
    for (a, b, _) in OFFSET_PAIRS {
        for program in [a, b] {
            let log = offset_log(program);
            let out = annotate_in(&offset_object(), &strip_annotations(&log), None);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{program}: {err}");
            assert!(out.stdout == log, "{program}: another program's annotation");
        }
    }
}

#[test]
fn the_choice_follows_the_offset_and_an_offset_of_neither_is_refused() {
    for (a, b, off) in OFFSET_PAIRS {
        let log = strip_annotations(&offset_log(b));
        // The offset gone (0): the other program's log in all it shows.
        let moved = replace(&log, off, b")");
        assert!(moved != log, "{b}: no offset");
        let as_a = annotate_in(&offset_object(), &moved, Some(a)).stdout;
        let as_b = annotate_in(&offset_object(), &moved, Some(b)).stdout;
        assert!(as_a != as_b, "{a} and {b} annotate alike");
        let out = annotate_in(&offset_object(), &moved, None);
        assert!(
            out.status.success() && out.stdout == as_a,
            "{b} at offset 0: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // An offset neither program takes: no choice.
        let neither = replace(&log, off, b",off=4)");
        let out = annotate_in(&offset_object(), &neither, None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{b} at offset 4: {err}");
        assert!(out.stdout.is_empty(), "{b} at offset 4");
    }
}

#[test]
fn programs_that_differ_only_in_an_offset_are_no_twins() {
    // The load's line without its state (the listing prints the loads' addresses, not their
    // offsets): refused, saying where the programs differ (the load, instruction 0), not that
    // they are the same code.
    let (a, b, _) = OFFSET_PAIRS[0];
    let log = strip_annotations(&offset_log(a));
    let load = memchr::memmem::find(&log, b"\n0: (18) r1 = ").unwrap() + 1;
    let state = load + memchr::memmem::find(&log[load..], b" ; ").unwrap();
    let mut cut = log[..state].to_vec();
    cut.push(b'\n');
    let out = annotate_in(&offset_object(), &cut, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{a}, {b}"))
            && err.contains("they first differ at instruction 0")
            && !err.contains("twins"),
        "{err}"
    );
}

/// linkage.c: the same loaded code but for the linkage of the function called.
const LINKAGE_PAIR: (&str, &str) = ("xdp_call_static", "xdp_call_global");

fn linkage_log(program: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(format!("select/logs/linkage.{program}.l2.log"))).unwrap()
}

#[test]
fn a_function_the_verifier_steps_into_is_static() {
    // xdp_call_static's log shows `caller:` after its call, which the kernel prints only for a
    // static function; xdp_call_global's names its function (`Func#1 ('add_one_global') is
    // global`).
    let object = fixtures().join("select/obj/linkage.o");
    let (a, b) = LINKAGE_PAIR;
    for program in [a, b] {
        let log = linkage_log(program);
        let out = annotate_in(&object, &strip_annotations(&log), None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{program}: {err}");
        assert!(out.stdout == log, "{program}: another program's annotation");
    }
    // Named alone, the global one is not ruled out by it (a loader that passes no BTF makes
    // every function static): xdp_call_static's log annotated as xdp_call_global.
    let stripped = strip_annotations(&linkage_log(a));
    let out = annotate_in(&object, &stripped, Some(b));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(out.stdout != linkage_log(a), "{b}: its own annotation");
}
