//! The bounds on what bpflog reads into memory or copies, and the environment variables that
//! set others: one pattern for all of them ([`InputBound`]).
//!
//! A bound is a number of bytes; its variable holds bytes, or a number followed by `K`, `M` or
//! `G` (binary units). An empty variable is unset. `docs/trust.md` lists them.

use crate::Failure;
use std::fs::File;
use std::path::Path;

/// A bound on an input, and the variable that sets another.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InputBound {
    /// The environment variable that sets another bound (`None`: fixed).
    pub(crate) var: Option<&'static str>,
    /// The bound when the variable is not set.
    pub(crate) default: u64,
    /// What is bounded, for messages: "an object", "a kernel's BTF".
    pub(crate) what: &'static str,
    /// What is counted: bytes, or (`Some`) the things named.
    pub(crate) counts: Option<&'static str>,
}

/// An object file: real ones are at most tens of MiB (a program of 120,000 instructions with
/// its debug info is a few MiB).
pub(crate) const OBJECT: InputBound = InputBound {
    var: Some("BPFLOG_OBJECT_MAX"),
    default: 256 << 20,
    what: "an object",
    counts: None,
};

/// The kernel's BTF (`--btf`): a vmlinux BTF is a few MiB.
pub(crate) const KERNEL_BTF: InputBound = InputBound {
    var: None,
    default: 256 << 20,
    what: "a kernel's BTF",
    counts: None,
};

/// The copy of a log read from a pipe or a device: 4 GiB. The kernel writes at most 1 GiB of
/// log for a program (`log_size` is at most `UINT_MAX >> 2`); a file of several programs' logs
/// may hold a few.
pub(crate) const SPOOL: InputBound = InputBound {
    var: Some("BPFLOG_SPOOL_MAX"),
    default: 4 << 30,
    what: "a log copied from a pipe or a device",
    counts: None,
};

/// A CSV table `verify --compare` reads: veristat's and `verify -o csv`'s have a row of about
/// 100 bytes a program (32,000 programs: 3 MiB).
pub(crate) const TABLE: InputBound = InputBound {
    var: Some("BPFLOG_CSV_MAX"),
    default: 16 << 20,
    what: "a CSV table",
    counts: None,
};

/// The rows of such a table: a program each, and a row costs the comparison about 3 KiB
/// (the shortest rows are 20 bytes). Kernel selftests build about 4,000 programs.
pub(crate) const TABLE_ROWS: InputBound = InputBound {
    var: Some("BPFLOG_CSV_ROWS"),
    default: 100_000,
    what: "a CSV table",
    counts: Some("rows"),
};

/// A row of such a table (its fields together, quoted line ends and all): a file name, a program
/// name and counts, a few hundred bytes.
pub(crate) const TABLE_ROW: InputBound = InputBound {
    var: None,
    default: 64 << 10,
    what: "a CSV table's row",
    counts: None,
};

impl InputBound {
    /// The bound in force: the variable's, or the default.
    pub(crate) fn get(&self) -> Result<u64, Failure> {
        let Some(var) = self.var else {
            return Ok(self.default);
        };
        let Some(value) = std::env::var_os(var).filter(|v| !v.is_empty()) else {
            return Ok(self.default);
        };
        let text = value.to_string_lossy();
        parse_size(&text).ok_or_else(|| {
            Failure::Error(format!(
                "{var}: expected a size in bytes, or followed by K, M or G, got '{}'",
                bpflog::object::excerpt(text.as_bytes())
            ))
        })
    }

    /// What to say of an input past bound `limit`: "larger than 256 MiB, the most read of an
    /// object (BPFLOG_OBJECT_MAX sets another bound)", "more than 100000 rows, the most read
    /// of a CSV table (...)".
    pub(crate) fn exceeded(&self, limit: u64) -> String {
        let raise = self
            .var
            .map_or(String::new(), |var| format!(" ({var} sets another bound)"));
        let past = match self.counts {
            None => format!("larger than {}", size(limit)),
            Some(things) => format!("more than {limit} {things}"),
        };
        format!("{past}, the most read of {}{raise}", self.what)
    }

    /// The file at `path`, read whole if it holds at most the bound: refused by the size its
    /// metadata gives before anything is read, and by what it holds past the bound when that
    /// says nothing (`/dev/zero`, a FIFO, `/proc`'s files).
    pub(crate) fn read(&self, path: &Path) -> Result<Vec<u8>, Failure> {
        let limit = self.get()?;
        let file = File::open(path).map_err(|e| Failure::at(path, e))?;
        let meta = file.metadata().map_err(|e| Failure::at(path, e))?;
        if meta.is_file() && meta.len() > limit {
            return Err(Failure::at(path, self.exceeded(limit)));
        }
        let (data, read) = bpflog::read_at_most(&file, limit, meta.len());
        read.map_err(|e| Failure::at(path, e))?;
        if data.len() as u64 > limit {
            return Err(Failure::at(path, self.exceeded(limit)));
        }
        Ok(data)
    }
}

/// `N`, `NK`, `NM` or `NG` (binary units, either case).
fn parse_size(text: &str) -> Option<u64> {
    let (digits, shift) = match text.as_bytes().last()? {
        b'k' | b'K' => (&text[..text.len() - 1], 10),
        b'm' | b'M' => (&text[..text.len() - 1], 20),
        b'g' | b'G' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift)
}

/// `n` bytes in the largest binary unit that divides it.
pub(crate) fn size(n: u64) -> String {
    match n {
        0 => "0 bytes".to_owned(),
        n if n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_said() {
        assert_eq!(parse_size("4G"), Some(4 << 30));
        assert_eq!(parse_size("16m"), Some(16 << 20));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("2k"), Some(2048));
        for bad in ["", "G", "-1", "1.5G", "1T", "99999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
        assert_eq!(size(4 << 30), "4 GiB");
        assert_eq!(size(3 << 20), "3 MiB");
        assert_eq!(size(1000), "1000 bytes");
    }
}
