//! Part of a file, read at its offsets: threads and readers share one file without sharing a
//! position. The file may still be being written by another thread ([`Growing`]: a log copied
//! from a pipe as it comes): a reader at its end then waits for more, or for the end.

use bpflog_log::{PAUSE, ReadAhead};
use std::borrow::Borrow;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// How far a file that another thread is still writing has been written: the writer says so
/// ([`grew`](Growing::grew), [`done`](Growing::done)), and readers of the file
/// ([`crate::annotate()`] given a [`LogFile::growing`]) wait at its end for more.
#[derive(Debug, Default)]
pub struct Growing {
    state: Mutex<Written>,
    grew: Condvar,
}

#[derive(Debug, Default)]
struct Written {
    len: u64,
    done: bool,
    /// Why the writer stopped early: its error, for every reader.
    failed: Option<(io::ErrorKind, String)>,
}

impl Growing {
    /// The file holds `len` bytes now.
    pub fn grew(&self, len: u64) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.len = state.len.max(len);
        self.grew.notify_all();
    }

    /// Nothing more will be written: the file is complete, or the writer failed (then readers
    /// that reach its end fail the same way).
    pub fn done(&self, result: io::Result<()>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.done = true;
        if let Err(e) = result {
            state.failed = Some((e.kind(), e.to_string()));
        }
        self.grew.notify_all();
    }

    /// Waits until the file holds more than `at` bytes (`Some` of how many) or is complete
    /// (`None`).
    fn wait_past(&self, at: u64) -> io::Result<Option<u64>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.len > at {
                return Ok(Some(state.len));
            }
            if let Some((kind, message)) = &state.failed {
                return Err(io::Error::new(*kind, message.clone()));
            }
            if state.done {
                return Ok(None);
            }
            state = self
                .grew
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The file from its start, read as it is written (the reads wait at its end).
    pub fn reader(self: &Arc<Self>, file: File) -> impl Read + Send + 'static {
        FileRange::new(file, 0, u64::MAX).written_by(self.clone())
    }
}

/// A log file to read at offsets: complete, or [still being written](Growing).
#[derive(Debug, Clone, Copy)]
pub struct LogFile<'f> {
    pub(crate) file: &'f File,
    pub(crate) growing: Option<&'f Arc<Growing>>,
}

impl<'f> LogFile<'f> {
    /// `file`, which another thread is still writing, as `growing` says.
    pub fn growing(file: &'f File, growing: &'f Arc<Growing>) -> Self {
        LogFile {
            file,
            growing: Some(growing),
        }
    }

    /// The file from its start, read ahead in blocks of at most `block` bytes, and its length
    /// (`u64::MAX` while it is being written: read as it is written, and live, so that a pause
    /// flushes what was written of it). It must be a regular file.
    pub(crate) fn read_ahead(&self, block: usize) -> io::Result<(ReadAhead, u64)> {
        let meta = self.file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a log read at offsets must be one)",
            ));
        }
        Ok(match self.growing {
            Some(growing) => {
                let range =
                    FileRange::new(self.file.try_clone()?, 0, u64::MAX).written_by(growing.clone());
                (ReadAhead::new(range, block).live(PAUSE), u64::MAX)
            }
            None => {
                let len = meta.len();
                // A small file gets small buffers.
                let block = usize::try_from(len).map_or(block, |len| len.clamp(1, block));
                let range = FileRange::new(self.file.try_clone()?, 0, len);
                (ReadAhead::new(range, block), len)
            }
        })
    }
}

impl<'f> From<&'f File> for LogFile<'f> {
    fn from(file: &'f File) -> Self {
        LogFile {
            file,
            growing: None,
        }
    }
}

/// The bytes of a file from one offset to another (`pread`).
pub(crate) struct FileRange<F> {
    file: F,
    at: u64,
    end: u64,
    /// When set, the most one read asks for: it doubles with each read, from a few KiB, for a
    /// reader that may need only the first lines.
    step: Option<usize>,
    /// When set, the file is still being written: a read at its end waits for more.
    growing: Option<Arc<Growing>>,
}

/// The first read of a [`FileRange::growing`].
const FIRST_STEP: usize = 4 << 10;

impl<F: Borrow<File>> FileRange<F> {
    /// The bytes from `at` to `end`.
    pub(crate) fn new(file: F, at: u64, end: u64) -> Self {
        FileRange {
            file,
            at,
            end,
            step: None,
            growing: None,
        }
    }

    /// The same bytes of a file that `growing` says is still being written.
    pub(crate) fn written_by(self, growing: Arc<Growing>) -> Self {
        FileRange {
            growing: Some(growing),
            ..self
        }
    }

    /// The bytes from `at` to `end`, read a few KiB first and twice as many each time after.
    pub(crate) fn growing(file: F, at: u64, end: u64) -> Self {
        FileRange {
            step: Some(FIRST_STEP),
            ..FileRange::new(file, at, end)
        }
    }
}

impl<F: Borrow<File>> Read for FileRange<F> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let mut want = buf.len().min(left);
        if let Some(step) = &mut self.step {
            want = want.min(*step);
            *step = step.saturating_mul(2);
        }
        if want == 0 {
            return Ok(0);
        }
        loop {
            let n = self.file.borrow().read_at(&mut buf[..want], self.at)?;
            self.at += n as u64;
            match &self.growing {
                // At the end of what is written so far: wait for more, or for the end.
                Some(growing) if n == 0 => match growing.wait_past(self.at)? {
                    Some(len) => want = want.min(usize::try_from(len - self.at).unwrap_or(want)),
                    None => return Ok(0),
                },
                _ => return Ok(n),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_reads_its_bytes_and_a_growing_one_reads_little_first() {
        let path = std::env::temp_dir().join(format!("bpflog-range-{}", std::process::id()));
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let mut whole = Vec::new();
        FileRange::new(&file, 10, 90_000)
            .read_to_end(&mut whole)
            .unwrap();
        assert_eq!(whole, &data[10..90_000]);
        let mut growing = FileRange::growing(&file, 5, 100_000);
        let mut buf = vec![0; 1 << 20];
        let sizes: Vec<usize> = (0..3).map(|_| growing.read(&mut buf).unwrap()).collect();
        assert_eq!(sizes, [FIRST_STEP, 2 * FIRST_STEP, 4 * FIRST_STEP]);
        let mut rest = Vec::new();
        growing.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &data[5 + 7 * FIRST_STEP..]);
        // Past the end of the file: nothing, as at the end of any reader.
        assert_eq!(
            FileRange::new(&file, 200_000, 300_000)
                .read(&mut buf)
                .unwrap(),
            0
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_reader_of_a_growing_file_waits_for_its_writer() {
        let mut file = tempfile::tempfile().unwrap();
        let growing = Arc::new(Growing::default());
        let mut reader = growing.reader(file.try_clone().unwrap());
        let writer = {
            let growing = growing.clone();
            std::thread::spawn(move || {
                use std::io::Write;
                for part in [&b"first\n"[..], b"second\n", b"third"] {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    file.write_all(part).unwrap();
                    growing.grew(file.metadata().unwrap().len());
                }
                growing.done(Ok(()));
            })
        };
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        writer.join().unwrap();
        assert_eq!(all, b"first\nsecond\nthird");
        // A writer that fails fails its readers at the end of what it wrote.
        let growing = Arc::new(Growing::default());
        let file = tempfile::tempfile().unwrap();
        growing.done(Err(io::Error::other("the pipe broke")));
        let error = growing
            .reader(file)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(error.to_string(), "the pipe broke");
    }
}
