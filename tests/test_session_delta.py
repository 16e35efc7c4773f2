"""Live turns written from the change log (a delta on the previous tree) give exactly the tree
a full listing of the project gives, through every kind of change."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from freshline.conversation import LiveDelta, Mode
from freshline.session import SessionManager
from freshline.session.checkpoints import live_delta
from tests.conftest import Workspace
from tests.test_session import Make, deliver, started, unused

PROJECT = {"p": {"include": ["notes", "#paper"]}}
Step = Callable[[Workspace], None]


@pytest.fixture
def managers() -> Iterator[Make]:
    """Make session managers that are closed after the test."""
    made: list[SessionManager] = []

    def make(config) -> SessionManager:
        made.append(SessionManager(config))
        return made[-1]

    yield make
    for m in made:
        m.close()


def full_tree(m: SessionManager) -> str:
    """The tree of the project's in-scope files listed from the index, written from scratch."""
    return m.conversations.live_tree(m.tracker.files_in_scope("p"), m.config.root)


def delta_ready(m: SessionManager, sid: str) -> bool:
    """Whether the next turn can be written from a delta (flushes like `prepare`)."""
    m.reload_config()
    m.tracker.flush()
    return live_delta(m, m.get(sid)) is not None


def rename(ws: Workspace, old: str, new: str) -> None:
    (ws.root / new).parent.mkdir(parents=True, exist_ok=True)
    os.rename(ws.root / old, ws.root / new)


def swap_file_for_folder(ws: Workspace) -> None:
    (ws.root / "notes/d").unlink()
    ws.write("notes/d/inside.md", "was a file\n")


STEPS: list[tuple[str, Step, bool]] = [
    ("edit and create", lambda ws: (ws.write("notes/a.md", "a2\n"), ws.write("notes/n.md", "n")),
     True),
    ("delete", lambda ws: (ws.root / "notes/b.md").unlink(), True),
    ("rename a file", lambda ws: rename(ws, "notes/sub/c.md", "notes/sub/c2.md"), True),
    ("rename a folder", lambda ws: rename(ws, "notes/sub", "notes/moved"), True),
    ("mode change", lambda ws: os.chmod(ws.root / "notes/run.sh", 0o755), True),
    ("symlink", lambda ws: os.symlink("a.md", ws.root / "notes/link.md"), True),
    ("tag enters", lambda ws: ws.write("other/x.md", "---\ntags: [paper]\n---\nx\n"), True),
    ("tag leaves", lambda ws: ws.write("other/t.md", "no tag now\n"), True),
    ("rename out of scope", lambda ws: rename(ws, "notes/n.md", "elsewhere/n.md"), True),
    ("rename into scope", lambda ws: rename(ws, "elsewhere/keep.md", "notes/keep.md"), True),
    ("file becomes a folder", swap_file_for_folder, True),
    ("nothing changed", lambda ws: None, True),
    ("config change", lambda ws: ws.configure({"p": {"include": ["notes", "elsewhere"]}}),
     False),
    ("edit after the config change", lambda ws: ws.write("elsewhere/n.md", "n2\n"), True),
    ("delete a whole folder", lambda ws: [p.unlink() for p in (ws.root / "notes/moved").iterdir()],
     True),
]


def seed(ws: Workspace) -> None:
    for rel in ("notes/a.md", "notes/b.md", "notes/sub/c.md", "notes/sub/e.md", "notes/d",
                "elsewhere/keep.md"):
        ws.write(rel, f"{rel}\n")
    ws.write("notes/run.sh", "#!/bin/sh\n")
    ws.write("other/t.md", "---\ntags: [paper]\n---\nt\n")
    ws.write("other/x.md", "x\n")


def test_consecutive_delta_trees_equal_full_trees(ws: Workspace, managers: Make) -> None:
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    for name, step, by_delta in STEPS:
        step(ws)
        assert delta_ready(m, sid) is by_delta, name
        turn = deliver(m, sid, name)
        assert turn.conversation is not None
        assert turn.conversation.tree == full_tree(m), name
        head_tree = m.conversations.repo.git.tree_of(m.conversations.head(sid))
        assert head_tree == turn.conversation.tree


def test_the_first_turn_lists_in_full_and_the_next_uses_the_delta(
    ws: Workspace, managers: Make
) -> None:
    seed(ws)
    m = managers(ws.configure(PROJECT))
    s = m.new("p")
    assert not delta_ready(m, s.id)
    deliver(m, s.id, "first")
    ws.write("notes/a.md", "changed\n")
    assert delta_ready(m, s.id)
    assert deliver(m, s.id, "second").conversation.tree == full_tree(m)


def test_a_turn_accepted_but_never_recorded_still_serves_as_the_base(
    ws: Workspace, managers: Make
) -> None:
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    ws.write("notes/a.md", "seen by a turn that is accepted but never recorded\n")
    m.prepare(sid, "").accept()  # a hook delivers blocks: no conversation commit
    ws.write("notes/b.md", "b2\n")
    assert delta_ready(m, sid)  # on the unrecorded tree, not the head's
    assert deliver(m, sid, "next").conversation.tree == full_tree(m)


def test_a_failed_send_stores_nothing_and_the_next_delta_covers_both(
    ws: Workspace, managers: Make
) -> None:
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    before = m.get(sid)
    ws.write("notes/a.md", "first try\n")
    m.prepare(sid, "refused")  # never recorded nor accepted
    assert unused(m.get(sid)) == unused(before)
    ws.write("notes/b.md", "second try\n")
    assert deliver(m, sid, "again").conversation.tree == full_tree(m)


def test_a_fresh_manager_uses_the_stored_epoch(ws: Workspace, managers: Make) -> None:
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    ws.write("notes/a.md", "edited between processes\n")
    other = managers(ws.config())
    assert delta_ready(other, sid)
    assert deliver(other, sid, "from another process").conversation.tree == full_tree(other)
    assert other.in_scope._listings == {}  # the project was never listed


@pytest.mark.parametrize("base", ["head", "other", "gone"])
def test_a_delta_applies_to_its_base_tree_while_it_exists(ws: Workspace, base: str) -> None:
    seed(ws)
    m = SessionManager(ws.configure(PROJECT))
    try:
        m.tracker.flush()
        convs = m.conversations
        root = convs.open("c", Mode.LIVE, entries=m.tracker.files_in_scope("p"))
        ws.write("notes/b.md", "written into another tree first\n")
        m.tracker.flush()
        other = full_tree(m)
        trees = {"head": convs.repo.git.tree_of(root), "other": other, "gone": "0" * 40}
        ws.write("notes/a.md", "new\n")
        m.tracker.flush()
        listed: list[bool] = []

        def lazily():
            listed.append(True)
            yield from m.tracker.files_in_scope("p")

        changed = tuple(m.store.index_get(p) for p in ("notes/a.md", "notes/b.md"))
        delta = LiveDelta(changed, (), trees[base])  # type: ignore[arg-type]
        turn = convs.prepare_turn("c", "x", lazily(), delta=delta)
        assert listed == ([True] if base == "gone" else [])
        assert turn.tree == full_tree(m)
    finally:
        m.close()


def test_since_names_files_only_never_a_renamed_folder(ws: Workspace, managers: Make) -> None:
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    epoch = m.tracker.epoch("p")
    rename(ws, "notes/sub", "notes/moved")
    m.tracker.flush()
    delta = m.in_scope.since("p", epoch)
    assert delta is not None and delta.epoch == m.tracker.epoch("p")
    assert sorted(delta.changed) == ["notes/moved/c.md", "notes/moved/e.md"]
    assert delta.removed == {"notes/sub/c.md", "notes/sub/e.md"}


def test_a_path_a_rename_left_and_made_again_is_in_the_listing(
    ws: Workspace, managers: Make
) -> None:
    """Seen on PostgreSQL (the session state machine): `renamed b → sub/c` and `created
    b` in one span dropped the new b from the in-scope listing when the rename came last
    in path order."""
    seed(ws)
    m, sid = started(ws, managers, PROJECT)
    m.in_scope.entries("p")  # the listing, cached at this epoch
    epoch = m.tracker.epoch("p")
    rename(ws, "notes/b.md", "notes/sub/c9.md")
    m.tracker.flush()
    ws.write("notes/b.md", "b again\n")
    m.tracker.flush()
    delta = m.in_scope.since("p", epoch)
    assert delta is not None and "notes/b.md" in delta.changed
    assert "notes/b.md" not in delta.removed
    assert m.in_scope.entries("p") == m.tracker.files_in_scope("p")
