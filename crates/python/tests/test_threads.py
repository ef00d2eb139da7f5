"""One object used from several threads at once, and the GIL released while the library works."""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import bpflog
from conftest import LOGS, OBJ, strip


def test_one_object_many_threads():
    o = bpflog.Object.open(OBJ / "loop_callback.o")
    logs = {p: strip((LOGS / f"loop_callback.{p}.l2.log").read_bytes()) for p in o.programs}
    expected = {p: o.annotate(log, style="rich") for p, log in logs.items()}
    jobs = [p for p in o.programs for _ in range(8)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda p: (p, o.annotate(logs[p], style="rich")), jobs))
    assert got == [(p, expected[p]) for p in jobs]


def test_the_gil_is_released_while_annotating():
    o = bpflog.Object.open(OBJ / "branchy.o")
    log = strip((LOGS / "branchy.xdp_branchy.l2.log").read_bytes()) * 200
    count = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal count
        while not stop.is_set():
            count += 1

    # A thread holding the GIL keeps it for a second before another may take it: a call that
    # held it throughout would leave the other thread no time to count.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count
        o.annotate(log, prog="xdp_branchy", style="rich")
        during = count - before
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(interval)
    assert during > 1000, during
