"""Typed git operations: HEAD moving between two flushes is logged once per project."""

from __future__ import annotations

import pytest

from freshline.context import UpdatesInput, render_updates
from freshline.store.records import Change, ChangeKind
from freshline.tracker.gitmoves import operation, reflog_span

from .conftest import Workspace, git

A, B, Z = "a" * 40, "b" * 40, "0" * 40


@pytest.fixture
def repo(ws: Workspace) -> Workspace:
    ws.configure({"notes": {"include": ["notes"]}, "code": {"include": ["src"]}})
    ws.write(".gitignore", ".freshline/\n")
    ws.write("notes/a.md", "a on main\n")
    ws.write("src/app.py", "print('main')\n")
    git(ws.root, "init", "--quiet", "--initial-branch=main")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "--quiet", "-m", "start")
    git(ws.root, "checkout", "--quiet", "-b", "topic")
    ws.write("notes/a.md", "a on topic\n")
    ws.write("notes/b.md", "b, new on topic\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "--quiet", "-m", "topic work")
    git(ws.root, "checkout", "--quiet", "main")
    ws.tracker().scan()
    return ws


def moves(changes: list[Change]) -> list[dict[str, object]]:
    return [c.detail or {} for c in changes if c.kind is ChangeKind.GIT]


def test_a_checkout_logs_one_git_entry_beside_the_path_changes(repo: Workspace) -> None:
    main, topic = git(repo.root, "rev-parse", "main"), git(repo.root, "rev-parse", "topic")
    git(repo.root, "checkout", "--quiet", "topic")
    result = repo.tracker().scan()
    notes = result.projects["notes"].changes
    assert moves(notes) == [{
        "operation": "checkout", "from": main, "to": topic,
        "paths": ["notes/a.md", "notes/b.md"], "count": 2,
    }]
    paths = [(c.kind, c.path) for c in notes if c.kind is not ChangeKind.GIT]
    assert paths == [(ChangeKind.MODIFIED, "notes/a.md"), (ChangeKind.CREATED, "notes/b.md")]
    assert "code" not in result.projects  # the move changed nothing there


def test_the_entry_names_the_operation_and_survives_reading_the_log(repo: Workspace) -> None:
    t = repo.tracker()
    before = t.epoch("notes")
    git(repo.root, "merge", "--quiet", "topic")
    t.scan()
    git(repo.root, "reset", "--quiet", "--hard", "HEAD~1")
    t.scan()
    found = moves(t.changes_since("notes", before).changes)
    assert [m["operation"] for m in found] == ["merge", "reset"]


def test_no_entry_on_the_first_flush_nor_when_head_stays(repo: Workspace) -> None:
    t = repo.tracker()
    assert t.epoch("notes") == 0  # the first flush only learnt where HEAD is
    repo.write("notes/a.md", "edited, not committed\n")
    t.scan()
    git(repo.root, "stash", "--quiet")  # the file goes back, HEAD stays
    assert t.scan().projects["notes"].changes == [Change(ChangeKind.MODIFIED, "notes/a.md")]


def test_a_move_seen_after_its_files_still_lists_its_paths(repo: Workspace) -> None:
    git(repo.root, "checkout", "--quiet", "topic")
    t = repo.tracker()
    t.scan(["notes/a.md", "notes/b.md"])  # a watcher's flush in the middle of the checkout
    found = moves(t.changes_since("notes", 0).changes)
    assert found and found[0]["paths"] == ["notes/a.md", "notes/b.md"]


def test_the_updates_block_says_it_in_one_line(repo: Workspace) -> None:
    git(repo.root, "checkout", "--quiet", "topic")
    t = repo.tracker()
    t.scan()
    answer = t.changes_since("notes", 0)
    block = render_updates(
        UpdatesInput.from_changes("notes", str(repo.root), 0, answer.epoch, answer.changes)
    )
    main, topic = git(repo.root, "rev-parse", "main"), git(repo.root, "rev-parse", "topic")
    assert block is not None
    assert f"HEAD moved {main[:7]} → {topic[:7]} by checkout: 2 paths in this project" in block


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (["checkout: moving from main to topic"], "checkout"),
        (["merge topic: Fast-forward"], "merge"),
        (["pull --rebase (start): checkout 1a2b", "pull --rebase (finish): x"], "pull"),
        (["reset: moving to HEAD~1"], "reset"),
        (["rebase (start): checkout main", "rebase (pick): two", "rebase (finish): x"], "rebase"),
        (["commit (amend): fix"], "commit"),
        (["cherry-pick: two"], "cherry-pick"),
        (["checkout: moving from a to b", "commit: c"], "other"),
        (["update-ref by hand"], "other"),
    ],
)
def test_operation(messages: list[str], expected: str) -> None:
    assert operation(messages) == expected


def test_reflog_span() -> None:
    tail = (
        f"{Z} {A} t <t@t> 1 +0000\tcommit (initial): one\n"
        f"{A} {B} t <t@t> 2 +0000\trebase (start): checkout main\n"
        f"{B} {B} t <t@t> 3 +0000\trebase (finish): returning to refs/heads/topic\n"
    ).encode()
    assert reflog_span(tail, A, B) == [
        "rebase (start): checkout main", "rebase (finish): returning to refs/heads/topic",
    ]
    assert reflog_span(tail, "", A) == []  # not the latest move
    assert reflog_span(b"garbage\n", A, B) == []
