"""Errors: the right exception, a one-line message naming the input; and hostile inputs never
raise anything but bpflog's errors (never a Rust panic)."""

import os
import random

import pytest

import bpflog
from conftest import LOGS, OBJ, strip


def one_line(e: BaseException) -> str:
    text = str(e)
    assert "\n" not in text and text
    return text


def test_hierarchy():
    for cls in (
        bpflog.ObjectError,
        bpflog.ProgramNotFoundError,
        bpflog.SelectError,
        bpflog.LogError,
        bpflog.WriteError,
        bpflog.InternalError,
    ):
        assert issubclass(cls, bpflog.Error)
    assert issubclass(bpflog.NoProgramFitsError, bpflog.SelectError)
    assert issubclass(bpflog.AmbiguousProgramError, bpflog.SelectError)
    assert issubclass(bpflog.Error, Exception)


def test_object_unreadable(tmp_path):
    missing = tmp_path / "missing.o"
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open(missing)
    assert one_line(e.value).startswith(f"{missing}: ")
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open(tmp_path)
    assert one_line(e.value).startswith(f"{tmp_path}: ")
    not_elf = tmp_path / "log.o"
    not_elf.write_bytes((LOGS / "branchy.xdp_branchy.l1.log").read_bytes())
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open(not_elf)
    assert one_line(e.value).startswith(f"{not_elf}: ")
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open(b"\x7fELF garbage")
    assert one_line(e.value).startswith("<bytes>: ")
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open(tmp_path / "a\x1b[31mred.o")
    assert one_line(e.value).startswith(f"{tmp_path}/a\\x1b[31mred.o: ")
    with pytest.raises(TypeError):
        bpflog.Object.open(42)  # type: ignore[arg-type]


def test_program_not_found():
    o = bpflog.Object.open(OBJ / "loop_callback.o")
    with pytest.raises(bpflog.ProgramNotFoundError) as e:
        o.annotate("0: (b7) r0 = 0\n", prog="no_such\x1bprog")
    text = one_line(e.value)
    assert str(OBJ / "loop_callback.o") in text and "no_such\\x1bprog" in text
    assert "loop_sum" in text
    for call in (o.explain, o.profile):
        with pytest.raises(bpflog.ProgramNotFoundError):
            call("", prog="nope")


def test_log_fits_no_program():
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    log = (LOGS / "branchy.xdp_branchy.l2.log").read_bytes()
    for call in (o.annotate, o.explain, o.profile):
        with pytest.raises(bpflog.NoProgramFitsError) as e:
            call(log)
        assert one_line(e.value).startswith(f"{OBJ / 'reject_subprog.o'}: ")
    # Text with no line the verifier prints fits every program: passed through, as the command
    # does.
    assert o.annotate(b"not a log\n") == "not a log\n"


def test_log_fits_several_programs():
    # twins.o: two programs whose code is the same up to where their logs end.
    o = bpflog.Object.open(OBJ / "twins.o")
    hits = 0
    for log in sorted(LOGS.glob("twins.*.log")):
        try:
            o.annotate(strip(log.read_bytes()))
        except bpflog.AmbiguousProgramError as e:
            hits += 1
            assert "several programs" in one_line(e)
    assert hits > 0


def test_log_line_too_long():
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    log = b"0: (b7) r0 = 0\n" + b"x" * (17 << 20) + b"\n"
    with pytest.raises(bpflog.LogError) as e:
        o.annotate(log, prog="xdp_reject_subprog")
    assert one_line(e.value).startswith("the log: ")


def test_write_error_keeps_the_cause(tmp_path):
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    log = strip((LOGS / "reject_subprog.xdp_reject_subprog.l1.log").read_bytes())

    def refuse(data: bytes) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(bpflog.WriteError) as e:
        o.annotate(log, out=refuse)
    assert isinstance(e.value.__cause__, OSError)
    assert "No space left" in one_line(e.value)
    # A text file takes no bytes.
    with open(tmp_path / "text", "w") as f:
        with pytest.raises(bpflog.WriteError) as e:
            o.annotate(log, out=f)
        assert isinstance(e.value.__cause__, TypeError)
    with pytest.raises(TypeError, match="out must be"):
        o.annotate(log, out=42)  # type: ignore[arg-type]

    def interrupt(data: bytes) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        o.annotate(log, out=interrupt)


def test_log_types():
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    with pytest.raises(TypeError, match="bytes-like"):
        o.annotate(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        o.annotate(None)  # type: ignore[arg-type]


def mutate(rng: random.Random, data: bytes, n: int) -> bytes:
    b = bytearray(data)
    for _ in range(n):
        op = rng.randrange(4)
        i = rng.randrange(len(b)) if b else 0
        if op == 0 and b:
            b[i] = rng.randrange(256)
        elif op == 1:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif op == 2 and b:
            del b[i : i + rng.randrange(1, 64)]
        else:
            b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


HOSTILE_ROUNDS = int(os.environ.get("BPFLOG_PY_FUZZ_ROUNDS", "1000"))


def test_hostile_objects_and_logs():
    rng = random.Random(37)
    objects = sorted(OBJ.glob("*.o"))
    logs = sorted(LOGS.glob("*.log"))
    for _ in range(HOSTILE_ROUNDS):
        obj = rng.choice(objects).read_bytes()
        data = mutate(rng, obj, rng.randrange(1, 6)) if rng.random() < 0.7 else obj
        try:
            o = bpflog.Object.open(data)
        except bpflog.ObjectError as e:
            one_line(e)
            continue
        log = rng.choice(logs).read_bytes()
        log = mutate(rng, log, rng.randrange(0, 40))
        prog = rng.choice(o.programs + [None]) if o.programs else None
        for call in (
            lambda: o.annotate(log, prog=prog, style=rng.choice(["kernel", "rich"])),
            lambda: o.explain(log, prog=prog),
            lambda: o.profile(log, prog=prog),
        ):
            try:
                call()
            except bpflog.InternalError:
                raise
            except bpflog.Error as e:
                one_line(e)


def test_object_read_within_the_bound():
    # A device that never ends: refused after one byte past the 256 MiB an object may hold.
    with pytest.raises(bpflog.ObjectError) as e:
        bpflog.Object.open("/dev/zero")
    assert one_line(e.value) == "/dev/zero: more than the 268435456 bytes an object may hold"
