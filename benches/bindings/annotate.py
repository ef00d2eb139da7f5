"""The Python package's side of benches/bindings.rs: annotates a log file's bytes, read whole as
a loader holds its log, streaming the output into a file; then prints its peak memory (VmHWM,
KiB) on stderr when BPFLOG_BENCH_PEAK is set.

usage: python annotate.py OBJ PROG LOG OUT
"""

import os
import sys

import bpflog


def peak_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def main():
    obj, prog, log, out = sys.argv[1:]
    with open(log, "rb") as f:
        data = f.read()
    o = bpflog.Object.open(obj)
    with open(out, "wb") as f:
        o.annotate(data, prog=prog, out=f)
    if "BPFLOG_BENCH_PEAK" in os.environ:
        print(f"peak_kib {peak_kib()}", file=sys.stderr)


if __name__ == "__main__":
    main()
