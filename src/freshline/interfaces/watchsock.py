"""The watcher's socket: a running `freshline watch` answers the hot commands' questions.

A hot command (`status`, `scan`, a hook call with nothing to deliver) costs mostly the
start-up of a Python that imports the library. With a watcher running, the command asks it
over `.freshline/watch.sock` instead (one JSON line each way) and loads only the standard
library's socket and json: the watcher has the library loaded, the index warm and the
file events in hand (a question that needs the index current flushes through the
watcher's cookie, as any flush does). Anything unexpected (no watcher, another version,
an error, no answer in time) and the command does the work itself, as without a watcher.

    {"version": V, "op": "status"}                  → {"ok": true, "data": {...}}
    {"version": V, "op": "scan"}                    → {"ok": true, "data": {...}}
    {"version": V, "op": "due", "payload": "<hook JSON>"} → {"ok": true, "due": false}

The client half (`ask`, `workspace_root`) imports nothing beyond the standard library.
"""

from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from socketserver import ThreadingUnixStreamServer
    from typing import Any

SOCKET_NAME = "watch.sock"
CONFIG_NAME = "freshline.toml"
DATA_DIR = ".freshline"
ANSWER_TIMEOUT_S = 10.0  # then the command does the work itself
_MAX_PATH = 100  # AF_UNIX paths are limited (108 bytes on Linux): a longer one is not served


def socket_path(root: str) -> str:
    """Where a workspace's watcher listens."""
    return os.path.join(root, DATA_DIR, SOCKET_NAME)


def _version() -> str:
    from freshline import __version__

    return __version__


# --- the client (standard library only) -----------------------------------------------------


def workspace_root(explicit: str | None, start: str) -> str | None:
    """The workspace a command means (`explicit`, else the nearest folder up from `start`
    holding freshline.toml), or None; the library's own lookup reports what is wrong."""
    if explicit is not None:
        root = os.path.realpath(explicit)
        return root if os.path.isfile(os.path.join(root, CONFIG_NAME)) else None
    here = os.path.realpath(start)
    while True:
        if os.path.isfile(os.path.join(here, CONFIG_NAME)):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def ask(root: str, request: dict[str, Any], timeout: float = ANSWER_TIMEOUT_S) -> Any:
    """The watcher's answer to `request`, or None when there is none to be had."""
    path = socket_path(root)
    if len(os.fsencode(path)) > _MAX_PATH:
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(path)
            conn.sendall(json.dumps(request | {"version": _version()}).encode() + b"\n")
            with conn.makefile("rb") as reply:
                answer = json.loads(reply.readline() or b"null")
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) and answer.get("ok") else None


# --- the server (in the watcher's process) -----------------------------------------------------


def _answer(root: str, request: Any) -> dict[str, Any]:
    """Answer one request (in its own thread)."""
    from freshline.interfaces.cli.fast import load, scan_data, status_data
    from freshline.tracker import Tracker

    if not isinstance(request, dict) or request.get("version") != _version():
        return {"ok": False, "error": "another version of freshline: ask it yourself"}
    op = request.get("op")
    if op == "status":
        return {"ok": True, "data": status_data(Tracker(load(root)))}
    if op == "scan":
        return {"ok": True, "data": scan_data(Tracker(load(root)))}
    if op == "due":
        return {"ok": True, "due": _due(root, str(request.get("payload", "")))}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _due(root: str, text: str) -> bool:
    """Whether a hook call has anything to deliver (see `hooks.nothing_due_for`): Claude's
    session is looked up in this workspace's store, wherever its `cwd` is now."""
    from pathlib import Path

    from freshline.config import load_config
    from freshline.interfaces.hook_payload import parse_payload
    from freshline.interfaces.hooks import nothing_due_for

    return not nothing_due_for(load_config(Path(root)), parse_payload(text))


def serve(
    root: str, on_request: Callable[[], None] | None = None
) -> tuple[ThreadingUnixStreamServer, threading.Thread] | None:
    """Start answering on the workspace's socket in a thread (`on_request` hears each
    question: the watcher is not idle); None when the path is too long for a socket. Stop
    with `server.shutdown()` and `close(root, server)`."""
    import socketserver
    import threading

    path = socket_path(root)
    if len(os.fsencode(path)) > _MAX_PATH:
        return None

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            if on_request is not None:
                on_request()
            try:
                answer = _answer(root, json.loads(self.rfile.readline() or b"null"))
            except Exception as exc:  # a question the library refused: the asker falls back
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            self.wfile.write(json.dumps(answer, default=str).encode() + b"\n")

    class Server(socketserver.ThreadingUnixStreamServer):
        daemon_threads = True

    if os.path.lexists(path):
        os.unlink(path)  # left by a watcher that was killed; the watch lock says we are alone
    server = Server(path, Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              daemon=True)
    thread.start()
    return server, thread


def close(root: str, server: ThreadingUnixStreamServer) -> None:
    """Stop answering and remove the socket."""
    server.shutdown()
    server.server_close()
    try:
        os.unlink(socket_path(root))
    except FileNotFoundError:
        pass
