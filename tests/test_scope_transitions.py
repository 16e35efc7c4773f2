"""A note whose content moves it out of a project (or into one) "left the project" or
"entered the project", with the reason, and reads so in every channel: the blocks
(send, ACP), the hook, MCP and `freshline changes`. A file that left and was then
deleted is one `deleted`. Scope changes by config read the same way, and so do exits: a
file hidden by an ignore rule or moved out left the project (it is still there), never
deleted. Renames only where the content shows one, and a block names each path under one
kind."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from freshline.context import Channel
from freshline.interfaces.acp.desk import Desk
from freshline.interfaces.cli import app
from freshline.interfaces.mcp.service import FreshlineService
from freshline.session import SessionManager

from .conftest import Workspace

runner = CliRunner()
HISTORY = "notes/Version history.md"
LEFT = "Left the project (the files are still there):"
ENTERED = "Entered the project:"


def note(ws: Workspace, path: str, front: str = "", body: str = "Some text.\n") -> None:
    ws.write(path, f"---\n{front}---\n{body}" if front else body)


@pytest.fixture
def tagged(ws: Workspace) -> Workspace:
    note(ws, HISTORY, body="v1 of the history.\n")
    note(ws, "notes/plan.md")
    ws.configure({"vault": {"include": ["notes"], "exclude": ["#personal"]}})
    return ws


@pytest.fixture
def mobile(ws: Workspace) -> Workspace:
    note(ws, "m/phone.md", "mobile: true\n")
    note(ws, "m/desk.md", "mobile: false\n")
    ws.configure({"vault": {"include": ["[mobile:true]"]}})
    return ws


def told(manager: SessionManager, session: str, channel: Channel = Channel.SEND) -> str:
    """The updates block the next send on `channel` carries, accepted."""
    turn = manager.prepare(session, "hi", conversation=False, channel=channel)
    turn.accept()
    return turn.updates or ""


def opened(manager: SessionManager, channel: Channel = Channel.SEND) -> str:
    s = manager.new("vault", channel=channel)
    manager.prepare(s.id, "", conversation=False, channel=channel).accept()
    return s.id


def changes(ws: Workspace, *args: str) -> str:
    result = runner.invoke(app, ["--workspace", str(ws.root), "changes", "vault", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_a_note_that_gains_an_excluded_tag_left_the_project(
    tagged: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    epoch = manager.tracker.epoch("vault")
    note(tagged, HISTORY, body="v1 of the history. #personal\n")
    block = told(manager, session)
    assert "Deleted:" not in block
    assert f"{LEFT}\n- {tagged.root}/{HISTORY} (now tagged #personal)" in block
    line = f"left      {HISTORY} (now tagged #personal)"
    assert line in changes(tagged, "--since", str(epoch))
    data = json.loads(changes(tagged, "--since", str(epoch), "--json"))
    assert data["changes"] == [{"kind": "left", "path": HISTORY, "old_path": None,
                                "detail": {"why": "tagged", "pattern": "#personal"}}]
    # The tag goes again: the note is back, as it was (nothing else changed in it).
    note(tagged, HISTORY, body="v1 of the history.\n")
    block = told(manager, session)
    assert f"{ENTERED}\n- {tagged.root}/{HISTORY} (no longer tagged #personal)" in block


def test_a_property_that_stops_matching_left_the_project_and_back(
    mobile: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    note(mobile, "m/phone.md", "mobile: false\n")
    note(mobile, "m/desk.md", "mobile: true\n")
    block = told(manager, session)
    assert f"{LEFT}\n- {mobile.root}/m/phone.md (mobile is now false)" in block
    assert f"{ENTERED}\n- {mobile.root}/m/desk.md (mobile is now true)" in block
    assert "Deleted:" not in block and "Created:" not in block
    note(mobile, "m/desk.md", "title: no mobile key\n")
    assert f"- {mobile.root}/m/desk.md (mobile is now unset)" in told(manager, session)


def test_a_file_that_left_and_then_was_deleted_is_one_deletion(
    tagged: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    epoch = manager.tracker.epoch("vault")
    note(tagged, HISTORY, body="#personal\n")
    manager.tracker.flush()
    (tagged.root / HISTORY).unlink()
    block = told(manager, session)
    assert f"Deleted:\n- {tagged.root}/{HISTORY}" in block and "Left" not in block
    assert f"deleted   {HISTORY}" in changes(tagged, "--since", str(epoch))


def test_scope_transitions_read_the_same_in_every_channel(
    tagged: Workspace, manager: SessionManager
) -> None:
    channels = (Channel.SEND, Channel.HOOK, Channel.ACP)
    sessions = {channel: opened(manager, channel) for channel in channels}
    service = FreshlineService(tagged.config())
    desk = Desk(log=lambda _line: None)
    try:
        mcp = service.open_session("vault").session
        first = service.project_updates(mcp)
        assert first.token is not None
        service.acknowledge(mcp, first.token)
        desk.open("acp-1", str(tagged.root), again=False)
        taken = desk.prepare("acp-1")
        assert taken is not None
        desk.accept(taken)
        note(tagged, HISTORY, body="#personal\n")
        line = f"{LEFT}\n- {tagged.root}/{HISTORY} (now tagged #personal)"
        for channel, session in sessions.items():
            assert line in told(manager, session, channel), channel
        assert line in (service.project_updates(mcp).blocks or "")
        acp = desk.prepare("acp-1")
        assert acp is not None and line in acp.text
        assert line in service.project_changes(mcp, 0, 1).text
    finally:
        desk.close()
        service.close()


def test_a_config_exclusion_names_its_pattern(
    tagged: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    tagged.configure({"vault": {"include": ["notes"], "exclude": ["#personal", "notes/plan.md"]}})
    manager.reload_config()
    block = told(manager, session)
    assert f"{LEFT}\n- {tagged.root}/notes/plan.md (excluded by file {tagged.root}/notes/plan.md)" \
        in block
    assert "Deleted:" not in block
    tagged.configure({"vault": {"include": ["notes"], "exclude": ["#personal"]}})
    manager.reload_config()
    block = told(manager, session)
    assert f"- {tagged.root}/notes/plan.md (no longer excluded by file " in block
    assert ENTERED in block


def test_a_rename_out_of_the_project_left_it_and_where_it_went_is_not_said(
    tagged: Workspace, manager: SessionManager
) -> None:
    session = opened(manager)
    (tagged.root / "private").mkdir()
    (tagged.root / "notes/plan.md").rename(tagged.root / "private/plan.md")
    block = told(manager, session)
    assert f"{LEFT}\n- {tagged.root}/notes/plan.md (moved or renamed out of the project)" \
        in block
    assert "private" not in block and "Deleted:" not in block


HIDERS = {
    ".gitignore": lambda ws: ws.write(".gitignore", "plan.md\n"),
    "obsidian": lambda ws: ws.write(".obsidian/app.json",
                                    json.dumps({"userIgnoreFilters": ["notes/plan.md"]})),
    "[workspace] ignore": lambda ws: ws.configure(
        {"vault": {"include": ["notes"], "exclude": ["#personal"]}}, ignore=["notes/plan.md"]),
}


@pytest.mark.parametrize("hider", sorted(HIDERS))
def test_a_file_hidden_by_an_ignore_rule_left_the_project(
    tagged: Workspace, manager: SessionManager, hider: str
) -> None:
    """Seen: a new ignore rule told the files it hides as "Deleted"."""
    session = opened(manager)
    HIDERS[hider](tagged)
    block = told(manager, session)
    assert f"{LEFT}\n- {tagged.root}/notes/plan.md (now ignored)\n" in block
    assert "Deleted:" not in block


def test_a_very_small_file_is_renamed_only_when_its_bytes_are_identical(
    tagged: Workspace, manager: SessionManager
) -> None:
    """Seen: deleting keep.md ("k") and creating new.md ("q") was "renamed keep.md →
    new.md" and "modified new.md" at once."""
    tagged.write("notes/keep.md", "k\n")
    session = opened(manager)
    (tagged.root / "notes/keep.md").unlink()
    tagged.write("notes/new.md", "q\n")
    block = told(manager, session)
    assert f"Created:\n- {tagged.root}/notes/new.md\nDeleted:\n- {tagged.root}/notes/keep.md\n" \
        in block
    assert "Renamed:" not in block and "Modified:" not in block


def test_an_ignore_rule_and_a_move_in_one_flush_name_each_path_once(
    tagged: Workspace, manager: SessionManager
) -> None:
    """Seen: one block said "Deleted keep.md" and "Renamed keep.md → Q&A <draft>.md"."""
    tagged.write("notes/keep.md", "k\n")
    session = opened(manager)
    tagged.write(".gitignore", "plan.md\n")
    (tagged.root / "notes/keep.md").unlink()
    tagged.write("notes/Q&A <draft>.md", "q\n")
    block = told(manager, session)
    keep = [line for line in block.split("\n") if "keep.md" in line]
    assert keep == [f"- {tagged.root}/notes/keep.md"], block
    assert "Renamed:" not in block and f"- {tagged.root}/notes/Q&A <draft>.md\n" in block

