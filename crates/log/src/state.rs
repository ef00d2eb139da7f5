//! Register and stack states as the verifier prints them, decoded: each item with its frame, and
//! the frame the verifier is in line by line. The report's state panel shows them, the frame the
//! instruction runs in first.
//!
//! What the kernel prints (`print_verifier_state`, `print_insn_state` in
//! `kernel/bpf/log.c`): a state is space-separated `name=value` items (`R1=ctx()`,
//! `fp-8_w=mmmmmmmm`, `refs=2`), values may hold spaces inside parentheses
//! (`var_off=(0x0; 0xff)`), and a frame other than 0 is named first (`frame1: R1=...`). States
//! follow an instruction's text (`N: (bf) r1 = r6 ; R1_w=ctx()`), stand alone (`N: R1=...`,
//! `from X to Y: R1=...`) or are indented under `caller:`, `callee:`, `returning from callee:`
//! and `to caller at N:`. The liveness marks after a name (`_w`, `_r`, `_rw`, `_D`) are dropped.

use crate::Line;
use crate::classify::{COLON, STATE};
use memchr::memmem::Finder;

/// One register or stack slot of a printed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegValue<'a> {
    /// The frame it belongs to.
    pub frame: u32,
    /// `R1`, `fp-8`, `refs`: its name without liveness marks.
    pub name: &'a str,
    /// What the verifier knows of it.
    pub value: &'a str,
    /// Where it sorts: registers by number, then stack slots from the frame pointer down, then
    /// anything else.
    pub order: u32,
}

/// A state printed on one log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State<'a> {
    /// The frame printed last: the frame the verifier is in after this line.
    pub frame: u32,
    /// Whether it lists every live register of its frame (a state of its own, not the changes
    /// an instruction made).
    pub full: bool,
    /// Its items, in printed order.
    pub regs: Vec<RegValue<'a>>,
}

/// The state printed on `text` (one log line, classified as `line`), if any.
pub fn decode<'a>(text: &'a str, line: &Line<'_>) -> Option<State<'a>> {
    // The text after the first `sep`, found by a searcher built once.
    let after = |sep: &Finder<'_>| {
        sep.find(text.as_bytes())
            .map(|at| &text[at + sep.needle().len()..])
    };
    let (printed, full) = match line {
        Line::Insn(insn) if insn.opcode.is_some() => (after(&STATE)?, false),
        Line::State { .. } | Line::FromTo { .. } => (after(&COLON)?, true),
        Line::Other if text.starts_with([' ', '\t']) => (text, true),
        _ => return None,
    };
    decode_printed(printed, full)
}

/// The state `printed` (what follows `N: ` or ` ; ` on a line: `frame1: R1=ctx() R10=fp0`);
/// `full`: see [`State::full`].
pub fn decode_printed(printed: &str, full: bool) -> Option<State<'_>> {
    let mut frame = 0;
    let mut regs = Vec::new();
    for item in items(printed) {
        if let Some(n) = item
            .strip_prefix("frame")
            .and_then(|n| n.strip_suffix(':'))
            .and_then(|n| n.parse().ok())
        {
            frame = n;
            continue;
        }
        let Some((name, value)) = item.split_once('=') else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        let name = without_liveness(name);
        regs.push(RegValue {
            frame,
            name,
            value,
            order: order(name),
        });
    }
    if regs.is_empty() {
        return None;
    }
    Some(State { frame, full, regs })
}

/// A printed value read the same whatever the kernel's wording: 5.10's `inv` scalars
/// (`inv2`, `inv(id=0,umax_value=255)`) and 6.1's and later `scalar` (`2`,
/// `scalar(umax=255)`), `_value` and `s32_`/`u32_` names as the later `umax`, `smin32`,
/// the fields a later kernel leaves out when they are 0 (`id=0`, `off=0`, `imm=0`) left out,
/// one field of each name of a compound (`smin=smin32=0`), numbers as the register's bits
/// (`r=-2` and `r=0xfffffffffffffffe` alike), and the precision mark (`P4`, `invP`,
/// `Pscalar(...)`) dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value<'a> {
    /// A stack slot's marks before the value spilled into it (`????` of `????0`), or all of
    /// them when nothing is spilled (`mmmmmmmm`); empty for a register.
    pub marks: &'a str,
    /// `scalar`, a pointer's type (`ctx`, `map_value`, `pkt`), `fp` for a pointer into the
    /// stack (`fp-8`); empty for a slot of marks alone.
    pub kind: &'a str,
    /// The number a scalar is known to be (`2`, `0xffffffff`, `inv-1`), or a stack pointer's
    /// offset (`fp-8`: -8).
    pub known: Option<i64>,
    /// The fields in parentheses, each name as Linux 6.1 and later print it, in printed order.
    pub fields: Vec<(&'a str, Field<'a>)>,
}

/// The value of a field of a [`Value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field<'a> {
    /// A number, decimal or hexadecimal, as a signed 64-bit register holds it (32-bit for the
    /// `*32` fields): `-1` for `0xffffffffffffffff`.
    Number(i64),
    /// Anything else, as printed (`(0x0; 0xff)`, a map's name).
    Text(&'a str),
}

impl<'a> Value<'a> {
    /// Reads a register's value as printed after `R1=` in a state.
    pub fn read(printed: &'a str) -> Value<'a> {
        let (head, inner) = match printed.split_once('(') {
            Some((head, rest)) if rest.ends_with(')') => (head, Some(&rest[..rest.len() - 1])),
            _ => (printed, None),
        };
        let head = head.strip_prefix("inv").map_or(head, |rest| {
            // `inv`, `invP`, `inv2`, `invP4`, `inv-1`: a scalar; not `invalid...`.
            let rest = rest.strip_prefix('P').unwrap_or(rest);
            if rest.is_empty() || number(rest).is_some() {
                rest
            } else {
                head
            }
        });
        let head = match head.strip_prefix('P') {
            Some(rest) if rest == "scalar" || rest.is_empty() || number(rest).is_some() => rest,
            _ => head,
        };
        let (kind, known) = if head.is_empty() {
            ("scalar", None)
        } else if let Some(n) = number(head) {
            ("scalar", Some(n))
        } else if let Some(n) = head.strip_prefix("fp").and_then(number) {
            ("fp", Some(n))
        } else if head.starts_with("fp[") && head.ends_with(']') {
            // A pointer into the stack of frame N (`fp[0](off=-36,...)`, 6.18).
            ("fp", None)
        } else {
            (head, None)
        };
        let mut fields = Vec::new();
        for item in inner.into_iter().flat_map(fields_of) {
            let mut names: Vec<&str> = item.split('=').collect();
            let Some(value) = names.pop() else { continue };
            for name in names {
                let name = field_name(name);
                let value = match number(value) {
                    // The 32-bit bounds as a 32-bit register holds them.
                    Some(n) if name.ends_with("32") => Field::Number(i64::from(n as u32 as i32)),
                    Some(n) => Field::Number(n),
                    None => Field::Text(value),
                };
                if value == Field::Number(0) && matches!(name, "id" | "off" | "imm") {
                    continue;
                }
                fields.push((name, value));
            }
        }
        Value {
            marks: "",
            kind,
            known,
            fields,
        }
    }

    /// Reads a stack slot's value as printed after `fp-8=`: its marks (`?` invalid, `m` misc,
    /// `0` zero), then the value of a register spilled into it, if any (`????0`,
    /// `0000scalar(...)`, `fp-8=map_value(...)` on 6.1 and later, `inv` on 5.10).
    pub fn read_slot(printed: &'a str) -> Value<'a> {
        let run = printed
            .bytes()
            .take_while(|b| matches!(b, b'?' | b'm' | b'0'))
            .count();
        let marks = if run == printed.len() && run == 8 {
            run
        } else {
            // A spill is at least one byte: the marks are fewer than 8, and a scalar follows.
            let scalar = |rest: &str| {
                rest.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == 'P')
                    || rest.starts_with("scalar")
                    || rest.starts_with("inv")
            };
            (0..=run.min(7))
                .rev()
                .find(|&n| scalar(&printed[n..]))
                .unwrap_or(0)
        };
        if marks == printed.len() {
            return Value {
                marks: printed,
                kind: "",
                known: None,
                fields: Vec::new(),
            };
        }
        Value {
            marks: &printed[..marks],
            ..Value::read(&printed[marks..])
        }
    }

    /// Reads the value of the item `name` of a state: a slot's ([`read_slot`](Self::read_slot))
    /// or a register's ([`read`](Self::read)).
    pub fn of(name: &str, printed: &'a str) -> Value<'a> {
        if name.starts_with("fp-") {
            Value::read_slot(printed)
        } else {
            Value::read(printed)
        }
    }

    /// The field `name` (as 6.1 and later name it), if printed.
    pub fn field(&self, name: &str) -> Option<Field<'a>> {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// A tnum as the verifier prints one (`var_off=(0x0; 0xff)`, 5.10's and 6.1's return range
/// `(0x0; 0x1)`): `(value, mask)`, the bits known and those not.
pub fn tnum(text: &str) -> Option<(u64, u64)> {
    let (value, mask) = text
        .strip_prefix('(')?
        .strip_suffix(')')?
        .split_once("; ")?;
    let hex = |t: &str| u64::from_str_radix(t.strip_prefix("0x")?, 16).ok();
    Some((hex(value)?, hex(mask)?))
}

/// The numbers a tnum holds, when they are every number from its least to its greatest (its
/// unknown bits the lowest, none of them known set): `(0x0; 0x1)` is `[0, 1]`.
pub fn tnum_interval((value, mask): (u64, u64)) -> Option<(u64, u64)> {
    (mask.checked_add(1).is_none_or(u64::is_power_of_two) && value & mask == 0)
        .then_some((value, value | mask))
}

/// The fields inside a value's parentheses: split at commas outside parentheses.
fn fields_of(inner: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    inner
        .split(move |c: char| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            c == ',' && depth <= 0
        })
        .filter(|item| !item.is_empty())
}

/// A field's name as Linux 6.1 and later print it: `umax_value` → `umax`, `s32_min_value` and
/// `s32_min` → `smin32`.
fn field_name(name: &str) -> &str {
    match name.strip_suffix("_value").unwrap_or(name) {
        "s32_min" => "smin32",
        "s32_max" => "smax32",
        "u32_min" => "umin32",
        "u32_max" => "umax32",
        name => name,
    }
}

/// A number as the verifier prints one: decimal, possibly negative, or `0x` hexadecimal; as a
/// signed 64-bit register holds it.
fn number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let n = match digits.strip_prefix("0x") {
        Some(hex) if !hex.is_empty() && hex.len() <= 16 => u64::from_str_radix(hex, 16).ok()?,
        Some(_) => return None,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse().ok()?
        }
        None => return None,
    };
    Some(if negative {
        (n as i64).wrapping_neg()
    } else {
        n as i64
    })
}

/// The items of a state: split at spaces outside parentheses, empty items left out. Read from
/// one of those three bytes to the next (they are ASCII, so every cut is between characters).
fn items(state: &str) -> impl Iterator<Item = &str> {
    let bytes = state.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    std::iter::from_fn(move || {
        while start < bytes.len() {
            // Only parentheses and spaces matter: the bytes between them are passed over by a
            // search for the next of the three.
            let mut end = start;
            loop {
                let Some(at) = memchr::memchr3(b'(', b')', b' ', &bytes[end..]) else {
                    end = bytes.len();
                    break;
                };
                end += at;
                match bytes[end] {
                    b'(' => depth += 1,
                    b')' => depth -= 1,
                    _ if depth <= 0 => break,
                    _ => {}
                }
                end += 1;
            }
            let item = &state[start..end];
            start = end + 1;
            if !item.is_empty() {
                return Some(item);
            }
        }
        None
    })
}

/// `R0_w` → `R0`, `fp-8_rw` → `fp-8`, `R6_D` → `R6`.
fn without_liveness(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((base, marks))
            if !base.is_empty()
                && !marks.is_empty()
                && marks.bytes().all(|b| matches!(b, b'r' | b'w' | b'D')) =>
        {
            base
        }
        _ => name,
    }
}

/// Where a name sorts (see [`RegValue::order`]).
fn order(name: &str) -> u32 {
    if let Some(n) = name.strip_prefix('R').and_then(|n| n.parse::<u32>().ok()) {
        return n.min(999);
    }
    if let Some(n) = name.strip_prefix("fp-").and_then(|n| n.parse::<u32>().ok()) {
        return 1000u32.saturating_add(n).min(999_999);
    }
    1_000_000
}

/// The frame the verifier is in, line by line: the frame of the last state printed, back to 0
/// where a pass starts (`Validating ...`).
#[derive(Debug, Default)]
pub struct Frames {
    current: u32,
}

impl Frames {
    /// The frame after `line`, whose decoded state is `state`.
    pub fn after(&mut self, line: &Line<'_>, state: Option<&State<'_>>) -> u32 {
        if let Line::Validating { .. } = line {
            self.current = 0;
        }
        if let Some(state) = state {
            self.current = state.frame;
        }
        self.current
    }
}

/// The opcode of `exit` (`BPF_JMP | BPF_EXIT`).
const EXIT: u8 = 0x95;

/// Where a path resumes that no `from X to Y:` line heads. Linux 5.10 at log level 2 prints the
/// state of the instruction a path resumes at (`51: R0=inv5 R1=...`) right after the path
/// before it ended (`N: (95) exit` out of the entry frame, `N: safe`, `from X to Y: safe`),
/// where 6.1 and later print `from X to Y:` first (5.10 does at level 1). The branch `X` is not
/// printed. Fed every line of a log, in order; a log read in parts joins as one pass would
/// read it ([`join`](Self::join)).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Resumes {
    /// The last path ended, and nothing has resumed yet.
    ended: bool,
    /// A line that says whether a path ended or goes on was seen.
    decided: bool,
    /// The first such line was the state of instruction N: where a path resumes, if the lines
    /// before ended one.
    leading: Option<u64>,
}

impl Resumes {
    /// After an instruction line of `opcode` (`None`: libbpf's `<invalid ...>` rewrite).
    #[inline]
    pub fn insn(&mut self, opcode: Option<u8>) {
        self.decided = true;
        self.ended = opcode == Some(EXIT);
    }

    /// After `line`, whose text is `text`: the instruction a path resumes at, when it is the
    /// state printed where a path resumes.
    #[inline]
    pub fn after(&mut self, line: &Line<'_>, text: &[u8]) -> Option<u64> {
        let (ended, resumed) = match *line {
            Line::Insn(insn) => {
                self.insn(insn.opcode);
                return None;
            }
            Line::Safe { .. } => (true, None),
            Line::FromTo { .. } => (text.ends_with(b": safe"), None),
            Line::State { index } => (false, self.ended.then_some(index)),
            // A return to the caller goes on in the caller; a pass starts anew.
            Line::Returning | Line::CallerCallee | Line::Validating { .. } => (false, None),
            _ => return None,
        };
        if !self.decided {
            self.decided = true;
            if let Line::State { index } = *line {
                self.leading = Some(index);
            }
        }
        self.ended = ended;
        resumed
    }

    /// These lines followed by `later`, read from a fresh start: the instruction a path resumes
    /// at that neither saw alone (`later` starts with the state a path resumes at, after these
    /// ended one).
    pub fn join(&mut self, later: Resumes) -> Option<u64> {
        let resumed = later.leading.filter(|_| self.ended);
        if !self.decided {
            self.leading = later.leading;
        }
        if later.decided {
            self.decided = true;
            self.ended = later.ended;
        }
        resumed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify;

    fn state(text: &str) -> Option<State<'_>> {
        decode(text, &classify(text.as_bytes()))
    }

    fn names<'a>(s: &State<'a>) -> Vec<(u32, &'a str, &'a str)> {
        s.regs.iter().map(|r| (r.frame, r.name, r.value)).collect()
    }

    #[test]
    fn an_instructions_state_is_its_changes_in_its_frame() {
        let s = state("35: (bf) r3 = r2                      ; frame1: R2=scalar(id=3,var_off=(0x0; 0xffff)) R3_w=1").unwrap();
        assert_eq!(s.frame, 1);
        assert!(!s.full);
        assert_eq!(
            names(&s),
            [
                (1, "R2", "scalar(id=3,var_off=(0x0; 0xffff))"),
                (1, "R3", "1")
            ]
        );
        assert_eq!(state("38: (79) r4 = *(u64 *)(r1 +8)"), None);
        assert_eq!(state("27: (85) call pc+7"), None);
    }

    #[test]
    fn states_of_their_own_are_full() {
        let s = state("from 30 to 35: frame1: R1=ctx() R10=fp0 fp-8_w=mmmmmmmm").unwrap();
        assert!(s.full);
        assert_eq!(s.frame, 1);
        assert_eq!(s.regs[2].name, "fp-8");
        assert_eq!(s.regs[2].order, 1008);
        let s = state(" R6=scalar(id=3) R10=fp0").unwrap();
        assert!(s.full);
        assert_eq!(s.frame, 0);
        assert_eq!(s.regs[1].order, 10);
        let s = state("12: R1=ctx() R10=fp0").unwrap();
        assert!(s.full);
        assert_eq!(state("12: safe"), None);
        assert_eq!(state("caller:"), None);
        assert_eq!(state("R1 invalid mem access 'map_value_or_null'"), None);
    }

    #[test]
    fn values_read_alike_on_every_kernel() {
        // 5.10, 6.1 and 6.18 print the same scalar after a 32-bit load.
        let old = Value::read("inv(id=0,umax_value=4294967295,var_off=(0x0; 0xffffffff))");
        let new = Value::read("scalar(smin=0,smax=umax=0xffffffff,var_off=(0x0; 0xffffffff))");
        assert_eq!((old.kind, new.kind), ("scalar", "scalar"));
        assert_eq!(old.field("umax"), new.field("umax"));
        assert_eq!(old.field("var_off"), Some(Field::Text("(0x0; 0xffffffff)")));
        assert_eq!(new.field("smax"), Some(Field::Number(0xffff_ffff)));
        assert_eq!(old.field("id"), None);
        let six = Value::read("scalar(smin32=0,s32_max=7,u32_max_value=7)");
        assert_eq!(six.field("smax32"), Some(Field::Number(7)));
        assert_eq!(six.field("umax32"), Some(Field::Number(7)));
        // Constants, precise or not.
        for (text, n) in [
            ("inv2", 2),
            ("2", 2),
            ("invP4", 4),
            ("P4", 4),
            ("inv-1", -1),
            ("0xfffe0000", 0xfffe_0000),
        ] {
            let v = Value::read(text);
            assert_eq!((v.kind, v.known), ("scalar", Some(n)), "{text}");
        }
        assert_eq!(Value::read("invP").kind, "scalar");
        assert_eq!(
            Value::read("Pscalar(umax=3)").field("umax"),
            Some(Field::Number(3))
        );
        // Pointers: the zeros 6.18 leaves out are left out.
        assert_eq!(Value::read("ctx(id=0,off=0,imm=0)"), Value::read("ctx()"));
        assert_eq!(
            Value::read("map_ptr(id=0,off=0,ks=4,vs=8,imm=0)").fields,
            [("ks", Field::Number(4)), ("vs", Field::Number(8))]
        );
        assert_eq!(
            Value::read("pkt(id=0,off=14,r=14,imm=0)").field("off"),
            Some(Field::Number(14))
        );
        assert_eq!(Value::read("fp[0](off=-36)").kind, "fp");
        let fp = Value::read("fp-8");
        assert_eq!((fp.kind, fp.known), ("fp", Some(-8)));
        // The same bits, printed signed or not.
        assert_eq!(
            Value::read("pkt(id=0,off=14,r=-2,imm=0)").field("r"),
            Value::read("pkt(off=14,r=0xfffffffffffffffe)").field("r")
        );
        assert_eq!(
            Value::read("inv(u32_min_value=-4095)").field("umin32"),
            Value::read("scalar(umin32=0xfffff001)").field("umin32")
        );
        // Stack slots: marks, then what was spilled.
        let all = Value::read_slot("mmmmmmmm");
        assert_eq!((all.marks, all.kind), ("mmmmmmmm", ""));
        let part = Value::read_slot("????0");
        assert_eq!(
            (part.marks, part.kind, part.known),
            ("????", "scalar", Some(0))
        );
        let zero = Value::of("fp-8", "0");
        assert_eq!((zero.marks, zero.known), ("", Some(0)));
        let spill = Value::read_slot("0000scalar(id=3,umax=0xffffffff)");
        assert_eq!(
            (spill.marks, spill.field("umax")),
            ("0000", Some(Field::Number(0xffff_ffff)))
        );
        assert_eq!(
            Value::read_slot("map_value(map=m,ks=4,vs=8)").kind,
            "map_value"
        );
        assert_eq!(Value::read_slot("inv").kind, "scalar");
        assert_eq!(Value::of("R1", "mmmm").marks, "");
        assert_eq!(Value::read("invalid").kind, "invalid");
    }

    #[test]
    fn tnums_and_the_intervals_they_are() {
        assert_eq!(tnum("(0x0; 0x1)"), Some((0, 1)));
        assert_eq!(tnum("(0x2; 0x0)"), Some((2, 0)));
        assert_eq!(tnum("[0, 1]"), None);
        assert_eq!(tnum_interval((0, 1)), Some((0, 1)));
        assert_eq!(tnum_interval((2, 0)), Some((2, 2)));
        assert_eq!(tnum_interval((0x10000, 3)), Some((0x10000, 0x10003)));
        assert_eq!(tnum_interval((0, 5)), None);
        assert_eq!(tnum_interval((1, 1)), None);
        assert_eq!(tnum_interval((0, u64::MAX)), Some((0, u64::MAX)));
    }

    #[test]
    fn liveness_marks_go_and_other_names_stay() {
        assert_eq!(without_liveness("R0_w"), "R0");
        assert_eq!(without_liveness("R6_rwD"), "R6");
        assert_eq!(without_liveness("fp-8_r"), "fp-8");
        assert_eq!(without_liveness("ref_obj_id"), "ref_obj_id");
        assert_eq!(without_liveness("_w"), "_w");
        assert_eq!(order("refs"), 1_000_000);
    }

    /// `lines` fed to a fresh [`Resumes`]: where paths resumed.
    fn resumed(resumes: &mut Resumes, lines: &[&str]) -> Vec<u64> {
        lines
            .iter()
            .filter_map(|text| resumes.after(&classify(text.as_bytes()), text.as_bytes()))
            .collect()
    }

    #[test]
    fn a_path_resumes_at_the_state_after_one_ended() {
        // 5.10 at level 2 (branchy.xdp_branchy.l2.log): an exit, a path pruned at once, a
        // state printed at another instruction.
        let log = [
            "60: R0_w=inv2 R10=fp0",
            "60: (b7) r0 = 1",
            "61: R0_w=inv1 R10=fp0",
            "61: (95) exit",
            "61: R0=inv2 R10=fp0",
            "61: (95) exit",
            "",
            "from 30 to 57: safe",
            "45: R0=inv5 R10=fp0",
            "; else if (b >= 'A' && b <= 'Z')",
            "45: (bf) r1 = r0",
            "regs=1 stack=0 before 20: (bf) r0 = r4",
            "parent already had regs=1 stack=0 marks",
            "21: safe",
            "51: R0=inv5 R10=fp0",
            "51: (25) if r0 > 0x7a goto pc+3",
        ];
        assert_eq!(resumed(&mut Resumes::default(), &log), [61, 45, 51]);
        // A callee's exit returns to its caller; 6.1 and later head a path with `from X to Y:`.
        let log = [
            "73: (95) exit",
            "returning from callee:",
            " frame1: R0=inv1 R10=fp0",
            "to caller at 41:",
            " R0=inv1 R10=fp0",
            "41: R0=inv1 R10=fp0",
            "9: (95) exit",
            "",
            "from 6 to 8: R1=fp-8 R10=fp0",
            "8: R1=fp-8 R10=fp0",
            "8: (61) r0 = *(u32 *)(r1 +0)",
        ];
        assert_eq!(resumed(&mut Resumes::default(), &log), [] as [u64; 0]);
        // Read in two parts, joined: as in one pass, wherever the cut.
        let log = [
            "61: (95) exit",
            "",
            "from 30 to 57: safe",
            "45: R0=inv5 R10=fp0",
            "45: (bf) r1 = r0",
            "21: safe",
            "51: R0=inv5 R10=fp0",
        ];
        for cut in 0..=log.len() {
            let mut first = Resumes::default();
            let mut found = resumed(&mut first, &log[..cut]);
            let mut second = Resumes::default();
            let later = resumed(&mut second, &log[cut..]);
            found.extend(first.join(second));
            found.extend(later);
            found.sort();
            assert_eq!(found, [45, 51], "cut at {cut}");
        }
    }

    #[test]
    fn the_frame_follows_the_last_state_printed() {
        let mut frames = Frames::default();
        let mut frame_after = |text: &str| {
            let line = classify(text.as_bytes());
            let s = decode(text, &line);
            frames.after(&line, s.as_ref())
        };
        assert_eq!(frame_after("27: (85) call pc+7"), 0);
        assert_eq!(frame_after("caller:"), 0);
        assert_eq!(frame_after(" R6=1 R10=fp0"), 0);
        assert_eq!(frame_after(" frame1: R1=ctx() R10=fp0"), 1);
        assert_eq!(frame_after("38: (79) r4 = *(u64 *)(r1 +8)"), 1);
        assert_eq!(frame_after("Validating f() func#1..."), 0);
    }

    /// A state's items, split a byte at a time: what [`items`] finds.
    fn items_by_bytes(state: &str) -> Vec<&str> {
        let bytes = state.as_bytes();
        let (mut depth, mut start, mut found) = (0i32, 0, Vec::new());
        while start < bytes.len() {
            let mut end = start;
            while let Some(&b) = bytes.get(end) {
                match b {
                    b'(' => depth += 1,
                    b')' => depth -= 1,
                    b' ' if depth <= 0 => break,
                    _ => {}
                }
                end += 1;
            }
            if end > start {
                found.push(&state[start..end]);
            }
            start = end + 1;
        }
        found
    }

    #[test]
    fn items_are_those_a_byte_by_byte_split_finds() {
        // Every line of the fixtures' logs, and parentheses that do not balance.
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/logs");
        let mut lines: Vec<String> = [
            "",
            " ",
            "a  b",
            "R1=x(y z) R2=(",
            "a) b c(d e)) f g",
            "(((",
            ")) a b",
        ]
        .map(String::from)
        .to_vec();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read(entry.unwrap().path()).unwrap();
            lines.extend(
                text.split(|&b| b == b'\n')
                    .map(|l| String::from_utf8_lossy(l).into_owned()),
            );
        }
        assert!(lines.len() > 1000);
        for line in &lines {
            assert_eq!(
                items(line).collect::<Vec<_>>(),
                items_by_bytes(line),
                "{line}"
            );
        }
    }
}
