"""The suite's own settings, which keep a loaded machine from failing a right test."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st


def test_hypothesis_has_no_deadline_suite_wide() -> None:
    assert settings.default.deadline is None


@settings(max_examples=5)
@given(st.integers())
def test_a_test_with_its_own_settings_keeps_no_deadline(n: int) -> None:
    assert settings().deadline is None


def test_the_quick_start_says_what_a_first_make_test_installs() -> None:
    """Seen: a first `make test` installed PostgreSQL and the real npm clients unannounced."""
    root = Path(__file__).resolve().parents[1]
    readme = root.joinpath("README.md").read_text(encoding="utf-8")
    quick = " ".join(readme.split("## Quick start")[1].split("\n## ")[0].split())
    makefile = root.joinpath("Makefile").read_text(encoding="utf-8")
    assert "postgresql-15" in makefile and "PostgreSQL 15 from Debian's packages" in quick
    sources = "".join(p.read_text() for p in root.glob("tests/integration/*.py"))
    packages = re.findall(r'NpmClient\("([^"]+)"', sources)
    assert packages and all(f"`{p}`" in quick for p in packages), packages
    assert re.search(r"about \d+ minutes", quick)


def test_the_slow_files_run_first_are_files_of_the_suite() -> None:
    """A file renamed away would silently lose its place at the front."""
    from tests.conftest import SLOW_FIRST

    names = {p.name for p in Path(__file__).resolve().parent.rglob("test_*.py")}
    assert set(SLOW_FIRST) <= names, set(SLOW_FIRST) - names


def test_make_test_keeps_the_slow_files_first() -> None:
    """xdist sorts files by their number of tests unless told not to: the slow real-client
    files (few tests each) then ran last, one worker idle beside them."""
    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text(encoding="utf-8")
    (line,) = [x for x in makefile.splitlines() if "-m pytest" in x and " -n " in x]
    assert "--dist loadfile" in line and "--no-loadscope-reorder" in line


def test_make_writes_bytecode_whatever_the_callers_environment() -> None:
    """Under PYTHONDONTWRITEBYTECODE every process of the suite compiled what it imported
    from source again (a test worker's start-up took twice its CPU): make's recipes run
    without it."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        ["make", "-s", "-C", str(root), "--eval", 'shown: ; @echo "[$$PYTHONDONTWRITEBYTECODE]"',
         "shown"], env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"
