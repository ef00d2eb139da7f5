//! The line classifier.
//!
//! Line formats come from the kernel's `do_check` and `print_verifier_state`
//! (kernel/bpf/verifier.c), `verbose_linfo` (kernel/bpf/log.c), the liveness listing of 6.15+
//! (`Live regs before insn:`) and libbpf's `fixup_log` rewrites (`N: <invalid CO-RE relocation>`).

use crate::PrintedInsn;

/// What one log line is. Every borrowed slice points into the classified line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// An empty line.
    Blank,
    /// An instruction being verified: `N: (xx) insn`, possibly followed by state.
    Insn(InsnLine<'a>),
    /// State at an instruction without the instruction: `N: R1=ctx() R10=fp0`, `N: frame1: ...`.
    State {
        /// The instruction index.
        index: u64,
    },
    /// `N: safe`: this path was pruned at instruction N.
    Safe {
        /// The instruction index.
        index: u64,
    },
    /// `from X to Y: ...` (and `(speculative execution)`), the start of another path.
    FromTo {
        /// Where the branch was taken.
        from: u64,
        /// Where verification continues.
        to: u64,
    },
    /// `func#N @START`, printed at level 2 for each function of the program.
    FuncStart {
        /// The function number.
        func: u64,
        /// Its first instruction index.
        start: u64,
    },
    /// `Validating f() func#N...`: the start of a global function's own verification pass.
    Validating {
        /// The function number.
        func: u64,
        /// The function's name (`f`).
        name: &'a [u8],
    },
    /// `Func#N ('f') is global and assumed valid.` or `... is safe for any args ...`.
    GlobalFunc {
        /// The function number.
        func: u64,
        /// The function's name (`f`), when the line reads as the kernel writes it.
        name: Option<&'a [u8]>,
    },
    /// `caller:` or `callee:`, heading the indented states of a call or return.
    CallerCallee,
    /// A `mark_precise:` backtracking line, or one without the prefix (Linux 5.10 and 6.1:
    /// `regs=1 stack=0 before 33: (bf) r0 = r4`); its `before N: (op)` is not being verified.
    MarkPrecise,
    /// `Live regs before insn:`, heading the liveness listing.
    LiveRegsHeader,
    /// An indented row of the liveness listing: `     12: .12....... (85) call pc+18`, every
    /// instruction of the loaded program in order, before the first is verified.
    LiveRegsRow {
        /// The instruction index.
        index: u64,
        /// The instruction listed, when its opcode reads (`(85) call pc+18`).
        insn: Option<InsnLine<'a>>,
    },
    /// A source annotation line `; text @ file:line` (or `; text` before Linux 6.9).
    Annotation(Annotation<'a>),
    /// `returning from callee:` / `to caller at N:`, heading the states of a return.
    Returning,
    /// Bookkeeping traces of newer verifiers: `SCC enter (40,1)`, `SCC backedge (2)`, `(0) frame 0 insn 9 +live -8`,
    /// `frame 1: propagating r1`, `last_idx 11 first_idx 11`, `(0) live stack update done ...`.
    Trace,
    /// The `processed N insns (limit M) ...` summary.
    Summary,
    /// Statistics after the summary (log level 4): `verification time 366 usec`, `stack depth 8+0`.
    Stats,
    /// A loader's own message, not the kernel's: libbpf's (`libbpf: prog 'p': BPF program load
    /// failed: Permission denied`), which the kernel never prints and which is no error of the
    /// log's, wherever a loader's stderr wrote it ([`is_loader`]).
    Loader,
    /// Anything else: error messages, indented states, stats, lines of newer kernels.
    Other,
}

impl<'a> Line<'a> {
    /// The same line with each part it borrows from the line's bytes replaced by `f(part)`,
    /// the parts taken in one fixed order: a line decoded once is moved onto a copy of its
    /// bytes (or off them and back) without being decoded again.
    pub fn map_parts<'b>(self, mut f: impl FnMut(&'a [u8]) -> &'b [u8]) -> Line<'b> {
        let mut insn = |i: InsnLine<'a>| InsnLine {
            index: i.index,
            opcode: i.opcode,
            rest: f(i.rest),
        };
        match self {
            Line::Insn(i) => Line::Insn(insn(i)),
            Line::LiveRegsRow { index, insn: i } => Line::LiveRegsRow {
                index,
                insn: i.map(insn),
            },
            Line::Validating { func, name } => Line::Validating {
                func,
                name: f(name),
            },
            Line::GlobalFunc { func, name } => Line::GlobalFunc {
                func,
                name: name.map(f),
            },
            Line::Annotation(Annotation { text, location }) => {
                let text = f(text);
                Line::Annotation(Annotation {
                    text,
                    location: location.map(|(file, line)| (f(file), line)),
                })
            }
            Line::Blank => Line::Blank,
            Line::State { index } => Line::State { index },
            Line::Safe { index } => Line::Safe { index },
            Line::FromTo { from, to } => Line::FromTo { from, to },
            Line::FuncStart { func, start } => Line::FuncStart { func, start },
            Line::CallerCallee => Line::CallerCallee,
            Line::MarkPrecise => Line::MarkPrecise,
            Line::LiveRegsHeader => Line::LiveRegsHeader,
            Line::Returning => Line::Returning,
            Line::Trace => Line::Trace,
            Line::Summary => Line::Summary,
            Line::Stats => Line::Stats,
            Line::Loader => Line::Loader,
            Line::Other => Line::Other,
        }
    }
}

/// An instruction line: `N: (xx) insn`, or libbpf's `N: <invalid CO-RE relocation>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsnLine<'a> {
    /// The instruction index.
    pub index: u64,
    /// The opcode byte in `(xx)`; `None` for libbpf's `<invalid ...>` rewrites.
    pub opcode: Option<u8>,
    /// Everything after `(xx) ` (or after `N: ` for a rewrite).
    rest: &'a [u8],
}

impl<'a> InsnLine<'a> {
    /// The instruction, decoded from its [`text`](Self::text) (see [`PrintedInsn`]).
    ///
    /// Worked out on demand: most readers need the index and opcode only.
    pub fn decode(&self) -> PrintedInsn<'a> {
        PrintedInsn::decode(self.text())
    }

    /// The instruction text after `(xx) `, cut before any register state that follows it.
    ///
    /// Worked out on demand: annotating needs only the index, and this scans the line.
    pub fn text(&self) -> &'a [u8] {
        if self.opcode.is_some() {
            insn_text(self.rest).0
        } else {
            self.rest
        }
    }

    /// The name of the map register `reg` points to (or into) in the state printed after the
    /// instruction (`6: (18) r1 = 0xffff888102b7e000 ; R1_w=map_ptr(map=seen,ks=4,vs=4)`), if
    /// the state names one. The kernel prints the name it was given: libbpf's, the map's
    /// symbol or `<object>.<section>`, cut to 15 bytes.
    pub fn map_of(&self, reg: u8) -> Option<&'a [u8]> {
        let value = self.reg_state(reg)?;
        let at = memchr::memmem::find(value, b"map=")? + 4;
        let name = &value[at..];
        let end = name
            .iter()
            .position(|&b| b == b',' || b == b')')
            .unwrap_or(name.len());
        Some(&name[..end])
    }

    /// The offset into a map's value that register `reg` points to in the state printed after
    /// the instruction, when the state shows a constant one: `25` for
    /// `R1=map_value(map=iters.rodata,ks=4,vs=906,off=25)` (6.1:
    /// `R1_w=map_value(id=0,off=25,ks=4,vs=906,imm=0)`), 0 where it prints no `off=`.
    /// `None` for another kind of value and for a variable offset (`var_off=`).
    pub fn map_value_off(&self, reg: u8) -> Option<i64> {
        let inner = self.reg_state(reg)?.strip_prefix(b"map_value(")?;
        let inner = &inner[..memchr::memchr(b')', inner)?];
        if memchr::memmem::find(inner, b"var_off=").is_some() {
            return None;
        }
        let Some(off) = inner
            .split(|&b| b == b',')
            .find_map(|i| i.strip_prefix(b"off="))
        else {
            return Some(0);
        };
        std::str::from_utf8(off).ok()?.parse().ok()
    }

    /// The value of register `reg` in the state printed after the instruction (`R1_w=` left
    /// out), up to the first space.
    fn reg_state(&self, reg: u8) -> Option<&'a [u8]> {
        self.opcode?;
        let state = &self.rest[STATE.find(self.rest)? + 3..];
        let state = state.strip_prefix(b"frame").map_or(state, |f| {
            let colon = memchr::memchr(b' ', f).unwrap_or(f.len());
            f.get(colon + 1..).unwrap_or_default()
        });
        state.split(|&b| b == b' ').find_map(|field| {
            let value = field.strip_prefix(b"R")?;
            let (n, value) = number(value)?;
            if n != u64::from(reg) {
                return None;
            }
            value
                .strip_prefix(b"_w")
                .unwrap_or(value)
                .strip_prefix(b"=")
        })
    }

    /// The registers the state printed after the instruction shows, each with the `id=` the
    /// verifier links its copies by (`R1_w=scalar(id=3,umax=8)`: `(1, Some(3))`; `None` for a
    /// register shown without one). Nothing for a line without a state.
    pub fn state_ids(&self) -> impl Iterator<Item = (u8, Option<u64>)> + 'a {
        let state = match (self.opcode, STATE.find(self.rest)) {
            (Some(_), Some(at)) => &self.rest[at + 3..],
            _ => &[][..],
        };
        state.split(|&b| b == b' ').filter_map(|field| {
            let (n, value) = number(field.strip_prefix(b"R")?)?;
            let reg = u8::try_from(n).ok().filter(|&r| r <= 10)?;
            let value = value
                .strip_prefix(b"_w")
                .unwrap_or(value)
                .strip_prefix(b"=")?;
            let inner = memchr::memchr(b'(', value).map_or(&[][..], |at| &value[at + 1..]);
            let id = inner
                .strip_prefix(b"id=")
                .and_then(number)
                .map(|(id, _)| id);
            Some((reg, id))
        })
    }

    /// The instruction whose state follows this one's text on the same line (`N: (15) if r0 ==
    /// 0x0 goto pc+1 23: R0=0 ...`), if one does. At log level 1 that is where the kernel,
    /// having dropped the text of the path it followed from N to its end, resumed with the path
    /// it had put aside at N (`pop_stack` rewinds the log to where `push_stack` was called);
    /// after a call, it is the callee's first instruction.
    pub fn resumed(&self) -> Option<u64> {
        if !may_resume(self.rest) {
            return None;
        }
        self.opcode.and(insn_text(self.rest).1)
    }

    /// The bytes after `(xx) ` that settle the line's [`text`](Self::text), when it has a
    /// state after the text: up to and including its first ` ; `. Where the text ends is
    /// decided by those bytes alone, so any instruction line whose bytes after `(xx) ` start
    /// with them ([`InsnHead::starts_with`]) has the same text. `None` for a line without ` ; `
    /// or without an opcode.
    pub fn text_key(&self) -> Option<&'a [u8]> {
        self.opcode?;
        let state = STATE.find(self.rest)?;
        Some(&self.rest[..state + 3])
    }
}

/// Whether `a` and `b` are the same: eight bytes at a time, the last eight overlapping the ones
/// before (the keys and texts compared are short, and a call to compare them cost more).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a.iter().zip(b).all(|(x, y)| x == y);
    }
    let word = |s: &[u8], at: usize| <[u8; 8]>::try_from(&s[at..at + 8]).unwrap_or_default();
    let mut at = 0;
    while at + 8 < n {
        if word(a, at) != word(b, at) {
            return false;
        }
        at += 8;
    }
    word(a, n - 8) == word(b, n - 8)
}

/// A source annotation line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotation<'a> {
    /// The source text after `; ` (and before ` @ file:line` when present).
    pub text: &'a [u8],
    /// `(file basename, line)` from the ` @ file:line` suffix of Linux 6.9+.
    pub location: Option<(&'a [u8], u32)>,
}

/// The function named by `Global function NAME() ...` (btf_prepare_func_args, in
/// kernel/bpf/btf.c: `Global function %s() doesn't return scalar. Only those are supported.`
/// and its siblings), the function whose verification pass prints it. An error or note of the
/// verifier's, classified [`Line::Other`].
pub fn global_function_name(line: &[u8]) -> Option<&[u8]> {
    let rest = line.strip_prefix(b"Global function ")?;
    let end = memchr::memchr(b'(', rest)?;
    let name = &rest[..end];
    (!name.is_empty() && rest[end..].starts_with(b"()") && !name.contains(&b' ')).then_some(name)
}

/// Classifies one log line (without its newline).
#[inline]
pub fn classify(line: &[u8]) -> Line<'_> {
    match line.first() {
        None => Line::Blank,
        Some(b'0'..=b'9') => classify_numbered(line),
        Some(b';') => classify_annotation(line),
        Some(b' ' | b'\t') => classify_indented(line),
        Some(_) => classify_word(line),
    }
}

/// Whether [`classify`] calls `line` the log's [`Line::Summary`]: `processed N insns (limit M)
/// ...`. For a reader that needs only this of a line (where a log ends).
#[inline]
pub fn is_summary(line: &[u8]) -> bool {
    line.starts_with(b"processed ") && memchr::memmem::find(line, b" insns (limit ").is_some()
}

/// Whether [`classify`] calls `line` [`Line::Stats`]: `verification time N usec`, `stack depth
/// A+B`, which may follow the summary.
#[inline]
pub fn is_stats(line: &[u8]) -> bool {
    line.starts_with(b"verification time ") || line.starts_with(b"stack depth ")
}

/// Whether [`classify`] calls `line` [`Line::Loader`]: a message of libbpf's, which starts
/// every one with `libbpf: ` (its `pr_warn`, `pr_info` and `pr_debug`). What a loader prints
/// before and after a log (`libbpf: prog 'p': BPF program load failed: Permission denied`
/// before `-- BEGIN PROG LOAD LOG --`) is never a line of the log.
#[inline]
pub fn is_loader(line: &[u8]) -> bool {
    line.starts_with(b"libbpf: ")
}

/// Whether a line only details the verifier's work: a precision-tracking line (`mark_precise: `)
/// or one indented by spaces (register states under `caller:`/`callee:`, liveness rows).
///
/// [`classify`] calls such a line [`Line::MarkPrecise`], [`Line::LiveRegsRow`] or
/// [`Line::Other`], and nothing that follows a log (its instructions, annotation lines, errors)
/// depends on it. Together they are about half the lines of a level-2 log, so this cheap test
/// lets a reader pass them through without classifying them.
#[inline]
pub fn is_detail(line: &[u8]) -> bool {
    line.first() == Some(&b' ') || line.starts_with(b"mark_precise: ")
}

/// Parses leading decimal digits; `None` when there are none (or they overflow).
#[inline]
fn number(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut n = 0u64;
    let mut end = 0;
    while let Some(&b) = s.get(end) {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        n = n.wrapping_mul(10).wrapping_add(u64::from(digit));
        end += 1;
    }
    // 19 digits always fit in a u64 (20 may not).
    if end == 0 || end > 19 {
        return None;
    }
    Some((n, &s[end..]))
}

/// The value of a hex digit.
#[inline]
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// An instruction line with its opcode (`N: (xx) ...`) as [`insn_head`] reads it: what a
/// reader that has seen the instruction before needs, without the work of [`classify`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InsnHead<'a> {
    /// The instruction index.
    pub index: u64,
    /// The opcode byte in `(xx)`.
    pub opcode: u8,
    /// Everything after `(xx) `.
    rest: &'a [u8],
}

impl<'a> InsnHead<'a> {
    /// The line as [`classify`] decodes it (an instruction line with its opcode), from what is
    /// parsed already.
    #[inline]
    pub fn line(self) -> Line<'a> {
        Line::Insn(InsnLine {
            index: self.index,
            opcode: Some(self.opcode),
            rest: self.rest,
        })
    }

    /// Whether [`InsnLine::resumed`] may say something of this line: not without a `:` after
    /// the opcode (most lines).
    #[inline]
    pub fn may_resume(&self) -> bool {
        may_resume(self.rest)
    }

    /// Whether the bytes after `(xx) ` start with `key`: for a [`InsnLine::text_key`], whether
    /// the line has that key's text.
    #[inline]
    pub fn starts_with(&self, key: &[u8]) -> bool {
        self.rest
            .get(..key.len())
            .is_some_and(|start| same(start, key))
    }

    /// Whether this line's instruction text ([`InsnLine::text`]) is `text`. The text is a start
    /// of the line: a line that does not start with `text` is answered without a search.
    #[inline]
    pub fn text_is(&self, text: &[u8]) -> bool {
        self.starts_with(text) && insn_text(self.rest).0 == text
    }
}

/// Whether `rest`, what follows an instruction's `(xx) `, may hold another instruction's state
/// (`N: ...`, see [`InsnLine::resumed`]).
#[inline]
fn may_resume(rest: &[u8]) -> bool {
    memchr::memchr(b':', rest).is_some()
}

/// The start of an instruction line with its opcode, `N: (xx) `: what [`classify`] finds of
/// such a line (the same index, opcode and rest), parsed alone.
#[inline(always)]
pub fn insn_head(line: &[u8]) -> Option<InsnHead<'_>> {
    let (index, rest) = number(line)?;
    let (opcode, rest) = opcode(rest.strip_prefix(b": ")?)?;
    Some(InsnHead {
        index,
        opcode,
        rest,
    })
}

/// `(xx) ` at the start of `rest`: the opcode, and what follows.
#[inline]
fn opcode(rest: &[u8]) -> Option<(u8, &[u8])> {
    match rest {
        [b'(', h, l, b')', b' ', text @ ..] => Some((hex_digit(*h)? << 4 | hex_digit(*l)?, text)),
        _ => None,
    }
}

/// `N: ...` lines: instructions, states, `N: safe`.
#[inline]
fn classify_numbered(line: &[u8]) -> Line<'_> {
    let Some((index, rest)) = number(line) else {
        return Line::Other;
    };
    let Some(rest) = rest.strip_prefix(b": ") else {
        return Line::Other;
    };
    if let Some((opcode, text)) = opcode(rest) {
        return Line::Insn(InsnLine {
            index,
            opcode: Some(opcode),
            rest: text,
        });
    }
    if rest.starts_with(b"<invalid ") {
        return Line::Insn(InsnLine {
            index,
            opcode: None,
            rest,
        });
    }
    if rest == b"safe" {
        return Line::Safe { index };
    }
    Line::State { index }
}

/// Where an instruction's state starts, after its text.
pub(crate) static STATE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b" ; "));

/// `: `, after an instruction index (`N: R1=...`) or a frame (`frame1: `).
pub(crate) static COLON: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b": "));

/// The instruction text alone: cut before `  ; R1=...` state, before the `;` of an empty state
/// that ends the line (the kernel prints one after a kfunc call that changed no register: `call
/// bpf_rcu_read_lock#65401          ;`), and before a callee's state that follows a call on the
/// same line (`call bpf_loop#181 18: frame1: ...`).
fn insn_text(text: &[u8]) -> (&[u8], Option<u64>) {
    let mut end = STATE
        .find(text)
        .or_else(|| text.strip_suffix(b" ;").map(<[u8]>::len))
        .unwrap_or(text.len());
    let mut resumed = None;
    // ` N: ` where N is a number: the state of the first instruction of a callee. Found from
    // its `: `, rarer than the spaces before every word.
    let mut from = 0;
    let window = (end + 1).min(text.len());
    while let Some(i) = COLON.find(text.get(from..window).unwrap_or_default()) {
        let colon = from + i;
        let digits = text[..colon]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let start = colon - digits;
        if (1..=19).contains(&digits) && start > 0 && text[start - 1] == b' ' {
            end = start - 1;
            resumed = number(&text[start..]).map(|(n, _)| n);
            break;
        }
        from = colon + 1;
    }
    let text = text.get(..end).unwrap_or_default();
    let trimmed = text.iter().rposition(|b| *b != b' ').map_or(0, |i| i + 1);
    (text.get(..trimmed).unwrap_or_default(), resumed)
}

/// `; text @ file:line` and the older `; text`.
fn classify_annotation(line: &[u8]) -> Line<'_> {
    let Some(body) = line
        .strip_prefix(b"; ")
        .or_else(|| (line == b";").then_some(&b""[..]))
    else {
        return Line::Other;
    };
    static AT: std::sync::LazyLock<memchr::memmem::FinderRev<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::FinderRev::new(b" @ "));
    if let Some(at) = AT.rfind(body) {
        let (text, suffix) = (&body[..at], &body[at + 3..]);
        if let Some(colon) = memchr::memrchr(b':', suffix) {
            let (file, digits) = (&suffix[..colon], &suffix[colon + 1..]);
            if let Some((line_no, b"")) = number(digits)
                && !file.is_empty()
                && !file.contains(&b' ')
                && let Ok(line_no) = u32::try_from(line_no)
            {
                return Line::Annotation(Annotation {
                    text,
                    location: Some((file, line_no)),
                });
            }
        }
    }
    Line::Annotation(Annotation {
        text: body,
        location: None,
    })
}

/// Indented lines: liveness rows, or states under `caller:`/`callee:`.
fn classify_indented(line: &[u8]) -> Line<'_> {
    let start = line
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(line.len());
    let mut rest = &line[start..];
    // An optional SCC number column precedes the index in 6.17+ listings.
    if let Some((_, after)) = number(rest)
        && let Some(after) = after.strip_prefix(b" ")
    {
        let skip = after.iter().position(|b| *b != b' ').unwrap_or(after.len());
        if number(&after[skip..]).is_some_and(|(_, r)| r.starts_with(b": ")) {
            rest = &after[skip..];
        }
    }
    if let Some((index, after)) = number(rest)
        && let Some(after) = after.strip_prefix(b": ")
    {
        let mask_len = after
            .iter()
            .position(|b| !(*b == b'.' || b.is_ascii_digit()))
            .unwrap_or(after.len());
        if mask_len >= 10 && after[mask_len..].starts_with(b" (") {
            let insn = opcode(&after[mask_len + 1..]).map(|(opcode, rest)| InsnLine {
                index,
                opcode: Some(opcode),
                rest,
            });
            return Line::LiveRegsRow { index, insn };
        }
    }
    Line::Other
}

/// Lines that start with a word.
fn classify_word(line: &[u8]) -> Line<'_> {
    if let Some(rest) = line.strip_prefix(b"from ") {
        if let Some((from, rest)) = number(rest)
            && let Some(rest) = rest.strip_prefix(b" to ")
            && let Some((to, rest)) = number(rest)
            && (rest.starts_with(b":") || rest.starts_with(b" ("))
        {
            return Line::FromTo { from, to };
        }
        return Line::Other;
    }
    if let Some(rest) = line.strip_prefix(b"func#") {
        if let Some((func, rest)) = number(rest)
            && let Some(rest) = rest.strip_prefix(b" @")
            && let Some((start, _)) = number(rest)
        {
            return Line::FuncStart { func, start };
        }
        return Line::Other;
    }
    if let Some(rest) = line.strip_prefix(b"Validating ")
        && let Some(i) = memchr::memmem::rfind(rest, b" func#")
        && let Some((func, _)) = number(&rest[i + 6..])
    {
        let name = rest[..i].strip_suffix(b"()").unwrap_or(&rest[..i]);
        return Line::Validating { func, name };
    }
    if let Some(rest) = line.strip_prefix(b"Func#")
        && (memchr::memmem::find(line, b" is global").is_some()
            || memchr::memmem::find(line, b" is safe for any args").is_some())
        && let Some((func, rest)) = number(rest)
    {
        // `Func#2 ('f') is ...`
        let name = rest.strip_prefix(b" ('").and_then(|r| {
            let end = memchr::memmem::find(r, b"') ")?;
            Some(&r[..end])
        });
        return Line::GlobalFunc { func, name };
    }
    if line == b"caller:" || line == b"callee:" {
        return Line::CallerCallee;
    }
    if line.starts_with(b"mark_precise: ")
        || (line.starts_with(b"regs=") && crate::precise_index(line).is_some())
    {
        return Line::MarkPrecise;
    }
    if line.starts_with(b"Live regs before insn:") {
        return Line::LiveRegsHeader;
    }
    if is_summary(line) {
        return Line::Summary;
    }
    if is_stats(line) {
        return Line::Stats;
    }
    if line == b"returning from callee:"
        || (line.starts_with(b"to caller at ") && line.ends_with(b":"))
    {
        return Line::Returning;
    }
    if is_trace(line) {
        return Line::Trace;
    }
    if is_loader(line) {
        return Line::Loader;
    }
    Line::Other
}

/// Bookkeeping lines of the verifier's liveness, SCC and precision passes.
fn is_trace(line: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 7] = [
        b"SCC enter ",
        b"SCC exit ",
        b"SCC backedge ",
        b"last_idx ",
        b"propagating ",
        b"parent didn't have regs=",
        b"parent already had regs=",
    ];
    if PREFIXES.iter().any(|p| line.starts_with(p)) {
        return true;
    }
    // `frame 1: propagating r1,fp-8`
    if let Some(rest) = line.strip_prefix(b"frame ")
        && let Some((_, rest)) = number(rest)
        && rest.starts_with(b": propagating ")
    {
        return true;
    }
    // `(0) frame 0 insn 23 +live -8`, `(2,1) frame 0 insn N +written -8`, `(0) live stack update done`
    if let Some(rest) = line.strip_prefix(b"(") {
        let inner = rest.iter().position(|&b| b == b')').unwrap_or(0);
        let id = &rest[..inner];
        return inner > 0
            && id.iter().all(|b| b.is_ascii_digit() || *b == b',')
            && (rest[inner..].starts_with(b") frame ") || rest[inner..].starts_with(b") live "));
    }
    false
}

#[cfg(test)]
mod tests {
    /// The parts a decoded line borrows, as `map_parts` visits them.
    fn parts<'a>(line: super::Line<'a>) -> Vec<&'a [u8]> {
        let mut parts = Vec::new();
        line.map_parts(|p| {
            parts.push(p);
            p
        });
        parts
    }

    #[test]
    fn a_decoded_line_moves_onto_a_copy_of_its_bytes_whole() {
        // Every line of the fixtures, and its second half: each part `map_parts` visits is a
        // slice of the line, and moved to the same place in a copy, the line is the copy's,
        // borrowing nothing of the original.
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        let (mut moved, mut with_parts) = (0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let log = std::fs::read(entry.unwrap().path()).unwrap();
            for line in log.split(|&b| b == b'\n') {
                for line in [line, &line[line.len() / 2..]] {
                    let kind = super::classify(line);
                    let copy = line.to_vec();
                    let at =
                        |p: &[u8], of: &[u8]| p.as_ptr().addr().wrapping_sub(of.as_ptr().addr());
                    let onto = kind.map_parts(|p| &copy[at(p, line)..at(p, line) + p.len()]);
                    assert_eq!(onto, super::classify(&copy));
                    for part in parts(onto).into_iter().filter(|p| !p.is_empty()) {
                        assert!(at(part, &copy) + part.len() <= copy.len(), "{onto:?}");
                        with_parts += 1;
                    }
                    moved += 1;
                }
            }
        }
        assert!(moved > 10_000 && with_parts > 5_000, "{moved} {with_parts}");
    }

    #[test]
    fn detail_lines_are_precision_lines_liveness_rows_or_indented_others() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        let mut details = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let log = std::fs::read(entry.unwrap().path()).unwrap();
            for line in log.split(|&b| b == b'\n') {
                // Cut short too: a log cut at the top starts with the end of a line.
                for cut in [line, &line[line.len() / 2..]] {
                    if !is_detail(cut) {
                        continue;
                    }
                    details += 1;
                    let kind = classify(cut);
                    let text = String::from_utf8_lossy(cut);
                    match kind {
                        Line::MarkPrecise | Line::LiveRegsRow { .. } => {}
                        Line::Other => assert!(cut.starts_with(b" "), "{text}"),
                        other => panic!("{text}: {other:?}"),
                    }
                }
            }
        }
        assert!(details > 5_000, "{details}");
        for line in [&b"mark_precise:"[..], b"\t 1: R1=0", b"", b"mark_precise x"] {
            assert!(!is_detail(line));
        }
    }

    /// `insn_head` finds what `classify` finds of an instruction line with its opcode, and
    /// nothing in any other line: every line of the fixture logs, whole and cut short, and lines
    /// made to look almost like one.
    #[test]
    fn the_head_of_an_instruction_line_is_what_classify_finds() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        fn expected(line: &[u8]) -> Option<InsnHead<'_>> {
            match classify(line) {
                Line::Insn(InsnLine {
                    index,
                    opcode: Some(opcode),
                    rest,
                }) => Some(InsnHead {
                    index,
                    opcode,
                    rest,
                }),
                _ => None,
            }
        }
        let mut heads = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let log = std::fs::read(entry.unwrap().path()).unwrap();
            for line in log.split(|&b| b == b'\n') {
                for cut in [line, &line[line.len() / 2..], &line[..line.len().min(8)]] {
                    let head = insn_head(cut);
                    assert_eq!(head, expected(cut), "{}", String::from_utf8_lossy(cut));
                    // A line whose head says it cannot resume does not.
                    if let Some(head) = head {
                        assert!(head.may_resume() || insn_text(head.rest).1.is_none());
                        // What the head decodes is what `classify` decodes.
                        assert_eq!(head.line(), classify(cut));
                    }
                    heads += usize::from(head.is_some());
                }
            }
        }
        assert!(heads > 2_000, "{heads}");
        let near: [&[u8]; 11] = [
            b"12: (bF) r1 = r2",
            b"12: (b7)",
            b"12: (b7)r1 = 0",
            b"12: (g7) r1 = 0",
            b"12:  (b7) r1 = 0",
            b"12: (b) r1 = 0",
            b"1234567890123456789: (b7) r0 = 0",
            b"12345678901234567890: (b7) r0 = 0",
            b"99999999999999999999: (b7) r0 = 0",
            b"12: <invalid CO-RE relocation>",
            b": (b7) r0 = 0",
        ];
        for line in near {
            assert_eq!(
                insn_head(line),
                expected(line),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        let head = insn_head(b"12: (bF) r1 = r2").unwrap();
        assert_eq!(
            (head.index, head.opcode, head.rest),
            (12, 0xbf, &b"r1 = r2"[..])
        );
        assert_eq!(insn_head(b"12345678901234567890: (b7) r0 = 0"), None);
    }

    /// The fixture logs: those of `tests/fixtures/logs`, and the rejected programs' of
    /// `tests/fixtures/explain/logs` (kfunc calls, locks).
    fn fixture_logs() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        ["logs", "explain/logs"]
            .iter()
            .flat_map(|dir| std::fs::read_dir(root.join(dir)).unwrap())
            .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
            .collect()
    }

    #[test]
    fn an_instruction_line_has_the_text_it_is_cut_to() {
        // `text_is` against every start of each distinct instruction line of the fixtures and
        // of lines made to cut in odd places (texts that end in `;`, `:` or a space, `; ` right
        // after the text, ` ; ` and ` N: ` astride the text's end), and a few texts longer; then
        // `text_key` on the same lines.
        let mut rests = std::collections::BTreeSet::new();
        for log in fixture_logs() {
            for line in log.split(|&b| b == b'\n') {
                if let Some(head) = insn_head(line) {
                    rests.insert(head.rest.to_vec());
                }
            }
        }
        assert!(rests.len() > 500, "{}", rests.len());
        // A kfunc call that changed no register: an empty state, its `;` alone at the end.
        let empty_state = &b"call bpf_rcu_read_lock#65401          ;"[..];
        assert!(rests.contains(empty_state));
        let odd: [&[u8]; 15] = [
            b"r1 = 5: ; x",
            b"r1 = 1; R1=1",
            b"r1 = 5:  ; R1=1",
            b"r1 = 5:",
            b"x ; ; y",
            b"x ;  ; y",
            b"x ;",
            b"x ; ",
            b"r1 = 1 ;",
            b"call pc+5 8: R1=2",
            b"call pc+5 ; R1=1 8: R1=2",
            b"r1 = map[id:7][0]+0   ; R1=map_ptr()",
            b"r0 = 1   ",
            b"r0 = 1   ;",
            b"",
        ];
        rests.extend(odd.iter().map(|r| r.to_vec()));
        let (mut fast, mut checked) = (0, 0);
        for rest in &rests {
            let head = InsnHead {
                index: 0,
                opcode: 0xb7,
                rest,
            };
            let cut = insn_text(rest).0;
            let longer = [[rest, &b" "[..]].concat(), [rest, &b"x"[..]].concat()];
            let starts = (0..=rest.len()).map(|n| &rest[..n]);
            for text in starts.chain(longer.iter().map(|t| &t[..])) {
                let fits = head.text_is(text);
                assert_eq!(
                    fits,
                    cut == text,
                    "{:?} has text {:?}",
                    String::from_utf8_lossy(rest),
                    String::from_utf8_lossy(text)
                );
                fast += usize::from(fits && cut.len() < rest.len());
                checked += 1;
            }
        }
        assert!(checked > 10_000 && fast > 500, "{checked} {fast}");
        // A line with a key: any line that starts with the key has the text it settles, and the
        // same resumed path, whatever follows the key (a path, more ` ; `, nothing).
        let mut keys = 0;
        let tails: [&[u8]; 7] = [
            b"",
            b"x",
            b": ",
            b" ; ",
            b"1: R0=1",
            b"; 5: x",
            b"  ; y 7: z",
        ];
        for rest in &rests {
            let line = InsnLine {
                index: 0,
                opcode: Some(0xb7),
                rest,
            };
            let Some(key) = line.text_key() else {
                continue;
            };
            keys += 1;
            assert!(rest.starts_with(key));
            assert_eq!(insn_text(key).0, line.text());
            for tail in tails {
                let other = [key, tail].concat();
                let head = InsnHead {
                    index: 0,
                    opcode: 0xb7,
                    rest: &other,
                };
                assert!(head.starts_with(key));
                let other_text = insn_text(&other);
                assert_eq!(
                    other_text,
                    insn_text(rest),
                    "{:?}",
                    String::from_utf8_lossy(&other)
                );
            }
        }
        assert!(keys > 300, "{keys} keys");
        // No key for a line without an opcode, whatever its text.
        let rewrite = InsnLine {
            index: 0,
            opcode: None,
            rest: b"r0 = 1   ; R0=1",
        };
        assert_eq!(rewrite.text_key(), None);
    }

    #[test]
    fn bytes_are_compared_eight_at_a_time_as_one_by_one() {
        let bytes: Vec<u8> = (0..40u8).collect();
        for n in 0..=bytes.len() {
            let a = &bytes[..n];
            assert!(same(a, a));
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert!(!same(a, &b), "{n} {at}");
            }
            if n > 0 {
                assert!(!same(a, &a[..n - 1]));
            }
        }
    }

    /// The instruction text as first written: cut before ` ; ` (or a last ` ;`), then before the
    /// first word that is a number followed by `: `, looked for space by space.
    fn insn_text_by_spaces(text: &[u8]) -> &[u8] {
        let mut end = memchr::memmem::find(text, b" ; ")
            .or_else(|| text.ends_with(b" ;").then(|| text.len() - 2))
            .unwrap_or(text.len());
        let mut from = 0;
        while let Some(i) = memchr::memchr(b' ', text.get(from..end).unwrap_or_default()) {
            let at = from + i + 1;
            if let Some((_, rest)) = text.get(at..).and_then(number)
                && rest.starts_with(b": ")
            {
                end = at - 1;
                break;
            }
            from = at;
        }
        let text = text.get(..end).unwrap_or_default();
        let trimmed = text.iter().rposition(|b| *b != b' ').map_or(0, |i| i + 1);
        text.get(..trimmed).unwrap_or_default()
    }

    #[test]
    fn the_instruction_text_is_cut_where_it_was_cut_word_by_word() {
        let mut texts: Vec<Vec<u8>> = [
            &b"call pc+5 ; R1=1 8: R1=2"[..],
            b"call pc+5 8: R1=2",
            b"r1 = 5: ; x",
            b"r1 = 5:",
            b"r1 = 5: ",
            b"goto pc+1 R10: 7: R1=0",
            b"x 12345678901234567890: y",
            b"a 1: b 2: c",
            b": 1: ",
            b" 3: ",
            b"x ;",
            b" ;",
            b";",
            b"x  ;  ",
            b"",
        ]
        .iter()
        .map(|t| t.to_vec())
        .collect();
        for log in fixture_logs() {
            for line in log.split(|&b| b == b'\n') {
                // Every line's text after its first space, as an instruction's could be.
                if let Some(at) = memchr::memchr(b' ', line) {
                    texts.push(line[at + 1..].to_vec());
                }
            }
        }
        assert!(texts.len() > 5_000);
        for t in &texts {
            assert_eq!(
                insn_text(t).0,
                insn_text_by_spaces(t),
                "{}",
                String::from_utf8_lossy(t)
            );
        }
    }

    use super::*;

    fn insn(line: &[u8]) -> InsnLine<'_> {
        match classify(line) {
            Line::Insn(i) => i,
            other => panic!("not an instruction: {other:?}"),
        }
    }

    #[test]
    fn a_kfunc_call_with_an_empty_state_has_the_call_alone_as_its_text() {
        // The kernel's lines (6.18) after a kfunc call that changed no register.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/explain/logs/reject_rcu.tc_reject_rcu.l2.log");
        let log = std::fs::read(path).unwrap();
        let calls: Vec<&[u8]> = (log.split(|&b| b == b'\n'))
            .filter(|l| insn_head(l).is_some_and(|h| h.opcode == 0x85))
            .collect();
        assert_eq!(calls.len(), 2);
        for (line, text) in calls.into_iter().zip([
            &b"call bpf_rcu_read_lock#65401"[..],
            b"call bpf_rcu_read_unlock#65403",
        ]) {
            let insn = insn(line);
            assert!(line.ends_with(b" ;"));
            assert_eq!(insn.text(), text, "{}", String::from_utf8_lossy(line));
            assert!(insn_head(line).unwrap().text_is(text));
            assert!(matches!(insn.decode().op, crate::Op::Call(_)));
        }
    }

    #[test]
    fn the_state_an_instruction_line_resumes_at() {
        // Level 1: the path from the branch's next instruction was dropped; 8 resumes.
        let joined = insn(b"5: (15) if r0 == 0x0 goto pc+2 8: R0=0 R1=ctx() R10=fp0");
        assert_eq!(
            (joined.text(), joined.resumed()),
            (&b"if r0 == 0x0 goto pc+2"[..], Some(8))
        );
        let cases: [(&[u8], Option<u64>); 4] = [
            (b"5: (15) if r0 == 0x0 goto pc+2        ; R0=0", None),
            (b"5: (15) if r0 == 0x0 goto pc+2", None),
            (b"7: (85) call pc+10 18: frame1: R1=ctx() R10=fp0", Some(18)),
            (b"9: <invalid CO-RE relocation> 3: x", None),
        ];
        for (line, resumed) in cases {
            assert_eq!(
                insn(line).resumed(),
                resumed,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn instruction_lines() {
        let i = insn(b"0: (bf) r6 = r1");
        assert_eq!(
            (i.index, i.opcode, i.text()),
            (0, Some(0xbf), &b"r6 = r1"[..])
        );
        let i = insn(b"2: (61) r2 = *(u32 *)(r1 +4)         ; R1=ctx() R2_w=pkt_end()");
        assert_eq!(i.text(), b"r2 = *(u32 *)(r1 +4)");
        let i = insn(b"15: (85) call bpf_loop#181 18: frame1: R1=scalar() R10=fp0");
        assert_eq!((i.index, i.text()), (15, &b"call bpf_loop#181"[..]));
        let i = insn(b"7: (85) call pc+5");
        assert_eq!(i.text(), b"call pc+5");
        let i = insn(b"4: (18) r1 = map[id:7][0]+0");
        assert_eq!(i.text(), b"r1 = map[id:7][0]+0");
        let i = insn(b"21: <invalid CO-RE relocation>");
        assert_eq!((i.index, i.opcode), (21, None));
    }

    #[test]
    fn numbered_non_instructions() {
        assert_eq!(classify(b"12: safe"), Line::Safe { index: 12 });
        assert_eq!(classify(b"0: R1=ctx() R10=fp0"), Line::State { index: 0 });
        assert_eq!(
            classify(b"18: frame1: R1=scalar() R10=fp0"),
            Line::State { index: 18 }
        );
        assert_eq!(classify(b"99999999999999999999: (bf) r1 = r2"), Line::Other);
        assert_eq!(classify(b"12:(bf)"), Line::Other);
    }

    #[test]
    fn paths_functions_and_passes() {
        assert_eq!(
            classify(b"from 12 to 15: R0=0 R10=fp0"),
            Line::FromTo { from: 12, to: 15 }
        );
        assert_eq!(
            classify(b"from 2 to 5 (speculative execution): R1=1"),
            Line::FromTo { from: 2, to: 5 }
        );
        assert_eq!(
            classify(b"from 2 to 5: safe"),
            Line::FromTo { from: 2, to: 5 }
        );
        assert_eq!(classify(b"from somewhere"), Line::Other);
        assert_eq!(
            classify(b"func#1 @14"),
            Line::FuncStart { func: 1, start: 14 }
        );
        assert_eq!(
            classify(b"Validating f() func#2..."),
            Line::Validating {
                func: 2,
                name: b"f"
            }
        );
        assert_eq!(
            classify(b"Func#2 ('f') is global and assumed valid."),
            Line::GlobalFunc {
                func: 2,
                name: Some(b"f")
            }
        );
        assert_eq!(
            classify(b"Func#1 ('g') is safe for any args that match its prototype"),
            Line::GlobalFunc {
                func: 1,
                name: Some(b"g")
            }
        );
        assert_eq!(classify(b"caller:"), Line::CallerCallee);
        assert_eq!(classify(b"callee:"), Line::CallerCallee);
        assert_eq!(classify(b" frame1: R1=ctx()"), Line::Other);
    }

    #[test]
    fn the_map_a_register_holds_after_an_instruction() {
        let map_of = |line: &'static [u8], reg| match classify(line) {
            Line::Insn(insn) => insn.map_of(reg),
            other => panic!("{other:?}"),
        };
        let ld =
            b"20: (18) r1 = 0xffff888102b7e000      ; R1=map_ptr(map=proto_counters,ks=4,vs=16)";
        assert_eq!(map_of(ld, 1), Some(&b"proto_counters"[..]));
        assert_eq!(map_of(ld, 2), None);
        let value =
            b"3: (18) r2 = 0xffffc90000e8e000      ; R2_w=map_value(map=verifier.rodata,ks=4,vs=8)";
        assert_eq!(map_of(value, 2), Some(&b"verifier.rodata"[..]));
        let framed = b"7: (18) r1 = 0xffff888102b7e000 ; frame1: R1_w=map_ptr(map=seen,ks=4,vs=4)";
        assert_eq!(map_of(framed, 1), Some(&b"seen"[..]));
        // No state, or a state without a map.
        assert_eq!(map_of(b"20: (18) r1 = 0xffff888102b7e000", 1), None);
        assert_eq!(map_of(b"0: (b7) r0 = 1 ; R0_w=1", 0), None);
    }

    #[test]
    fn the_offset_into_a_map_value_a_register_holds_after_an_instruction() {
        let off = |line: &'static [u8], reg| match classify(line) {
            Line::Insn(insn) => insn.map_value_off(reg),
            other => panic!("{other:?}"),
        };
        // Linux 6.18 prints `off=` only when not 0; 6.1 always, before the sizes.
        let at_25 = b"10: (18) r1 = 0xffff888104805951      ; R1=map_value(map=iters.rodata,ks=4,vs=906,off=25) refs=1";
        assert_eq!(off(at_25, 1), Some(25));
        let at_0 = b"10: (18) r1 = 0xffff88812a8fe938      ; R1=map_value(map=iters.rodata,ks=4,vs=906) refs=1";
        assert_eq!(off(at_0, 1), Some(0));
        let old = b"1: (18) r2 = 0xffa00000014b0000       ; R2_w=map_value(off=0,ks=4,vs=4,imm=0)";
        assert_eq!(off(old, 2), Some(0));
        // Another register, another kind of value, an offset not constant, no state.
        assert_eq!(off(at_25, 2), None);
        let ptr =
            b"20: (18) r1 = 0xffff888102b7e000      ; R1=map_ptr(map=proto_counters,ks=4,vs=16)";
        assert_eq!(off(ptr, 1), None);
        let var = b"5: (0f) r1 += r2 ; R1_w=map_value(map=m,ks=4,vs=8,var_off=(0x0; 0x4))";
        assert_eq!(off(var, 1), None);
        assert_eq!(off(b"10: (18) r1 = 0xffff888104805951", 1), None);
    }

    #[test]
    fn the_ids_of_the_registers_after_an_instruction() {
        let ids = |line: &'static [u8]| match classify(line) {
            Line::Insn(insn) => insn.state_ids().collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        // From a selftests log of Linux 6.18: a copy and its original share id=1.
        assert_eq!(
            ids(b"5: (bf) r2 = r1                       ; R1=scalar(id=1,smin=smin32=0,smax=umax=smax32=umax32=1,var_off=(0x0; 0x1)) R2=scalar(id=1,smin=smin32=0,smax=umax=smax32=umax32=1,var_off=(0x0; 0x1))"),
            [(1, Some(1)), (2, Some(1))]
        );
        // Older kernels mark a register written with `_w`.
        assert_eq!(
            ids(b"4: (bf) r1 = r6 ; R1_w=scalar(id=3) R6_w=scalar(id=3)"),
            [(1, Some(3)), (6, Some(3))]
        );
        assert_eq!(
            ids(b"7: (15) if r1 == 0x0 goto pc+1 ; frame1: R1_w=mem(sz=4) R10=fp0"),
            [(1, None), (10, None)]
        );
        assert_eq!(ids(b"20: (18) r1 = 0xffff888102b7e000"), []);
        assert_eq!(ids(b"3: (07) r1 += -8 ; R11=1 Rx=2 R1"), []);
    }

    #[test]
    fn backtracking_and_liveness_are_not_instructions() {
        assert_eq!(
            classify(b"mark_precise: frame0: regs=r1 stack= before 9: (b7) r4 = 0"),
            Line::MarkPrecise
        );
        // Linux 5.10 and 6.1 print it without its prefix.
        assert_eq!(
            classify(b"regs=40 stack=0 before 17: (67) r6 <<= 2"),
            Line::MarkPrecise
        );
        assert_eq!(classify(b"regs=40 stack=0"), Line::Other);
        assert_eq!(classify(b"Live regs before insn:"), Line::LiveRegsHeader);
        // A row lists its instruction as an instruction line prints it: the same decoding.
        let row = |line: &'static [u8]| match classify(line) {
            Line::LiveRegsRow { index, insn } => (index, insn.map(|i| (i.opcode, i.decode()))),
            other => panic!("{other:?}"),
        };
        let listed = |text: &'static [u8]| PrintedInsn::decode(text);
        assert_eq!(
            row(b"      0: .1........ (bf) r6 = r1"),
            (0, Some((Some(0xbf), listed(b"r6 = r1"))))
        );
        assert_eq!(
            row(b"     12: .12....... (85) call pc+18"),
            (12, Some((Some(0x85), listed(b"call pc+18"))))
        );
        assert_eq!(
            row(b"  1  12: .12....... (85) call pc+18"),
            (12, Some((Some(0x85), listed(b"call pc+18"))))
        );
        assert_eq!(
            row(b"     20: ..2....78. (18) r1 = 0xffff888102b7e000"),
            (20, Some((Some(0x18), listed(b"r1 = 0xffff888102b7e000"))))
        );
        assert_eq!(row(b"     12: .12....... (zz) call pc+18"), (12, None));
    }

    #[test]
    fn annotations_with_and_without_location() {
        let Line::Annotation(a) = classify(b"; int x = 1; @ prog.c:42") else {
            panic!()
        };
        assert_eq!(
            (a.text, a.location),
            (&b"int x = 1;"[..], Some((&b"prog.c"[..], 42)))
        );
        let Line::Annotation(a) = classify(b";  @ f.c:21") else {
            panic!()
        };
        assert_eq!((a.text, a.location), (&b""[..], Some((&b"f.c"[..], 21))));
        let Line::Annotation(a) = classify(b"; return x; // @ not a location") else {
            panic!()
        };
        assert_eq!(
            (a.text, a.location),
            (&b"return x; // @ not a location"[..], None)
        );
        let Line::Annotation(a) = classify(b"; if (a @ b:1 == c) @ f.c:3") else {
            panic!()
        };
        assert_eq!(a.location, Some((&b"f.c"[..], 3)));
    }

    #[test]
    fn bookkeeping_traces_and_returns() {
        for line in [
            &b"SCC enter (40,1)"[..],
            b"SCC exit (40,1)",
            b"SCC backedge (2)",
            b"(0) frame 0 insn 23 +live -8,-16",
            b"(2,1) frame 0 insn 12 +written -8",
            b"(0) live stack update done in 2 iterations",
            b"frame 1: propagating r1,fp-8",
            b"last_idx 11 first_idx 11",
            // Linux 5.10 and 6.1.
            b"parent didn't have regs=1 stack=0 marks",
            b"parent already had regs=40 stack=0 marks",
        ] {
            assert_eq!(
                classify(line),
                Line::Trace,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
        assert_eq!(classify(b"(0) something else"), Line::Other);
        assert_eq!(classify(b"returning from callee:"), Line::Returning);
        assert_eq!(classify(b"to caller at 41:"), Line::Returning);
        assert_eq!(classify(b"verification time 366 usec"), Line::Stats);
        assert_eq!(classify(b"stack depth 8+0"), Line::Stats);
        // libbpf's own messages are the loader's, whatever they say.
        for line in [
            &b"libbpf: prog 'xdp_a': BPF program load failed: Permission denied"[..],
            b"libbpf: prog 'xdp_a': failed to load: -13",
        ] {
            assert!(is_loader(line));
            assert_eq!(classify(line), Line::Loader);
        }
        assert_eq!(classify(b"libbpf:"), Line::Other);
    }

    #[test]
    fn summary_and_unknown_lines_including_non_utf8() {
        assert_eq!(
            classify(b"processed 16 insns (limit 1000000) max_states_per_insn 0 total_states 1"),
            Line::Summary
        );
        assert_eq!(
            classify(b"R1 unbounded memory access, make sure to bounds check any such access"),
            Line::Other
        );
        assert_eq!(classify(b"\xff\xfe garbage"), Line::Other);
        assert_eq!(classify(b""), Line::Blank);
    }

    #[test]
    fn a_global_functions_line_names_it() {
        assert_eq!(
            global_function_name(
                b"Global function xdp_named_first() doesn't return scalar. Only those are supported."
            ),
            Some(&b"xdp_named_first"[..])
        );
        assert_eq!(
            global_function_name(b"Global function f() with 6 > 5 args. Buggy compiler."),
            Some(&b"f"[..])
        );
        assert_eq!(
            global_function_name(b"Global functions need valid BTF"),
            None
        );
        assert_eq!(global_function_name(b"Global function () x"), None);
        assert_eq!(global_function_name(b"Global function f(int) x"), None);
    }
}
