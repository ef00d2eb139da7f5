#!/usr/bin/env python3
"""sweep.py - bpflog against the kernel's own BPF selftests: objects and logs we did not write.

The fixtures in tests/fixtures are programs written for bpflog. This sweep takes the ~800
programs of the kernel's BPF selftests (tools/testing/selftests/bpf/progs in Debian's
linux-source package), compiles them as the selftests' Makefile does, loads every program into
the running kernel at log level 2 through `bpflog verify --raw`, and checks every log the kernel
printed against the object, with the kernel as the oracle:

  whole     `annotate --prog P` of the log gives it back byte for byte
  stripped  the log without its `;` lines, annotated, gives the log back (logs that have such
            lines: a program loaded without line info has none, and bpflog adds them)
  chosen    `annotate` without --prog, of the whole log, gives it back; of the stripped log too,
            except where several programs fit it and would annotate it differently (programs
            with the same instructions: the error says so and names them)
  rich, profile, report
            run to the end (exit 0, or 1 for a misfit) and never panic

At level 1 (--level 1) the kernel drops the text of every path it finished but remembers the
last source line it printed there, so a stripped level-1 log may come back one `;` line off after
such a path (README, Limits): on 2026-11-30, 3 of 2,622 logs did.

Nothing here runs in `cargo test` or CI (the selftests are GPL-2.0 and are not copied into
this repository; loading needs root and a kernel with BTF). Run it by hand after changes to the
object reader, the layouts, the classifier or the annotator.

Requirements: root (or CAP_BPF and friends), /sys/kernel/btf/vmlinux, clang-19, bpftool,
python3, the `load` feature's build dependencies (see tests/fixtures/regenerate.sh), and
`apt-get install linux-source-6.12` (any linux-source tarball: --source).

  tests/kernel-selftests/sweep.py [--source TARBALL] [--work DIR] [--only REGEX] [--level 1|2]

Programs left out of the load (--exclude): those the selftests themselves run as scale tests
(pyperf, strobemeta, verif_scale, loop1..loop6, benchmarks), which take minutes and logs of
hundreds of megabytes each at level 2, and verifier_search_pruning (over 60 s). Each load has
a 60 s timeout. A level-2 load of a 200k-iteration loop oopsed this VM's 6.18 kernel once (a
NULL dereference in maybe_fork_scalars): keep heavy loops out.

Exit status: 0 when every check holds, 1 otherwise; failures are listed in
WORK/failures.lLEVEL.txt.
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXCLUDE = (r"pyperf|strobemeta|verif_scale|loop[0-9]|bench|profiler|iters_looping"
           r"|verifier_search_pruning")
HEADER = re.compile(rb"^==> (.*) <==\n", re.M)
TWINS = "fits several programs that would annotate it differently"


def sh(args, **kw):
    return subprocess.run(args, check=True, **kw)


def extract(tarball, work):
    """The selftests, libbpf's headers and the uapi headers, out of the source tarball."""
    root = os.path.join(work, "src")
    if os.path.isdir(root):
        return glob.glob(os.path.join(root, "*"))[0]
    os.makedirs(root)
    wanted = ("/tools/testing/selftests/bpf/", "/tools/lib/bpf/", "/tools/include/",
              "/scripts/bpf_doc.py")
    with tarfile.open(tarball) as tar:
        members = [m for m in tar if any(w in m.name for w in wanted)]
        tar.extractall(root, members=members, filter="data")
    return glob.glob(os.path.join(root, "*"))[0]


def headers(kernel, work):
    """vmlinux.h of the running kernel, libbpf's headers and the helper definitions."""
    inc = os.path.join(work, "include")
    bpf = os.path.join(inc, "bpf")
    if os.path.isdir(bpf):
        return inc
    os.makedirs(bpf)
    for h in glob.glob(os.path.join(kernel, "tools/lib/bpf/*.h")):
        shutil.copy(h, bpf)
    with open(os.path.join(bpf, "bpf_helper_defs.h"), "wb") as out:
        sh(["python3", os.path.join(kernel, "scripts/bpf_doc.py"), "--header", "--file",
            os.path.join(kernel, "tools/include/uapi/linux/bpf.h")], stdout=out)
    with open(os.path.join(inc, "vmlinux.h"), "wb") as out:
        sh(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"],
           stdout=out)
    return inc


def compile_one(kernel, inc, objdir, src):
    """clang as the selftests' Makefile calls it (warnings are not errors here)."""
    selftests = os.path.join(kernel, "tools/testing/selftests/bpf")
    out = os.path.join(objdir, os.path.basename(src)[:-2] + ".o")
    if os.path.exists(out):
        return True
    p = subprocess.run(
        ["clang-19", "-g", "-O2", "--target=bpf", "-mcpu=v3", "-D__TARGET_ARCH_x86",
         "-mlittle-endian", "-I" + inc, "-I" + selftests, "-I" + os.path.join(selftests, "progs"),
         "-I" + os.path.join(kernel, "tools/include/uapi"),
         "-idirafter", "/usr/include/x86_64-linux-gnu", "-idirafter", "/usr/include",
         "-Wno-compare-distinct-pointer-types", "-c", src, "-o", out],
        capture_output=True, timeout=300)
    return p.returncode == 0


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
    return b"".join(l for l in log.splitlines(keepends=True) if not l.startswith(b";"))


def check(bpflog, obj, prog, log, path):
    """The checks of one program's log (written at `path`): a list of failures."""
    def run(*args, stdin=None):
        try:
            p = subprocess.run([bpflog, *args], input=stdin, capture_output=True, timeout=300)
            return p.returncode, p.stdout, p.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            return "timeout", b"", ""

    named = ["--prog", prog] if prog else []
    stripped = strip(log)
    annotated = stripped != log
    with open(path + ".stripped", "wb") as f:
        f.write(stripped)
    failures = []
    cases = [("whole", [path] + named, log), ("chosen", [path], log)]
    if annotated:
        cases += [("stripped", [path + ".stripped"] + named, log),
                  ("chosen stripped", [path + ".stripped"], log)]
    for label, args, want in cases:
        rc, out, err = run("annotate", "--style", "kernel", "--color", "never", obj, *args)
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
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sources = sorted(glob.glob("/usr/src/linux-source-*.tar.xz"))
    ap.add_argument("--source", default=sources[-1] if sources else None,
                    help="a linux-source tarball (default: the newest in /usr/src)")
    ap.add_argument("--work", default="/tmp/bpflog-selftests", help="where everything goes")
    ap.add_argument("--only", default="", help="only the objects whose name matches")
    ap.add_argument("--exclude", default=EXCLUDE, help="objects not loaded (regex)")
    ap.add_argument("--level", type=int, choices=(1, 2), default=2, help="the log level")
    args = ap.parse_args()
    if not args.source:
        sys.exit("no linux-source tarball: apt-get install linux-source-6.12, or --source")
    sh(["cargo", "build", "--release", "--features", "load", "--quiet"], cwd=REPO)
    bpflog = os.path.join(REPO, "target/release/bpflog")
    work = args.work
    objdir = os.path.join(work, "obj")
    logdir, checkdir = (os.path.join(work, f"{d}.l{args.level}") for d in ("logs", "checked"))
    for d in (objdir, logdir, checkdir):
        os.makedirs(d, exist_ok=True)

    kernel = extract(args.source, work)
    inc = headers(kernel, work)
    srcs = [s for s in sorted(glob.glob(os.path.join(
        kernel, "tools/testing/selftests/bpf/progs/*.c"))) if re.search(args.only, s)]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        built = list(pool.map(lambda s: compile_one(kernel, inc, objdir, s), srcs))
    print(f"compiled {sum(built)} of {len(srcs)} programs' sources", flush=True)

    objs = [os.path.join(objdir, os.path.basename(s)[:-2] + ".o")
            for s, ok in zip(srcs, built) if ok]
    loaded = [o for o in objs if not re.search(args.exclude, os.path.basename(o))]
    raws = [load(bpflog, o, logdir, args.level) for o in loaded]  # one at a time: the kernel's work
    jobs = []
    for obj, raw in zip(loaded, raws):
        for prog, log in programs(raw):
            path = os.path.join(checkdir, f"{os.path.basename(obj)[:-2]}.{prog or '_'}.log")
            with open(path, "wb") as f:
                f.write(log)
            jobs.append((obj, prog, log, path))
    print(f"loaded {len(loaded)} objects ({len(objs) - len(loaded)} left out): "
          f"{len(jobs)} program logs, {sum(len(j[2]) for j in jobs) >> 20} MiB", flush=True)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        results = list(pool.map(lambda j: check(bpflog, *j), jobs))
    failed = [(j[3], f) for j, f in zip(jobs, results) if f]
    bare = sum(1 for j in jobs if strip(j[2]) == j[2])
    listing = os.path.join(work, f"failures.l{args.level}.txt")
    with open(listing, "w") as out:
        for path, failures in failed:
            out.write(path + "\n" + "".join(f"  {f}\n" for f in failures))
    print(f"{len(jobs) - len(failed)} of {len(jobs)} program logs pass every check "
          f"({bare} have no `;` lines: loaded without line info, or ended before the first "
          f"instruction); failures in {listing}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
