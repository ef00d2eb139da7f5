//! The fuzz targets' bodies (fuzz/src/lib.rs), run on every `cargo test` over a few thousand
//! deterministic mutations of the real fixtures: bit flips, interesting values at random and
//! at header offsets, truncations, splices of two fixtures, and hostile log lines. A seeded
//! xorshift generator keeps every run the same, so a failure here reproduces by its iteration.
//! The real fuzzers (`cd fuzz && cargo fuzz run <target>`) explore far more; crashes they find
//! become regression inputs in `regressions()` below.

#[path = "../fuzz/src/lib.rs"]
#[allow(dead_code, missing_docs)]
mod targets;

mod common;

use std::path::Path;

/// xorshift64*: small, seeded, enough for choosing mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

const INTERESTING: [u32; 10] = [0, 1, 3, 7, 8, 0x7f, 0x80, 0xffff, 0x7fff_ffff, 0xffff_ffff];

fn fixture_objects() -> Vec<Vec<u8>> {
    let dir = common::fixtures().join("obj");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("obj/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read(p).expect("object"))
        .collect()
}

fn fixture_log(name: &str) -> Vec<u8> {
    std::fs::read(common::fixtures().join("logs").join(name)).expect("log")
}

/// One mutation of `data`, `others` to splice from.
fn mutate(rng: &mut Rng, data: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut d = data.to_vec();
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        if d.is_empty() {
            break;
        }
        match rng.below(7) {
            0 => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 => {
                let i = rng.below(d.len());
                d[i] = [0, 0xff, 0x7f, 0x80, 1][rng.below(5)];
            }
            2 | 3 => {
                // An interesting u32 at a 4-aligned offset, in either byte order.
                let i = rng.below(d.len() / 4) * 4;
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let b = if rng.below(2) == 0 {
                    v.to_le_bytes()
                } else {
                    v.to_be_bytes()
                };
                let end = (i + 4).min(d.len());
                d[i..end].copy_from_slice(&b[..end - i]);
            }
            4 => d.truncate(rng.below(d.len())),
            5 => {
                // Splice: a piece of another input over the same offsets.
                let other = &others[rng.below(others.len())];
                let at = rng.below(d.len().min(other.len()));
                let len = rng.below(256).min(other.len() - at).min(d.len() - at);
                d[at..at + len].copy_from_slice(&other[at..at + len]);
            }
            _ => {
                let i = rng.below(d.len());
                let len = rng.below(64).min(d.len() - i);
                d.drain(i..i + len);
            }
        }
    }
    d
}

/// Log lines that a hostile or broken log may hold.
const HOSTILE_LINES: [&[u8]; 14] = [
    b"4294967296: (b7) r0 = 0",
    b"18446744073709551615: (95) exit",
    b"99999999999999999999999: (95) exit",
    b"-1: (b7) r0 = 0",
    b"from 4294967297 to 18446744073709551615: R0=0",
    b"func#4294967295 @4294967295",
    b"Validating f() func#99999999999...",
    b"12: (85) call pc+4294967295",
    b"; @ :4294967295",
    b"; x @ \xff\xfe:99999999999",
    b"mark_precise: frame0: regs=r1 stack= before 99999999999: (b7) r4 = 0",
    b"     4294967296: .12....... (85) call pc+18",
    b"\x00\x01\x02\xff: (zz) \r",
    b"processed 18446744073709551616 insns (limit 1000000) max_states_per_insn 99999999999",
];

/// A log mutated by lines: hostile lines inserted, lines dropped or duplicated, bytes flipped.
fn mutate_log(rng: &mut Rng, log: &[u8]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = log.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    for _ in 0..1 + rng.below(6) {
        let i = rng.below(lines.len() + 1);
        match rng.below(5) {
            0 => lines.insert(i, HOSTILE_LINES[rng.below(HOSTILE_LINES.len())].to_vec()),
            1 if i < lines.len() => {
                lines.remove(i);
            }
            2 if i < lines.len() => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            3 if i < lines.len() && !lines[i].is_empty() => {
                let j = rng.below(lines[i].len());
                lines[i][j] = [b'9', b':', b' ', b'(', 0xff, b'\r'][rng.below(6)];
            }
            _ => {}
        }
    }
    lines.join(&b"\n"[..])
}

fn annotate_input(object: &[u8], log: &[u8]) -> Vec<u8> {
    let mut input = object.to_vec();
    input.extend_from_slice(targets::LOG_SEPARATOR);
    input.extend_from_slice(log);
    input
}

#[test]
fn object_and_dwarf_targets_survive_mutated_fixtures() {
    let objects = fixture_objects();
    let mut rng = Rng(0x005e_ed0b_1ec7);
    for object in &objects {
        targets::object(object);
        targets::dwarf(object);
    }
    for _ in 0..1500 {
        let base = &objects[rng.below(objects.len())];
        let input = mutate(&mut rng, base, &objects);
        targets::object(&input);
        targets::dwarf(&input);
    }
}

#[test]
fn object_target_survives_mutated_btf_ext_headers() {
    // Mutations aimed at .BTF and .BTF.ext, whose headers random offsets rarely hit.
    let objects = fixture_objects();
    let mut rng = Rng(0x0b7f_0e47);
    for _ in 0..1500 {
        let base = &objects[rng.below(objects.len())];
        let Some(at) = find(base, &[0x9f, 0xeb, 1, 0]).or_else(|| find(base, &[0xeb, 0x9f, 1, 0]))
        else {
            continue;
        };
        let mut d = base.clone();
        let i = at + rng.below(64).min(d.len() - at - 1);
        let v = INTERESTING[rng.below(INTERESTING.len())];
        let end = (i + 4).min(d.len());
        d[i..end].copy_from_slice(&v.to_le_bytes()[..end - i]);
        targets::object(&d);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn classify_target_survives_mutated_logs_and_garbage() {
    let mut rng = Rng(0xc1a5_51f7);
    let logs = [
        "reject_subprog.xdp_reject_subprog.l2.log",
        "loop_callback.loop_sum.l1.log",
        "reject_global.xdp_reject_global.l2.log",
    ];
    for name in logs {
        let log = fixture_log(name);
        targets::classify(&log);
        for _ in 0..300 {
            targets::classify(&mutate_log(&mut rng, &log));
        }
    }
    for line in HOSTILE_LINES {
        targets::classify(line);
    }
    let garbage: Vec<u8> = (0..64 * 1024).map(|_| rng.next() as u8).collect();
    targets::classify(&garbage);
}

#[test]
fn annotate_and_profile_targets_survive_mutated_objects_and_logs() {
    let objects = fixture_objects();
    let mut rng = Rng(0x0a22_07a7);
    let pairs = [
        (
            "reject_subprog.o",
            "reject_subprog.xdp_reject_subprog.l2.log",
        ),
        ("reject_global.o", "reject_global.xdp_reject_global.l2.log"),
        ("loop_callback.o", "loop_callback.loop_sum.l1.log"),
        ("reject_nested.o", "reject_nested.xdp_reject_nested.l2.log"),
        (
            "xdp_subprogs.nobtfext.o",
            "xdp_subprogs.nobtfext.xdp_parse.l1.log",
        ),
    ];
    for (object, log) in pairs {
        let object = std::fs::read(common::fixtures().join("obj").join(object)).expect("object");
        let log = fixture_log(log);
        targets::annotate(&annotate_input(&object, &log));
        targets::profile(&annotate_input(&object, &log));
        for k in 0..120 {
            // Mostly the log is mutated (the object then still parses); sometimes the object.
            let (o, l) = if k % 4 == 0 {
                (mutate(&mut rng, &object, &objects), log.clone())
            } else {
                (object.clone(), mutate_log(&mut rng, &log))
            };
            let input = annotate_input(&o, &l);
            targets::annotate(&input);
            targets::profile(&input);
        }
    }
}

/// Names for the `source` target: the tree's files named every way, inside and out (`@` is the
/// tree), and names debug info from strangers gives.
const SOURCE_NAMES: [&[u8]; 28] = [
    b"@/inside/a.c",
    b"@//inside//a.c",
    b"@/inside/./a.c",
    b"@/inside/sub/../a.c",
    b"@/inside/hard.c",
    b"@/inside/soft.c",
    b"a.c",
    b"./a.c",
    b"sub/b.c",
    b"sub//deep/./c.c",
    b"deep/c.c",
    b"c.c",
    b"@/outside/secret.c",
    b"@/inside/../outside/secret.c",
    b"@/inside/link.c",
    b"@/inside/abs.c",
    b"@/inside/dirlink/secret.c",
    b"@/inside/dirlink/sub/b.c",
    b"link.c",
    b"abs.c",
    b"dirlink/sub/b.c",
    b"../outside/secret.c",
    b"../../outside/sub/b.c",
    b"@/inside/loop",
    b"/proc/self/environ",
    b"/etc/passwd",
    b"../../../../../../../../etc/passwd",
    b"",
];

#[test]
fn source_target_reads_nothing_outside_its_roots() {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-source");
    let tree = targets::source_tree(&base).expect("the source target's tree");
    // Every name with every directory as --source-dir, and through a map of its front.
    for dir in 0..5u8 {
        for name in SOURCE_NAMES {
            let mut input = vec![1, dir, b'\n', 0];
            input.extend_from_slice(name);
            input.extend_from_slice(b"\n\x02@/inside=\x00\n\x02../=");
            input.push(dir);
            input.extend_from_slice(b"\n\x00");
            input.extend_from_slice(name);
            targets::source_in(&tree, &input);
        }
    }
    // Random mixes of names, directories, maps, limits and garbage.
    let mut rng = Rng(0x050c_7ee5);
    for _ in 0..400 {
        let mut input = Vec::new();
        for _ in 0..1 + rng.below(8) {
            let line: Vec<u8> = match rng.below(6) {
                0 | 1 => [&[0][..], SOURCE_NAMES[rng.below(SOURCE_NAMES.len())]].concat(),
                2 => vec![1, rng.next() as u8],
                3 => {
                    let name = SOURCE_NAMES[rng.below(SOURCE_NAMES.len())];
                    let cut = rng.below(name.len() + 1);
                    [
                        &[2][..],
                        &name[..cut],
                        b"=",
                        &[rng.next() as u8, rng.next() as u8],
                    ]
                    .concat()
                }
                4 => vec![3, rng.next() as u8, rng.next() as u8],
                _ => (0..rng.below(24)).map(|_| rng.next() as u8).collect(),
            };
            input.extend_from_slice(&line);
            input.push(b'\n');
        }
        targets::source_in(&tree, &input);
    }
    let _ = std::fs::remove_dir_all(base);
}

#[test]
fn regressions() {
    // Inputs the fuzzers found (fuzz/README.md): none has failed yet; the one timeout seen was
    // a stalled machine, not the code, and reran in 2 ms.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("entry").path();
        let data = std::fs::read(&path).expect("regression input");
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.split('-').next() {
            Some("object") => targets::object(&data),
            Some("dwarf") => targets::dwarf(&data),
            Some("classify") => targets::classify(&data),
            Some("annotate") => targets::annotate(&data),
            Some("profile") => targets::profile(&data),
            Some("source") => targets::source(&data),
            _ => panic!("{}: name must start with a target", path.display()),
        }
    }
}
