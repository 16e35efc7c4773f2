"""The workspaces the service watches, each on its own: one failing never stops another.

Each workspace has its watcher (`tracker.Watcher`) on the service's one notifier, and
whatever it needs in the service: its conversions, run on its own hook queue after each
flush and when its config changed; the counts `status` shows, kept until its epoch or
scope moves. A workspace whose freshline.toml cannot be read is not watched (the reason
is kept, and the next request for it tries again); one whose folder is deleted, or whose
watcher stopped on an error, is let go with its reason; one whose config turns autowatch
off is let go too. None of it touches another workspace. The registry
(`registry.py`) keeps the list the service watches again when it starts.
"""

from __future__ import annotations

import enum
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshline.config import Config, load_config
from freshline.errors import FreshlineError, WorkspaceError
from freshline.interfaces.service.hooks import HookService
from freshline.interfaces.service.registry import Registry
from freshline.materialize import is_document
from freshline.store.records import ChangeKind
from freshline.tracker.notifier import Notifier
from freshline.tracker.tracker import FlushResult
from freshline.tracker.watcher import Watcher

UP_WAIT_S = 30.0  # a request waits this long for a workspace's first full scan


class State(enum.Enum):
    """How the service holds a workspace."""

    STARTING = "starting"  # watched; its first full scan is not done
    WATCHING = "watching"  # watched and up: flushes trust its hints
    FAILED = "not watched"  # its config cannot be read, or its tree cannot be watched
    STOPPED = "stopped"  # its watcher stopped (the folder is gone, an error)


@dataclass
class Watched:
    """One workspace in the service."""

    root: Path
    watcher: Watcher | None = None
    error: str | None = None  # why it is not watched, or the last error it survived
    started: float = field(default_factory=time.time)
    counts: dict[str, Any] = field(default_factory=dict)  # `status` counts, per project
    monitor: threading.Thread | None = None  # lets it go once its watcher stopped

    @property
    def state(self) -> State:
        """How it is held now."""
        if self.watcher is None:
            return State.FAILED
        if self.watcher.stopping():
            return State.STOPPED
        return State.WATCHING if self.watcher.up.is_set() else State.STARTING

    def view(self) -> dict[str, Any]:
        """As `watch --list` and `service status` show it."""
        store = self.watcher.tracker.store.location if self.watcher is not None else None
        return {"workspace": str(self.root), "state": self.state.value, "pid": os.getpid(),
                "started": self.started, "store": store, "error": self.error}


class Workspaces:
    """Every workspace the service watches, on one notifier."""

    def __init__(self, notifier: Notifier, hooks: HookService, registry: Registry,
                 log: Callable[[str], None]) -> None:
        self.notifier = notifier
        self.hooks = hooks
        self.registry = registry
        self.log = log
        self._held: dict[Path, Watched] = {}
        self._lock = threading.Lock()

    def watch(self, root: Path) -> Watched:
        """Watch the workspace at `root` (resolved) unless it is watched already; a
        workspace that failed is tried again."""
        with self._lock:
            held = self._held.get(root)
            if held is not None and held.state in (State.STARTING, State.WATCHING):
                return held
            held = self._held[root] = Watched(root)
            try:
                config = load_config(root)
            except WorkspaceError as exc:  # no workspace there: nothing to hold
                del self._held[root]
                held.error = str(exc)
                return held
            except FreshlineError as exc:
                held.error = str(exc)
                self.log(f"{root}: not watched: {exc}")
                return held
            if not config.workspace.autowatch:
                held.error = "[workspace] autowatch = false"
                self._held.pop(root)
                self.registry.drop(str(root))
                return held
            self._start(held, config)
            return held

    def _start(self, held: Watched, config: Config) -> None:
        root = held.root
        watcher = Watcher(
            config, self.notifier,
            on_flush=lambda result: self._converted(root, result),
            on_error=lambda exc: self._survived(held, exc),
            on_config=lambda cfg: self._configured(root, cfg),
        )
        try:
            watcher.start()
        except FreshlineError as exc:
            held.error = str(exc)
            self.log(str(exc))
            watcher.close()
            return
        held.watcher = watcher
        self.registry.add(str(root))
        self.log(f"{root}: watching")
        held.monitor = threading.Thread(target=self._until_stopped, args=(held,), daemon=True,
                                        name="freshline-watched")
        held.monitor.start()

    def _until_stopped(self, held: Watched) -> None:
        """Let a workspace go once its watcher stopped (the service's own `unwatch` and
        `close` stop them too)."""
        assert held.watcher is not None
        held.watcher.wait()
        try:
            held.watcher.close()
        except Exception as exc:  # the error that stopped it
            held.error = f"{type(exc).__name__}: {exc}"
        if held.watcher.vanished():
            held.error = "its folder is gone"
            self.registry.drop(str(held.root))
        self._forget(held.root)
        with self._lock:
            if self._held.get(held.root) is held:
                self._held.pop(held.root)
        self.log(f"{held.root}: stopped watching" + (f": {held.error}" if held.error else ""))

    def _forget(self, root: Path) -> None:
        """Close and drop the warm tracker and manager of a workspace let go (on its
        queue, after the calls before it), so one made again at that path is opened anew
        and nothing of the service writes into it once it is out of the list."""
        try:
            self.hooks.call(root, lambda warm: warm.forget(root))
        except Exception as exc:  # a store that fails to close is closed all the same
            self.log(f"{root}: {type(exc).__name__}: {exc}")

    def _survived(self, held: Watched, exc: Exception) -> None:
        held.error = f"{type(exc).__name__}: {exc}"
        self.log(f"{held.root}: {held.error} (still watching)")

    def _converted(self, root: Path, result: FlushResult) -> None:
        """Convert the documents a flush made or changed (on the workspace's queue). A
        flush of anything else asks for nothing: opening the workspace's session manager
        for it would make its data folder again while the workspace is being deleted."""
        if any(is_document(c.path) and c.kind is not ChangeKind.DELETED
               for delta in result.projects.values() for c in delta.changes):
            self.hooks.submit(root, lambda warm: warm.manager(root).convert_changed(result))

    def _configured(self, root: Path, config: Config) -> None:
        """The config is new: convert what its scopes leave pending; let the workspace go
        if it turned autowatch off."""
        if not config.workspace.autowatch:
            threading.Thread(target=self.unwatch, args=(root,), daemon=True).start()
            return
        self.hooks.submit(root, lambda warm: warm.manager(root).convert_pending())

    def ready(self, root: Path, timeout: float = UP_WAIT_S) -> Watched:
        """Watch `root` if need be, and wait (up to `timeout`) for its first full scan."""
        held = self.watch(root)
        if held.watcher is not None:
            held.watcher.up.wait(timeout)
        return held

    def settled(self, root: Path, timeout: float = UP_WAIT_S) -> None:
        """Wait (up to `timeout`) for the first full scan of `root` if it is starting: a
        call answered beside that scan would walk the workspace a second time."""
        held = self.get(root)
        if held is not None and held.watcher is not None:
            held.watcher.up.wait(timeout)

    def get(self, root: Path) -> Watched | None:
        """The workspace at `root`, if the service holds it."""
        with self._lock:
            return self._held.get(root)

    def unwatch(self, root: Path, timeout: float = UP_WAIT_S) -> bool:
        """Stop watching `root` and forget it; whether it was held. Returns once it left
        the list, its watcher closed and its warm stores too (`_until_stopped`; up to
        `timeout`), so a `watch --list` after `watch --stop` no longer shows it."""
        self.registry.drop(str(root))
        with self._lock:
            held = self._held.get(root)
            if held is not None and held.watcher is None:
                del self._held[root]
        if held is not None and held.watcher is not None:
            held.watcher.stop()
            if held.monitor is not None and held.monitor is not threading.current_thread():
                held.monitor.join(timeout)
        return held is not None

    def listing(self) -> list[dict[str, Any]]:
        """Every workspace held, by root."""
        with self._lock:
            held = sorted(self._held.values(), key=lambda w: str(w.root))
        return [w.view() for w in held]

    def restore(self) -> None:
        """Forget the registry's workspaces whose folder is gone, then watch the others
        again (one at a time: each first full scan runs in its own worker). Forgetting
        comes first, so the list is true once the first workspace is watched."""
        kept = []
        for text in self.registry.roots():
            if (Path(text) / "freshline.toml").is_file():
                kept.append(Path(text))
            else:
                self.registry.drop(text)
        for root in kept:
            self.watch(root)

    def close(self) -> None:
        """Stop every watcher and wait for them."""
        with self._lock:
            held = list(self._held.values())
            self._held.clear()
        for w in held:
            if w.watcher is not None:
                w.watcher.stop()
        for w in held:
            if w.monitor is not None:
                w.monitor.join()
