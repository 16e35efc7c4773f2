"""The contract between a running watcher and a flush: heartbeat and cookies.

Watchers are hints only. A flush trusts the hints alone while a watcher's heartbeat is
fresh; it first drops a cookie file into `.freshline/cookies/` and waits for the watcher
to remove it. File events arrive in order, so once the watcher has seen the cookie it
has already written hints for everything before it: the flush sees changes made a moment
ago without waiting for the debounce (Watchman's sync-cookie idea).

The heartbeat is the modification time of `.freshline/watcher.heartbeat`, touched by a
thread of its own: a watcher busy scanning or converting is still alive, and a beat never
waits for the store's write lock. A watcher writing to another store (the workspace's store
moved, `store migrate`) beats another file, `watcher.<digest of its store>.heartbeat`:
a flush trusts only hints written to its own store.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

from freshline.config import DATA_DIR
from freshline.store import Store
from freshline.store.sqlite import DB_NAME

HEARTBEAT = "watcher.heartbeat"
HEARTBEAT_EVERY_S = 1.0
HEARTBEAT_TTL_S = 5.0
COOKIE_DIR = "cookies"
COOKIE_WAIT_S = 2.0


def cookie_dir(root: Path) -> Path:
    """Where flushes drop cookies for the watcher."""
    return Path(root) / DATA_DIR / COOKIE_DIR


def _heartbeat(store: Store) -> Path:
    if store.location == str(store.data_dir / DB_NAME):
        return store.data_dir / HEARTBEAT
    digest = hashlib.sha1(store.location.encode()).hexdigest()[:12]
    return store.data_dir / HEARTBEAT.replace(".", f".{digest}.")


def beat(store: Store) -> None:
    """Record that a watcher is alive now."""
    path = _heartbeat(store)
    try:
        os.utime(path)
    except FileNotFoundError:
        path.write_bytes(b"%d\n" % os.getpid())


def stop_beating(store: Store) -> None:
    """Record that the watcher stopped (so flushes go back to full scans at once)."""
    _heartbeat(store).unlink(missing_ok=True)


def watcher_alive(store: Store) -> bool:
    """Whether a watcher's heartbeat is fresh."""
    try:
        beaten = _heartbeat(store).stat().st_mtime
    except OSError:
        return False
    return time.time() - beaten < HEARTBEAT_TTL_S


class Heartbeat:
    """Beats every `HEARTBEAT_EVERY_S` seconds from its own thread, from `start()` until
    `stop()`, so a watcher busy with a long scan or conversion is still alive to readers.
    `pause()` tells readers at once that the watcher's hints cannot be trusted for now;
    `resume()` that they can again."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._lock = threading.Lock()  # a beat in flight never outlives a pause
        self._started = False
        self._paused = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="freshline-heartbeat", daemon=True)

    def start(self) -> None:
        """Beat now (unless paused), then keep beating in the background."""
        with self._lock:
            self._started = True
            self._beat()
        self._thread.start()

    def pause(self) -> None:
        """Stop beating and say so, until `resume()`."""
        with self._lock:
            self._paused = True
            stop_beating(self.store)

    def resume(self) -> None:
        """Beat again (once started)."""
        with self._lock:
            self._paused = False
            self._beat()

    def _beat(self) -> None:
        if self._started and not self._paused:
            try:
                beat(self.store)
            except OSError:  # the data dir went away: readers see a stale beat, as they should
                pass

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_EVERY_S):
            with self._lock:
                self._beat()

    def stop(self) -> None:
        """Stop beating and record that the watcher is gone."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        stop_beating(self.store)


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
        time.sleep(0.001)  # a stat a millisecond, for the few the watcher takes
    return True


def is_cookie(root: Path, path: str) -> bool:
    """Whether an absolute event path is a flush cookie."""
    return os.path.dirname(path) == str(cookie_dir(root))
