"""Worktree snapshots never miss an edit, even a same-size one made in the same timestamp tick
as the previous snapshot (git's "racily clean" entries)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from freshline.conversation import Author, Conversations, Event, Mode
from freshline.conversation.git import Git
from freshline.conversation.trees import admin_dir, snapshot_worktree
from tests.conftest import git
from tests.test_conversation_support import Upstream


@pytest.fixture
def isolated(tmp_path: Path) -> Conversations:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c1", Mode.ISOLATED)
    return convs


def content(convs: Conversations, tree: str, path: str) -> str:
    return git(convs.git_dir, "cat-file", "blob", f"{tree}:{path}") + "\n"


def rewrite_in_place(path: Path, text: str) -> None:
    """Overwrite without truncating or replacing: same inode, same size when `text` is."""
    with open(path, "r+", encoding="utf-8") as f:
        f.write(text)


def test_same_tick_same_size_edit_is_never_taken_as_clean(isolated: Conversations) -> None:
    # Deterministic form of the race: the file, the index and the next edit all carry one
    # timestamp, the earlier the better, so only git's racy-clean check can see the edit.
    worktree = isolated.repo.worktree_git("c1")
    index = admin_dir(worktree) / "index"
    x = isolated.worktree("c1") / "x.py"
    for i in range(10):
        past = time.time_ns() - 10**10
        x.write_text(f"x = {i}\n")
        os.utime(x, ns=(past, past))
        snapshot_worktree(worktree)
        os.utime(index, ns=(past, past))
        rewrite_in_place(x, f"x = {i + 1}\n")
        os.utime(x, ns=(past, past))
        assert content(isolated, snapshot_worktree(worktree), "x.py") == f"x = {i + 1}\n"


def test_rapid_in_place_edits_all_reach_their_snapshots(isolated: Conversations) -> None:
    worktree = isolated.repo.worktree_git("c1")
    x = isolated.worktree("c1") / "x.py"
    x.write_text("x = 0\n")
    for i in range(60):
        rewrite_in_place(x, f"x = {i % 10}\n")
        time.sleep(0.004)  # lets the clock tick between the edit and the index copy
        assert content(isolated, snapshot_worktree(worktree), "x.py") == f"x = {i % 10}\n"


def test_the_recorded_turn_holds_the_agents_latest_edit(isolated: Conversations) -> None:
    x = isolated.worktree("c1") / "x.py"
    for i in range(15):
        pending = isolated.prepare_turn("c1", f"turn {i}")
        x.write_text(f"x = {i % 10}\n") if i == 0 else rewrite_in_place(x, f"x = {i % 10}\n")
        head = isolated.commit_turn(pending, [Event(Author.ASSISTANT, "edited")])
        tree = Git(isolated.git_dir).tree_of(head)
        assert content(isolated, tree, "x.py") == f"x = {i % 10}\n"


def reference_tree(worktree: Path) -> str:
    """What a plain `git add -A` into a scratch index makes of the worktree."""
    index = worktree.parent / "reference-index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    run = lambda *a: subprocess.run(  # noqa: E731
        ["git", *a], cwd=worktree, env={**os.environ, **env}, capture_output=True, check=True
    ).stdout.decode().strip()
    run("read-tree", "HEAD")
    run("add", "-A")
    return run("write-tree")


def test_a_snapshot_is_what_add_all_makes_of_awkward_edits(isolated: Conversations) -> None:
    wt = isolated.worktree("c1")
    pending = isolated.prepare_turn("c1", "seed")
    for name in ("keep.txt", "gone.txt", "run.sh", "was-file", "d/x.txt"):
        (wt / name).parent.mkdir(exist_ok=True)
        (wt / name).write_text(f"{name}\n")
    isolated.commit_turn(pending, [Event(Author.ASSISTANT, "seeded")])
    (wt / "gone.txt").unlink()
    os.chmod(wt / "run.sh", 0o755)
    (wt / "was-file").unlink()
    (wt / "was-file").mkdir()
    (wt / "was-file" / "inner.txt").write_text("inner\n")
    shutil.rmtree(wt / "d")
    for odd in ("star*[1].txt", ":colon.txt", "sp ace.txt", "new/deep/ünï.txt"):
        (wt / odd).parent.mkdir(parents=True, exist_ok=True)
        (wt / odd).write_text(f"{odd}\n")
    (wt / ".gitignore").write_text("*.log\n")
    (wt / "noise.log").write_text("ignored\n")
    expected = reference_tree(wt)
    assert snapshot_worktree(isolated.repo.worktree_git("c1")) == expected
    head = isolated.head("c1")
    clean_check = (head, Git(isolated.git_dir).tree_of(head))
    assert snapshot_worktree(isolated.repo.worktree_git("c1"), clean_check) == expected


def test_a_clean_worktree_at_its_head_is_its_head_tree(isolated: Conversations) -> None:
    head = isolated.head("c1")
    tree = Git(isolated.git_dir).tree_of(head)
    worktree = isolated.repo.worktree_git("c1")
    assert snapshot_worktree(worktree, (head, tree)) == tree
    (isolated.worktree("c1") / "a.txt").write_text("a\n")  # rewritten, same content
    assert snapshot_worktree(worktree, (head, tree)) == tree
    (isolated.worktree("c1") / "b.txt").write_text("b\n")
    assert snapshot_worktree(worktree, (head, tree)) != tree
