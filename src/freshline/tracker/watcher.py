"""The watcher: file events become hints in the store; full scans catch what events miss.

inotify drops events on overflow and the Python watchers do not report it, so the
watcher never decides anything itself: it writes hints and a heartbeat, runs a full
scan at start (changes made while nothing ran) and every `full_scan_interval` seconds.

Three threads, so that no work of the watcher delays what readers rely on: the caller's
thread takes file events, stores their hints and answers flush cookies at once; a worker
thread (`tracker/watchwork.py`) runs the scans and flushes (and `on_flush`, which may
convert documents); the heartbeat beats on its own (`hints.Heartbeat`), so a watcher busy
with a long scan or conversion still looks alive and still answers cookies.

It is a service: nothing one batch does stops it. A flush that fails is reported once and
retried as a full scan; hints it cannot store make readers scan everything themselves
until a full scan succeeds. It follows `freshline.toml` as it changes (a flush reloads
it) and, in a git checkout, the refs (`HEAD`, branches, `packed-refs`): a commit is
logged, and `on_refs` told, as soon as git writes it.
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
from freshline.errors import FreshlineError
from freshline.paths import shown
from freshline.tracker.hints import HEARTBEAT_EVERY_S, cookie_dir
from freshline.tracker.tracker import FlushResult, Tracker
from freshline.tracker.watchpaths import Seen, event_paths
from freshline.tracker.watchwork import Batch, Worker

WATCH_RETRIES = 5  # watches failing in a row before their first batch: the tree is unwatchable
# How long watchfiles waits for a quiet moment before it hands over a batch: every flush's
# cookie waits through it once or twice, the agent's prompt behind it.
STEP_MS = 5


class Watcher:
    """Watches one workspace until `stop()`; usable in-process or as `freshline watch`.

    With `on_flush`, the watcher also flushes after each batch and reports what each flush
    logged (so `freshline watch` can convert changed documents in the background);
    `on_config` hears the config after the first full scan and whenever it changed;
    `on_refs` hears that a ref moved (a checkout target may have); `on_error` hears each
    error it survived, once. `up` is set once its first full scan is done and it beats.
    With `idle_exit_s`, it stops after that many seconds without
    a request (a flush's cookie, or `request()`). It stops when its workspace's folder is
    gone (deleted or replaced): nothing is left to watch or to answer for.
    """

    def __init__(
        self,
        config: Config,
        on_flush: Callable[[FlushResult], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
        idle_exit_s: float | None = None,
        on_refs: Callable[[], None] | None = None,
        on_config: Callable[[Config], None] | None = None,
    ) -> None:
        self.config = config
        self.root = Path(config.root).resolve()
        self._folder = _identity(self.root)
        self.tracker = Tracker(config)
        self.on_flush = on_flush
        self.on_error = on_error
        self.on_refs = on_refs
        self.on_config = on_config
        self.idle_exit_s = idle_exit_s
        self.last_request = time.monotonic()
        self.up = threading.Event()  # set once the first full scan is done and it beats
        self.paths = event_paths(self.root, cookie_dir(self.root))
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the watcher to stop; `run()` returns shortly after."""
        self._stop.set()

    def stopping(self) -> bool:
        """Whether `stop()` was asked for."""
        return self._stop.is_set()

    def request(self) -> None:
        """Count a request (a question on the socket): the watcher is not idle."""
        self.last_request = time.monotonic()

    def idle(self) -> bool:
        """Whether no request came for `idle_exit_s` seconds (never, without the limit)."""
        limit = self.idle_exit_s
        return limit is not None and time.monotonic() - self.last_request > limit

    def gone(self) -> bool:
        """Whether the workspace's folder was deleted, or replaced by another, since the
        watcher started."""
        return _identity(self.root) != self._folder

    def _wanted(self, _change: watchfiles.Change, path: str) -> bool:
        # The store's own writes (heartbeats) must not wake the watcher up.
        return self.paths.sort(path)[0] is not Seen.NOTHING

    def run(self) -> None:
        """Watch until stopped: hints and cookies here, scans in a worker, a heartbeat.

        The first full scan runs once inotify is watching (the first batch: the worker
        drops a cookie of its own until one comes back), and the heartbeat starts only
        after it: readers trust hints alone only once no change can have slipped between
        the scan and the watch. Only an error that is not one batch's (the tree cannot be
        watched at all) stops the watcher; it is raised here.
        """
        # Made before watching starts: a folder created later is watched only once
        # inotify reports it, and a cookie dropped into it meanwhile would go unseen.
        cookie_dir(self.root).mkdir(parents=True, exist_ok=True)
        worker = Worker(self)
        worker.start()
        try:
            self._watch_until_stopped(worker)
        finally:
            worker.finish()
        worker.check()

    def _watch_until_stopped(self, worker: Worker) -> None:
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

    def _watch(self, worker: Worker, resumed: bool) -> None:
        """One run of watchfiles, until stopped; raises _Lost when it gives up."""
        watching = False
        try:
            for batch in watchfiles.watch(
                self.root,
                *self.paths.outside(),
                watch_filter=self._wanted,
                debounce=self.config.workspace.debounce_ms,
                step=STEP_MS,
                stop_event=self._stop,
                rust_timeout=int(HEARTBEAT_EVERY_S * 1000),
                yield_on_timeout=True,
                recursive=True,
                ignore_permission_denied=True,
            ):
                if resumed and not watching:  # watching again: trust nothing seen before
                    worker.rewatched()
                watching = True
                worker.wake(self._handle(batch, worker))
                worker.check()
        except WatchfilesRustInternalError as exc:
            # Until a new watch is up, readers scan everything themselves.
            worker.unwatched()
            self._release_cookies()  # the "" hint covers whatever the lost batch held
            raise _Lost(watching, str(exc)) from None

    def _handle(self, batch: set[tuple[watchfiles.Change, str]], worker: Worker) -> Batch:
        """Store the batch's hints, then release the cookies in it; what the batch held."""
        hints: list[str] = []
        cookies: list[str] = []
        seen = Batch()
        ignore = tuple(self.tracker.config.workspace.ignore)
        for _change, path in batch:
            kind, rel = self.paths.sort(path, ignore)
            if kind is Seen.COOKIE:
                cookies.append(path)
            elif kind is Seen.HINT:
                hints.append(rel)
            elif kind is Seen.REF:
                seen.refs = True
            elif kind is Seen.CONFIG:
                seen.config = True
        seen.hinted = bool(hints)
        worker.store_hints(hints)
        if cookies:
            self.request()
        for cookie in cookies:  # only after the hints before it are in the store
            _unlink(cookie)
        return seen

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


def _identity(folder: Path) -> tuple[int, int] | None:
    """The folder's device and inode; None when it is not there."""
    try:
        st = folder.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
