"""One watcher per workspace: the lock a watching process holds for its whole life.

The lock is an exclusive `flock` on `.freshline/watch.lock`, whose text is the holder's
pid. The kernel drops it when the process ends, however it ends, so a lock that can be
taken means nobody watches: no pid file to go stale. The MCP servers of a workspace
share another such lock, `.freshline/serve-watch.lock`: only its holder runs a watcher
in-process, and `freshline watch --stop` never stops a server.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from freshline.paths import DATA_DIR

LOCK_NAME = "watch.lock"
SERVER_LOCK_NAME = "serve-watch.lock"  # the servers' own: one of them watches in-process


def lock_path(root: Path, name: str = LOCK_NAME) -> Path:
    """The lock a watching process holds (`name`: which one)."""
    return Path(root) / DATA_DIR / name


class WatchLock:
    """The one-watcher-per-workspace lock, held from `acquire()` until the process ends
    (or `release()`); `name` another lock of that kind (`SERVER_LOCK_NAME`)."""

    def __init__(self, root: Path, name: str = LOCK_NAME) -> None:
        self.path = lock_path(root, name)
        self._file: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock and write our pid into it; False when another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a workspace never used yet
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._file = handle
        return True

    def release(self) -> None:
        """Let the lock go (closing the file drops it)."""
        if self._file is not None:
            self._file.close()
            self._file = None


def holder(root: Path) -> int | None:
    """The pid of the process watching `root` (0 when it has not written it yet), or None
    when nobody holds the lock."""
    path = lock_path(root)
    try:
        handle = path.open("r", encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else 0
        return None
