"""The client half of the watcher's socket: ask a running `freshline watch` a question.

One JSON line each way over `.freshline/watch.sock` (the protocol: `watchsock.py`, the
server half, in the watcher's process). This module imports nothing beyond the standard
library's C halves (`_socket`, and `_json` through `wire.py`), so a hot command that the
watcher answers loads no more than this; any failure (no watcher, another version, an
error, no answer in time) is None, and the command does the work itself.
"""

from __future__ import annotations

import _socket  # socket.py's C half: socket.py costs its enums and selectors at start-up
import os

from freshline.interfaces import wire

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "watch.sock"
CONFIG_NAME = "freshline.toml"
DATA_DIR = ".freshline"
ANSWER_TIMEOUT_S = 10.0  # then the command does the work itself
MAX_PATH = 100  # AF_UNIX paths are limited (108 bytes on Linux): a longer one is not served


def socket_path(root: str) -> str:
    """Where a workspace's watcher listens: in its data folder, or, when that path is too
    long for a socket, in the user's runtime folder under a name made from the root."""
    path = os.path.join(root, DATA_DIR, SOCKET_NAME)
    if len(os.fsencode(path)) <= MAX_PATH:
        return path
    import hashlib

    name = hashlib.sha256(os.fsencode(root)).hexdigest()[:24] + ".sock"
    return os.path.join(runtime_dir(), name)


def runtime_dir() -> str:
    """The user's folder for sockets of workspaces whose own path is too long."""
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"freshline-{os.getuid()}")


def version() -> str:
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


def ask(root: str, request: dict[str, Any], timeout: float = ANSWER_TIMEOUT_S) -> Any:
    """The watcher's answer to `request`, or None when there is none to be had."""
    path = socket_path(root)
    if len(os.fsencode(path)) > MAX_PATH:
        return None
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            conn.settimeout(timeout)
            conn.connect(path)
            conn.sendall(wire.dumps(request | {"version": version()}).encode() + b"\n")
            answer = wire.loads(_line(conn) or b"null")
        finally:
            conn.close()
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) and answer.get("ok") else None


def _line(conn: _socket.socket) -> bytes:
    """One line from `conn` (the server sends one and closes)."""
    chunks = []
    while True:
        chunk = conn.recv(1 << 16)
        chunks.append(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return b"".join(chunks)
