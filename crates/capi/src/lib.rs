//! The C ABI of bpflog: `libbpflog.so`, `libbpflog.a` and `include/bpflog.h`.
//!
//! A thin layer over the Rust library's calls for a binding (`crates/bpflog/src/lib.rs`, "what a
//! binding calls"): an object opened from a path or from bytes, its programs laid out as a
//! loader (libbpf, aya, cilium/ebpf) lays them out and listed, a log annotated, explained or
//! profiled. Every decision is the library's; this layer turns C's pointers and lengths into
//! slices, the library's results into a status and a message, and writes through the caller's
//! callback or into the caller's buffer. Every entry runs inside [`guard`], so no panic crosses
//! into C.
//!
//! The header is generated from this file by cbindgen (`tests/header.rs` checks it).

// The exported names are C's.
#![allow(non_camel_case_types)]
// Raw pointers from C: every one is checked for NULL and read only within the length given.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};

use bpflog::explain::{self, ExplainFormat};
use bpflog::object::Loader;
use bpflog::profile::{self, RenderOptions};
use bpflog::{
    AnnotateOptions, Input, JobError, LogData, OwnedObject, Palette, Program, SourceFiles,
    SourceSearch, Style,
};

/// The version of this ABI: changes when a function's signature or meaning changes incompatibly.
pub const BPFLOG_ABI_VERSION: u32 = 1;

/// What a call returns: `BPFLOG_OK`, or why it failed (the `bpflog_error` says more).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bpflog_status {
    /// The call succeeded.
    BPFLOG_OK = 0,
    /// A pointer the call needs was NULL.
    BPFLOG_ERR_NULL = 1,
    /// An argument is out of range: a style, a loader, a program name that is not UTF-8.
    BPFLOG_ERR_INVALID = 2,
    /// The object file could not be read.
    BPFLOG_ERR_IO = 3,
    /// The bytes are not a BPF object bpflog can read.
    BPFLOG_ERR_OBJECT = 4,
    /// The object has no program of the name given.
    BPFLOG_ERR_NO_PROGRAM = 5,
    /// No program was named and the log fits none of the object's programs, or several that
    /// would be annotated differently.
    BPFLOG_ERR_SELECT = 6,
    /// The log could not be read (a line longer than the library's bound).
    BPFLOG_ERR_LOG = 7,
    /// The write callback returned non-zero.
    BPFLOG_ERR_WRITE = 8,
    /// The output does not fit in the buffer: `*len` is the size needed.
    BPFLOG_ERR_BUFFER_TOO_SMALL = 9,
    /// An internal error (a panic inside the library, caught at the boundary).
    BPFLOG_ERR_INTERNAL = 10,
}

/// The style of an annotated log, passed to `bpflog_annotate` as a `uint32_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bpflog_style {
    /// The kernel's own `; source` lines, byte for byte as the kernel prints them.
    BPFLOG_STYLE_KERNEL = 0,
    /// `; file:line:col in function` lines, and a rejected log ends with the diagnostic and its
    /// explanation; no colors.
    BPFLOG_STYLE_RICH = 1,
}

/// The loader whose layout of a program's instructions the logs show: a program that calls
/// functions is loaded as one run of instructions, its functions placed after it in an order
/// each loader chooses, and the log numbers the instructions in that order. Passed to
/// `bpflog_object_open_path_loader` and `bpflog_object_open_bytes_loader` as a `uint32_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum bpflog_loader {
    /// libbpf (bpftool, libbpf-rs, libbpf-based tools): the functions of `.text` it calls,
    /// depth-first.
    BPFLOG_LOADER_LIBBPF = 0,
    /// aya: the functions it calls from any code section, depth-first.
    BPFLOG_LOADER_AYA = 1,
    /// cilium/ebpf: the functions it calls from any code section, breadth-first, each
    /// function's callees sorted by name.
    BPFLOG_LOADER_CILIUM = 2,
}

/// Where output goes, in pieces, as the library writes it: `ctx` is the caller's, `buf` holds
/// `len` bytes, valid only during the call. Returns 0 to go on; anything else stops the call,
/// which returns `BPFLOG_ERR_WRITE`.
pub type bpflog_write_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, buf: *const u8, len: usize) -> c_int>;

/// A failure: its status and a one-line message. Made by the library, freed by the caller with
/// `bpflog_error_free`.
pub struct bpflog_error {
    status: bpflog_status,
    message: CString,
}

/// A BPF object and its programs, each laid out as one loader loads it (libbpf, unless opened
/// with `bpflog_object_open_path_loader` or `bpflog_object_open_bytes_loader`). Made by
/// `bpflog_object_open_*`, freed by the caller with `bpflog_object_free`; the names it gives
/// are valid until then. May be used from several threads at once: no call changes it.
pub struct bpflog_object {
    /// The bytes, the object and its programs under the loader's layout.
    owned: OwnedObject,
    /// The programs' names, NUL-terminated, in the order of the programs.
    names: Vec<CString>,
}

/// A failure on its way to C.
#[derive(Debug)]
struct Failure {
    status: bpflog_status,
    message: String,
}

impl Failure {
    fn new(status: bpflog_status, message: impl Into<String>) -> Self {
        Failure {
            status,
            message: message.into(),
        }
    }

    fn null(what: &str) -> Self {
        Failure::new(bpflog_status::BPFLOG_ERR_NULL, format!("{what} is NULL"))
    }
}

/// Runs one entry's body: a panic is caught and becomes `BPFLOG_ERR_INTERNAL`; a failure is
/// stored in `*err` when `err` is not NULL.
fn guard<T>(
    err: *mut *mut bpflog_error,
    body: impl FnOnce() -> Result<T, Failure>,
) -> Result<T, bpflog_status> {
    let failure = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => return Ok(value),
        Ok(Err(failure)) => failure,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Failure::new(
                bpflog_status::BPFLOG_ERR_INTERNAL,
                format!("internal error (a panic in bpflog): {what}"),
            )
        }
    };
    let status = failure.status;
    if !err.is_null() {
        let message = CString::new(failure.message.replace('\0', "\\0"))
            .unwrap_or_else(|_| CString::from(c"internal error"));
        let error = Box::new(bpflog_error { status, message });
        // SAFETY: `err` is not NULL and points to the caller's `bpflog_error *`.
        unsafe { *err = Box::into_raw(error) };
    }
    Err(status)
}

/// [`guard`] for an entry that returns a status.
fn status(
    err: *mut *mut bpflog_error,
    body: impl FnOnce() -> Result<(), Failure>,
) -> bpflog_status {
    match guard(err, body) {
        Ok(()) => bpflog_status::BPFLOG_OK,
        Err(status) => status,
    }
}

/// The `len` bytes at `ptr`; NULL is the empty slice when `len` is 0.
///
/// # Safety
/// `ptr` is NULL or points to `len` readable bytes that outlive the call.
unsafe fn bytes<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if ptr.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Failure::null(what))
        };
    }
    // SAFETY: the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// `name` quoted for a message, its control characters escaped.
fn quoted(name: &[u8]) -> String {
    String::from_utf8_lossy(&bpflog::escape_controls(name)).into_owned()
}

/// The library's loader of a `bpflog_loader` C passed.
fn loader(loader: u32) -> Result<Loader, Failure> {
    match loader {
        0 => Ok(Loader::Libbpf),
        1 => Ok(Loader::Aya),
        2 => Ok(Loader::Cilium),
        _ => Err(Failure::new(
            bpflog_status::BPFLOG_ERR_INVALID,
            format!(
                "loader {loader} is none of BPFLOG_LOADER_LIBBPF (0), BPFLOG_LOADER_AYA (1), \
                 BPFLOG_LOADER_CILIUM (2)"
            ),
        )),
    }
}

impl bpflog_object {
    /// Parses `data` and lays out each of its programs as `loader` does: a program it cannot
    /// lay out fails the object.
    fn open(data: Box<[u8]>, loader: Loader) -> Result<Box<Self>, Failure> {
        let object_error = |e: bpflog::object::Error| {
            Failure::new(bpflog_status::BPFLOG_ERR_OBJECT, e.to_string())
        };
        let owned = OwnedObject::parse(data, &[loader]).map_err(object_error)?;
        let laid = owned.laid_out();
        if let Some((_, e)) = laid.failures.first() {
            return Err(Failure::new(
                bpflog_status::BPFLOG_ERR_OBJECT,
                e.to_string(),
            ));
        }
        let names = laid
            .programs
            .iter()
            .map(|p| {
                CString::new(p.name().replace('\0', "\\0")).unwrap_or_else(|_| CString::from(c"?"))
            })
            .collect();
        Ok(Box::new(bpflog_object { owned, names }))
    }

    /// The programs, laid out.
    fn programs(&self) -> &[Program<'_, '_>] {
        &self.owned.laid_out().programs
    }

    /// The program named `prog`, or when `prog` is NULL, the one `log` is a log of, as the
    /// library chooses ([`bpflog::LaidOut::choose`]).
    ///
    /// # Safety
    /// `prog` is NULL or a NUL-terminated string.
    unsafe fn program(&self, prog: *const c_char, log: &[u8]) -> Result<&Program<'_, '_>, Failure> {
        let name = if prog.is_null() {
            None
        } else {
            // SAFETY: the caller's promise.
            let name = unsafe { CStr::from_ptr(prog) };
            Some(name.to_str().map_err(|_| {
                Failure::new(
                    bpflog_status::BPFLOG_ERR_INVALID,
                    format!("program name '{}' is not UTF-8", quoted(name.to_bytes())),
                )
            })?)
        };
        let laid = self.owned.laid_out();
        laid.choose(name, &[], log).map_err(|e| match e {
            JobError::NoProgram(name) => Failure::new(
                bpflog_status::BPFLOG_ERR_NO_PROGRAM,
                match self.owned.object().program(&name) {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("program '{}' cannot be laid out", quoted(name.as_bytes())),
                },
            ),
            JobError::Io(e) => log_error(e),
            e => Failure::new(bpflog_status::BPFLOG_ERR_SELECT, e.to_string()),
        })
    }
}

/// Opens the BPF object file at `path` (NUL-terminated), its programs laid out as libbpf loads
/// them (`bpflog_object_open_path_loader` with `BPFLOG_LOADER_LIBBPF`). Returns the object, to be
/// freed with `bpflog_object_free`, or NULL with `*err` set (when `err` is not NULL).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `err` is NULL or points to a `bpflog_error *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_open_path(
    path: *const c_char,
    err: *mut *mut bpflog_error,
) -> *mut bpflog_object {
    // SAFETY: the caller's promise.
    let opened = guard(err, || unsafe { open_path(path, Loader::Libbpf) });
    opened.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// Opens the BPF object file at `path` (NUL-terminated), its programs laid out as `loader` (a
/// `bpflog_loader`) loads them: the logs given with it are those of that loader's programs.
/// Returns the object, to be freed with `bpflog_object_free`, or NULL with `*err` set (when
/// `err` is not NULL; `BPFLOG_ERR_INVALID` for a loader out of range).
///
/// # Safety
/// As `bpflog_object_open_path`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_open_path_loader(
    path: *const c_char,
    loader: u32,
    err: *mut *mut bpflog_error,
) -> *mut bpflog_object {
    let opened = guard(err, || {
        let loader = self::loader(loader)?;
        // SAFETY: the caller's promise.
        unsafe { open_path(path, loader) }
    });
    opened.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// The object of the file at `path`, laid out as `loader` does.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn open_path(path: *const c_char, loader: Loader) -> Result<Box<bpflog_object>, Failure> {
    if path.is_null() {
        return Err(Failure::null("path"));
    }
    // SAFETY: the caller's promise.
    let path = unsafe { CStr::from_ptr(path) };
    let shown = quoted(path.to_bytes());
    let file = std::path::Path::new(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path.to_bytes()),
    );
    let data = bpflog::read_object(file)
        .map_err(|e| Failure::new(bpflog_status::BPFLOG_ERR_IO, format!("{shown}: {e}")))?;
    bpflog_object::open(data.into_boxed_slice(), loader)
        .map_err(|f| Failure::new(f.status, format!("{shown}: {}", f.message)))
}

/// Opens a BPF object from the `len` bytes at `data`, which are copied: the caller may free them
/// once the call returns. Its programs are laid out as libbpf loads them
/// (`bpflog_object_open_bytes_loader` with `BPFLOG_LOADER_LIBBPF`). Returns the object, to be
/// freed with `bpflog_object_free`, or NULL with `*err` set (when `err` is not NULL).
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes; `err` is NULL or points to a
/// `bpflog_error *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_open_bytes(
    data: *const u8,
    len: usize,
    err: *mut *mut bpflog_error,
) -> *mut bpflog_object {
    // SAFETY: the caller's promise.
    let opened = guard(err, || unsafe { open_bytes(data, len, Loader::Libbpf) });
    opened.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// `bpflog_object_open_bytes`, its programs laid out as `loader` (a `bpflog_loader`) loads them,
/// as `bpflog_object_open_path_loader`.
///
/// # Safety
/// As `bpflog_object_open_bytes`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_open_bytes_loader(
    data: *const u8,
    len: usize,
    loader: u32,
    err: *mut *mut bpflog_error,
) -> *mut bpflog_object {
    let opened = guard(err, || {
        let loader = self::loader(loader)?;
        // SAFETY: the caller's promise.
        unsafe { open_bytes(data, len, loader) }
    });
    opened.map_or(std::ptr::null_mut(), Box::into_raw)
}

/// The object of the `len` bytes at `data`, copied, laid out as `loader` does.
///
/// # Safety
/// `data` is NULL or points to `len` readable bytes.
unsafe fn open_bytes(
    data: *const u8,
    len: usize,
    loader: Loader,
) -> Result<Box<bpflog_object>, Failure> {
    if data.is_null() {
        return Err(Failure::null("data"));
    }
    // SAFETY: the caller's promise.
    let data = unsafe { bytes(data, len, "data") }?;
    bpflog_object::open(data.into(), loader)
}

/// Frees an object and the names it gave. NULL is ignored.
///
/// # Safety
/// `object` is NULL or was returned by `bpflog_object_open_*` and not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_free(object: *mut bpflog_object) {
    let _ = guard(std::ptr::null_mut(), || {
        if !object.is_null() {
            // SAFETY: the caller's promise.
            drop(unsafe { Box::from_raw(object) });
        }
        Ok(())
    });
}

/// The number of programs in the object (0 for NULL).
///
/// # Safety
/// `object` is NULL or a live object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_program_count(object: *const bpflog_object) -> usize {
    // SAFETY: the caller's promise.
    guard(std::ptr::null_mut(), || Ok(unsafe { object.as_ref() }))
        .ok()
        .flatten()
        .map_or(0, |o| o.programs().len())
}

/// The name of the program at `index` (from 0, in the object's order), owned by the object and
/// valid until it is freed; NULL when `object` is NULL or `index` is out of range.
///
/// # Safety
/// `object` is NULL or a live object.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_object_program_name(
    object: *const bpflog_object,
    index: usize,
) -> *const c_char {
    // SAFETY: the caller's promise.
    guard(std::ptr::null_mut(), || Ok(unsafe { object.as_ref() }))
        .ok()
        .flatten()
        .and_then(|o| o.names.get(index))
        .map_or(std::ptr::null(), |name| name.as_ptr())
}

/// The status of a failure (`BPFLOG_ERR_NULL` for NULL).
///
/// # Safety
/// `error` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_error_code(error: *const bpflog_error) -> bpflog_status {
    // SAFETY: the caller's promise.
    match unsafe { error.as_ref() } {
        Some(error) => error.status,
        None => bpflog_status::BPFLOG_ERR_NULL,
    }
}

/// The one-line message of a failure, owned by the error and valid until it is freed (an empty
/// string for NULL).
///
/// # Safety
/// `error` is NULL or a live error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_error_message(error: *const bpflog_error) -> *const c_char {
    // SAFETY: the caller's promise.
    match unsafe { error.as_ref() } {
        Some(error) => error.message.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Frees an error. NULL is ignored.
///
/// # Safety
/// `error` is NULL or was set by a bpflog call and not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_error_free(error: *mut bpflog_error) {
    let _ = guard(std::ptr::null_mut(), || {
        if !error.is_null() {
            // SAFETY: the caller's promise.
            drop(unsafe { Box::from_raw(error) });
        }
        Ok(())
    });
}

/// bpflog's version, a static NUL-terminated string such as `"0.1.0"`.
#[unsafe(no_mangle)]
pub extern "C" fn bpflog_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The version of the ABI this library implements (`BPFLOG_ABI_VERSION` of its header).
#[unsafe(no_mangle)]
pub extern "C" fn bpflog_abi_version() -> u32 {
    BPFLOG_ABI_VERSION
}

/// Where a job writes: the caller's callback, or the caller's buffer.
enum Output {
    Callback {
        write: unsafe extern "C" fn(*mut c_void, *const u8, usize) -> c_int,
        ctx: *mut c_void,
        /// What the callback returned when it stopped the job.
        refused: Option<c_int>,
        /// Bytes not yet handed over: the library writes a line at a time, the callback is
        /// called with pieces of [`PIECE`] bytes (a call across the boundary costs a loader in
        /// another language more than a line's work).
        pending: Vec<u8>,
    },
    Buffer {
        buf: *mut u8,
        cap: usize,
        /// Bytes written so far, counted on past `cap`.
        len: usize,
    },
}

impl Write for Output {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self {
            Output::Callback { .. } => {
                let mut rest = data;
                while let Output::Callback { pending, .. } = self {
                    if pending.len() + rest.len() <= PIECE {
                        pending.extend_from_slice(rest);
                        break;
                    }
                    let room = PIECE.saturating_sub(pending.len());
                    let newline = |bytes: &[u8]| bytes.iter().rposition(|&b| b == b'\n');
                    if let Some(end) = newline(&rest[..room]) {
                        // The whole lines that fill the piece.
                        pending.extend_from_slice(&rest[..=end]);
                        rest = &rest[end + 1..];
                        self.hand_over(None)?;
                    } else if let Some(end) = newline(pending) {
                        // The next line does not fit: the whole lines held go, the line
                        // begun stays.
                        self.hand_over(Some(end + 1))?;
                    } else {
                        // One line longer than a piece: held whole, then given on its own.
                        match rest.iter().position(|&b| b == b'\n') {
                            Some(end) => {
                                pending.extend_from_slice(&rest[..=end]);
                                rest = &rest[end + 1..];
                                self.hand_over(None)?;
                            }
                            None => {
                                pending.extend_from_slice(rest);
                                break;
                            }
                        }
                    }
                }
            }
            Output::Buffer { buf, cap, len } => {
                let room = cap.saturating_sub(*len).min(data.len());
                if room > 0 {
                    // SAFETY: `buf` holds `cap` bytes and `*len + room <= cap`.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), buf.add(*len), room) };
                }
                *len = len.saturating_add(data.len());
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over(None)
    }
}

/// The most bytes a callback's output holds before calling it.
const PIECE: usize = 64 * 1024;

impl Output {
    /// The callback's output.
    fn callback(write: bpflog_write_fn, ctx: *mut c_void) -> Result<Self, Failure> {
        let write = write.ok_or_else(|| Failure::null("write"))?;
        Ok(Output::Callback {
            write,
            ctx,
            refused: None,
            pending: Vec::with_capacity(PIECE),
        })
    }

    /// Calls the callback with what a callback's output holds: its first `first` bytes, or all
    /// of it.
    fn hand_over(&mut self, first: Option<usize>) -> io::Result<()> {
        let Output::Callback { pending, .. } = self else {
            return Ok(());
        };
        let mut piece = std::mem::take(pending);
        let n = first.unwrap_or(piece.len()).min(piece.len());
        let called = self.call(&piece[..n]);
        if let Output::Callback { pending, .. } = self {
            piece.drain(..n);
            *pending = piece;
        }
        called
    }

    /// Calls a callback's output's callback with `data`, unless it stopped the job before.
    fn call(&mut self, data: &[u8]) -> io::Result<()> {
        let Output::Callback {
            write,
            ctx,
            refused,
            ..
        } = self
        else {
            return Ok(());
        };
        if data.is_empty() {
            return Ok(());
        }
        if refused.is_some() {
            return Err(io::Error::other("the write callback returned non-zero"));
        }
        // SAFETY: the caller's callback, given bytes valid for the call.
        let rc = unsafe { write(*ctx, data.as_ptr(), data.len()) };
        if rc != 0 {
            *refused = Some(rc);
            return Err(io::Error::other("the write callback returned non-zero"));
        }
        Ok(())
    }

    /// The buffer's output; `buf` may be NULL when `cap` is 0 (asking the size).
    fn buffer(buf: *mut u8, cap: usize, len: *mut usize) -> Result<Self, Failure> {
        if len.is_null() {
            return Err(Failure::null("len"));
        }
        if buf.is_null() && cap > 0 {
            return Err(Failure::null("buf"));
        }
        Ok(Output::Buffer { buf, cap, len: 0 })
    }

    /// Runs `job` writing to this output, and says how it ended; a buffer's size is stored in
    /// `*len`.
    fn run(
        mut self,
        len: *mut usize,
        job: impl FnOnce(&mut Output) -> Result<(), Failure>,
    ) -> Result<(), Failure> {
        // What is held goes to the callback once the job is done, even when it failed: the
        // caller sees the output up to the failure.
        let done = job(&mut self);
        let handed = self.hand_over(None);
        let done = done.and_then(|()| handed.map_err(log_error));
        match self {
            Output::Callback {
                refused: Some(rc), ..
            } => Err(Failure::new(
                bpflog_status::BPFLOG_ERR_WRITE,
                format!("the write callback returned {rc}"),
            )),
            Output::Buffer { cap, len: n, .. } => {
                // SAFETY: checked not NULL by `buffer`.
                unsafe { *len = n };
                done?;
                if n > cap {
                    return Err(Failure::new(
                        bpflog_status::BPFLOG_ERR_BUFFER_TOO_SMALL,
                        format!("the output needs {n} bytes, the buffer holds {cap}"),
                    ));
                }
                Ok(())
            }
            Output::Callback { .. } => done,
        }
    }
}

/// An error of the library while it read the log (of a job on a program already chosen,
/// nothing else arises: an `io::Error`, a `JobError` or a `PlanError` that wraps one).
fn log_error(e: impl std::fmt::Display) -> Failure {
    Failure::new(bpflog_status::BPFLOG_ERR_LOG, format!("the log: {e}"))
}

/// The library's annotation of `log` into `out`.
///
/// # Safety
/// As `bpflog_annotate`.
unsafe fn annotate(
    object: *const bpflog_object,
    prog: *const c_char,
    log: &[u8],
    style: u32,
    out: &mut Output,
) -> Result<(), Failure> {
    // SAFETY: the caller's promise.
    let object = unsafe { object.as_ref() }.ok_or_else(|| Failure::null("object"))?;
    let style = match style {
        0 => Style::Kernel,
        1 => Style::Rich,
        _ => {
            return Err(Failure::new(
                bpflog_status::BPFLOG_ERR_INVALID,
                format!(
                    "style {style} is neither BPFLOG_STYLE_KERNEL (0) nor BPFLOG_STYLE_RICH (1)"
                ),
            ));
        }
    };
    // SAFETY: the caller's promise.
    let program = unsafe { object.program(prog, log) }?;
    let options = AnnotateOptions::default()
        .style(style)
        .palette(Palette::new(false))
        .diagnostic(style == Style::Rich);
    let input = Input::of(program, LogData::Stream(log));
    bpflog::annotate(input, out, &options, |_, _| Ok(())).map_err(log_error)
}

/// The library's explanations of `log` as JSON into `out`.
///
/// # Safety
/// As `bpflog_explain_json`.
unsafe fn explain_json(
    object: *const bpflog_object,
    prog: *const c_char,
    log: &[u8],
    out: &mut Output,
) -> Result<(), Failure> {
    // SAFETY: the caller's promise.
    let object = unsafe { object.as_ref() }.ok_or_else(|| Failure::null("object"))?;
    // SAFETY: the caller's promise.
    let program = unsafe { object.program(prog, log) }?;
    let mut sources = SourceFiles::new(SourceSearch::default());
    let input = Input::of(program, LogData::Stream(log));
    explain::explain(input, |program, e| {
        let palette = Palette::new(false);
        explain::write(
            &e,
            program,
            ExplainFormat::Json,
            &mut sources,
            &palette,
            &mut *out,
        )
    })
    .map_err(log_error)?;
    Ok(())
}

/// The library's profile of `log` as JSON into `out`.
///
/// # Safety
/// As `bpflog_profile_json`.
unsafe fn profile_json(
    object: *const bpflog_object,
    prog: *const c_char,
    log: &[u8],
    out: &mut Output,
) -> Result<(), Failure> {
    // SAFETY: the caller's promise.
    let object = unsafe { object.as_ref() }.ok_or_else(|| Failure::null("object"))?;
    // SAFETY: the caller's promise.
    let program = unsafe { object.program(prog, log) }?;
    let input = Input::of(program, LogData::Stream(log));
    let mut sources = SourceFiles::new(SourceSearch::default());
    let request = profile::ProfileRequest::default();
    let p = profile::profile(input, &request, &mut sources).map_err(log_error)?;
    let options = RenderOptions::default().format(profile::Format::Json);
    profile::render(&p.profile, out, &options).map_err(log_error)
}

/// Annotates the log of `log_len` bytes at `log` with the source lines of program `prog` of
/// `object`, or when `prog` is NULL of the program the log is chosen to be a log of (among the
/// object's programs, as its loader lays them out), in `style` (a `bpflog_style`), and writes it
/// through `write(ctx, ...)` as it goes, in pieces of whole lines up to 64 KiB (one line longer
/// than that in a piece of its own): memory stays bounded whatever the log's size. On failure, `*err` is set
/// (when `err` is not NULL), and what was written before it has been given to `write`.
///
/// # Safety
/// `object` is NULL or a live object; `prog` is NULL or a NUL-terminated string; `log` is NULL
/// (with `log_len` 0) or points to `log_len` readable bytes; `err` is NULL or points to a
/// `bpflog_error *`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_annotate(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    style: u32,
    write: bpflog_write_fn,
    ctx: *mut c_void,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::callback(write, ctx)?.run(std::ptr::null_mut(), |out| {
            // SAFETY: the caller's promise.
            unsafe { annotate(object, prog, log, style, out) }
        })
    })
}

/// `bpflog_annotate` into the caller's buffer of `cap` bytes at `buf`: `*len` is set to the
/// size of the whole output, and when it is more than `cap` the call returns
/// `BPFLOG_ERR_BUFFER_TOO_SMALL` with the first `cap` bytes written (call again with a buffer
/// of `*len` bytes). `buf` may be NULL when `cap` is 0.
///
/// # Safety
/// As `bpflog_annotate`; `buf` is NULL or points to `cap` writable bytes; `len` points to a
/// `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_annotate_buf(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    style: u32,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::buffer(buf, cap, len)?.run(len, |out| {
            // SAFETY: the caller's promise.
            unsafe { annotate(object, prog, log, style, out) }
        })
    })
}

/// Explains why the log was rejected, as JSON: one object a line per rejection (nothing for a
/// log that was accepted), in the schema of `bpflog explain --format json`, through
/// `write(ctx, ...)`. `prog` as in `bpflog_annotate`.
///
/// # Safety
/// As `bpflog_annotate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_explain_json(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    write: bpflog_write_fn,
    ctx: *mut c_void,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::callback(write, ctx)?.run(std::ptr::null_mut(), |out| {
            // SAFETY: the caller's promise.
            unsafe { explain_json(object, prog, log, out) }
        })
    })
}

/// `bpflog_explain_json` into the caller's buffer, as `bpflog_annotate_buf`.
///
/// # Safety
/// As `bpflog_annotate_buf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_explain_json_buf(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::buffer(buf, cap, len)?.run(len, |out| {
            // SAFETY: the caller's promise.
            unsafe { explain_json(object, prog, log, out) }
        })
    })
}

/// Profiles a (level 2) log per source line and function, as the JSON object of
/// `bpflog profile --format json` (`lines`: file, line, source, visits, paths ...), through
/// `write(ctx, ...)`. `prog` as in `bpflog_annotate`.
///
/// # Safety
/// As `bpflog_annotate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_profile_json(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    write: bpflog_write_fn,
    ctx: *mut c_void,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::callback(write, ctx)?.run(std::ptr::null_mut(), |out| {
            // SAFETY: the caller's promise.
            unsafe { profile_json(object, prog, log, out) }
        })
    })
}

/// `bpflog_profile_json` into the caller's buffer, as `bpflog_annotate_buf`.
///
/// # Safety
/// As `bpflog_annotate_buf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpflog_profile_json_buf(
    object: *const bpflog_object,
    prog: *const c_char,
    log: *const u8,
    log_len: usize,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
    err: *mut *mut bpflog_error,
) -> bpflog_status {
    status(err, || {
        // SAFETY: the caller's promise.
        let log = unsafe { bytes(log, log_len, "log") }?;
        Output::buffer(buf, cap, len)?.run(len, |out| {
            // SAFETY: the caller's promise.
            unsafe { profile_json(object, prog, log, out) }
        })
    })
}

#[cfg(test)]
mod tests;
