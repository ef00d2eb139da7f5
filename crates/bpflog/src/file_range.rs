//! Part of a file, read at its offsets: threads and readers share one file without sharing a
//! position.

use std::borrow::Borrow;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

/// The bytes of a file from one offset to another (`pread`).
pub(crate) struct FileRange<F> {
    file: F,
    at: u64,
    end: u64,
    /// When set, the most one read asks for: it doubles with each read, from a few KiB, for a
    /// reader that may need only the first lines.
    step: Option<usize>,
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
        let n = self.file.borrow().read_at(&mut buf[..want], self.at)?;
        self.at += n as u64;
        Ok(n)
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
}
