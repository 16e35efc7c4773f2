"""The client half of the per-user service: where it lives, and asking it a question.

One JSON line each way over `service.sock` in the user's private runtime folder
(`$XDG_RUNTIME_DIR/freshline/`, else `/run/user/<uid>/freshline/`, else
`/tmp/freshline-<uid>/`: made 0700, and refused when another user owns it or others may
enter it; a service is started with the folder its starter found, `FRESHLINE_RUNTIME_DIR`,
so the two never disagree). A client that clears the environment (an MCP client starts
its server with HOME and PATH alone) finds the same folder as the user's shell wherever
`$XDG_RUNTIME_DIR` is systemd's `/run/user/<uid>`: one service per user. Each
request says which version asks and which store `FRESHLINE_STORE_URL` names here: a
service of another version, or started with another store, does not answer about
workspaces. The protocol is `interfaces/service/requests.py`, in the service's process.
This module imports nothing beyond the standard library's C halves (`_socket`, and `_json`
through `wire.py`), so a hot command that the service answers loads no more than this; any
failure (no service, another version, an error, no answer in time) is None, and the
command does the work itself.
"""

from __future__ import annotations

import _socket  # socket.py's C half: socket.py costs its enums and selectors at start-up
import os

from freshline.interfaces import wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "service.sock"
LOCK_NAME = "service.lock"  # held by the service for its whole life (an flock)
RECORD_NAME = "service.json"  # its pid, start, version, port
HOOKS_PID_NAME = "hooks.pid"  # its pid, while it answers Claude Code's http hooks
STORE_ENV = "FRESHLINE_STORE_URL"  # `store.location.ENV_VAR` (not imported: start-up)
CONFIG_NAME = "freshline.toml"
DATA_DIR = ".freshline"
RUNTIME_ENV = "FRESHLINE_RUNTIME_DIR"  # set by `autostart.spawn` for the service it starts
ANSWER_TIMEOUT_S = 60.0  # then the command does the work itself
MAX_PATH = 100  # AF_UNIX paths are limited (108 bytes on Linux)


def runtime_dir() -> str:
    """The user's folder for the service's socket, lock and record (not made here)."""
    chosen = os.environ.get(RUNTIME_ENV)
    if chosen:
        return chosen
    for base in (os.environ.get("XDG_RUNTIME_DIR"), f"/run/user/{os.getuid()}"):
        if base and os.path.isdir(base):
            return os.path.join(base, "freshline")
    return f"/tmp/freshline-{os.getuid()}"  # not $TMPDIR: a cleared environment has none


def private(folder: str) -> bool:
    """Whether `folder` (made 0700 if missing, but never the folders above it: a runtime
    folder removed meanwhile is not made again) is this user's alone: nobody else may put
    a socket there for us to talk to, or reach ours."""
    try:
        if not os.path.isdir(folder):
            os.mkdir(folder, 0o700)
        st = os.stat(folder)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o077


def socket_path() -> str:
    """Where the service listens."""
    return os.path.join(runtime_dir(), SOCKET_NAME)


def version() -> str:
    """This freshline's version: a service of another one is not asked."""
    from freshline import __version__

    return __version__


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


def ask(request: dict[str, Any], timeout: float = ANSWER_TIMEOUT_S) -> Any:
    """The service's answer to `request` (an `{"ok": true, …}` object), or None when
    there is none to be had."""
    answer = exchange(request, timeout)
    return answer if isinstance(answer, dict) and answer.get("ok") else None


def exchange(request: dict[str, Any], timeout: float = ANSWER_TIMEOUT_S) -> Any:
    """Whatever the service answers to `request` (errors too), or None when no service
    answers at all."""
    folder = runtime_dir()
    path = os.path.join(folder, SOCKET_NAME)
    if len(os.fsencode(path)) > MAX_PATH or not private(folder):
        return None
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.settimeout(timeout)
            conn.connect(path)
            mine = {"version": version(), "store": os.environ.get(STORE_ENV)}
            conn.sendall(wire.dumps(request | mine).encode() + b"\n")
            return wire.loads(_line(conn) or b"null")
        finally:
            conn.close()
    except (OSError, ValueError):
        return None


def _line(conn: _socket.socket) -> bytes:
    """One line from `conn` (the service sends one and closes)."""
    chunks = []
    while True:
        chunk = conn.recv(1 << 16)
        chunks.append(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return b"".join(chunks)
