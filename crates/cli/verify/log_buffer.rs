//! A log buffer of the kernel's largest size, handed to libbpf for one program, so that the
//! program is verified once whatever the length of its log.
//!
//! Left to itself, libbpf allocates a 16 MiB log buffer and, when the kernel answers `ENOSPC`,
//! doubles it and loads the program again: a program whose text log is 100 MiB is verified four
//! times (`bpf_object_load_prog` in libbpf.c). Given a buffer of its own
//! (`bpf_program__set_log_buf`), libbpf loads once and never grows it. veristat does the same
//! with a buffer of the kernel's limit.
//!
//! The buffer is an anonymous mapping with `MAP_NORESERVE`: zeroed memory the kernel's writes
//! commit page by page, so that what stays resident is the log's length, not the limit, and
//! that the system's overcommit heuristic (`vm.overcommit_memory=0`, the default), which
//! refuses an allocation larger than the machine's free memory, does not refuse 1 GiB on a
//! machine of 1 GiB. Where the system maps no such buffer (`vm.overcommit_memory=2`, an
//! address-space limit), [`LogBuffer::new`] says so and the caller lets libbpf grow its own.
//!
//! libbpf-rs 0.27 does not wrap `bpf_program__set_log_buf`, so this module makes the one call
//! itself, and maps the buffer. With `load::unpin` it is the only `unsafe` of the project (the
//! libraries forbid it).

use libbpf_rs::AsRawLibbpf;
use libbpf_rs::OpenProgramMut;
use std::ptr::NonNull;

/// The largest log the kernel takes: `UINT_MAX >> 2` bytes since Linux 5.2
/// (`bpf_verifier_log_attr_valid`, `bpf_vlog_init` since 6.4); `UINT_MAX >> 8` (16 MiB) before,
/// where a larger size is `EINVAL` before anything is verified.
pub(crate) const KERNEL_MAX: usize = (u32::MAX >> 2) as usize;

/// A program's log buffer, for one load: `len` bytes mapped at `start`, unmapped on drop.
pub(crate) struct LogBuffer {
    start: NonNull<u8>,
    len: usize,
}

impl LogBuffer {
    /// A zeroed buffer of `size` bytes (at least the kernel's minimum, 128), or why the system
    /// maps none.
    #[allow(unsafe_code)]
    pub(crate) fn new(size: usize) -> std::io::Result<Self> {
        let len = size.max(128);
        // SAFETY: a new private anonymous mapping at an address the kernel chooses: it
        // replaces no mapping of the process and aliases no memory Rust knows of.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let start = NonNull::new(at.cast()).ok_or_else(|| std::io::Error::other("mmap gave 0"))?;
        Ok(LogBuffer { start, len })
    }

    /// Hands the buffer to libbpf for `prog`'s load. libbpf keeps the pointer and writes the
    /// kernel's log there during the object's load: `self` must outlive that load, and its
    /// log is read after it ([`LogBuffer::into_log`]).
    #[allow(unsafe_code)]
    pub(crate) fn lend(&mut self, prog: &mut OpenProgramMut<'_>) -> libbpf_rs::Result<()> {
        let prog = prog.as_libbpf_object().as_ptr();
        let size = self.len as libbpf_sys::size_t;
        // SAFETY: `prog` is a live `bpf_program` of an open object (libbpf-rs hands out only
        // those). libbpf stores the pointer and size and writes at most `size` bytes through it,
        // only inside `bpf_object__load` (`bpf_object_load_prog`). The mapping stays as long as
        // `self` lives; the caller keeps `self` alive past the load and reads it only after the
        // load returned, on the same thread.
        let rc =
            unsafe { libbpf_sys::bpf_program__set_log_buf(prog, self.start.as_ptr().cast(), size) };
        match rc {
            0 => Ok(()),
            e => Err(libbpf_rs::Error::from(std::io::Error::from_raw_os_error(
                e.saturating_neg(),
            ))),
        }
    }

    /// The log the kernel wrote (the bytes before the first NUL), copied out of the buffer,
    /// which is unmapped.
    #[allow(unsafe_code)]
    pub(crate) fn into_log(self) -> Vec<u8> {
        // SAFETY: `len` bytes at `start` are this buffer's mapping, readable and initialized
        // (zeroes, or what the kernel wrote); no one writes to it any more (the load returned).
        let bytes = unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) };
        let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
        bytes[..end].to_vec()
    }
}

impl Drop for LogBuffer {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: `start` and `len` are the mapping `new` made, and nothing borrows it: `lend`'s
        // borrower, libbpf, writes only during the load, which `self` outlives.
        unsafe {
            libc::munmap(self.start.as_ptr().cast(), self.len);
        }
    }
}
