"""`serve`'s fast path for the two calls of a steady round (issue 30's load goal): a
2026-07-28 `tools/call` of `project_updates` or `acknowledge` is answered without the MCP
SDK's per-request machinery, with the bytes the SDK would have sent. Two apps of one
workspace run in-process on uvicorn, one with the fast path and one without (the old
way), so every answer can be compared with the SDK's own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types
import pytest

from freshline.config import ServerSettings
from freshline.interfaces.mcp.service import FreshlineService
from freshline.interfaces.server.auth import VIEWER, BearerAuth
from freshline.interfaces.server.fast import FastCalls
from freshline.interfaces.server.http import build_app, limits_of, server_for
from freshline.interfaces.server.listen import Listen, bind
from freshline.session import users
from freshline.store import Store
from tests.conftest import Workspace
from tests.serving import connect

PROTOCOL = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}}


@dataclass
class Served:
    """The same workspace served twice: `urls[0]` with the fast path, `urls[1]` without."""

    urls: list[str]
    token: str
    fast: FastCalls

    def headers(self, tool: str | None = "project_updates", **more: str) -> dict[str, str]:
        found = {"authorization": f"Bearer {self.token}", "content-type": "application/json",
                 "accept": "application/json, text/event-stream",
                 "mcp-protocol-version": PROTOCOL, "mcp-method": "tools/call"}
        if tool is not None:
            found["mcp-name"] = tool
        return found | more


@pytest.fixture
def workspace(ws: Workspace) -> Iterator[tuple[FreshlineService, str]]:
    ws.write("notes/a.md", "# A\n")
    config = ws.configure({"p": {"include": ["notes"]}})
    store = Store(ws.root / ".freshline", config.store_url)
    token = users.add(store, config, "ann", ["p"])
    store.close()
    assert token is not None
    service = FreshlineService(config, viewer=VIEWER.get)
    try:
        yield service, token
    finally:
        service.close()


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[str]:
    """`app` on uvicorn on a free loopback port, in this event loop; its /mcp URL."""
    sock = bind(Listen(port=0))
    listen = Listen(port=sock.getsockname()[1])
    server = server_for(app, listen, limits_of(ServerSettings()), sock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.01)
        try:
            yield f"{listen.url}/mcp"
        finally:
            server.should_exit = True
    sock.close()


@asynccontextmanager
async def serving(workspace: tuple[FreshlineService, str]) -> AsyncIterator[Served]:
    service, token = workspace
    fast = build_app(service, "127.0.0.1", watch=False)
    old = build_app(service, "127.0.0.1", watch=False, fast=False)
    assert isinstance(fast, BearerAuth) and isinstance(fast.app, FastCalls)
    assert not isinstance(old, BearerAuth) or not isinstance(old.app, FastCalls)
    async with running(fast) as fast_url, running(old) as old_url:
        yield Served([fast_url, old_url], token, fast.app)


def masked(text: str, *secrets: str) -> str:
    """`text` with each session id and delivery token replaced by its rank."""
    for n, secret in enumerate(secrets):
        text = text.replace(secret, f"<secret {n}>")
    return text


def fields(result: mcp_types.CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


async def a_round(url: str, token: str) -> tuple[list[str], list[str]]:
    """A client's round by the SDK's client: the answers (as JSON) and their secrets."""
    async with connect(url, token) as client:
        opened = await client.call_tool("open_session", {"project": "p"})
        session = fields(opened)["session"]
        first = await client.call_tool("project_updates", {"session": session})
        delivered = fields(first)["token"]
        answers = [first,
                   await client.call_tool("acknowledge", {"session": session, "token": delivered}),
                   await client.call_tool("project_updates", {"session": session}),
                   await client.call_tool("acknowledge", {"session": session, "token": "nope"}),
                   await client.call_tool("project_updates", {"session": "no-such-session"})]
    return [a.model_dump_json() for a in answers], [session, delivered]


async def test_the_sdk_client_gets_the_same_results_by_the_fast_path(
    workspace: tuple[FreshlineService, str]
) -> None:
    async with serving(workspace) as served:
        fast, fast_secrets = await a_round(served.urls[0], served.token)
        assert served.fast.answered == 5
        old, old_secrets = await a_round(served.urls[1], served.token)
    assert [masked(a, *fast_secrets) for a in fast] == [masked(a, *old_secrets) for a in old]
    assert '"isError":true' not in fast[0] and "<project_context " in fast[0]


async def post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, str, bytes]:
    async with httpx2.AsyncClient(timeout=60) as http:
        answer = await http.post(url, headers=headers, content=body)
    return answer.status_code, answer.headers.get("content-type", ""), answer.content


def call_body(tool: str, ident: int = 7, **arguments: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments, "_meta": META}}).encode()


async def test_the_wire_answers_are_the_sdks_bytes(workspace: tuple[FreshlineService, str]) -> None:
    async with serving(workspace) as served:
        answers: list[list[tuple[int, str, bytes]]] = []
        secrets: list[list[str]] = []
        for url in served.urls:
            opened = await post(url, served.headers("open_session"), call_body("open_session",
                                                                               project="p"))
            session = json.loads(opened[2])["result"]["structuredContent"]["session"]
            first = await post(url, served.headers(), call_body("project_updates", session=session))
            token = json.loads(first[2])["result"]["structuredContent"]["token"]
            ack = call_body("acknowledge", ident=8, session=session, token=token)
            answers.append([first, await post(url, served.headers("acknowledge"), ack),
                            await post(url, served.headers("acknowledge"), ack),
                            await post(url, served.headers(), call_body("project_updates",
                                                                        session=session))])
            secrets.append([session, token])
        assert served.fast.answered == 4
    fast, old = ([(s, c, masked(b.decode(), *k)) for s, c, b in a]
                 for a, k in zip(answers, secrets, strict=True))
    assert fast == old
    assert all(status == 200 and kind == "application/json" for status, kind, _ in fast)


def batch() -> bytes:
    one = json.loads(call_body("project_updates", session="s"))
    return json.dumps([one, dict(one, id=8)]).encode()


def with_progress() -> bytes:
    body = json.loads(call_body("project_updates", session="s"))
    body["params"]["_meta"]["progressToken"] = "p1"
    return json.dumps(body).encode()


def with_meta(**meta: Any) -> bytes:
    body = json.loads(call_body("acknowledge", session="s", token="t"))
    body["params"]["_meta"] |= meta
    return json.dumps(body).encode()


OLD_WAY: dict[str, tuple[dict[str, str], bytes]] = {
    "a session id": ({"mcp-session-id": "f00d"}, call_body("project_updates", session="s")),
    "a batch": ({}, batch()),
    "another tool": ({"mcp-name": "project_manifest"}, call_body("project_manifest", project="p")),
    "a bad token": ({"authorization": "Bearer wrong"}, call_body("project_updates", session="s")),
    "a malformed body": ({}, b'{"jsonrpc": "2.0", "id": 1, "method": '),
    "not JSON-RPC": ({}, b'{"id": 1, "method": "tools/call"}'),
    "a notification": ({"mcp-method": "notifications/initialized"},
                       b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'),
    "tools/list": ({"mcp-method": "tools/list"},
                   json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                               "params": {"_meta": META}}).encode()),
    "a progress token": ({}, with_progress()),
    "a header that disagrees": ({"mcp-name": "acknowledge"},
                                call_body("project_updates", session="s")),
    "JSON only accepted": ({"accept": "application/json"},
                           call_body("project_updates", session="s")),
    "a foreign origin": ({"origin": "http://evil.example"},
                         call_body("project_updates", session="s")),
    "a malformed client info": ({"mcp-name": "acknowledge"},
                                with_meta(**{"io.modelcontextprotocol/clientInfo": "me"})),
    "malformed capabilities": ({"mcp-name": "acknowledge"},
                               with_meta(**{"io.modelcontextprotocol/clientCapabilities": 3})),
    "a request state": ({}, call_body("project_updates", session="s").replace(
        b'"arguments"', b'"requestState": "x", "arguments"')),
    "a malformed progress token": ({"mcp-name": "acknowledge"}, with_meta(progressToken=[1])),
    "arguments not an object": ({}, call_body("project_updates").replace(b'{}', b'[1]', 1)),
    "the handshake era": ({"mcp-protocol-version": "2025-06-18"},
                          call_body("project_updates", session="s")),
}


async def test_everything_else_goes_the_old_way(workspace: tuple[FreshlineService, str]) -> None:
    async with serving(workspace) as served:
        for case, (more, body) in OLD_WAY.items():
            headers = served.headers() | more
            fast, old = [await post(url, headers, body) for url in served.urls]
            assert fast == old, case
        assert served.fast.answered == 0

