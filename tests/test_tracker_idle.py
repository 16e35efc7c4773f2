"""A flush with nothing to write takes no write lock.

Seen (issue 30, load): every `project_updates` flushed, and every flush queued for the
workspace's write lock, though under load the watcher's (or another request's) flush had
most often taken the hints already: the flush then wrote nothing, after waiting its turn.
A hinted flush that finds no hint pending, HEAD where it was and every project known now
returns without the lock; one with a hint still waits its turn and logs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from freshline.tracker import FlushResult, Tracker
from freshline.tracker.hints import Liveness
from tests.conftest import StoreBackend, Workspace, in_thread

WAIT_S = 10.0  # far beyond an idle flush on a loaded machine; reached only when blocked
BLOCKED_S = 0.5  # how long a flush that must wait is watched waiting


@pytest.fixture
def tracker(ws: Workspace, backend: StoreBackend) -> Iterator[Tracker]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    t = ws.tracker()
    t.flush(full=True)
    alive = Liveness(t.store)  # a watcher holds its lock: flushes trust its hints
    assert alive.hold()
    yield t
    alive.release()
    t.store.close()


def while_locked(ws: Workspace, fn: Callable[[], FlushResult]) -> tuple[bool, list[object]]:
    """Run `fn` on a thread while another connection holds the write lock; whether it
    finished before the lock was let go, and what it returned (or raised)."""
    other = ws.tracker().store
    held, release = threading.Event(), threading.Event()

    def locking() -> None:
        with other.write():
            held.set()
            release.wait(WAIT_S)

    locker = threading.Thread(target=locking, daemon=True)
    locker.start()
    assert held.wait(WAIT_S)
    worker, out = in_thread(fn)
    worker.join(BLOCKED_S)
    early = not worker.is_alive()
    release.set()
    worker.join(WAIT_S)
    locker.join(WAIT_S)
    other.close()
    return early, out


def test_a_flush_with_no_hint_pending_takes_no_write_lock(
    ws: Workspace, tracker: Tracker
) -> None:
    done, out = while_locked(ws, lambda: tracker.flush(sync=False))
    assert done, "the flush with nothing to write waited for the write lock"
    assert isinstance(out[0], FlushResult) and out[0].projects == {}


def test_a_flush_with_a_hint_still_waits_and_logs_it(ws: Workspace, tracker: Tracker) -> None:
    ws.write("notes/b.md", "# B\n")
    tracker.store.hints_add(["notes/b.md"])
    done, out = while_locked(ws, lambda: tracker.flush(sync=False))
    assert not done
    assert isinstance(out[0], FlushResult), out
    assert [c.path for c in out[0].projects["p"].changes] == ["notes/b.md"]


def test_a_project_new_to_the_store_is_started_by_the_next_flush(
    ws: Workspace, tracker: Tracker
) -> None:
    ws.configure({"p": {"include": ["notes"]}, "q": {"include": ["notes"]}})
    tracker.flush(sync=False)
    assert tracker.epoch("q") == 0
    assert tracker.store.project_state("q") is not None
