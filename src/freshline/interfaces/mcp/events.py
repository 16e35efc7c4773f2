"""Change notifications for MCP clients, from the service's watcher.

The server advertises resource subscriptions and list changes, so it must send them:
`Announcer` has the per-user service watch the workspace (autowatch: the service logs
changes as they happen, and its hints keep the tools' flushes cheap) and, on a steady
tick, compares the projects and their epochs with what it last announced:

    a project's epoch moved        -> resource updated: freshline://project/<name>/manifest
    a project added or removed     -> the resource list changed

Epochs are read from the store, so a change any process logged (the service, a hook, the
CLI) is announced. An edit of freshline.toml is flushed here at once, so its scope
changes are announced even with no service. `announce(events)` is called from the
announcer's thread; the server hands the events to its event loop (`surface.Notifier`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from freshline.config import Config, config_stamp
from freshline.errors import FreshlineError
from freshline.interfaces.autostart import ensure
from freshline.tracker import Tracker

TICK_S = 1.0  # how often the announcer looks at the projects' epochs


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
    """Reports what MCP clients must hear about one workspace, until `stop()`."""

    def __init__(self, config: Config, announce: Callable[[Changed], None]) -> None:
        self.tracker = Tracker(config)
        self.announce = announce
        self._stop = threading.Event()
        self._stamp = config_stamp(config.path)
        self._epochs = self._look()
        self._announcing = threading.Thread(target=self._run, name="freshline-mcp-announce",
                                            daemon=True)

    def start(self) -> None:
        """Have the service watch the workspace, and start announcing (a daemon thread)."""
        ensure(self.tracker.config)
        self._announcing.start()

    def stop(self) -> None:
        """Stop the thread and wait for it."""
        self._stop.set()
        if self._announcing.is_alive():
            self._announcing.join(timeout=10)
        self.tracker.store.close()

    def _run(self) -> None:
        while not self._stop.wait(TICK_S):
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
