"""Change notifications for MCP clients, from a watcher running in the server.

The server advertises resource subscriptions and list changes, so it must send them:
`Announcer` runs the workspace watcher (`tracker.Watcher`, which also keeps the tools'
flushes cheap with its hints) and, after each batch it flushes and on a steady tick,
compares the projects and their epochs with what it last announced:

    a project's epoch moved        -> resource updated: freshline://project/<name>/manifest
    a project added or removed     -> the resource list changed

Epochs are read from the store, so a change another process logged first (a hook, the
CLI, another server's watcher) is announced too. One watcher serves all the servers of a
workspace: only the announcer holding the servers' watch lock (`tracker/watchlock.py`)
runs one; the others try for the lock on each tick and take over when its holder stops.
Two watchers would both store every hint and flush every batch, under one write lock.
`announce(events)` is called from the announcer's thread; the server hands the events to
its event loop (`surface.Notifier`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from freshline.config import Config, config_stamp
from freshline.errors import FreshlineError
from freshline.tracker import Tracker
from freshline.tracker.watcher import Watcher
from freshline.tracker.watchlock import SERVER_LOCK_NAME, WatchLock

TICK_S = 1.0  # how often the announcer looks even when the watcher saw nothing


@dataclass(frozen=True)
class Changed:
    """What moved since the last look."""

    projects_listed: bool  # a project was added or removed
    updated: tuple[str, ...]  # projects whose epoch moved (or that are new)


def compare(
    before: dict[str, int], after: dict[str, int]
) -> Changed:
    """What changed between two looks at the projects' epochs (pure)."""
    listed = list(before) != list(after)
    updated = tuple(name for name, epoch in after.items() if before.get(name) != epoch)
    return Changed(listed, updated)


class Announcer:
    """Watches one workspace and reports what MCP clients must hear, until `stop()`."""

    def __init__(self, config: Config, announce: Callable[[Changed], None]) -> None:
        self.tracker = Tracker(config)
        self.announce = announce
        self.watcher = Watcher(config, on_flush=lambda _result: self._wake.set(),
                               on_error=lambda _exc: None)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._stamp = config_stamp(config.path)
        self._epochs = self._look()
        self._lock = WatchLock(config.root, SERVER_LOCK_NAME)
        self._announcing = threading.Thread(target=self._run, name="freshline-mcp-announce",
                                            daemon=True)
        self._watching: threading.Thread | None = None

    @property
    def watching(self) -> bool:
        """Whether this announcer runs the servers' watcher (else another server does)."""
        return self._watching is not None

    def start(self) -> None:
        """Start announcing, and watching unless another server watches (daemon threads)."""
        self._watch_if_free()
        self._announcing.start()

    def _watch_if_free(self) -> None:
        """Start the watcher if no other server of the workspace runs one."""
        if self.watching or self._stop.is_set() or not self._lock.acquire():
            return
        self._watching = threading.Thread(target=self.watcher.run, name="freshline-mcp-watch",
                                          daemon=True)
        self._watching.start()

    def stop(self) -> None:
        """Stop the threads, wait for them, and let another server watch."""
        self._stop.set()
        self._wake.set()
        self.watcher.stop()
        if self._announcing.is_alive():
            self._announcing.join(timeout=10)
        if self._watching is not None:  # started by now, if ever (the announcer is done)
            self._watching.join(timeout=10)
        self._lock.release()
        self.tracker.store.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK_S)
            if not self.watching:
                self._watch_if_free()  # the server that watched stopped
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.check()
            except FreshlineError:
                continue  # a broken config mid-edit: look again on the next tick

    def check(self) -> Changed:
        """Look now; announce and return what changed since the last look."""
        stamp = config_stamp(self.tracker.config.path)
        if stamp != self._stamp:
            # The config was edited: a flush logs what the new scopes changed.
            self._stamp = stamp
            self.tracker.flush()
        epochs = self._look()
        changed = compare(self._epochs, epochs)
        self._epochs = epochs
        if changed.projects_listed or changed.updated:
            self.announce(changed)
        return changed

    def _look(self) -> dict[str, int]:
        config = self.tracker.reload_config()
        return {name: self.tracker.epoch(name) for name in config.projects}
