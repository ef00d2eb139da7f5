//! Errors for malformed objects: every variant names the section and byte offset it found wrong.

use crate::excerpt::excerpt;
use thiserror::Error;

/// Where in the object something was read: an ELF section and a byte offset inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    /// Name of the ELF section (`.BTF`, `.BTF.ext`, `xdp`, ...).
    pub section: String,
    /// Byte offset inside that section.
    pub offset: u64,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "section {} at offset {:#x}",
            excerpt_name(&self.section),
            self.offset
        )
    }
}

/// Why an object could not be read or a program could not be laid out.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a well-formed ELF file.
    #[error("not a valid ELF file: {0}")]
    Elf(#[from] object::Error),
    /// An ELF file for another machine than BPF.
    #[error("not a BPF object: ELF machine is {0} (expected BPF, e_machine 247)")]
    NotBpf(String),
    /// A section the reader needs is absent.
    #[error("no {0} section (was the object compiled with clang -g?)")]
    MissingSection(&'static str),
    /// A section's contents could not be read from the file.
    #[error("{}: cannot read section data: {source}", excerpt_name(section))]
    SectionData {
        /// The section's name.
        section: String,
        /// What the ELF reader said.
        source: object::Error,
    },
    /// Fewer bytes remain than a header, record or block needs.
    #[error("{at}: truncated: {what} needs {needed} bytes, {available} remain")]
    Truncated {
        /// Where the read started.
        at: At,
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes that remain.
        available: u64,
    },
    /// A magic number is not the one the format requires.
    #[error("{at}: bad magic {found:#06x} (expected 0xeb9f{swapped})")]
    BadMagic {
        /// Where the magic was read.
        at: At,
        /// The value found.
        found: u16,
        /// A hint when the magic is byte-swapped.
        swapped: &'static str,
    },
    /// A header field holds a value the format does not allow.
    #[error("{at}: {what}")]
    BadHeader {
        /// Where the field was read.
        at: At,
        /// What is wrong, with the value.
        what: String,
    },
    /// A record size is below the known struct or not a multiple of 4.
    #[error("{at}: {kind} record size {rec_size} is invalid (at least {min}, a multiple of 4)")]
    BadRecordSize {
        /// Where the record size was read.
        at: At,
        /// Which info kind (`line_info`, `func_info`, `core_relo`).
        kind: &'static str,
        /// The value found.
        rec_size: u32,
        /// The minimum for this kind.
        min: u32,
    },
    /// A string offset points outside the BTF string table, or the string has no terminator.
    #[error("{at}: string offset {offset} {problem} (string table is {len} bytes)")]
    BadString {
        /// Where the offset was read.
        at: At,
        /// The string offset.
        offset: u32,
        /// `is outside the string table` or `has no NUL terminator`.
        problem: &'static str,
        /// Size of the string table.
        len: u64,
    },
    /// A line or function record whose instruction offset is not usable.
    #[error("{at}: {kind} insn_off {insn_off} {problem}")]
    BadInsnOff {
        /// Where the record was read.
        at: At,
        /// Which info kind.
        kind: &'static str,
        /// The byte offset found.
        insn_off: u32,
        /// What is wrong with it.
        problem: String,
    },
    /// A function symbol whose position or size does not fit its section.
    #[error("{at}: function {}: {problem}", crate::excerpt_name(name))]
    BadFunction {
        /// Where the function starts.
        at: At,
        /// The symbol name.
        name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A relocation or call that the loader could not resolve.
    #[error("{at}: {problem}")]
    BadReference {
        /// The instruction.
        at: At,
        /// What is wrong with it.
        problem: String,
    },
    /// DWARF debug information that could not be read.
    #[error("{at}: bad DWARF: {message}")]
    Dwarf {
        /// The debug section and the offset of the unit, line program or entry being read.
        at: At,
        /// What is wrong.
        message: String,
    },
    /// A kernel's BTF that is neither raw BTF nor an ELF file.
    #[error("neither raw BTF (magic 0xeb9f) nor an ELF file with a .BTF section")]
    NotBtf,
    /// No program of that name in the object.
    #[error("no program named '{}' (programs: {})", excerpt(name.as_bytes()), excerpt_names(available))]
    UnknownProgram {
        /// The name asked for.
        name: String,
        /// The programs that exist.
        available: Vec<String>,
    },
}

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A name from the object (a section's, a symbol's) as an error quotes it: through [`excerpt`],
/// and `(unnamed)` when it is empty, as a fuzzed or stripped object's may be.
pub fn excerpt_name(name: &str) -> String {
    if name.is_empty() {
        "(unnamed)".to_owned()
    } else {
        excerpt(name.as_bytes())
    }
}

/// A list of names from the object, as an error quotes it: each through [`excerpt_name`], the
/// first [`NAMES_MAX`] of them, then how many more there are.
pub fn excerpt_names(names: &[String]) -> String {
    let mut each: Vec<String> = names
        .iter()
        .take(NAMES_MAX)
        .map(|n| excerpt_name(n))
        .collect();
    if names.len() > NAMES_MAX {
        each.push(format!("and {} more", names.len() - NAMES_MAX));
    }
    each.join(", ")
}

/// The most names an error lists.
pub const NAMES_MAX: usize = 32;
