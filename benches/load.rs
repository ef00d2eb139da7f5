//! Loading an object's tables, the time before the first log line is read.
//!
//! `cargo bench --bench load -- OBJECT...` reads each object, parses it (`BpfObject::parse`: ELF,
//! BTF, `.BTF.ext`, DWARF) and lays out each of its programs under each loader, with its line
//! table (`Program::with_loader`); best of 5 runs each. Without objects, the fixtures'.
//! `benches/big-object.sh OUT.o` writes an object of about a million instructions.

use bpflog::Program;
use bpflog::object::{BpfObject, Loader};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const RUNS: usize = 5;

fn main() {
    let mut objects: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .collect();
    if objects.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/obj");
        objects = std::fs::read_dir(dir)
            .expect("fixtures")
            .map(|e| e.expect("entry").path())
            .collect();
        objects.sort();
    }
    println!(
        "{:<40} {:>10} {:>8} {:>10} {:>10} {:>10}",
        "object (best of 5)", "insns", "rows", "read", "parse", "all layouts"
    );
    for path in objects {
        let best =
            |f: &mut dyn FnMut() -> Duration| (0..RUNS).map(|_| f()).min().unwrap_or_default();
        let mut data = Vec::new();
        let read = best(&mut || {
            let start = Instant::now();
            data = std::fs::read(&path).expect("object");
            start.elapsed()
        });
        let parse = best(&mut || {
            let start = Instant::now();
            let object = BpfObject::parse(&data).expect("parse");
            std::hint::black_box(&object);
            start.elapsed()
        });
        let object = BpfObject::parse(&data).expect("parse");
        let (mut insns, mut rows) = (0, 0);
        let lay_out = best(&mut || {
            let start = Instant::now();
            for id in object.programs() {
                for loader in Loader::ALL {
                    if let Ok(program) = Program::with_loader(&object, id, loader) {
                        insns = insns.max(program.layout.len);
                        rows = rows.max(program.lines.rows().len());
                        std::hint::black_box(&program);
                    }
                }
            }
            start.elapsed()
        });
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into());
        let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1e3);
        println!(
            "{name:<40} {insns:>10} {rows:>8} {:>10} {:>10} {:>10}",
            ms(read),
            ms(parse),
            ms(lay_out)
        );
    }
}
