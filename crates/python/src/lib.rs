//! The Python package of bpflog: the extension module `bpflog._bpflog`.
//!
//! A thin layer over the Rust library's calls for a binding (`crates/bpflog/src/lib.rs`, "what a
//! binding calls"), as the C ABI (`crates/capi`) is: an object opened from a path or from bytes,
//! its programs listed, a log annotated, explained or profiled. Every decision is the library's;
//! this layer turns Python's arguments into slices and options, the library's results into
//! Python objects and its errors into `bpflog.Error`'s subclasses, and writes through the
//! caller's file or callable. The library runs with the GIL released (`Python::detach`); a sink
//! takes it back only to hand over a full buffer ([`SINK_BUFFER`]). Every job runs inside
//! [`guard`], so no panic reaches Python.

use std::io::{self, BufWriter, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use bpflog::explain::{self, ExplainFormat};
use bpflog::object::Loader;
use bpflog::{
    AnnotateOptions, Input, JobError, LogData, OwnedObject, Palette, Program, SourceFiles,
    SourceSearch, Style,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString};

create_exception!(
    bpflog,
    Error,
    PyException,
    "Base class of the errors bpflog raises; its message is one line naming the input."
);
create_exception!(
    bpflog,
    ObjectError,
    Error,
    "The object could not be read, or is not a BPF object bpflog can read."
);
create_exception!(
    bpflog,
    ProgramNotFoundError,
    Error,
    "The object has no program of the name given."
);
create_exception!(
    bpflog,
    SelectError,
    Error,
    "No program was named and none could be chosen from the log."
);
create_exception!(
    bpflog,
    NoProgramFitsError,
    SelectError,
    "No program was named and the log fits none of the object's programs."
);
create_exception!(
    bpflog,
    AmbiguousProgramError,
    SelectError,
    "No program was named and the log fits several programs that would annotate it differently."
);
create_exception!(
    bpflog,
    LogError,
    Error,
    "The log could not be read (a line longer than the library's bound of 16 MiB)."
);
create_exception!(
    bpflog,
    WriteError,
    Error,
    "Writing to `out` raised: the exception raised is the `__cause__`."
);
create_exception!(
    bpflog,
    InternalError,
    Error,
    "A bug in bpflog (a panic in the library, caught before it reached Python)."
);

/// Output handed to the caller's `out` in pieces of this size (the last one smaller): each
/// takes the GIL once.
const SINK_BUFFER: usize = 1 << 20;

/// Parses `data` and lays out each of its programs under each loader: a program libbpf cannot
/// lay out fails the object, as in the C ABI.
fn open_object(data: Box<[u8]>) -> Result<OwnedObject, Failure> {
    let owned =
        OwnedObject::parse(data, &Loader::ALL).map_err(|e| Failure::Object(e.to_string()))?;
    if let Some((_, e)) = owned.laid_out().failures.first() {
        return Err(Failure::Object(e.to_string()));
    }
    Ok(owned)
}

/// Why a job failed, before it becomes a Python exception (made with the GIL held).
#[derive(Debug)]
enum Failure {
    Object(String),
    NoProgram(String),
    NoneFits(String),
    Ambiguous(String),
    Log(String),
    /// The caller's `out` raised this.
    Write(PyErr),
    Internal(String),
}

impl Failure {
    /// The Python exception, its message prefixed by `name` where it concerns the object.
    fn into_py(self, name: &str) -> PyErr {
        match self {
            Failure::Object(m) => ObjectError::new_err(format!("{name}: {m}")),
            Failure::NoProgram(m) => ProgramNotFoundError::new_err(format!("{name}: {m}")),
            Failure::NoneFits(m) => NoProgramFitsError::new_err(format!("{name}: {m}")),
            Failure::Ambiguous(m) => AmbiguousProgramError::new_err(format!("{name}: {m}")),
            Failure::Log(m) => LogError::new_err(format!("the log: {m}")),
            Failure::Internal(m) => InternalError::new_err(m),
            Failure::Write(cause) => Python::attach(|py| {
                // An interruption (KeyboardInterrupt, SystemExit) goes on as it is.
                if !cause.is_instance_of::<PyException>(py) {
                    return cause;
                }
                let err = WriteError::new_err(format!("writing the output: {cause}"));
                err.set_cause(py, Some(cause));
                err
            }),
        }
    }
}

/// Runs a job: a panic is caught and becomes [`Failure::Internal`].
fn guard<T>(body: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(done) => done,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failure::Internal(format!(
                "internal error (a panic in bpflog): {}",
                what.replace('\n', " ")
            )))
        }
    }
}

/// `name` as a message quotes it, its control characters escaped.
fn quoted(name: &str) -> String {
    bpflog::escape_controls_str(name).into_owned()
}

/// The bytes of a log as Python gave them: `str` as UTF-8, bytes-like objects as they are.
enum LogBytes {
    Str(PyBackedStr),
    Bytes(PyBackedBytes),
    Copied(Vec<u8>),
}

impl LogBytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            LogBytes::Str(s) => s.as_bytes(),
            LogBytes::Bytes(b) => b,
            LogBytes::Copied(v) => v,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for LogBytes {
    type Error = PyErr;

    fn extract(ob: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.cast::<PyString>() {
            // A str with lone surrogates (text decoded with `surrogateescape`) goes back to the
            // bytes it was decoded from.
            return match s.extract::<PyBackedStr>() {
                Ok(s) => Ok(LogBytes::Str(s)),
                Err(_) => {
                    let encoded = s.call_method1("encode", ("utf-8", "surrogateescape"))?;
                    Ok(LogBytes::Bytes(encoded.extract()?))
                }
            };
        }
        if ob.is_instance_of::<PyBytes>() || ob.is_instance_of::<PyByteArray>() {
            return Ok(LogBytes::Bytes(ob.extract()?));
        }
        // Any other object with the buffer protocol (memoryview, mmap, array): its bytes copied,
        // as they may change while the library runs without the GIL.
        let py = ob.py();
        let view = py
            .import("builtins")?
            .getattr("memoryview")?
            .call1((ob,))
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "the log must be str or a bytes-like object, not {}",
                    ob.get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))
            })?;
        let bytes = view.call_method0("tobytes")?;
        let bytes = bytes.cast::<PyBytes>()?;
        Ok(LogBytes::Copied(bytes.as_bytes().to_vec()))
    }
}

/// The caller's `out`: a binary file's `write`, or a callable, given each piece as `bytes`.
struct PySink {
    write: Py<PyAny>,
    /// `write` is a file's: it may write less than it was given and say so.
    file: bool,
    /// What `write` raised, once it has.
    error: Option<PyErr>,
}

impl PySink {
    /// The sink of `out`: its `write` method when it has one, else `out` itself when callable.
    fn new(out: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(write) = out.getattr("write") {
            return Ok(PySink {
                write: write.unbind(),
                file: true,
                error: None,
            });
        }
        if out.is_callable() {
            return Ok(PySink {
                write: out.clone().unbind(),
                file: false,
                error: None,
            });
        }
        Err(PyTypeError::new_err(format!(
            "out must be a binary file or a callable taking bytes, not {}",
            out.get_type()
                .name()
                .map_or_else(|_| "?".into(), |n| n.to_string())
        )))
    }

    /// Hands `data` to `write`, all of it.
    fn hand_over(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let write = self.write.bind(py);
        let mut data = data;
        while !data.is_empty() {
            let written = write.call1((PyBytes::new(py, data),))?;
            // A file says how much it wrote: a raw file may write less (then the rest again).
            match (self.file, written.extract::<usize>()) {
                (true, Ok(n)) if n < data.len() => {
                    if n == 0 {
                        return Err(pyo3::exceptions::PyOSError::new_err(
                            "out.write() wrote nothing",
                        ));
                    }
                    data = &data[n..];
                }
                _ => break,
            }
        }
        Ok(())
    }
}

impl Write for PySink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.error.is_some() {
            return Err(io::Error::other("out raised"));
        }
        if data.is_empty() {
            return Ok(0);
        }
        if let Err(e) = Python::attach(|py| self.hand_over(py, data)) {
            self.error = Some(e);
            return Err(io::Error::other("out raised"));
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `job` writing to `out` through a buffer of [`SINK_BUFFER`] bytes, and says how it ended;
/// what `out` raised comes first.
fn to_sink(
    sink: PySink,
    job: impl FnOnce(&mut BufWriter<PySink>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut out = BufWriter::with_capacity(SINK_BUFFER, sink);
    let done = job(&mut out).and_then(|()| out.flush().map_err(|e| Failure::Log(e.to_string())));
    let (sink, _) = out.into_parts();
    match sink.error {
        Some(e) => Err(Failure::Write(e)),
        None => done,
    }
}

/// An error of the library while it read the log (of a job on a program already chosen,
/// nothing else arises: an `io::Error`, a `JobError` or a `PlanError` that wraps one).
fn log_error(e: impl std::fmt::Display) -> Failure {
    Failure::Log(e.to_string())
}

/// The loaders a `loader=` argument names: one, or every one (`None`).
fn loaders(loader: Option<&str>) -> PyResult<Vec<Loader>> {
    match loader {
        None => Ok(Loader::ALL.to_vec()),
        Some(name) => Loader::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .map(|l| vec![l])
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "loader must be 'libbpf', 'aya', 'cilium' or None, not '{}'",
                    quoted(name)
                ))
            }),
    }
}

/// The style a `style=` argument names.
fn style(style: &str) -> PyResult<Style> {
    match style {
        "kernel" => Ok(Style::Kernel),
        "rich" => Ok(Style::Rich),
        other => Err(PyValueError::new_err(format!(
            "style must be 'kernel' or 'rich', not '{}'",
            quoted(other)
        ))),
    }
}

/// A BPF object and its programs, each laid out as libbpf, aya and cilium/ebpf load it.
///
/// Made by `Object.open(path_or_bytes)`; never changed after, so one object may serve several
/// threads at once. The library runs with the GIL released.
#[pyclass(frozen, module = "bpflog")]
struct Object {
    /// The bytes, the object and its programs under each loader's layout: libbpf's first, then
    /// the other loaders' where they differ.
    owned: OwnedObject,
    /// How messages name it: its path, or `<bytes>`.
    name: String,
    /// Its programs' names, in the object's order.
    names: Vec<String>,
}

impl Object {
    /// The program `log` is a log of: named by `prog` (among `loaders`' layouts of it), or
    /// chosen among every program's layouts under `loaders`, as the library chooses
    /// ([`bpflog::LaidOut::choose`]).
    fn program(
        &self,
        prog: Option<&str>,
        loaders: &[Loader],
        log: &[u8],
    ) -> Result<&Program<'_, '_>, Failure> {
        let laid = self.owned.laid_out();
        laid.choose(prog, loaders, log).map_err(|e| match e {
            JobError::NoProgram(name) if self.names.contains(&name) => Failure::NoProgram(format!(
                "program '{}' cannot be laid out as {} loads it",
                quoted(&name),
                loaders.first().map_or("?", |l| l.name())
            )),
            JobError::NoProgram(name) => {
                Failure::NoProgram((self.owned.object().program(&name)).err().map_or_else(
                    || format!("no program named '{}'", quoted(&name)),
                    |e| e.to_string(),
                ))
            }
            JobError::Select(e @ bpflog::SelectError::Ambiguous(..)) => {
                Failure::Ambiguous(e.to_string())
            }
            JobError::Io(e) => log_error(e),
            e => Failure::NoneFits(e.to_string()),
        })
    }

    /// `job` on the program `log` is of (named `prog` among `loader`'s layouts, or chosen:
    /// [`program`](Self::program)), run with the GIL released and a panic caught; its failure
    /// raised naming the object.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        prog: Option<&str>,
        loader: Option<&str>,
        log: &[u8],
        job: impl FnOnce(&Program<'_, '_>) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let loaders = loaders(loader)?;
        py.detach(|| guard(|| job(self.program(prog, &loaders, log)?)))
            .map_err(|f| f.into_py(&self.name))
    }
}

#[pymethods]
impl Object {
    /// Opens a BPF object from a path (str or os.PathLike) or from its bytes (any bytes-like
    /// object, copied).
    ///
    /// Raises ObjectError (naming the path, or `<bytes>`) when it cannot be read or is not a
    /// BPF object bpflog can read.
    #[staticmethod]
    fn open(py: Python<'_>, path_or_bytes: &Bound<'_, PyAny>) -> PyResult<Object> {
        let (name, data) = match path(path_or_bytes)? {
            Some(path) => {
                let name = quoted(&path.to_string_lossy());
                let data = py
                    .detach(|| bpflog::read_object(&path).map(Vec::into_boxed_slice))
                    .map_err(|m| ObjectError::new_err(format!("{name}: {m}")))?;
                (name, data)
            }
            None => match path_or_bytes.extract::<LogBytes>() {
                Ok(LogBytes::Str(_)) | Err(_) => {
                    return Err(PyTypeError::new_err(format!(
                        "Object.open takes a path (str, os.PathLike) or a bytes-like object, not {}",
                        path_or_bytes
                            .get_type()
                            .name()
                            .map_or_else(|_| "?".into(), |n| n.to_string())
                    )));
                }
                Ok(bytes) => ("<bytes>".to_owned(), bytes.as_slice().into()),
            },
        };
        let owned = py
            .detach(|| guard(|| open_object(data)))
            .map_err(|f| f.into_py(&name))?;
        let object = owned.object();
        let names = object
            .programs()
            .iter()
            .map(|&id| object.function(id).name.clone())
            .collect();
        Ok(Object { owned, name, names })
    }

    /// The names of the object's programs, in the object's order.
    #[getter]
    fn programs(&self) -> Vec<String> {
        self.names.clone()
    }

    /// How error messages name the object: its path, or `<bytes>`.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    fn __repr__(&self) -> String {
        format!(
            "<bpflog.Object {} programs={:?}>",
            self.name,
            self.names
                .iter()
                .map(|n| quoted(n))
                .collect::<Vec<String>>()
        )
    }

    /// Annotates a verifier log with the C source of program `prog` (or of the program the
    /// log is chosen to be a log of, as `bpflog annotate` without `--prog`).
    ///
    /// `log` is str or a bytes-like object; `style` "kernel" (the kernel's own `; source`
    /// lines, byte for byte) or "rich" (`; file:line:col in function` lines and, after a
    /// rejection, the diagnostic; no colors); `loader` "libbpf", "aya", "cilium" or None (found
    /// from the log). Without `out`, returns the annotated log as str (bytes that are not UTF-8
    /// decoded with "surrogateescape": `.encode("utf-8", "surrogateescape")` gives them back);
    /// with `out` (a binary file, or a callable taking bytes), writes it there in pieces of up
    /// to 1 MiB as it goes, memory bounded whatever the log's size, and returns None.
    #[pyo3(signature = (log, prog=None, style="kernel", loader=None, out=None))]
    fn annotate(
        &self,
        py: Python<'_>,
        log: LogBytes,
        prog: Option<&str>,
        style: &str,
        loader: Option<&str>,
        out: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let style = self::style(style)?;
        let options = AnnotateOptions::default()
            .style(style)
            .palette(Palette::new(false))
            .diagnostic(style == Style::Rich);
        let log = log.as_slice();
        let annotate = |program: &Program<'_, '_>, out: &mut dyn Write| {
            let input = Input::of(program, LogData::Stream(log));
            bpflog::annotate(input, out, &options, |_, _| Ok(())).map_err(log_error)
        };
        match out {
            Some(out) => {
                let sink = PySink::new(out)?;
                self.run(py, prog, loader, log, |program| {
                    to_sink(sink, |w| annotate(program, w))
                })?;
                Ok(None)
            }
            None => {
                let text = self.run(py, prog, loader, log, |program| {
                    let mut text = Vec::new();
                    annotate(program, &mut text)?;
                    Ok(text)
                })?;
                // Valid UTF-8 copied once; else decoded with `surrogateescape`.
                let text = match std::str::from_utf8(&text) {
                    Ok(text) => PyString::new(py, text),
                    Err(_) => {
                        let bytes = PyBytes::new(py, &text);
                        drop(text);
                        PyString::from_encoded_object(
                            &bytes,
                            Some(c"utf-8"),
                            Some(c"surrogateescape"),
                        )?
                    }
                };
                Ok(Some(text.into_any().unbind()))
            }
        }
    }

    /// Explains why the log was rejected: one dict per rejection in the log (an empty list for
    /// a log that was accepted), each the object `bpflog explain --format json` writes (`class`,
    /// `error`, `location`, `chain`, `help`, ...). `prog` and `loader` as in `annotate`.
    #[pyo3(signature = (log, prog=None, loader=None))]
    fn explain(
        &self,
        py: Python<'_>,
        log: LogBytes,
        prog: Option<&str>,
        loader: Option<&str>,
    ) -> PyResult<Py<PyList>> {
        let log = log.as_slice();
        let json = self.run(py, prog, loader, log, |program| {
            let mut json = Vec::new();
            let mut sources = SourceFiles::new(SourceSearch::default());
            let palette = Palette::new(false);
            let input = Input::of(program, LogData::Stream(log));
            let format = ExplainFormat::Json;
            explain::explain(input, |program, e| {
                explain::write(&e, program, format, &mut sources, &palette, &mut json)
            })
            .map_err(log_error)?;
            Ok(json)
        })?;
        let loads = py.import("json")?.getattr("loads")?;
        let list = PyList::empty(py);
        for line in json.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            list.append(loads.call1((PyBytes::new(py, line),))?)?;
        }
        Ok(list.unbind())
    }

    /// Profiles a (level 2) log per source line: one dict per source line of the program,
    /// hottest first, with `file` (as the line record names it), `line`, `text` (the line
    /// without leading whitespace, empty when unknown), `visits` (the instruction lines of the
    /// log under that source line) and `states` (how many times verification resumed a queued
    /// state there: the log's `from X to Y` lines whose Y is on that line). Ready for
    /// `pandas.DataFrame(...)`. `prog` and `loader` as in `annotate`.
    #[pyo3(signature = (log, prog=None, loader=None))]
    fn profile(
        &self,
        py: Python<'_>,
        log: LogBytes,
        prog: Option<&str>,
        loader: Option<&str>,
    ) -> PyResult<Py<PyList>> {
        let log = log.as_slice();
        let profile = self.run(py, prog, loader, log, |program| {
            let input = Input::of(program, LogData::Stream(log));
            let mut sources = SourceFiles::new(SourceSearch::default());
            let request = bpflog::profile::ProfileRequest::default();
            (bpflog::profile::profile(input, &request, &mut sources))
                .map(|profiled| profiled.profile)
                .map_err(log_error)
        })?;
        let list = PyList::empty(py);
        for l in &profile.lines {
            let row = PyDict::new(py);
            row.set_item("file", &l.file)?;
            row.set_item("line", l.line)?;
            row.set_item("text", &l.source)?;
            row.set_item("visits", l.counts.visits)?;
            row.set_item("states", l.counts.paths)?;
            list.append(row)?;
        }
        Ok(list.unbind())
    }
}

/// The path `ob` stands for: a `str` or an `os.PathLike` (whose `__fspath__` gives `str` or
/// `bytes`); `None` for anything else (bytes-like objects are data, not paths).
fn path(ob: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    let is_path = ob.is_instance_of::<PyString>() || ob.hasattr("__fspath__")?;
    if !is_path {
        return Ok(None);
    }
    let fspath = ob.py().import("os")?.getattr("fspath")?.call1((ob,))?;
    if let Ok(bytes) = fspath.cast::<PyBytes>() {
        let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes.as_bytes());
        return Ok(Some(PathBuf::from(name)));
    }
    Ok(Some(fspath.extract::<PathBuf>()?))
}

/// bpflog's calls for a loader: `Object.open`, then `.programs`, `.annotate`, `.explain`,
/// `.profile`.
#[pymodule]
fn _bpflog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Object>()?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("ObjectError", py.get_type::<ObjectError>())?;
    m.add(
        "ProgramNotFoundError",
        py.get_type::<ProgramNotFoundError>(),
    )?;
    m.add("SelectError", py.get_type::<SelectError>())?;
    m.add("NoProgramFitsError", py.get_type::<NoProgramFitsError>())?;
    m.add(
        "AmbiguousProgramError",
        py.get_type::<AmbiguousProgramError>(),
    )?;
    m.add("LogError", py.get_type::<LogError>())?;
    m.add("WriteError", py.get_type::<WriteError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
