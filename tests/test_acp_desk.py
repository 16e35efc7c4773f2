"""The proxy's freshline side (`interfaces/acp/desk.py`), called directly: bindings,
deliveries and the read ledger, on a real workspace and store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.interfaces.acp.desk import Desk, in_data_dir
from freshline.interfaces.acp.messages import prompt_text
from freshline.session import SessionManager
from freshline.store import LedgerKind, SessionState
from freshline.tracker.hashing import blob_id_bytes, blob_of
from tests.conftest import Workspace


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/page.html", "<html><body><p>words</p></body></html>")
    ws.write("notes/.env", "TOKEN=1\n")
    ws.write("notes/skip.tmp", "ignored\n")
    ws.configure({"p": {"include": ["notes"]}}, ignore=["*.tmp"])
    return ws


class Logged(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture
def log() -> Logged:
    return Logged()


@pytest.fixture
def desk(log: Logged) -> Iterator[Desk]:
    desk = Desk(log=log)
    yield desk
    desk.close()


def manager_of(ws: Workspace) -> SessionManager:
    return SessionManager(ws.config())


def test_a_loaded_session_finds_its_freshline_session_in_another_desk(
    notes: Workspace, desk: Desk, log: Logged
) -> None:
    manager = manager_of(notes)
    try:  # page.html converted first: a conversion ending between the desks would be news
        manager.materialize("p")
    finally:
        manager.close()
    first = desk.open("acp-1", str(notes.root), again=False)
    delivery = desk.prepare("acp-1")
    assert first is not None and delivery is not None
    desk.accept(delivery)
    later = Desk(log=log)
    try:
        again = later.open("acp-1", str(notes.root / "notes"), again=True)
        assert again is not None and again.session == first.session
        assert later.prepare("acp-1") is None  # nothing new since the manifest
        unknown = later.open("acp-2", str(notes.root), again=True)  # loaded, never seen
        assert unknown is not None and unknown.session != first.session
    finally:
        later.close()
    assert log == []


def test_a_new_session_by_an_old_name_retires_the_old_binding(
    notes: Workspace, desk: Desk
) -> None:
    old = desk.open("acp-1", str(notes.root), again=False)
    new = desk.open("acp-1", str(notes.root), again=False)
    assert old is not None and new is not None and new.session != old.session
    manager = manager_of(notes)
    try:
        retired = manager.store.session_get(old.session)
        assert retired.state is SessionState.CLOSED
        assert retired.external_id == f"acp:p:acp-1@{old.session}"
        assert manager.store.session_get(new.session).external_id == "acp:p:acp-1"
    finally:
        manager.close()


def test_a_closed_session_loaded_again_gets_its_manifest_again(
    notes: Workspace, desk: Desk
) -> None:
    desk.open("acp-1", str(notes.root), again=False)
    delivery = desk.prepare("acp-1")
    assert delivery is not None
    desk.accept(delivery)
    desk.end("acp-1")
    assert desk.bound("acp-1") is None
    assert desk.open("acp-1", str(notes.root), again=True) is not None
    again = desk.prepare("acp-1")
    assert again is not None and again.text.startswith("<project_context ")
    assert "may have changed" in again.text


def test_only_what_the_ledger_may_hold_is_recorded(notes: Workspace, desk: Desk) -> None:
    bound = desk.open("acp-1", str(notes.root), again=False)
    assert bound is not None
    root = notes.root
    for path in ("notes/a.md", "notes/.env", "notes/skip.tmp", ".freshline/freshline.db",
                 "../outside.md", "notes/missing.md"):
        seen = desk.noted_read("acp-1", str(root / path))
        if seen is not None:
            desk.read(seen)
    desk.wrote("acp-1", str(root / "notes/new.md"), "written\n")
    desk.wrote("acp-1", str(root / "notes/.env"), "TOKEN=2\n")
    manager = manager_of(notes)
    try:
        rows = manager.store.ledger_on({"notes/a.md", "notes/.env", "notes/skip.tmp",
                                        "notes/new.md", "notes/missing.md"})
        kept = {(r.entry.path, r.entry.kind, r.entry.blob) for r in rows}
    finally:
        manager.close()
    assert kept == {
        ("notes/a.md", LedgerKind.READ, blob_of(root / "notes/a.md")),
        ("notes/new.md", LedgerKind.WRITE, blob_id_bytes(b"written\n")),
    }


def test_reading_a_snapshot_records_the_document_it_stands_for(
    notes: Workspace, desk: Desk
) -> None:
    manager = manager_of(notes)
    try:
        manager.materialize("p")
        snapshot = manager.materializer.store.snapshot_path("notes/page.html")
    finally:
        manager.close()
    assert snapshot.is_file()
    desk.open("acp-1", str(notes.root), again=False)
    seen = desk.noted_read("acp-1", str(snapshot))
    assert seen is not None
    assert (seen.rel, seen.blob) == ("notes/page.html", blob_of(notes.root / "notes/page.html"))


def test_a_failure_is_logged_and_the_conversation_goes_on(
    notes: Workspace, desk: Desk, log: Logged
) -> None:
    desk.open("acp-1", str(notes.root), again=False)
    (notes.root / "freshline.toml").write_text("[projects.p\n", encoding="utf-8")
    assert desk.prepare("acp-1") is None
    assert desk.open("acp-2", str(notes.root), again=False) is None
    assert [line.split(":")[0] for line in log] == ["prepare", "open"]
    assert all("ConfigError" in line for line in log)


def test_freshlines_data_is_found_as_given_and_where_it_leads(
    notes: Workspace, tmp_path: Path
) -> None:
    root = notes.root
    (root / "notes" / "link").symlink_to(root / ".freshline")
    assert in_data_dir(str(root / ".freshline" / "freshline.db"))
    assert in_data_dir(str(root / ".freshline" / "snapshots" / "new.md"))
    assert in_data_dir(str(root / "notes" / "link" / "x.md"))
    assert in_data_dir(str(root / "notes" / ".." / ".freshline" / "x"))
    assert not in_data_dir(str(root / "notes" / "a.md"))
    assert not in_data_dir(str(root / ".freshline"))  # the folder itself is no file to write
    stray = tmp_path / "stray" / ".freshline" / "x.md"  # no workspace holds it
    assert not in_data_dir(str(stray))


def test_each_prompt_through_the_proxy_is_a_checkpoint(
    notes: Workspace, desk: Desk, log: Logged
) -> None:
    """The agent behind the proxy keeps its transcript; its prompts are still turns whose
    trees are the project's files as each found them, and its answer ends the turn."""
    bound = desk.open("acp-1", str(notes.root), again=False)
    assert bound is not None
    params = {"sessionId": "acp-1", "prompt": [{"type": "text", "text": "first"},
                                               {"type": "image", "data": "…"}]}
    delivery = desk.prepare("acp-1", prompt_text(params))
    assert delivery is not None
    desk.accept(delivery)
    manager = manager_of(notes)
    try:
        assert manager.store.turn_state(bound.session) is not None  # mid-turn
        desk.answered("acp-1")
        assert manager.store.turn_state(bound.session) is None
        notes.write("notes/b.md", "# B\n")
        desk.prepare("acp-1", "second")
        events = [e for e in manager.conversations.log(bound.session) if e.author == "user"]
        assert [e.content for e in events] == ["first", "second"]
        assert manager.get(bound.session).turns == 2
    finally:
        manager.close()
    assert log == []
