//! The extern functions called as C calls them, on the fixtures, against the Rust library's own
//! results for the same inputs.

use super::*;
use bpflog::object::BpfObject;
use bpflog_status::*;
use std::ptr::{null, null_mut};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{path}")).expect("a fixture")
}

fn open(obj: &str) -> *mut bpflog_object {
    let path = CString::new(format!("{FIXTURES}/obj/{obj}")).expect("a path");
    let mut err = null_mut();
    let object = unsafe { bpflog_object_open_path(path.as_ptr(), &mut err) };
    assert!(!object.is_null() && err.is_null(), "{obj} opens");
    object
}

/// The error's status and message, the error freed.
fn take(err: *mut bpflog_error) -> (bpflog_status, String) {
    assert!(!err.is_null(), "an error is set");
    let status = unsafe { bpflog_error_code(err) };
    let message = unsafe { CStr::from_ptr(bpflog_error_message(err)) }
        .to_string_lossy()
        .into_owned();
    unsafe { bpflog_error_free(err) };
    (status, message)
}

unsafe extern "C" fn collect(ctx: *mut c_void, buf: *const u8, len: usize) -> c_int {
    let out = unsafe { &mut *ctx.cast::<Vec<u8>>() };
    out.extend_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    0
}

unsafe extern "C" fn refuse(_: *mut c_void, _: *const u8, _: usize) -> c_int {
    -5
}

/// The library's annotation of `log` by `prog` of `obj`, kernel or rich as the C layer asks.
fn library_annotation(obj: &str, prog: &str, log: &[u8], style: Style) -> Vec<u8> {
    library_annotation_as(obj, prog, Loader::Libbpf, log, style)
}

/// [`library_annotation`] of `prog` laid out as `loader` does.
fn library_annotation_as(
    obj: &str,
    prog: &str,
    loader: Loader,
    log: &[u8],
    style: Style,
) -> Vec<u8> {
    let data = fixture(&format!("obj/{obj}"));
    let object = BpfObject::parse(&data).expect("an object");
    let program = Program::with_loader(&object, object.program(prog).expect("the program"), loader)
        .expect("laid out");
    let options = AnnotateOptions::default()
        .style(style)
        .palette(Palette::new(false))
        .diagnostic(style == Style::Rich);
    let mut out = Vec::new();
    let input = Input::of(&program, LogData::Stream(log));
    bpflog::annotate(input, &mut out, &options, |_, _| Ok(())).expect("annotated");
    out
}

#[test]
fn programs_are_listed_and_named() {
    let object = open("two_in_one.o");
    let data = fixture("obj/two_in_one.o");
    let parsed = BpfObject::parse(&data).expect("an object");
    let expected: Vec<&str> = parsed
        .programs()
        .iter()
        .map(|&id| parsed.function(id).name.as_str())
        .collect();
    let count = unsafe { bpflog_object_program_count(object) };
    let names: Vec<String> = (0..count)
        .map(|i| unsafe { CStr::from_ptr(bpflog_object_program_name(object, i)) })
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, expected);
    assert!(count >= 2);
    assert!(unsafe { bpflog_object_program_name(object, count) }.is_null());
    assert_eq!(unsafe { bpflog_object_program_count(null()) }, 0);
    unsafe { bpflog_object_free(object) };
}

#[test]
fn annotate_named_and_chosen_is_the_library_s() {
    let object = open("reject_subprog.o");
    let log = fixture("logs/reject_subprog.xdp_reject_subprog.l2.log");
    for (style, code) in [(Style::Kernel, 0), (Style::Rich, 1)] {
        let expected = library_annotation("reject_subprog.o", "xdp_reject_subprog", &log, style);
        for prog in [Some(c"xdp_reject_subprog"), None] {
            let out = annotated(object, prog, &log, code);
            assert_eq!(out, Ok(expected.clone()), "{style:?} {prog:?}");
        }
    }
    unsafe { bpflog_object_free(object) };
}

/// `bpflog_annotate` of `log` into a vector, or the status and message of its failure.
fn annotated(
    object: *const bpflog_object,
    prog: Option<&CStr>,
    log: &[u8],
    style: u32,
) -> Result<Vec<u8>, (bpflog_status, String)> {
    let mut out = Vec::<u8>::new();
    let mut err = null_mut();
    let status = unsafe {
        bpflog_annotate(
            object,
            prog.map_or(null(), CStr::as_ptr),
            log.as_ptr(),
            log.len(),
            style,
            Some(collect),
            (&raw mut out).cast(),
            &mut err,
        )
    };
    if status == BPFLOG_OK {
        assert!(err.is_null());
        Ok(out)
    } else {
        Err(take(err))
    }
}

#[test]
fn an_object_opened_for_a_loader_is_laid_out_as_that_loader_does() {
    // xdp_nested's functions: libbpf and aya place outer_sum at 19, cilium/ebpf mix_hash.
    let path = CString::new(format!("{FIXTURES}/obj/two_in_one.o")).expect("a path");
    let data = fixture("obj/two_in_one.o");
    // Without the kernel's `;` lines, which would be kept as they are: the lines bpflog puts back
    // are those of the layout's instructions.
    let log: Vec<u8> = fixture("logs/two_in_one.xdp_nested.l2.log")
        .split_inclusive(|&b| b == b'\n')
        .filter(|l| !l.starts_with(b";"))
        .flatten()
        .copied()
        .collect();
    let mut by_loader = Vec::new();
    for (loader, code) in [
        (Loader::Libbpf, bpflog_loader::BPFLOG_LOADER_LIBBPF),
        (Loader::Aya, bpflog_loader::BPFLOG_LOADER_AYA),
        (Loader::Cilium, bpflog_loader::BPFLOG_LOADER_CILIUM),
    ] {
        let mut err = null_mut();
        let from_path =
            unsafe { bpflog_object_open_path_loader(path.as_ptr(), code as u32, &mut err) };
        let from_bytes = unsafe {
            bpflog_object_open_bytes_loader(data.as_ptr(), data.len(), code as u32, &mut err)
        };
        assert!(!from_path.is_null() && !from_bytes.is_null() && err.is_null());
        for (style, s) in [(Style::Kernel, 0), (Style::Rich, 1)] {
            let expected = library_annotation_as("two_in_one.o", "xdp_nested", loader, &log, style);
            for object in [from_path, from_bytes] {
                let out = annotated(object, Some(c"xdp_nested"), &log, s);
                assert!(out.as_ref() == Ok(&expected), "{loader:?} {style:?}");
            }
            by_loader.push((loader, style, expected));
        }
        // Chosen from the log: the kernel's log of a program libbpf loaded fits libbpf's (and
        // aya's, the same) layout, not cilium/ebpf's.
        let chosen = annotated(from_path, None, &log, 0);
        if loader == Loader::Cilium {
            let (status, message) = chosen.expect_err("the log does not fit");
            assert_eq!(status, BPFLOG_ERR_SELECT);
            assert!(message.contains("xdp_nested (cilium layout)"), "{message}");
        } else {
            assert!(chosen.as_ref() == Ok(&by_loader[by_loader.len() - 2].2));
        }
        unsafe { bpflog_object_free(from_path) };
        unsafe { bpflog_object_free(from_bytes) };
    }
    // The layouts differ, and so do the annotations: the loader given is the one used.
    let of = |loader, style| {
        by_loader
            .iter()
            .find(|(l, s, _)| *l == loader && *s == style)
            .map(|(_, _, out)| out)
            .expect("annotated")
    };
    for style in [Style::Kernel, Style::Rich] {
        assert!(of(Loader::Libbpf, style) == of(Loader::Aya, style));
        assert!(of(Loader::Libbpf, style) != of(Loader::Cilium, style));
    }
    // bpflog_object_open_path is bpflog_object_open_path_loader with libbpf.
    let object = open("two_in_one.o");
    let out = annotated(object, Some(c"xdp_nested"), &log, 1);
    assert!(out.as_ref() == Ok(of(Loader::Libbpf, Style::Rich)));
    unsafe { bpflog_object_free(object) };
}

#[test]
fn a_buffer_too_small_gets_its_first_bytes_and_the_size_needed() {
    let object = open("reject_subprog.o");
    let log = fixture("logs/reject_subprog.xdp_reject_subprog.l1.log");
    let expected = library_annotation(
        "reject_subprog.o",
        "xdp_reject_subprog",
        &log,
        Style::Kernel,
    );
    // Asking the size: no buffer.
    let mut len = 0usize;
    let mut err = null_mut();
    let status = unsafe {
        bpflog_annotate_buf(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            null_mut(),
            0,
            &mut len,
            &mut err,
        )
    };
    assert_eq!(status, BPFLOG_ERR_BUFFER_TOO_SMALL);
    assert_eq!(take(err).0, BPFLOG_ERR_BUFFER_TOO_SMALL);
    assert_eq!(len, expected.len());
    // A buffer of 100 bytes, guarded by bytes the call must not touch.
    let mut buf = vec![0xAAu8; 100 + 16];
    let mut err = null_mut();
    let status = unsafe {
        bpflog_annotate_buf(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            buf.as_mut_ptr(),
            100,
            &mut len,
            &mut err,
        )
    };
    assert_eq!(status, BPFLOG_ERR_BUFFER_TOO_SMALL);
    take(err);
    assert_eq!(len, expected.len());
    assert_eq!(&buf[..100], &expected[..100]);
    assert!(
        buf[100..].iter().all(|&b| b == 0xAA),
        "nothing written past the buffer"
    );
    // A buffer of the size needed.
    let mut buf = vec![0u8; len];
    let status = unsafe {
        bpflog_annotate_buf(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            null_mut(),
        )
    };
    assert_eq!(status, BPFLOG_OK);
    assert_eq!(buf, expected);
    unsafe { bpflog_object_free(object) };
}

#[test]
fn explain_and_profile_are_the_library_s_json() {
    let data = fixture("obj/reject_subprog.o");
    let log = fixture("logs/reject_subprog.xdp_reject_subprog.l2.log");
    let object = unsafe { bpflog_object_open_bytes(data.as_ptr(), data.len(), null_mut()) };
    assert!(!object.is_null());
    let parsed = BpfObject::parse(&data).expect("an object");
    let program = Program::new(
        &parsed,
        parsed.program("xdp_reject_subprog").expect("a program"),
    )
    .expect("laid out");

    let mut expected = Vec::new();
    let mut sources = SourceFiles::new(SourceSearch::default());
    let input = Input::of(&program, LogData::Stream(&log[..]));
    explain::explain(input, |program, e| {
        let palette = Palette::new(false);
        explain::write(
            &e,
            program,
            ExplainFormat::Json,
            &mut sources,
            &palette,
            &mut expected,
        )
    })
    .expect("explained");
    let mut out = Vec::<u8>::new();
    let status = unsafe {
        bpflog_explain_json(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            Some(collect),
            (&raw mut out).cast(),
            null_mut(),
        )
    };
    assert_eq!(status, BPFLOG_OK);
    assert_eq!(out, expected);
    let e: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(e["class"], "nullable-dereference");

    let mut expected = Vec::new();
    let input = Input::of(&program, LogData::Stream(&log[..]));
    let request = profile::ProfileRequest::default();
    let p = profile::profile(input, &request, &mut sources).expect("profiled");
    profile::render(
        &p.profile,
        &mut expected,
        &RenderOptions::default().format(profile::Format::Json),
    )
    .expect("rendered");
    let mut len = 0;
    let mut buf = vec![0u8; expected.len()];
    let status = unsafe {
        bpflog_profile_json_buf(
            object,
            c"xdp_reject_subprog".as_ptr(),
            log.as_ptr(),
            log.len(),
            buf.as_mut_ptr(),
            buf.len(),
            &mut len,
            null_mut(),
        )
    };
    assert_eq!(status, BPFLOG_OK);
    assert_eq!(len, expected.len());
    assert_eq!(buf, expected);
    let json: serde_json::Value = serde_json::from_slice(&buf).expect("JSON");
    assert!(json["lines"].as_array().is_some_and(|l| !l.is_empty()));
    unsafe { bpflog_object_free(object) };
}

#[test]
fn every_failure_has_a_status_and_a_message() {
    let object = open("reject_subprog.o");
    let log = fixture("logs/reject_subprog.xdp_reject_subprog.l1.log");
    let mut out = Vec::<u8>::new();
    let ctx: *mut c_void = (&raw mut out).cast();
    let mut err = null_mut();

    // NULL pointers.
    assert!(unsafe { bpflog_object_open_path(null(), &mut err) }.is_null());
    assert_eq!(take(err), (BPFLOG_ERR_NULL, "path is NULL".into()));
    assert!(unsafe { bpflog_object_open_bytes(null(), 4, &mut err) }.is_null());
    assert_eq!(take(err).0, BPFLOG_ERR_NULL);
    assert!(unsafe { bpflog_object_open_path_loader(null(), 2, &mut err) }.is_null());
    assert_eq!(take(err), (BPFLOG_ERR_NULL, "path is NULL".into()));
    assert!(unsafe { bpflog_object_open_bytes_loader(null(), 4, 2, &mut err) }.is_null());
    assert_eq!(take(err), (BPFLOG_ERR_NULL, "data is NULL".into()));
    let s = unsafe {
        bpflog_annotate(
            null(),
            null(),
            log.as_ptr(),
            log.len(),
            0,
            Some(collect),
            ctx,
            &mut err,
        )
    };
    assert_eq!(
        (s, take(err).1.as_str()),
        (BPFLOG_ERR_NULL, "object is NULL")
    );
    let s = unsafe { bpflog_annotate(object, null(), null(), 3, 0, Some(collect), ctx, &mut err) };
    assert_eq!((s, take(err).1.as_str()), (BPFLOG_ERR_NULL, "log is NULL"));
    let s = unsafe {
        bpflog_annotate(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            None,
            ctx,
            &mut err,
        )
    };
    assert_eq!(
        (s, take(err).1.as_str()),
        (BPFLOG_ERR_NULL, "write is NULL")
    );
    let s = unsafe {
        bpflog_explain_json_buf(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            null_mut(),
            8,
            &mut 0,
            &mut err,
        )
    };
    assert_eq!((s, take(err).1.as_str()), (BPFLOG_ERR_NULL, "buf is NULL"));
    let s = unsafe {
        bpflog_profile_json_buf(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            null_mut(),
            0,
            null_mut(),
            &mut err,
        )
    };
    assert_eq!((s, take(err).1.as_str()), (BPFLOG_ERR_NULL, "len is NULL"));
    // A NULL `err` is allowed: the status alone.
    let s = unsafe { bpflog_annotate(null(), null(), null(), 0, 0, None, null_mut(), null_mut()) };
    assert_eq!(s, BPFLOG_ERR_NULL);

    // A file that is not there, bytes that are no object: the path quoted, escaped.
    let missing = c"/nonexistent/\x1b[31mx.o";
    assert!(unsafe { bpflog_object_open_path(missing.as_ptr(), &mut err) }.is_null());
    let (status, message) = take(err);
    assert_eq!(status, BPFLOG_ERR_IO);
    assert!(
        message.starts_with("/nonexistent/\\x1b[31mx.o: "),
        "{message}"
    );
    let junk = &log[..64];
    assert!(unsafe { bpflog_object_open_bytes(junk.as_ptr(), junk.len(), &mut err) }.is_null());
    assert_eq!(take(err).0, BPFLOG_ERR_OBJECT);

    // A loader out of range.
    let path = CString::new(format!("{FIXTURES}/obj/reject_subprog.o")).expect("a path");
    assert!(unsafe { bpflog_object_open_path_loader(path.as_ptr(), 3, &mut err) }.is_null());
    let (status, message) = take(err);
    assert_eq!(status, BPFLOG_ERR_INVALID);
    assert!(message.starts_with("loader 3 is none of"), "{message}");
    let data = fixture("obj/reject_subprog.o");
    let s =
        unsafe { bpflog_object_open_bytes_loader(data.as_ptr(), data.len(), u32::MAX, &mut err) };
    assert!(s.is_null());
    assert_eq!(take(err).0, BPFLOG_ERR_INVALID);

    // A style out of range, a program not there, a log of no program.
    let s = unsafe {
        bpflog_annotate(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            7,
            Some(collect),
            ctx,
            &mut err,
        )
    };
    assert_eq!(s, BPFLOG_ERR_INVALID);
    assert!(take(err).1.contains("style 7"));
    let s = unsafe {
        bpflog_annotate(
            object,
            c"nope\x07".as_ptr(),
            log.as_ptr(),
            log.len(),
            0,
            Some(collect),
            ctx,
            &mut err,
        )
    };
    assert_eq!(s, BPFLOG_ERR_NO_PROGRAM);
    let message = take(err).1;
    assert!(
        message.contains("nope\\x07") && message.contains("xdp_reject_subprog"),
        "{message}"
    );
    let two = open("two_in_one.o");
    let s = unsafe {
        bpflog_annotate(
            two,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            Some(collect),
            ctx,
            &mut err,
        )
    };
    assert_eq!(s, BPFLOG_ERR_SELECT);
    assert!(!take(err).1.is_empty());
    unsafe { bpflog_object_free(two) };

    // The callback stops the job.
    let s = unsafe {
        bpflog_annotate(
            object,
            null(),
            log.as_ptr(),
            log.len(),
            0,
            Some(refuse),
            null_mut(),
            &mut err,
        )
    };
    assert_eq!(
        (s, take(err).1.as_str()),
        (BPFLOG_ERR_WRITE, "the write callback returned -5")
    );
    unsafe { bpflog_object_free(object) };
}

#[test]
fn a_panic_stops_at_the_boundary() {
    let mut err = null_mut();
    let result: Result<(), _> = guard(&mut err, || panic!("boom"));
    assert_eq!(result, Err(BPFLOG_ERR_INTERNAL));
    assert_eq!(
        take(err),
        (
            BPFLOG_ERR_INTERNAL,
            "internal error (a panic in bpflog): boom".into()
        )
    );
}

/// Every function C can call runs its body inside `guard` (or only reads a field).
#[test]
fn every_entry_is_guarded() {
    let source = include_str!("lib.rs");
    let mut entries = 0;
    for item in source.split("#[unsafe(no_mangle)]").skip(1) {
        entries += 1;
        let body = item.split("\n}\n").next().unwrap_or_default();
        let name = body
            .split("fn ")
            .nth(1)
            .and_then(|s| s.split('(').next())
            .unwrap_or_default();
        let reads_only = matches!(
            name,
            "bpflog_version" | "bpflog_abi_version" | "bpflog_error_code" | "bpflog_error_message"
        );
        assert!(
            reads_only || body.contains("guard(") || body.contains("status(err"),
            "{name} is not guarded"
        );
    }
    assert_eq!(entries, 18);
}

#[test]
fn versions() {
    let version = unsafe { CStr::from_ptr(bpflog_version()) };
    assert_eq!(version.to_str(), Ok(env!("CARGO_PKG_VERSION")));
    assert_eq!(bpflog_abi_version(), BPFLOG_ABI_VERSION);
}

#[test]
fn one_object_serves_several_threads() {
    struct SharedObject(*mut bpflog_object);
    // SAFETY: the header promises it; this test checks it.
    unsafe impl Sync for SharedObject {}
    impl SharedObject {
        fn get(&self) -> *mut bpflog_object {
            self.0
        }
    }
    let object = SharedObject(open("branchy.o"));
    let log = fixture("logs/branchy.xdp_branchy.l2.log");
    let expected = library_annotation("branchy.o", "xdp_branchy", &log, Style::Kernel);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mut out = Vec::<u8>::new();
                let status = unsafe {
                    bpflog_annotate(
                        object.get(),
                        null(),
                        log.as_ptr(),
                        log.len(),
                        0,
                        Some(collect),
                        (&raw mut out).cast(),
                        null_mut(),
                    )
                };
                assert_eq!(status, BPFLOG_OK);
                assert!(out == expected);
            });
        }
    });
    unsafe { bpflog_object_free(object.0) };
}

/// Each call of a callback: its length, and every byte given.
#[derive(Default)]
struct Recorded {
    lens: Vec<usize>,
    bytes: Vec<u8>,
    /// The call that returns non-zero (counted from 1), if any.
    refuse_at: Option<usize>,
}

unsafe extern "C" fn record(ctx: *mut c_void, buf: *const u8, len: usize) -> c_int {
    let calls = unsafe { &mut *ctx.cast::<Recorded>() };
    calls.lens.push(len);
    calls
        .bytes
        .extend_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    match calls.refuse_at {
        Some(n) if n == calls.lens.len() => 7,
        _ => 0,
    }
}

#[test]
fn the_callback_is_called_with_pieces_not_lines() {
    // A level-2 log of some 5,000 lines repeated to about 1 MB: some 17 pieces, not a call a line.
    let one = fixture("logs/branchy.xdp_branchy.l2.log");
    let log = one.repeat((1 << 20) / one.len() + 1);
    let object = open("branchy.o");
    let prog = CString::new("xdp_branchy").expect("a name");
    let mut calls = Recorded::default();
    let mut err = null_mut();
    let ctx = (&raw mut calls).cast::<c_void>();
    let s = unsafe {
        bpflog_annotate(
            object,
            prog.as_ptr(),
            log.as_ptr(),
            log.len(),
            0,
            Some(record),
            ctx,
            &mut err,
        )
    };
    assert_eq!(s, BPFLOG_OK);
    assert_eq!(
        calls.bytes,
        library_annotation("branchy.o", "xdp_branchy", &log, Style::Kernel)
    );
    let lines = log.iter().filter(|&&b| b == b'\n').count();
    assert!(calls.lens.iter().all(|&n| n > 0 && n <= PIECE));
    assert!(
        calls.lens.len() <= calls.bytes.len() / PIECE + 1 && lines > 100 * calls.lens.len(),
        "{} calls for {lines} lines",
        calls.lens.len()
    );

    // Refused at its second call: the job stops there, its first piece given.
    let mut calls = Recorded {
        refuse_at: Some(2),
        ..Recorded::default()
    };
    let ctx = (&raw mut calls).cast::<c_void>();
    let s = unsafe {
        bpflog_annotate(
            object,
            prog.as_ptr(),
            log.as_ptr(),
            log.len(),
            0,
            Some(record),
            ctx,
            &mut err,
        )
    };
    assert_eq!(
        (s, take(err).1.as_str()),
        (BPFLOG_ERR_WRITE, "the write callback returned 7")
    );
    assert_eq!(calls.lens.len(), 2);
    unsafe { bpflog_object_free(object) };
}

#[test]
fn an_object_path_is_read_within_the_bound() {
    // A directory, and a device that never ends: refused, /dev/zero after one byte past 256 MiB.
    for (path, said) in [
        (FIXTURES, "is a directory"),
        (
            "/dev/zero",
            "more than the 268435456 bytes an object may hold",
        ),
    ] {
        let c_path = CString::new(path).expect("a path");
        let mut err = null_mut();
        let object = unsafe { bpflog_object_open_path(c_path.as_ptr(), &mut err) };
        assert!(object.is_null());
        assert_eq!(take(err), (BPFLOG_ERR_IO, format!("{path}: {said}")));
    }
}

/// Whatever the writes, the callback gets the bytes in order, in pieces that end at line ends
/// and hold as many whole lines as fit in 64 KiB: a piece is shorter only where the next line
/// would not fit, and longer only when it is one line longer than a piece.
#[test]
fn pieces_are_whole_lines_filled_up_to_a_piece() {
    // Lines of 1 to 3,000 bytes, one of 200,000, the last without its line end; written in
    // runs of 1 to 300,000 bytes, cut anywhere.
    let mut text = Vec::new();
    for k in 0..2_000usize {
        let len = if k == 700 {
            200_000
        } else {
            1 + (k * 7919) % 3_000
        };
        text.extend(std::iter::repeat_n(b'a' + (k % 26) as u8, len));
        text.push(b'\n');
    }
    text.extend_from_slice(b"no line end");
    let mut calls = Recorded::default();
    let mut out = Output::callback(Some(record), (&raw mut calls).cast()).expect("an output");
    let mut at = 0;
    for k in 0usize.. {
        if at == text.len() {
            break;
        }
        let run = (1 + (k * 104_729) % 300_000).min(text.len() - at);
        out.write_all(&text[at..at + run]).expect("written");
        at += run;
    }
    out.flush().expect("flushed");
    assert!(calls.bytes == text);
    let mut start = 0;
    let lens = &calls.lens;
    for (k, &len) in lens.iter().enumerate() {
        let piece = &text[start..start + len];
        let next = &text[start + len..];
        let last = k + 1 == lens.len();
        assert!(last || piece.ends_with(b"\n"), "piece {k} ends mid-line");
        if len > PIECE {
            assert_eq!(
                piece.iter().filter(|&&b| b == b'\n').count(),
                1,
                "piece {k}"
            );
        } else if !last {
            // The next line did not fit.
            let line = next
                .iter()
                .position(|&b| b == b'\n')
                .map_or(next.len(), |e| e + 1);
            assert!(
                len + line > PIECE,
                "piece {k}: {len} bytes, then a line of {line}"
            );
        }
        start += len;
    }
}
