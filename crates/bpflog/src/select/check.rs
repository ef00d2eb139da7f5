//! Whether one line of the log fits one program: an instruction line against the loaded
//! instruction at its index (opcode, registers, offsets, immediates, callee, maps), an annotation
//! line against the program's source line.

use crate::Program;
use bpflog_log::{Annotation, Callee, InsnLine, Op as LogOp, PrintedInsn};
use bpflog_object::opcode::{
    self, CLASS_ALU, CLASS_ALU64, CLASS_JMP, CLASS_JMP32, CLASS_LDX, CLASS_ST, CLASS_STX,
    MODE_ATOMIC, MODE_MASK, MODE_MEM, OP_CALL, OP_CALL_BITS, OP_END, OP_EXIT, OP_EXIT_BITS,
    OP_GOTOL, OP_JA, OP_JCOND, OP_LD_IMM64, OP_MASK, OP_MOV, OP_NEG, SOURCE_REG,
};
use bpflog_object::{Insn, LineOrigin, RelocSymbol, excerpt, excerpt_name};

/// Checks an annotation line against the source line the program has at `index`.
///
/// The kernel printed it from the `.BTF.ext` line info the loader passed. A program whose line
/// table is DWARF's (an object without `.BTF.ext`) has no text to compare, and its row at a
/// function's first instruction may be the line of the function's `{` where the line info
/// names the declaration before it (clang's record for a function whose first instruction has
/// no line): there the kernel's line may be any up to DWARF's. The file is compared, and
/// elsewhere the line.
pub(super) fn check_annotation(
    program: &Program<'_, '_>,
    index: u64,
    a: &Annotation<'_>,
) -> Result<(), String> {
    let at = u32::try_from(index).ok();
    let row = at.and_then(|i| program.lines.find(i));
    let Some(row) = row else {
        return Err(format!(
            "an annotation precedes instruction {index}, which has no line record in the program"
        ));
    };
    let dwarf = program.lines.origin() == LineOrigin::Dwarf;
    let function_start = || {
        at.and_then(|i| program.layout.locate(i))
            .is_some_and(|(_, offset)| offset == 0)
    };
    let location_fits = a.location.is_none_or(|(file, line)| {
        file == row.basename() && (line == row.line || dwarf && line < row.line && function_start())
    });
    let text_fits = dwarf || row.trimmed_text() == a.text;
    if !text_fits || !location_fits {
        return Err(format!(
            "annotation '{}' does not match the program's source line for instruction {index} ('{}' @ {}:{})",
            excerpt(a.text),
            excerpt(row.trimmed_text()),
            excerpt(row.basename()),
            row.line
        ));
    }
    Ok(())
}

/// Why an instruction line does not fit a program.
pub(super) struct Disagreement {
    pub(super) reason: String,
    /// Whether the line's text may only be garbled (its operands) rather than name another
    /// instruction (its index or opcode): then it may be noise.
    pub(super) garbled: bool,
}

impl From<String> for Disagreement {
    /// Another instruction than the program's.
    fn from(reason: String) -> Self {
        Disagreement {
            reason,
            garbled: false,
        }
    }
}

/// Checks an instruction line against the program's loaded instruction at its index.
///
/// `decoded` keeps the line's instruction once decoded, for the other candidates.
pub(super) fn check_insn<'l>(
    program: &Program<'_, '_>,
    line: &InsnLine<'l>,
    decoded: &mut Option<PrintedInsn<'l>>,
) -> Result<(), Disagreement> {
    let len = program.layout.len;
    let beyond = || {
        Disagreement::from(format!(
            "instruction {} is beyond the program's {len} instructions",
            line.index
        ))
    };
    let index = u32::try_from(line.index)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(beyond)?;
    let Some(object) = program.object() else {
        // Line info from a loader: no instructions to compare.
        return Ok(());
    };
    let insn = object.insn(&program.layout, index).ok_or_else(beyond)?;
    let Some(opcode) = line.opcode else {
        return check_rewritten(program, object, index, line.text());
    };
    if opcode == OP_CALL && is_poison(decoded.get_or_insert_with(|| line.decode())) {
        // libbpf's own replacement of an instruction it could not relocate: the listing of
        // 6.15+ shows it (`fixup_log` rewrites only the lines being verified).
        return Ok(());
    }
    if let Some(id) = object.core_local_type_id(&program.layout, index)
        && opcode == insn.code
        && let LogOp::LoadImm64 { value, .. } = decoded.get_or_insert_with(|| line.decode()).op
        && let Some(printed) = hex_value(value)
        && printed != u64::from(id)
    {
        // `bpf_core_type_id_local()`: the local type's id, the object's own.
        return Err(Disagreement {
            reason: format!(
                "instruction {index} ({opcode:02x}) loads type id {printed}, but the program's local type is {id}"
            ),
            garbled: true,
        });
    }
    if object.has_core_relo(&program.layout, index) {
        // libbpf may have rewritten offset, immediate and even the load size.
        if opcode & 7 != insn.code & 7 {
            return Err(Disagreement::from(format!(
                "instruction {index} is ({opcode:02x}) in the log but ({:02x}) in the program",
                insn.code
            )));
        }
        if let Some(expected) = program.core_offset(index) {
            let decoded = *decoded.get_or_insert_with(|| line.decode());
            if let Some(printed) = core_relocated_value(opcode, &decoded)
                && printed != i64::from(expected)
            {
                let field = object
                    .core_access(&program.layout, index)
                    .map(|a| format!("{} of {}", a.path(), a.root()))
                    .unwrap_or_default();
                return Err(Disagreement {
                    reason: format!(
                        "instruction {index} ({opcode:02x}) has offset {printed}, but the kernel's BTF puts the program's field {field} at {expected}"
                    ),
                    garbled: true,
                });
            }
        }
        return Ok(());
    }
    if opcode != insn.code {
        return Err(Disagreement::from(format!(
            "instruction {index} is ({opcode:02x}) in the log but ({:02x}) in the program",
            insn.code
        )));
    }
    let garbled = |what: String| Disagreement {
        reason: format!("instruction {index} ({opcode:02x}) {what}"),
        garbled: true,
    };
    let decoded = *decoded.get_or_insert_with(|| line.decode());
    check_operands(&insn, &decoded).map_err(garbled)?;
    if let Some(Callee::Pc(off)) = decoded.callee() {
        // A subprogram call lands where a function of the layout starts: the one the
        // object's call names, where the loader laid it out.
        let target = i64::from(index) + 1 + off;
        let parts = &program.layout.parts;
        if !parts.iter().any(|p| i64::from(p.start) == target) {
            return Err(garbled(format!(
                "calls pc{off:+} (instruction {target}), where no function of the program starts"
            )));
        }
        if let Some(callee) = object.function_used_at(&program.layout, program.loader, index)
            && let Some(part) = parts.iter().find(|p| p.function == callee)
            && i64::from(part.start) != target
        {
            return Err(garbled(format!(
                "calls pc{off:+} (instruction {target}), but the program's instruction calls {} at instruction {}",
                excerpt_name(&object.function(callee).name),
                part.start
            )));
        }
    }
    let symbol = || object.reloc_symbol(&program.layout, index);
    if insn.code == OP_CALL
        && insn.imm == -1
        && let Some(callee) = decoded.callee()
    {
        // A call the loader relocates: a kfunc (undefined), by its name, or a global function.
        match (callee, symbol()) {
            // A `__weak` kfunc this kernel lacks, left unresolved (`call #0`).
            (callee, Some(RelocSymbol::Undefined(_))) if is_unresolved_kfunc(callee) => {}
            (Callee::Named { name, .. }, Some(RelocSymbol::Undefined(kfunc))) => {
                // libbpf resolves `NAME___flavour` as NAME.
                let kfunc = kfunc.split("___").next().unwrap_or(kfunc);
                if name != kfunc.as_bytes() {
                    return Err(garbled(format!(
                        "calls {}, but the program's instruction calls {}",
                        excerpt(name),
                        excerpt(kfunc.as_bytes())
                    )));
                }
            }
            (Callee::Pc(_), Some(RelocSymbol::Undefined(kfunc))) => {
                return Err(garbled(format!(
                    "calls a subprogram, but the program's instruction calls {}",
                    excerpt(kfunc.as_bytes())
                )));
            }
            (Callee::Named { name, .. }, Some(RelocSymbol::Defined { name: function, .. })) => {
                return Err(garbled(format!(
                    "calls {}, but the program's instruction calls function {}",
                    excerpt(name),
                    excerpt(function.as_bytes())
                )));
            }
            _ => {}
        }
    }
    if let LogOp::LoadImm64 { value, .. } = decoded.op
        && insn.code == OP_LD_IMM64
        && insn.src == 0
        && symbol().is_none()
        && let Some(printed) = hex_value(value)
        && let Some(high) = object.insn(&program.layout, index + 1)
    {
        // A 64-bit constant of the program's own: its two halves.
        let own = u64::from(high.imm as u32) << 32 | u64::from(insn.imm as u32);
        if printed != own {
            return Err(garbled(format!(
                "loads {printed:#x}, but the program's instruction loads {own:#x}"
            )));
        }
    }
    if insn.code == OP_LD_IMM64
        && let Some(printed) = line.map_of(insn.dst)
        && let Some(RelocSymbol::Defined { name, section }) = symbol()
        && !map_named(printed, name, section)
    {
        return Err(garbled(format!(
            "loads map {}, but the program's instruction loads {} (in {})",
            excerpt(printed),
            excerpt(name.as_bytes()),
            excerpt(section.as_bytes())
        )));
    }
    if insn.code == OP_LD_IMM64
        && let Some(printed) = line.map_value_off(insn.dst)
        && let Some(own) = object.data_offset(&program.layout, index)
        && printed != own
    {
        // The address of a variable or a constant: its offset in the section's map.
        let what = match symbol() {
            Some(RelocSymbol::Defined { name, section }) if name != section => {
                format!(
                    "{} in {}",
                    excerpt(name.as_bytes()),
                    excerpt(section.as_bytes())
                )
            }
            Some(RelocSymbol::Defined { section, .. }) => excerpt(section.as_bytes()),
            _ => String::new(),
        };
        return Err(garbled(format!(
            "points at offset {printed} of its map's value, but the program's instruction at offset {own} of {what}"
        )));
    }
    Ok(())
}

/// libbpf's rewrite of an instruction it could not relocate (`fixup_log`: `N: <invalid CO-RE
/// relocation>`, `<invalid BPF map reference>`, `<invalid kfunc call>`) against the program's
/// instruction `index`: one with a CO-RE relocation, a 64-bit load relocated against a map or
/// a variable, a call of a kfunc. Anything else rewritten is taken as it comes.
fn check_rewritten(
    program: &Program<'_, '_>,
    object: &bpflog_object::BpfObject<'_>,
    index: u32,
    text: &[u8],
) -> Result<(), Disagreement> {
    let layout = &program.layout;
    let insn = object.insn(layout, index);
    let symbol = || object.reloc_symbol(layout, index);
    let (fits, what) = match text {
        b"<invalid CO-RE relocation>" => (
            object.has_core_relo(layout, index),
            "has no CO-RE relocation",
        ),
        b"<invalid BPF map reference>" => (
            insn.is_some_and(|i| i.code == OP_LD_IMM64)
                && matches!(symbol(), Some(RelocSymbol::Defined { .. })),
            "loads no map",
        ),
        b"<invalid kfunc call>" => (
            insn.is_some_and(|i| i.code == OP_CALL)
                && matches!(symbol(), Some(RelocSymbol::Undefined(_))),
            "calls no kfunc",
        ),
        _ => (true, ""),
    };
    if fits {
        return Ok(());
    }
    Err(Disagreement {
        reason: format!(
            "instruction {index} is {} in the log, but the program's instruction {what}",
            excerpt(text)
        ),
        garbled: true,
    })
}

/// A CO-RE relocation libbpf could not resolve, as the line it adds after the instruction's
/// names it (`fixup_log`, `bpf_core_format_spec`): `failed to resolve CO-RE relocation
/// <byte_off> [16] struct task_struct___bad.fake_field (0:2 @ offset 8)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FailedCore<'a> {
    /// The relocation's kind, as libbpf names it (`byte_off`).
    kind: &'a [u8],
    /// The local type's id.
    id: u32,
    /// The access string of a field's relocation (`0:2`).
    access: Option<&'a [u8]>,
}

/// libbpf's names of the CO-RE relocation kinds (`core_relo_kind_str`), by kind (`enum
/// bpf_core_relo_kind`: `BPF_CORE_TYPE_MATCHES`, 12, came last).
const CORE_KINDS: [&[u8]; 13] = [
    b"byte_off",
    b"byte_sz",
    b"field_exists",
    b"signed",
    b"lshift_u64",
    b"rshift_u64",
    b"local_type_id",
    b"target_type_id",
    b"type_exists",
    b"type_size",
    b"enumval_exists",
    b"enumval_value",
    b"type_matches",
];

/// The relocation a `failed to resolve CO-RE relocation` line names (see [`FailedCore`]).
pub(super) fn failed_core(text: &[u8]) -> Option<FailedCore<'_>> {
    let rest = text.strip_prefix(b"failed to resolve CO-RE relocation <")?;
    let close = memchr::memmem::find(rest, b"> [")?;
    let kind = &rest[..close];
    let rest = &rest[close + 3..];
    let end = memchr::memchr(b']', rest)?;
    let id = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    let access = (memchr::memrchr(b'(', rest))
        .map(|open| &rest[open + 1..])
        .and_then(|a| memchr::memmem::find(a, b" @ offset ").map(|at| &a[..at]));
    Some(FailedCore { kind, id, access })
}

/// Checks a CO-RE relocation the log says libbpf could not resolve (see [`failed_core`])
/// against the program: its CO-RE relocation at instruction `at` (the rewritten one, when
/// known), else one of its CO-RE relocations, must be of that kind, local type and access
/// string. Why not, if not.
pub(super) fn check_failed_core(
    program: &Program<'_, '_>,
    object: &bpflog_object::BpfObject<'_>,
    failed: FailedCore<'_>,
    at: Option<u32>,
) -> Option<String> {
    let types = object.types();
    let named = |relo: &bpflog_object::CoreRelo| {
        relo.type_id == failed.id
            && CORE_KINDS.get(relo.kind as usize) == Some(&failed.kind)
            && failed.access.is_none_or(|access| {
                (types.as_ref()).is_some_and(|t| t.name_at(relo.access_str_off) == access)
            })
    };
    let relocations = object.core_accesses(&program.layout);
    let mut relocations = (relocations.iter()).filter(|(i, _, _)| at.is_none_or(|at| *i == at));
    (!relocations.any(|(_, relo, _)| named(relo))).then(|| {
        format!(
            "libbpf failed a CO-RE relocation <{}> of local type [{}]{}, which no CO-RE relocation of the program is",
            excerpt(failed.kind),
            failed.id,
            failed
                .access
                .map(|a| format!(" ({})", excerpt(a)))
                .unwrap_or_default()
        )
    })
}

/// The value libbpf writes into an instruction for a CO-RE field byte offset, as the log prints
/// it (libbpf's `bpf_core_patch_insn`): a memory access's offset, an ALU operation's
/// immediate, a 64-bit load's value.
fn core_relocated_value(opcode: u8, line: &PrintedInsn<'_>) -> Option<i64> {
    match opcode::class(opcode) {
        CLASS_LDX | CLASS_ST | CLASS_STX => line.memory().map(|m| m.off),
        CLASS_ALU | CLASS_ALU64 if opcode & SOURCE_REG == 0 => line.immediate(),
        _ if opcode == OP_LD_IMM64 => match line.op {
            LogOp::LoadImm64 { value, .. } => hex_value(value).and_then(|v| i64::try_from(v).ok()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a map the kernel names `printed` is the one a relocation against `symbol` in
/// `section` makes: a map of `.maps` by its symbol, a global variable's by its section
/// (`<object>.bss`, or a custom section's own name, `.data.arr2`), as libbpf names them and
/// the kernel keeps them, in 15 bytes (`BPF_OBJ_NAME_LEN`).
fn map_named(printed: &[u8], symbol: &str, section: &str) -> bool {
    const NAME_MAX: usize = 15;
    if section == ".maps" {
        // A section symbol names no map of its own.
        let symbol = symbol.as_bytes();
        return symbol == section.as_bytes() || printed == symbol.get(..NAME_MAX).unwrap_or(symbol);
    }
    let section = section.as_bytes();
    section.starts_with(printed)
        || memchr::memchr(b'.', printed)
            .is_some_and(|dot| dot > 0 && section.starts_with(&printed[dot..]))
}

/// The value of a 64-bit load as the log prints it (`0x104`), when a number.
fn hex_value(value: &[u8]) -> Option<u64> {
    let digits = std::str::from_utf8(value.strip_prefix(b"0x")?).ok()?;
    u64::from_str_radix(digits, 16).ok()
}

/// libbpf's `POISON_CALL_KFUNC_BASE`: a `__weak` kfunc it found nowhere is called as
/// `call unknown#N` from this number on (libbpf 1.2 and later).
const POISON_CALL_KFUNC_BASE: i64 = 2_002_000_000;

/// Whether a call calls a `__weak` kfunc the loader found nowhere: libbpf's poisoned call
/// (`call unknown#2002000000` on), or the call a libbpf before 1.2 leaves without a BTF id,
/// which the kernel prints `call #0`. The kernel refuses either once every path is verified.
pub(crate) fn is_unresolved_kfunc(callee: Callee<'_>) -> bool {
    match callee {
        Callee::Named { name: b"", id: 0 } => true,
        Callee::Named {
            name: b"unknown",
            id,
        } => id >= POISON_CALL_KFUNC_BASE,
        Callee::Named { .. } | Callee::Pc(_) => false,
    }
}

/// Whether `insn` is a call libbpf writes in place of an instruction it could not relocate:
/// `call unknown#195896080` (0xbad2310, a failed CO-RE relocation) or a number from 2001000000
/// on (a map or a weak kfunc not found: `POISON_LDIMM64_MAP_BASE`, `POISON_CALL_KFUNC_BASE`).
fn is_poison(insn: &PrintedInsn<'_>) -> bool {
    matches!(insn.callee(), Some(Callee::Named { name: b"unknown", id })
        if id == 0xbad2310 || id >= 2_001_000_000)
}

/// Compares what the log prints of `insn` (decoded in `line`) with its fields: the registers,
/// the memory or jump offset, the immediate of an ALU operation, a store or a conditional jump,
/// and what a call calls (a helper's number; a subprogram for a call the object resolves
/// itself). Relocated values are left out: a 64-bit load's value (a map, a variable, a BTF id:
/// the loader's), a kfunc's BTF id and the offset of a call the loader lays out.
fn check_operands(insn: &Insn, line: &PrintedInsn<'_>) -> Result<(), String> {
    let class = opcode::class(insn.code);
    let is_call_or_exit = insn.code == OP_CALL || insn.code == OP_EXIT;
    let checks_registers = matches!(
        class,
        CLASS_LDX | CLASS_ST | CLASS_STX | CLASS_ALU | CLASS_ALU64 | CLASS_JMP | CLASS_JMP32
    ) && !is_call_or_exit;
    if checks_registers {
        // Atomic compare-and-exchange uses r0 implicitly.
        let implicit_r0 = class == CLASS_STX && insn.code & MODE_MASK == MODE_ATOMIC;
        for reg in line.registers() {
            if reg != insn.dst && reg != insn.src && !(implicit_r0 && reg == 0) {
                return Err(format!(
                    "names r{reg}, but the program's instruction uses r{} and r{}",
                    insn.dst, insn.src
                ));
            }
        }
        // Each in its place: `if r0 != r2` is not `if r2 != r0`.
        if let Some((dst, src)) = line.fields()
            && (dst != insn.dst || src.is_some_and(|s| s != insn.src))
        {
            return Err(format!(
                "has r{dst}{} where the program's instruction has r{} and r{}",
                src.map(|s| format!(" and r{s}")).unwrap_or_default(),
                insn.dst,
                insn.src
            ));
        }
    }
    if let LogOp::Alu { width: printed, .. } = line.op
        && matches!(class, CLASS_ALU | CLASS_ALU64)
    {
        // A sign-extending move takes its width from the offset (8, 16, 32; 1 is an address
        // space cast, 0 a plain move), a byte swap from the immediate.
        let own = match insn.code & OP_MASK {
            OP_MOV if insn.code & SOURCE_REG != 0 => {
                matches!(insn.off, 8 | 16 | 32).then_some(i64::from(insn.off))
            }
            OP_END => Some(i64::from(insn.imm)),
            _ => None,
        };
        if printed.map(i64::from) != own {
            return Err(format!(
                "has width {} bits, but the program's instruction {}",
                printed.unwrap_or(0),
                own.unwrap_or(0)
            ));
        }
    }
    let printed_off = match class {
        CLASS_LDX | CLASS_ST | CLASS_STX => line.memory().map(|m| m.off),
        // gotol (JMP32 | JA) jumps by its immediate, not its offset.
        CLASS_JMP | CLASS_JMP32 if !is_call_or_exit && insn.code != OP_GOTOL => line.jump_offset(),
        _ => None,
    };
    if let Some(off) = printed_off
        && off != i64::from(insn.off)
    {
        return Err(format!(
            "has offset {off}, but the program's instruction has {}",
            insn.off
        ));
    }
    if let (Some(printed), Some(own)) = (line.immediate(), own_immediate(insn))
        && printed != own
    {
        return Err(format!(
            "has immediate {printed}, but the program's instruction has {own}"
        ));
    }
    if insn.code == OP_CALL {
        check_callee(insn, line.callee())?;
    }
    Ok(())
}

/// The immediate of `insn` as the log prints it, when it is the instruction's own: an ALU
/// operation's with an immediate operand (decimal), a conditional jump's (its 32 bits), a
/// store's (decimal). Not of byte swaps and negations (their immediate is no operand).
fn own_immediate(insn: &Insn) -> Option<i64> {
    let op = insn.code & OP_MASK;
    let immediate_source = insn.code & SOURCE_REG == 0;
    match opcode::class(insn.code) {
        CLASS_ALU | CLASS_ALU64 if immediate_source && op != OP_END && op != OP_NEG => {
            Some(i64::from(insn.imm))
        }
        CLASS_JMP | CLASS_JMP32
            if immediate_source
                && !matches!(op, OP_JA | OP_CALL_BITS | OP_EXIT_BITS | OP_JCOND) =>
        {
            // Printed as `0x%x`.
            Some(i64::from(insn.imm as u32))
        }
        CLASS_ST if insn.code & MODE_MASK == MODE_MEM => Some(i64::from(insn.imm)),
        _ => None,
    }
}

/// Compares a call's callee in the log with the program's call: a helper call (source 0) names
/// its helper's number; a call the object resolves itself (source 1, immediate set) calls a
/// subprogram (`pc+N`, laid out by the loader). A call whose immediate is -1 is relocated by
/// the loader (a kfunc, or a global function): anything goes.
fn check_callee(insn: &Insn, callee: Option<Callee<'_>>) -> Result<(), String> {
    match (insn.src, callee) {
        (0, Some(Callee::Named { id, name })) if id != i64::from(insn.imm) => Err(format!(
            "calls {}#{id}, but the program's instruction calls helper #{}",
            excerpt(name),
            insn.imm
        )),
        (0, Some(Callee::Pc(_))) => Err(format!(
            "calls a subprogram, but the program's instruction calls helper #{}",
            insn.imm
        )),
        (1, Some(Callee::Named { name, .. })) if insn.imm != -1 => Err(format!(
            "calls {}, but the program's instruction calls a subprogram",
            excerpt(name)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check_operands` of a log's instruction text.
    fn operands(insn: &Insn, text: &[u8]) -> Result<(), String> {
        check_operands(insn, &PrintedInsn::decode(text))
    }

    fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
        Insn {
            code,
            dst,
            src,
            off,
            imm,
        }
    }

    #[test]
    fn operands_must_agree() {
        let ldx = insn(0x61, 2, 1, 4, 0);
        assert!(operands(&ldx, b"r2 = *(u32 *)(r1 +4)").is_ok());
        assert!(operands(&ldx, b"r3 = *(u32 *)(r1 +4)").is_err());
        assert!(operands(&ldx, b"r2 = *(u32 *)(r1 +8)").is_err());
        let jmp = insn(0x2d, 3, 2, 28, 0);
        assert!(operands(&jmp, b"if r3 > r2 goto pc+28").is_ok());
        assert!(operands(&jmp, b"if r3 > r2 goto pc+27").is_err());
        let call = insn(0x85, 0, 1, 0, 9);
        assert!(operands(&call, b"call pc+7").is_ok());
    }

    #[test]
    fn immediates_must_agree_where_they_are_the_instructions_own() {
        // `r0 = 1` is not `r0 = 0` (test_sk_lookup's lookup_pass and lookup_drop).
        let mov = insn(0xb7, 0, 0, 0, 1);
        assert!(operands(&mov, b"r0 = 1").is_ok());
        assert!(operands(&mov, b"r0 = 0").is_err());
        let add = insn(0x07, 2, 0, 0, -12);
        assert!(operands(&add, b"r2 += -12").is_ok());
        assert!(operands(&add, b"r2 += 12").is_err());
        // A jump prints its immediate's 32 bits in hex.
        let jgt = insn(0x25, 1, 0, 3, -1);
        assert!(operands(&jgt, b"if r1 > 0xffffffff goto pc+3").is_ok());
        assert!(operands(&jgt, b"if r1 > 0xfffffffe goto pc+3").is_err());
        let st = insn(0x62, 10, 0, -4, 7);
        assert!(operands(&st, b"*(u32 *)(r10 -4) = 7").is_ok());
        assert!(operands(&st, b"*(u32 *)(r10 -4) = 8").is_err());
        // A byte swap's immediate is its width, printed in its name.
        assert!(operands(&insn(0xdc, 1, 0, 0, 16), b"r1 = be16 r1").is_ok());
        // A 64-bit load's value is the loader's (a map's address here).
        let ld = insn(0x18, 1, 0, 0, 0);
        assert!(operands(&ld, b"r1 = 0xffff888102b7e000").is_ok());
    }

    #[test]
    fn registers_must_be_in_their_places_and_widths_agree() {
        // verifier_bounds_deduction_non_const: `if r0 != r2` and `if r2 != r0`.
        let jne = insn(0x5d, 0, 2, 1, 0);
        assert!(operands(&jne, b"if r0 != r2 goto pc+1").is_ok());
        assert!(operands(&jne, b"if r2 != r0 goto pc+1").is_err());
        let ldx = insn(0x61, 2, 1, 4, 0);
        assert!(operands(&ldx, b"r1 = *(u32 *)(r2 +4)").is_err());
        // verifier_movsx: `(s8)` and `(s16)`; verifier_bswap: `bswap16` and `bswap32`.
        let movsx = insn(0xbc, 0, 0, 8, 0);
        assert!(operands(&movsx, b"w0 = (s8)w0").is_ok());
        assert!(operands(&movsx, b"w0 = (s16)w0").is_err());
        assert!(operands(&insn(0xbc, 0, 1, 0, 0), b"w0 = (s8)w1").is_err());
        let bswap = insn(0xd7, 0, 0, 0, 16);
        assert!(operands(&bswap, b"r0 = bswap16 r0").is_ok());
        assert!(operands(&bswap, b"r0 = bswap32 r0").is_err());
    }

    #[test]
    fn a_failed_co_re_relocation_is_read_as_libbpf_writes_it() {
        // A field's, and an enum value's (test_core_reloc_enum64val on Linux 6.18), whose kind
        // is BPF_CORE_ENUMVAL_VALUE (11).
        let field = b"failed to resolve CO-RE relocation <byte_off> [18] struct task_struct___missing.no_such_field_in_any_kernel (0:0 @ offset 0)";
        let failed = failed_core(field).unwrap();
        assert_eq!((failed.kind, failed.id), (&b"byte_off"[..], 18));
        assert_eq!(failed.access, Some(&b"0:0"[..]));
        let value = b"failed to resolve CO-RE relocation <enumval_value> [5] enum64 named_unsigned_enum64::UNSIGNED_ENUM64_VAL1 = 8589934591";
        let failed = failed_core(value).unwrap();
        assert_eq!(
            (failed.kind, failed.id, failed.access),
            (&b"enumval_value"[..], 5, None)
        );
        assert_eq!(CORE_KINDS.iter().position(|&k| k == failed.kind), Some(11));
        assert_eq!(failed_core(b"failed to resolve CO-RE relocation"), None);
    }

    #[test]
    fn a_helper_call_names_its_helper() {
        let lookup = insn(0x85, 0, 0, 0, 1);
        assert!(operands(&lookup, b"call bpf_map_lookup_elem#1").is_ok());
        assert!(operands(&lookup, b"call bpf_map_update_elem#2").is_err());
        assert!(operands(&lookup, b"call pc+3").is_err());
        // The object's own call of a subprogram; a kfunc's or a global function's, relocated.
        assert!(operands(&insn(0x85, 0, 1, 0, 3), b"call bpf_throw#65988").is_err());
        assert!(operands(&insn(0x85, 0, 1, 0, -1), b"call bpf_throw#65988").is_ok());
        assert!(operands(&insn(0x85, 0, 1, 0, -1), b"call pc+2").is_ok());
    }
}
