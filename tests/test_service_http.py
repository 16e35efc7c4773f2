"""Claude Code's http hooks, answered by the service: the request's head and route (pure),
and real requests on 127.0.0.1 (the real Claude Code posts them in
tests/integration/test_claude_code.py)."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.conversation.repository import Repo
from freshline.interfaces.service.daemon import Service
from freshline.interfaces.service.httphooks import (
    MAX_BODY,
    MAX_HEAD,
    BadHttp,
    Head,
    Route,
    parse_head,
    route,
)
from freshline.interfaces.service.secret import HookAddress, load, parse
from freshline.store.sessions import CHECKPOINT_KEY

from .conftest import Workspace, git, wait_for

ADDRESS = HookAddress(4000, "ab" * 32)
GOOD = f"/freshline/{'ab' * 32}/hook/claude-code?workspace=%2Fw&project=p"


def head(method: str = "POST", target: str = GOOD, **headers: str) -> Head:
    return Head(method, target, {k.replace("_", "-"): v for k, v in headers.items()})


@pytest.mark.parametrize(
    ("request_head", "found"),
    [
        (head(), Route("claude-code", Path("/w"), "p")),
        (head(target=GOOD.replace("&project=p", "")), Route("claude-code", Path("/w"), None)),
        (head(target=GOOD.replace("claude-code", "gemini-cli")),
         Route("gemini-cli", Path("/w"), "p")),
        (head(method="GET"), None),
        (head(target=GOOD.replace("ab" * 32, "ab" * 31 + "ac")), None),  # another secret
        (head(target=GOOD.replace("ab" * 32, "")), None),
        (head(target=f"/freshline/{'ab' * 32}/hook/vim?workspace=%2Fw"), None),
        (head(target=GOOD.replace("%2Fw", "w")), None),  # a workspace must be absolute
        (head(target=GOOD.split("?")[0]), None),
        (head(target="/"), None),
        (head(target="*"), None),
    ],
)
def test_only_this_users_hook_path_is_routed(request_head: Head, found: Route | None) -> None:
    assert route(request_head, ADDRESS) == found


@given(st.text(max_size=200))
def test_anything_without_the_secret_is_not_routed(target: str) -> None:
    assert route(head(target=target), ADDRESS) is None or f"/{'ab' * 32}/" in target


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE", 400),
        (b"POST / HTTP/2\r\nHost: x", 400),
        (b"POST /x HTTP/1.1\r\nno colon here", 400),
        (b"POST /x HTTP/1.1\r\n bad: name", 400),
        (b"POST /x HTTP/1.1\r\nContent-Length: 1\r\ncontent-length: 2", 400),
    ],
)
def test_a_head_that_is_not_http_is_refused(raw: bytes, status: int) -> None:
    with pytest.raises(BadHttp) as info:
        parse_head(raw)
    assert info.value.status == status


def test_the_body_needs_a_length_within_the_limit() -> None:
    assert parse_head(b"POST /x HTTP/1.1\r\nContent-Length: 12").length() == 12
    for headers, status in (({}, 411), ({"transfer-encoding": "chunked"}, 411),
                            ({"content-length": "-1"}, 411),
                            ({"content-length": str(MAX_BODY + 1)}, 413)):
        with pytest.raises(BadHttp) as info:
            Head("POST", "/", headers).length()
        assert info.value.status == status


def test_a_kept_address_is_trusted_only_when_nobody_else_can_read_it(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"port": 4000, "secret": "ab" * 32}))
    path.chmod(0o600)
    assert load(path) == ADDRESS
    path.chmod(0o644)
    assert load(path) is None
    for text in ("", "[]", '{"port": 0, "secret": "x"}', '{"port": 4000, "secret": "AB"}'):
        assert parse(text) is None


# --- real requests ---------------------------------------------------------------------------


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def post(service: Service, path: str, body: bytes,
         headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    assert service.address is not None
    conn = http.client.HTTPConnection("127.0.0.1", service.address.port, timeout=30)
    try:
        conn.request("POST", path, body, headers or {})
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def hook_path(service: Service, notes: Workspace) -> str:
    assert service.address is not None
    return service.address.url("claude-code", notes.root).split(
        f":{service.address.port}", 1)[1]


def payload(notes: Workspace, event: str = "UserPromptSubmit", **more: Any) -> bytes:
    return json.dumps({"hook_event_name": event, "session_id": "c1",
                       "cwd": str(notes.root / "notes"), "prompt": "hi", **more}).encode()


def test_a_prompt_posted_with_the_secret_is_answered_as_the_command_hook_would(
    notes: Workspace, service: Service
) -> None:
    status, body = post(service, hook_path(service, notes), payload(notes))
    assert status == 200
    context = json.loads(body)["hookSpecificOutput"]["additionalContext"]
    assert "<project_context " in context and f"{notes.root}/notes/a.md" in context
    assert post(service, hook_path(service, notes), payload(notes)) == (200, b"")  # nothing due
    notes.write("notes/b.md", "# B\n")  # written just before the prompt: the cookie sees it
    status, body = post(service, hook_path(service, notes), payload(notes))
    assert "notes/b.md" in json.loads(body)["hookSpecificOutput"]["additionalContext"]
    read = {"tool_name": "Read", "tool_input": {"file_path": str(notes.root / "notes/b.md")},
            "tool_response": {"type": "text"}}
    assert post(service, hook_path(service, notes), payload(notes, "PostToolUse", **read)) == (
        200, b"")  # handed over: recorded after the answer
    assert post(service, hook_path(service, notes),
                payload(notes, "SessionEnd", reason="exit")) == (200, b"")
    service.hooks.drain()
    s = notes.tracker().store.session_by_external("claude-code:c1")
    assert s is not None and s.state.value == "closed"
    assert [e.path for e in notes.tracker().store.ledger_of(s.id)] == ["notes/b.md"]


def test_a_prompts_checkpoint_is_written_once_its_reply_is_sent(
    notes: Workspace, service: Service
) -> None:
    """No answer waits for its checkpoint's files: the service queues their writing once
    the reply is out, so they are written with no call after it."""
    assert post(service, hook_path(service, notes), payload(notes))[0] == 200
    store = notes.tracker().store
    s = store.session_by_external("claude-code:c1")
    assert s is not None
    wait_for(lambda: not store.meta_get(CHECKPOINT_KEY.format(session=s.id)),
             "the checkpoint written", timeout=10)
    private = notes.root / ".freshline" / "conversations.git"
    events = git(private, "log", "--format=%B", Repo.ref(s.id))
    assert '"content": "hi"' in events.replace('":"', '": "')


def test_a_connection_kept_alive_carries_one_request_after_another(
    notes: Workspace, service: Service
) -> None:
    assert service.address is not None
    conn = http.client.HTTPConnection("127.0.0.1", service.address.port, timeout=30)
    try:
        for expected in (True, False):
            conn.request("POST", hook_path(service, notes), payload(notes))
            reply = conn.getresponse()
            assert (b"<project_context " in reply.read()) is expected
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("path_of", "body", "headers"),
    [
        (lambda good: good.replace("/freshline/", "/freshline/x"), b"{}", {}),
        (lambda good: good[:11] + "0" * 64 + good[75:], b"{}", {}),  # another secret
        (lambda good: "/freshline/hook/claude-code?workspace=/w", b"{}", {}),
        (lambda good: good.replace("claude-code", "nope"), b"{}", {}),
        (lambda good: "/", b"{}", {}),
    ],
)
def test_a_request_without_the_secret_gets_a_404_and_nothing_else(
    notes: Workspace, service: Service, path_of: Any, body: bytes, headers: dict[str, str]
) -> None:
    assert post(service, path_of(hook_path(service, notes)), body, headers) == (404, b"")
    assert service.workspaces.listing() == []  # nothing ran
    assert not (notes.root / ".freshline" / "freshline.db").exists()


def test_a_malformed_or_oversized_request_gets_an_error_and_changes_nothing(
    notes: Workspace, service: Service
) -> None:
    good = hook_path(service, notes)
    status, body = post(service, good, b"{not json")
    assert status == 400 and json.loads(body)["error"].startswith("hook payload is not JSON: ")
    status, body = post(service, good, b"\xff\xfe")
    assert (status, json.loads(body)) == (400, {"error": "the payload is not UTF-8"})
    assert service.address is not None
    with socket.create_connection(("127.0.0.1", service.address.port), timeout=30) as conn:
        conn.sendall(f"POST {good} HTTP/1.1\r\nContent-Length: {MAX_BODY + 1}\r\n\r\n".encode())
        assert conn.recv(1 << 16).startswith(b"HTTP/1.1 413 ")
    with socket.create_connection(("127.0.0.1", service.address.port), timeout=30) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nX: " + b"y" * MAX_HEAD)
        assert conn.recv(1 << 16).startswith(b"HTTP/1.1 431 ")
    assert service.workspaces.listing() == []
    assert not (notes.root / ".freshline" / "freshline.db").exists()
