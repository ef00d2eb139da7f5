//! The three loaders' layouts of every program of every fixture object.
//!
//! The snapshot `snapshots/layouts.snap` lists, per program and loader, each placed function and
//! its first instruction index. libbpf's are checked against the kernel's own `func#N @START`
//! lines in the golden log tests; here the differences between loaders are pinned down.

use bpflog_object::{BpfObject, Loader};
use std::fmt::Write;
use std::path::Path;

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/obj")
}

fn listing(object: &BpfObject<'_>, program: &str, loader: Loader) -> String {
    let id = object.program(program).unwrap();
    let layout = object.layout_for(id, loader).unwrap();
    layout
        .parts
        .iter()
        .map(|p| format!("{}@{}", object.function(p.function).name, p.start))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn nested_calls_are_placed_depth_first_by_libbpf_and_aya_breadth_first_by_cilium() {
    let data = std::fs::read(fixtures().join("two_in_one.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    // The kernel's log of xdp_nested loaded by libbpf says: func#1 @19, func#2 @28, func#3 @33.
    let libbpf = listing(&object, "xdp_nested", Loader::Libbpf);
    assert_eq!(
        libbpf,
        "xdp_nested@0 outer_sum@19 inner_scale@28 mix_hash@33"
    );
    assert_eq!(listing(&object, "xdp_nested", Loader::Aya), libbpf);
    // cilium/ebpf queues xdp_nested's references sorted by name, then outer_sum's.
    assert_eq!(
        listing(&object, "xdp_nested", Loader::Cilium),
        "xdp_nested@0 mix_hash@19 outer_sum@38 inner_scale@47"
    );
}

#[test]
fn every_fixture_program_under_every_loader() {
    let mut paths: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut out = String::new();
    for path in paths {
        let data = std::fs::read(&path).unwrap();
        let object = BpfObject::parse(&data).unwrap();
        writeln!(out, "{}", path.file_name().unwrap().to_string_lossy()).unwrap();
        for id in object.programs() {
            let name = &object.function(id).name;
            for loader in Loader::ALL {
                writeln!(
                    out,
                    "  {name} {:7} {}",
                    loader.name(),
                    listing(&object, name, loader)
                )
                .unwrap();
            }
        }
    }
    insta::with_settings!({ snapshot_path => "../../../snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("layouts", out);
    });
}

#[test]
fn the_exception_callback_comes_last_as_libbpf_appends_it() {
    let data = std::fs::read(fixtures().join("exception_cb.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    let program = object.program("tc_throw").unwrap();
    let callback = object
        .exception_callback(program)
        .map(|f| object.function(f).name.clone());
    assert_eq!(callback.as_deref(), Some("exception_handler"));
    // The kernel's log of it (loaded by libbpf 1.7) says func#1 @4, func#2 @14.
    assert_eq!(
        listing(&object, "tc_throw", Loader::Libbpf),
        "tc_throw@0 double_small@4 exception_handler@14"
    );
    // Programs without the decl tag have none.
    let data = std::fs::read(fixtures().join("reject_global.o")).unwrap();
    let object = BpfObject::parse(&data).unwrap();
    assert_eq!(
        object.exception_callback(object.program("xdp_reject_global").unwrap()),
        None
    );
}

#[test]
fn objects_are_read_from_bytes_at_any_alignment() {
    // A loader's buffer, `include_bytes!`: nothing promises 8-byte alignment.
    let data = std::fs::read(fixtures().join("reject_subprog.o")).unwrap();
    for shift in 0..8 {
        let mut buf = vec![0u8; shift];
        buf.extend_from_slice(&data);
        let object =
            BpfObject::parse(&buf[shift..]).unwrap_or_else(|e| panic!("shift {shift}: {e}"));
        assert_eq!(
            listing(&object, "xdp_reject_subprog", Loader::Libbpf),
            "xdp_reject_subprog@0 update_flow@35"
        );
    }
}
