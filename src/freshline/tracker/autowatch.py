"""The watcher starts itself, as Watchman's client starts its server.

Without a live watcher every flush walks the whole workspace. So the first command that
needs a flush in a workspace with no live watcher starts `freshline watch --idle-exit N`
in the background; from then on flushes pay for the changes, not the tree. The watcher
exits after `[workspace] autowatch_idle` seconds without a request (a flush's cookie).

One watcher per workspace: the watching process holds an exclusive lock on
`.freshline/watch.lock` for its whole life (the lock file says its pid). A second
`freshline watch` finds the lock taken and exits 2; a starter that finds it taken (a
watcher still doing its first full scan, before its first heartbeat) starts nothing. Two
starters racing both start one, and the loser exits at once on the lock.

It is on by default (`[workspace] autowatch = true`) and off in CI and under pytest, unless
`FRESHLINE_AUTOWATCH=1` asks for it (`FRESHLINE_AUTOWATCH=0` turns it off anywhere).
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

from freshline.config import DATA_DIR, Config
from freshline.store import Store
from freshline.tracker.hints import watcher_alive

if TYPE_CHECKING:
    import subprocess

ENV = "FRESHLINE_AUTOWATCH"
LOCK_NAME = "watch.lock"
LOG_NAME = "watch.log"
_FALSE = {"", "0", "false", "no", "off"}


def enabled(config: Config) -> bool:
    """Whether commands in this workspace start a watcher: `$FRESHLINE_AUTOWATCH` if set,
    else off in CI (`$CI`) and under pytest, else `[workspace] autowatch`."""
    forced = os.environ.get(ENV)
    if forced is not None:
        return forced.strip().lower() not in _FALSE
    if os.environ.get("CI") or "PYTEST_CURRENT_TEST" in os.environ:
        return False
    return config.workspace.autowatch


def lock_path(root: Path) -> Path:
    """The lock a watching process holds."""
    return Path(root) / DATA_DIR / LOCK_NAME


class WatchLock:
    """The one-watcher-per-workspace lock, held from `acquire()` until the process ends
    (or `release()`)."""

    def __init__(self, root: Path) -> None:
        self.path = lock_path(root)
        self._file: IO[str] | None = None

    def acquire(self) -> bool:
        """Take the lock and write our pid into it; False when another process holds it."""
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
    """The pid of the process watching `root`, or None when nobody holds the lock."""
    path = lock_path(root)
    try:
        handle = path.open("r", encoding="utf-8")
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else 0
        return None


def ensure(config: Config, store: Store) -> bool:
    """Start a background watcher if autowatch is on and nobody watches; True if started.

    Cheap when a watcher is alive (one read of its heartbeat). Never raises for a watcher
    that cannot start: commands still work, with full scans.
    """
    if not enabled(config) or watcher_alive(store) or holder(config.root) is not None:
        return False
    try:
        start(config)
    except OSError:
        return False
    return True


def start(config: Config) -> subprocess.Popen[bytes]:
    """Start `freshline watch --quiet --idle-exit N` for the workspace, detached, logging
    to `.freshline/watch.log`."""
    import subprocess  # only when starting one

    root = Path(config.root)
    log = (root / DATA_DIR / LOG_NAME).open("ab")
    with log:
        return subprocess.Popen(
            [sys.executable, "-m", "freshline", "--workspace", str(root), "watch", "--quiet",
             "--idle-exit", str(config.workspace.autowatch_idle)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=root,
            start_new_session=True,  # not in the caller's process group: Ctrl-C there spares it
        )


def stop(root: Path, timeout: float = 20.0) -> bool:
    """Ask the workspace's watcher to stop (SIGTERM) and wait until it let the lock go;
    False when it is still there after `timeout` seconds."""
    import signal
    import time

    pid = holder(root)
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while holder(root) is not None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
