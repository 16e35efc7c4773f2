"""A lock held by one process for as long as it does something alone: an `flock`.

The lock file's text is the holder's pid. The kernel drops the lock when the process
ends, however it ends, so a lock that can be taken means nobody holds it: no pid file to
go stale. A workspace's watcher holds one while its hints can be trusted
(`tracker/hints.py`), the per-user service one for its whole life.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO

ATTEMPTS = 20  # tries, a millisecond apart, before the lock counts as held by another


class WatchLock:
    """An exclusive lock on the file at `path`, held from `acquire()` until `release()`
    or the process ends."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock and write our pid into it; False when another holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a workspace never used yet
        handle = self.path.open("a+", encoding="utf-8")
        if not _exclusive(handle):
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


def _exclusive(handle: IO[str]) -> bool:
    """Lock `handle` exclusively. `holder()` takes the lock shared for an instant to
    look: a few quick tries tell that apart from a process holding it."""
    for _ in range(ATTEMPTS):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            time.sleep(0.001)
    return False


def holder(path: Path) -> int | None:
    """The pid of the process holding the lock at `path` (0 when it has not written it
    yet), or None when nobody holds it."""
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - closed below, flock or not
    except (FileNotFoundError, NotADirectoryError):
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else 0
        return None
