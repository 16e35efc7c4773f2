"""`freshline mcp`: the MCP SDK's own client against the server, in both protocol eras
(`legacy`: the initialize handshake, as the Inspector 0.15 and Claude Code speak it;
`auto`: 2026-07-28 when both sides can). The server runs in the test's process (the SDK's
in-memory transport: the same server, its watcher and its notifications) unless a test is
about processes (`connect(..., process=True)`: `python -m freshline.interfaces.mcp` over
stdio, whose start costs the SDK's import each time). The Inspector CLI itself runs in
tests/integration/test_inspector.py."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from freshline import __version__
from freshline.config import load_config
from freshline.errors import WorkspaceError
from freshline.interfaces.mcp.service import FreshlineService
from freshline.interfaces.mcp.stdio import main, mcp_command
from freshline.interfaces.mcp.surface import build_server
from freshline.interfaces.service.daemon import Service
from tests.conftest import Workspace, git

MANIFEST_P = "freshline://project/p/manifest"


@asynccontextmanager
async def connect(
    root: Path, mode: str = "legacy", process: bool = False, **options: Any
) -> AsyncIterator[Client]:
    """A connected client of the workspace's MCP server: in this process, or with
    `process` a `freshline mcp --workspace root` of its own."""
    if process:
        params = StdioServerParameters(
            command=sys.executable,
            env=dict(os.environ),  # this test's user (a client clears all but HOME, PATH…)
            args=["-m", "freshline.interfaces.mcp", "--workspace", str(root)],
            cwd=str(root),
        )
        async with Client(params, mode=mode, cache=None, **options) as client:  # type: ignore[arg-type]
            yield client
        return
    service = FreshlineService(load_config(root))
    try:
        server = build_server(service)
        async with Client(server, mode=mode, cache=None, **options) as client:  # type: ignore[arg-type]
            yield client
    finally:
        service.close()


async def call(client: Client, tool: str, **args: Any) -> mcp_types.CallToolResult:
    """Call a tool that must succeed."""
    result = await client.call_tool(tool, args)
    assert not result.is_error, text(result)
    return result


def fields(result: mcp_types.CallToolResult) -> Any:
    data = result.structured_content
    assert data is not None
    return data.get("result", data)


async def call_error(client: Client, tool: str, **args: Any) -> str:
    """Call a tool that must fail; its error message."""
    result = await client.call_tool(tool, args)
    assert result.is_error
    return text(result)


def text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


def write_docx(path: Path, paragraphs: list[str]) -> None:
    """A real DOCX holding these paragraphs."""
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    document.save(str(path))


def token_of(blocks: str) -> str:
    found = re.search(r'delivery="([0-9a-f]+)"', blocks)
    assert found, blocks
    return found.group(1)


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/b.md", "# B\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    return ws


# --- 9. blocks arrive as text, fields beside them -------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_blocks_are_text_content_and_updates_come_once_acknowledged(
    notes: Workspace, mode: str
) -> None:
    async with connect(notes.root, mode) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {
            "list_projects", "project_manifest", "open_session", "project_updates",
            "acknowledge", "project_changes", "project_files", "read_document",
        }
        projects = fields(await call(client, "list_projects"))
        assert [p["name"] for p in projects] == ["p", "q"]
        assert projects[0]["manifest_uri"] == MANIFEST_P

        manifest = await call(client, "project_manifest", project="p")
        assert text(manifest).startswith("<project_context ")
        assert manifest.structured_content is None

        session = fields(await call(client, "open_session", project="p"))["session"]
        first = await call(client, "project_updates", session=session)
        shown = text(first)
        assert shown.startswith('<project_context project="p"') and "notes/b.md" in shown
        assert "\\n" not in shown  # not a JSON string
        data = fields(first)
        assert set(data) == {"session", "token", "covers", "text", "changes"}
        assert data["token"] == token_of(shown) and "acknowledge" in shown
        assert data["text"] == shown  # structured content carries what the text carries
        await call(client, "acknowledge", session=session, token=data["token"])

        notes.write("notes/c.md", "# C\n")
        (notes.root / "notes/b.md").rename(notes.root / "notes/b2.md")
        update = await call(client, "project_updates", session=session)
        assert "notes/c.md" in text(update) and "notes/a.md" not in text(update)
        assert fields(update)["text"] == text(update)
        assert fields(update)["changes"] == [
            {"path": f"{notes.root}/notes/b2.md", "kind": "renamed",
             "old_path": f"{notes.root}/notes/b.md"},
            {"path": f"{notes.root}/notes/c.md", "kind": "created", "old_path": None}]
        ack = fields(await call(client, "acknowledge", session=session,
                                token=fields(update)["token"]))
        assert ack["cursor"] == fields(update)["covers"]

        nothing = await call(client, "project_updates", session=session)
        assert fields(nothing)["token"] is None and "Nothing new" in text(nothing)
        assert fields(nothing)["changes"] == [] and fields(nothing)["text"] == text(nothing)


async def test_a_rolled_up_delivery_fits_the_budget_and_pages_the_rest(notes: Workspace) -> None:
    for i in range(400):
        notes.write(f"notes/batch {i // 50}/new note {i:03}.md", "# new\n")
    with (notes.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n[delivery]\nmcp = 3000\n")
    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        result = await call(client, "project_updates", session=session)
        assert len(text(result)) <= 3_000  # what the client passes on to its model
        assert "</project_context>" in text(result)
        assert "Files (402):" in text(result) and "counted per folder" in text(result)
        await call(client, "acknowledge", session=session, token=fields(result)["token"])
        notes.write("notes/one more.md", "# new\n")
        notes.write("notes/later/two more.md", "# new\n")
        page = await call(client, "project_changes", session=session, since=0)
        assert len(text(page)) <= 3_000
        data = fields(page)
        assert data["page"] == 1 and data["pages"] >= 1 and "one more.md" in text(page)
        assert data["text"] == text(page)
        one = await call(client, "project_changes", session=session, since=0,
                         folder=str(notes.root / "notes" / "later"))
        assert "two more.md" in text(one) and "one more.md" not in text(one)
        assert f"Changes to p under {notes.root}/notes/later/ after epoch 0" in text(one)
        message = await call_error(client, "project_changes", session=session, page=99)
        assert "page 99 does not exist" in message
        message = await call_error(client, "project_changes", session=session, since=10**30)
        assert f"since={10**30}" in message and "epochs 0 to" in message
        files = await call(client, "project_files", project="p", folder=str(notes.root / "notes"
                                                                             / "batch 3"))
        assert len(text(files)) <= 3_000 and "new note 150.md" in text(files)
        assert "batch 2/" not in text(files) and fields(files)["page"] == 1


# --- 8. delivery tokens live in the store ---------------------------------------------------


async def test_a_token_is_acknowledged_by_another_server_process(notes: Workspace) -> None:
    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        first = fields(await call(client, "project_updates", session=session))
    # The client restarted (or, like the Inspector CLI, starts a server per call).
    async with connect(notes.root, process=True) as client:
        ack = await call(client, "acknowledge", session=session, token=first["token"])
        assert fields(ack)["cursor"] == first["covers"]
        assert fields(await call(client, "project_updates", session=session))["token"] is None
        again = await call(client, "acknowledge", session=session, token=first["token"])
        assert fields(again)["cursor"] == first["covers"]  # once is enough; twice is harmless


async def test_unacknowledged_blocks_are_delivered_again(notes: Workspace) -> None:
    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        first = fields(await call(client, "project_updates", session=session))
        await call(client, "acknowledge", session=session, token=first["token"])
        notes.write("notes/c.md", "# C\n")
        lost = await call(client, "project_updates", session=session)
    async with connect(notes.root) as client:
        again = await call(client, "project_updates", session=session)
        assert "notes/c.md" in text(again)
        assert fields(again)["token"] != fields(lost)["token"]
        message = await call_error(client, "acknowledge", session=session,
                                   token=fields(lost)["token"])
        assert "superseded" in message
        await call(client, "acknowledge", session=session, token=fields(again)["token"])
        assert fields(await call(client, "project_updates", session=session))["token"] is None


async def test_two_servers_on_one_workspace_never_announce_a_change_twice(
    notes: Workspace,
) -> None:
    announced: list[str] = []
    async with connect(notes.root) as one, connect(notes.root, process=True) as two:
        session = fields(await call(one, "open_session", project="p"))["session"]
        first = fields(await call(one, "project_updates", session=session))
        await call(two, "acknowledge", session=session, token=first["token"])
        for round_ in range(8):
            for i in range(50):
                notes.write(f"notes/r{round_}/n{i:02}.md", "x")
            asker, acker = (one, two) if round_ % 2 else (two, one)
            update = await call(asker, "project_updates", session=session)
            announced += re.findall(r"notes/r\d/n\d\d\.md", text(update))
            await call(acker, "acknowledge", session=session, token=fields(update)["token"])
    assert len(announced) == 400 and len(set(announced)) == 400


# --- 6, 7, 12. read_document ----------------------------------------------------------------


async def test_read_document_serves_every_path_a_block_names(notes: Workspace) -> None:
    write_docx(notes.root / "notes" / "report.docx", ["Quarterly figures are up."])
    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        blocks = text(await call(client, "project_updates", session=session))
        snapshot = re.search(r"(/\S+/\.freshline/snapshots/\S+\.md)", blocks)
        assert snapshot, blocks
        for path in (snapshot.group(1), str(notes.root / "notes/report.docx"),
                     "notes/report.docx"):
            read = await call(client, "read_document", path=path, session=session)
            assert "Quarterly figures are up." in text(read)
            assert fields(read) == {"path": "notes/report.docx", "status": "ready", "note": None,
                                    "text": text(read)}


async def test_a_replaced_document_is_never_read_stale(notes: Workspace) -> None:
    report = notes.root / "notes" / "report.docx"
    write_docx(report, ["First version."])
    async with connect(notes.root) as client:
        first = await call(client, "read_document", path="notes/report.docx")
        assert "First version." in text(first)
        write_docx(report, ["Second version."])
        progress: list[tuple[float, float | None, str | None]] = []

        async def heard(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        read = await client.call_tool("read_document", {"path": "notes/report.docx"},
                                      progress_callback=heard)
        assert "Second version." in text(read) and "First version." not in text(read)
        assert fields(read)["status"] == "ready"
        assert progress and progress[-1][0] == progress[-1][1] == 1
        assert progress[-1][2] == "notes/report.docx"


async def test_read_document_text_binary_and_failures(notes: Workspace) -> None:
    notes.write("notes/broken.pdf", b"not a pdf at all")
    notes.write("notes/blob.bin", b"\x00\x01\x02")
    async with connect(notes.root) as client:
        plain = await call(client, "read_document", path="notes/a.md")
        assert text(plain) == "# A\n"
        assert fields(plain) == {"path": "notes/a.md", "status": "text", "note": None,
                                 "text": "# A\n"}
        absolute = await call(client, "read_document", path=str(notes.root / "notes/b.md"))
        assert text(absolute) == "# B\n"
        binary = await call(client, "read_document", path="notes/blob.bin")
        assert fields(binary)["status"] == "binary" and "binary" in text(binary)
        broken = await call(client, "read_document", path="notes/broken.pdf")
        assert fields(broken)["status"] == "failed" and "failed" in text(broken)


async def test_read_document_serves_only_the_sessions_project(notes: Workspace) -> None:
    git(notes.root, "init", "--quiet")
    git(notes.root, "config", "remote.origin.url", "https://token@example.com/x")
    (notes.root / "notes/gitcfg").symlink_to("../.git/config")
    notes.write("notes/.env", "KEY=token\n")
    notes.write("notes/drafts/d.md", "# draft\n")
    with (notes.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write('\n[projects.r]\ninclude = ["notes"]\nexclude = ["notes/drafts"]\n')
    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        excluding = fields(await call(client, "open_session", project="r"))["session"]
        assert "where it leads" in await call_error(client, "read_document", path="notes/gitcfg")
        assert "a secret" in await call_error(client, "read_document", path="notes/.env")
        mine = await call(client, "read_document", path="notes/a.md", session=session)
        assert text(mine) == "# A\n"
        assert "not in project 'p'" in await call_error(
            client, "read_document", path="other/x.md", session=session
        )
        assert "not in project 'r'" in await call_error(
            client, "read_document", path="notes/drafts/d.md", session=excluding
        )
        assert text(await call(client, "read_document", path="other/x.md")) == "# X\n"


async def test_errors_are_mcp_errors_and_the_server_keeps_serving(notes: Workspace) -> None:
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
        assert [p["name"] for p in fields(await call(client, "list_projects"))] == ["p", "q"]


# --- 11, 12. resources, server info ----------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resources_are_listed_live_from_a_template(notes: Workspace, mode: str) -> None:
    async with connect(notes.root, mode) as client:
        assert client.server_info is not None and client.server_info.version == __version__
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["freshline://project/{name}/manifest"]
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == [MANIFEST_P, "freshline://project/q/manifest"]
        read = (await client.read_resource("freshline://project/q/manifest")).contents[0]
        assert isinstance(read, mcp_types.TextResourceContents)
        assert "other/x.md" in read.text and "notes/a.md" not in read.text
        notes.configure({"p": {"include": ["notes"]}, "z": {"include": ["other"]}})
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == [MANIFEST_P, "freshline://project/z/manifest"]
        read = (await client.read_resource("freshline://project/z/manifest")).contents[0]
        assert isinstance(read, mcp_types.TextResourceContents) and "other/x.md" in read.text


# --- 10. notifications are sent, not only advertised ------------------------------------------


async def test_handshake_era_clients_hear_resource_and_list_changes(
    notes: Workspace, service: Service
) -> None:
    notes.tracker().flush()  # c.md below is a change, not part of the first listing
    service.workspaces.ready(notes.root)  # the service logs the change as it happens
    heard: list[Any] = []
    got = anyio.Event()

    async def handler(message: Any) -> None:
        heard.append(message)
        got.set()

    async with connect(notes.root, "legacy", True, message_handler=handler) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe and caps.list_changed
        with pytest.warns(MCPDeprecationWarning):  # gone in 2026-07-28; this era has it
            await client.session.subscribe_resource(MANIFEST_P)
        notes.write("notes/c.md", "# C\n")
        with anyio.fail_after(30):
            while not any(isinstance(m, mcp_types.ResourceUpdatedNotification) for m in heard):
                await got.wait()
                got = anyio.Event()
        updated = [m for m in heard if isinstance(m, mcp_types.ResourceUpdatedNotification)]
        assert {str(m.params.uri) for m in updated} == {MANIFEST_P}
        notes.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]},
                         "n": {"include": ["notes"]}})
        with anyio.fail_after(30):
            while not any(isinstance(m, mcp_types.ResourceListChangedNotification)
                          for m in heard):
                await got.wait()
                got = anyio.Event()


async def test_listen_streams_hear_resource_and_list_changes(
    notes: Workspace, service: Service
) -> None:
    from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated

    notes.tracker().flush()  # c.md below is a change, not part of the first listing
    service.workspaces.ready(notes.root)  # the service logs the change as it happens
    async with connect(notes.root, "auto") as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resources_list_changed=True,
                                 resource_subscriptions=[MANIFEST_P]) as stream:
            notes.write("notes/c.md", "# C\n")
            with anyio.fail_after(30):
                event = await stream.__anext__()
            assert event == ResourceUpdated(uri=MANIFEST_P)
            notes.configure({"p": {"include": ["notes"]}})
            with anyio.fail_after(30):
                events = [await stream.__anext__()]
                while ResourcesListChanged() not in events:
                    events.append(await stream.__anext__())


# --- 13. the catch_up prompt, progress ------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_catch_up_prompt_returns_the_pending_blocks(notes: Workspace, mode: str) -> None:
    async with connect(notes.root, mode) as client:
        [prompt] = (await client.list_prompts()).prompts
        assert prompt.name == "catch_up"
        assert [(a.name, a.required) for a in prompt.arguments or []] == [
            ("project", True), ("session", False)]
        first = await client.get_prompt("catch_up", {"project": "p"})
        [message] = first.messages
        assert isinstance(message.content, mcp_types.TextContent)
        assert message.content.text.startswith("<project_context ")
        session = re.search(r"freshline session (\w+)", message.content.text)
        assert session
        notes.write("notes/c.md", "# C\n")
        later = await client.get_prompt("catch_up", {"project": "p",
                                                     "session": session.group(1)})
        content = later.messages[0].content
        assert isinstance(content, mcp_types.TextContent)
        assert "notes/c.md" in content.text and "<project_context " not in content.text
        with pytest.raises(MCPError):
            await client.get_prompt("catch_up", {"project": "nope"})


async def test_project_updates_reports_progress_while_documents_convert(
    notes: Workspace,
) -> None:
    for i in range(3):
        write_docx(notes.root / "notes" / f"d{i}.docx", [f"Document {i}."])
    progress: list[tuple[float, float | None, str | None]] = []

    async def heard(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with connect(notes.root) as client:
        session = fields(await call(client, "open_session", project="p"))["session"]
        for i in range(3):
            write_docx(notes.root / "notes" / f"d{i}.docx", [f"Document {i}, revised."])
        result = await client.call_tool("project_updates", {"session": session},
                                        progress_callback=heard)
        assert not result.is_error
    assert sorted(p[2] or "" for p in progress) == [f"notes/d{i}.docx" for i in range(3)]
    assert {p[1] for p in progress} == {3} and max(p[0] for p in progress) == 3


# --- the command ------------------------------------------------------------------------------


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
