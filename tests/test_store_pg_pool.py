"""The PostgreSQL store's connection pool on a real server: many threads of one process
share `[store] pool_size` connections, stores opened one after another share them too, a
caller that waits too long for one gets a one-line error, and a pool whose connections
the server dropped recovers."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

from freshline.config import load_config
from freshline.errors import ConfigError, StoreError
from freshline.store import Store, postgres
from tests.pgserver import PgServer

THREADS, ROUNDS = 32, 10
# The store's own connections, not the test's (psycopg names no application by default).
OURS = "FROM pg_stat_activity WHERE application_name = 'freshline' AND datname = 'freshline'"


class Sampler:
    """Watches the server's list of freshline's connections while a block runs: the most
    seen at once and every backend seen."""

    def __init__(self, server: PgServer) -> None:
        self.admin = psycopg.connect(server.url(), autocommit=True)
        self.most = 0
        self.backends: set[int] = set()

    def sample(self) -> None:
        pids = [r[0] for r in self.admin.execute(f"SELECT pid {OURS}")]
        self.most = max(self.most, len(pids))
        self.backends.update(pids)

    @contextmanager
    def watching(self) -> Iterator[Sampler]:
        done = threading.Event()

        def loop() -> None:
            while not done.wait(0.002):
                self.sample()

        thread = threading.Thread(target=loop)
        thread.start()
        try:
            yield self
        finally:
            done.set()
            thread.join()
            self.sample()
            self.admin.close()


def test_32_threads_reading_and_writing_hold_at_most_pool_size_connections(
    pg_server: PgServer, tmp_path: Path
) -> None:
    store = Store(tmp_path, pg_server.new_schema(), pool_size=4)
    store.meta_set("start", "")  # migrated before the threads start
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for r in range(ROUNDS):
                store.meta_set(f"k{n}-{r}", str(r))  # a write transaction of its own
                with store.write():
                    store.meta_set(f"w{n}-{r}", "x")  # joins the transaction
                with store.read():
                    assert store.meta_get(f"w{n}-{r}") == "x"
                    store.index_count()
                assert store.meta_get(f"k{n}-{r}") == str(r)  # a statement on its own
                store.data_version()
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            failures.append(exc)

    with Sampler(pg_server).watching() as seen:
        threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not failures, failures[0]
    count = store.db.conn.execute("SELECT count(*) FROM meta").fetchone()[0]
    assert count == 1 + 2 * THREADS * ROUNDS
    assert 1 <= seen.most <= 4 and len(seen.backends) <= 4


def test_stores_opened_and_closed_in_a_loop_share_one_connection(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = pg_server.new_schema()
    with Sampler(pg_server).watching() as seen:
        for n in range(50):
            store = Store(tmp_path, url)
            store.meta_set("n", str(n))
            assert store.meta_get("n") == str(n)
            store.close()
    assert seen.most == 1 and len(seen.backends) == 1


def test_a_caller_waiting_past_the_timeout_gets_one_line(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "POOL_WAIT_S", 0.2)
    store = Store(tmp_path, pg_server.new_schema(), pool_size=1)
    errors: list[StoreError] = []

    def statement() -> None:
        try:
            store.meta_get("k")
        except StoreError as exc:
            errors.append(exc)

    with store.read():  # holds the only connection
        other = threading.Thread(target=statement)
        other.start()
        other.join()
    message = str(errors[0])
    assert "\n" not in message and "no free connection after 0.2 s" in message
    assert "all 1 of the pool in use; raise [store] pool_size" in message
    assert store.meta_get("k") is None  # given back: the next caller gets it


def test_a_transaction_inside_a_transaction_is_refused(
    pg_server: PgServer, tmp_path: Path
) -> None:
    store = Store(tmp_path, pg_server.new_schema())
    with store.read(), pytest.raises(StoreError, match="a transaction inside a transaction"):
        with store.write():
            pass
    with store.write():
        store.meta_set("k", "v")
    assert store.meta_get("k") == "v"


def test_connections_the_server_dropped_are_replaced(
    pg_server: PgServer, tmp_path: Path
) -> None:
    url = pg_server.new_schema()
    store = Store(tmp_path, url)
    with store.read():
        Store(tmp_path, url).meta_get("k")  # a second connection, beside the transaction's
    pool = postgres.shared(store.db.url, postgres.DEFAULT_SIZE).pool
    assert pool.idle == 2
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"SELECT pg_terminate_backend(pid) {OURS}")
    with pytest.raises(StoreError) as info:  # the first to find out
        store.meta_get("k")
    assert "\n" not in str(info.value)
    assert store.meta_get("k") is None  # on a new connection: the idle ones were dropped
    assert pool.opened == 1


@pytest.mark.parametrize(
    ("value", "error"),
    [("0", "must be between 1 and 1000, got 0"), ("1001", "must be between 1 and 1000, got 1001"),
     ('"8"', "expected an integer (connections), got a string"),
     ("true", "expected an integer (connections), got a boolean")],
)
def test_pool_size_is_checked(tmp_path: Path, value: str, error: str) -> None:
    (tmp_path / "freshline.toml").write_text(f"[store]\npool_size = {value}\n")
    with pytest.raises(ConfigError, match=re.escape(f"store.pool_size: {error}")):
        load_config(tmp_path)


def test_pool_size_defaults_to_8_and_reaches_the_tracker_store(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "freshline.toml").write_text("")
    assert load_config(tmp_path).store.pool_size == 8
    (tmp_path / "freshline.toml").write_text("[store]\npool_size = 3\n")
    monkeypatch.setenv("FRESHLINE_STORE_URL", pg_server.new_schema())
    from freshline.tracker import Tracker

    db = Tracker(load_config(tmp_path)).store.db
    assert isinstance(db, postgres.PostgresDatabase) and db.pool_size == 3
