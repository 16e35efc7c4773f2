"""Deliveries and acknowledgements wait for their session, not for flushes.

Seen (issue 30, load): under 50 clients on two `serve` processes on PostgreSQL, p99 was
11-25 times the one-client p99; every delivery and acknowledgement took the workspace's
write lock, so each queued behind every flush of both processes. On PostgreSQL they now
lock the session's row alone (`Store.session_write`); a write that reads the session
(`session_get` inside `write()`) locks that row too, so a read-then-write of a session
never crosses a claim. On SQLite every write still waits for any other: these run on
PostgreSQL only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace

import pytest

from freshline.context import Channel
from freshline.session import SessionManager
from freshline.session.engine import Deliveries
from tests.conftest import StoreBackend, Workspace, in_thread

pytestmark = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)

WAIT_S = 10.0  # far beyond a claim's time on a loaded machine; reached only when blocked
BLOCKED_S = 0.5  # how long a claim that must wait is watched waiting


@pytest.fixture
def engine(ws: Workspace, backend: StoreBackend) -> Iterator[tuple[Deliveries, str]]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        engine = Deliveries(manager)
        session = manager.new("p", channel=Channel.MCP).id
        yield engine, session
    finally:
        manager.close()


def test_a_delivery_and_its_acknowledgement_do_not_wait_for_a_flush(
    engine: tuple[Deliveries, str],
) -> None:
    """While another connection holds the workspace's write lock (a flush), a session's
    delivery is stored and acknowledged."""
    deliveries, session = engine
    held, release = threading.Event(), threading.Event()

    def flushing() -> None:
        with deliveries.store.write():
            held.set()
            release.wait(WAIT_S)

    flush, _ = in_thread(flushing)
    assert held.wait(WAIT_S)
    try:
        def deliver() -> int | None:
            issued = deliveries.issue(session, Channel.MCP, flush=False)
            assert issued is not None
            return deliveries.acknowledge(session, issued.token).cursor

        worker, out = in_thread(deliver)
        worker.join(WAIT_S)
        assert not worker.is_alive(), "the delivery waited for the flush"
        assert out and isinstance(out[0], int), out
    finally:
        release.set()
        flush.join(WAIT_S)


def test_a_write_that_read_the_session_holds_off_its_acknowledgement(
    engine: tuple[Deliveries, str],
) -> None:
    """A write transaction that read the session (to write it back) keeps the session's
    claims waiting until it ends, and both its write and the claim hold afterwards."""
    deliveries, session = engine
    store = deliveries.store
    issued = deliveries.issue(session, Channel.MCP, flush=False)
    assert issued is not None
    read, release = threading.Event(), threading.Event()

    def retitle() -> None:
        with store.write():
            s = store.session_get(session)
            read.set()
            release.wait(WAIT_S)
            store.session_put(replace(s, title="renamed"))

    writer, _ = in_thread(retitle)
    assert read.wait(WAIT_S)
    claim, out = in_thread(lambda: deliveries.acknowledge(session, issued.token).cursor)
    claim.join(BLOCKED_S)
    blocked = claim.is_alive()
    release.set()
    writer.join(WAIT_S)
    claim.join(WAIT_S)
    assert blocked, "the acknowledgement did not wait for the write that read its session"
    after = store.session_get(session)
    assert (after.title, after.cursor) == ("renamed", issued.covers)
    assert out == [issued.covers]
