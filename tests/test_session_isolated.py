"""Isolated sessions: the blocks point where the agent's tools can read, the worktree."""

from __future__ import annotations

from pathlib import Path

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.session import SessionManager

from .conftest import git


def test_blocks_name_worktree_paths_the_tools_can_read(code: tuple[SessionManager, Path]) -> None:
    manager, root = code
    s = manager.new("code")
    worktree = manager.conversations.worktree(s.id)
    manifest = manager.manifest_text(s.id)
    assert f'workspace="{worktree}"' in manifest
    assert str(worktree / "src/a.py") in manifest
    (root / "src/uncommitted.py").write_text("draft\n")  # not in the agent's tree
    (root / "src/b.py").write_text("y = 2\n")
    git(root, "add", "src/b.py")
    git(root, "commit", "--quiet", "-m", "upstream adds b")
    send(manager, s.id, "first", get_backend("echo"))
    (root / "src/c.py").write_text("z = 3\n")
    git(root, "add", "src/c.py")
    git(root, "commit", "--quiet", "-m", "upstream adds c")
    turn = manager.prepare(s.id, "second")
    assert turn.updates is not None
    assert str(worktree / "src/c.py") in turn.updates
    assert "uncommitted.py" not in turn.updates
    assert str(root / "src/c.py") not in turn.updates
    assert (worktree / "src/c.py").read_text() == "z = 3\n"


def test_a_sync_announces_only_in_scope_paths_and_the_preview_shows_it(
    code: tuple[SessionManager, Path],
) -> None:
    manager, root = code
    s = manager.new("code")
    send(manager, s.id, "first", get_backend("echo"))
    (root / "docs").mkdir()
    (root / "docs/secret.md").write_text("not in the project\n")
    (root / "src/d.py").write_text("d = 4\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "upstream adds docs and src")
    assert manager.sync(s.id, "main") is not None
    preview = manager.preview(s.id)
    assert preview is not None and "src/d.py" in preview and "secret" not in preview
    turn = manager.prepare(s.id, "after sync")
    assert turn.updates == preview
