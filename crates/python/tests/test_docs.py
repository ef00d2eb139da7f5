"""The smallest complete program of docs/python.md (the README shows the same), run as a user
runs it: it prints the command's rich annotation and a line per rejection."""

import json
import subprocess
import sys

from conftest import REPO, cli


def docs_program() -> str:
    page = (REPO / "docs" / "python.md").read_text()
    blocks = [b.split("```", 1)[0] for b in page.split("```python\n")[1:]]
    programs = [b for b in blocks if "import bpflog" in b and "sys.argv" in b]
    assert programs, "docs/python.md has no complete program"
    return programs[0]


def test_the_docs_program_annotates_and_explains(tmp_path):
    show = tmp_path / "show.py"
    show.write_text(docs_program())
    obj, log = REPO / "examples" / "reject_subprog.o", REPO / "examples" / "reject_subprog.log"
    done = subprocess.run(
        [sys.executable, str(show), str(obj), str(log)], capture_output=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    rich = cli("annotate", obj, log, "--style", "rich", "--color", "never", cwd=tmp_path)
    explained = [json.loads(line) for line in cli("explain", obj, log, "--format", "json", cwd=tmp_path).splitlines()]
    assert explained, "the example log is a rejection"
    lines = "".join(
        f"{e['class']}: {e['error']} at {e['location']['file']}:{e['location']['line']}\n" for e in explained
    )
    assert done.stdout == rich + lines.encode()


def test_the_docs_program_fails_in_one_line(tmp_path):
    show = tmp_path / "show.py"
    show.write_text(docs_program())
    done = subprocess.run(
        [sys.executable, str(show), str(tmp_path / "missing.o"), str(REPO / "examples" / "reject_subprog.log")],
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode().startswith("bpflog: ")
    assert done.stderr.decode().count("\n") == 1
