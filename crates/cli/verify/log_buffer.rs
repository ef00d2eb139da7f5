//! A log buffer of the kernel's largest size, handed to libbpf for one program, so that the
//! program is verified once whatever the length of its log.
//!
//! Left to itself, libbpf allocates a 16 MiB log buffer and, when the kernel answers `ENOSPC`,
//! doubles it and loads the program again: a program whose text log is 100 MiB is verified four
//! times (`bpf_object_load_prog` in libbpf.c). Given a buffer of its own
//! (`bpf_program__set_log_buf`), libbpf loads once and never grows it. veristat does the same
//! with a buffer of the kernel's limit. The buffer is zeroed memory the kernel's writes commit
//! page by page: what stays resident is the log's length, not the limit.
//!
//! libbpf-rs 0.27 does not wrap `bpf_program__set_log_buf`, so this module makes the one call
//! itself. With `load::unpin` it is the only `unsafe` of the project (the libraries forbid it).

use libbpf_rs::AsRawLibbpf;
use libbpf_rs::OpenProgramMut;

/// The largest log the kernel takes: `UINT_MAX >> 2` bytes since Linux 6.4 (`bpf_vlog_init`,
/// kernel/bpf/log.c); `UINT_MAX >> 8` (16 MiB) before, where a larger size is `EINVAL` before
/// anything is verified.
pub(crate) const KERNEL_MAX: usize = (u32::MAX >> 2) as usize;

/// A program's log buffer, for one load.
pub(crate) struct LogBuffer {
    bytes: Vec<u8>,
}

impl LogBuffer {
    /// A zeroed buffer of `size` bytes (at least the kernel's minimum, 128).
    pub(crate) fn new(size: usize) -> Self {
        LogBuffer {
            bytes: vec![0; size.max(128)],
        }
    }

    /// Hands the buffer to libbpf for `prog`'s load. libbpf keeps the pointer and writes the
    /// kernel's log there during the object's load: `self` must outlive that load, and its
    /// log is read after it ([`LogBuffer::log`]).
    #[allow(unsafe_code)]
    pub(crate) fn lend(&mut self, prog: &mut OpenProgramMut<'_>) -> libbpf_rs::Result<()> {
        let prog = prog.as_libbpf_object().as_ptr();
        let size = self.bytes.len() as libbpf_sys::size_t;
        // SAFETY: `prog` is a live `bpf_program` of an open object (libbpf-rs hands out only
        // those). libbpf stores the pointer and size and writes at most `size` bytes through it,
        // only inside `bpf_object__load` (`bpf_object_load_prog`). The buffer is never resized,
        // so the pointer stays valid as long as `self` lives; the caller keeps `self` alive past
        // the load and reads it only after the load returned, on the same thread.
        let rc = unsafe {
            libbpf_sys::bpf_program__set_log_buf(prog, self.bytes.as_mut_ptr().cast(), size)
        };
        match rc {
            0 => Ok(()),
            e => Err(libbpf_rs::Error::from(std::io::Error::from_raw_os_error(
                e.saturating_neg(),
            ))),
        }
    }

    /// The log the kernel wrote (the bytes before the first NUL), in the buffer's own memory:
    /// shrunk to the log's length, not copied.
    pub(crate) fn into_log(mut self) -> Vec<u8> {
        let end = memchr::memchr(0, &self.bytes).unwrap_or(self.bytes.len());
        self.bytes.truncate(end);
        self.bytes.shrink_to_fit();
        self.bytes
    }
}
