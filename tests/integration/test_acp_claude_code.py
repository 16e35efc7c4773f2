"""`freshline acp -- claude-code-acp`: Zed's Claude Code adapter behind the proxy, offline.

The SDK's client API drives the proxy (`tests/acp_harness.py`); the agent is the real
`@zed-industries/claude-code-acp` (`clients.CLAUDE_CODE_ACP`), its model API a loopback
stub of the Anthropic Messages API (`anthropic_stub.py`, streaming). What reached the
model is read off the stub's request log.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freshline.session import SessionManager
from tests.acp_harness import MANIFEST, UPDATES, named, proxied, stale_read, started, with_notes
from tests.conftest import Workspace, install_hook
from tests.fake_model_servers import FakeReply
from tests.integration.acp_agents import OFFLINE
from tests.integration.anthropic_stub import AnthropicStub, Seen, answered_tool, last_user_text
from tests.integration.clients import CLAUDE_CODE_ACP, install

pytestmark = pytest.mark.timeout(900)  # the first run installs the agent

READ_IT = "READ-B"


def block_in(text: str, tag: str) -> str | None:
    """The block opened by `tag` in a text the model was given."""
    name = tag.strip("< ")
    found = re.search(re.escape(tag) + r".*?</" + name + ">", text, re.S)
    return found.group(0) if found else None


def asked(stub: AnthropicStub, words: str) -> Seen:
    """The last conversation request whose last message carries the user's `words`."""
    return [s for s in stub.seen if words in s.last][-1]


@pytest.fixture(scope="module")
def agent() -> Path:
    return install(CLAUDE_CODE_ACP)


@pytest.fixture
def vault(ws: Workspace) -> Workspace:
    return with_notes(ws)


@pytest.fixture
def stub(vault: Workspace) -> Iterator[AnthropicStub]:
    target = vault.root / "notes" / "b.md"

    def respond(body: dict[str, Any]) -> FakeReply:
        if READ_IT in last_user_text(body) and not answered_tool(body):
            return FakeReply(tool_calls=[("toolu_read", "mcp__acp__Read",
                                          {"file_path": str(target)})])
        return FakeReply(text="Noted.")

    with AnthropicStub(respond) as server:
        yield server


async def test_the_blocks_reach_claude_through_the_adapter_and_only_the_proxy_delivers(
    agent: Path, vault: Workspace, stub: AnthropicStub, tmp_path: Path
) -> None:
    """Seen: with the Claude Code hook installed too and the adapter run through `freshline
    acp`, the first prompt carried two manifests (the hook's and the proxy's), and every
    later prompt a fresh full manifest though nothing changed. (Command hooks: the Agent
    SDK, Claude Code 2.1.44, takes no http hooks.)"""
    install_hook(vault.root, "--command-hooks")
    log = tmp_path / "hook.log"
    env = {**OFFLINE, "ANTHROPIC_BASE_URL": stub.url, "FRESHLINE_HOOK_LOG": str(log)}
    async with proxied(tmp_path, vault.root, agent=[str(agent)], env=env) as run:
        session = await run.new(vault.root)
        assert await run.prompt(session, "hello there") == "end_turn"
        first = asked(stub, "hello there").last
        manifest = block_in(first, MANIFEST)
        assert manifest is not None and first.index(manifest) < first.index("hello there")
        assert {"notes/a.md", "notes/b.md"} <= set(named(manifest, vault.root))
        assert asked(stub, "hello there").text.count(MANIFEST) == 1
        assert "Noted." in run.client.said()
        await run.prompt(session, "anything new?")
        assert "project_context" not in asked(stub, "anything new?").last

        vault.write("notes/a.md", "# A, edited\n")
        vault.write("notes/c.md", "# C\n")
        vault.write("other/y.md", "# outside\n")
        await run.prompt(session, "what changed?")
        second = asked(stub, "what changed?").last
        updates = block_in(second, UPDATES)
        assert updates is not None and block_in(second, MANIFEST) is None
        assert second.count(UPDATES) == 1
        assert sorted(named(updates, vault.root)) == ["notes/a.md", "notes/c.md"]

        # Claude reads b.md with the adapter's Read tool: through the client, via the proxy.
        await run.prompt(session, f"please {READ_IT}")
        assert run.client.reads == [str(vault.root / "notes" / "b.md")]
        (vault.root / "notes" / "b.md").write_text("# B, edited by the user\n", encoding="utf-8")
        vault.write("notes/0-first.md", "# sorts first\n")
        await run.prompt(session, "and now?")
        last = block_in(asked(stub, "and now?").last, UPDATES)
        assert last is not None and named(last, vault.root)[0] == "notes/b.md"
        assert stale_read(last, vault.root / "notes" / "b.md")
        # The proxy gave the adapter freshline's MCP server: Claude has its paging tools.
        tools = {t["name"] for t in asked(stub, "and now?").body.get("tools", [])}
        assert {"mcp__freshline__project_changes", "mcp__freshline__project_files"} <= tools
        assert "mcp__freshline__project_updates" not in tools  # the proxy delivers
    # Nothing freshline added was shown to the user as theirs.
    assert not any("project_context" in str(u) for u in run.client.updates)
    manager = SessionManager(vault.config())
    try:
        (s,) = manager.sessions()  # the hook opened none
        assert s.external_id == f"acp:p:{session}" and s.channel == "acp"
    finally:
        manager.close()
    assert not log.exists(), log.read_text(encoding="utf-8")


async def test_a_session_loaded_in_a_new_proxy_goes_on_where_it_was(
    agent: Path, vault: Workspace, stub: AnthropicStub, tmp_path: Path
) -> None:
    env = {**OFFLINE, "ANTHROPIC_BASE_URL": stub.url}
    async with proxied(tmp_path, vault.root, agent=[str(agent)], env=env, name="first") as run:
        session = await run.new(vault.root)
        await run.prompt(session, "hello there")
    vault.write("notes/c.md", "# C\n")
    async with proxied(tmp_path, vault.root, agent=[str(agent)], env=env, name="again") as run:
        await run.conn.load_session(cwd=str(vault.root), session_id=session, mcp_servers=[])
        await run.prompt(session, "back again")
    replayed = run.client.user_texts()
    assert any("hello there" in text for text in replayed)
    assert not any("project_context" in text for text in replayed)
    back = asked(stub, "back again")
    assert block_in(back.last, MANIFEST) is None
    updates = block_in(back.last, UPDATES)
    assert updates is not None and named(updates, vault.root) == ["notes/c.md"]
    assert MANIFEST in back.text  # the first prompt, as Claude Code kept it


async def test_the_hook_alone_under_the_adapter_delivers_once_and_goes_quiet(
    agent: Path, vault: Workspace, stub: AnthropicStub, tmp_path: Path
) -> None:
    """Seen: the Agent SDK inside claude-code-acp writes no hook context to its transcript,
    so the hook never found its token and sent the manifest again on every prompt. A
    transcript holding no hook output at all proves nothing: printed counts as delivered.
    The Agent SDK (0.2.44: Claude Code 2.1.44) takes no http hooks: command hooks."""
    install_hook(vault.root, "--command-hooks")
    log = tmp_path / "hook.log"
    env = {**OFFLINE, "ANTHROPIC_BASE_URL": stub.url, "FRESHLINE_HOOK_LOG": str(log)}
    # On its own the adapter does not exit when the client hangs up: it is stopped.
    async with started(tmp_path, vault.root, [str(agent)], env=env, status=None,
                       shutdown=1.0) as run:
        session = await run.new(vault.root)
        await run.prompt(session, "hello there")
        await run.prompt(session, "anything new?")
        vault.write("notes/c.md", "# C\n")
        await run.prompt(session, "and now?")
        await run.prompt(session, "and again?")
    assert block_in(asked(stub, "hello there").text, MANIFEST) is not None
    assert "project_context" not in asked(stub, "anything new?").last
    updates = block_in(asked(stub, "and now?").last, UPDATES)
    assert updates is not None and named(updates, vault.root) == ["notes/c.md"]
    assert "project_context" not in asked(stub, "and again?").last
    manager = SessionManager(vault.config())
    try:
        [s] = manager.sessions()
        assert s.channel == "hook" and s.external_id is not None
    finally:
        manager.close()
    assert not log.exists(), log.read_text(encoding="utf-8")
