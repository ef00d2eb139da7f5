"""`Object.annotate`: the kernel's lines back byte for byte, rich style as the command writes it,
and the same bytes whether returned or streamed to `out`."""

import io

import pytest

import bpflog
from conftest import LOGS, OBJ, cli, kernel_logs, strip

LOGS_WITH_LINES = [
    (obj, prog, log)
    for obj, prog, log in kernel_logs()
    if any(line.startswith(b";") for line in log.read_bytes().splitlines())
]


def test_fixtures_found():
    # The tests below must not pass on an empty list.
    assert len(LOGS_WITH_LINES) >= 40


@pytest.mark.parametrize("obj,prog,log", LOGS_WITH_LINES, ids=lambda v: getattr(v, "name", v))
def test_kernel_style_gives_back_the_kernels_log(obj, prog, log):
    kernel = log.read_bytes()
    o = bpflog.Object.open(obj)
    out = o.annotate(strip(kernel), prog=prog)
    assert out is not None
    assert out.encode("utf-8", "surrogateescape") == kernel


def test_kernel_style_program_chosen_from_the_log():
    kernel = (LOGS / "reject_subprog.xdp_reject_subprog.l1.log").read_bytes()
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    assert o.programs == ["xdp_reject_subprog"]
    assert o.annotate(strip(kernel)).encode() == kernel
    # Among several programs: loop_callback.o holds two.
    o = bpflog.Object.open(OBJ / "loop_callback.o")
    assert sorted(o.programs) == ["loop_nested", "loop_sum"]
    for prog in o.programs:
        kernel = (LOGS / f"loop_callback.{prog}.l2.log").read_bytes()
        assert o.annotate(strip(kernel)).encode() == kernel


@pytest.mark.parametrize(
    "obj,log",
    [
        ("reject_subprog", "reject_subprog.xdp_reject_subprog.l2.log"),
        ("reject_subprog", "reject_subprog.xdp_reject_subprog.l1.log"),
        ("branchy", "branchy.xdp_branchy.l2.log"),
        ("loop_callback", "loop_callback.loop_sum.l2.log"),
        ("reject_nested", "reject_nested.xdp_reject_nested.l1.log"),
    ],
)
def test_rich_style_as_the_command(tmp_path, obj, log):
    stripped = tmp_path / "stripped.log"
    stripped.write_bytes(strip((LOGS / log).read_bytes()))
    expected = cli(
        "annotate", OBJ / f"{obj}.o", stripped, "--style", "rich", "--color", "never", cwd=tmp_path
    )
    o = bpflog.Object.open(OBJ / f"{obj}.o")
    got = o.annotate(stripped.read_bytes(), style="rich")
    assert got is not None and got.encode() == expected
    # The log as str gives the same.
    assert o.annotate(stripped.read_text(), style="rich") == got


def test_bytes_like_logs_and_objects():
    kernel = (LOGS / "branchy.xdp_branchy.l2.log").read_bytes()
    stripped = strip(kernel)
    o = bpflog.Object.open((OBJ / "branchy.o").read_bytes())
    assert o.name == "<bytes>"
    for log in (stripped, bytearray(stripped), memoryview(stripped), stripped.decode()):
        assert o.annotate(log).encode() == kernel
    assert bpflog.Object.open(bytearray((OBJ / "branchy.o").read_bytes())).programs == o.programs
    assert bpflog.Object.open(str(OBJ / "branchy.o")).programs == o.programs

    class BytesPath:
        def __fspath__(self) -> bytes:
            return bytes(OBJ / "branchy.o")

    assert bpflog.Object.open(BytesPath()).name == str(OBJ / "branchy.o")


def test_non_utf8_bytes_round_trip():
    kernel = (LOGS / "reject_subprog.xdp_reject_subprog.l1.log").read_bytes()
    # A line the log does not recognise, not UTF-8, passes through.
    log = b"\xff\xfe not utf-8\n" + strip(kernel)
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    out = o.annotate(log, prog="xdp_reject_subprog")
    assert out is not None
    assert out.encode("utf-8", "surrogateescape") == b"\xff\xfe not utf-8\n" + kernel
    # The str given back as the log reads as the bytes it came from.
    assert o.annotate(out, prog="xdp_reject_subprog") == out


@pytest.mark.parametrize("style", ["kernel", "rich"])
def test_streamed_to_a_callable_as_returned(style):
    log = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes())
    o = bpflog.Object.open(OBJ / "branchy.o")
    pieces: list[bytes] = []
    assert o.annotate(log, style=style, out=pieces.append) is None
    assert all(isinstance(p, bytes) for p in pieces)
    assert b"".join(pieces) == o.annotate(log, style=style).encode()


def test_streamed_to_files(tmp_path):
    log = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes())
    o = bpflog.Object.open(OBJ / "branchy.o")
    expected = o.annotate(log).encode()
    buf = io.BytesIO()
    o.annotate(log, out=buf)
    assert buf.getvalue() == expected
    with open(tmp_path / "out", "wb") as f:
        o.annotate(log, out=f)
    assert (tmp_path / "out").read_bytes() == expected
    # An unbuffered file may write less than it is given: the rest is written again.
    with open(tmp_path / "raw", "wb", buffering=0) as f:
        o.annotate(log, out=f)
    assert (tmp_path / "raw").read_bytes() == expected


class Dribbling(io.RawIOBase):
    """A raw file that writes at most 1000 bytes a call."""

    def __init__(self):
        self.data = bytearray()

    def writable(self):
        return True

    def write(self, b):
        n = min(len(b), 1000)
        self.data += bytes(b[:n])
        return n


def test_short_writes_are_completed():
    log = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes())
    o = bpflog.Object.open(OBJ / "branchy.o")
    sink = Dribbling()
    o.annotate(log, out=sink)
    assert bytes(sink.data) == o.annotate(log).encode()


def test_big_output_goes_in_large_pieces():
    # About 3 MB of output: in pieces of 1 MiB, not a call per line.
    log = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes())
    o = bpflog.Object.open(OBJ / "branchy.o")
    one = o.annotate(log).encode()
    times = 3 * 2**20 // len(one) + 1
    pieces: list[bytes] = []
    o.annotate(log * times, prog="xdp_branchy", out=pieces.append)
    assert b"".join(pieces) == o.annotate(log * times, prog="xdp_branchy").encode()
    # Each piece but the last is the buffer, full to within a line.
    assert len(pieces) >= 3
    assert all(2**20 - 4096 < len(p) <= 2**20 for p in pieces[:-1])


def test_loaders():
    log = strip((LOGS / "reject_subprog.xdp_reject_subprog.l2.log").read_bytes())
    o = bpflog.Object.open(OBJ / "reject_subprog.o")
    for loader in ("libbpf", "aya", "cilium"):
        assert o.annotate(log, loader=loader) == o.annotate(log)
    with pytest.raises(ValueError, match="loader must be"):
        o.annotate(log, loader="bcc")
    with pytest.raises(ValueError, match="style must be"):
        o.annotate(log, style="fancy")


def test_layouts_that_differ():
    # two_in_one.o's xdp_nested: its subprograms sit elsewhere under cilium/ebpf's layout.
    kernel = (LOGS / "two_in_one.xdp_nested.l2.log").read_bytes()
    log = strip(kernel)
    o = bpflog.Object.open(OBJ / "two_in_one.o")
    assert o.annotate(log).encode() == kernel
    assert o.annotate(log, loader="libbpf").encode() == kernel
    with pytest.raises(bpflog.NoProgramFitsError, match=r"xdp_nested \(cilium layout\): log line 3: func#2 starts at 28"):
        o.annotate(log, loader="cilium")
    # Named, the program is used under the layout asked for, as `--prog` does.
    forced = o.annotate(log, prog="xdp_nested", loader="cilium")
    assert forced.encode() != kernel
    assert o.annotate(log, prog="xdp_nested").encode() == kernel
