"""The watcher starts itself, as Watchman's client starts its server, and is supervised by
the commands that use it.

Without a live watcher every flush walks the whole workspace. So the first command that
needs a flush in a workspace with no live watcher starts `freshline watch --idle-exit N`
in the background; from then on flushes pay for the changes, not the tree. The watcher
exits after `[workspace] autowatch_idle` seconds without a request (a flush's cookie, a
question on its socket).

One watcher per workspace (`tracker/watchlock.py`): a second `freshline watch` finds the
lock taken and exits 2; a starter that finds it taken (a watcher still doing its first
full scan, before its first heartbeat) starts nothing. Two starters racing both start
one, and the loser exits at once on the lock. A starter that finds the last watcher gone
without being asked to go (its record is still there, `tracker/registry.py`) says once,
on stderr, why it had stopped; one that finds the watcher writing to another store (the
store moved) replaces it.

It is on by default (`[workspace] autowatch = true`) and off in CI and under pytest, unless
`FRESHLINE_AUTOWATCH=1` asks for it (`FRESHLINE_AUTOWATCH=0` turns it off anywhere).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import DATA_DIR, Config
from freshline.store import Store
from freshline.tracker.hints import watcher_alive
from freshline.tracker.registry import obituary, read_record, starter, starting
from freshline.tracker.watchlock import holder

if TYPE_CHECKING:
    import subprocess

ENV = "FRESHLINE_AUTOWATCH"
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


def tell(message: str) -> None:
    """Say something about the watcher on stderr (stdout may be a protocol's)."""
    sys.stderr.write(f"warning: {message}\n")


def ensure(config: Config, store: Store, notice: Callable[[str], None] = tell) -> bool:
    """Start a background watcher if autowatch is on and nobody watches for `store`; True
    if started. `notice` hears why the last one had stopped, when it stopped unasked.

    Cheap when a watcher is alive (a look at its lock and its heartbeat; the lock, since a
    killed watcher's heartbeat looks fresh a few seconds more). Never raises for a watcher
    that cannot start: commands still work, with full scans.
    """
    if not enabled(config):
        return False
    root = Path(config.root)
    pid = holder(root)
    said = None
    if pid is not None:
        if watcher_alive(store):
            return False
        record = read_record(root)
        if record is None or record.pid != pid or record.store == store.location:
            return False  # starting (no heartbeat yet), and for this store
        if not stop(root):
            return False
        said = f"the watcher of {root} wrote to {record.store}; started one for {store.location}"
    elif starter(root) is not None:
        return False  # another command just started one
    else:
        why = obituary(root)
        said = f"the watcher of {root} had stopped: {why}; started a new one" if why else None
    try:
        start(config)
    except OSError:
        return False
    if said:
        notice(said)
    return True


def start(config: Config) -> subprocess.Popen[bytes]:
    """Start `freshline watch --quiet --idle-exit N` for the workspace, detached, logging
    to `.freshline/watch.log`, and note its pid as starting."""
    import subprocess  # only when starting one

    root = Path(config.root)
    (root / DATA_DIR).mkdir(exist_ok=True)  # a workspace's first command may come before its store
    log = (root / DATA_DIR / LOG_NAME).open("ab")
    with log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "freshline", "--workspace", str(root), "watch", "--quiet",
             "--idle-exit", str(config.workspace.autowatch_idle)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=root,
            start_new_session=True,  # not in the caller's process group: Ctrl-C there spares it
        )
    starting(root, proc.pid)  # `status` says "starting" while Python loads it
    return proc


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
