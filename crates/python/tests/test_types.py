"""The type stubs: `mypy --strict` passes on a typed use of every call (typed_usage.py) and fails
on a wrong one; the typed use runs."""

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def mypy(path: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install mypy)")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )


def test_typed_usage_checks():
    done = mypy(HERE / "typed_usage.py")
    assert done.returncode == 0, done.stdout


def test_typed_usage_runs():
    done = subprocess.run([sys.executable, str(HERE / "typed_usage.py")], check=False)
    assert done.returncode == 0


def test_wrong_use_is_refused(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(
        "import bpflog\n"
        "obj = bpflog.Object.open('x.o')\n"
        "obj.annotate(b'', style='fancy')\n"
        "n: int = obj.programs\n"
        "s: str = obj.annotate(b'', out=print)\n"
        "t: str = obj.annotate(b'')\n"
    )
    done = mypy(wrong)
    assert done.returncode == 1
    # Lines 3, 4 and 5; not 6.
    assert done.stdout.count("error:") == 3, done.stdout
    assert "wrong.py:6:" not in done.stdout
