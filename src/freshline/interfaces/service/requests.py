"""The service's socket: the hot commands' questions, one JSON line each way.

A hot command (`status`, `scan`, `changes`, a hook call) costs mostly the start-up of a
Python that imports the library. With the service running, the command asks it over
`service.sock` instead and loads only the standard library's socket and json: the service
has the library loaded, the workspace's index warm and its file events in hand. Every
question about a workspace flushes first (through the watcher's cookie, as any flush
does), so the answer is what the command would print itself. Anything unexpected (no
service, another version, an error, no answer in time) and the command does the work
itself.

    {"version": V, "op": "ping"}                              → {"ok": true, "data": {...}}
    {"version": V, "op": "watch" | "unwatch", "root": R}      → {"ok": true, "data": {...}}
    {"version": V, "op": "list"}                              → {"ok": true, "data": [...]}
    {"version": V, "op": "status" | "scan" | "sessions", "root": R}
    {"version": V, "op": "changes", "root": R, "project": P, "since": N}
    {"version": V, "op": "updates", "root": R, "session": S}  → {"ok": true, "data": ...}
    {"version": V, "op": "hook", "agent": A, "payload": "<hook JSON>", "workspace": W,
     "project": P, "env": {...}, "fallback": false}           → {"ok": true, "text": "..."}
    {"version": V, "op": "stop"}                              → {"ok": true, "data": {...}}

A request is checked whole before anything runs (`parse`, pure): a line over
`MAX_REQUEST` bytes, anything but such an object, a field of the wrong type, a root that
is not absolute, another version, another store (`"store"`, the asker's
FRESHLINE_STORE_URL, against the service's): `{"ok": false, "error": "…"}`, and nothing
changed. A hook call with
`fallback` (the command hook that stands in when the http hooks cannot be answered)
prints nothing while the service answers them.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from freshline.errors import FreshlineError
from freshline.interfaces.hook import AGENTS
from freshline.interfaces.service.hooks import HookService
from freshline.interfaces.service.workspaces import Watched, Workspaces
from freshline.interfaces.serviceclient import STORE_ENV, version

MAX_REQUEST = 8 << 20  # bytes of one request line: a hook payload carries a tool's output
WORKSPACE_OPS = frozenset({"watch", "unwatch", "status", "scan", "changes", "updates",
                           "sessions"})
OPS = WORKSPACE_OPS | {"ping", "list", "hook", "stop"}


@dataclass(frozen=True)
class Request:
    """One request, checked."""

    op: str
    root: Path | None = None  # the workspace a workspace op is about
    project: str | None = None
    since: int = 0
    session: str | None = None
    agent: str | None = None
    payload: str = ""
    workspace: Path | None = None  # a hook's --workspace
    env: Mapping[str, str] = field(default_factory=dict)
    fallback: bool = False


class BadRequest(ValueError):
    """A request that is not one: its one-line reason."""


def parse(line: bytes, wanted_version: str, store_env: str | None = None) -> Request:
    """The request one line holds (BadRequest, in one line, when it holds none);
    `store_env` is the service's own FRESHLINE_STORE_URL, which a request about a
    workspace must name too."""
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("not a JSON line") from None
    if not isinstance(data, dict):
        raise BadRequest("not a JSON object")
    if data.get("version") != wanted_version:
        raise BadRequest("another version of freshline: ask it yourself")
    op = data.get("op")
    if op not in OPS:
        raise BadRequest(f"unknown op {op!r}" if isinstance(op, str) else "no op")
    if (op in WORKSPACE_OPS or op == "hook") and data.get("store") != store_env:
        raise BadRequest("the service uses another store (FRESHLINE_STORE_URL): ask it "
                         "yourself")
    if op == "hook":
        return _hook(data)
    root = _path(data, "root") if op in WORKSPACE_OPS else None
    if op in WORKSPACE_OPS and root is None:
        raise BadRequest(f"{op}: root must be an absolute path")
    project = _text(data, "project") if op == "changes" else None
    since = data.get("since", 0) if op == "changes" else 0
    if op == "changes" and (project is None or not isinstance(since, int)
                            or isinstance(since, bool) or since < 0):
        raise BadRequest("changes: project must be a string and since a whole number ≥ 0")
    session = _text(data, "session") if op == "updates" else None
    if op == "updates" and session is None:
        raise BadRequest("updates: session must be a string")
    return Request(op, root, project, since, session)


def _hook(data: dict[str, Any]) -> Request:
    agent, payload = data.get("agent"), data.get("payload")
    if agent not in AGENTS or not isinstance(payload, str):
        raise BadRequest("hook: agent must be one of freshline's and payload a string")
    env = data.get("env") or {}
    if not (isinstance(env, dict) and all(isinstance(k, str) and isinstance(v, str)
                                          for k, v in env.items())):
        raise BadRequest("hook: env must map strings to strings")
    workspace = _path(data, "workspace")
    if data.get("workspace") is not None and workspace is None:
        raise BadRequest("hook: workspace must be an absolute path")
    project = _text(data, "project")
    if data.get("project") is not None and project is None:
        raise BadRequest("hook: project must be a string")
    return Request("hook", None, project, agent=agent, payload=payload, workspace=workspace,
                   env=env, fallback=data.get("fallback") is True)


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value and "\0" not in value else None


def _path(data: dict[str, Any], key: str) -> Path | None:
    value = _text(data, key)
    return Path(value) if value is not None and value.startswith("/") else None


class Serving(Protocol):
    """What the socket's answers need of the service (`daemon.Service`)."""

    workspaces: Workspaces
    hooks: HookService
    http_serving: bool

    def facts(self) -> dict[str, Any]:
        """The service's own state (pid, version, uptime, port…)."""

    def stop(self) -> None:
        """Stop the service (after this answer)."""


def serve(conn: socket.socket, service: Serving) -> None:
    """Answer the one request on `conn`."""
    try:
        request = parse(_read_line(conn), version(), os.environ.get(STORE_ENV))
        answer = _answer(service, request)
    except BadRequest as exc:
        answer = {"ok": False, "error": str(exc)}
    except FreshlineError as exc:  # the asker does the work itself, and says so its way
        answer = {"ok": False, "error": str(exc)}
    except Exception as exc:  # a question the library refused: the asker falls back
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    conn.sendall(json.dumps(answer, default=str).encode() + b"\n")
    service.hooks.sent()


def _read_line(conn: socket.socket) -> bytes:
    """One line of at most `MAX_REQUEST` bytes (BadRequest past it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            break
        if size > MAX_REQUEST:
            raise BadRequest(f"request over {MAX_REQUEST >> 20} MiB")
    line = b"".join(chunks)
    if len(line) > MAX_REQUEST:
        raise BadRequest(f"request over {MAX_REQUEST >> 20} MiB")
    return line


def _answer(service: Serving, request: Request) -> dict[str, Any]:
    if request.op == "ping":
        return {"ok": True, "data": service.facts()}
    if request.op == "list":
        return {"ok": True, "data": service.workspaces.listing()}
    if request.op == "stop":
        service.stop()
        return {"ok": True, "data": service.facts()}
    if request.op == "hook":
        return {"ok": True, "text": _hook_text(service, request)}
    root = request.root
    assert root is not None  # parse checked it
    if request.op == "watch":
        return {"ok": True, "data": service.workspaces.watch(root).view()}
    if request.op == "unwatch":
        return {"ok": True, "data": {"workspace": str(root),
                                      "stopped": service.workspaces.unwatch(root)}}
    held = service.workspaces.ready(root)
    work = _workspace_work(request, held)
    return {"ok": True, "data": service.hooks.call(root, work)}


def _workspace_work(request: Request, held: Watched) -> Callable[[Any], Any]:
    """`status`, `scan`, `changes`, `updates` and `session list` with the service's warm
    tracker and session manager."""
    from freshline.interfaces.cli import answers

    root = held.root
    if request.op == "status":
        return lambda warm: answers.status_data(warm.tracker(root), held.counts, held.view())
    if request.op == "scan":
        return lambda warm: answers.scan_data(warm.tracker(root))
    if request.op == "changes":
        project, since = str(request.project), request.since
        return lambda warm: answers.changes_data(warm.tracker(root), project, since)
    if request.op == "sessions":
        return lambda warm: answers.sessions_data(warm.manager(root))
    session = str(request.session)
    return lambda warm: answers.updates_data(warm.manager(root), session)


def _hook_text(service: Serving, request: Request) -> str:
    """A hook call answered whole (nothing for a fallback while the http hooks are
    answered: they carry the call)."""
    from freshline.errors import UsageError
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.process import log
    from freshline.interfaces.hook.protocol import HookOptions

    if request.fallback and service.http_serving:
        return ""
    chosen = adapter(str(request.agent))
    options = HookOptions.from_env(chosen, request.workspace, request.project, request.env)
    try:
        return service.hooks.handle(chosen, request.payload, options, request.env)
    except (UsageError, FreshlineError) as exc:  # as the hook process: logged, not printed
        log(chosen.name, f"{type(exc).__name__}: {exc}", request.env)
        return ""
