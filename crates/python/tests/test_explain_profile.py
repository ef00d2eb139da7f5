"""`Object.explain` and `Object.profile` against `bpflog explain --format json` and
`bpflog profile --format json` on every fixture log."""

import json

import pytest

import bpflog
from conftest import LOGS, OBJ, cli, kernel_logs

MANIFEST = dict(
    line.split(" ", 1) for line in (LOGS / "MANIFEST").read_text().splitlines() if line.strip()
)
REJECTED = [(o, p, log) for o, p, log in kernel_logs() if MANIFEST.get(log.name, "").startswith("rejected")]
LEVEL2 = [(o, p, log) for o, p, log in kernel_logs() if log.name.endswith(".l2.log")]


def test_fixtures_found():
    assert len(REJECTED) >= 20
    assert len(LEVEL2) >= 25


@pytest.mark.parametrize("obj,prog,log", REJECTED, ids=lambda v: getattr(v, "name", v))
def test_explain_as_the_command(tmp_path, obj, prog, log):
    expected = [
        json.loads(line)
        for line in cli("explain", obj, log, "--prog", prog, "--format", "json", cwd=tmp_path).splitlines()
        if line.strip()
    ]
    got = bpflog.Object.open(obj).explain(log.read_bytes(), prog=prog)
    assert expected, "the command explained nothing"
    assert got == expected


def test_explain_accepted_log_is_empty():
    log = (LOGS / "branchy.xdp_branchy.l2.log").read_bytes()
    assert bpflog.Object.open(OBJ / "branchy.o").explain(log) == []


def test_explain_program_chosen_from_the_log():
    log = (LOGS / "reject_subprog.xdp_reject_subprog.l2.log").read_bytes()
    (e,) = bpflog.Object.open(OBJ / "reject_subprog.o").explain(log)
    assert e["class"] == "nullable-dereference"
    assert (e["location"]["file"], e["location"]["line"]) == ("reject_subprog.c", 54)


@pytest.mark.parametrize("obj,prog,log", LEVEL2, ids=lambda v: getattr(v, "name", v))
def test_profile_as_the_command(tmp_path, obj, prog, log):
    expected = json.loads(cli("profile", obj, log, "--prog", prog, "--format", "json", cwd=tmp_path))
    rows = bpflog.Object.open(obj).profile(log.read_bytes(), prog=prog)
    assert [set(r) for r in rows] == [{"file", "line", "text", "visits", "states"}] * len(rows)
    assert [(r["file"], r["line"], r["text"], r["visits"], r["states"]) for r in rows] == [
        (l["file"], l["line"], l["source"], l["visits"], l["paths"]) for l in expected["lines"]
    ]
    # The totals: every attributed instruction line is a visit of one source line.
    totals = expected["totals"]
    assert sum(r["visits"] for r in rows) == totals["insn_lines"] - totals["unattributed"]
    assert sum(r["states"] for r in rows) <= totals["paths"]


def test_profile_rows_make_a_table():
    log = (LOGS / "loop_callback.loop_sum.l2.log").read_bytes()
    rows = bpflog.Object.open(OBJ / "loop_callback.o").profile(log)
    assert rows and rows[0]["visits"] >= rows[-1]["visits"]
    assert all(isinstance(r["file"], str) and isinstance(r["line"], int) for r in rows)
    assert any(r["states"] > 0 for r in rows)
