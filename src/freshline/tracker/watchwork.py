"""The watcher's worker: its scans and flushes, in a thread of their own.

It sleeps until there is something to do: a batch of events, a retry that is due, or (on
a notifier that may lose events unsaid) the periodic full scan; there is no fixed
wake-up. A batch is flushed once `debounce_ms` passed without another one.

Nothing one batch does stops it. A flush that raises is reported once (the same error
again is not reported again) and retried as a full scan, after a wait that doubles up to
`RETRY_MAX_S` while it keeps failing; a change of freshline.toml retries at once. Hints
the watching thread cannot store (the store refused the write) make readers scan
everything themselves (the watch lock is let go) until a full scan has covered them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from freshline.config import Config
from freshline.tracker.hints import Liveness
from freshline.tracker.reports import mark_unmarked
from freshline.tracker.tracker import FlushResult, Tracker

RETRY_FIRST_S = 1.0  # the wait before retrying a failed flush; it doubles while it fails
RETRY_MAX_S = 60.0  # ... up to this


@dataclass
class Batch:
    """What one batch of events held (or several, until the worker looked)."""

    hinted: bool = False  # paths in the workspace changed
    refs: bool = False  # HEAD, a branch or packed-refs moved
    config: bool = False  # freshline.toml or git's exclude file changed

    def merge(self, other: Batch) -> None:
        """Add what `other` held."""
        self.hinted |= other.hinted
        self.refs |= other.refs
        self.config |= other.config


class Watched(Protocol):
    """What the worker uses of its watcher (`tracker.watcher.Watcher`, which owns it)."""

    root: Path
    tracker: Tracker
    up: threading.Event
    periodic: bool
    on_flush: Callable[[FlushResult], None] | None
    on_error: Callable[[Exception], None] | None
    on_refs: Callable[[], None] | None
    on_config: Callable[[Config], None] | None

    def stop(self) -> None: ...

    def vanished(self) -> bool: ...


class Worker:
    """Runs the watcher's scans and flushes, reports what they logged, holds the lock
    that tells readers its hints can be trusted."""

    def __init__(self, watcher: Watched) -> None:
        self.watcher = watcher
        self.liveness = Liveness(watcher.tracker.store)
        self._wake = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._batch = Batch()
        self._error: BaseException | None = None
        self._full_due = True  # the first full scan, or the retry of a failed flush
        self._losses = 0  # times hints could not be stored
        self._paused = False  # hints were lost: readers must not trust them now
        self._failures = 0  # failed flushes in a row
        self._retry_at = 0.0
        self._last_full: float | None = None
        self._said: str | None = None  # the error last reported (not reported twice)
        self._config: Config | None = None  # as `on_config` last heard it
        self._thread = threading.Thread(target=self._run, name="freshline-watch", daemon=True)

    def start(self) -> None:
        """Start the thread: the first full scan comes at once."""
        self._wake.set()
        self._thread.start()

    def wake(self, batch: Batch) -> None:
        """A batch came."""
        with self._lock:
            self._batch.merge(batch)
        self._wake.set()

    def store_hints(self, paths: Sequence[str]) -> None:
        """Store hints from the watching thread; if the store refuses them, readers stop
        trusting hints until a full scan has run."""
        try:
            self.watcher.tracker.store.hints_add(paths)
        except Exception as exc:
            with self._lock:
                self._losses += 1
                self._full_due = True
                self._paused = True
                self.liveness.release()
            self._report(exc)
            self._wake.set()

    def lost(self) -> None:
        """Events were lost: every reader looks at everything (the "" hint), and so does
        the next full scan."""
        self.store_hints([""])
        with self._lock:
            self._full_due = True
        self._wake.set()

    def check(self) -> None:
        """Raise the worker's error, if it failed."""
        if self._error is not None:
            raise self._error

    def finish(self) -> None:
        """Stop the worker (letting a scan in progress end) and let the lock go."""
        self._done.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()
        self.liveness.release()

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # handed to the watcher, which raises it
            self._error = exc
            self.watcher.stop()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._due())
            self._wake.clear()
            if self._settle():
                return
            if self.watcher.vanished():
                self.watcher.stop()
                return
            with self._lock:
                batch, self._batch = self._batch, Batch()
            if batch.config:
                self._retry_at = 0.0  # an edited config may be what the retry waits for
            if self._full_due or self._periodic_due():
                self._full_scan()
            elif batch.hinted or batch.refs or batch.config:
                self._flush()
            if batch.refs and self.watcher.on_refs is not None:
                self._call(self.watcher.on_refs)

    def _settle(self) -> bool:
        """Once up, wait until no batch came for `debounce_ms`; whether the worker is done.
        Readers do not wait for this (their flush syncs with the watching thread): it
        keeps the worker from flushing in the middle of a burst, above all from reading a
        freshline.toml an editor has truncated and not yet written again (a config
        without its projects would forget what they logged meanwhile)."""
        if self._done.is_set():
            return True
        if self.watcher.up.is_set():
            quiet = self.watcher.tracker.config.workspace.debounce_ms / 1000
            while self._wake.wait(quiet) and not self._done.is_set():
                self._wake.clear()
        return self._done.is_set()

    def _due(self) -> float | None:
        """Seconds until the next timed step (a retry, a periodic full scan), or None:
        nothing is timed, so the thread sleeps until woken."""
        now = time.monotonic()
        if self._full_due and self._retry_at > now:
            return self._retry_at - now
        if self.watcher.periodic and self._last_full is not None:
            interval = self.watcher.tracker.config.workspace.full_scan_interval
            return max(0.0, self._last_full + interval - now)
        return None

    def _periodic_due(self) -> bool:
        if not self.watcher.periodic or self._last_full is None:
            return False
        interval = self.watcher.tracker.config.workspace.full_scan_interval
        return time.monotonic() - self._last_full >= interval

    def _full_scan(self) -> None:
        """The full scan: at start, after lost events, to retry a failed flush (not before
        its wait is over), and now and then on a notifier that may lose events unsaid."""
        if time.monotonic() < self._retry_at:
            return
        with self._lock:
            losses = self._losses
        first = not self.watcher.up.is_set()
        result = self._attempt(self._first_scan if first else self.watcher.tracker.scan)
        if result is None:
            return
        self._last_full = time.monotonic()
        with self._lock:
            covered = self._losses == losses  # no hint was lost during the scan
            self._full_due = not covered
            if covered:
                self._paused = False
            trusted = not self._paused and self.liveness.hold()
        if first:  # up: before anyone hears of the scan (conversions wait)
            self.watcher.up.set()
        if not trusted and first:
            self._report(RuntimeError("another process watches this workspace"))
        self._tell(result)

    def _first_scan(self) -> FlushResult:
        """The scan at start; `scan` reports what changed since the watcher started, for
        projects no scan has reported on yet."""
        mark_unmarked(self.watcher.tracker)
        return self.watcher.tracker.scan()

    def _flush(self) -> None:
        """Log what the batch's hints show now, for whoever acts on changes (documents to
        convert, a status bar to redraw) rather than at the next reader's flush."""
        if self.watcher.on_flush is not None or self.watcher.on_refs is not None:
            result = self._attempt(lambda: self.watcher.tracker.flush(sync=False))
            if result is not None:
                self._tell(result)

    def _attempt(self, flush: Callable[[], FlushResult]) -> FlushResult | None:
        """Flush; a failure is reported (once) and retried as a full scan (None)."""
        try:
            result = flush()
        except Exception as exc:
            self._failures += 1
            with self._lock:
                self._full_due = True
            wait = RETRY_FIRST_S * 2.0 ** (self._failures - 1)
            self._retry_at = time.monotonic() + min(wait, RETRY_MAX_S)
            self._report(exc)
            return None
        self._failures, self._said = 0, None
        return result

    def _tell(self, result: FlushResult) -> None:
        """Tell the listeners about a flush: the config if it is new to them, then what
        the flush logged."""
        config = self.watcher.tracker.config
        if config is not self._config and self.watcher.on_config is not None:
            self._call(lambda: self.watcher.on_config(config))  # type: ignore[misc]
        self._config = config
        if self.watcher.on_flush is not None and result.projects:
            self._call(lambda: self.watcher.on_flush(result))  # type: ignore[misc]

    def _call(self, listener: Callable[[], None]) -> None:
        """Run a listener; its failure is reported, and watching goes on."""
        try:
            listener()
        except Exception as exc:
            self._report(exc)

    def _report(self, exc: Exception) -> None:
        message = f"{type(exc).__name__}: {exc}"
        if message == self._said:
            return
        self._said = message
        if self.watcher.on_error is not None:
            try:
                self.watcher.on_error(exc)
            except Exception:  # the one listener whose failure cannot be reported
                pass
