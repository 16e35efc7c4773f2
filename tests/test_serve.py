"""`freshline serve`: the MCP SDK's streamable-HTTP client against two real `serve`
processes on 127.0.0.1 sharing one workspace (issue 21): its store (SQLite, and in one
test PostgreSQL) is what makes sessions and delivery tokens cross processes."""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest
from mcp import Client
from typer.testing import CliRunner

from freshline.config import load_config
from freshline.interfaces.cli.root import app
from freshline.interfaces.server.listen import Listen
from freshline.session import users
from freshline.store import DB_NAME, Store
from freshline.store.location import ENV_VAR as STORE_URL
from tests.conftest import Workspace
from tests.pgserver import PgServer
from tests.serving import connect, free_port, self_signed, start_servers, stop_server

runner = CliRunner()


@dataclass
class Team:
    """A served workspace: its root, two servers' URLs (the second serves HTTPS with a
    certificate `ca` vouches for), and each user's token."""

    root: Path
    urls: list[str]
    tokens: dict[str, str]
    ca: Path

    def connect(self, server: int, user: str | None, mode: str = "auto") -> Any:
        """The SDK's client of server 0 or 1 as `user`."""
        token = self.tokens[user] if user else None
        return connect(self.urls[server], token, mode, self.ca if server else None)

    def store(self) -> Store:
        return Store(self.root / ".freshline", load_config(self.root).store_url)


@contextmanager
def serving(ws: Workspace) -> Iterator[Team]:
    """Two `serve` processes of a workspace with projects p (notes/) and q (other/); alice
    may see p, bob q, carol nothing yet. Its store is the one FRESHLINE_STORE_URL names,
    else SQLite."""
    ws.write("notes/a.md", "# A\n")
    ws.write("other/x.md", "# X\n")
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["other"]}})
    config = load_config(ws.root)
    store = Store(ws.root / ".freshline", config.store_url)
    tokens = {name: users.add(store, config, name, grants)
              for name, grants in (("alice", ["p"]), ("bob", ["q"]), ("carol", []))}
    store.close()
    cert, key = self_signed(ws.root.parent)
    ports = [free_port(), free_port()]
    procs = start_servers(ws.root, (ports[0],),
                          (ports[1], "--tls-cert", str(cert), "--tls-key", str(key)))
    try:
        urls = [f"http://127.0.0.1:{ports[0]}/mcp", f"https://127.0.0.1:{ports[1]}/mcp"]
        yield Team(ws.root, urls, tokens, cert)
    finally:
        stop_server(*procs)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    """The workspace the tests of this module share, served on the SQLite store."""
    with serving(Workspace(tmp_path_factory.mktemp("team"))) as served:
        yield served


def leaves(exc: BaseException) -> list[BaseException]:
    """The errors inside a (nested) exception group."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc, *([exc.__cause__] if exc.__cause__ else [])]


def refused_by_http(exc: BaseException) -> bool:
    """Whether the SDK client failed because the server answered an error status (it
    reports a 401 as an error response, or the HTTP error itself)."""
    return any("401" in str(e) or "error response" in str(e) for e in leaves(exc))


def text(result: mcp_types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


async def call(client: Client, tool: str, **args: Any) -> mcp_types.CallToolResult:
    result = await client.call_tool(tool, args)
    assert not result.is_error, text(result)
    return result


async def refused(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error
    return text(result)


def data(result: mcp_types.CallToolResult) -> Any:
    found = result.structured_content
    assert found is not None
    return found.get("result", found)


async def test_every_tool_resource_and_prompt_with_a_valid_token(team: Team) -> None:
    async with team.connect(0, "alice") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"list_projects", "project_manifest", "open_session", "project_updates",
                         "acknowledge", "project_changes", "project_files", "read_document"}
        assert [p["name"] for p in data(await call(client, "list_projects"))] == ["p"]
        assert "notes/a.md" in text(await call(client, "project_manifest", project="p"))
        session = data(await call(client, "open_session", project="p"))["session"]
        first = await call(client, "project_updates", session=session)
        token = data(first)["token"]
        assert token and "<project_context " in text(first)
        acked = data(await call(client, "acknowledge", session=session, token=token))
        assert acked["session"] == session
        (team.root / "notes/tool.md").write_text("new\n")
        news = await call(client, "project_updates", session=session)
        assert "notes/tool.md" in text(news)
        await call(client, "acknowledge", session=session, token=data(news)["token"])
        page = await call(client, "project_changes", session=session, since=0)
        assert "notes/tool.md" in text(page)
        doc = await call(client, "read_document", path="notes/a.md", session=session)
        assert "# A" in text(doc)
        listed = await client.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["freshline://project/p/manifest"]
        manifest = await client.read_resource("freshline://project/p/manifest")
        assert any("notes/a.md" in getattr(c, "text", "") for c in manifest.contents)
        prompt = await client.get_prompt("catch_up", {"project": "p"})
        assert prompt.messages
    async with team.connect(1, "alice", "legacy") as legacy:
        assert [p["name"] for p in data(await call(legacy, "list_projects"))] == ["p"]


async def test_no_or_a_wrong_token_is_401_with_no_detail(team: Team) -> None:
    tls = ssl.create_default_context(cafile=str(team.ca))
    async with httpx2.AsyncClient(timeout=30, verify=tls) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer fl_wrong"}, {"Authorization": "Basic x"},
                        {"Authorization": f"Bearer {team.tokens['alice']}x"}):
            for url in team.urls:  # plain HTTP and HTTPS alike
                answer = await http.post(url, json=body, headers=headers)
                assert answer.status_code == 401 and answer.content == b"", (url, headers)
    with pytest.raises(BaseException) as caught:
        async with connect(team.urls[0], "fl_wrong") as client:
            await client.list_tools()
    assert refused_by_http(caught.value)


async def test_a_user_without_a_grant_cannot_see_open_or_read_a_project(team: Team) -> None:
    async with team.connect(0, "alice") as alice:
        hers = data(await call(alice, "open_session", project="p"))["session"]
    async with team.connect(1, "bob") as bob:
        assert [p["name"] for p in data(await call(bob, "list_projects"))] == ["q"]
        # refused exactly as a project, file or session that does not exist
        assert await refused(bob, "project_manifest", project="p") == \
            (await refused(bob, "project_manifest", project="nosuch")).replace("nosuch", "p")
        assert "unknown project 'p'" in await refused(bob, "open_session", project="p")
        assert "unknown project 'p'" in await refused(bob, "project_files", project="p")
        hidden = await refused(bob, "read_document", path="notes/a.md")
        missing = await refused(bob, "read_document", path="other/none.md")
        assert hidden.replace("notes/a.md", "X") == missing.replace("other/none.md", "X")
        assert "no such file" in hidden
        for tool in ("project_updates", "project_changes"):
            assert f"unknown session '{hers}'" in await refused(bob, tool, session=hers)
        assert "unknown session" in await refused(bob, "acknowledge", session=hers, token="0")
        assert "unknown session" in await refused(bob, "read_document", path="other/x.md",
                                                  session=hers)
        listed = await bob.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["freshline://project/q/manifest"]
        with pytest.raises(Exception, match="unknown project 'p'"):
            await bob.read_resource("freshline://project/p/manifest")
        prompt_errors = []
        for project in ("p", "nosuch"):  # the SDK words a prompt's failure its own way
            with pytest.raises(Exception) as caught:
                await bob.get_prompt("catch_up", {"project": project})
            prompt_errors.append(str(caught.value))
        assert prompt_errors[0] == prompt_errors[1]


async def test_a_listen_stream_hears_only_of_the_projects_its_user_may_see(team: Team) -> None:
    from mcp.shared.subscriptions import ResourceUpdated

    manifests = [f"freshline://project/{p}/manifest" for p in ("p", "q")]
    async with team.connect(0, "bob") as bob, \
            bob.listen(resource_subscriptions=manifests) as stream:
        # p's change comes first (announced before q's, or with it, p first)
        (team.root / "notes/unseen.md").write_text("p changes first\n")
        (team.root / "other/seen.md").write_text("then q\n")
        await call(bob, "read_document", path="other/x.md")  # flushes, if the watcher lags
        with anyio.fail_after(30):
            event = await stream.__anext__()
        assert event == ResourceUpdated(uri=manifests[1])


async def test_grant_and_revocation_take_effect_on_the_next_request(team: Team) -> None:
    async with team.connect(0, "carol") as carol:
        assert data(await call(carol, "list_projects")) == []
        assert runner.invoke(app, ["-w", str(team.root), "user", "grant", "carol", "p"]
                             ).exit_code == 0
        assert [p["name"] for p in data(await call(carol, "list_projects"))] == ["p"]
        session = data(await call(carol, "open_session", project="p"))["session"]
        await call(carol, "project_updates", session=session)
        assert runner.invoke(app, ["-w", str(team.root), "user", "revoke", "carol", "p"]
                             ).exit_code == 0
        assert data(await call(carol, "list_projects")) == []
        assert "unknown session" in await refused(carol, "project_updates", session=session)
        assert runner.invoke(app, ["-w", str(team.root), "user", "rm", "carol"]).exit_code == 0
        with pytest.raises(BaseException) as caught:
            await carol.list_tools()
        assert refused_by_http(caught.value)


async def switching(team: Team) -> list[str]:
    """The notes announced in acknowledged deliveries while a client of alice's switches
    servers per request: each new note should be in exactly one."""
    announced: list[str] = []
    async with team.connect(0, "alice") as one, \
            team.connect(1, "alice") as two:
        clients = [one, two]
        session = data(await call(one, "open_session", project="p"))["session"]
        first = await call(two, "project_updates", session=session)
        await call(one, "acknowledge", session=session, token=data(first)["token"])
        for i in range(12):
            (team.root / f"notes/switch-{i}.md").write_text(f"{i}\n")
            issued = await call(clients[i % 2], "project_updates", session=session)
            token = data(issued)["token"]
            if i % 3 == 2:  # sometimes not acknowledged: told again next time
                continue
            announced += re.findall(r"notes/(switch-\d+)\.md", text(issued))
            await call(clients[(i + 1) % 2], "acknowledge", session=session, token=token)
        last = await call(one, "project_updates", session=session)
        if data(last)["token"]:
            announced += re.findall(r"notes/(switch-\d+)\.md", text(last))
    return sorted(announced)


SWITCHED = sorted(f"switch-{i}" for i in range(12))


async def test_two_servers_a_client_switching_per_request_loses_and_repeats_nothing(
    team: Team,
) -> None:
    assert await switching(team) == SWITCHED


async def test_two_servers_on_one_postgresql_store_lose_and_repeat_nothing(
    tmp_path: Path, pg_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(STORE_URL, pg_server.new_schema())
    with serving(Workspace(tmp_path / "ws")) as team:
        assert not (team.root / ".freshline" / DB_NAME).exists()  # all of it in PostgreSQL
        assert await switching(team) == SWITCHED


def test_a_non_loopback_address_needs_tls_or_an_explicit_insecure_flag(
    two_projects: Workspace, tmp_path: Path,
) -> None:
    result = runner.invoke(app, ["-w", str(two_projects.root), "serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "not a loopback address" in result.stderr
    assert Listen("127.0.0.1").check() is None and Listen("::1").check() is None
    assert "unencrypted" in str(Listen("0.0.0.0", insecure_http=True).check())
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    assert Listen("10.0.0.1", tls_cert=cert, tls_key=cert).check() is None
    result = runner.invoke(app, ["-w", str(two_projects.root), "serve", "--tls-cert", str(cert)])
    assert result.exit_code == 2 and "both --tls-cert and --tls-key" in result.stderr
