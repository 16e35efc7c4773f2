"""A session is told the net difference between what it last saw and what is there now: an
edit reverted, a file deleted and recreated byte for byte, a rename whose content came
back, each with a scan in between, and a `git rebase` with the watcher running, which
rewrites files through states a session never needs to hear about."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.context import Channel
from freshline.session import SessionManager
from freshline.store.records import ChangeKind
from freshline.tracker.hints import watcher_alive

from .conftest import Workspace, git, git_env, serving, wait_for

FRESHLINE = [sys.executable, "-m", "freshline"]


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/b.md", "# B\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def opened(manager: SessionManager) -> str:
    s = manager.new("p", channel=Channel.HOOK)
    manager.prepare(s.id, "", conversation=False, channel=Channel.HOOK).accept()
    return s.id


def updates(manager: SessionManager, session: str) -> str | None:
    turn = manager.prepare(session, "", conversation=False, channel=Channel.HOOK)
    turn.accept()
    return turn.updates


def test_an_edit_reverted_after_a_scan_is_not_told(
    notes: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    notes.write("notes/a.md", "# A, edited\n")
    manager.tracker.flush()
    notes.write("notes/a.md", "# A\n")
    manager.tracker.flush()
    assert updates(manager, session) is None


def test_a_file_deleted_and_recreated_byte_identical_is_not_told(
    notes: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    (notes.root / "notes/a.md").unlink()
    manager.tracker.flush()
    notes.write("notes/a.md", "# A\n")
    notes.write("notes/b.md", "# B, edited\n")
    block = updates(manager, session)
    assert block is not None and "notes/b.md" in block and "notes/a.md" not in block


def test_a_rename_whose_content_came_back_is_a_rename_only(
    notes: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    (notes.root / "notes/a.md").rename(notes.root / "notes/c.md")
    manager.tracker.flush()
    notes.write("notes/c.md", "# A, edited\n")
    manager.tracker.flush()
    notes.write("notes/c.md", "# A\n")
    block = updates(manager, session)
    assert block is not None
    assert f"Renamed:\n- {notes.root}/notes/a.md → {notes.root}/notes/c.md" in block
    assert "Modified:" not in block


def test_a_change_that_stands_is_still_told(notes: Workspace, manager: SessionManager) -> None:
    session = opened(manager)
    notes.write("notes/a.md", "# A, edited\n")
    manager.tracker.flush()
    notes.write("notes/a.md", "# A, edited again\n")
    block = updates(manager, session)
    assert block is not None and f"Modified:\n- {notes.root}/notes/a.md" in block


def commit(repo: Path, message: str, **files: str) -> None:
    for name, text in files.items():
        path = repo / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def history(ws: Workspace) -> Workspace:
    """A repository with some history: `main` moved on by two commits after `feature`
    (three commits of its own) branched off; `feature` is checked out."""
    repo = ws.root
    git(repo, "init", "-q", "-b", "main")
    (repo / ".git/info/exclude").write_text(".freshline/\nfreshline.toml\n")
    commit(repo, "start", **{"src__app.py": "app = 1\n", "src__db.py": "db = 1\n",
                             "docs__intro.md": "# Intro\n", "README.md": "# R\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "app 2", **{"src__app.py": "app = 2\n"})
    commit(repo, "db 2", **{"src__db.py": "db = 2\n"})
    commit(repo, "guide", **{"docs__guide.md": "# Guide\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, "intro 2", **{"docs__intro.md": "# Intro, second\n"})
    commit(repo, "cli", **{"src__cli.py": "cli = 1\n"})
    git(repo, "checkout", "-q", "feature")
    ws.configure({"code": {"include": ["src", "docs"]}}, debounce_ms=50)
    return ws


@pytest.fixture
def watcher(history: Workspace) -> Iterator[None]:
    with serving() as service:
        service.workspaces.watch(history.root)
        tracker = history.tracker()
        wait_for(lambda: watcher_alive(tracker.store) and tracker.store.project_state("code"))
        yield


def test_a_rebase_with_the_watcher_running_tells_only_what_it_changed(
    history: Workspace, watcher: None
) -> None:
    manager = SessionManager(history.config())
    try:
        s = manager.new("code", channel=Channel.HOOK)
        manager.prepare(s.id, "", conversation=False, channel=Channel.HOOK).accept()
        cursor = manager.tracker.epoch("code")
        # Each replayed commit is flushed through the watcher (a `scan` asks it to catch
        # up), so the log holds the states in between, as a busy watcher's would.
        scan = " ".join([*FRESHLINE, "--workspace", str(history.root), "scan"])
        subprocess.run(["git", "rebase", "-q", "--exec", scan, "main"], cwd=history.root,
                       env=git_env(), check=True, capture_output=True)
        manager.tracker.flush()
        logged = {(e.change.kind, e.change.path) for e in manager.store.log_read("code", cursor)}
        # the states in between were logged: db.py as it is on main, guide.md not there yet
        assert {(ChangeKind.MODIFIED, "src/db.py"), (ChangeKind.DELETED, "docs/guide.md")} \
            <= logged
        answer = manager.tracker.changes_since("code", cursor)
        paths = {(c.kind, c.path) for c in answer.changes if c.path}
        assert paths == {(ChangeKind.MODIFIED, "docs/intro.md"),
                         (ChangeKind.CREATED, "src/cli.py")}
        block = updates(manager, s.id)
        assert block is not None
        assert "src/app.py" not in block and "src/db.py" not in block
        assert "docs/guide.md" not in block
        assert "2 paths in this project" in block
    finally:
        manager.close()
