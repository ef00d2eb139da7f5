#!/usr/bin/env python3
"""Load a BPF object with bpftool and show what the verifier said, with the C source put back.

    sudo python3 examples/python/verify.py tests/fixtures/obj/reject_subprog.o

bpftool's debug output (`bpftool -d prog load OBJ PIN`) carries libbpf's messages and, for each
program it loaded, the verifier's log between `-- BEGIN PROG LOAD LOG --` and
`-- END PROG LOAD LOG --`. Each log is read from there; a rejected program's log is printed
annotated (rich style) and explained, an accepted one's hottest source lines are listed. The
program bpftool pinned (when every program loaded) is unpinned and the bpffs bpftool mounted for
it, in a directory of the example's own, unmounted: the kernel is left as found.

Exit status: 0 every program loaded, 1 the kernel rejected one, 2 bad usage or no log found.
Needs root (loading, and mounting a bpffs to pin in) and bpftool.
"""

import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile

import bpflog

BEGIN = re.compile(rb"^libbpf: prog '([^']*)': -- BEGIN PROG LOAD LOG --\n", re.M)
END = b"-- END PROG LOAD LOG --"


def verifier_logs(output: bytes) -> list[tuple[str, bytes]]:
    """Each (program, log) of bpftool's debug output, in order."""
    logs = []
    for m in BEGIN.finditer(output):
        end = output.find(END, m.end())
        if end < 0:
            end = len(output)
        logs.append((m.group(1).decode(errors="replace"), output[m.end() : end]))
    return logs


def mounts_at(path: str) -> int:
    """How many mounts are stacked on `path` (/proc/self/mountinfo)."""
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo", "rb") as f:
        points = [line.split()[4] for line in f]
    return sum(1 for p in points if p.decode(errors="replace") == real)


def unmount_all(path: str) -> None:
    """Unmounts every mount stacked on `path`."""
    libc = ctypes.CDLL(None, use_errno=True)
    while mounts_at(path):
        if libc.umount2(os.fsencode(path), 0) != 0:
            raise OSError(ctypes.get_errno(), f"umount {path}")


def load(obj: str) -> tuple[int, bytes]:
    """bpftool's exit status and debug output (stdout and stderr) for loading `obj`.

    The pin goes into a directory of its own, where bpftool mounts a bpffs (its `prog load`
    pins the first program when every one loaded); afterwards the pin is removed (the program
    is unloaded with it), the bpffs unmounted and the directory removed."""
    work = tempfile.mkdtemp(prefix="bpflog-example-")
    pin = os.path.join(work, "prog")
    try:
        done = subprocess.run(
            ["bpftool", "-d", "prog", "load", obj, pin],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
    finally:
        if os.path.lexists(pin):
            os.unlink(pin)
        unmount_all(work)
        os.rmdir(work)
    return done.returncode, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("object", help="the BPF object (clang -g -O2 -target bpf)")
    parser.add_argument("--top", type=int, default=3, help="hottest lines shown per accepted program")
    args = parser.parse_args()

    if shutil.which("bpftool") is None:
        print("verify.py: bpftool is not installed", file=sys.stderr)
        return 2
    try:
        obj = bpflog.Object.open(args.object)
    except bpflog.Error as e:
        print(f"verify.py: {e}", file=sys.stderr)
        return 2

    status, output = load(args.object)
    logs = verifier_logs(output)
    if not logs:
        sys.stderr.buffer.write(output)
        print(f"verify.py: bpftool exited {status} and printed no verifier log", file=sys.stderr)
        return 2

    rejected = False
    for prog, log in logs:
        try:
            explained = obj.explain(log, prog=prog, loader="libbpf")
            if explained:
                rejected = True
                print(f"== {prog}: rejected")
                obj.annotate(log, prog=prog, style="rich", loader="libbpf", out=sys.stdout.buffer)
                sys.stdout.buffer.flush()
                for e in explained:
                    loc = e.get("location") or {}
                    print(f"== explanation: {e['class']} at {loc.get('file')}:{loc.get('line')}")
                    print(f"   error: {e['error']}")
                    print(f"   help:  {e.get('help', '')}")
            else:
                print(f"== {prog}: accepted")
                rows = [r for r in obj.profile(log, prog=prog, loader="libbpf") if r["visits"]]
                for r in rows[: args.top]:
                    print(f"   {r['visits']:>6} visits {r['states']:>4} states  "
                          f"{os.path.basename(r['file'])}:{r['line']}  {r['text']}")
        except bpflog.Error as e:
            print(f"verify.py: {prog}: {e}", file=sys.stderr)
            return 2
    if rejected or status != 0:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
