"""The watcher: file events become hints in the store; full scans catch what events miss.

The watcher never decides anything itself: it writes hints, runs a full scan at start
(changes made while nothing ran) and whenever events were lost, and tells readers through
its lock (`tracker/hints.py`) whether its hints can be trusted.

Events come from a notifier (`tracker/notifier.py`): the service's, shared by every
workspace it watches, or one of its own (`run()`). Two threads per workspace, both
asleep while nothing happens, so that no work of the watcher delays what readers rely
on: the watching thread takes the notifier's paths, stores their hints and answers flush
cookies at once; the worker (`tracker/watchwork.py`) runs the scans and flushes (and
`on_flush`, which may convert documents).

Nothing one batch does stops it. A flush that fails is reported once and retried as a
full scan; hints it cannot store make readers scan everything themselves until a full
scan succeeds. It follows `freshline.toml` as it changes (a flush reloads it) and, in a
git checkout, the refs (`HEAD`, branches, `packed-refs`): a commit is logged, and
`on_refs` told, as soon as git writes it. It stops when its workspace's folder is gone
(deleted or replaced): nothing is left to watch or to answer for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from freshline.config import Config
from freshline.errors import FreshlineError
from freshline.paths import shown
from freshline.tracker import inotify
from freshline.tracker.hints import cookie_dir, cookie_sync, local_sync
from freshline.tracker.notifier import InotifyNotifier, Notifier
from freshline.tracker.tracker import FlushResult, Tracker
from freshline.tracker.watchpaths import Seen, event_paths
from freshline.tracker.watchwork import Batch, Worker

_LOST = ""  # in the watching thread's queue: events were lost
NOTIFIER_ENV = "FRESHLINE_NOTIFIER"  # "watchfiles": the portable notifier even with inotify


def default_notifier() -> Notifier:
    """Inotify where the kernel has it, else watchfiles (`tracker/polling.py`)."""
    if os.environ.get(NOTIFIER_ENV) != "watchfiles":
        try:
            return InotifyNotifier()
        except inotify.Unavailable:
            pass
    from freshline.tracker.polling import WatchfilesNotifier

    return WatchfilesNotifier()


class Watcher:
    """Watches one workspace from `start()` until `stop()` (or `run()`: until stopped,
    on a notifier of its own).

    With `on_flush`, the watcher also flushes after each batch and reports what each flush
    logged (so the service can convert changed documents in the background); `on_config`
    hears the config after the first full scan and whenever it changed; `on_refs` hears
    that a ref moved (a checkout target may have); `on_error` hears each error it
    survived, once. `up` is set once its first full scan is done.
    """

    def __init__(
        self,
        config: Config,
        notifier: Notifier | None = None,
        on_flush: Callable[[FlushResult], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
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
        self.up = threading.Event()  # set once the first full scan is done
        self.paths = event_paths(self.root, cookie_dir(self.root))
        self.tops = self.paths.tops()
        self.quiet = self.paths.cookies
        self._notifier = notifier
        self._own = notifier is None  # made at start, closed at close
        self.periodic = notifier.periodic if notifier is not None else False
        self._stop = threading.Event()
        self._queue: list[str] = []
        self._queued = threading.Event()
        self._queue_lock = threading.Lock()
        self._handling = threading.Lock()  # one thread stores a batch's hints at a time
        self._worker = Worker(self)
        self._taking = threading.Thread(target=self._take, name="freshline-events", daemon=True)

    # -- as the notifier's subscription ----------------------------------------------------

    def wants(self, folder: str) -> bool:
        """Whether `folder` is watched (`watchpaths.EventPaths.wants`)."""
        return self.paths.wants(folder)

    def changed(self, paths: list[str]) -> None:
        """Paths changed (on the notifier's thread: queued for the watching thread)."""
        with self._queue_lock:
            self._queue.extend(paths)
        self._queued.set()

    def lost(self) -> None:
        """Events were lost: readers and the next full scan look at everything."""
        self.changed([_LOST])

    def gone(self) -> None:
        """The workspace's folder was deleted or moved away."""
        self.stop()

    # -- life ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start watching (the first full scan follows in the worker); FreshlineError in
        one line when the tree cannot be watched."""
        if self._notifier is None:
            self._notifier = default_notifier()
            self.periodic = self._notifier.periodic
        # Made before watching starts: a cookie dropped into a folder not watched yet
        # would go unseen.
        cookie_dir(self.root).mkdir(parents=True, exist_ok=True)
        try:
            self._notifier.subscribe(self)
        except OSError as exc:
            self._notifier.unsubscribe(self)
            raise FreshlineError(f"cannot watch {shown(str(self.root))}: "
                                 f"{shown(exc.strerror or str(exc))}; flushes scan the whole "
                                 "workspace instead") from None
        self._taking.start()
        self._worker.start()
        local_sync(self.tracker.store, self.sync)

    def sync(self, timeout: float) -> bool:
        """Store the hints of every change made before now, in this thread (the sync of a
        flush in this process: no cookie file, no hand-over, where the notifier can catch
        up); else through a cookie. False when the watcher did not answer in time."""
        notifier = self._notifier
        if notifier is None or not notifier.catch_up():
            return cookie_sync(self.root, timeout)
        if not self._handling.acquire(timeout=timeout):
            return False
        try:
            self._take_queued()
        finally:
            self._handling.release()
        return True

    def stop(self) -> None:
        """Ask the watcher to stop; `close()` (or `run()`) finishes it."""
        self._stop.set()
        self._queued.set()

    def stopping(self) -> bool:
        """Whether `stop()` was asked for (or the watcher stopped itself)."""
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until stopped; whether it was."""
        return self._stop.wait(timeout)

    def close(self) -> None:
        """Stop, unsubscribe, let the threads end and the lock go (and close a notifier
        of its own); raise the worker's error if it failed."""
        self.stop()
        local_sync(self.tracker.store, self.sync, on=False)
        if self._notifier is not None:
            self._notifier.unsubscribe(self)
        if self._taking.is_alive():
            self._taking.join()
        self._worker.finish()
        if self._own and self._notifier is not None:
            self._notifier.close()
            self._notifier = None
        self.tracker.store.close()
        self._worker.check()

    def run(self) -> None:
        """Watch on a notifier of its own until stopped; an error that is not one batch's
        (the tree cannot be watched) is raised here."""
        self.start()
        try:
            self._stop.wait()
        finally:
            self.close()

    def vanished(self) -> bool:
        """Whether the workspace's folder was deleted, or replaced by another, since the
        watcher started."""
        return _identity(self.root) != self._folder

    # -- the watching thread -------------------------------------------------------------

    def _take(self) -> None:
        """Store each queued batch's hints, then release the cookies in it, until
        stopped."""
        # This thread's store connection now, while the workspace is there: opening one
        # makes the data folder, so one opened while the workspace is being deleted
        # would make it again. (A store busy being made now is opened at the first hint.)
        try:
            self.tracker.store.data_version()
        except FreshlineError:
            pass
        while True:
            self._queued.wait()
            self._queued.clear()
            if self._stop.is_set():
                return
            with self._handling:
                self._take_queued()

    def _take_queued(self) -> None:
        """Store the hints of the paths queued so far (called holding `_handling`)."""
        with self._queue_lock:
            paths, self._queue = self._queue, []
        if not paths:
            return
        if _LOST in paths:
            self._worker.lost()
        self._worker.wake(self._handle(paths))

    def _handle(self, paths: list[str]) -> Batch:
        """Store the paths' hints, then release the cookies among them; what they held."""
        hints: set[str] = set()
        cookies: list[str] = []
        seen = Batch()
        ignore = tuple(self.tracker.config.workspace.ignore)
        for path in paths:
            if path == _LOST:
                continue
            kind, rel = self.paths.sort(path, ignore)
            if kind is Seen.COOKIE:
                cookies.append(path)
            elif kind is Seen.HINT:
                hints.add(rel)
            elif kind is Seen.REF:
                seen.refs = True
            elif kind is Seen.CONFIG:
                seen.config = True
        seen.hinted = bool(hints)
        if hints:
            self._worker.store_hints(sorted(hints))
        for cookie in cookies:  # only after the hints before it are in the store
            _unlink(cookie)
        return seen


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _identity(folder: Path) -> tuple[int, int] | None:
    """The folder's device and inode; None when it is not there."""
    try:
        st = folder.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
