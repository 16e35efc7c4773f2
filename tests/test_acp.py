"""`freshline acp -- AGENT`: the SDK's client API on one side, an SDK agent on the other.

The agent (`tests/acp_agent.py`) logs every raw message it receives; what the model would
be given is read off that log, what the user saw off the test's client (`Recorder`).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.interfaces.mcp.front import PAGING_TABLE_NAME, TABLE_NAME
from freshline.session import SessionManager
from freshline.store import LedgerKind
from tests.acp_harness import (
    MANIFEST,
    UPDATES,
    Proxied,
    freshline_block,
    named,
    proxied,
    stale_read,
    with_notes,
)
from tests.conftest import Workspace

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    return with_notes(ws)


def block_at(run: Proxied, turn: int) -> str | None:
    """freshline's block in the agent's `turn`-th prompt (from 0)."""
    return freshline_block(run.prompts()[turn])


async def test_the_first_prompt_carries_the_manifest_for_the_agent_only(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root / "notes")
        assert await run.prompt(session, "hello") == "end_turn"
    prompt = run.prompts()[0]
    block = freshline_block(prompt)
    assert block is not None and block.startswith(MANIFEST)
    assert {"notes/a.md", "notes/b.md"} <= set(named(block, notes.root))
    assert "other/x.md" not in block
    # The user's own block follows, as it was sent.
    assert prompt[1:] == [{"type": "text", "text": "hello"}]
    # The user was shown the agent's answer, nothing of freshline's.
    assert run.client.said() == "ok"
    assert not any("project_context" in str(u) for u in run.client.updates)
    # The first prompt titles the session in `session list`.
    listed = CliRunner().invoke(app, ["-w", str(notes.root), "session", "list", "--json"])
    assert [(s["agent"], s["title"]) for s in json.loads(listed.stdout)] == [("acp", "hello")]


async def test_the_agent_runs_marked_as_the_proxys_so_hooks_inside_it_stay_silent(
    notes: Workspace, tmp_path: Path
) -> None:
    """One owner per conversation: a hook the agent's harness runs (Claude Code's) finds
    the mark and delivers nothing (tests/test_hook_delivery.py; with the real adapter:
    tests/integration/test_acp_claude_code.py)."""
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root / "notes")
        await run.prompt(session, "env FRESHLINE_OWNER")
    assert run.client.said() == "FRESHLINE_OWNER=acp"


async def test_a_later_prompt_carries_exactly_the_paths_that_changed(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
        await run.prompt(session, "nothing changed")
        notes.write("notes/a.md", "# A, edited\n")
        notes.write("notes/c.md", "# C\n")
        notes.write("other/y.md", "# outside the project\n")
        await run.prompt(session, "what changed?")
    assert block_at(run, 1) is None
    block = block_at(run, 2)
    assert block is not None and block.startswith(UPDATES)
    assert sorted(named(block, notes.root)) == ["notes/a.md", "notes/c.md"]


async def wait_for_prompt(run: Proxied, count: int) -> None:
    """Until the agent has received `count` prompts."""
    while len(run.prompts()) < count:
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("how", ["fail", "cancel", "refuse"])
async def test_a_prompt_the_agent_did_not_take_is_delivered_again(
    notes: Workspace, tmp_path: Path, how: str
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
        notes.write("notes/c.md", "# C\n")
        if how == "fail":
            with pytest.raises(RequestError):
                await run.prompt(session, "fail")
        elif how == "cancel":
            asking = asyncio.create_task(run.prompt(session, "cancel"))
            await wait_for_prompt(run, 2)
            await run.conn.cancel(session_id=session)
            assert await asking == "cancelled"
        else:
            assert await run.prompt(session, "refuse") == "refusal"
        await run.prompt(session, "again")
    missed, again = block_at(run, 1), block_at(run, 2)
    assert missed is not None and named(missed, notes.root) == ["notes/c.md"]
    assert again == missed


async def test_a_first_prompt_that_failed_brings_the_manifest_again(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        with pytest.raises(RequestError):
            await run.prompt(session, "fail")
        await run.prompt(session, "hello")
        await run.prompt(session, "and now?")
    first, second = block_at(run, 0), block_at(run, 1)
    assert first is not None and first.startswith(MANIFEST)
    assert second == first
    assert block_at(run, 2) is None


@pytest.mark.parametrize("how", ["talk then fail", "silent"])
async def test_output_or_a_plain_stop_is_taken(
    notes: Workspace, tmp_path: Path, how: str
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        if how == "silent":
            assert await run.prompt(session, how) == "end_turn"
        else:
            with pytest.raises(RequestError):
                await run.prompt(session, how)
        await run.prompt(session, "next")
    assert (block_at(run, 0) or "").startswith(MANIFEST)
    assert block_at(run, 1) is None


async def test_the_agents_own_writes_are_not_announced_back(
    notes: Workspace, tmp_path: Path
) -> None:
    mine, theirs = notes.root / "notes" / "mine.md", notes.root / "notes" / "b.md"
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
        await run.prompt(session, f"write {mine} written-by-the-agent")
        await run.prompt(session, "anything new?")
        await run.prompt(session, f"write {mine} again-by-the-agent")
        theirs.write_text("# B, by the user\n", encoding="utf-8")
        await run.prompt(session, "and now?")
    assert run.client.writes == [str(mine), str(mine)]
    assert mine.read_text(encoding="utf-8") == "again-by-the-agent"
    assert block_at(run, 2) is None
    last = block_at(run, 4)
    assert last is not None and named(last, notes.root) == ["notes/b.md"]


async def test_a_file_the_agent_read_that_changed_is_named_first(
    notes: Workspace, tmp_path: Path
) -> None:
    read = notes.root / "notes" / "b.md"
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
        await run.prompt(session, f"read {read}")
        notes.write("notes/a.md", "# A, edited\n")
        notes.write("notes/0-new.md", "# sorts first\n")
        read.write_text("# B, edited by the user\n", encoding="utf-8")
        await run.prompt(session, "what changed?")
    assert run.client.reads == [str(read)]
    block = block_at(run, 2)
    assert block is not None
    assert named(block, notes.root)[0] == "notes/b.md"
    assert set(named(block, notes.root)) == {"notes/a.md", "notes/b.md", "notes/0-new.md"}
    assert stale_read(block, read)


async def test_a_completed_read_tool_call_feeds_the_ledger(
    notes: Workspace, tmp_path: Path
) -> None:
    read, other = notes.root / "notes" / "a.md", notes.root / "other" / "x.md"
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, f"toolread {read}")
        await run.prompt(session, f"toolread {notes.root / '.freshline' / 'freshline.db'}")
        await run.prompt(session, f"toolread {other}")
    manager = SessionManager(notes.config())
    try:
        (s,) = manager.sessions("p")
        entries = manager.store.ledger_on({"notes/a.md", "other/x.md"})
        seen = {(e.entry.path, e.entry.kind) for e in entries if e.entry.session == s.id}
    finally:
        manager.close()
    # A workspace file outside the project is recorded too: the ledger follows the agent.
    assert seen == {("notes/a.md", LedgerKind.READ), ("other/x.md", LedgerKind.READ)}
    assert run.client.reads == []


async def test_a_write_into_freshlines_data_is_refused_and_nothing_else(
    notes: Workspace, tmp_path: Path
) -> None:
    forged = notes.root / ".freshline" / "snapshots" / "forged.md"
    secret = notes.root / "notes" / ".env"
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, f"write {forged} forged")
        await run.prompt(session, f"write {secret} TOKEN=1")
        await run.prompt(session, f"read {secret}")
    assert not forged.exists()
    assert run.client.writes == [str(secret)] and run.client.reads == [str(secret)]
    said = run.client.said()
    assert "freshline's own data; not written" in said and "read 7 characters" in said


async def test_a_loaded_session_resumes_its_freshline_session_in_a_new_proxy(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root, name="first") as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
    notes.write("notes/c.md", "# C\n")
    async with proxied(tmp_path, notes.root, name="second") as again:
        await again.conn.load_session(cwd=str(notes.root), session_id=session, mcp_servers=[])
        await again.prompt(session, "back again")
    # The agent replayed its history, freshline's block in it: the user saw only theirs.
    assert again.client.user_texts() == ["hello"]
    (loaded,) = again.received("session/load")
    assert [s["name"] for s in loaded["mcpServers"]] == ["freshline"]
    block = block_at(again, 1)
    assert block is not None and block.startswith(UPDATES)
    assert named(block, notes.root) == ["notes/c.md"]
    manager = SessionManager(notes.config())
    try:
        assert len(manager.sessions("p")) == 1
    finally:
        manager.close()


async def test_unknown_methods_and_fields_pass_through_unchanged(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root) as run:
        raw = run.conn._conn  # the SDK's JSON-RPC connection under the typed client
        new = {"cwd": str(notes.root), "mcpServers": [], "futureField": {"kept": [1, "two"]},
               "_meta": {"vendor": True}}
        session = (await raw.send_request("session/new", new))["sessionId"]
        echoed = await raw.send_request("_vendor/echo", {"any": ["shape", None, 1.5]})
        with pytest.raises(RequestError) as unknown:
            await raw.send_request("made/up", {"x": 1})
        await raw.send_notification("_vendor/note", {"y": 2})
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi", "extra": 1}],
                  "futureField": "kept"}
        await raw.send_request("session/prompt", prompt)
    (server,) = run.received("session/new")[0]["mcpServers"]  # freshline's own, added
    assert run.received("session/new") == [{**new, "mcpServers": [server]}]
    assert echoed == {"method": "vendor/echo", "params": {"any": ["shape", None, 1.5]}}
    assert unknown.value.code == -32601
    assert run.received("made/up") == [{"x": 1}]
    assert run.received("_vendor/note") == [{"y": 2}]
    (sent,) = run.received("session/prompt")
    assert sent["futureField"] == "kept"
    assert sent["prompt"][1:] == prompt["prompt"]


async def test_an_agent_that_dies_ends_the_proxy_with_its_status(
    notes: Workspace, tmp_path: Path
) -> None:
    async with proxied(tmp_path, notes.root, status=3) as run:
        session = await run.new(notes.root)
        with pytest.raises((RequestError, ConnectionError)):
            await run.prompt(session, "exit 3")
        assert await asyncio.wait_for(run.process.wait(), 60) == 3


async def test_a_session_outside_every_workspace_passes_through_untouched(
    notes: Workspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(elsewhere)
        assert await run.prompt(session, "hello") == "end_turn"
    assert run.prompts() == [[{"type": "text", "text": "hello"}]]
    (line,) = run.stderr.read_text(encoding="utf-8").splitlines()
    assert line.startswith("freshline acp: open: WorkspaceError: no freshline.toml in")


async def test_workspace_and_project_options_choose_for_every_session(
    notes: Workspace, tmp_path: Path
) -> None:
    notes.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    options = ["--workspace", str(notes.root), "--project", "q"]
    async with proxied(tmp_path, elsewhere, options) as run:
        session = await run.new(notes.root / "notes")
        await run.prompt(session, "hello")
    block = block_at(run, 0)
    assert block is not None and block.startswith('<project_context project="q"')
    assert set(named(block, notes.root)) == {"other/", "other/x.md"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give the agent to start after `--`"),
        (["--", "no-such-agent-here"], "agent command not found: no-such-agent-here"),
        (["--workspace", "{missing}", "--", "true"], "no freshline.toml in"),
        (["--workspace", "{root}", "--project", "nope", "--", "true"], "unknown project 'nope'"),
    ],
)
def test_what_cannot_start_is_refused_in_one_line(
    notes: Workspace, tmp_path: Path, args: list[str], message: str
) -> None:
    words = [a.format(root=notes.root, missing=tmp_path / "missing") for a in args]
    result = CliRunner().invoke(app, ["acp", *words])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and message in line


def test_a_project_the_cwd_s_workspace_lacks_is_refused(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(notes.root)
    result = CliRunner().invoke(app, ["acp", "--project", "nope", "--", "true"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: unknown project 'nope'")


@pytest.mark.parametrize(
    ("args", "inside", "message"),
    [
        ([], False, "standard output is a file: freshline acp talks to an ACP client over "
                    "pipes"),
        (["--project", "nope"], True, "unknown project 'nope'"),
    ],
)
def test_output_to_a_file_is_refused_in_one_line(
    notes: Workspace, tmp_path: Path, args: list[str], inside: bool, message: str
) -> None:
    """Seen: `freshline acp -- cat > out.txt` printed a 138-line traceback ("Pipe transport
    is only for pipes…"), and so did `--project nope`."""
    out = tmp_path / "out.txt"
    with out.open("wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "freshline", "acp", *args, "--", "cat"],
                              cwd=notes.root if inside else tmp_path, stdout=stdout,
                              stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert done.returncode == 2 and out.read_bytes() == b""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {message}")


@pytest.mark.parametrize("where", ["same proxy", "new proxy"])
async def test_read_tool_calls_replayed_by_a_load_are_not_new_reads(
    notes: Workspace, tmp_path: Path, where: str
) -> None:
    read = notes.root / "notes" / "a.md"
    async with proxied(tmp_path, notes.root, name="first") as run:
        session = await run.new(notes.root)
        await run.prompt(session, f"toolread {read}")
        read.write_text("# A, edited after the read\n", encoding="utf-8")
        if where == "same proxy":
            await run.conn.load_session(cwd=str(notes.root), session_id=session, mcp_servers=[])
            await run.prompt(session, "back again")
    if where == "new proxy":
        async with proxied(tmp_path, notes.root, name="second") as run:
            await run.conn.load_session(cwd=str(notes.root), session_id=session, mcp_servers=[])
            await run.prompt(session, "back again")
    block = freshline_block(run.prompts()[-1])
    assert block is not None and stale_read(block, read)
    assert named(block, notes.root) == ["notes/a.md"]


async def test_a_rolled_up_block_names_the_paging_tool_of_freshlines_mcp_server(
    notes: Workspace, tmp_path: Path
) -> None:
    """The agent is given freshline's MCP server with each session (`mcpServers`); a block
    that grouped changes names its `project_changes` call; that server, started as given,
    pages the list with the proxy's session but delivers nothing of its own."""
    with (notes.root / "freshline.toml").open("a", encoding="utf-8") as handle:
        handle.write("\n[delivery]\nacp = 2000\n")
    async with proxied(tmp_path, notes.root) as run:
        session = await run.new(notes.root)
        await run.prompt(session, "hello")
        for i in range(90):
            notes.write(f"notes/batch {i // 30}/new {i:02}.md", "# new\n")
        await run.prompt(session, "what changed?")
    (server,) = run.received("session/new")[0]["mcpServers"]
    assert server["name"] == "freshline" and Path(server["command"]).is_absolute()
    assert server["args"][-3:] == ["--workspace", str(notes.root), "mcp"]
    block = block_at(run, 1)
    assert block is not None and len(block) <= 2_000, run.stderr.read_text()
    called = re.search(r'project_changes\(session="([^"]+)", since=(\d+), page=1\)', block)
    assert called is not None and "freshline changes" not in block
    env = {**os.environ, **{e["name"]: e["value"] for e in server["env"]}}
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)
    async with Client(params, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
        tools = {t.name for t in (await client.list_tools()).tools}
        page = await client.call_tool("project_changes", {
            "session": called.group(1), "since": int(called.group(2))})
    assert {"project_changes", "project_files", "read_document"} <= tools
    assert not tools & {"open_session", "project_updates", "acknowledge"}  # the proxy delivers
    assert not page.is_error and page.structured_content is not None
    assert page.structured_content["page"] == 1
    assert "new 00.md" in "".join(getattr(c, "text", "") for c in page.content)
    # Its first answers are kept apart from a delivering server's (`mcp/front.py`).
    data = notes.root / ".freshline"
    assert (data / PAGING_TABLE_NAME).is_file() and not (data / TABLE_NAME).exists()
