"""checks.py - what the sweeps share: loading objects, and checking each log against its object.

Every log the kernel printed is checked with the kernel as the oracle:

  whole     `annotate --prog P` of the log gives it back byte for byte
  stripped  the log without its `;` lines, annotated, gives the log back (logs that have such
            lines: a program loaded without line info has none, and bpflog adds them)
  chosen    `annotate` without --prog, of the whole log, gives it back; of the stripped log too,
            except where several programs fit it and would annotate it differently (programs
            with the same instructions: the error says so and names them)
  rich, profile, report
            run to the end (exit 0, or 1 for a misfit) and never panic

The choice without --prog (of the stripped log, or of a log without `;` lines as it is) is
also recorded and counted (summarize): a refusal is among twins when another program named has
the same code as far as its own log shows (the liveness listing of 6.15+, map names by load).

At log level 1 the kernel drops the text of every path it finished but remembers the last
source line it printed there, so a stripped level-1 log may come back one `;` line off after
such a path (README, Limits).
"""

import concurrent.futures
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# `verify --raw` heads each program's log with `==> FILE/PROG <==` (`==> PROG <==` before it read
# several objects): the program is what follows the last `/`.
HEADER = re.compile(rb"^==> (?:.*/)?(.*) <==\n", re.M)
TWINS = "fits several programs that would annotate it differently"


def build():
    """bpflog with the `load` feature (`bpflog verify`), built in release: its path."""
    subprocess.run(["cargo", "build", "--release", "--features", "load", "--quiet"], cwd=REPO,
                   check=True)
    return os.path.join(REPO, "target/release/bpflog")


def load(bpflog, obj, logdir, level):
    """Every program of `obj` loaded at `level`: their logs, each after `==> NAME <==`."""
    name = os.path.basename(obj)[:-2]
    raw = os.path.join(logdir, name + ".raw")
    if not os.path.exists(raw):
        try:
            with open(raw, "wb") as out:
                subprocess.run([bpflog, "verify", "--raw", "--level", str(level), obj], stdout=out,
                               stderr=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            pass
    return raw


def programs(raw):
    """(program or None, log) for each log of a `verify --raw` output."""
    data = open(raw, "rb").read()
    heads = list(HEADER.finditer(data))
    if not heads:
        return [(None, data)] if data.strip() else []
    logs = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(data)
        if data[m.end():end].strip():
            logs.append((m.group(1).decode(), data[m.end():end]))
    return logs


def strip(log):
    """`log` without the kernel's source lines."""
    return b"".join(l for l in log.splitlines(keepends=True) if not l.startswith(b";"))


def check(bpflog, obj, prog, log, path):
    """The checks of one program's log (written at `path`): a list of failures."""
    def run(*args):
        try:
            p = subprocess.run([bpflog, *args], capture_output=True, timeout=300)
            return p.returncode, p.stdout, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return "timeout", b"", ""

    named = ["--prog", prog] if prog else []
    stripped = strip(log)
    annotated = stripped != log
    with open(path + ".stripped", "wb") as f:
        f.write(stripped)
    failures = []
    choice = None
    cases = [("whole", [path] + named, log), ("chosen", [path], log)]
    if annotated:
        cases += [("stripped", [path + ".stripped"] + named, log),
                  ("chosen stripped", [path + ".stripped"], log)]
    for label, args, want in cases:
        rc, out, err = run("annotate", "--style", "kernel", "--color", "never", obj, *args)
        if label == ("chosen stripped" if annotated else "chosen"):
            choice = outcome(rc, out == want if annotated else strip(out) == want, err)
        if label.startswith("chosen") and rc == 1 and TWINS in err and (
                label == "chosen stripped" or not annotated):
            continue
        # A log without the kernel's lines gets them: the rest must be the log.
        same = out == want if annotated else strip(out) == want
        if rc != 0 or not same:
            failures.append(f"{label}: exit {rc}, output {'same' if same else 'differs'}:"
                            f" {err.strip()[:300]}")
    report = os.path.join(os.path.dirname(path), "report.html")
    for label, args in [("rich", ["annotate", "--style", "rich", "--color", "always", obj,
                                  path + ".stripped"] + named),
                        ("profile", ["profile", obj, path] + named),
                        ("report", ["report", "--output", report, obj, path] + named)]:
        rc, _, err = run(*args)
        if rc not in (0, 1) or "panicked" in err:
            failures.append(f"{label}: exit {rc}: {err.strip()[:300]}")
    return failures, choice


def outcome(rc, same, err):
    """How `annotate` without --prog did: (exact | refused | wrong | failed, its error)."""
    if rc == 0:
        return ("exact" if same else "wrong"), ""
    if rc == 1 and TWINS in err:
        return "refused", err.strip().splitlines()[0] if err.strip() else ""
    return "failed", err.strip()[:300].replace("\n", " ")


ADDRESS = re.compile(rb"0x[0-9a-f]{9,16}")
ROW = re.compile(rb"^ +(?:\d+ +)?(\d+): [.0-9]{10,} (\(.*)$")
LOADED_MAP = re.compile(rb"^(\d+): \(18\) r(\d+) = [^;\n]*; [^\n]*?\bR\2(?:_w)?=(\w+)\(([^)\n]*)\)",
                        re.M)
OFF = re.compile(rb"(?:^|,)off=(-?\d+)")
MAP = re.compile(rb"(?:^|,)map=([^,]+)")


def signature(log):
    """What a log shows of its program's code: the rows of its liveness listing (6.15+), the
    loader's addresses left out, and the name of the map each 64-bit load its instruction
    lines reach loads, with the offset into its value where it loads an address in one (by
    index); None without a listing."""
    rows = []
    for line in log.splitlines():
        m = ROW.match(line)
        if m:
            rows.append(m.group(1) + b" " + ADDRESS.sub(b"ADDR", m.group(2)))
        elif rows:
            break
    maps = {}
    for m in LOADED_MAP.finditer(log):
        name = MAP.search(m.group(4))
        if name is None:
            continue
        off = OFF.search(m.group(4))
        value = m.group(3) == b"map_value"
        maps[m.group(1)] = (name.group(1), (int(off.group(1)) if off else 0) if value else None)
    return (tuple(rows), maps) if rows else None


def same_code(a, b):
    """Whether two signatures show the same code: the same listing, and the same map wherever
    both logs show a load's map."""
    return a[0] == b[0] and all(b[1].get(i, m) == m for i, m in a[1].items())


def summarize(choices):
    """How `annotate` without --prog did on each log (CHOICES, see load_and_check), counted:
    exact, refused (split into refusals among twins, programs whose code, constants, helpers
    and maps included, is the same as the log's as far as their own logs show, and refusals
    among programs that differ), wrong (another program's annotation), failed. A refusal is a
    twin's when a program named in the error has the log's signature (its object's every
    program when the error lists only some); unknown when the log or a program named has no
    signature (not loaded, or no listing)."""
    rows = [l.rstrip("\n").split("\t") for l in open(choices)]
    logs = {}
    for path, obj, prog, *_ in rows:
        logs.setdefault(obj, {})[prog] = signature(open(path, "rb").read())
    counts = {}
    distinguishable = []
    for path, obj, prog, lined, verdict, err in rows:
        if verdict == "refused":
            mine = logs[obj].get(prog)
            named = err.split("differently: ", 1)[-1]
            for tail in (" (twins: ", " (the same code ", " (programs from line info", " (choose"):
                named = named.split(tail, 1)[0]
            named = named.split(", ")
            if any(n.startswith("and ") and n.endswith(" more") for n in named):
                named = list(logs[obj])
            others = [logs[obj].get(n) for n in named if n != prog]
            if mine is None or None in others:
                verdict = "refused, unknown (no listing)"
            elif any(same_code(mine, o) for o in others):
                verdict = "refused, twins"
            else:
                verdict = "refused, distinguishable"
                distinguishable.append(f"{path}\t{err}")
        counts[(lined, verdict)] = counts.get((lined, verdict), 0) + 1
    with open(choices[:-4] + ".distinguishable.txt", "w") as out:
        out.write("".join(d + "\n" for d in distinguishable))
    print("without --prog (logs with `;` lines stripped of them, logs without as they are):")
    for (lined, verdict), n in sorted(counts.items()):
        print(f"  {lined:5} {verdict:32} {n}")
    return counts


def load_and_check(bpflog, objs, work, level):
    """Loads each object (one at a time: the kernel's work), checks every log on all cores,
    writes the failures to WORK/failures.lLEVEL.txt and says how it went: whether all held."""
    logdir, checkdir = (os.path.join(work, f"{d}.l{level}") for d in ("logs", "checked"))
    for d in (logdir, checkdir):
        os.makedirs(d, exist_ok=True)
    raws = [load(bpflog, o, logdir, level) for o in objs]
    jobs = []
    for obj, raw in zip(objs, raws):
        for prog, log in programs(raw):
            path = os.path.join(checkdir, f"{os.path.basename(obj)[:-2]}.{prog or '_'}.log")
            with open(path, "wb") as f:
                f.write(log)
            jobs.append((obj, prog, log, path))
    print(f"loaded {len(objs)} objects: {len(jobs)} program logs, "
          f"{sum(len(j[2]) for j in jobs) >> 20} MiB", flush=True)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        results = list(pool.map(lambda j: check(bpflog, *j), jobs))
    failed = [(j[3], f) for j, (f, _) in zip(jobs, results) if f]
    choices = os.path.join(work, f"choices.l{level}.tsv")
    with open(choices, "w") as out:
        for j, (_, (verdict, err)) in zip(jobs, results):
            lined = strip(j[2]) != j[2]
            out.write(f"{j[3]}\t{j[0]}\t{j[1] or ''}\t{'lines' if lined else 'bare'}\t{verdict}"
                      f"\t{err}\n")
    summarize(choices)
    bare = sum(1 for j in jobs if strip(j[2]) == j[2])
    listing = os.path.join(work, f"failures.l{level}.txt")
    with open(listing, "w") as out:
        for path, failures in failed:
            out.write(path + "\n" + "".join(f"  {f}\n" for f in failures))
    print(f"{len(jobs) - len(failed)} of {len(jobs)} program logs pass every check "
          f"({bare} have no `;` lines: loaded without line info, or ended before the first "
          f"instruction); failures in {listing}", flush=True)
    return not failed
