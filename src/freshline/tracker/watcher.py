"""The watcher: file events become hints in the store; full scans catch what events miss.

inotify drops events on overflow and the Python watchers do not report it, so the
watcher never decides anything itself: it writes hints and a heartbeat, runs a full
scan at start (changes made while nothing ran) and every `full_scan_interval` seconds.

Three threads, so that no work of the watcher delays what readers rely on: the caller's
thread takes file events, stores their hints and answers flush cookies at once; a worker
thread runs the scans and flushes (and `on_flush`, which may convert documents); the
heartbeat beats on its own (`hints.Heartbeat`), so a watcher busy with a long scan or
conversion still looks alive and still answers cookies.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles
from watchfiles._rust_notify import WatchfilesRustInternalError

from freshline.config import Config
from freshline.errors import ConfigError, FreshlineError
from freshline.paths import is_internal, shown
from freshline.tracker.hints import HEARTBEAT_EVERY_S, Heartbeat, cookie_dir, is_cookie
from freshline.tracker.tracker import FlushResult, Tracker

WATCH_RETRIES = 5  # watches failing in a row before their first batch: the tree is unwatchable


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

    def idle(self) -> bool:
        """Whether no request came for `idle_exit_s` seconds (never, without the limit)."""
        limit = self.idle_exit_s
        return limit is not None and time.monotonic() - self.last_request > limit

    def _relevant(self, path: str) -> str | None:
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel.startswith("../") or is_internal(rel, self.tracker.config.workspace.ignore):
            return None
        return "" if rel == "." else rel

    def _wanted(self, _change: watchfiles.Change, path: str) -> bool:
        # The store's own writes (heartbeats) must not wake the watcher up.
        return is_cookie(self.root, path) or self._relevant(path) is not None

    def run(self) -> None:
        """Watch until stopped: hints and cookies here, scans in a worker, a heartbeat.

        The first full scan runs once inotify is watching (the first batch), and the
        heartbeat starts only after it: readers trust hints alone only once no change can
        have slipped between the scan and the watch. An error in the worker stops the
        watcher and is raised here.
        """
        # Made before watching starts: a folder created later is watched only once
        # inotify reports it, and a cookie dropped into it meanwhile would go unseen.
        cookie_dir(self.root).mkdir(parents=True, exist_ok=True)
        worker = _Worker(self)
        worker.start()
        try:
            self._watch_until_stopped(worker)
        finally:
            worker.finish()
        worker.check()

    def _watch_until_stopped(self, worker: _Worker) -> None:
        """Run watchfiles again each time it gives up on a name it cannot decode.

        watchfiles gives up on a path that is not UTF-8, losing the batch it was in: the
        watcher then asks for a full scan (the "" hint), pauses its heartbeat (readers scan
        everything meanwhile) and watches again; once the new watch delivers, it asks for
        one more full scan (what changed while nothing watched) and beats again. Watches
        that keep failing before their first batch (a folder with such a name) mean the
        tree cannot be watched.
        """
        resumed = False
        failed = 0  # watches in a row that failed before their first batch
        while not self._stop.is_set():
            try:
                self._watch(worker, resumed)
                return
            except _Lost as lost:
                resumed = True
                failed = 0 if lost.watching else failed + 1
                if failed >= WATCH_RETRIES:
                    raise FreshlineError(
                        f"cannot watch {shown(str(self.root))}: {shown(lost.reason)}; "
                        "flushes scan the whole workspace instead"
                    ) from None
                self._stop.wait(0.1 * failed)

    def _watch(self, worker: _Worker, resumed: bool) -> None:
        """One run of watchfiles, until stopped; raises _Lost when it gives up."""
        watching = False
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
                if resumed and not watching:  # watching again: trust nothing seen before
                    self.tracker.store.hints_add([""])
                    worker.heartbeat.resume()
                watching = True
                worker.wake(hinted=self._handle(batch))
                worker.check()
        except WatchfilesRustInternalError as exc:
            # Until a new watch is up, readers scan everything themselves.
            worker.heartbeat.pause()
            self.tracker.store.hints_add([""])
            self._release_cookies()  # the "" hint covers whatever the lost batch held
            worker.wake(hinted=True)
            raise _Lost(watching, str(exc)) from None

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
            _unlink(cookie)
        return bool(hints)

    def _release_cookies(self) -> None:
        try:
            waiting = list(os.scandir(cookie_dir(self.root)))
        except FileNotFoundError:
            return
        for cookie in waiting:
            _unlink(cookie.path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


class _Lost(Exception):
    """watchfiles gave up (a name it cannot decode); the batch it was in is lost."""

    def __init__(self, watching: bool, reason: str) -> None:
        super().__init__(reason)
        self.watching = watching  # whether that watch had delivered a batch before
        self.reason = reason


class _Worker:
    """The watcher's scans and flushes, in a thread of their own."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.heartbeat = Heartbeat(watcher.tracker.store)
        self._wake = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._watching = threading.Event()  # a first batch came: inotify is watching
        self._hinted = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="freshline-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self, hinted: bool) -> None:
        """A batch came (maybe empty: inotify is watching); `hinted` if it held hints."""
        with self._lock:
            self._hinted = self._hinted or hinted
        self._watching.set()
        self._wake.set()

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

    def _run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # handed to the watching thread, which raises it
            self._error = exc
            self.watcher.stop()

    def _loop(self) -> None:
        tracker = self.watcher.tracker
        last_full: float | None = None
        while True:
            # Batches wake it; so does the clock, for the periodic full scan (the store's
            # own writes keep watchfiles from yielding on timeouts).
            self._wake.wait(HEARTBEAT_EVERY_S)
            self._wake.clear()
            if self._done.is_set():
                return
            if self.watcher.idle():  # checked here too: the clock wakes this thread
                self.watcher.stop()
                return
            with self._lock:
                hinted, self._hinted = self._hinted, False
            if not self._watching.is_set():
                continue  # the first full scan waits for inotify to be watching
            interval = tracker.config.workspace.full_scan_interval
            if last_full is None or time.monotonic() - last_full > interval:
                if not self._guarded(tracker.scan):
                    continue  # a broken config: try again on the next batch
                if last_full is None:
                    self.heartbeat.start()
                last_full = time.monotonic()
            elif hinted and self.watcher.on_flush is not None:
                # Someone wants to act on changes (convert documents): log them now
                # rather than at the next reader's flush.
                self._guarded(lambda: tracker.flush(sync=False))

    def _guarded(self, flush: Callable[[], FlushResult]) -> bool:
        """Flush and report; a config broken mid-watch is reported (False) and watching
        goes on."""
        try:
            result = flush()
        except ConfigError as exc:
            if self.watcher.on_error is not None:
                self.watcher.on_error(exc)
            return False
        if self.watcher.on_flush is not None and result.projects:
            self.watcher.on_flush(result)
        return True
