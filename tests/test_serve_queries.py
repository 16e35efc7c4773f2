"""What one steady-state round of `freshline serve` asks the store (issue 30's load goal):
a client's `project_updates` then `acknowledge`, each behind its request's sign-in, on
PostgreSQL with the servers' watcher running. The count is pinned so that repeated reads
of one session or project row cannot creep back in: each costs a round trip to the store
and CPU on both sides, on every call of every client."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from freshline.interfaces.mcp.service import FreshlineService
from freshline.interfaces.server.credentials import Credentials
from freshline.session import users
from freshline.store import Store
from freshline.store import postgres as pg
from freshline.store.location import ENV_VAR as STORE_URL
from freshline.tracker.hints import watcher_alive
from tests.conftest import Workspace, serving, wait_for
from tests.pgserver import PgServer

# Statements one round runs in the calling thread (the watcher's own are not counted).
# Before issue 30's cuts: 2, 30 and 9 (the session row read four times a round, the
# projects' states six, the meta table twice, snapshots of the log where one statement
# answers, a token looked up before it was stored).
SIGN_IN = 1  # the users and their grants, in one read (each request signs in: 25 a round)
UPDATES = 16  # the session and its owner; the flush it leads; the log; the delivery stored
ACKNOWLEDGE = 7  # the session and its owner; the token claimed in one transaction


@dataclass
class Statements:
    """The statements this thread ran on PostgreSQL, by their first words."""

    seen: Counter[str]

    def take(self) -> Counter[str]:
        """What ran since the last take."""
        taken = self.seen.copy()
        self.seen.clear()
        return taken


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Statements:
    counted = Statements(Counter())
    mine = threading.get_ident()
    execute, executemany = pg.PgConnection.execute, pg.PgConnection.executemany

    def note(sql: str) -> None:
        if threading.get_ident() == mine:
            counted.seen[" ".join(sql.split())[:90]] += 1

    def counting(self: pg.PgConnection, sql: str, parameters: Any = (), /) -> Any:
        note(sql)
        return execute(self, sql, parameters)

    def counting_many(self: pg.PgConnection, sql: str, parameters: Any, /) -> None:
        note(sql)
        executemany(self, sql, parameters)

    monkeypatch.setattr(pg.PgConnection, "execute", counting)
    monkeypatch.setattr(pg.PgConnection, "executemany", counting_many)
    return counted


@pytest.fixture
def served(ws: Workspace, pg_server: PgServer,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FreshlineService, str, Store]]:
    monkeypatch.setenv(STORE_URL, pg_server.new_schema())
    ws.write("notes/a.md", "# A\n")
    config = ws.configure({"p": {"include": ["notes"]}})
    store = Store(ws.root / ".freshline", config.store_url)
    token = users.add(store, config, "ann", ["p"])
    assert token is not None
    signed = Credentials(store)(token).viewer
    assert signed is not None
    service = FreshlineService(config, viewer=lambda: signed)
    try:
        with serving() as running:  # the service's watcher keeps the flushes hinted
            running.workspaces.watch(ws.root)
            wait_for(lambda: watcher_alive(store), "the watcher")
            yield service, token, store
    finally:
        service.close()
        store.close()


def test_a_steady_round_reads_each_row_once(
    ws: Workspace, served: tuple[FreshlineService, str, Store], statements: Statements
) -> None:
    service, token, store = served
    sign_in = Credentials(store)
    session = service.open_session("p").session
    for n in range(3):  # the manifest, then two rounds of one new note each
        if n:  # the watcher logs it first, as it does most changes under load
            logged = service.manager.tracker.epoch("p") + 1
            ws.write(f"notes/n{n}.md", f"{n}\n")
            wait_for(lambda: service.manager.tracker.epoch("p") == logged,  # noqa: B023
                     "the watcher's flush")
        statements.take()
        sign_in(token)
        signed = statements.take()
        delivery = service.project_updates(session)
        updates = statements.take()
        service.acknowledge(session, str(delivery.token))
        acknowledged = statements.take()
        assert delivery.blocks is not None and (not n or f"notes/n{n}.md" in delivery.blocks)
    shown = f"project_updates ran {dict(updates)}; acknowledge {dict(acknowledged)}"
    counted = (signed.total(), updates.total(), acknowledged.total())
    assert counted == (SIGN_IN, UPDATES, ACKNOWLEDGE), shown
