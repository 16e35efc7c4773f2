"""File events for every workspace a process watches, from one thread that sleeps until
the operating system has something to say.

On Linux one inotify instance serves every subscription (a workspace's watcher): each
folder it wants is watched, from its tops down (a folder created later is watched as
soon as its creation is reported, and its contents are hinted through its own path); a
thread blocks in `poll()` with no timeout on the instance and on a pipe that wakes it to
stop, so nothing runs while nothing changes. An overflow of the kernel's queue is said to
every subscription (`lost`: look at everything), after the folders created meanwhile are
watched too; the deletion or move of a subscription's root is `gone`.

Elsewhere (`watcher.default_notifier`; or with `FRESHLINE_NOTIFIER=watchfiles`) each
subscription gets a thread running watchfiles (`polling.py`), which polls its Rust loop
every few milliseconds and says nothing of events it lost: `periodic` asks the watcher for
a full scan now and then.
"""

from __future__ import annotations

import errno
import os
import select
import threading
from collections.abc import Iterable
from typing import Protocol

from freshline.tracker import inotify

_SKIPPED = {errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.ELOOP}  # a folder not to watch


class Subscription(Protocol):
    """What a notifier needs of one watcher."""

    tops: tuple[str, ...]  # the folders watched from (the first is the root)
    quiet: str  # a folder of its own, where a notifier may drop a file to see it watches

    def wants(self, folder: str) -> bool:
        """Whether `folder` (absolute) and what lies below it are watched."""

    def changed(self, paths: list[str]) -> None:
        """These paths changed (called on the notifier's thread: take them and return)."""

    def lost(self) -> None:
        """Events were lost: everything must be looked at again."""

    def gone(self) -> None:
        """The root folder was deleted or moved away."""


class Notifier(Protocol):
    """Delivers file events to subscriptions until closed."""

    periodic: bool  # whether events may be lost unsaid (a full scan now and then)

    def subscribe(self, sub: Subscription) -> None:
        """Watch for `sub` from now on (OSError when its tree cannot be watched)."""

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop watching for `sub`."""

    def catch_up(self) -> bool:
        """Hand every event queued now to its subscriptions before returning; False when
        this notifier cannot (its events may still come later)."""

    def close(self) -> None:
        """Stop the thread and every watch."""


class InotifyNotifier:
    """Every subscription's folders on one inotify instance, read by one thread."""

    periodic = False

    def __init__(self) -> None:
        self._ino = inotify.Inotify()
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._lock = threading.RLock()
        self._folders: dict[int, str] = {}  # watch → the folder it watches
        self._owners: dict[int, set[Subscription]] = {}  # watch → who wants its events
        self._roots: dict[int, set[Subscription]] = {}  # a root's watch → whose root it is
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="freshline-notify", daemon=True)
        self._thread.start()

    def subscribe(self, sub: Subscription) -> None:
        """Watch every folder `sub` wants, from its tops down."""
        with self._lock:
            for top in sub.tops:
                self._walk(sub, top, strict=top == sub.tops[0])
            root = self._watch_of(sub.tops[0])
            if root is not None:
                self._roots.setdefault(root, set()).add(sub)

    def unsubscribe(self, sub: Subscription) -> None:
        """Drop `sub` from every watch; a watch nobody wants any more is removed."""
        with self._lock:
            for wd, owners in list(self._owners.items()):
                owners.discard(sub)
                if not owners:
                    self._forget(wd)
                    self._ino.remove(wd)
            for owners in self._roots.values():
                owners.discard(sub)

    def catch_up(self) -> bool:
        """Read the kernel's queue dry and hand its events over, in this thread: the
        kernel queues an event when the call that caused it returns, so every change
        made before this call is handed over when it returns."""
        self._take()
        return True

    def close(self) -> None:
        """Stop the thread, then the instance."""
        self._closing = True
        os.write(self._wake_w, b"x")
        self._thread.join()
        self._ino.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _walk(self, sub: Subscription, top: str, strict: bool = False) -> None:
        """Watch `top` and the folders below it that `sub` wants (called holding the
        lock). A folder that vanished or cannot be read is skipped, except a strict top
        (the root: nothing to watch is an error); the watch limit is always an error."""
        stack = [top]
        while stack:
            folder = stack.pop()
            if folder != top and not sub.wants(folder):
                continue
            try:
                wd = self._ino.add(os.fsencode(folder))
                entries = list(os.scandir(folder))
            except OSError as exc:
                if exc.errno in _SKIPPED and not (strict and folder == top):
                    continue
                raise
            self._folders[wd] = folder
            self._owners.setdefault(wd, set()).add(sub)
            stack.extend(e.path for e in entries if _is_folder(e))

    def _watch_of(self, folder: str) -> int | None:
        return next((wd for wd, f in self._folders.items() if f == folder), None)

    def _forget(self, wd: int) -> None:
        self._folders.pop(wd, None)
        self._owners.pop(wd, None)
        self._roots.pop(wd, None)

    def _unwatch_below(self, folder: str) -> None:
        """A folder moved away: stop watching it and what lies below it (watched again
        where it lands, if that is watched)."""
        for wd in [wd for wd, f in self._folders.items() if f == folder
                   or f.startswith(folder + "/")]:
            self._forget(wd)
            self._ino.remove(wd)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._ino.fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._closing:
            poller.poll()  # no timeout: asleep until an event or close()
            if self._closing:
                return
            self._take()

    def _take(self) -> None:
        """Read what is queued and hand it over, all under the lock: events read by one
        thread are handed over before another reads more (a catch-up never returns
        while events read before it are still on their way)."""
        with self._lock:
            for sub, paths in self._dispatch(self._ino.read()).items():
                sub.changed(paths)

    def _dispatch(self, events: list[inotify.Event]) -> dict[Subscription, list[str]]:
        """Each subscription's paths in `events`, folders created or moved in watched
        (called holding the lock)."""
        heard: dict[Subscription, list[str]] = {}
        for event in events:
            if event.mask & inotify.Q_OVERFLOW:
                self._overflowed()
                continue
            folder = self._folders.get(event.wd)
            if folder is None:
                continue
            owners = set(self._owners.get(event.wd, ()))
            path = f"{folder}/{os.fsdecode(event.name)}" if event.name else folder
            if event.mask & inotify.IGNORED:  # the kernel dropped the watch: deleted, unmounted
                for sub in self._roots.get(event.wd, ()):
                    sub.gone()
                self._forget(event.wd)
                continue
            if event.is_dir and event.mask & (inotify.CREATE | inotify.MOVED_TO):
                self._watch_new(owners, path)
            elif event.is_dir and event.mask & inotify.MOVED_FROM:
                self._unwatch_below(path)
            if not event.name and event.mask & (inotify.DELETE_SELF | inotify.MOVE_SELF):
                for sub in self._roots.get(event.wd, ()):
                    sub.gone()
            for sub in owners:
                heard.setdefault(sub, []).append(path)
        return heard

    def _watch_new(self, owners: Iterable[Subscription], folder: str) -> None:
        for sub in owners:
            if sub.wants(folder):
                try:
                    self._walk(sub, folder)
                except OSError:
                    sub.lost()  # the watch limit: what lies there goes unwatched

    def _overflowed(self) -> None:
        """The kernel's queue overflowed: watch the folders made meanwhile, then tell
        everyone that events were lost."""
        subs = {sub for owners in self._owners.values() for sub in owners}
        for sub in subs:
            try:
                for top in sub.tops:
                    self._walk(sub, top)
            except OSError:
                pass  # still told: a full scan finds what is there
            sub.lost()


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False

