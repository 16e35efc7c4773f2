"""The contract between a running watcher and a flush: its lock and cookies.

Watchers are hints only. A flush trusts the hints alone while a watcher holds the
workspace's watch lock (`.freshline/watch.lock`, an `flock`): the watcher takes it once
its first full scan is done and lets it go while its hints cannot be trusted (the store
refused some), and the kernel lets it go when the watcher's process ends however it
ends, so nothing has to beat to look alive and a dead watcher is never trusted. A
watcher writing to another store than the default SQLite file (`store migrate`, a
PostgreSQL URL) holds `watch.<digest of its store>.lock`: a flush trusts only hints
written to its own store.

Before trusting the hints a flush drops a cookie file into `.freshline/cookies/` and
waits for the watcher to remove it. File events arrive in order, so once the watcher has
seen the cookie it has stored the hints of everything before it: the flush sees changes
made a moment ago (Watchman's sync-cookie idea). A flush in the watcher's own process (the
service answering a question) needs no file: the kernel queues an inotify event when the
call that caused it returns, so the watcher reading its queue dry and storing what it
read (`Watcher.sync`, registered here by the lock's path) covers every change made
before the flush asked; that costs no disk write, where a cookie costs two.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from freshline.config import DATA_DIR
from freshline.store import Store
from freshline.store.sqlite import DB_NAME
from freshline.tracker.watchlock import WatchLock, holder

LOCK = "watch.lock"
COOKIE_DIR = "cookies"
COOKIE_WAIT_S = 2.0


def cookie_dir(root: Path) -> Path:
    """Where flushes drop cookies for the watcher."""
    return Path(root) / DATA_DIR / COOKIE_DIR


def lock_path(store: Store) -> Path:
    """The lock a watcher writing hints into `store` holds while they can be trusted."""
    if store.location == str(store.data_dir / DB_NAME):
        return store.data_dir / LOCK
    digest = hashlib.sha1(store.location.encode()).hexdigest()[:12]
    return store.data_dir / LOCK.replace(".", f".{digest}.")


_LOCAL: dict[Path, Callable[[float], bool]] = {}  # watch lock → its watcher's own sync
_LOCAL_GUARD = threading.Lock()


def local_sync(store: Store, sync: Callable[[float], bool], on: bool = True) -> None:
    """Register the sync of a watcher in this process that writes its hints into `store`
    (with `on` False, forget it, if it is the one registered)."""
    with _LOCAL_GUARD:
        if on:
            _LOCAL[lock_path(store)] = sync
        elif _LOCAL.get(lock_path(store)) == sync:
            del _LOCAL[lock_path(store)]


def sync_with_watcher(root: Path, store: Store, timeout: float = COOKIE_WAIT_S) -> bool:
    """Wait until the watcher has stored the hints of every change made before now: in
    its own process without a file, else through a cookie; False when it did not answer
    in time."""
    with _LOCAL_GUARD:
        sync = _LOCAL.get(lock_path(store))
    return sync(timeout) if sync is not None else cookie_sync(root, timeout)


def watcher_alive(store: Store) -> bool:
    """Whether a watcher's hints in `store` can be trusted now."""
    return holder(lock_path(store)) is not None


class Liveness:
    """A watcher's hold on the watch lock: held while its hints can be trusted."""

    def __init__(self, store: Store) -> None:
        self._lock = WatchLock(lock_path(store))
        self.held = False

    def hold(self) -> bool:
        """Say that the hints can be trusted; False when another process watches."""
        if not self.held:
            self.held = self._lock.acquire()
        return self.held

    def release(self) -> None:
        """Say that they cannot (readers scan everything until `hold()` again)."""
        self._lock.release()
        self.held = False


def cookie_sync(root: Path, timeout: float = COOKIE_WAIT_S) -> bool:
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
        time.sleep(0.001)  # a stat a millisecond, for the few the watcher takes
    return True
