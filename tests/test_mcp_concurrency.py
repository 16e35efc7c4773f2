"""The MCP service handles calls concurrently (issue 30): `freshline serve` runs each on a
worker thread, and one slow call must not hold up the others, while deliveries stay
exact: every change acknowledged once per session, whatever the interleaving."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest

from freshline.errors import UsageError
from freshline.interfaces.mcp.service import FreshlineService
from freshline.tracker.hints import Liveness, cookie_dir
from tests.conftest import Workspace
from tests.docgen import write_pdf

NOTE = re.compile(r"notes/(n-\d+)\.md")
UPDATES = re.compile(r"<project_context_updates .*?</project_context_updates>", re.S)


@pytest.fixture
def service(ws: Workspace) -> Iterator[FreshlineService]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}, "docs": {"include": ["docs"]}})
    running = FreshlineService(ws.config())
    try:
        yield running
    finally:
        running.close()


def test_a_long_call_holds_up_no_call_of_another_session(
    ws: Workspace, service: FreshlineService
) -> None:
    session = service.open_session("p").session
    token = service.project_updates(session).token
    assert token is not None
    # converting a thousand pages takes seconds: the manifest of `docs` waits for it
    write_pdf(ws.root / "docs/big.pdf",
              [[f"page {i} line {j} of a long report" for j in range(40)] for i in range(1000)])
    slow = threading.Thread(target=service.project_manifest, args=("docs",))
    slow.start()
    try:
        slow.join(0.5)  # it is converting now
        assert service.acknowledge(session, token).cursor is not None
        assert slow.is_alive(), "the acknowledgement waited for the conversion"
    finally:
        slow.join(120)


def test_threads_delivering_at_once_lose_and_repeat_nothing(
    ws: Workspace, service: FreshlineService
) -> None:
    sessions = [service.open_session("p").session for _ in range(4)]
    for session in sessions:  # the manifest first: what follows comes as changes
        first = service.project_updates(session)
        assert first.token is not None
        service.acknowledge(session, first.token)
    shared = sessions[0]  # two threads take turns on this one, the others one each
    told: dict[str, list[str]] = {s: [] for s in sessions}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def rounds(session: str, count: int) -> None:
        try:
            for _ in range(count):
                delivery = service.project_updates(session)
                if delivery.token is None or delivery.blocks is None:
                    continue
                try:
                    service.acknowledge(session, delivery.token)
                except UsageError:
                    continue  # superseded by the other thread's delivery: told again
                with lock:
                    for block in UPDATES.findall(delivery.blocks):
                        told[session] += NOTE.findall(block)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    written = []
    threads = [threading.Thread(target=rounds, args=(s, 8)) for s in [*sessions, shared]]
    for thread in threads:
        thread.start()
    for i in range(20):
        # whole at once (a flush may run between a file's creation and its first byte,
        # which would rightly announce it created, then modified)
        staged = ws.write(f"staging/n-{i}.md", f"{i}\n")
        staged.replace(ws.root / f"notes/n-{i}.md")
        written.append(f"n-{i}")
    for thread in threads:
        thread.join(300)
    assert not errors, errors
    for session in sessions:  # whatever is left, once more
        rounds(session, 3)
    assert not errors, errors
    for session in sessions:
        assert sorted(told[session]) == sorted(written), session


def test_calls_waiting_for_the_watcher_share_one_cookie_and_flush(
    ws: Workspace, service: FreshlineService
) -> None:
    """Seen (issue 30, load): each call dropped a cookie of its own and then ran its own
    flush, one after another behind the process's flush lock: most of a call's time was
    spent waiting for the others' flushes. Now calls that come while one catches up share
    the next round: six calls at once need at most two cookies (the stand-in watcher here
    answers each one slowly), and each is told of a change made before it."""
    session = service.open_session("p").session
    first = service.project_updates(session)
    assert first.token is not None
    service.acknowledge(session, first.token)
    ws.write("notes/b.md", "# B\n")
    store = service.manager.store
    alive = Liveness(store)  # a watcher holds its lock: the calls ask it to catch up
    assert alive.hold()
    cookies: set[str] = set()
    done = threading.Event()

    def watcher() -> None:
        folder = cookie_dir(ws.root)
        while not done.is_set():
            waiting = list(folder.glob("*")) if folder.exists() else []
            for cookie in waiting:
                cookies.add(cookie.name)
                time.sleep(0.3)  # a busy watcher
                store.hints_add(["notes/b.md"])  # hints before cookies, as a watcher does
                cookie.unlink(missing_ok=True)
            time.sleep(0.01)

    answering = threading.Thread(target=watcher)
    answering.start()
    told: list[str | None] = []
    calls = [threading.Thread(target=lambda: told.append(service.project_updates(session).blocks))
             for _ in range(6)]
    try:
        for call in calls:
            call.start()
        for call in calls:
            call.join(30)
    finally:
        done.set()
        answering.join(10)
    assert len(told) == 6
    assert len(cookies) <= 2, f"{len(cookies)} cookies for 6 calls"
    # each call's delivery (a newer one supersedes the older token) tells the change
    assert all(t is not None and "notes/b.md" in t for t in told), told
