"""The watcher's socket: a running `freshline watch` answers the hot commands' questions.

A hot command (`status`, `scan`, a hook call with nothing to deliver) costs mostly the
start-up of a Python that imports the library. With a watcher running, the command asks it
over `.freshline/watch.sock` instead (one JSON line each way) and loads only the standard
library's socket and json: the watcher has the library loaded, the index warm and the
file events in hand (a question that needs the index current flushes through the
watcher's cookie, as any flush does). Anything unexpected (no watcher, another version,
an error, no answer in time) and the command does the work itself, as without a watcher.
A watcher still on its first full scan sends every question back unanswered at once
(`serve(..., ready=...)`): answered in its process, questions would run beside that scan
and keep it from coming up, while each client has a process of its own to do the work in.

    {"version": V, "op": "status"}                  → {"ok": true, "data": {...}}
    {"version": V, "op": "scan"}                    → {"ok": true, "data": {...}}
    {"version": V, "op": "changes", "project": P, "since": N} → {"ok": true, "data": {...}}
    {"version": V, "op": "updates", "session": S}   → {"ok": true, "data": {...}}
    {"version": V, "op": "sessions"}                → {"ok": true, "data": [...]}
    {"version": V, "op": "hook", "agent": A, "payload": "<hook JSON>",
     "workspace": W, "project": P, "env": {...}}    → {"ok": true, "text": "<hook output>"}

A hook call is answered whole in the watcher (`hook/served.py`: delivering with its warm
store and config; a tool's end, a STOP, a COMPACT or an END call is acknowledged once the
watcher holds it).

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
    from typing import Any

    from freshline.interfaces.hook.core import Warm
    from freshline.interfaces.hook.served import HookService


STARTING = {"ok": False, "error": "the watcher is starting: ask it yourself"}


class Hooks:
    """The watcher's hook service, made at the first hook call (the watcher is up first)."""

    def __init__(self, root: str) -> None:
        import threading

        self._root = root
        self._made: HookService | None = None
        self._guard = threading.Lock()

    def service(self) -> HookService:
        """The service, made on first use."""
        with self._guard:
            if self._made is None:
                from pathlib import Path

                from freshline.interfaces.hook.served import HookService

                self._made = HookService(Path(self._root))
            return self._made

    def drain(self) -> None:
        """Wait until every hook call handed over so far is done."""
        if self._made is not None:
            self._made.drain()

    def close(self) -> None:
        """Finish the hook calls handed over, close the warm stores."""
        if self._made is not None:
            self._made.close()


def _answer(root: str, hooks: Hooks, request: Any) -> dict[str, Any]:
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
    if op == "hook":
        return hooks.service().handle(request)
    if op in ("changes", "updates", "sessions"):
        return {"ok": True, "data": hooks.service().call(lambda warm: _asked(warm, root, request))}
    return {"ok": False, "error": f"unknown op {op!r}"}


def _private(folder: str) -> bool:
    """Whether `folder` (made if missing) is this user's own: a socket outside the
    workspace lives in the user's runtime folder, which nobody else may own."""
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.stat(folder).st_uid == os.getuid()
    except OSError:
        return False


def _asked(warm: Warm, root: str, request: dict[str, Any]) -> Any:
    """`changes`, `updates` and `session list` with the watcher's warm tracker and session
    manager (an error, a stop on a conflict: the asker does it itself, and says so its own
    way)."""
    from pathlib import Path

    from freshline.interfaces.cli.answers import changes_data, sessions_data

    if request["op"] == "changes":
        return changes_data(warm.tracker(Path(root)), str(request["project"]),
                            int(request["since"]))
    if request["op"] == "sessions":
        return sessions_data(warm.manager(Path(root)))
    from freshline.context import Channel

    session = str(request["session"])
    return {"session": session, "blocks": warm.manager(Path(root)).preview(session, Channel.SEND)}


class Serving:
    """A socket being answered: its server, its thread, its hook service."""

    def __init__(self, server: Any, thread: threading.Thread, hooks: Hooks) -> None:
        self.server = server
        self.thread = thread
        self.hooks = hooks


def serve(
    root: str, on_request: Callable[[], None] | None = None,
    ready: Callable[[], bool] | None = None,
) -> Serving | None:
    """Start answering on the workspace's socket in a thread (`on_request` hears each
    question: the watcher is not idle); None when the path is too long for a socket. While
    `ready()` is False (a watcher still on its first full scan) every question is sent
    back at once, unanswered: its client does the work itself, in its own process. Stop
    with `close(root, serving)`."""
    import socketserver
    import threading

    path = socket_path(root)
    if len(os.fsencode(path)) > MAX_PATH or not _private(os.path.dirname(path)):
        return None
    hooks = Hooks(root)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            if on_request is not None:
                on_request()
            try:
                question = json.loads(self.rfile.readline() or b"null")
                answer = _answer(root, hooks, question) if ready is None or ready() else STARTING
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
    return Serving(server, thread, hooks)


def close(root: str, serving: Serving) -> None:
    """Stop answering, finish the hook calls handed over, and remove the socket."""
    serving.server.shutdown()
    serving.server.server_close()
    serving.hooks.close()
    try:
        os.unlink(socket_path(root))
    except FileNotFoundError:
        pass
