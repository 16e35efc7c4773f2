"""`freshline mcp`: a real MCP client session from the SDK against the server as a subprocess."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import docx
import mcp_types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

from freshline.errors import WorkspaceError
from freshline.interfaces.mcp_server import main, mcp_command

from .conftest import git


@asynccontextmanager
async def connect(root: Path) -> AsyncIterator[ClientSession]:
    """An initialized client session with `freshline mcp --workspace root`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "freshline.interfaces.mcp_server", "--workspace", str(root)],
        cwd=str(root),
    )
    with (root.parent / "server.err").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(client: ClientSession, tool: str, **args: Any) -> Any:
    """Call a tool that must succeed; its structured result."""
    result = await client.call_tool(tool, args)
    assert isinstance(result, mcp_types.CallToolResult)
    assert not result.is_error, _text(result)
    data = result.structured_content
    assert data is not None
    return data.get("result", data)


async def call_error(client: ClientSession, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error message."""
    result = await client.call_tool(tool, args)
    assert isinstance(result, mcp_types.CallToolResult)
    assert result.is_error
    return _text(result)


def _text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


@pytest.fixture
def notes(ws: Any) -> Any:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/b.md", "# B\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    return ws


async def test_tools_deliver_updates_once_acknowledged(notes: Any) -> None:
    async with connect(notes.root) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {
            "list_projects", "project_manifest", "open_session", "project_updates",
            "acknowledge", "project_changes", "read_document",
        }
        projects = await call(client, "list_projects")
        assert [p["name"] for p in projects] == ["p", "q"]
        assert projects[0]["manifest_uri"] == "freshline://project/p/manifest"

        manifest = await call(client, "project_manifest", project="p")
        assert "notes/a.md" in manifest and "other/x.md" not in manifest

        session = (await call(client, "open_session", project="p"))["session"]
        first = await call(client, "project_updates", session=session)
        assert first["token"] and "notes/b.md" in first["blocks"]
        await call(client, "acknowledge", session=session, token=first["token"])

        notes.write("notes/c.md", "# C\n")
        update = await call(client, "project_updates", session=session)
        assert "notes/c.md" in update["blocks"] and "notes/a.md" not in update["blocks"]
        ack = await call(client, "acknowledge", session=session, token=update["token"])
        assert ack["cursor"] == update["covers"]

        nothing = await call(client, "project_updates", session=session)
        assert nothing["blocks"] is None and nothing["token"] is None


async def test_a_rolled_up_delivery_fits_the_budget_and_pages_the_rest(notes: Any) -> None:
    for i in range(400):
        notes.write(f"notes/batch {i // 50}/new note {i:03}.md", "# new\n")
    with (notes.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n[delivery]\nmcp = 3000\n")
    async with connect(notes.root) as client:
        session = (await call(client, "open_session", project="p"))["session"]
        result = await client.call_tool("project_updates", {"session": session})
        assert len(_text(result)) <= 3_000  # what the client passes on to its model
        blocks = (result.structured_content or {})["blocks"]
        assert blocks.endswith("</project_context>")
        assert "Files (402):" in blocks and "counted per folder" in blocks
        await call(client, "acknowledge", session=session,
                   token=(result.structured_content or {})["token"])
        notes.write("notes/one more.md", "# new\n")
        page = await client.call_tool("project_changes", {"session": session, "since": 0})
        assert len(_text(page)) <= 3_000
        data = page.structured_content or {}
        assert data["page"] == 1 and data["pages"] >= 1 and "one more.md" in data["text"]
        message = await call_error(client, "project_changes", session=session, page=99)
        assert "page 99 does not exist" in message


async def test_unacknowledged_blocks_are_delivered_again(notes: Any) -> None:
    async with connect(notes.root) as client:
        session = (await call(client, "open_session", project="p"))["session"]
        first = await call(client, "project_updates", session=session)
        await call(client, "acknowledge", session=session, token=first["token"])
        notes.write("notes/c.md", "# C\n")
        lost = await call(client, "project_updates", session=session)
    # The client went away without acknowledging; a new connection gets it again.
    async with connect(notes.root) as client:
        again = await call(client, "project_updates", session=session)
        assert again["blocks"] == lost["blocks"] and again["token"] != lost["token"]
        message = await call_error(client, "acknowledge", session=session, token=lost["token"])
        assert "unknown or superseded delivery token" in message
        await call(client, "acknowledge", session=session, token=again["token"])
        assert (await call(client, "project_updates", session=session))["blocks"] is None


async def test_errors_are_mcp_errors_and_the_server_keeps_serving(notes: Any) -> None:
    async with connect(notes.root) as client:
        assert "unknown project 'nope'" in await call_error(
            client, "project_manifest", project="nope"
        )
        assert "unknown project 'nope'" in await call_error(client, "open_session", project="nope")
        assert "unknown session 'zzz'" in await call_error(
            client, "project_updates", session="zzz"
        )
        assert "unknown session 'zzz'" in await call_error(
            client, "acknowledge", session="zzz", token="t"
        )
        assert "escapes the workspace" in await call_error(
            client, "read_document", path="../escape.md"
        )
        assert "no such file" in await call_error(client, "read_document", path="notes/none.md")
        assert "an internal path of freshline or git" in await call_error(
            client, "read_document", path=".freshline/freshline.db"
        )
        with pytest.raises(MCPError):
            await client.read_resource("freshline://project/nope/manifest")
        # Still serving.
        assert [p["name"] for p in await call(client, "list_projects")] == ["p", "q"]


async def test_manifest_resources_one_per_project(notes: Any) -> None:
    async with connect(notes.root) as client:
        listed = (await client.list_resources()).resources
        assert sorted(str(r.uri) for r in listed) == [
            "freshline://project/p/manifest",
            "freshline://project/q/manifest",
        ]
        read = await client.read_resource("freshline://project/q/manifest")
        text = read.contents[0]
        assert isinstance(text, mcp_types.TextResourceContents)
        assert "other/x.md" in text.text and "notes/a.md" not in text.text


async def test_read_document_text_and_snapshot_status(notes: Any) -> None:
    notes.write("notes/broken.pdf", b"not a pdf at all")
    notes.write("notes/blob.bin", b"\x00\x01\x02")
    report = docx.Document()
    report.add_paragraph("Quarterly figures are up.")
    report.save(str(notes.root / "notes" / "report.docx"))
    async with connect(notes.root) as client:
        pending = await call(client, "read_document", path="notes/report.docx")
        assert pending["status"] == "pending" and pending["text"] is None
        plain = await call(client, "read_document", path="notes/a.md")
        assert plain == {"path": "notes/a.md", "status": "text", "text": "# A\n", "note": None}
        absolute = await call(client, "read_document", path=str(notes.root / "notes/b.md"))
        binary = await call(client, "read_document", path="notes/blob.bin")
        assert binary["status"] == "binary" and binary["text"] is None
        assert absolute["text"] == "# B\n"
        # Building a manifest converts the project's documents; a corrupt one fails.
        await call(client, "project_manifest", project="p")
        doc = await call(client, "read_document", path="notes/broken.pdf")
        assert doc["status"] == "failed" and doc["text"] is None and doc["note"]
        ready = await call(client, "read_document", path="notes/report.docx")
        assert ready["status"] == "ready" and "Quarterly figures are up." in ready["text"]




async def test_read_document_serves_only_the_sessions_project(notes: Any) -> None:
    git(notes.root, "init", "--quiet")
    git(notes.root, "config", "remote.origin.url", "https://token@example.com/x")
    (notes.root / "notes/gitcfg").symlink_to("../.git/config")
    notes.write("notes/.env", "KEY=token\n")
    async with connect(notes.root) as client:
        session = (await call(client, "open_session", project="p"))["session"]
        assert "where it leads" in await call_error(client, "read_document", path="notes/gitcfg")
        assert "a secret" in await call_error(client, "read_document", path="notes/.env")
        mine = await call(client, "read_document", path="notes/a.md", session=session)
        assert mine["text"] == "# A\n"
        assert "not in project 'p'" in await call_error(
            client, "read_document", path="other/x.md", session=session
        )
        assert (await call(client, "read_document", path="other/x.md"))["text"] == "# X\n"


def test_no_workspace_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(WorkspaceError, match="no freshline.toml"):
        mcp_command(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["--workspace", str(tmp_path)])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: no freshline.toml in ") and err.count("\n") == 1
