#!/usr/bin/env python3
"""explain.py - `bpflog explain` against the kernel's own rejections: the selftests' `__failure`
programs.

selftests.py loads the ~800 programs of the kernel's BPF selftests into the running kernel and
keeps every log (WORK/logs.lLEVEL/*.raw, one program's log per WORK/checked.lLEVEL/OBJ.PROG.log).
This sweep takes every rejected log among them and runs `bpflog explain OBJ LOG --prog P
--format json` on it, then checks the explanation against the log, with the log as the oracle:

  class     the share of rejected logs given a known class (the goal: 90% or more); the error
            messages of those left `unknown`, grouped (numbers made `N`).
  path      every step of the chain is an instruction of the failing path, in order: the path
            the log shows from the start (or a global function's `Validating`) to the error,
            cut back to X at each `from X to Y` (the verifier resumes a branch pushed at X), the
            failed step its last instruction.
  def-use   every step's operation defines or narrows a register or stack slot the next step
            uses, decoded from the instruction's text (`rD = ...` defines rD, `*(u64 *)(r10 -8)
            = rS` defines fp-8, `if rX ...` narrows rX, `call` defines R0 and passes R1-R5,
            `exit` returns R0; the first instruction of a program or global function brings in
            R1-R5); a narrowing of a linked copy (the same `id=` in the state the
            log prints after the jump) counts for the original. Between two steps of one frame
            with no call or exit between them, nothing on the path may write that register or
            slot again. A step that invalidated the value (a release, a change of the packet's
            data, a write to a dynptr's slot) is a call or a store after its last definition.
  accepted  `explain` of every accepted log says there is no rejection, and of every rejected
            log gives one (also of a log rejected before any instruction was verified).
  crash     `explain` exits 0 within the timeout and never panics.

A log is rejected when, after its last instruction, the kernel printed a line that is neither
a state, a backtracking line nor the statistics (the error; the statistics follow it too). The
programs the selftests mark `__failure` are counted beside it: a `__failure` program whose log
looks accepted, or the other way round, is listed (a program may fail to load before
verification, or be rejected only for unprivileged users).

Nothing here runs in `cargo test` (the selftests are GPL-2.0 and not copied into this
repository). Run selftests.py first (same --work and --level); then

  tests/sweeps/explain.py [--work DIR] [--level 1|2] [--only REGEX] [--bpflog PATH]

Results: WORK/explain.lLEVEL.txt lists every unknown message and every chain step that does
not hold; WORK/explain.lLEVEL.jsonl has every explanation (object, prog, log, explanation). Exit status 0 when the share reaches the goal and every check holds, 1 otherwise.
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys

import checks

GOAL = 0.90
TIMEOUT = 60

INSN = re.compile(r"^(\d+): (?:\([0-9a-f]{2}\) (.*?)(?:\s+; (.*))?|(<invalid [^>]*>))$")
FROM_TO = re.compile(r"^from (\d+) to (\d+)")
PROCESSED = re.compile(r"^processed \d+ insns")
# What the verifier prints after an instruction that is not an error.
NOT_ERROR = re.compile(
    r"^(?:$|\d+: |from \d+ to |;|mark_precise|last_idx|parent |regs=|propagating|frame\d|\s"
    r"|verification time|stack depth|returning from callee|to caller at|caller:|callee:"
    r"|Func#|func#|Live regs|Validating|safe|processed |BTF |\([\d,]+\) "
    r"|SCC |frame \d+: propagating)")


def rejected(log):
    """Whether the log ends in an error: a line after its last instruction that is not one
    the verifier prints on success (NOT_ERROR)."""
    lines = log.splitlines()
    last = max((i for i, l in enumerate(lines) if INSN.match(l)), default=-1)
    return any(not NOT_ERROR.match(l) for l in lines[last + 1:])


def failure_programs(progs_dir):
    """{object name: {program}} of the programs the selftests mark `__failure`."""
    marked = {}
    for src in glob.glob(os.path.join(progs_dir, "*.c")):
        text = open(src, errors="replace").read()
        text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
        names = set()
        for m in re.finditer(r'\bSEC\(""\)', text):
            head = text[m.end():text.find("{", m.end())]
            if not re.search(r"\b__failure\b", head):
                continue
            calls = re.findall(r"\b(\w+)\s*\(\s*(\w*)", head)
            for name, first in reversed(calls):
                if name.startswith("BPF_") and first:
                    names.add(first)
                    break
                if not name.startswith("__"):
                    names.add(name)
                    break
        if names:
            marked[os.path.basename(src)[:-2]] = names
    return marked


# -- The instructions' text, as kernel/bpf/disasm.c prints it. ------------------------------

REG = r"[rw](\d+)"
ALU = re.compile(rf"^{REG} ([-+*/%&|^]|<<|>>|s>>|s/|s%)?= (.*)$")
LOAD = re.compile(rf"^{REG} = \*\((?:u|s)\d+ \*\)\(r(\d+) ([-+]\d+)\)$")
STORE = re.compile(r"^\*\((?:u|s)\d+ \*\)\(r(\d+) ([-+]\d+)\) = (.*)$")
ATOMIC = re.compile(r"^(?:lock )?\*\(u\d+ \*\)\(r(\d+) ([-+]\d+)\) [-+&|^]= r(\d+)$")
JUMP = re.compile(rf"^if {REG} \S+ (?:{REG}|\S+) goto")
CALL = re.compile(r"^call (\S+)")


def regs_in(text):
    return {int(n) for n in re.findall(r"\b[rw](\d+)\b", text)}


def decode(text):
    """(defines, uses, narrows) of an instruction: sets of `rN` and `fp-N`."""
    text = text.strip()
    if m := STORE.match(text):
        base, off, src = int(m.group(1)), int(m.group(2)), m.group(3)
        uses = {f"r{base}"} | {f"r{r}" for r in regs_in(src)}
        return ({f"fp{off}"} if base == 10 else set()), uses, set()
    if m := ATOMIC.match(text):
        base, off, src = int(m.group(1)), int(m.group(2)), int(m.group(3))
        slot = {f"fp{off}"} if base == 10 else set()
        return slot, {f"r{base}", f"r{src}"} | slot, set()
    if m := LOAD.match(text):
        dst, base, off = int(m.group(1)), int(m.group(2)), int(m.group(3))
        uses = {f"r{base}"} | ({f"fp{off}"} if base == 10 else set())
        return {f"r{dst}"}, uses, set()
    if m := JUMP.match(text):
        regs = {f"r{r}" for r in regs_in(text.split(" goto")[0])}
        return set(), regs, regs
    if m := CALL.match(text):
        args = {f"r{r}" for r in range(1, 6)}
        # R0 is its result; R1-R5 it leaves unreadable, or passes into a callee or callback.
        return {"r0"} | args, args, set()
    if text == "exit":
        return {"r0"}, {"r0"}, set()
    if m := ALU.match(text):
        dst, op, src = int(m.group(1)), m.group(2), m.group(3)
        uses = {f"r{r}" for r in regs_in(src)} | ({f"r{dst}"} if op else set())
        return {f"r{dst}"}, uses, set()
    return set(), {f"r{r}" for r in regs_in(text)}, set()


def ids(state):
    """{register: id} of a state printed after an instruction (`R1_w=scalar(id=3,...)`)."""
    return {f"r{m.group(1)}": m.group(2)
            for m in re.finditer(r"\bR(\d+)(?:_w)?=\w*\((?:[^()]*,)?id=(\d+)", state or "")}


# -- The failing path. -------------------------------------------------------------------

def failing_path(log):
    """The instructions of the path that failed: [(index, text, state, depth)]."""
    path = []
    depth = 0
    for line in log.splitlines():
        if m := INSN.match(line):
            text = m.group(2) or m.group(4)
            path.append((int(m.group(1)), text.strip(), m.group(3), depth))
        elif m := FROM_TO.match(line):
            at = next((i for i in range(len(path) - 1, -1, -1)
                       if path[i][0] == int(m.group(1))), None)
            path = path[:at + 1] if at is not None else []
            depth = path[-1][3] if path else 0
        elif line.startswith("Validating "):
            path, depth = [], 0
        elif line.startswith("caller:"):
            depth += 1
        elif line.startswith("returning from callee"):
            depth = max(depth - 1, 0)
    return path


def latest_state(path, at, reg):
    """What the latest state printed at or before position `at` of `path` says of `reg`."""
    for index, _, state, _ in reversed(path[:at + 1]):
        if m := re.search(rf"\bR{reg[1:]}(?:_w)?=(\S+)", state or ""):
            return m.group(1)
    return ""


def narrows_carried(path, at, narrows, carried):
    """Whether the jump at position `at`, testing `narrows`, bounds a register of `carried`:
    itself, a linked copy (the same `id=` in the states), or, for a packet pointer, any
    comparison with the packet's end (the verifier marks every pointer into the packet)."""
    if narrows & carried:
        return True
    link = re.compile(r"\bid=(\d+)")
    for reg in carried:
        mine = link.search(latest_state(path, at, reg))
        if mine and any((m := link.search(latest_state(path, at, n))) and m.group(1) ==
                        mine.group(1) for n in narrows):
            return True
        state = path[at][2] or ""
        if latest_state(path, at, reg).startswith(("pkt(", "pkt_meta(")) and (
                "pkt_end" in state or "pkt_meta" in state or "pkt(" in state):
            return True
    return False


def check_chain(chain, path, log):
    """The steps of `chain` that do not hold: [(step, why)]; and how many steps were checked."""
    bad = []
    # A call stack too large or too deep: the kernel checks it on the program's code, not on a
    # path, and the chain is the call chain of the code (its calls and each function's deepest
    # stack instruction) up to the failure.
    if chain and any(step.get("role") == "called" for step in chain):
        chain = chain[-1:]
    if not path:
        # Rejected before any instruction was verified (maps, the control flow graph, BTF):
        # no path, only the failure.
        return [], 0
    if not chain:
        return [(0, "no chain")], 0
    # Found once every path is verified (check_max_stack_depth): the error names the
    # instruction, which the last path need not reach; only the failed step is checked.
    thrown = re.search(r"kfunc \(insn (\d+)\) cannot be called from callback", log)
    if thrown:
        at = int(thrown.group(1))
        return ([] if chain[-1]["insn"] == at else
                [(len(chain) - 1, f"failed at {chain[-1]['insn']}, the error names {at}")]), 1
    if chain[-1]["insn"] != path[-1][0]:
        bad.append((len(chain) - 1, f"failed at {chain[-1]['insn']}, the path ends at "
                    f"{path[-1][0]}"))
    # The latest occurrences, walking back from the end: where the walk back found them. A
    # global function's arguments, and the entry program's context, come in at the first
    # instruction, the failing one or not.
    entry = "\nValidating " in log or path[0][0] == 0
    pos = []
    at = len(path)
    for k, step in enumerate(reversed(chain)):
        first = k == len(chain) - 1 and entry and step["insn"] == path[0][0]
        at = next((i for i in range(at - 1, -1, -1) if path[i][0] == step["insn"]),
                  0 if first else None)
        if at is None:
            break
        pos.append(at)
    pos.reverse()
    if len(pos) < len(chain):
        missing = len(chain) - len(pos)
        bad += [(i, "not on the failing path in order") for i in range(missing)]
        return bad, len(chain)
    # What the log says after the failing instruction: the error.
    error = log.rsplit("\n" + str(path[-1][0]) + ": ", 1)[-1]
    # An unreleased reference: the origin is the instruction the error names (`alloc_insn=`).
    alloc = re.findall(r"alloc_insn=(\d+)", error)
    if alloc and len(chain) == 2 and chain[0]["role"] == "origin":
        if str(chain[0]["insn"]) not in alloc:
            bad.append((0, f"origin {chain[0]['insn']}, the error names alloc_insn {alloc}"))
        return bad, len(chain)
    # A region left open (`... cannot be used inside bpf_preempt_disable-ed region`): the chain
    # carries the region, not a register. Its origin is a call of the function that opens it
    # whose region is still open at the failure: regions nest, and after that call the path
    # closes no more of them than it opens again. (An instruction may run more than once on the
    # path, a subprogram's call from two places: one of its runs must be that call.)
    region = re.search(r"\b(bpf_\w+)-ed region", error)
    if region and len(chain) == 2 and chain[0]["role"] == "origin":
        opener = region.group(1)
        closer = re.sub(r"_lock$", "_unlock", re.sub(r"_disable$", "_enable", opener))

        def callee(text):
            called = CALL.match(text)
            return called.group(1).split("#")[0] if called else None

        def still_open(at):
            depth = 1
            for _, text, *_ in path[at + 1:pos[1]]:
                name = callee(text)
                depth += (name == opener) - (name == closer)
                if depth == 0:
                    return False
            return True

        runs = [i for i in range(pos[1]) if path[i][0] == chain[0]["insn"]]
        if not runs or callee(path[runs[0]][1]) != opener:
            bad.append((0, f"origin `{path[pos[0]][1]}` is no call of {opener}"))
        elif not any(still_open(i) for i in runs):
            bad.append((0, f"every run of `{path[runs[0]][1]}` has its region closed before "
                        f"the failure"))
        return bad, len(chain)
    # A write the failing path jumped over (`R0 !read_ok`, a stack slot read before it was
    # written): the origin is a jump of the path whose next instruction on the path lies past
    # the write it names, the write not on the path.
    skipped = re.match(r"jumps over insn (\d+) ", chain[0].get("note", ""))
    if skipped and len(chain) == 2 and chain[0]["role"] == "origin":
        write, at = int(skipped.group(1)), pos[0]
        after = path[at + 1][0] if at + 1 < len(path) else None
        on_path = {index for index, _, _, depth in path if depth == path[at][3]}
        if not (path[at][1].startswith(("if ", "goto")) and after is not None
                and path[at][0] < write < after and write not in on_path):
            bad.append((0, f"`{path[at][1]}` does not jump over insn {write}"))
        return bad, len(chain)
    # Def-use along the steps that carry the value; each narrowing checked against what is
    # carried past it.
    links = [i for i, s in enumerate(chain) if s["role"] not in ("narrowed", "invalidated")]
    # An instruction that took a pointer away without writing the register (a release, a
    # change of the packet's data, a write to a dynptr's slot): a call or a store, on the path
    # after the value's last definition.
    for i, s in enumerate(chain):
        if s["role"] == "invalidated":
            text = path[pos[i]][1]
            before = [j for j in links if j < i]
            if not (CALL.match(text) or STORE.match(text)):
                bad.append((i, f"`{text}` invalidates nothing: neither a call nor a store"))
            elif before and pos[before[-1]] > pos[i]:
                bad.append((i, f"`{text}` comes before the value's last definition"))
    for i, j in zip(links, links[1:]):
        here, there = path[pos[i]], path[pos[j]]
        defines, _, _ = decode(here[1])
        if pos[i] == 0 and entry:
            defines = defines | {f"r{r}" for r in range(1, 6)}
        _, uses, _ = decode(there[1])
        held = defines & uses
        if not held:
            bad.append((i, f"`{here[1]}` defines {sorted(defines) or 'nothing'},"
                        f" `{there[1]}` uses {sorted(uses) or 'nothing'}"))
            continue
        for k in range(i + 1, j):
            if chain[k]["role"] != "narrowed":
                continue
            narrows = decode(path[pos[k]][1])[2]
            if not narrows_carried(path, pos[k], narrows, held):
                bad.append((k, f"`{path[pos[k]][1]}` tests {sorted(narrows) or 'nothing'}, "
                            f"not {sorted(held)} (nor a copy linked by id=)"))
        between = path[pos[i] + 1:pos[j]]
        if here[3] == there[3] and not any(CALL.match(b[1]) or b[1] == "exit" for b in between):
            for b in between:
                if held <= decode(b[1])[0]:
                    bad.append((i, f"`{b[1]}` (insn {b[0]}) writes {sorted(held)} again "
                                f"between `{here[1]}` and `{there[1]}`"))
                    break
    return bad, len(chain)


def explain(bpflog, obj, prog, path):
    """`bpflog explain --format json` of one log: (status, explanation or error text)."""
    try:
        p = subprocess.run([bpflog, "explain", obj, path, "--prog", prog, "--format", "json",
                            "--color", "never"], capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0 or "panicked" in err:
        return f"exit {p.returncode}", err.strip()[:300]
    lines = p.stdout.decode(errors="replace").splitlines()
    if not lines:
        return "none", err.strip()[:300]
    return "ok", json.loads(lines[-1])


def normalized(message):
    return re.sub(r"-?\b(?:0x[0-9a-f]+|\d+)\b", "N", message)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/bpflog-selftests", help="selftests.py's --work")
    ap.add_argument("--level", type=int, choices=(1, 2), default=2, help="the log level")
    ap.add_argument("--only", default="", help="only the objects whose name matches")
    ap.add_argument("--bpflog", help="the bpflog binary (default: build this tree's)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count(), help="explains at once")
    args = ap.parse_args()
    bpflog = args.bpflog or checks.build()
    logdir = os.path.join(args.work, f"logs.l{args.level}")
    checkdir = os.path.join(args.work, f"checked.l{args.level}")
    if not os.path.isdir(logdir):
        sys.exit(f"no {logdir}: run selftests.py --work {args.work} --level {args.level} first")
    os.makedirs(checkdir, exist_ok=True)
    progs = glob.glob(os.path.join(args.work, "src/*/tools/testing/selftests/bpf/progs"))
    marked = failure_programs(progs[0]) if progs else {}
    jobs, accepted, accepted_failures, rejected_unmarked = [], [], [], []
    for raw in sorted(glob.glob(os.path.join(logdir, "*.raw"))):
        name = os.path.basename(raw)[:-4]
        if not re.search(args.only, name):
            continue
        obj = os.path.join(args.work, "obj", name + ".o")
        for prog, log in checks.programs(raw):
            if prog is None:
                continue
            text = log.decode(errors="replace")
            failure = prog in marked.get(name, ())
            path = os.path.join(checkdir, f"{name}.{prog}.log")
            if not rejected(text):
                if failure:
                    accepted_failures.append(f"{name}.{prog}")
                accepted.append((obj, prog, path))
                continue
            if not failure:
                rejected_unmarked.append(f"{name}.{prog}")
            if not os.path.exists(path):
                with open(path, "wb") as f:
                    f.write(log)
            jobs.append((obj, prog, path, text))
    print(f"{len(jobs)} rejected logs ({len(jobs) - len(rejected_unmarked)} of programs marked"
          f" __failure); {len(accepted_failures)} __failure programs' logs look accepted",
          flush=True)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda j: explain(bpflog, j[0], j[1], j[2]), jobs))
        # An accepted log explains nothing (logs not written by selftests.py are not checked).
        accepted = [a for a in accepted if os.path.exists(a[2])]
        spurious = [f"{a[2]}: {s}: {e if s != 'ok' else e['class'] + ': ' + e['error']}"
                    for a, (s, e) in zip(accepted, pool.map(lambda a: explain(bpflog, *a),
                                                            accepted)) if s != "none"]
    crashes, missed = [], []
    unknown, classes = collections.defaultdict(list), collections.Counter()
    steps = held = 0
    broken = []
    narrowed = collections.Counter()
    origins = collections.Counter()
    for (obj, prog, path, text), (status, e) in zip(jobs, results):
        if status == "none":
            missed.append(f"{path}: {e}")
            continue
        if status != "ok":
            crashes.append(f"{path}: {status}: {e}")
            continue
        classes[e["class"]] += 1
        if e["class"] == "unknown":
            unknown[normalized(e["error"])].append(path)
        origins["with an origin" if any(s["role"] == "origin" for s in e["chain"]) else
                "without"] += 1
        for step in e["chain"]:
            if step["role"] == "narrowed":
                note = step.get("note", "")
                narrowed["linked by id" if "linked to" in note else
                         "a plain copy" if "a copy of" in note else
                         "the packet's end" if "packet" in note else "the register"] += 1
        bad, n = check_chain(e["chain"], failing_path(text), text)
        steps += n
        held += n - len(bad)
        for i, why in bad:
            step = e["chain"][i] if i < len(e["chain"]) else {}
            broken.append(f"{path} [{e['class']}] step {i} ({step.get('role')}, insn "
                          f"{step.get('insn')}): {why}")
    explained = sum(classes.values())
    known = explained - classes["unknown"]
    listing = os.path.join(args.work, f"explain.l{args.level}.txt")
    # Every explanation, one JSON object a line, to compare runs and pick logs to label.
    with open(os.path.join(args.work, f"explain.l{args.level}.jsonl"), "w") as out:
        for (obj, prog, path, _), (status, e) in zip(jobs, results):
            out.write(json.dumps({"object": os.path.basename(obj), "prog": prog, "log": path,
                                  "status": status,
                                  "explanation": e if status == "ok" else None}) + "\n")
    with open(listing, "w") as out:
        out.write("# unknown messages (count, message, logs)\n")
        for msg, paths in sorted(unknown.items(), key=lambda kv: -len(kv[1])):
            out.write(f"{len(paths)}\t{msg}\n" + "".join(f"\t{p}\n" for p in paths))
        out.write("# chain steps that do not hold\n" + "".join(b + "\n" for b in broken))
        out.write("# rejected logs explained as accepted\n" + "".join(m + "\n" for m in missed))
        out.write("# crashes and timeouts\n" + "".join(c + "\n" for c in crashes))
        out.write("# accepted logs explained as rejections\n"
                  + "".join(a + "\n" for a in spurious))
        out.write("# __failure programs whose logs look accepted\n"
                  + "".join(a + "\n" for a in accepted_failures))
        out.write("# rejected logs of programs not marked __failure\n"
                  + "".join(r + "\n" for r in rejected_unmarked))
    share = known / explained if explained else 0
    print(f"known class: {known} of {explained} explained rejected logs ({share:.1%}); "
          f"unknown: {classes['unknown']} in {len(unknown)} messages")
    for msg, paths in sorted(unknown.items(), key=lambda kv: -len(kv[1]))[:40]:
        print(f"  {len(paths):4}  {msg[:110]}")
    print("classes: " + ", ".join(f"{c} {n}" for c, n in classes.most_common()))
    print(f"chain steps: {held} of {steps} hold ({held / steps if steps else 0:.1%}); "
          f"{len(broken)} do not")
    print(f"chains: {origins['with an origin']} of {explained} reach an origin")
    print("narrowed steps, by what the test was on: "
          + ", ".join(f"{k} {n}" for k, n in narrowed.most_common()))
    print(f"rejected logs explained as accepted: {len(missed)}")
    print(f"accepted logs: {len(accepted) - len(spurious)} of {len(accepted)} explain nothing")
    print(f"crashes or timeouts: {len(crashes)}; details in {listing}")
    ok = share >= GOAL and not broken and not crashes and not spurious and not missed
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
