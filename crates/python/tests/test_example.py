"""examples/python/verify.py: loads objects with bpftool as root, prints the annotated log and
the explanation of a rejection, and leaves the kernel as found (no program, pin or mount left).

Skipped, saying why, when not root, without bpftool, or where this kernel refuses to load."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import OBJ, REPO

EXAMPLE = REPO / "examples" / "python" / "verify.py"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="loading BPF programs needs root"),
    pytest.mark.skipif(shutil.which("bpftool") is None, reason="bpftool is not installed"),
]


def programs_named(names: set[str]) -> set[int]:
    out = subprocess.run(["bpftool", "prog", "show", "--json"], stdout=subprocess.PIPE, check=True).stdout
    return {p["id"] for p in json.loads(out or b"[]") if p.get("name") in names}


def mounts() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        return sorted(line.split()[4] for line in f)


def run(obj: str) -> subprocess.CompletedProcess:
    # BPF program names are cut to 15 characters by the kernel.
    before = (programs_named({"xdp_reject_subp", "xdp_branchy"}), mounts())
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), obj],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode == 2 and "no verifier log" in done.stderr:
        pytest.skip(f"this kernel does not load programs here: {done.stderr.strip()[-300:]}")
    after = (programs_named({"xdp_reject_subp", "xdp_branchy"}), mounts())
    assert after[1] == before[1], "a mount was left behind"
    assert not (after[0] - before[0]), "a program was left loaded"
    return done


def test_rejected_program_is_annotated_and_explained():
    done = run(str(OBJ / "reject_subprog.o"))
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert "== xdp_reject_subprog: rejected" in out
    # The rich style's lines and diagnostic, then the explanation.
    assert "; fv->bytes += len; @ reject_subprog.c:54:15 in update_flow" in out
    assert "R1 invalid mem access 'map_value_or_null'" in out
    assert "  --> reject_subprog.c:54:12" in out
    assert "== explanation: nullable-dereference at reject_subprog.c:54" in out


def test_accepted_program_is_profiled():
    done = run(str(OBJ / "branchy.o"))
    assert done.returncode == 0, done.stderr
    assert "== xdp_branchy: accepted" in done.stdout
    assert "branchy.c:" in done.stdout and " visits " in done.stdout


def test_bad_object():
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(EXAMPLE)], stderr=subprocess.PIPE, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"verify.py: {EXAMPLE}: ")
