//! Whether a log is a verifier log at all ([`bpflog::sniff`]), asked of a file, or of the bytes
//! a reader passes on as it reads ([`Sniffing`]; the library finds their lines).

use crate::Failure;
pub(crate) use bpflog::sniff::{NotALog, Sniffer};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Why `log` (called `display`) is no verifier log, read from its start up to its first line of
/// the verifier's.
pub(crate) fn no_verifier_log(log: impl Read, display: &Path) -> Result<Option<NotALog>, Failure> {
    bpflog::sniff::no_verifier_log(log).map_err(|e| Failure::at(display, e))
}

/// The regular file at `path`, opened again (`None` for standard input, a pipe, a device: what
/// cannot be read twice).
pub(crate) fn reopen_file(path: Option<&Path>) -> Option<File> {
    let file = File::open(path?).ok()?;
    file.metadata().is_ok_and(|m| m.is_file()).then_some(file)
}

/// A reader that hands the bytes read through it to a [`Sniffer`] (shared: the reading may
/// happen on another thread), which finds their lines, until one is the verifier's; from then
/// on it only reads.
pub(crate) struct Sniffing<R> {
    inner: R,
    sniffer: Arc<Mutex<Sniffer>>,
    done: bool,
}

impl<R: Read> Sniffing<R> {
    /// `inner`, its bytes handed to `sniffer`.
    pub(crate) fn new(inner: R, sniffer: Arc<Mutex<Sniffer>>) -> Self {
        Sniffing {
            inner,
            sniffer,
            done: false,
        }
    }
}

impl<R: Read> Read for Sniffing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.done {
            let eof = n == 0;
            self.done = match self.sniffer.lock() {
                Ok(mut sniffer) => {
                    sniffer.read(&buf[..n], eof);
                    eof || sniffer.found()
                }
                Err(_) => true,
            };
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the sniffing reader finds in `bytes`, read `chunk` bytes at a time.
    fn sniffed(bytes: &[u8], chunk: usize) -> Option<NotALog> {
        let sniffer = Arc::new(Mutex::new(Sniffer::default()));
        let mut reader = Sniffing::new(bytes, sniffer.clone());
        let mut buf = vec![0; chunk];
        while reader.read(&mut buf).unwrap() > 0 {}
        sniffer.lock().unwrap().verdict()
    }

    #[test]
    fn the_reader_finds_what_the_file_scan_finds() {
        let cases: [(&[u8], Option<NotALog>); 7] = [
            (b"", Some(NotALog::Empty)),
            (b"\n \n\t", Some(NotALog::Blank(3))),
            (
                b"libbpf: loading\nlibbpf: failed\n",
                Some(NotALog::Chatter(2)),
            ),
            (
                b"libbpf: loading\nlibbpf: failed",
                Some(NotALog::Chatter(2)),
            ),
            (b"libbpf: x\n0: (b7) r0 = 0\n", None),
            (
                b"processed 3 insns (limit 1000000) max_states_per_insn 0",
                None,
            ),
            (b"\tfunc#0 @0\n", Some(NotALog::Chatter(1))),
        ];
        for (bytes, expected) in cases {
            let path = std::env::temp_dir().join(format!("bpflog-sniff-{}", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            let scanned = no_verifier_log(File::open(&path).unwrap(), &path)
                .ok()
                .flatten();
            std::fs::remove_file(&path).unwrap();
            assert_eq!(scanned, expected, "{}", String::from_utf8_lossy(bytes));
            for chunk in [1, 2, 3, 7, 4096] {
                assert_eq!(sniffed(bytes, chunk), expected, "{chunk}: {bytes:?}");
            }
        }
    }

    #[test]
    fn a_line_longer_than_a_read_is_one_line() {
        let mut bytes = vec![b'x'; 10 << 20];
        bytes.extend_from_slice(b"\n0: (b7) r0 = 0\n");
        assert_eq!(sniffed(&bytes, 4096), None);
        bytes.truncate(10 << 20);
        assert_eq!(sniffed(&bytes, 4096), Some(NotALog::Chatter(1)));
    }
}
