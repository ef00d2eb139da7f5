//! Line-table lookups: the four ways to find the record covering an instruction, and loading
//! the tables of a program of a million instructions.
//!
//! `cargo bench -p bpflog-object --bench lookup`. The access pattern is a real log's: the
//! instruction indices of `tests/fixtures/logs/branchy.xdp_branchy.l2.log` in order (mostly
//! rising by one or two, with jumps at branches and path switches), scaled onto a program of
//! 1M instructions with a record every 3 instructions.

use bpflog_object::{LineOrigin, LineRow, LineTable};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const PROGRAM: u32 = 1_000_000;

fn table() -> LineTable<'static> {
    let rows = (0..PROGRAM)
        .step_by(3)
        .map(|insn| LineRow {
            insn,
            file_name_off: 1 + insn % 7,
            file: b"prog.c",
            line: insn / 3,
            col: 5,
            text: b"  x += 1;",
        })
        .collect();
    LineTable::new(rows, PROGRAM, LineOrigin::Btf)
}

/// The instruction indices of a real level-2 log, spread over the whole program.
fn probes() -> Vec<u32> {
    let log = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/logs/branchy.xdp_branchy.l2.log"
    ))
    .expect("fixture log");
    let indices: Vec<u32> = log
        .split(|&b| b == b'\n')
        .filter_map(|l| {
            let digits = l.iter().take_while(|b| b.is_ascii_digit()).count();
            (digits > 0 && l[digits..].starts_with(b": ("))
                .then(|| std::str::from_utf8(&l[..digits]).ok()?.parse().ok())?
        })
        .collect();
    let max = indices.iter().copied().max().unwrap_or(1) + 1;
    // Replay the log at 64 places of the program, as a large program's log would wander.
    (0..64u32)
        .flat_map(|k| {
            indices
                .iter()
                .map(move |&i| (k * (PROGRAM / 64) + i) % PROGRAM)
        })
        .chain(std::iter::once(max))
        .collect()
}

fn lookups(c: &mut Criterion) {
    let table = table();
    let probes = probes();
    let mut group = c.benchmark_group("lookup");
    group.throughput(Throughput::Elements(probes.len() as u64));
    group.bench_function(
        BenchmarkId::new("dense index (default)", probes.len()),
        |b| {
            b.iter(|| {
                probes
                    .iter()
                    .filter_map(|&p| table.find(black_box(p)))
                    .count()
            })
        },
    );
    group.bench_function(
        BenchmarkId::new("binary search (kernel, reference)", probes.len()),
        |b| {
            b.iter(|| {
                probes
                    .iter()
                    .filter_map(|&p| table.find_binary(black_box(p)))
                    .count()
            })
        },
    );
    group.bench_function(
        BenchmarkId::new("last hit, successor, then binary", probes.len()),
        |b| {
            b.iter(|| {
                let mut hint = 0;
                probes
                    .iter()
                    .filter_map(|&p| table.find_near(black_box(p), &mut hint))
                    .count()
            })
        },
    );
    // The kernel's old linear scan is too slow for a million-instruction table: a sample.
    let sample = &probes[..200];
    group.throughput(Throughput::Elements(sample.len() as u64));
    group.sample_size(10);
    group.bench_function(
        BenchmarkId::new("linear scan (kernel before 5.x)", sample.len()),
        |b| {
            b.iter(|| {
                sample
                    .iter()
                    .filter_map(|&p| table.find_linear(black_box(p)))
                    .count()
            })
        },
    );
    group.finish();
}

fn loading(c: &mut Criterion) {
    let rows: Vec<LineRow<'static>> = (0..PROGRAM)
        .step_by(3)
        .map(|insn| LineRow {
            insn,
            file_name_off: 1,
            file: b"prog.c",
            line: insn / 3,
            col: 5,
            text: b"x += 1;",
        })
        .collect();
    c.bench_function("build the table of a 1M-instruction program", |b| {
        b.iter(|| LineTable::new(black_box(rows.clone()), PROGRAM, LineOrigin::Btf))
    });
}

criterion_group!(benches, lookups, loading);
criterion_main!(benches);
