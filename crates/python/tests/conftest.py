"""What the tests share: the repository's fixtures and the `bpflog` command to compare with.

The command is `$BPFLOG_BIN`, or `target/debug/bpflog` of the repository (`cargo build`).
"""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
OBJ = FIXTURES / "obj"
LOGS = FIXTURES / "logs"


def kernel_logs():
    """Every fixture log as (object path, program, log path): `OBJECT.PROG.lN.log`."""
    found = []
    for log in sorted(LOGS.glob("*.log")):
        stem = log.name[: -len(".lN.log")]
        obj_name, _, prog = stem.rpartition(".")
        obj = OBJ / f"{obj_name}.o"
        if obj.exists():
            found.append((obj, prog, log))
    return found


def strip(log: bytes) -> bytes:
    """The log with the kernel's `;` source lines removed, as a loader without line info prints it."""
    return b"".join(line for line in log.splitlines(keepends=True) if not line.startswith(b";"))


def bpflog_bin() -> Path:
    path = Path(os.environ.get("BPFLOG_BIN", REPO / "target" / "debug" / "bpflog"))
    if not path.exists():
        pytest.skip(f"no bpflog command at {path}: run `cargo build` (or set BPFLOG_BIN)")
    return path


def cli(*args, cwd=None) -> bytes:
    """The command's standard output; it must succeed. Run in an empty directory by default, so
    that it reads no source file the library (which reads none) would not."""
    done = subprocess.run(
        [str(bpflog_bin()), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


@pytest.fixture
def empty_dir(tmp_path):
    return tmp_path
