"""Properties of refresh over random disjoint edits, and worktree lifecycle edges."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from freshline.conversation import Author, Conversations, Event, Mode
from freshline.errors import ConflictStop, NotFoundError
from tests.conftest import git, git_env
from tests.test_conversation_support import Upstream

NAMES = [f"f{i}.txt" for i in range(8)] + ["d/g.txt", "d/h.txt"]


@st.composite
def disjoint_edits(draw):
    """(ours, theirs): edits to disjoint paths; None deletes, a missing base path adds."""
    paths = draw(st.permutations(NAMES + ["new1.txt", "d/new2.txt"]))
    split = draw(st.integers(0, len(paths)))
    content = st.one_of(st.none(), st.text("xyz\n", min_size=1, max_size=6))
    ours = {p: draw(content) for p in paths[:split][:4]}
    theirs = {p: draw(content) for p in paths[split:][:4]}
    return ours, theirs


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(disjoint_edits())
def test_refresh_keeps_both_sides_and_diff_shows_only_ours(edits) -> None:
    ours, theirs = edits
    base = {p: f"base {p}\n" for p in NAMES}
    with tempfile.TemporaryDirectory() as tmp:
        up = Upstream(Path(tmp) / "ws")
        up.commit("main", base, parent=None)
        convs = Conversations(up.root)
        convs.open("p", Mode.ISOLATED)
        pending = convs.prepare_turn("p", "edit")
        for path, content in ours.items():
            file = convs.worktree("p") / path
            if content is None:
                file.unlink(missing_ok=True)
            else:
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(content)
        convs.commit_turn(pending, [Event(Author.ASSISTANT, "done")])
        up.commit("main", {p: c for p, c in theirs.items() if c is not None or p in base})

        pending = convs.prepare_turn("p", "refresh")
        head = convs.commit_turn(pending, [])
        expected = dict(base)
        for side in (ours, theirs):
            expected.update(side)
        for path, content in expected.items():
            assert up.show(head, path) == content
        changed_ours = {p for p, c in ours.items() if c != base.get(p)}
        changed_theirs = {p for p, c in theirs.items() if c != base.get(p)}
        if changed_theirs:
            assert pending.refresh is not None
            assert set(pending.refresh.paths) == changed_theirs
        patch_paths = git(up.root, "diff", "--name-only", pending.parents[-1], head).split()
        assert set(patch_paths) == changed_ours
        headers = [line for line in convs.diff("p").splitlines() if line.startswith("diff --git")]
        assert {h.split(" b/", 1)[1] for h in headers} == changed_ours


def test_missing_worktree_is_checked_out_again_at_the_head(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c", Mode.ISOLATED)
    pending = convs.prepare_turn("c", "edit")
    (convs.worktree("c") / "a.txt").write_text("edited\n")
    head = convs.commit_turn(pending, [Event(Author.ASSISTANT, "ok")])
    convs.close("c")
    assert not convs.worktree("c").exists()
    with pytest.raises(NotFoundError):
        convs.snapshot_worktree("c")
    pending = convs.prepare_turn("c", "again")
    assert (convs.worktree("c") / "a.txt").read_text() == "edited\n"
    assert pending.tree == git(up.root, "rev-parse", f"{head}^{{tree}}")


def test_reset_worktree_discards_unrecorded_edits(tmp_path: Path) -> None:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\n"}, parent=None)
    convs = Conversations(up.root)
    convs.open("c", Mode.ISOLATED)
    wt = convs.worktree("c")
    (wt / "a.txt").write_text("scribble\n")
    (wt / "junk.txt").write_text("junk\n")
    convs.reset_worktree("c")
    assert (wt / "a.txt").read_text() == "a\n" and not (wt / "junk.txt").exists()
    status = git(up.root, "status", "--porcelain", "--untracked-files=all")
    assert ".freshline" not in status  # the private dir stays out of the user's checkout


BASE = {f"f{i}.txt": f"base line {i}\nsecond {i}\nthird {i}\n" for i in range(4)}
BASE |= {"d/g.txt": "g one\ng two\ng three\n", "run.sh": "#!/bin/sh\necho run\n"}


@st.composite
def operations(draw, files: dict[str, str], modes: dict[str, str], prefix: str):
    """Edits to `files`/`modes` (changed in place): modify, delete, rename, add, chmod."""
    for n in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["modify", "delete", "rename", "add", "chmod"]))
        path = draw(st.sampled_from(sorted(files))) if files else None
        if kind == "add" or path is None:
            files[draw(st.sampled_from([f"{prefix}{n}.txt", "f0.txt", "d/new.txt"]))] = (
                f"added by {prefix}\n{n}\n")
        elif kind == "modify":
            files[path] = files[path].replace("second", draw(st.sampled_from(
                [f"{prefix} edit", "same edit"])), 1) + f"{prefix} tail\n"
        elif kind == "delete":
            del files[path]
            modes.pop(path, None)
        elif kind == "rename":
            new = draw(st.sampled_from([f"{prefix}-moved.txt", "moved.txt", "d/h.txt"]))
            files[new] = files.pop(path)
            if path in modes:
                modes[new] = modes.pop(path)
        else:
            modes[path] = "100644" if modes.get(path) == "100755" else "100755"


def merge_conflicts(up: Upstream, head: str, target: str) -> bool:
    """Whether `git merge` in a checkout of `head` leaves unmerged paths (the oracle)."""
    scratch = up.root.parent / "scratch"
    git(up.root, "worktree", "add", "-q", "--detach", str(scratch), head)
    try:
        subprocess.run(["git", "merge", "-q", "--no-edit", "--no-commit", target],
                       cwd=scratch, capture_output=True, env=git_env())
        return git(scratch, "ls-files", "-u") != ""
    finally:
        git(up.root, "worktree", "remove", "--force", str(scratch))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_publish_is_refused_exactly_when_git_leaves_a_conflict(data) -> None:
    ours, our_modes = dict(BASE), {"run.sh": "100755"}
    data.draw(operations(ours, our_modes, "agent"))
    theirs, their_modes = dict(BASE), {"run.sh": "100755"}
    data.draw(operations(theirs, their_modes, "up"))
    with tempfile.TemporaryDirectory() as tmp:
        up = Upstream(Path(tmp) / "ws")
        up.commit("main", BASE, parent=None, modes={"run.sh": "100755"})
        convs = Conversations(up.root)
        convs.open("p", Mode.ISOLATED)
        pending = convs.prepare_turn("p", "edit")
        wt = convs.worktree("p")
        for path in set(BASE) - set(ours):
            (wt / path).unlink()
        for path, content in ours.items():
            (wt / path).parent.mkdir(parents=True, exist_ok=True)
            (wt / path).write_text(content)
            os.chmod(wt / path, 0o755 if our_modes.get(path) == "100755" else 0o644)
        chmods = tuple(p for p in ours if our_modes.get(p, "100644") != (
            "100755" if p == "run.sh" and p in BASE else "100644"))
        tool = Event(Author.TOOL, "chmod", tool="chmod", mode_changes=chmods)
        before = convs.commit_turn(pending, [tool, Event(Author.ASSISTANT, "done")])
        gone = {p: None for p in set(BASE) - set(theirs)}
        target = up.commit("main", {**theirs, **gone}, modes=their_modes)

        record = convs.sync("p", "main", with_conflicts=True)
        after = convs.head("p")
        assert record is not None
        diff = git(up.root, "diff", "--no-renames", "--name-only", before, after)
        assert list(record.paths) == diff.split()  # a rename names both of its paths
        conflicted = merge_conflicts(up, before, target)
        assert bool(record.conflicts) == conflicted
        try:
            convs.publish("p", "pub")
            refused = False
        except ConflictStop:
            refused = True
        assert refused == conflicted
