"""The client half of the watcher's socket: ask a running `freshline watch` a question.

One JSON line each way over `.freshline/watch.sock` (the protocol: `watchsock.py`, the
server half, in the watcher's process). This module imports nothing beyond the standard
library, so a hot command that the watcher answers loads no more than this; any failure
(no watcher, another version, an error, no answer in time) is None, and the command
does the work itself.
"""

from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "watch.sock"
CONFIG_NAME = "freshline.toml"
DATA_DIR = ".freshline"
ANSWER_TIMEOUT_S = 10.0  # then the command does the work itself
MAX_PATH = 100  # AF_UNIX paths are limited (108 bytes on Linux): a longer one is not served


def socket_path(root: str) -> str:
    """Where a workspace's watcher listens."""
    return os.path.join(root, DATA_DIR, SOCKET_NAME)


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
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(path)
            conn.sendall(json.dumps(request | {"version": version()}).encode() + b"\n")
            with conn.makefile("rb") as reply:
                answer = json.loads(reply.readline() or b"null")
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) and answer.get("ok") else None
