"""Memory: streamed to `out`, annotating a large log holds a bounded amount beside the log."""

import subprocess
import sys

from conftest import LOGS, OBJ, strip

# The peak is this process's own (VmHWM): getrusage's ru_maxrss is kept across execve, so a
# child of a parent that once held more would show no growth at all.
SCRIPT = """
import sys, bpflog
def peak():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmHWM:")) * 1024
obj, log, mode = sys.argv[1:4]
o = bpflog.Object.open(obj)
data = open(log, "rb").read()
before = peak()
if mode == "stream":
    with open("/dev/null", "wb") as f:
        o.annotate(data, prog="xdp_branchy", style="rich", out=f)
else:
    text = o.annotate(data, prog="xdp_branchy", style="rich")
print(peak() - before)
"""


def growth(obj, log, mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(obj), str(log), mode],
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    )
    return int(done.stdout)


def test_streamed_output_is_bounded(tmp_path):
    one = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes())
    log = tmp_path / "big.log"
    log.write_bytes(one * (64 * 2**20 // len(one)))
    size = log.stat().st_size
    streamed = growth(OBJ / "branchy.o", log, "stream")
    held = growth(OBJ / "branchy.o", log, "str")
    # Held, the output is there twice (the library's bytes, then the str); streamed, a buffer
    # of 1 MiB and the library's own bounded state.
    assert held > size, (held, size)
    assert streamed < 16 * 2**20, streamed
