"""A converter's new version: old snapshots are made again as their documents are read,
not all at once, and each session of the project hears it once, in one line."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.messages import Message
from freshline.conversation import Author, Event
from freshline.materialize import DocStatus, Materializer, Upgrade, upgrades
from freshline.session import PreparedTurn, SessionManager
from freshline.session.upgrades import told_key
from tests.conftest import Workspace
from tests.docgen import entry, write_pdf

PDFS = ("notes/a.pdf", "notes/b.pdf", "notes/c.pdf")
OLD_TEXT = "## Page 1\n\nwhat version 1 wrote"


def age(m: Materializer, path: str) -> None:
    """Make the snapshot of `path` look as version 1 of the PDF converter left it."""
    header = m.store.read_header(path)
    assert header is not None
    m.store.write_snapshot(replace(header, version="1"), OLD_TEXT)


@pytest.fixture
def pdfs(ws: Workspace) -> Iterator[Workspace]:
    for n, path in enumerate(PDFS):
        write_pdf(ws.root / path, [[f"Document number {n} has words."]])
    ws.write("notes/a.md", "a note")
    ws.configure({"p": {"include": ["notes"]}})
    yield ws


def test_an_older_versions_snapshot_is_ready_and_made_again_only_when_read(pdfs: Workspace):
    root = pdfs.root
    sources = [entry(root, p) for p in PDFS]
    with Materializer(root, root / ".freshline") as m:
        assert not m.ensure("p", 1, sources).failures
        for path in PDFS:
            age(m, path)
        first = m.probe(PDFS[0], sources[0])
        assert (first.status, first.older) == (DocStatus.READY, "1")
        again = m.ensure("p", 2, sources)
        assert again.converted == [] and again.complete  # not all at once
        assert upgrades(m.store.headers()) == [Upgrade("pdf", ("1",), "2", 3)]
        read = m.for_reading(PDFS[0], sources[0])
        assert (read.status, read.older) == (DocStatus.READY, None)
        assert read.snapshot is not None and "<!-- page 1 -->" in read.snapshot.read_text()
        assert upgrades(m.store.headers()) == [Upgrade("pdf", ("1",), "2", 2)]
        assert m.store.read_header(PDFS[1]).version == "1"  # the others wait to be read


def deliver(m: SessionManager, session_id: str) -> PreparedTurn:
    turn = m.prepare(session_id, "go")
    reply = get_backend("echo").complete([Message.user(turn.wire_prompt)], [])
    turn.record([Event(Author.ASSISTANT, reply.text)])
    turn.accept()
    return turn


def upgrade_lines(turn: PreparedTurn) -> list[str]:
    return [line for line in (turn.updates or "").splitlines() if "converter is now" in line]


def test_each_session_hears_of_an_upgrade_once_in_one_line(pdfs: Workspace):
    first = SessionManager(pdfs.config())
    sessions = []
    for _ in range(2):  # each used before the next opens (a clean landing is reused)
        sessions.append(first.new("p").id)
        deliver(first, sessions[-1])
    for path in PDFS:
        age(first.materializer, path)
    first.close()
    later = SessionManager(pdfs.config())  # the next process, with the new converter
    try:
        told = [upgrade_lines(deliver(later, sid)) for sid in sessions]
        line = ("freshline's pdf converter is now version 2 (was 1): the snapshots of 3 "
                "documents in this project are made again as each is next read")
        assert [[x.split(",")[0] for x in lines] for lines in told] == [[line]] * 2
        assert [deliver(later, sid).updates for sid in sessions] == [None, None]
        assert later.store.meta_get(told_key("p")) == '{"pdf": "2"}'
    finally:
        later.close()
    third = SessionManager(pdfs.config())  # a process after that: told already
    try:
        assert deliver(third, sessions[0]).updates is None
    finally:
        third.close()


def test_scan_and_changes_print_an_upgrade_in_words() -> None:
    from freshline.interfaces.cli.answers import change_dict, change_line
    from freshline.store import Change, ChangeKind

    logged = Change(ChangeKind.CONVERTER, "", detail=Upgrade("pdf", ("1",), "2", 3).detail())
    assert change_line(change_dict(logged)) == "converter pdf 1 → 2: 3 snapshots made again as read"
