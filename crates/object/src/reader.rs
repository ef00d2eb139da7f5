//! A bounds-checked cursor over one section's bytes with an explicit byte order.
//!
//! Every read checks the bytes that remain first, and every error carries the section name and the
//! absolute offset inside the section, so callers never slice or add untrusted numbers by hand.

use crate::error::{At, Error, Result};
use object::Endianness;

/// A cursor over `data`, whose first byte sits at `base` inside section `section`.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'data> {
    data: &'data [u8],
    pos: usize,
    base: u64,
    section: &'data str,
    endian: Endianness,
}

impl<'data> Reader<'data> {
    /// A cursor over a whole section.
    pub(crate) fn new(section: &'data str, data: &'data [u8], endian: Endianness) -> Self {
        Reader {
            data,
            pos: 0,
            base: 0,
            section,
            endian,
        }
    }

    /// A cursor over `data`, which starts at `base` inside section `section`.
    pub(crate) fn new_at(
        section: &'data str,
        data: &'data [u8],
        endian: Endianness,
        base: u64,
    ) -> Self {
        Reader {
            base,
            ..Reader::new(section, data, endian)
        }
    }

    /// The absolute offset of the next byte inside the section.
    pub(crate) fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// Where the next byte is, for error messages.
    pub(crate) fn at(&self) -> At {
        self.at_offset(self.offset())
    }

    /// An [`At`] in this reader's section.
    pub(crate) fn at_offset(&self, offset: u64) -> At {
        At {
            section: self.section.to_owned(),
            offset,
        }
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Takes the next `len` bytes as a sub-reader, or fails naming `what`.
    pub(crate) fn split(&mut self, len: u64, what: &'static str) -> Result<Reader<'data>> {
        let start = self.offset();
        let bytes = self.bytes(len, what)?;
        Ok(Reader {
            data: bytes,
            pos: 0,
            base: start,
            section: self.section,
            endian: self.endian,
        })
    }

    /// A sub-reader over `[off, off + len)` of this reader's data, measured from its start.
    ///
    /// When even `off` lies past the end, the error is at this reader's start and counts the
    /// `off + len` bytes the range needs from there (not `off` alone, which would read as the
    /// size of the range).
    pub(crate) fn range(&self, off: u64, len: u64, what: &'static str) -> Result<Reader<'data>> {
        let mut r = *self;
        r.pos = 0;
        if off > r.remaining() as u64 {
            return Err(Error::Truncated {
                at: r.at(),
                what,
                needed: off.saturating_add(len),
                available: r.remaining() as u64,
            });
        }
        r.skip(off, what)?;
        r.split(len, what)
    }

    /// Takes the next `len` bytes.
    pub(crate) fn bytes(&mut self, len: u64, what: &'static str) -> Result<&'data [u8]> {
        let available = self.remaining() as u64;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| self.pos.checked_add(len))
            .filter(|_| len <= available);
        match end.and_then(|end| self.data.get(self.pos..end).map(|b| (b, end))) {
            Some((bytes, end)) => {
                self.pos = end;
                Ok(bytes)
            }
            None => Err(Error::Truncated {
                at: self.at(),
                what,
                needed: len,
                available,
            }),
        }
    }

    /// Skips `len` bytes.
    pub(crate) fn skip(&mut self, len: u64, what: &'static str) -> Result<()> {
        self.bytes(len, what).map(|_| ())
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    /// Reads a u16 in the object's byte order.
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16> {
        let b = self.array::<2>(what)?;
        Ok(match self.endian {
            Endianness::Little => u16::from_le_bytes(b),
            Endianness::Big => u16::from_be_bytes(b),
        })
    }

    /// Reads a u32 in the object's byte order.
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.array::<4>(what)?;
        Ok(match self.endian {
            Endianness::Little => u32::from_le_bytes(b),
            Endianness::Big => u32::from_be_bytes(b),
        })
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let bytes = self.bytes(N as u64, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_byte_orders_and_reports_where_it_ran_out() {
        let data = [0x9f, 0xeb, 1, 0, 0, 0];
        let mut le = Reader::new(".BTF", &data, Endianness::Little);
        assert_eq!(le.u16("magic").unwrap(), 0xeb9f);
        let mut be = Reader::new(".BTF", &data, Endianness::Big);
        assert_eq!(be.u16("magic").unwrap(), 0x9feb);
        assert_eq!(le.u32("x").unwrap(), 1);
        let err = le.u32("hdr_len").unwrap_err().to_string();
        assert_eq!(
            err,
            "section .BTF at offset 0x6: truncated: hdr_len needs 4 bytes, 0 remain"
        );
    }

    #[test]
    fn split_keeps_absolute_offsets() {
        let data = [0u8; 16];
        let mut r = Reader::new("s", &data, Endianness::Little);
        r.skip(4, "x").unwrap();
        let mut sub = r.split(8, "sub").unwrap();
        sub.skip(2, "y").unwrap();
        assert_eq!(sub.offset(), 6);
        assert!(r.range(10, 7, "past").is_err());
        // An offset past the end: reported from the start, with everything the range needs.
        let err = r.range(20, 4, "string table").err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("section s at offset 0x0: truncated: string table needs 24 bytes, 16 remain")
        );
        assert!(r.split(u64::MAX, "huge").is_err());
    }
}
