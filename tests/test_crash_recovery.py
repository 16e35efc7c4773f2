"""A send killed at every step of a refreshing turn, and what the next command finds.

The kill is injected by the test hook (FRESHLINE_KILL_AT names the step at which the
process SIGKILLs itself), not by timing. After it, any command that opens the session rolls
the interrupted turn back: the worktree equals the head's tree, and the next send works and
never records the killed turn's edits under its own user event.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app

from .conftest import git, git_env

runner = CliRunner()
UPSTREAM_FILES = 200
KILLED_TURN = [
    {"tool": "write", "args": {"path": "src/killed.py", "content": "killed = True\n"}},
    {"tool": "read", "args": {"path": "src/a.py"}},  # tools write only what was read
    {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 'killed'"}},
    {"say": "done"},
]
STEPS = ["prepare:snapshot", "prepare:journal", "prepare:moved", "tool:wrote",
         "tool:snapshot", "record:commits", "record:advanced", "accept:done"]
RECORDED = {"record:advanced", "accept:done"}  # the ref moved before the kill


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def script(tmp_path: Path, name: str, steps: list[dict[str, object]]) -> str:
    """A script whose second turn is `steps`: the `moved` session sent once already."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"turns": [[{"say": "first"}], steps]}))
    return f"scripted:{path}"


def killed_send(root: Path, session: str, model: str, step: str) -> subprocess.CompletedProcess:
    env = git_env(FRESHLINE_KILL_AT=step, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(
        [sys.executable, "-m", "freshline", "--workspace", str(root), "send", session,
         "the killed turn", "--model", model],
        env=env, capture_output=True, timeout=120,
    )


@pytest.fixture
def moved(tmp_path: Path) -> tuple[Path, str]:
    """A checkout, an isolated session that sent once, and main moved with many files."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "src").mkdir()
    (root / "src/a.py").write_text("a = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    assert cli(root, "init", str(root))[0] == 0
    assert cli(root, "project", "add", "code", "--include", "src", "--mode", "isolated")[0] == 0
    code, out, err = cli(root, "session", "new", "--project", "code", "--json")
    assert code == 0, err
    session = json.loads(out)["id"]
    assert cli(root, "send", session, "first")[0] == 0
    lines = ["commit refs/heads/main", "committer t <t@t> 1700000000 +0000", "data 2", "up",
             f"from {git(root, 'rev-parse', 'main')}"]
    for i in range(UPSTREAM_FILES):
        lines += [f"M 100644 inline src/up/{i}.py", "data 6", f"u={i:03}\n"]
    git(root, "fast-import", "--quiet", input="".join(f"{line}\n" for line in lines).encode())
    return root, session


def worktree_of(root: Path, session: str) -> Path:
    return root / ".freshline" / "worktrees" / session


def assert_worktree_is_head(root: Path, session: str) -> str:
    """The worktree holds exactly the head's tree (files, index, HEAD); returns the head."""
    wt = worktree_of(root, session)
    head = git(root, "rev-parse", f"refs/freshline/conversations/{session}")
    assert git(wt, "rev-parse", "HEAD") == head
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(wt, "write-tree") == git(root, "rev-parse", f"{head}^{{tree}}")
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    assert not (admin / "index.lock").exists()
    return head


def conversation_files(root: Path, session: str) -> set[str]:
    """Every path any event of the conversation recorded (its first-parent chain)."""
    ref = f"refs/freshline/conversations/{session}"
    commits = git(root, "rev-list", "--first-parent", ref).split()
    return {p for c in commits for p in git(root, "ls-tree", "-r", "--name-only", c).split()}


@pytest.mark.parametrize("step", STEPS)
def test_a_send_killed_at_each_step_is_recovered(
    moved: tuple[Path, str], tmp_path: Path, step: str
) -> None:
    root, session = moved
    before = git(root, "rev-parse", f"refs/freshline/conversations/{session}")
    killed = killed_send(root, session, script(tmp_path, "killed", KILLED_TURN), step)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()

    assert cli(root, "log", session)[0] == 0  # any command that opens the session recovers
    head = assert_worktree_is_head(root, session)
    assert (head != before) == (step in RECORDED)
    if step not in RECORDED:
        assert "src/killed.py" not in conversation_files(root, session)

    code, out, err = cli(root, "send", session, "next", "--json")
    assert code == 0, err
    after = assert_worktree_is_head(root, session)
    events = json.loads(cli(root, "log", session, "--json")[1])
    user = next(e for e in reversed(events) if e["author"] == "user")
    user_tree = git(root, "ls-tree", "-r", "--name-only", user["commit"]).split()
    assert ("src/killed.py" in user_tree) == (step in RECORDED)
    assert len([p for p in user_tree if p.startswith("src/up/")]) == UPSTREAM_FILES
    first_parent = git(root, "rev-parse", f"{user['commit']}^1")
    own = git(root, "diff", "--name-only", first_parent, user["commit"]).split()
    assert all(p.startswith("src/up/") for p in own)  # the merge only: no agent edits
    assert after != head


def test_a_git_killed_mid_merge_leaves_a_lock_and_half_a_merge_that_recovery_undoes(
    moved: tuple[Path, str], tmp_path: Path
) -> None:
    """Seen: a stale index.lock blocked every later send, and a half-merged worktree was
    taken for the agent's own edits. Killed after the journal, then left as a `read-tree
    -m -u` killed midway leaves it: the lock, some upstream files, a file missing."""
    root, session = moved
    killed = killed_send(root, session, script(tmp_path, "k", KILLED_TURN), "prepare:journal")
    assert killed.returncode == -signal.SIGKILL
    wt = worktree_of(root, session)
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    (admin / "index.lock").write_bytes(b"DIRC partial")
    for i in range(0, UPSTREAM_FILES, 3):
        (wt / f"src/up/{i}.py").parent.mkdir(exist_ok=True)
        (wt / f"src/up/{i}.py").write_text(f"u={i:03}\n")
    (wt / "src/a.py").unlink()

    code, out, err = cli(root, "send", session, "next", "--json")
    assert code == 0, err
    assert_worktree_is_head(root, session)
    refreshed = json.loads(out)["refreshed"]
    assert refreshed is not None and len(refreshed["paths"]) == UPSTREAM_FILES
    assert "src/a.py" not in cli(root, "diff", session)[1]  # not taken for the agent's edit
    assert (wt / "src/a.py").read_text() == "a = 1\n"


def test_a_git_lock_held_briefly_is_waited_for_and_a_stuck_one_is_one_line(
    moved: tuple[Path, str],
) -> None:
    root, session = moved
    wt = worktree_of(root, session)
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    lock = admin / "index.lock"
    lock.write_bytes(b"")  # another git, not freshline's turn: no journal
    code, _out, err = cli(root, "send", session, "next")
    assert code == 1
    assert err.strip().count("\n") == 0 and "index.lock is held by another git process" in err
    assert "Another git process seems to be running" not in err
    lock.unlink()
    assert cli(root, "send", session, "next")[0] == 0
    assert_worktree_is_head(root, session)
