#!/usr/bin/env python3
"""libbpf_tools.py - bpflog against production BPF tools: objects someone else's build made.

Debian's libbpf-tools (bcc's libbpf-based tools: biosnoop, execsnoop, runqlat, ...) carry their
BPF objects inside the binaries, as libbpf skeletons embed them. This sweep cuts each object out
of each binary (an ELF image of machine EM_BPF, up to the end of its last section), checks that
bpflog reads it and lays out every program, loads every program into the running kernel at log
level 2 through `bpflog verify --raw` (never attached), and checks every log against the
object with the kernel as the oracle (checks.py says how). The objects come from Debian's build,
not ours: another clang, other flags.

Nothing here runs in `cargo test` or CI. Requirements: root (or CAP_BPF and friends), python3,
the `load` feature's build dependencies (see tests/fixtures/regenerate.sh), and
`apt-get install libbpf-tools`.

  tests/sweeps/libbpf_tools.py [--work DIR] [--level 1|2]

Exit status: 0 when every check holds, 1 otherwise; failures are listed in
WORK/failures.lLEVEL.txt.
"""

import argparse
import os
import struct
import subprocess
import sys

import checks

EM_BPF = 247
SHT_NOBITS = 8


def carve(binary, objdir):
    """The BPF objects embedded in `binary`, written to `objdir`: their paths."""
    data = open(binary, "rb").read()
    found = []
    at = data.find(b"\x7fELF")
    while at >= 0:
        head = data[at:at + 64]
        # 64-bit little-endian images of machine EM_BPF only.
        if len(head) == 64 and head[4] == 2 and head[5] == 1 and \
                struct.unpack_from("<H", head, 18)[0] == EM_BPF:
            shoff = struct.unpack_from("<Q", head, 0x28)[0]
            entsize, count = struct.unpack_from("<HH", head, 0x3a)
            end = shoff + entsize * count
            for k in range(count):
                sh = data[at + shoff + k * entsize:at + shoff + (k + 1) * entsize]
                if len(sh) < 64:
                    break
                kind = struct.unpack_from("<I", sh, 4)[0]
                offset, size = struct.unpack_from("<QQ", sh, 0x18)
                if kind != SHT_NOBITS:
                    end = max(end, offset + size)
            name = os.path.basename(binary) + (f".{len(found)}" if found else "") + ".o"
            path = os.path.join(objdir, name)
            with open(path, "wb") as out:
                out.write(data[at:at + end])
            found.append(path)
        at = data.find(b"\x7fELF", at + 1)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/bpflog-libbpf-tools", help="where everything goes")
    ap.add_argument("--level", type=int, choices=(1, 2), default=2, help="the log level")
    args = ap.parse_args()
    listed = subprocess.run(["dpkg", "-L", "libbpf-tools"], capture_output=True, text=True)
    binaries = [p for p in listed.stdout.split() if p.startswith("/usr/sbin/")
                and os.path.isfile(p)]
    if not binaries:
        sys.exit("no libbpf-tools: apt-get install libbpf-tools")
    bpflog = checks.build()
    objdir = os.path.join(args.work, "obj")
    os.makedirs(objdir, exist_ok=True)
    objs = [o for b in binaries for o in carve(b, objdir)]
    unread = []
    for obj in objs:
        # Reading the object and laying out every program, before any log.
        p = subprocess.run([bpflog, "lines", obj], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            unread.append(f"{obj}: {p.stderr.strip()}")
    print(f"{len(objs)} objects from {len(binaries)} binaries, {len(objs) - len(unread)} read "
          f"and laid out", flush=True)
    for line in unread:
        print("  " + line)
    held = checks.load_and_check(bpflog, objs, args.work, args.level)
    sys.exit(0 if held and not unread else 1)


if __name__ == "__main__":
    main()
