"""The watcher's worker: its scans and flushes, in a thread of their own.

Nothing one batch does stops it. A flush that raises is reported once (the same error
again is not reported again) and retried as a full scan, after a wait that doubles up to
`RETRY_MAX_S` while it keeps failing; a change of freshline.toml retries at once. Hints
the watching thread cannot store (the store refused the write) make readers scan
everything themselves (the heartbeat pauses) until a full scan has covered them.

Until inotify is known to be watching (a first batch came), the worker drops a cookie of
its own every `PROBE_EVERY_S`: the batch it comes back in is that proof, and comes at once
however busy the workspace's data folder is (clients opening the store make events there
that the watcher filters out, which would otherwise keep watchfiles from ever yielding).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from freshline.config import Config
from freshline.tracker.hints import HEARTBEAT_EVERY_S, Heartbeat, cookie_dir
from freshline.tracker.reports import mark_unmarked
from freshline.tracker.tracker import FlushResult, Tracker

PROBE_EVERY_S = 0.05  # how often the start cookie is dropped until a batch brings it back
RETRY_FIRST_S = 1.0  # the wait before retrying a failed flush; it doubles while it fails
RETRY_MAX_S = 60.0  # ... up to this
_LOST = "lost"  # the heartbeat pauses: hints could not be stored
_UNWATCHED = "unwatched"  # ... the watch was lost, a new one has not delivered yet


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
    on_flush: Callable[[FlushResult], None] | None
    on_error: Callable[[Exception], None] | None
    on_refs: Callable[[], None] | None
    on_config: Callable[[Config], None] | None

    def stop(self) -> None: ...

    def idle(self) -> bool: ...

    def gone(self) -> bool: ...


class Worker:
    """Runs the watcher's scans and flushes, reports what they logged, keeps the heartbeat."""

    def __init__(self, watcher: Watched) -> None:
        self.watcher = watcher
        self.heartbeat = Heartbeat(watcher.tracker.store)
        self._wake = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._watching = threading.Event()  # a batch came since the watch (re)started
        self._batch = Batch()
        self._error: BaseException | None = None
        self._probe = cookie_dir(watcher.root) / f"start-{os.urandom(8).hex()}"
        self._probing = False  # the probe may be lying in the cookie folder
        self._full_due = True  # the first full scan, or the retry of a failed flush
        self._losses = 0  # times hints could not be stored
        self._paused: set[str] = set()  # why readers must not trust the hints now
        self._beating = False  # the heartbeat was started (after the first full scan)
        self._failures = 0  # failed flushes in a row
        self._retry_at = 0.0
        self._said: str | None = None  # the error last reported (not reported twice)
        self._config: Config | None = None  # as `on_config` last heard it
        self._thread = threading.Thread(target=self._run, name="freshline-watch", daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def wake(self, batch: Batch) -> None:
        """A batch came (maybe empty: inotify is watching)."""
        with self._lock:
            self._batch.merge(batch)
        self._watching.set()
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
            self._pause(_LOST)
            self._report(exc)
            self._wake.set()

    def unwatched(self) -> None:
        """The watch was lost: readers scan everything until a new one delivers."""
        self._pause(_UNWATCHED)
        self._watching.clear()
        self.store_hints([""])
        self._wake.set()

    def rewatched(self) -> None:
        """A new watch delivers: what changed while nothing watched is a full scan away."""
        self.store_hints([""])
        with self._lock:
            self._full_due = True
        self._resume(_UNWATCHED)

    def _pause(self, why: str) -> None:
        with self._lock:
            self._paused.add(why)
            self.heartbeat.pause()

    def _resume(self, why: str) -> None:
        with self._lock:
            self._paused.discard(why)
            if not self._paused:
                self.heartbeat.resume()

    def check(self) -> None:
        """Raise the worker's error, if it failed."""
        if self._error is not None:
            self.watcher.stop()
            raise self._error

    def finish(self) -> None:
        """Stop the worker (letting a scan in progress end) and the heartbeat."""
        self._done.set()
        self._wake.set()
        self._thread.join()
        self.heartbeat.stop()
        self._probe.unlink(missing_ok=True)

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # handed to the watching thread, which raises it
            self._error = exc
            self.watcher.stop()

    def _loop(self) -> None:
        last_full: float | None = None
        while True:
            # Batches wake it; so does the clock, for the periodic full scan (the store's
            # own writes keep watchfiles from yielding on timeouts).
            watching = self._watching.is_set()
            self._wake.wait(HEARTBEAT_EVERY_S if watching else PROBE_EVERY_S)
            self._wake.clear()
            if self._done.is_set():
                return
            if self.watcher.idle() or self.watcher.gone():  # the clock wakes this thread
                self.watcher.stop()
                return
            if not self._watching.is_set():
                self._drop_probe()  # the first full scan waits for inotify to be watching
                continue
            if self._probing:
                self._probing = False
                self._probe.unlink(missing_ok=True)
            with self._lock:
                batch, self._batch = self._batch, Batch()
            if batch.config:
                self._retry_at = 0.0  # an edited config may be what the retry waits for
            interval = self.watcher.tracker.config.workspace.full_scan_interval
            if self._full_due or last_full is None or time.monotonic() - last_full > interval:
                if self._full_scan():
                    last_full = time.monotonic()
            elif batch.hinted or batch.refs or batch.config:
                self._flush()
            if batch.refs and self.watcher.on_refs is not None:
                self._call(self.watcher.on_refs)

    def _full_scan(self) -> bool:
        """The full scan: at start, every `full_scan_interval`, and to retry a failed flush
        (not before its wait is over); whether it ran."""
        if time.monotonic() < self._retry_at:
            return False
        with self._lock:
            losses = self._losses
        result = self._attempt(self._scan if self._beating else self._first_scan)
        if result is None:
            return False
        with self._lock:
            covered = self._losses == losses  # no hint was lost during the scan
            self._full_due = not covered
        if covered:
            self._resume(_LOST)
        if not self._beating:  # up: before anyone hears of the scan (conversions wait)
            self._beating = True
            self.watcher.up.set()  # first: whoever sees it beat finds its socket answering
            self.heartbeat.start()
        self._tell(result)
        return True

    def _scan(self) -> FlushResult:
        return self.watcher.tracker.scan()

    def _first_scan(self) -> FlushResult:
        """The scan at start; `scan` reports what changed since the watcher started, for
        projects no scan has reported on yet."""
        mark_unmarked(self.watcher.tracker)
        return self._scan()

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

    def _drop_probe(self) -> None:
        """Drop the start cookie again: its creation is an event once inotify watches."""
        self._probing = True
        try:
            self._probe.unlink(missing_ok=True)
            self._probe.write_bytes(b"")
        except OSError:  # the data dir went away: the clock's batch will do
            pass
