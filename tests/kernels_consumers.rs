//! Every consumer reads every kernel's dialect: `explain`, `profile`, the report's state panel
//! and the rich diagnostic give the same answers on the logs of Linux 5.10, 6.1 and 6.12
//! (`tests/fixtures/kernels/`) as on the host's log of the same program at the same level
//! (`tests/fixtures/logs`, `tests/fixtures/explain/logs`), where the kernel printed the same
//! facts:
//!
//! - `explain`: the class, the failing instruction and its line, the chain's root (its
//!   instruction and role) and the help;
//! - `profile`: the verdict; the source lines visited; where the kernel processed as many
//!   instructions as the host's, the visits of each source line, and where it also counted as
//!   many states, the paths of each;
//! - the report's state panel at the last instruction row (the failing one in a rejection), as
//!   the page builds it (`registersAt` in `report.js`): each register both show, read with
//!   [`Value::read`];
//! - the rich diagnostic: its error lines, its call stack (`called from`), and each register
//!   its `registers as printed` note and the host's both show.
//!
//! Where a kernel printed other facts (it verified another path, rejected for another reason,
//! or printed no state), the difference is allowed with the reason, from the logs, in
//! [`KERNEL_PRINTED_OTHER_FACTS`]; a reason that no longer applies is a failure too.

mod common;

use bpflog::log::state::{self, Field, Value};
use bpflog::log::{Line, classify};
use bpflog::object::BpfObject;
use bpflog::{Program, report};
use common::fixtures;
use common::kernels::{Verdict, read_kernel, readme_cell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// The kernels compared with the host's logs.
const KERNELS: [&str; 3] = ["5.10", "6.1", "6.12"];

/// Differences the kernels' logs explain, listed: `(kernels, logs, consumer, why)`, each log
/// of each kernel (the rules of [`shown_by_the_log`] find the others, from the logs).
const KERNEL_PRINTED_OTHER_FACTS: &[(&[&str], &[&str], &str, &str)] = &[
    (
        &["5.10", "6.1", "6.12"],
        &[
            "reject_lock.tc_reject_lock.l1.log",
            "reject_lock.tc_reject_lock.l2.log",
        ],
        "explain",
        "the kernel says `bpf_spin_unlock is missing` at the exit (5.10 to 6.12), 6.18 `BPF_EXIT \
         instruction in main prog cannot be used inside bpf_spin_lock-ed region`: another help \
         (5.10 at level 1: by the rule)",
    ),
    (
        &["6.12"],
        &[
            "reject_rcu.tc_reject_rcu.l1.log",
            "reject_rcu.tc_reject_rcu.l2.log",
        ],
        "explain",
        "6.12 says `bpf_rcu_read_unlock is missing` at the exit, 6.18 `BPF_EXIT instruction in \
         main prog cannot be used inside bpf_rcu_read_lock-ed region`: another class",
    ),
    (
        &["5.10", "6.1"],
        &[
            "reject_argtype.xdp_reject_argtype.l1.log",
            "reject_argtype.xdp_reject_argtype.l2.log",
        ],
        "explain",
        "the kernel lists other types the argument may have (`expected=fp, pkt, pkt_meta, \
         map_value` on 5.10, `..., map_key, map_value` on 6.1; 6.12 and 6.18 add `mem, \
         ringbuf_mem, buf, trusted_ptr_`), which the help names",
    ),
    (
        &["5.10", "6.1"],
        &[
            "bug_stack2.tp_bug_stack2.l1.log",
            "bug_stack2.tp_bug_stack2.l2.log",
        ],
        "explain",
        "the kernel counts the call chain's stack as 576 bytes (`combined stack size of 3 calls \
         is 576`), 6.12 and 6.18 as 528, which the help says",
    ),
    (
        &["5.10", "6.1"],
        &[
            "bug_loadbytes.tc_bug_loadbytes.l1.log",
            "bug_loadbytes.tc_bug_loadbytes.l2.log",
        ],
        "explain",
        "the kernel's error names no register (`invalid zero-sized read`; 6.18: `R4 invalid \
         zero-sized read: u64=[0,4294967295]`): the chain has no value to follow",
    ),
    (
        &["6.12"],
        &[
            "reject_kfuncarg.tp_reject_kfuncarg.l1.log",
            "reject_kfuncarg.tp_reject_kfuncarg.l2.log",
        ],
        "explain",
        "the kfunc's BTF id is the kernel's own (`call bpf_task_from_pid#32845` on 6.12, `#65822` \
         on 6.18), which the help quotes",
    ),
    (
        &["5.10"],
        &[
            "bug_pulldata.tc_bug_pulldata.l2.log",
            "bug_skrelease.tc_bug_skrelease.l2.log",
        ],
        "panel",
        "5.10 prints every register before each instruction, the one a call invalidated as `inv` \
         before the failing one; 6.18 prints what the call writes, so the page's latest print of \
         the register is from before the call",
    ),
    (
        &["5.10", "6.1"],
        &[
            "bug_ringbuf_err.tp_bug_ringbuf_err.l1.log",
            "bug_ringbuf_err.tp_bug_ringbuf_err.l2.log",
            "reject_maxrange.xdp_reject_maxrange.l1.log",
            "reject_maxrange.xdp_reject_maxrange.l2.log",
        ],
        "panel",
        "the kernel calls a ring buffer record `mem` (5.10) or `alloc_mem` (6.1), 6.12 and later \
         `ringbuf_mem(...,sz=N)` (5.10 at level 1: by the rule)",
    ),
    (
        &["5.10", "6.1", "6.12"],
        &["core_read.raw_tp_sys_enter.l2.log"],
        "panel",
        "R9 holds a CO-RE offset into the kernel's own `task_struct` (2236 on 5.10, 2420 on 6.1, \
         2436 on 6.12, 1268 on 6.18), and each kernel prints the 32-bit spill at fp-48 its own \
         way (`inv` on 5.10, nothing after `fp-48=` on 6.1, `0000scalar(...)` on 6.18)",
    ),
    (
        &["6.1", "6.12"],
        &[
            "core_fail.raw_tp_reject_core.l1.log",
            "core_fail.raw_tp_reject_core.l2.log",
        ],
        "panel",
        "6.18 knows the array map's lookup of a constant key is not NULL (`call \
         bpf_map_lookup_elem#1 ; R0=map_value(...)`); 6.1 and 6.12 print `map_value_or_null`",
    ),
    (
        &["5.10"],
        &[
            "tc_prog.tc_count.l2.log",
            "two_in_one.xdp_first.l2.log",
            "two_in_one.xdp_nested.l2.log",
            "two_in_one.xdp_second.l2.log",
            "bug_stack2.tp_bug_stack2.l2.log",
        ],
        "profile",
        "6.18 heads a return to the caller with `from X to Y:` (`from 68 to 26:`), a path \
         entry; 5.10 returns on the same path (`returning from callee:`, `to caller at N:`)",
    ),
    (
        &["5.10", "6.1"],
        &[
            "xdp_subprogs.xdp_parse.l2.log",
            "xdp_subprogs.nodwarf.xdp_parse.l2.log",
        ],
        "profile",
        "the kernel verifies the global function `classify_proto` first and prunes its exit \
         (`from 78 to 85: safe`); 6.18 verifies it last and walks the exit again: as many \
         instructions (131) in another order, so other visits",
    ),
    (
        &["5.10", "6.1"],
        &[
            "xdp_subprogs.xdp_parse.l2.log",
            "xdp_subprogs.nodwarf.xdp_parse.l2.log",
        ],
        "panel",
        "the kernel verifies the global function `classify_proto` first, 6.18 last: another last \
         instruction row",
    ),
];

/// What `explain` answers on a rejected log.
#[derive(Debug)]
struct Explained {
    class: String,
    /// The failing instruction and its source line.
    insn: u64,
    line: u32,
    /// The chain's root: its instruction and role.
    root: Option<(u64, String)>,
    help: String,
}

/// The report's state panel at a row: the row's instruction, and `(frame, name)` → value.
#[derive(Debug)]
struct Panel {
    insn: u64,
    regs: BTreeMap<(u32, String), String>,
}

/// What the consumers answer on one log.
#[derive(Debug, Default)]
struct Answers {
    /// `explain`'s answer; `None`: accepted.
    explain: Option<Explained>,
    /// The profile's verdict, its `processed` and `total_states`.
    verdict: String,
    processed: Option<u64>,
    total_states: Option<u64>,
    /// Per source line `(file, line)`: visits and paths, for the lines visited.
    lines: BTreeMap<(String, u32), (u64, u64)>,
    /// The state panel at the last instruction row: that instruction, and `(frame, name)` →
    /// value.
    panel: Option<Panel>,
    /// The rich diagnostic's registers as printed: name → value.
    rich: Option<BTreeMap<String, String>>,
    /// The rich diagnostic's error lines.
    errors: Vec<String>,
    /// The rich diagnostic's call stack: its `called from` notes.
    calls: Vec<String>,
    /// The log's last message before its `processed` line: the kernel's error.
    last_message: Option<String>,
}

fn answers(program: &Program<'_, '_>, log: &[u8]) -> Answers {
    let mut a = Answers::default();
    let explanations = bpflog::explain::explain_bare(program, log).unwrap();
    if let Some(e) = explanations.last() {
        let root = e
            .chain
            .first()
            .map(|s| (s.location.insn, format!("{:?}", s.role)));
        a.explain = Some(Explained {
            class: format!("{:?}", e.class().id),
            insn: e.location.insn,
            line: e.location.line,
            root,
            help: e.help.clone(),
        });
        let mut text = Vec::new();
        let mut sources = bpflog::SourceFiles::new(Default::default());
        bpflog::explain::write(
            e,
            program,
            bpflog::explain::ExplainFormat::Text,
            &mut sources,
            &bpflog::Palette::new(false),
            &mut text,
        )
        .unwrap();
        let text = String::from_utf8_lossy(&text);
        // `error: MESSAGE`, then each further error line indented under it.
        let mut lines = text.lines().skip_while(|l| !l.starts_with("error: "));
        if let Some(first) = lines.next() {
            a.errors.push(first["error: ".len()..].to_owned());
            let more = lines.map_while(|l| l.strip_prefix("       "));
            a.errors.extend(more.map(str::to_owned));
        }
        a.calls = (text.lines())
            .filter_map(|l| Some(l.split_once("note: called from ")?.1.to_owned()))
            .collect();
        a.rich = text.lines().find_map(|l| {
            let (_, rest) = l.split_once("note: registers as printed at instruction ")?;
            let (_, regs) = rest.split_once(": ")?;
            let decoded = state::decode_printed(regs, true)?;
            Some(
                decoded
                    .regs
                    .iter()
                    .map(|r| (r.name.to_owned(), r.value.to_owned()))
                    .collect(),
            )
        });
    }
    let profile = bpflog::profile::profile_bare(program, log).unwrap();
    a.verdict = format!("{:?}", profile.summary.verdict);
    a.processed = profile.summary.insns;
    a.total_states = profile.summary.total_states;
    for l in &profile.lines {
        if l.counts.visits > 0 || l.counts.paths > 0 {
            a.lines
                .insert((l.file.clone(), l.line), (l.counts.visits, l.counts.paths));
        }
    }
    a.panel = panel(program, log);
    a.last_message = String::from_utf8_lossy(log)
        .lines()
        .take_while(|l| !l.starts_with("processed "))
        .filter(|l| !l.is_empty())
        .last()
        .map(str::to_owned);
    a
}

/// The report's state panel at the last instruction row of the page, as `registersAt` in
/// `report.js` builds it from the rows' decoded states: for the frame of that row and each
/// caller, the latest print of each register back to that frame's last full state, within the
/// path (a `from X to Y` row starts one) and the pass (a `Validating` row).
fn panel(program: &Program<'_, '_>, log: &[u8]) -> Option<Panel> {
    let mut html = Vec::new();
    report::report_bare(program, log, &mut html, &Default::default()).unwrap();
    let html = String::from_utf8(html).unwrap();
    let rows: Vec<serde_json::Value> = common::page::pieces(&html)
        .into_iter()
        .flat_map(|(_, rows)| rows)
        .collect();
    let text = |row: &serde_json::Value| match row {
        serde_json::Value::String(t) => t.clone(),
        _ => row[0].as_str().unwrap().to_owned(),
    };
    let frame = |row: &serde_json::Value| row.get(1).and_then(|f| f.as_u64()).unwrap_or(0) as u32;
    let (k, index) =
        rows.iter()
            .enumerate()
            .rev()
            .find_map(|(k, r)| match classify(text(r).as_bytes()) {
                Line::Insn(i) => Some((k, i.index)),
                _ => None,
            })?;
    let current = frame(&rows[k]);
    let mut regs: BTreeMap<(u32, String), String> = BTreeMap::new();
    let mut full: BTreeSet<u32> = BTreeSet::new();
    for j in (0..=k).rev() {
        let t = text(&rows[j]);
        let kind = classify(t.as_bytes());
        if matches!(kind, Line::Validating { .. }) && j != k {
            break;
        }
        if let Some(items) = rows[j].get(4).and_then(|s| s.as_array()) {
            for item in items {
                let f = item[0].as_u64().unwrap() as u32;
                let name = item[1].as_str().unwrap().to_owned();
                if f <= current && !full.contains(&f) {
                    regs.entry((f, name))
                        .or_insert_with(|| item[2].as_str().unwrap().to_owned());
                }
            }
            if rows[j][3] == 1 {
                for item in items {
                    full.insert(item[0].as_u64().unwrap() as u32);
                }
            }
        }
        if matches!(kind, Line::FromTo { .. }) || full.len() as u32 > current {
            break;
        }
    }
    Some(Panel { insn: index, regs })
}

/// How two sets of registers contradict each other: for each name both show, the values read
/// with [`Value::of`] have other kinds (`scalar`, a pointer's type), other known numbers, a
/// pointer at another offset, or a stack slot whose bytes say other things. What one kernel
/// knows and the other does not is no contradiction: an unknown scalar and a known one, bounds
/// one kernel works out and the other not, a byte one marks `m` (something was written) and
/// the other knows is zero or spilled.
fn registers_differ<K: Ord + std::fmt::Debug>(
    old: &BTreeMap<K, String>,
    host: &BTreeMap<K, String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (name, o) in old {
        let Some(h) = host.get(name) else { continue };
        let key = format!("{name:?}");
        let slot = if key.contains("fp-") { "fp-" } else { "R" };
        let (vo, vh) = (Value::of(slot, o), Value::of(slot, h));
        let agree = if slot == "fp-" {
            let (bo, bh) = (slot_bytes(&vo), slot_bytes(&vh));
            bo.len() == bh.len()
                && bo
                    .iter()
                    .zip(&bh)
                    .all(|(a, b)| a == b || *a == b'm' || *b == b'm')
                && (vo.kind.is_empty() || vh.kind.is_empty() || values_agree(&vo, &vh))
        } else {
            values_agree(&vo, &vh)
        };
        if !agree {
            out.push(format!("{name:?}: {o} here, {h} on the host"));
        }
    }
    out
}

/// Whether two values say nothing against each other (see [`registers_differ`]).
fn values_agree(a: &Value<'_>, b: &Value<'_>) -> bool {
    let known = matches!((a.known, b.known), (Some(x), Some(y)) if x != y);
    let off = a.kind != "scalar"
        && a.field("off").unwrap_or(Field::Number(0)) != b.field("off").unwrap_or(Field::Number(0));
    a.kind == b.kind && !known && !off
}

/// A stack slot's 8 bytes as marks: its marks, then `0` for each byte of a spilled 0 and `r`
/// for each byte of anything else spilled.
fn slot_bytes(v: &Value<'_>) -> Vec<u8> {
    let mut bytes = v.marks.as_bytes().to_vec();
    if !v.kind.is_empty() {
        let fill = if v.known == Some(0) { b'0' } else { b'r' };
        bytes.resize(8, fill);
    }
    bytes
}

/// The differences between a kernel's answers and the host's, by consumer.
fn differences(old: &Answers, host: &Answers) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    match (&old.explain, &host.explain) {
        (Some(o), Some(h)) => {
            if o.class != h.class {
                out.push((
                    "explain",
                    format!("class {} here, {} on the host", o.class, h.class),
                ));
            } else if (o.insn, o.line) != (h.insn, h.line) {
                out.push((
                    "explain",
                    format!(
                        "fails at {} line {} here, {} line {} on the host",
                        o.insn, o.line, h.insn, h.line
                    ),
                ));
            } else if o.root != h.root {
                out.push((
                    "explain",
                    format!("chain root {:?} here, {:?} on the host", o.root, h.root),
                ));
            } else if o.help != h.help {
                out.push((
                    "explain",
                    format!("help {:?} here, {:?} on the host", o.help, h.help),
                ));
            }
        }
        (None, None) => {}
        (o, h) => out.push((
            "explain",
            format!(
                "{} here, {} on the host",
                o.as_ref().map_or("nothing", |e| &e.class),
                h.as_ref().map_or("nothing", |e| &e.class)
            ),
        )),
    }
    if old.verdict != host.verdict {
        out.push((
            "profile",
            format!("{} here, {} on the host", old.verdict, host.verdict),
        ));
    } else if old.processed == host.processed {
        let visits = |a: &Answers| {
            a.lines
                .iter()
                .map(|(l, c)| (l.clone(), c.0))
                .collect::<Vec<_>>()
        };
        let paths = |a: &Answers| {
            a.lines
                .iter()
                .map(|(l, c)| (l.clone(), c.1))
                .collect::<Vec<_>>()
        };
        if visits(old) != visits(host) {
            out.push((
                "profile",
                format!(
                    "visits {:?} here, {:?} on the host",
                    visits(old),
                    visits(host)
                ),
            ));
        } else if old.total_states == host.total_states && paths(old) != paths(host) {
            out.push((
                "profile",
                format!("paths {:?} here, {:?} on the host", paths(old), paths(host)),
            ));
        }
    } else {
        let lines = |a: &Answers| a.lines.keys().cloned().collect::<BTreeSet<_>>();
        if lines(old) != lines(host) {
            out.push((
                "profile",
                format!(
                    "processed {:?} here, {:?} on the host; lines visited only here {:?}, only on the host {:?}",
                    old.processed,
                    host.processed,
                    lines(old).difference(&lines(host)).collect::<Vec<_>>(),
                    lines(host).difference(&lines(old)).collect::<Vec<_>>()
                ),
            ));
        }
    }
    match (&old.panel, &host.panel) {
        (Some(o), Some(h)) if o.insn == h.insn => {
            let (o, h) = (&o.regs, &h.regs);
            let d = registers_differ(o, h);
            if !d.is_empty() {
                out.push(("panel", d.join("; ")));
            } else if o.is_empty() != h.is_empty() {
                out.push((
                    "panel",
                    format!("{} registers here, {} on the host", o.len(), h.len()),
                ));
            }
        }
        (Some(o), Some(h)) => out.push((
            "panel",
            format!(
                "last instruction row {} here, {} on the host",
                o.insn, h.insn
            ),
        )),
        (None, None) => {}
        (o, h) => out.push((
            "panel",
            format!("{} here, {} on the host", o.is_some(), h.is_some()),
        )),
    }
    if old.calls != host.calls {
        out.push((
            "rich",
            format!(
                "called from {:?} here, {:?} on the host",
                old.calls, host.calls
            ),
        ));
    }
    if old.errors != host.errors {
        out.push((
            "rich",
            format!(
                "error lines {:?} here, {:?} on the host",
                old.errors, host.errors
            ),
        ));
    }
    match (&old.rich, &host.rich) {
        (Some(o), Some(h)) => {
            let d = registers_differ(o, h);
            if !d.is_empty() {
                out.push(("rich", d.join("; ")));
            }
        }
        (None, None) => {}
        (o, h) => out.push((
            "rich",
            format!("registers {:?} here, {:?} on the host", o, h),
        )),
    }
    out
}

/// Which consumers a log is compared on: all but `explain` and `rich` for a log the host
/// accepted (nothing to explain on either).
fn consumers(host: &Answers) -> &'static [&'static str] {
    if host.explain.is_some() {
        &["explain", "profile", "panel", "rich"]
    } else {
        &["profile", "panel"]
    }
}

/// The host's log of `name`, and the object.
fn host_log(name: &str, object: &str) -> Option<(PathBuf, PathBuf)> {
    for dir in ["", "explain/"] {
        let log = fixtures().join(format!("{dir}logs/{name}"));
        let obj = fixtures().join(format!("{dir}obj/{object}.o"));
        if log.exists() && obj.exists() {
            return Some((log, obj));
        }
    }
    None
}

/// Why a consumer's answer on a kernel's log may differ from the host's, when the logs
/// themselves say it (checked on every log, not listed): the kernel verified other
/// instructions, or printed the facts the consumer reads in another form or not at all.
fn shown_by_the_log(
    release: &str,
    level: u32,
    consumer: &str,
    old: &Answers,
    host: &Answers,
    diff: &str,
) -> Option<String> {
    if old.processed != host.processed {
        return Some(format!(
            "{consumer}: the kernel verified other instructions (`processed N insns`: {} here, {} on the host)",
            old.processed.map_or("none".to_owned(), |n| n.to_string()),
            host.processed.map_or("none".to_owned(), |n| n.to_string()),
        ));
    }
    if diff.starts_with("error lines ") {
        return (old.last_message != host.last_message).then(|| {
            "rich error lines: the kernel's error message is another (its last line before \
             `processed`)"
                .to_owned()
        });
    }
    if release != "5.10" || level != 1 {
        return None;
    }
    match consumer {
        "panel" | "rich" if !diff.starts_with("called from ") => Some(format!(
            "{consumer}: 5.10 at level 1 prints a state only at `from X to Y:` and after a conditional jump, none after other instructions"
        )),
        "profile" if diff.starts_with("paths ") => Some(
            "profile paths: 5.10 at level 1 heads a resumed path with `from X to Y:`; 6.1 and later print none at level 1 (the path's first state follows the branch on its line)".to_owned(),
        ),
        "explain" if diff.starts_with("help ") || diff.starts_with("chain root ") => Some(
            "explain chain and help: 5.10 at level 1 prints no state after an instruction, whose values they read".to_owned(),
        ),
        _ => None,
    }
}

#[test]
fn every_consumer_answers_on_every_kernels_log_as_on_the_hosts() {
    let mut unexplained = Vec::new();
    let mut allowed_used = BTreeSet::new();
    let mut by_rule: BTreeMap<String, u32> = BTreeMap::new();
    // Per kernel and consumer: agreeing, allowed to differ, compared.
    let mut tally: BTreeMap<(&str, &str), [u32; 3]> = BTreeMap::new();
    for release in KERNELS {
        let kernel = read_kernel(release).unwrap();
        let (mut agree, mut total, mut allowed, mut logs) = (0, 0, 0, 0);
        for log in &kernel.logs {
            if matches!(log.verdict, Verdict::Refused(..)) {
                continue;
            }
            let Some((host_path, object_path)) = host_log(&log.name, &log.object) else {
                continue;
            };
            logs += 1;
            let data = std::fs::read(&object_path).unwrap();
            let object = BpfObject::parse(&data).unwrap();
            let program = Program::new(&object, object.program(&log.program).unwrap()).unwrap();
            let old = answers(&program, &std::fs::read(&log.log).unwrap()[..]);
            let host = answers(&program, &std::fs::read(&host_path).unwrap()[..]);
            let found = differences(&old, &host);
            for consumer in consumers(&host) {
                total += 1;
                let counts = tally.entry((release, *consumer)).or_default();
                counts[2] += 1;
                let diff: Vec<&String> = found
                    .iter()
                    .filter(|(c, _)| c == consumer)
                    .map(|(_, d)| d)
                    .collect();
                let reason = KERNEL_PRINTED_OTHER_FACTS.iter().find(|(k, n, c, _)| {
                    k.contains(&release) && n.contains(&log.name.as_str()) && c == consumer
                });
                // Each difference the logs explain, by a rule.
                let rules: Option<Vec<String>> = diff
                    .iter()
                    .map(|d| shown_by_the_log(release, log.level, consumer, &old, &host, d))
                    .collect();
                if !diff.is_empty()
                    && reason.is_none()
                    && let Some(whys) = rules
                {
                    for why in whys {
                        *by_rule.entry(why).or_insert(0) += 1;
                    }
                    allowed += 1;
                    counts[1] += 1;
                    continue;
                }
                match (diff.is_empty(), reason) {
                    (true, None) => {
                        agree += 1;
                        counts[0] += 1;
                    }
                    (false, Some(_)) => {
                        allowed += 1;
                        counts[1] += 1;
                        allowed_used.insert((release, log.name.clone(), *consumer));
                    }
                    (true, Some(_)) => {
                        agree += 1;
                        counts[0] += 1;
                        unexplained.push(format!(
                            "{release}: {}: {consumer} agrees, but is allowed to differ",
                            log.name
                        ));
                    }
                    (false, None) => unexplained.push(format!(
                        "{release}: {}: {consumer}: {}",
                        log.name,
                        diff.iter()
                            .map(|d| d.as_str())
                            .collect::<Vec<_>>()
                            .join(" | ")
                    )),
                }
            }
        }
        println!(
            "{release}: {logs} logs, consumers agreeing {agree} / {total}, {allowed} allowed to differ"
        );
    }
    for (why, n) in &by_rule {
        println!("  {n} allowed: {why}");
    }
    // The README's table of kernels says what this test counts, per consumer.
    for (row, consumer) in [
        ("`annotate --style rich`", "rich"),
        ("`profile`", "profile"),
        ("`explain`", "explain"),
        ("`report`", "panel"),
    ] {
        for release in KERNELS {
            let [agree, allowed, total] =
                tally.get(&(release, consumer)).copied().unwrap_or_default();
            let want = format!(
                "{agree}/{total} as on 6.18; {allowed} where the kernel printed other facts"
            );
            println!("{release}: {row}: {want}");
            let cell = readme_cell(row, release);
            if !cell.starts_with(&want) {
                unexplained.push(format!(
                    "README.md's kernels table, {row} on {release}: {cell:?}, where this test counts {want:?}"
                ));
            }
        }
    }
    // Every entry listed is used: a log that no longer differs, or is gone, is found.
    for (kernels, names, c, why) in KERNEL_PRINTED_OTHER_FACTS {
        for k in *kernels {
            for n in *names {
                let used = allowed_used.contains(&(*k, (*n).to_owned(), *c));
                let by_rule = *k == "5.10" && n.ends_with(".l1.log");
                if !used && !by_rule {
                    unexplained.push(format!(
                        "{k}: {n}: {c}: allowed ({why}), but does not differ"
                    ));
                }
            }
        }
    }
    assert!(
        unexplained.is_empty(),
        "{} differences:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
