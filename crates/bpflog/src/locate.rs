//! Where an instruction comes from: DWARF when the object has it, `.BTF.ext` otherwise.

use crate::Program;
use bpflog_object::LineOrigin;

/// One inlining step: the function above it was inlined into `caller` at `call_site`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InlinedFrom<'a> {
    /// The function the code was inlined into.
    pub caller: &'a str,
    /// `(file, line, column)` of the call that was inlined.
    pub call_site: Option<(&'a [u8], u32, u32)>,
}

/// The source of one loaded instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InsnSource<'a> {
    /// The file as the debug info names it.
    pub file: &'a [u8],
    /// Line number (1-based).
    pub line: u32,
    /// Column (1-based; 0 when unknown).
    pub column: u32,
    /// The innermost function: an inlined one, or the subprogram or entry program itself.
    pub function: &'a str,
    /// The inline chain, from the innermost function outward.
    pub inlined: Vec<InlinedFrom<'a>>,
    /// The line's text as stored in `.BTF`, when BTF has a record for this line.
    pub btf_text: Option<&'a [u8]>,
}

impl InsnSource<'_> {
    /// The file name after its last `/`.
    pub fn basename(&self) -> &[u8] {
        match memchr::memrchr(b'/', self.file) {
            Some(i) => &self.file[i + 1..],
            None => self.file,
        }
    }
}

/// Where loaded instruction `index` of `program` comes from, if anything says.
pub fn locate<'a>(program: &'a Program<'_, 'a>, index: u32) -> Option<InsnSource<'a>> {
    let btf = program.lines.find(index);
    let (part_name, debug) = match program.object() {
        Some(object) => {
            let (part, _) = program.layout.locate(index)?;
            let name = object.function(part.function).name.as_str();
            (name, object.debug_location(&program.layout, index))
        }
        // Line info from a loader: the program's one name, and no DWARF.
        None if index < program.layout.len => (program.name(), None),
        None => return None,
    };
    let pos = debug.as_ref().and_then(|d| d.pos).filter(|p| p.line > 0);
    let (file, line, column) = match (pos, btf) {
        (Some(p), _) => (p.file.as_bytes(), p.line, p.column),
        (None, Some(row)) => (row.file, row.line, row.col),
        (None, None) => return None,
    };
    // BTF keeps the name as the compiler was given it (`./prog.c`); DWARF drops the `./`.
    let file = file.strip_prefix(b"./").unwrap_or(file);
    let btf_text = btf
        .filter(|row| {
            program.lines.origin() == LineOrigin::Btf
                && row.line == line
                && same_file(row.file, file)
        })
        .map(|row| row.text);
    let (function, inlined) = match &debug {
        Some(d) => {
            let outer = d.function.unwrap_or(part_name);
            let innermost = d.inlined.first().map_or(outer, |c| c.function);
            let chain = d
                .inlined
                .iter()
                .enumerate()
                .map(|(k, call)| InlinedFrom {
                    caller: d.inlined.get(k + 1).map_or(outer, |c| c.function),
                    call_site: call
                        .call_site
                        .map(|s| (s.file.as_bytes(), s.line, s.column)),
                })
                .collect();
            (innermost, chain)
        }
        None => (part_name, Vec::new()),
    };
    Some(InsnSource {
        file,
        line,
        column,
        function,
        inlined,
        btf_text,
    })
}

/// Whether two names of a file agree: equal, or one a path ending in the other's base name.
/// Most often one is the other with `./` (BTF's name and DWARF's): told apart without looking
/// for the base names, as this is asked for every instruction located.
fn same_file(a: &[u8], b: &[u8]) -> bool {
    fn base(p: &[u8]) -> &[u8] {
        memchr::memrchr(b'/', p).map_or(p, |i| &p[i + 1..])
    }
    fn dotless(p: &[u8]) -> &[u8] {
        p.strip_prefix(b"./").unwrap_or(p)
    }
    dotless(a) == dotless(b) || base(a) == base(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut for `./` agrees with the base names: over pairs of names with and without
    /// `./`, directories, and none.
    #[test]
    fn file_names_agree_exactly_when_their_base_names_do() {
        let names: [&[u8]; 10] = [
            b"",
            b"./",
            b"x.c",
            b"./x.c",
            b"a/x.c",
            b"./a/x.c",
            b"/src/a/x.c",
            b"y.c",
            b"./y.c",
            b"a/",
        ];
        let base = |p: &[u8]| memchr::memrchr(b'/', p).map_or(p.to_vec(), |i| p[i + 1..].to_vec());
        for a in names {
            for b in names {
                let agree = a == b || base(a) == base(b);
                assert_eq!(
                    same_file(a, b),
                    agree,
                    "{:?} {:?}",
                    a.escape_ascii(),
                    b.escape_ascii()
                );
            }
        }
    }
}
