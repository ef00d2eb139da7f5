//! Every program of an object laid out by the loaders a caller considers ([`lay_out`]), an
//! object that owns its bytes with its programs laid out ([`OwnedObject`]): what a binding keeps
//! behind a handle, where nothing can be borrowed from the caller's frame; and an object file
//! read within a bound ([`read_object`]).

use crate::program::Program;
use crate::source::read_at_most;
use bpflog_object::{BpfObject, FunctionId, Loader};
use std::io;
use std::path::Path;

/// The most bytes [`read_object`] reads of an object file: 256 MiB, the `bpflog` command's
/// default bound (clang's largest BPF objects are a few MiB).
pub const OBJECT_MAX: u64 = 256 << 20;

/// The bytes of the object file at `path`, at most [`OBJECT_MAX`]: a directory, or a file (or
/// a device, a FIFO) that holds more, is an error, found without reading more than one byte past
/// the bound.
pub fn read_object(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        ));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("more than the {OBJECT_MAX} bytes an object may hold"),
        )
    };
    if meta.len() > OBJECT_MAX {
        return Err(too_large());
    }
    let (data, read) = read_at_most(file, OBJECT_MAX, meta.len());
    read?;
    if data.len() as u64 > OBJECT_MAX {
        return Err(too_large());
    }
    Ok(data)
}

/// Every program of an object laid out by each of a list of loaders ([`lay_out`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct LaidOut<'o, 'data> {
    /// Each program under each loader's layout that differs from the ones before it for that
    /// program: in the object's order of programs, then the loaders' order.
    pub programs: Vec<Program<'o, 'data>>,
    /// For each of `programs`, the loaders that lay it out so: its own first.
    pub loaders: Vec<Vec<Loader>>,
    /// The programs the first loader could not lay out, and why (a program the others could
    /// not lay out is left out without a word: the first loader is the one the caller trusts).
    pub failures: Vec<(FunctionId, bpflog_object::Error)>,
}

/// Every program of `object` laid out by each of `loaders` (a loader that lays a program out as
/// an earlier one did adds nothing, and names itself in [`LaidOut::loaders`]): the candidates
/// [`select`](crate::select()) chooses among when the loader is not known.
pub fn lay_out<'o, 'data>(object: &'o BpfObject<'data>, loaders: &[Loader]) -> LaidOut<'o, 'data> {
    let mut laid = LaidOut {
        programs: Vec::new(),
        loaders: Vec::new(),
        failures: Vec::new(),
    };
    for id in object.programs() {
        let first = laid.programs.len();
        for &loader in loaders {
            match Program::with_loader(object, id, loader) {
                Ok(p) => match laid.programs[first..]
                    .iter()
                    .position(|q| q.layout == p.layout)
                {
                    Some(same) => laid.loaders[first + same].push(loader),
                    None => {
                        laid.programs.push(p);
                        laid.loaders.push(vec![loader]);
                    }
                },
                Err(e) if Some(&loader) == loaders.first() => laid.failures.push((id, e)),
                Err(_) => {}
            }
        }
    }
    laid
}

self_cell::self_cell!(
    /// An object's bytes and the object parsed from them.
    struct ObjectOfBytes {
        owner: Box<[u8]>,
        #[covariant]
        dependent: BpfObject,
    }
);

/// [`LaidOut`] of one lifetime, as [`self_cell`] takes a dependent.
type LaidOutOnce<'a> = LaidOut<'a, 'a>;

self_cell::self_cell!(
    /// The object and its programs laid out.
    struct ObjectAndPrograms {
        owner: ObjectOfBytes,
        #[covariant]
        dependent: LaidOutOnce,
    }
);

/// An object that owns its bytes, with its programs laid out by the loaders it was opened for:
/// one value to keep behind a handle (the C ABI's `bpflog_object`, Python's `bpflog.Object`).
/// It is never changed once made, and may be shared between threads.
///
/// ```
/// use bpflog::object::Loader;
/// use bpflog::OwnedObject;
/// let data = include_bytes!("../../../tests/fixtures/obj/reject_subprog.o");
/// let owned = OwnedObject::parse(data.to_vec().into(), &Loader::ALL)?;
/// let programs = &owned.laid_out().programs;
/// // One program, which libbpf, aya and cilium/ebpf lay out alike.
/// assert_eq!(programs.len(), 1);
/// assert_eq!(programs[0].name(), "xdp_reject_subprog");
/// assert_eq!(owned.laid_out().loaders[0], Loader::ALL);
/// # Ok::<(), bpflog::object::Error>(())
/// ```
pub struct OwnedObject(ObjectAndPrograms);

impl OwnedObject {
    /// Parses `data` and lays out each of its programs by each of `loaders` ([`lay_out`]).
    pub fn parse(data: Box<[u8]>, loaders: &[Loader]) -> Result<Self, bpflog_object::Error> {
        let parsed = ObjectOfBytes::try_new(data, |bytes| BpfObject::parse(bytes))?;
        Ok(OwnedObject(ObjectAndPrograms::new(parsed, |parsed| {
            lay_out(parsed.borrow_dependent(), loaders)
        })))
    }

    /// The object's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.0.borrow_owner().borrow_owner()
    }

    /// The object.
    pub fn object(&self) -> &BpfObject<'_> {
        self.0.borrow_owner().borrow_dependent()
    }

    /// Its programs, laid out.
    pub fn laid_out(&self) -> &LaidOut<'_, '_> {
        self.0.borrow_dependent()
    }
}

impl std::fmt::Debug for OwnedObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedObject")
            .field("bytes", &self.bytes().len())
            .field("programs", &self.laid_out().programs.len())
            .finish()
    }
}
