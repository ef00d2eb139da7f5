//! What programs that all fit a log share, instruction by instruction: the same code, or code
//! that differs only in fields relocated by CO-RE.

use crate::Program;
use bpflog_object::RelocSymbol;
use bpflog_object::opcode::{self};

/// What programs that all fit a log share, as
/// [`SelectError::Ambiguous`](super::SelectError::Ambiguous) says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shared {
    /// The same code: instructions, constants, helpers, kfuncs and maps (relocated values by
    /// the symbol they name and the offset they take in a data section), and the same fields
    /// relocated by CO-RE.
    Code,
    /// The same code but for fields relocated by CO-RE: the log prints their offsets in the
    /// kernel's layout, which only the kernel's BTF ties to a field.
    CoreFields(Box<CoreFields>),
    /// The same code up to this instruction, where they first differ: the log does not tell
    /// them apart there (it does not reach it, or shows nothing of it that differs).
    Until(u32),
    /// Not known: a program comes from a loader's line info, without instructions.
    Unknown,
}

/// The first instruction where programs differ only in a field relocated by CO-RE.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CoreFields {
    /// The loaded instruction.
    pub insn: u32,
    /// Each program's field there (`snd_cwnd of struct tcp_sock`), in the order the programs
    /// were named (the first two that differ).
    pub fields: (String, String),
    /// Whether a kernel's BTF was given (and did not settle these fields).
    pub kernel_btf: bool,
}

impl std::fmt::Display for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shared::Code => f.write_str(
                "twins: the same instructions, constants, helpers and maps; only the kernel's source lines would tell them apart",
            ),
            Shared::CoreFields(core) => write!(
                f,
                "the same code but for fields relocated by CO-RE (instruction {}: {} vs {}), whose offsets in the log only the kernel's BTF ties to fields{}",
                core.insn,
                core.fields.0,
                core.fields.1,
                if core.kernel_btf {
                    "; the BTF given does not settle them"
                } else {
                    ""
                }
            ),
            Shared::Until(at) => write!(
                f,
                "the same code as far as the log shows; they first differ at instruction {at}"
            ),
            Shared::Unknown => f.write_str("programs from line info, without their code"),
        }
    }
}

/// What `programs` share (see [`Shared`]), comparing each with the first instruction by
/// instruction.
pub(super) fn shared(programs: &[&Program<'_, '_>]) -> Shared {
    let Some((first, rest)) = programs.split_first() else {
        return Shared::Unknown;
    };
    let Some(object) = first.object() else {
        return Shared::Unknown;
    };
    let mut until = None;
    for other in rest {
        let Some(object_b) = other.object() else {
            return Shared::Unknown;
        };
        let len = first.layout.len.min(other.layout.len);
        let differ = (0..len)
            .find(|&i| insn(first, object, i) != insn(other, object_b, i))
            .or((first.layout.len != other.layout.len).then_some(len));
        until = until.min(differ).or(until).or(differ);
    }
    if let Some(at) = until {
        return Shared::Until(at);
    }
    // The same code as far as instructions go: do CO-RE relocations name other fields? (Only
    // the relocated instructions are looked at.)
    let mut first_core: Option<CoreFields> = None;
    let mine = object.core_accesses(&first.layout);
    for other in rest {
        let Some(object_b) = other.object() else {
            return Shared::Unknown;
        };
        let theirs = object_b.core_accesses(&other.layout);
        // The first index where one has a relocation the other has not, or another field.
        let differ = (0..mine.len().max(theirs.len())).find_map(|k| {
            let (a, b) = (mine.get(k), theirs.get(k));
            let i = match (a, b) {
                // The same field (or, for other kinds, the same kind) at the same place.
                (Some(x), Some(y)) if x.0 == y.0 && x.1.kind == y.1.kind && x.2 == y.2 => {
                    return None;
                }
                (Some(x), Some(y)) => x.0.min(y.0),
                (Some(x), None) | (None, Some(x)) => x.0,
                (None, None) => return None,
            };
            Some((i, field_at(a, i), field_at(b, i)))
        });
        let Some((i, a, b)) =
            differ.filter(|&(i, _, _)| first_core.as_ref().is_none_or(|c| i < c.insn))
        else {
            continue;
        };
        let field = |access: &Option<bpflog_object::FieldAccess<'_>>| match access {
            Some(a) => format!("{} of {}", a.path(), a.root()),
            None => "no field read".to_owned(),
        };
        let fields = match (&a, &b) {
            // One root: named once.
            (Some(x), Some(y)) if x.root() == y.root() => (x.path(), field(&b)),
            _ => (field(&a), field(&b)),
        };
        first_core = Some(CoreFields {
            insn: i,
            fields,
            kernel_btf: first.kernel_btf,
        });
    }
    first_core.map_or(Shared::Code, |c| Shared::CoreFields(Box::new(c)))
}

/// The field path of a CO-RE relocation entry (of
/// [`BpfObject::core_accesses`](bpflog_object::BpfObject::core_accesses)) when it is the one
/// of instruction `i`.
fn field_at<'d>(
    entry: Option<&(
        u32,
        bpflog_object::CoreRelo,
        Option<bpflog_object::FieldAccess<'d>>,
    )>,
    i: u32,
) -> Option<bpflog_object::FieldAccess<'d>> {
    entry.filter(|e| e.0 == i).and_then(|e| e.2.clone())
}

/// Instruction `i` of `p` as [`shared`] compares it first: relocated values are the loader's,
/// compared by the symbol named and, for a data section's, the offset taken in it
/// ([`data_offset`](bpflog_object::BpfObject::data_offset)); CO-RE-relocated instructions by
/// class (their fields are compared after).
type InsnKey<'a> = (u8, u8, u8, i16, i64, Option<RelocSymbol<'a>>);

/// Instruction `i` of `p` (in `object`), as [`shared`] compares it (see [`InsnKey`]).
fn insn<'a>(
    p: &Program<'_, '_>,
    object: &'a bpflog_object::BpfObject<'_>,
    i: u32,
) -> Option<InsnKey<'a>> {
    let insn = object.insn(&p.layout, i)?;
    let core = object.has_core_relo(&p.layout, i);
    Some(match (core, object.reloc_symbol(&p.layout, i)) {
        (true, _) => (opcode::class(insn.code), 0, 0, 0, 0, None),
        (false, Some(s)) => {
            let offset = object.data_offset(&p.layout, i).unwrap_or(0);
            (insn.code, insn.dst, insn.src, insn.off, offset, Some(s))
        }
        (false, None) => (
            insn.code,
            insn.dst,
            insn.src,
            insn.off,
            insn.imm.into(),
            None,
        ),
    })
}
