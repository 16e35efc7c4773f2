"""Renames need content evidence: on real files, and table tests of the pure pairing."""

from __future__ import annotations

import os
import random

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.store.records import Change, ChangeKind, FileKind, IndexEntry
from freshline.tracker.renames import pair_renames
from freshline.tracker.similarity import similarity, sketch

from .conftest import Workspace

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
LONG = (
    "# Trip\n\nDay one: the train was late, the hotel was fine.\nDay two: museums.\n"
    "Day three: the coast, a long walk north along the cliffs.\nDay four: rain all day.\n"
)


def logged(ws: Workspace, project: str = "p") -> list[Change]:
    delta = ws.tracker().scan().projects.get(project)
    return delta.changes if delta else []


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.configure({"p": {"include": ["notes"]}})
    ws.write("notes/keep.md", "stays\n")
    ws.tracker().scan()
    return ws


def test_a_freed_inode_reused_by_an_unrelated_file_is_no_rename(notes: Workspace) -> None:
    cats = notes.write("notes/cats.md", "cats\n")
    logged(notes)
    inode = os.stat(cats).st_ino
    # ext4 hands a freed inode out at once, unless another process on the disk takes it
    # first; moving the file and rewriting it in place leaves the tracker the same view.
    shopping = notes.root / "notes/shopping.txt"
    os.rename(cats, shopping)
    with open(shopping, "r+b") as f:
        f.write(b"a shopping list\n")
    assert os.stat(shopping).st_ino == inode
    assert logged(notes) == [Change(D, "notes/cats.md"), Change(C, "notes/shopping.txt")]


def test_churn_of_creates_and_deletes_yields_no_false_rename(notes: Workspace) -> None:
    rng = random.Random(11)
    tracker = notes.tracker()
    alive: list[str] = []
    renames = 0
    for i in range(150):
        hinted = []
        if alive and rng.random() < 0.5:
            victim = alive.pop(rng.randrange(len(alive)))
            (notes.root / victim).unlink()
            hinted.append(victim)
        name = f"notes/n{i}.md"
        notes.write(name, f"note number {i}: {rng.random()}\n")
        alive.append(name)
        hinted.append(name)
        delta = tracker.scan(hinted).projects.get("p")
        renames += sum(c.kind is R for c in delta.changes) if delta else 0
    assert renames == 0


def test_an_exact_move_is_a_rename_whatever_the_inode(notes: Workspace) -> None:
    notes.write("notes/a.md", LONG)
    logged(notes)
    (notes.root / "notes/a.md").unlink()
    notes.write("notes/b.md", LONG)  # a copy then a delete, as some sync tools do
    assert logged(notes) == [Change(R, "notes/b.md", "notes/a.md")]


def test_a_move_plus_a_small_edit_is_renamed_and_modified(notes: Workspace) -> None:
    notes.write("notes/a.md", LONG)
    logged(notes)
    os.rename(notes.root / "notes/a.md", notes.root / "notes/b.md")
    with open(notes.root / "notes/b.md", "a") as f:
        f.write("Day five: home.\n")
    assert logged(notes) == [Change(M, "notes/b.md"), Change(R, "notes/b.md", "notes/a.md")]


def test_rename_over_an_existing_file_is_deleted_plus_modified(notes: Workspace) -> None:
    notes.write("notes/a.md", LONG)
    notes.write("notes/b.md", "the old b\n")
    logged(notes)
    os.rename(notes.root / "notes/a.md", notes.root / "notes/b.md")
    assert logged(notes) == [Change(D, "notes/a.md"), Change(M, "notes/b.md")]


def test_file_to_directory_and_back(notes: Workspace) -> None:
    notes.write("notes/x", "a file\n")
    logged(notes)
    (notes.root / "notes/x").unlink()
    notes.write("notes/x/inner.md", "now a folder\n")
    assert logged(notes) == [Change(D, "notes/x"), Change(C, "notes/x/inner.md")]
    (notes.root / "notes/x/inner.md").unlink()
    (notes.root / "notes/x").rmdir()
    notes.write("notes/x", "a file again\n")
    assert logged(notes) == [Change(C, "notes/x"), Change(D, "notes/x/inner.md")]


def test_symlink_swap(notes: Workspace) -> None:
    notes.write("notes/foo.md", LONG)
    logged(notes)
    os.rename(notes.root / "notes/foo.md", notes.root / "notes/bar.md")
    os.symlink("bar.md", notes.root / "notes/foo.md")
    assert logged(notes) == [Change(C, "notes/bar.md"), Change(M, "notes/foo.md")]
    entry = notes.tracker().store.index_get("notes/foo.md")
    assert entry is not None and entry.kind is FileKind.LINK


def test_rename_plus_edit_between_two_turns_is_one_entry_telling_both(notes: Workspace) -> None:
    runner = CliRunner()
    base = ["--workspace", str(notes.root)]
    notes.write("notes/t.md", LONG)
    new = runner.invoke(app, [*base, "session", "new", "--project", "p"])
    assert new.exit_code == 0, new.stderr
    session = new.stdout.strip()
    assert runner.invoke(app, [*base, "send", session, "hi"]).exit_code == 0
    with open(notes.root / "notes/t.md", "a") as f:
        f.write("edit\n")
    os.rename(notes.root / "notes/t.md", notes.root / "notes/t2.md")
    updates = runner.invoke(app, [*base, "updates", session])
    assert updates.exit_code == 0, updates.stderr
    # both told, the path named once: on its rename's line
    assert "Modified:" not in updates.stdout
    assert f"notes/t.md → {notes.root}/notes/t2.md (its content changed too)" in updates.stdout


# -- the pure pairing ---------------------------------------------------------------------


def entry(
    path: str, blob: str, inode: int, kind: FileKind = FileKind.FILE, size: int = 10
) -> IndexEntry:
    return IndexEntry(path, kind, size, 1, inode, 1, blob)


def pairs(
    deleted: list[IndexEntry],
    created: list[IndexEntry],
    texts: dict[str, str] | None = None,
) -> list[tuple[str, str]]:
    data = {p: t.encode() for p, t in (texts or {}).items()}
    renames, _ = pair_renames(
        {e.path: e for e in deleted},
        {e.path: e for e in created},
        lambda paths: {p: sketch(data[p]) or b"" for p in paths if p in data},
        data.get,
    )
    return sorted((r.old.path, r.new.path) for r in renames if r.old and r.new)


@pytest.mark.parametrize(
    ("deleted", "created", "texts", "expected"),
    [
        # same inode, other content: an inode is never proof
        ([entry("a", "1", 7, size=5)], [entry("b", "2", 7)], {"a": "cats\n", "b": "shop\n"}, []),
        # same content, other inode: a copy and a delete is still a move
        ([entry("a", "1", 7)], [entry("b", "1", 8)], {}, [("a", "b")]),
        # a link and a file with the same blob are different things
        ([entry("a", "1", 7, FileKind.LINK)], [entry("b", "1", 8)], {}, []),
        # several identical candidates: the inode picks the one that moved
        ([entry("a", "1", 7), entry("b", "1", 8)], [entry("c", "1", 8)], {}, [("b", "c")]),
        # several identical binary candidates and no inode to choose: nothing claimed
        ([entry("a", "1", 7), entry("b", "1", 8)], [entry("c", "1", 9)], {}, []),
        # half the old text kept: a rename
        (
            [entry("a", "1", 7, size=31)], [entry("b", "2", 9)],
            {"a": "the first line\nthe second line\n", "b": "the first line\n"
             "the second line\nthe third line\n"},
            [("a", "b")],
        ),
        # the best match wins, the other stays created
        (
            [entry("a", "1", 7, size=43)], [entry("b", "2", 8), entry("c", "3", 9)],
            {"a": "x" * 40 + "\ny\n", "b": "x" * 40 + "\nz\n", "c": "x" * 40 + "\ny\nmore\n"},
            [("a", "b")],
        ),
        # two very small files alike in a line or a final newline: never one renamed
        ([entry("a", "1", 7, size=2)], [entry("b", "2", 9)], {"a": "k\n", "b": "q\n"}, []),
        ([entry("a", "1", 7, size=4)], [entry("b", "2", 9)], {"a": "a\nb\n", "b": "a\nc\n"}, []),
    ],
)
def test_pairing(
    deleted: list[IndexEntry],
    created: list[IndexEntry],
    texts: dict[str, str],
    expected: list[tuple[str, str]],
) -> None:
    assert pairs(deleted, created, texts) == expected


@pytest.mark.parametrize(
    ("old", "new", "alike"),
    [
        ("cats\n", "a shopping list\n", False),
        ("---\ntags: [a]\n---\nfoo\n", "---\ntags: [b]\n---\nbar\n", False),  # fences only
        ("a\n", "a\nedit\n", False),  # git's measure: 2 of 7 bytes
        (LONG, LONG + "Day five: home.\n", True),
        (LONG, LONG.replace("late", "early"), True),
        ("", "", True),
    ],
)
def test_similarity(old: str, new: str, alike: bool) -> None:
    before = sketch(old.encode())
    assert before is not None
    assert (similarity(before, len(old.encode()), new.encode()) >= 0.5) is alike


def test_binary_and_large_files_have_no_sketch() -> None:
    assert sketch(b"text\0with a nul") is None
    assert sketch(b"x" * (256 * 1024 + 1)) is None
