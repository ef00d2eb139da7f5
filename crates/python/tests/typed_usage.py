"""A typed use of every call, checked by `mypy --strict` against the package's stubs
(test_types.py); run too, so the stubs describe what the module does."""

import io
import sys
from pathlib import Path
from typing import Any, Optional

import bpflog

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"


def main() -> int:
    obj: bpflog.Object = bpflog.Object.open(FIXTURES / "obj" / "reject_subprog.o")
    also: bpflog.Object = bpflog.Object.open((FIXTURES / "obj" / "reject_subprog.o").read_bytes())
    names: list[str] = obj.programs + also.programs
    log: bytes = (FIXTURES / "logs" / "reject_subprog.xdp_reject_subprog.l2.log").read_bytes()
    text: str = obj.annotate(log, prog=names[0], style="rich", loader="libbpf")
    buf = io.BytesIO()
    none: None = obj.annotate(log.decode(), out=buf)
    pieces: list[bytes] = []
    obj.annotate(memoryview(log), out=pieces.append)
    explained: list[dict[str, Any]] = obj.explain(log)
    rows: list[dict[str, Any]] = obj.profile(bytearray(log), prog=None, loader=None)
    try:
        obj.annotate(log, prog="nope")
    except bpflog.ProgramNotFoundError as e:
        message: str = str(e)
    except bpflog.Error:
        return 1
    ok = (
        "reject_subprog.c:54" in text
    ) and (
        none is None
        and buf.getvalue() == b"".join(pieces)
        and explained[0]["class"] == "nullable-dereference"
        and sum(int(r["visits"]) for r in rows) > 0
        and "nope" in message
        and bpflog.__version__ != ""
        and obj.name.endswith("reject_subprog.o")
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
