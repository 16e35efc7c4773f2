"""The contract between a running watcher and a flush: heartbeat and cookies.

Watchers are hints only. A flush trusts the hints alone while a watcher's heartbeat is
fresh; it first drops a cookie file into `.freshline/cookies/` and waits for the watcher
to remove it. File events arrive in order, so once the watcher has seen the cookie it
has already written hints for everything before it: the flush sees changes made a moment
ago without waiting for the debounce (Watchman's sync-cookie idea).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from freshline.config import DATA_DIR
from freshline.store import Store

HEARTBEAT = "watcher.heartbeat"
HEARTBEAT_EVERY_S = 1.0
HEARTBEAT_TTL_S = 5.0
COOKIE_DIR = "cookies"
COOKIE_WAIT_S = 2.0


def cookie_dir(root: Path) -> Path:
    """Where flushes drop cookies for the watcher."""
    return Path(root) / DATA_DIR / COOKIE_DIR


def beat(store: Store) -> None:
    """Record that a watcher is alive now."""
    store.meta_set(HEARTBEAT, repr(time.time()))


def stop_beating(store: Store) -> None:
    """Record that the watcher stopped (so flushes go back to full scans at once)."""
    store.meta_set(HEARTBEAT, "0")


def watcher_alive(store: Store) -> bool:
    """Whether a watcher's heartbeat is fresh."""
    value = store.meta_get(HEARTBEAT)
    return value is not None and time.time() - float(value) < HEARTBEAT_TTL_S


def cookie_sync(root: Path, store: Store, timeout: float = COOKIE_WAIT_S) -> bool:
    """Drop a cookie and wait until the watcher has consumed it; False on timeout."""
    folder = cookie_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    cookie = folder / os.urandom(16).hex()  # a unique name (uuid4's, without loading uuid)
    cookie.write_bytes(b"")
    deadline = time.monotonic() + timeout
    while cookie.exists():
        if time.monotonic() > deadline:
            cookie.unlink(missing_ok=True)
            return False
        time.sleep(0.005)
    return True


def is_cookie(root: Path, path: str) -> bool:
    """Whether an absolute event path is a flush cookie."""
    return os.path.dirname(path) == str(cookie_dir(root))
