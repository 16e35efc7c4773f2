"""Exits are exits: a file hidden by an ignore rule left the project (it is still there),
it was not deleted (a file moved out: tests/test_scope_transitions.py). Renames only where
the content shows one, and a block names each path under one kind."""

from __future__ import annotations

import json

import pytest

from freshline.context import Channel
from freshline.session import SessionManager

from .conftest import Workspace

LEFT = "Left the project (the files are still there):"


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/keep.md", "k\n")
    ws.write("notes/b.md", "# B\n\nA note long enough to be recognised when it moves.\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def opened(manager: SessionManager) -> str:
    s = manager.new("p", channel=Channel.HOOK)
    manager.prepare(s.id, "", conversation=False, channel=Channel.HOOK).accept()
    return s.id


def told(ws: Workspace, session: str) -> str:
    """The next updates block, from a session manager over the config as it is now."""
    manager = SessionManager(ws.config())
    try:
        turn = manager.prepare(session, "", conversation=False, channel=Channel.HOOK)
        turn.accept()
        return turn.updates or ""
    finally:
        manager.close()


HIDERS = {
    ".gitignore": lambda ws: ws.write(".gitignore", "b.md\n"),
    "obsidian": lambda ws: ws.write(".obsidian/app.json",
                                    json.dumps({"userIgnoreFilters": ["notes/b.md"]})),
    "[workspace] ignore": lambda ws: ws.configure({"p": {"include": ["notes"]}},
                                                  ignore=["notes/b.md"]),
}


@pytest.mark.parametrize("hider", sorted(HIDERS))
def test_a_file_hidden_by_an_ignore_rule_left_the_project(
    notes: Workspace, manager: SessionManager, hider: str
) -> None:
    session = opened(manager)
    HIDERS[hider](notes)
    block = told(notes, session)
    assert f"{LEFT}\n- {notes.root}/notes/b.md (now ignored)\n" in block
    assert "Deleted:" not in block


def test_a_very_small_file_is_renamed_only_when_its_bytes_are_identical(
    notes: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    (notes.root / "notes/keep.md").unlink()
    notes.write("notes/new.md", "q\n")
    block = told(notes, session)
    assert f"Created:\n- {notes.root}/notes/new.md\nDeleted:\n- {notes.root}/notes/keep.md\n" \
        in block
    assert "Renamed:" not in block and "Modified:" not in block


def test_an_ignore_rule_and_a_move_in_one_flush_name_each_path_once(
    notes: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    notes.write(".gitignore", "b.md\n")
    (notes.root / "notes/keep.md").unlink()
    notes.write("notes/Q&A <draft>.md", "q\n")
    block = told(notes, session)
    lines = [line for line in block.split("\n") if line.startswith("- ")]
    keep = [line for line in lines if "keep.md" in line]
    assert keep == [f"- {notes.root}/notes/keep.md"], block
    assert "Renamed:" not in block
