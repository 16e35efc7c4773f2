"""A real HTTP server on 127.0.0.1 that speaks just enough of the OpenAI chat-completions API
and the Anthropic messages API (tool calls, SSE streaming, errors) for the SDKs to talk to it.

    with FakeModelServer(api_key="k") as server:
        server.queue(FakeReply(text="hi"), FakeReply(status=429))
        OpenAI(base_url=server.openai_url, api_key="k")...

Each request pops the next queued reply (or a `responder` decides it from the request);
requests are recorded for assertions.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
ANTHROPIC_COUNT_PATH = "/v1/messages/count_tokens"


@dataclass
class FakeReply:
    """What the server answers to one request."""

    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200  # anything but 200 answers an API-shaped error
    raw: str | None = None  # sent as the body verbatim (for malformed answers)
    chunk: int = 3  # characters per streamed text delta
    drop_last: int = 0  # streamed events cut from the end (a stream that breaks off)
    delay: float = 0.0  # seconds to wait before answering (to trip a client timeout)


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]


def closed_port() -> int:
    """A loopback port with nothing listening (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {payload}\n\n".encode()


# --- OpenAI chat completions -----------------------------------------------------------------


def _openai_calls(reply: FakeReply) -> list[dict[str, Any]]:
    return [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for cid, name, args in reply.tool_calls
    ]


def _openai_finish(reply: FakeReply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def openai_body(reply: FakeReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = _openai_calls(reply)
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(reply)}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def openai_stream(reply: FakeReply, model: str) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(None, {
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.chunk)]
    for index, call in enumerate(_openai_calls(reply)):
        args = call["function"]["arguments"]
        head = {**call, "index": index, "function": {"name": call["function"]["name"],
                                                     "arguments": ""}}
        out.append(chunk({"tool_calls": [head]}))
        out += [chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(args, 5)]
    out.append(chunk({}, _openai_finish(reply)))
    out.append(_sse(None, "[DONE]"))
    return out


def openai_error(status: int) -> dict[str, Any]:
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error")
    return {"error": {"message": f"fake error {status}", "type": kind, "code": kind}}


# --- Anthropic messages ----------------------------------------------------------------------


def _anthropic_blocks(reply: FakeReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    blocks += [{"type": "tool_use", "id": cid, "name": name, "input": args}
               for cid, name, args in reply.tool_calls]
    return blocks


def _anthropic_message(reply: FakeReply, model: str, content: list[Any]) -> dict[str, Any]:
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_body(reply: FakeReply, model: str) -> dict[str, Any]:
    return _anthropic_message(reply, model, _anthropic_blocks(reply))


def anthropic_stream(reply: FakeReply, model: str) -> list[bytes]:
    start = _anthropic_message(reply, model, [])
    start["stop_reason"] = None
    out = [_sse("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_anthropic_blocks(reply)):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            pieces = _pieces(block["text"], reply.chunk)
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        else:
            opening = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in _pieces(json.dumps(block["input"]), 5)]
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": opening}))
        out += [_sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                             "delta": d}) for d in deltas]
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if reply.tool_calls else "end_turn"
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 1}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def anthropic_error(status: int) -> dict[str, Any]:
    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"fake error {status}"}}


# --- the server ------------------------------------------------------------------------------

_APIS = {
    OPENAI_PATH: (openai_body, openai_stream, openai_error),
    ANTHROPIC_PATH: (anthropic_body, anthropic_stream, anthropic_error),
}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        headers = {name.lower(): value for name, value in self.headers.items()}
        path = self.path.partition("?")[0]  # Claude Code asks `/v1/messages?beta=true`
        self.server.fake.requests.append(Recorded(path, headers, body))
        if path == ANTHROPIC_COUNT_PATH:
            return self._send(200, "application/json", b'{"input_tokens": 100}')
        api = _APIS.get(path)
        if api is None:
            return self._send(404, "application/json", b'{"error": "unknown path"}')
        render, stream, error = api
        reply = self.server.fake.next_reply(path, self.headers, body)
        time.sleep(reply.delay)
        if reply.status != 200:
            return self._send(reply.status, "application/json", json.dumps(error(reply.status)))
        streaming = bool(body.get("stream"))
        kind = "text/event-stream" if streaming else "application/json"
        if reply.raw is not None:
            return self._send(200, kind, reply.raw)
        model = body.get("model", "fake")
        if streaming:
            events = stream(reply, model)
            return self._send(200, kind, b"".join(events[: len(events) - reply.drop_last]))
        return self._send(200, kind, json.dumps(render(reply, model)))

    def _send(self, status: int, kind: str, payload: str | bytes) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        if status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (a timeout) leaves a broken pipe behind: expected


Responder = Callable[[dict[str, Any]], FakeReply]
"""Decides the reply to a request from its body (instead of a queue)."""


class FakeModelServer:
    """Serves queued replies over both APIs, or the replies a `responder` decides; with
    `api_key` set, a wrong key gets a 401."""

    def __init__(self, api_key: str | None = None, responder: Responder | None = None) -> None:
        self.api_key = api_key
        self.responder = responder
        self.replies: deque[FakeReply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The server's root URL (the Anthropic base URL)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_url(self) -> str:
        """The OpenAI-style base URL (with /v1)."""
        return f"{self.url}/v1"

    def queue(self, *replies: FakeReply) -> None:
        """Answer the next requests with these replies, in order."""
        with self._lock:
            self.replies.extend(replies)

    def next_reply(self, path: str, headers: Any, body: dict[str, Any]) -> FakeReply:
        """The reply to a request: 401 on a wrong key, else the responder's, else the next
        queued one (or a 500)."""
        if self.api_key is not None and self._key(path, headers) != self.api_key:
            return FakeReply(status=401)
        if self.responder is not None:
            return self.responder(body)
        with self._lock:
            return self.replies.popleft() if self.replies else FakeReply(status=500)

    @staticmethod
    def _key(path: str, headers: Any) -> str | None:
        if path == ANTHROPIC_PATH and headers.get("x-api-key"):
            return headers.get("x-api-key")
        return (headers.get("authorization") or "").removeprefix("Bearer ")

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
