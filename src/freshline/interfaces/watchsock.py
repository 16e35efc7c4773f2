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
    {"version": V, "op": "due", "agent": A, "payload": "<hook JSON>"}
                                                    → {"ok": true, "due": false}

This is the server half, in the watcher's process; the client half (`ask`,
`workspace_root`) is `watchclient.py`, which imports nothing beyond the standard library.
"""

from __future__ import annotations

import json
import os

from freshline.interfaces.watchclient import MAX_PATH, socket_path, version

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable
    from socketserver import ThreadingUnixStreamServer
    from typing import Any

def _answer(root: str, request: Any) -> dict[str, Any]:
    """Answer one request (in its own thread)."""
    from freshline.interfaces.cli.answers import load, scan_data, status_data
    from freshline.tracker import Tracker

    if not isinstance(request, dict) or request.get("version") != version():
        return {"ok": False, "error": "another version of freshline: ask it yourself"}
    op = request.get("op")
    if op == "status":
        return {"ok": True, "data": status_data(Tracker(load(root)))}
    if op == "scan":
        return {"ok": True, "data": scan_data(Tracker(load(root)))}
    if op == "due":
        agent = str(request.get("agent", "claude-code"))
        return {"ok": True, "due": _due(root, agent, str(request.get("payload", "")))}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _due(root: str, agent: str, text: str) -> bool:
    """Whether a hook call of `agent` has anything to deliver (`hook.core.quiet`): the
    agent's session is looked up in this workspace's store, wherever its `cwd` is now."""
    from freshline.interfaces.cli.answers import load
    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.core import quiet
    from freshline.tracker import Tracker

    return not quiet(adapter(agent), text, Tracker(load(root)))


def serve(
    root: str, on_request: Callable[[], None] | None = None
) -> tuple[ThreadingUnixStreamServer, threading.Thread] | None:
    """Start answering on the workspace's socket in a thread (`on_request` hears each
    question: the watcher is not idle); None when the path is too long for a socket. Stop
    with `server.shutdown()` and `close(root, server)`."""
    import socketserver
    import threading

    path = socket_path(root)
    if len(os.fsencode(path)) > MAX_PATH:
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
