//! Output put together once per instruction of a log and copied after.
//!
//! A log visits the same instructions over and over. What some outputs write for an instruction
//! (a JSON record's `"source"` member, a rich annotation) depends on nothing but the
//! instruction, and locating it, walking its inline chain and formatting cost more than copying
//! the bytes. [`InsnBytes`] holds them per instruction, up to a budget.

use std::io::{self, Write};

/// Bytes per instruction, each put together the first time the instruction comes and copied
/// after; held up to a budget of bytes (instructions beyond are put together each time).
pub(crate) struct InsnBytes {
    /// Per instruction: where its bytes start in `bytes`, and their length plus one (0: not
    /// held). Grows as far as the logs it serves go, not to the whole program.
    spans: Vec<(u32, u32)>,
    bytes: Vec<u8>,
    budget: usize,
}

impl InsnBytes {
    /// Holds up to `budget` bytes.
    pub(crate) fn with_budget(budget: usize) -> Self {
        InsnBytes {
            spans: Vec::new(),
            bytes: Vec::new(),
            budget,
        }
    }

    /// The bytes held for instruction `index`, if any.
    #[inline]
    pub(crate) fn get(&self, index: u32) -> Option<&[u8]> {
        match *self.spans.get(index as usize)? {
            (_, 0) => None,
            (start, len) => Some(&self.bytes[start as usize..][..len as usize - 1]),
        }
    }

    /// Writes the bytes of instruction `index`, which `make` puts together the first time (and
    /// every time for an index of `len` or more: past the program); returns how many were
    /// written.
    pub(crate) fn write(
        &mut self,
        out: &mut impl Write,
        index: u32,
        len: u32,
        make: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<usize> {
        if let Some(bytes) = self.get(index) {
            out.write_all(bytes)?;
            return Ok(bytes.len());
        }
        let start = self.bytes.len();
        let made = make(&mut self.bytes);
        let written = match made {
            Ok(()) => out.write_all(&self.bytes[start..]),
            Err(e) => Err(e),
        };
        let size = self.bytes.len() - start;
        if written.is_ok() {
            self.keep(index, len, start);
        } else {
            self.bytes.truncate(start);
        }
        written.map(|()| size)
    }

    /// Holds the bytes from `start` on as instruction `index`'s, or lets them go: past the
    /// program (`len` or more) or over the budget.
    fn keep(&mut self, index: u32, len: u32, start: usize) {
        let size = self.bytes.len() - start;
        if index >= len || self.bytes.len() > self.budget || u32::try_from(size + 1).is_err() {
            self.bytes.truncate(start);
            return;
        }
        let at = index as usize;
        if self.spans.len() <= at {
            self.spans.resize(at + 1, (0, 0));
        }
        // Within the budget: both fit in `u32`.
        self.spans[at] = (start as u32, (size + 1) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_the_same_held_or_not() {
        // Each instruction's bytes say which it is and how many times it was put together.
        let mut made = [0u32; 10];
        let mut cache = InsnBytes::with_budget(20);
        let mut out = Vec::new();
        for index in [1, 2, 1, 7, 1, 3, 2, 4, 5, 6, 1, 5, 9, 9] {
            cache
                .write(&mut out, index, 8, |b| {
                    made[index as usize] += 1;
                    write!(b, "{index}:{};", made[index as usize])
                })
                .unwrap();
        }
        // Held while within 20 bytes (1, 2, 7, 3, 4: "1:1;" and so on), then made each time;
        // 9 is past the program (8 instructions), never held.
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1:1;2:1;1:1;7:1;1:1;3:1;2:1;4:1;5:1;6:1;1:1;5:2;9:1;9:2;"
        );
    }

    #[test]
    fn nothing_is_held_from_a_failed_write() {
        let mut cache = InsnBytes::with_budget(1 << 10);
        let failing = |_: &mut Vec<u8>| Err(io::Error::other("no"));
        assert!(cache.write(&mut Vec::new(), 0, 4, failing).is_err());
        let mut out = Vec::new();
        let n = cache
            .write(&mut out, 0, 4, |b| b.write_all(b"again"))
            .unwrap();
        assert_eq!((n, &out[..]), (5, &b"again"[..]));
    }
}
