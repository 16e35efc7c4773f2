"""The portable notifier: watchfiles, one thread per subscription, where inotify is not.

watchfiles (the notify crate: FSEvents on macOS, kqueue on the BSDs) wakes every
`STEP_MS` to look for events and does not say when it lost some, so a watcher on it asks
for a full scan every `full_scan_interval` (`periodic`). It gives up on a name it cannot
decode, losing the batch: the subscription hears `lost` and the watch starts again.
Whether a watch is in place is not said either: `subscribe` drops a probe file into the
subscription's own folder until the watch reports it.
"""

from __future__ import annotations

import os
import threading
import time

from freshline.tracker.notifier import Subscription

STEP_MS = 50  # watchfiles' own wake-up step
PROBE_EVERY_S = 0.05
SUBSCRIBE_WAIT_S = 30.0


class WatchfilesNotifier:
    """A watchfiles loop per subscription."""

    periodic = True

    def __init__(self) -> None:
        self._stops: dict[Subscription, threading.Event] = {}
        self._threads: dict[Subscription, threading.Thread] = {}

    def subscribe(self, sub: Subscription) -> None:
        """Start watching for `sub` and return once the watch delivers."""
        if not os.path.isdir(sub.tops[0]):
            raise FileNotFoundError(2, "no such folder", sub.tops[0])
        stop, up = threading.Event(), threading.Event()
        thread = threading.Thread(target=self._watch, args=(sub, stop, up), daemon=True,
                                  name="freshline-watchfiles")
        self._stops[sub], self._threads[sub] = stop, thread
        thread.start()
        probe = os.path.join(sub.quiet, f"probe-{os.urandom(8).hex()}")
        deadline = time.monotonic() + SUBSCRIBE_WAIT_S
        try:
            while not up.wait(PROBE_EVERY_S):
                if time.monotonic() > deadline or not thread.is_alive():
                    raise OSError(f"cannot watch {sub.tops[0]}")
                with open(probe, "wb"):
                    pass
        finally:
            try:
                os.unlink(probe)
            except FileNotFoundError:
                pass

    def unsubscribe(self, sub: Subscription) -> None:
        """Stop `sub`'s loop."""
        stop = self._stops.pop(sub, None)
        thread = self._threads.pop(sub, None)
        if stop is not None and thread is not None:
            stop.set()
            thread.join()

    def catch_up(self) -> bool:
        """It cannot: watchfiles hands a batch over when its loop next looks."""
        return False

    def close(self) -> None:
        """Stop every loop."""
        for sub in list(self._stops):
            self.unsubscribe(sub)

    def _watch(self, sub: Subscription, stop: threading.Event, up: threading.Event) -> None:
        import watchfiles
        from watchfiles._rust_notify import WatchfilesRustInternalError

        def wanted(_change: watchfiles.Change, path: str) -> bool:
            folder = os.path.dirname(path)
            return folder == sub.quiet or sub.wants(folder)

        while not stop.is_set():
            try:
                for batch in watchfiles.watch(*sub.tops, watch_filter=wanted, step=STEP_MS,
                                              debounce=STEP_MS, stop_event=stop,
                                              recursive=True, ignore_permission_denied=True):
                    up.set()
                    sub.changed([path for _change, path in batch])
                return
            except WatchfilesRustInternalError:
                if not os.path.isdir(sub.tops[0]):
                    sub.gone()
                    return
                sub.lost()  # a name it could not decode: that batch is gone
                stop.wait(0.1)
