"""Claude Code's `http` hooks, answered by the service on 127.0.0.1.

Claude Code posts the JSON it would write to a command hook's stdin to the hook's URL and
reads the same JSON answer from the response body, with no process started. The URL
(`secret.HookAddress.url`) carries this user's secret in its path and the workspace (and
project) in its query:

    POST /freshline/<secret>/hook/claude-code?workspace=/abs/root[&project=P] HTTP/1.1

Anything else gets `404` and nothing more, before its body is read: another user of the
machine can reach the port, but learns nothing and changes nothing. A head over
`MAX_HEAD` bytes, a body over `MAX_BODY`, no Content-Length, or a payload the adapter
cannot read gets a 4xx with a one-line reason, and nothing runs. Connections are kept
alive between requests (HTTP/1.1), each read and write within the acceptor's time limit.
`parse_head` and `route` are pure.
"""

from __future__ import annotations

import hmac
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from freshline.errors import FreshlineError
from freshline.interfaces.hook import AGENTS
from freshline.interfaces.service.hooks import HookService
from freshline.interfaces.service.secret import PREFIX, HookAddress

MAX_HEAD = 16 << 10  # bytes of the request line and headers
MAX_BODY = 8 << 20  # bytes of a payload: PostToolUse carries the tool's output
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 411: "Length Required",
           413: "Content Too Large", 431: "Request Header Fields Too Large"}


class BadHttp(ValueError):
    """A request the service refuses: its status and one-line reason."""

    def __init__(self, status: int, reason: str = "") -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class Head:
    """A request's line and headers (names lowered)."""

    method: str
    target: str
    headers: dict[str, str]

    @property
    def keep_alive(self) -> bool:
        """Whether the client keeps the connection for another request."""
        return self.headers.get("connection", "").lower() != "close"

    def length(self) -> int:
        """The body's length (BadHttp for none, a chunked body, or one too long)."""
        if "transfer-encoding" in self.headers:
            raise BadHttp(411, "send the body with a Content-Length")
        text = self.headers.get("content-length")
        if text is None or not text.isdigit():
            raise BadHttp(411, "send the body with a Content-Length")
        if int(text) > MAX_BODY:
            raise BadHttp(413, f"a hook payload is at most {MAX_BODY >> 20} MiB")
        return int(text)


@dataclass(frozen=True)
class Route:
    """A hook request's agent, workspace and project."""

    agent: str
    workspace: Path
    project: str | None


def parse_head(raw: bytes) -> Head:
    """The head of a request (without its final blank line); BadHttp 400 for one that is
    not HTTP/1.x."""
    try:
        text = raw.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise BadHttp(400, "not HTTP") from None
    line, *fields = text.split("\r\n")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise BadHttp(400, "not an HTTP/1.x request line")
    headers: dict[str, str] = {}
    for field in fields:
        name, colon, value = field.partition(":")
        if not colon or not name or name != name.strip():
            raise BadHttp(400, "a malformed header")
        key = name.lower()
        if key == "content-length" and key in headers:
            raise BadHttp(400, "two Content-Length headers")
        headers[key] = value.strip()
    return Head(parts[0], parts[1], headers)


def route(head: Head, address: HookAddress) -> Route | None:
    """The hook a request asks for, or None (404) unless it is a POST to this user's
    hook path with an absolute workspace."""
    parts = urlsplit(head.target)
    prefix = f"{PREFIX}{address.secret}/hook/".encode()
    path = parts.path.encode("latin-1", "replace")
    if not hmac.compare_digest(path[:len(prefix)], prefix) or head.method != "POST":
        return None
    agent = parts.path[len(prefix):]
    query = parse_qs(parts.query, max_num_fields=8)
    workspace = query.get("workspace", [""])[-1]
    project = query.get("project", [None])[-1]
    if agent not in AGENTS or not workspace.startswith("/") or "\0" in workspace:
        return None
    return Route(agent, Path(workspace), project or None)


class Hooked(Protocol):
    """What the http hooks need of the service."""

    hooks: HookService
    address: HookAddress | None


def serve(conn: socket.socket, service: Hooked) -> None:
    """Answer requests on `conn` until the client closes it (or one is refused)."""
    pending = b""
    while True:
        raw, pending = _read_head(conn, pending)
        if raw is None:
            return
        try:
            head = parse_head(raw)
            found = route(head, service.address) if service.address is not None else None
            if found is None:
                _send(conn, 404, b"")
                return
            length = head.length()
        except BadHttp as exc:
            _send(conn, exc.status, _error(str(exc)))
            return
        body, pending = _read(conn, pending, length)
        status, answer = _answer(service.hooks, found, body)
        _send(conn, status, answer, head.keep_alive)
        service.hooks.sent()
        if not head.keep_alive or status != 200:
            return


def _answer(hooks: HookService, found: Route, body: bytes) -> tuple[int, bytes]:
    """The status and body of a hook call's response."""
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.protocol import HookOptions

    chosen = adapter(found.agent)
    options = HookOptions(workspace=found.workspace, project=found.project)
    try:
        payload = body.decode("utf-8")
        return 200, hooks.handle(chosen, payload, options, {}).encode()
    except UnicodeDecodeError:
        return 400, _error("the payload is not UTF-8")
    except FreshlineError as exc:
        return 400, _error(str(exc))


def _error(reason: str) -> bytes:
    return json.dumps({"error": reason}).encode()


def _read_head(conn: socket.socket, pending: bytes) -> tuple[bytes | None, bytes]:
    """The next request's head and what came after it (None at a clean end)."""
    while b"\r\n\r\n" not in pending:
        if len(pending) > MAX_HEAD:
            _send(conn, 431, _error(f"headers over {MAX_HEAD >> 10} KiB"))
            return None, b""
        chunk = conn.recv(1 << 16)
        if not chunk:
            return None, b""
        pending += chunk
    head, _, rest = pending.partition(b"\r\n\r\n")
    if len(head) > MAX_HEAD:
        _send(conn, 431, _error(f"headers over {MAX_HEAD >> 10} KiB"))
        return None, b""
    return head, rest


def _read(conn: socket.socket, pending: bytes, length: int) -> tuple[bytes, bytes]:
    chunks, size = [pending], len(pending)
    while size < length:
        chunk = conn.recv(min(1 << 16, length - size))
        if not chunk:
            raise ConnectionResetError("the client left mid-body")
        chunks.append(chunk)
        size += len(chunk)
    data = b"".join(chunks)
    return data[:length], data[length:]


def _send(conn: socket.socket, status: int, body: bytes, keep_alive: bool = False) -> None:
    kind = "Content-Type: application/json\r\n" if body else ""
    head = (f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\n{kind}"
            f"Content-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    conn.sendall(head.encode("latin-1") + body)
