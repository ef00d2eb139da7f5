#!/usr/bin/env python3
"""verify_vs_veristat.py - `bpflog verify --summary` beside veristat on the same objects.

  benches/verify_vs_veristat.py --veristat PATH [--bpflog PATH] [--runs N] [--jobs N] OBJ...

Runs veristat (`-o csv`) and `bpflog verify --summary -o csv` in N pairs (the two runs of a
pair one after the other, which of them goes first alternating from pair to pair), and prints
each run's wall time, the median of each tool, and the median and range of the pairs' ratios
(bpflog / veristat), with the load average before and after. Then checks that both gave every program the same verdict and the same counters (every
CSV column but duration and veristat's peak memory).

veristat is built from github.com/libbpf/veristat (make -C src), outside this repository.
Nothing here runs in `cargo test` or CI; it needs root to load programs.
"""

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys
import time

SAME = ("verdict", "total_insns", "total_states", "peak_states", "max_states_per_insn",
        "max_mark_read_len", "prog_size", "prog_size_jited", "prog_type", "attach_type",
        "stack_depth")


def timed(cmd):
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return time.monotonic() - start, p


def rows(text):
    return {(r["file_name"], r["prog_name"]): r for r in csv.DictReader(io.StringIO(text))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--veristat", required=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bpflog", default=os.path.join(root, "target/release/bpflog"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=None, help="bpflog --jobs (default: the cores)")
    ap.add_argument("objects", nargs="+")
    args = ap.parse_args()
    veristat = [args.veristat, "-o", "csv"] + args.objects
    bpflog = [args.bpflog, "verify", "--summary", "-o", "csv"]
    if args.jobs:
        bpflog += ["--jobs", str(args.jobs)]
    bpflog += args.objects
    times = {"veristat": [], "bpflog": []}
    out = {}
    load = os.getloadavg()
    pairs = (("bpflog", bpflog), ("veristat", veristat))
    for run in range(args.runs):
        for name, cmd in pairs if run % 2 == 0 else pairs[::-1]:
            t, p = timed(cmd)
            times[name].append(t)
            out[name] = p.stdout
    after = os.getloadavg()
    v, b = statistics.median(times["veristat"]), statistics.median(times["bpflog"])
    ratios = [tb / tv for tb, tv in zip(times["bpflog"], times["veristat"])]
    print(f"{len(args.objects)} objects, {len(rows(out['veristat']))} programs, "
          f"{args.runs} paired runs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"before, {after[0]:.2f} {after[1]:.2f} {after[2]:.2f} after")
    print(f"veristat  median {v:7.2f} s   runs {' '.join(f'{t:.2f}' for t in times['veristat'])}")
    print(f"bpflog    median {b:7.2f} s   runs {' '.join(f'{t:.2f}' for t in times['bpflog'])}")
    print(f"bpflog / veristat: median of the pairs' ratios {statistics.median(ratios):.2f} "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}; pairs {' '.join(f'{r:.2f}' for r in ratios)})")
    vr, br = rows(out["veristat"]), rows(out["bpflog"])
    differ = [(k, c, vr[k][c], br.get(k, {}).get(c)) for k in vr for c in SAME
              if vr[k][c] != br.get(k, {}).get(c)]
    missing = set(vr) ^ set(br)
    for d in differ[:10]:
        print("differs:", *d)
    print(f"programs only one tool listed: {len(missing)}; values that differ: {len(differ)}")
    return 0 if not differ and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
