"""The watcher: file events become hints in the store; full scans catch what events miss.

inotify drops events on overflow and the Python watchers do not report it, so the
watcher never decides anything itself: it writes hints and a heartbeat, runs a full
scan at start (changes made while nothing ran) and every `full_scan_interval` seconds.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from freshline.config import Config
from freshline.errors import ConfigError
from freshline.paths import is_internal
from freshline.tracker.hints import HEARTBEAT_EVERY_S, beat, is_cookie, stop_beating
from freshline.tracker.tracker import FlushResult, Tracker


class Watcher:
    """Watches one workspace until `stop()`; usable in-process or as `freshline watch`.

    With `on_flush`, the watcher also flushes after each batch and reports what each flush
    logged (so `freshline watch` can convert changed documents in the background). With
    `idle_exit_s`, it stops after that many seconds without a request (a flush's cookie).
    """

    def __init__(
        self,
        config: Config,
        on_flush: Callable[[FlushResult], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        idle_exit_s: float | None = None,
    ) -> None:
        self.config = config
        self.root = Path(config.root).resolve()
        self.tracker = Tracker(config)
        self.on_flush = on_flush
        self.on_error = on_error
        self.idle_exit_s = idle_exit_s
        self.last_request = time.monotonic()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the watcher to stop; `run()` returns shortly after."""
        self._stop.set()

    def _relevant(self, path: str) -> str | None:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith("../") or is_internal(rel, self.tracker.config.workspace.ignore):
            return None
        return "" if rel == "." else rel

    def _wanted(self, _change: watchfiles.Change, path: str) -> bool:
        # The store's own writes (heartbeats) must not wake the watcher up.
        return is_cookie(self.root, path) or self._relevant(path) is not None

    def _report(self, result: FlushResult) -> None:
        if self.on_flush is not None and result.projects:
            self.on_flush(result)

    def run(self) -> None:
        """Watch until stopped: heartbeat, hints, cookies, periodic full scans.

        The first full scan runs once inotify is watching (the first batch), and the
        heartbeat starts only after it: readers trust hints alone only once no change can
        have slipped between the scan and the watch.
        """
        store = self.tracker.store
        last_full: float | None = None
        try:
            for batch in watchfiles.watch(
                self.root,
                watch_filter=self._wanted,
                debounce=self.config.workspace.debounce_ms,
                step=10,
                stop_event=self._stop,
                rust_timeout=int(HEARTBEAT_EVERY_S * 1000),
                yield_on_timeout=True,
                recursive=True,
                ignore_permission_denied=True,
            ):
                hinted = self._handle(batch)
                interval = self.tracker.config.workspace.full_scan_interval
                if last_full is None or time.monotonic() - last_full > interval:
                    self._guarded(self.tracker.scan)
                    last_full = time.monotonic()
                elif hinted and self.on_flush is not None:
                    # Someone wants to act on changes (convert documents): log them now
                    # rather than at the next reader's flush.
                    self._guarded(lambda: self.tracker.flush(sync=False))
                beat(store)
                if self.idle():
                    break
        finally:
            stop_beating(store)

    def idle(self) -> bool:
        """Whether no request came for `idle_exit_s` seconds (never, without the limit)."""
        limit = self.idle_exit_s
        return limit is not None and time.monotonic() - self.last_request > limit

    def _guarded(self, flush: Callable[[], FlushResult]) -> None:
        """Flush and report; a config broken mid-watch is reported and watching goes on."""
        try:
            self._report(flush())
        except ConfigError as exc:
            if self.on_error is not None:
                self.on_error(exc)

    def _handle(self, batch: set[tuple[watchfiles.Change, str]]) -> bool:
        """Store the batch's hints, then release the cookies in it; whether any hint came."""
        hints: list[str] = []
        cookies: list[str] = []
        for _change, path in batch:
            if is_cookie(self.root, path):
                cookies.append(path)
                continue
            rel = self._relevant(path)
            if rel is not None:
                hints.append(rel)
        self.tracker.store.hints_add(hints)
        if cookies:
            self.last_request = time.monotonic()
        for cookie in cookies:  # only after the hints before it are in the store
            try:
                os.unlink(cookie)
            except FileNotFoundError:
                pass
        return bool(hints)
