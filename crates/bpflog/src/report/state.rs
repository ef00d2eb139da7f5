//! Register states as the verifier prints them, decoded for the report's state panel.
//!
//! The panel shows, at any log line, the registers of the frame the instruction runs in first,
//! then its callers'. That needs each printed state split into registers and told which frame it
//! belongs to — done here, once, while the page is built, so the page only looks values up.
//!
//! What the kernel prints (`print_verifier_state`, `print_insn_state` in
//! `kernel/bpf/log.c`): a state is space-separated `name=value` items (`R1=ctx()`,
//! `fp-8_w=mmmmmmmm`, `refs=2`), values may hold spaces inside parentheses
//! (`var_off=(0x0; 0xff)`), and a frame other than 0 is named first (`frame1: R1=...`). States
//! follow an instruction's text (`N: (bf) r1 = r6 ; R1_w=ctx()`), stand alone (`N: R1=...`,
//! `from X to Y: R1=...`) or are indented under `caller:`, `callee:`, `returning from callee:`
//! and `to caller at N:`. The liveness marks after a name (`_w`, `_r`, `_rw`, `_D`) are dropped.

use bpflog_log::Line;

/// One register or stack slot of a printed state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Reg<'a> {
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
pub(super) struct State<'a> {
    /// The frame printed last: the frame the verifier is in after this line.
    pub frame: u32,
    /// Whether it lists every live register of its frame (a state of its own, not the changes
    /// an instruction made).
    pub full: bool,
    /// Its items, in printed order.
    pub regs: Vec<Reg<'a>>,
}

/// The state printed on `text` (one log line, classified as `line`), if any.
pub(super) fn decode<'a>(text: &'a str, line: &Line<'_>) -> Option<State<'a>> {
    let (printed, full) = match line {
        Line::Insn(insn) if insn.opcode.is_some() => (text.split_once(" ; ")?.1, false),
        Line::State { .. } => (text.split_once(": ")?.1, true),
        Line::FromTo { .. } => (text.split_once(": ")?.1, true),
        Line::Other if text.starts_with([' ', '\t']) => (text, true),
        _ => return None,
    };
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
        regs.push(Reg {
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

/// The items of a state: split at spaces outside parentheses.
fn items(state: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    state
        .split(move |c: char| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            c == ' ' && depth <= 0
        })
        .filter(|item| !item.is_empty())
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

/// Where a name sorts (see [`Reg::order`]).
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
pub(super) struct Frames {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bpflog_log::classify;

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
    fn liveness_marks_go_and_other_names_stay() {
        assert_eq!(without_liveness("R0_w"), "R0");
        assert_eq!(without_liveness("R6_rwD"), "R6");
        assert_eq!(without_liveness("fp-8_r"), "fp-8");
        assert_eq!(without_liveness("ref_obj_id"), "ref_obj_id");
        assert_eq!(without_liveness("_w"), "_w");
        assert_eq!(order("refs"), 1_000_000);
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
}
