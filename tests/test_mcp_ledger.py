"""MCP's read_document feeds the read ledger of the session it names: a real MCP client
session against `freshline mcp` as a subprocess."""

from __future__ import annotations

from typing import Any

import docx

from freshline.config import load_config
from freshline.session import SessionManager
from freshline.store import LedgerEntry, LedgerKind
from freshline.tracker.hashing import blob_of

from .test_mcp import call, connect, fields, notes, text  # noqa: F401 (the notes fixture)


def entries(root: Any, session: str) -> dict[str, LedgerEntry]:
    manager = SessionManager(load_config(root))
    try:
        return {e.path: e for e in manager.store.ledger_of(session)}
    finally:
        manager.close()


async def test_read_document_records_reads_and_the_next_updates_name_them_first(
    notes: Any,  # noqa: F811
) -> None:
    root = notes.root
    report = docx.Document()
    report.add_paragraph("Quarterly figures are up.")
    report.save(str(root / "notes" / "report.docx"))
    async with connect(root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        first = fields(await call(client, "project_updates", session=session))
        await call(client, "acknowledge", session=session, token=first["token"])

        await call(client, "read_document", path="notes/a.md", session=session)
        await call(client, "read_document", path="notes/b.md")  # no session: nobody's read
        ready = await call(client, "read_document", path="notes/report.docx", session=session)
        assert fields(ready)["status"] == "ready"
        seen = entries(root, session)
        assert set(seen) == {"notes/a.md", "notes/report.docx"}
        assert seen["notes/a.md"].blob == blob_of(root / "notes/a.md")
        assert seen["notes/report.docx"].blob == blob_of(root / "notes/report.docx")
        assert seen["notes/a.md"].kind is LedgerKind.READ and seen["notes/a.md"].turn == 1

        notes.write("notes/a.md", "# A, edited\n")
        notes.write("notes/b.md", "# B, edited\n")
        second = await call(client, "project_updates", session=session)
        lines = text(second).split("\n")
        assert lines[1].startswith("Files you read or wrote that changed since")
        assert lines[2] == (f"- you read {root}/notes/a.md at turn 1; it has changed since "
                            "(outside freshline)")
        assert "- you read" not in "\n".join(lines[3:])  # b.md was read without a session
        await call(client, "acknowledge", session=session, token=fields(second)["token"])
