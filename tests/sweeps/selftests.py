#!/usr/bin/env python3
"""selftests.py - bpflog against the kernel's own BPF selftests: objects and logs we did not write.

The fixtures in tests/fixtures are programs written for bpflog. This sweep takes the ~800
programs of the kernel's BPF selftests (tools/testing/selftests/bpf/progs in Debian's
linux-source package), compiles them as the selftests' Makefile does, loads every program into
the running kernel at log level 2 through `bpflog verify --raw`, and checks every log the kernel
printed against the object, with the kernel as the oracle (checks.py says how).

Nothing here runs in `cargo test` or CI (the selftests are GPL-2.0 and are not copied into
this repository; loading needs root and a kernel with BTF). Run it by hand after changes to the
object reader, the layouts, the classifier or the annotator.

Requirements: root (or CAP_BPF and friends), /sys/kernel/btf/vmlinux, clang-19, bpftool,
python3, the `load` feature's build dependencies (see tests/fixtures/regenerate.sh), and
`apt-get install linux-source-6.12` (any linux-source tarball: --source).

  tests/sweeps/selftests.py [--source TARBALL] [--work DIR] [--only REGEX] [--level 1|2]

Programs left out of the load (--exclude): those the selftests themselves run as scale tests
(pyperf, strobemeta, verif_scale, loop1..loop6, benchmarks), which take minutes and logs of
hundreds of megabytes each at level 2, and verifier_search_pruning (over 60 s). Each load has
a 60 s timeout. A level-2 load of a 200k-iteration loop oopsed this VM's 6.18 kernel once (a
NULL dereference in maybe_fork_scalars): keep heavy loops out.

Exit status: 0 when every check holds, 1 otherwise; failures are listed in
WORK/failures.lLEVEL.txt. How `annotate` without --prog did on each log is in
WORK/choices.lLEVEL.tsv and counted at the end (checks.summarize: exact, refused among twins,
refused among programs the log could tell apart, wrong); those last refusals are listed in
WORK/choices.lLEVEL.distinguishable.txt. `--bpflog PATH` checks a given binary (another
build, to compare) instead of building this tree's.
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

import checks

EXCLUDE = (r"pyperf|strobemeta|verif_scale|loop[0-9]|bench|profiler|iters_looping"
           r"|verifier_search_pruning")


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sources = sorted(glob.glob("/usr/src/linux-source-*.tar.xz"))
    ap.add_argument("--source", default=sources[-1] if sources else None,
                    help="a linux-source tarball (default: the newest in /usr/src)")
    ap.add_argument("--work", default="/tmp/bpflog-selftests", help="where everything goes")
    ap.add_argument("--only", default="", help="only the objects whose name matches")
    ap.add_argument("--exclude", default=EXCLUDE, help="objects not loaded (regex)")
    ap.add_argument("--level", type=int, choices=(1, 2), default=2, help="the log level")
    ap.add_argument("--bpflog", help="the bpflog binary to check (default: build this tree's)")
    args = ap.parse_args()
    if not args.source:
        sys.exit("no linux-source tarball: apt-get install linux-source-6.12, or --source")
    bpflog = args.bpflog or checks.build()
    objdir = os.path.join(args.work, "obj")
    os.makedirs(objdir, exist_ok=True)
    kernel = extract(args.source, args.work)
    inc = headers(kernel, args.work)
    srcs = [s for s in sorted(glob.glob(os.path.join(
        kernel, "tools/testing/selftests/bpf/progs/*.c"))) if re.search(args.only, s)]
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        built = list(pool.map(lambda s: compile_one(kernel, inc, objdir, s), srcs))
    print(f"compiled {sum(built)} of {len(srcs)} programs' sources", flush=True)
    objs = [os.path.join(objdir, os.path.basename(s)[:-2] + ".o")
            for s, ok in zip(srcs, built) if ok]
    loaded = [o for o in objs if not re.search(args.exclude, os.path.basename(o))]
    print(f"{len(objs) - len(loaded)} objects left out (--exclude)", flush=True)
    sys.exit(0 if checks.load_and_check(bpflog, loaded, args.work, args.level) else 1)


if __name__ == "__main__":
    main()
