"""A loopback stand-in for the model APIs Gemini CLI and Codex CLI call, recording every
request: Gemini's `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (and its
helpers `:generateContent`, `:countTokens`), and the OpenAI Responses API Codex streams
(`POST /v1/responses`). Each answers a short text, unless a `responder` given to
`CliStub` answers a Responses request with output items of its own (a tool call), or its
`gemini` caller a Gemini request with a `functionCall`.

    with CliStub() as stub:
        env = {"GOOGLE_GEMINI_BASE_URL": stub.url, ...}   # or base_url = stub.url + "/v1"
        stub.bodies("streamGenerateContent")              # the request bodies, oldest first
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Noted."
_GEMINI_CHUNK: dict[str, Any] = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": ANSWER}]},
                    "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 7}}
_USAGE = {"input_tokens": 5, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2,
          "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 7}
_MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}


Responder = Callable[[dict[str, Any]], list[dict[str, Any]] | None]
"""Output items for a Responses request's body (None: the short text answer)."""
Caller = Callable[[dict[str, Any]], dict[str, Any] | None]
"""The `functionCall` for a Gemini request's body (None: the short text answer)."""


def _gemini_chunk(call: dict[str, Any] | None) -> dict[str, Any]:
    """Gemini's streamed answer: the text, or a `functionCall` part."""
    if call is None:
        return _GEMINI_CHUNK
    candidate = {**_GEMINI_CHUNK["candidates"][0],
                 "content": {"role": "model", "parts": [{"functionCall": call}]}}
    return {**_GEMINI_CHUNK, "candidates": [candidate]}


def _responses_events(items: list[dict[str, Any]]) -> bytes:
    """The Responses API's stream for these output items."""
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
    events = [("response.created", {"type": "response.created", "response": response})]
    events += [("response.output_item.done", {"type": "response.output_item.done",
                                              "output_index": i, "item": item})
               for i, item in enumerate(items)]
    events.append(("response.completed", {"type": "response.completed", "response": {
        **response, "status": "completed", "usage": _USAGE}}))
    return b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self._send(200, "application/json", b"{}")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        with self.server.lock:
            self.server.seen.append((self.path, body))
        if "streamGenerateContent" in self.path:
            call = self.server.gemini(body) if self.server.gemini else None
            data = b"data: " + json.dumps(_gemini_chunk(call)).encode() + b"\r\n\r\n"
            return self._send(200, "text/event-stream", data)
        if ":generateContent" in self.path:
            return self._send(200, "application/json", json.dumps(_GEMINI_CHUNK).encode())
        if ":countTokens" in self.path:
            return self._send(200, "application/json", b'{"totalTokens": 5}')
        if self.path.startswith("/v1/responses"):
            items = self.server.responder(body) if self.server.responder else None
            return self._send(200, "text/event-stream", _responses_events(items or [_MESSAGE]))
        self._send(404, "application/json", b"{}")

    def _send(self, status: int, kind: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    seen: list[tuple[str, dict[str, Any]]]
    lock: threading.Lock
    responder: Responder | None
    gemini: Caller | None

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up mid-answer: nothing to report


class CliStub:
    """The stub server on 127.0.0.1 (a free port), recording (path, body) per request."""

    def __init__(self, responder: Responder | None = None, gemini: Caller | None = None) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.seen, self._server.lock = [], threading.Lock()
        self._server.responder, self._server.gemini = responder, gemini
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        """The root URL (no path)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def bodies(self, path_part: str) -> list[dict[str, Any]]:
        """The bodies of the requests whose path holds `path_part`, oldest first."""
        with self._server.lock:
            return [body for path, body in self._server.seen if path_part in path]

    def __enter__(self) -> CliStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
