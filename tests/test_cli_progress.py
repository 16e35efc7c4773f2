"""Progress of the slow commands: shown on a terminal (standard error), nothing extra when
the output is piped or under `--json`. Real processes on a real pseudo-terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Workspace

FRESHLINE = [sys.executable, "-m", "freshline"]
NOTES = 30


def on_terminal(root: Path, *args: str) -> tuple[int, str]:
    """Run freshline with every stream on a pseudo-terminal: (exit code, what it showed)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([*FRESHLINE, *args], cwd=root, stdin=follower, stdout=follower,
                            stderr=follower, env=env)
    os.close(follower)
    shown = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the terminal's other side closed: the process is done
            chunk = b""
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return proc.wait(60), shown.decode(errors="replace")


def piped(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FRESHLINE, *args], cwd=root, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    for i in range(NOTES):
        ws.write(f"notes/n{i}.md", f"# Note {i}\n#paper\n")
    ws.configure({})
    return ws


def test_seen_project_add_of_a_tag_project_shows_it_is_scanning(vault: Workspace) -> None:
    """Seen: `project add` of a tag project over 6,000 notes was silent for 24 s."""
    code, shown = on_terminal(vault.root, "project", "add", "papers", "--include", "#paper")
    assert code == 0 and "scanning the workspace" in shown
    assert f"added project papers: {NOTES} files match now" in shown
    done = piped(vault.root, "project", "add", "more", "--include", "#paper")
    assert (done.returncode, done.stdout, done.stderr) == (
        0, f"added project more: {NOTES} files match now\n", "")
    code, shown = on_terminal(vault.root, "project", "add", "again", "--include", "#paper",
                              "--json")
    assert code == 0 and "scanning" not in shown and json.loads(shown)["files"] == NOTES


def test_seen_session_new_shows_its_steps(vault: Workspace) -> None:
    """Seen: `session new` on a big vault was silent for seconds."""
    vault.configure({"notes": {"include": ["notes"]}})
    code, shown = on_terminal(vault.root, "session", "new", "--project", "notes")
    assert code == 0 and "opening a session on notes" in shown
    done = piped(vault.root, "session", "new", "--project", "notes")
    assert done.returncode == 0 and done.stderr == "" and len(done.stdout.strip()) == 12


def test_seen_selftest_shows_each_scenario(tmp_path: Path) -> None:
    """Seen: `selftest` was silent for about a minute."""
    only = ("--only", "rename + edit")
    code, shown = on_terminal(tmp_path, "selftest", *only)
    # Which counts show depends on rich's refresh (10 a second): the watcher's mode can
    # be over before "0 of 3" is drawn.
    assert code == 0 and "observing with a watcher" in shown and re.search(r"\d of 3", shown)
    done = piped(tmp_path, "selftest", *only)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines()[0] == f"1 scenario × 3 modes in {tmp_path} …"
    code, shown = on_terminal(tmp_path, "selftest", *only, "--json")
    assert code == 0 and json.loads(shown)["agree"]
