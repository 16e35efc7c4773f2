"""A loopback stand-in for the Anthropic Messages API, as the Claude Code CLI calls it.

Claude Code posts `/v1/messages?beta=true` with `stream: true` and reads server-sent
events; it also counts tokens (`/v1/messages/count_tokens`) and, for `/compact`, asks for
a summary. The stub answers every request from a `Responder` (the request body in, a
`FakeReply` out: text or tool calls), streams it as the API does
(`tests/fake_model_servers.py`), and records the conversation requests.

    with AnthropicStub(responder) as stub:
        env = {"ANTHROPIC_BASE_URL": stub.url, ...}
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_model_servers import FakeReply, anthropic_body, anthropic_stream

Responder = Callable[[dict[str, Any]], FakeReply]
SUMMARY_ASK = "create a detailed summary of the conversation"
SUMMARY = ("<analysis>The user greeted me.</analysis>\n"
           "<summary>The user said hello; I answered.</summary>")


def last_user_text(body: dict[str, Any]) -> str:
    """Every text of the request's last message (the turn being asked), joined."""
    return message_text(body["messages"][-1])


def message_text(message: dict[str, Any]) -> str:
    """The texts of one message, tool results included, joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content or []:
        if part.get("type") == "text":
            parts.append(part["text"])
        elif part.get("type") == "tool_result":
            inner = part.get("content")
            parts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(parts)


def all_text(body: dict[str, Any]) -> str:
    """Every text of every message of a request."""
    return "\n".join(message_text(m) for m in body["messages"])


def is_summary_request(body: dict[str, Any]) -> bool:
    """Whether this is Claude Code asking for a summary (`/compact`)."""
    return SUMMARY_ASK in last_user_text(body)


def answered_tool(body: dict[str, Any]) -> bool:
    """Whether the request carries the result of a tool call (the turn's second leg)."""
    content = body["messages"][-1].get("content")
    return isinstance(content, list) and any(p.get("type") == "tool_result" for p in content)


@dataclass
class Seen:
    """One conversation request the stub answered."""

    body: dict[str, Any]

    @property
    def last(self) -> str:
        """The text of its last message."""
        return last_user_text(self.body)

    @property
    def text(self) -> str:
        """The text of all its messages."""
        return all_text(self.body)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._send(404, "application/json", b'{"type": "error"}')

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        stub = self.server.stub
        if "count_tokens" in self.path:
            return self._send(200, "application/json", b'{"input_tokens": 100}')
        if not self.path.startswith("/v1/messages"):
            return self._send(404, "application/json", b'{"type": "error"}')
        if is_summary_request(body):
            reply = FakeReply(text=SUMMARY)
        else:
            stub.record(body)
            reply = stub.responder(body)
        model = body.get("model", "claude")
        if body.get("stream"):
            events = b"".join(anthropic_stream(reply, model))
            return self._send(200, "text/event-stream", events)
        answer = json.dumps(anthropic_body(reply, model)).encode()
        return self._send(200, "application/json", answer)

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    stub: AnthropicStub

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer


def plain(_body: dict[str, Any]) -> FakeReply:
    """The default responder: a short text answer."""
    return FakeReply(text="Noted.")


class AnthropicStub:
    """The stub server; `seen` lists the conversation requests, oldest first."""

    def __init__(self, responder: Responder = plain) -> None:
        self.responder = responder
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.stub = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL to give Claude Code (`ANTHROPIC_BASE_URL`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def record(self, body: dict[str, Any]) -> None:
        """Keep a conversation request."""
        with self._lock:
            self.seen.append(Seen(body))

    def since(self, count: int) -> list[Seen]:
        """The requests after the first `count`."""
        with self._lock:
            return self.seen[count:]

    def __enter__(self) -> AnthropicStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
