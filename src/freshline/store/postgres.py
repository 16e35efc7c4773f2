"""The team backend: PostgreSQL through psycopg 3, one schema per workspace.

Connections come from a bounded pool (`pool.py`), one per store URL and pool size per
process, shared by every store of that URL and closed at exit (`close_pools`). A
transaction holds one of them from its start to its end; a statement outside a
transaction takes one for itself alone, in autocommit (so it commits on its own, as with
SQLite), and its rows are fetched before the connection goes back. `write()` opens a
transaction and takes a transaction-level advisory lock keyed by the workspace's schema,
so write transactions run one at a time (a flush's read-then-write never interleaves with
another process's) while readers never wait; the lock dies with the transaction, or with
the connection of a process that was killed mid-flush. Writers of one process queue on a
lock of the pool's before they take a connection, so writers waiting for another
process's flush hold one connection, not the whole pool. `read()` is a REPEATABLE READ
snapshot.

The schema version and a write counter (SQLite's `user_version` and `data_version`) live
in the backend's own table, `freshline_schema`.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from freshline.errors import StoreError
from freshline.store.db import Database, Rows
from freshline.store.dialect import postgres
from freshline.store.location import masked
from freshline.store.pool import DEFAULT_SIZE, Pool, PoolClosed, PoolTimeout
from freshline.store.schema import MIGRATIONS, check_version, statements

BOOKKEEPING = "freshline_schema"
CONNECT_TIMEOUT_S = 10
POOL_WAIT_S = 30.0  # how long a caller waits for a free connection of the pool
_MIGRATE_LOCK = 0x6672_6D69  # the second advisory key migrations serialize on
_WRITE_LOCK = 0x6672_7772  # the second advisory key writes serialize on
_KEY = "hashtext('freshline:' || current_schema())"  # the workspace's first advisory key

Raw = psycopg.Connection[Any]


def _param(value: object) -> object:
    # SQLite stores a bool as 0/1 in an INTEGER column; PostgreSQL wants the integer.
    return int(value) if isinstance(value, bool) else value


def _params(row: Any) -> Any:
    return tuple(_param(v) for v in row) if row else None


class PgConnection:
    """A psycopg connection that reads the store's SQLite dialect; every error a one-line
    StoreError naming the store (password masked)."""

    def __init__(self, raw: Raw, location: str) -> None:
        self.raw = raw
        self.location = location

    def execute(self, sql: str, parameters: Any = (), /) -> psycopg.Cursor[Any]:
        """Run one statement; its rows."""
        args = _params(parameters)
        try:
            return self.raw.execute(postgres(sql, args is not None), args)
        except psycopg.Error as exc:
            raise failure(self.location, exc) from exc

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> None:
        """Run one statement for each row of parameters (pipelined)."""
        try:
            with self.raw.cursor() as cur:
                cur.executemany(postgres(sql), (_params(r) or () for r in parameters))
        except psycopg.Error as exc:
            raise failure(self.location, exc) from exc


class Fetched:
    """A statement's rows, fetched whole (its connection is back in the pool)."""

    def __init__(self, rows: list[Any]) -> None:
        self._rows = iter(rows)

    def fetchone(self) -> Any:
        """The next row, or None."""
        return next(self._rows, None)

    def fetchall(self) -> list[Any]:
        """The rows not yet read."""
        return list(self._rows)

    def __iter__(self) -> Iterator[Any]:
        return self._rows


class ThreadConnection:
    """This thread's connection as the store's tables see it (`PostgresDatabase.conn`):
    inside a transaction, the transaction's; outside one, a connection of the pool for
    each statement."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db
        self.tx: PgConnection | None = None  # the transaction's connection
        self.writing = False  # inside `write()` (not a read-only snapshot)

    @property
    def in_transaction(self) -> bool:
        """Whether this thread is inside a transaction of this store."""
        return self.tx is not None

    def execute(self, sql: str, parameters: Any = (), /) -> Rows:
        """Run one statement (in the transaction, else on its own); its rows."""
        if self.tx is not None:
            return self.tx.execute(sql, parameters)
        with self.db.borrow() as conn:
            cur = conn.execute(sql, parameters)
            return Fetched(cur.fetchall() if cur.description is not None else [])

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> None:
        """Run one statement for each row of parameters (in the transaction, else in
        autocommit on one connection)."""
        if self.tx is not None:
            self.tx.executemany(sql, parameters)
            return
        with self.db.borrow() as conn:
            conn.executemany(sql, parameters)


def failure(location: str, exc: BaseException, doing: str = "") -> StoreError:
    """A one-line StoreError for what PostgreSQL (or reaching it) said; the password of
    the URL never shows."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    said = lines[0] if lines else type(exc).__name__
    return StoreError(f"{location}: {doing + ': ' if doing else ''}{said}")


@dataclass
class Shared:
    """What every store of one URL in this process shares: the pool, and the lock its
    writers queue on before they take a connection."""

    pool: Pool[Raw]
    writers: threading.Lock = field(default_factory=threading.Lock)


_pools: dict[tuple[str, int], Shared] = {}
_pools_lock = threading.Lock()


def _open(url: str) -> Raw:
    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                           application_name="freshline")


def _reusable(raw: Raw) -> bool:
    # A connection goes back to the pool only idle: no transaction left open or failed.
    return not raw.closed and raw.info.transaction_status == TransactionStatus.IDLE


def shared(url: str, size: int) -> Shared:
    """The pool of `url` with `size` connections in this process (made on first use)."""
    with _pools_lock:
        found = _pools.get((url, size))
        if found is None:
            found = _pools[(url, size)] = Shared(Pool(partial(_open, url), Raw.close, size))
        return found


def close_pools() -> None:
    """Close every pool of this process: at exit (the test suite also after each test).
    A store used afterwards opens a new pool."""
    with _pools_lock:
        closing = list(_pools.values())
        _pools.clear()
    for each in closing:
        each.pool.close()


atexit.register(close_pools)


@contextmanager
def _begun(conn: PgConnection, begin: str, lock: int | None) -> Iterator[PgConnection]:
    """A transaction on `conn` (holding the workspace's advisory lock `lock` until it
    ends), committed on success and rolled back on error."""
    conn.execute(begin)
    try:
        if lock is not None:
            conn.execute(f"SELECT pg_advisory_xact_lock({_KEY}, {lock})")
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if not conn.raw.closed:
            try:
                conn.raw.execute("ROLLBACK")
            except psycopg.Error:
                conn.raw.close()  # a broken connection: the pool drops it
        raise


class PostgresDatabase(Database):
    """One workspace's schema on PostgreSQL through the process's pool of its URL,
    migrated on first use."""

    def __init__(self, url: str, pool_size: int = DEFAULT_SIZE) -> None:
        self.url = url
        self.pool_size = pool_size
        self.location = masked(url)
        self._local = threading.local()
        self._migrated = False

    @property
    def conn(self) -> ThreadConnection:
        conn: ThreadConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = ThreadConnection(self)
        return conn

    @contextmanager
    def borrow(self) -> Iterator[PgConnection]:
        """A connection of the pool for the block (the schema migrated first), given back
        after it. StoreError when the server cannot be reached, or when no connection
        comes free within POOL_WAIT_S seconds."""
        pool = shared(self.url, self.pool_size).pool
        try:
            raw = pool.take(POOL_WAIT_S)
        except psycopg.Error as exc:
            raise failure(self.location, exc, "cannot reach the store") from exc
        except PoolTimeout:
            raise StoreError(
                f"{self.location}: no free connection after {POOL_WAIT_S:g} s (all "
                f"{self.pool_size} of the pool in use; raise [store] pool_size)") from None
        except PoolClosed:
            raise StoreError(f"{self.location}: the store's pool is closed") from None
        try:
            conn = PgConnection(raw, self.location)
            if not self._migrated:
                self._migrate(conn)
                self._migrated = True
            yield conn
        finally:
            pool.give(raw, _reusable(raw))

    def _migrate(self, conn: PgConnection) -> None:
        if (conn.execute("SELECT current_schema()").fetchone() or (None,))[0] is None:
            raise StoreError(f"{self.location}: no schema to create the store in "
                             "(create it, or name one in the URL's search_path)")
        with _begun(conn, "BEGIN", _MIGRATE_LOCK):
            conn.execute(f"CREATE TABLE IF NOT EXISTS {BOOKKEEPING} (version INTEGER NOT NULL,"
                         " generation INTEGER NOT NULL)")
            row = conn.execute(f"SELECT version FROM {BOOKKEEPING}").fetchone()
            if row is None:
                conn.execute(f"INSERT INTO {BOOKKEEPING} VALUES (0, 0)")
            version = row[0] if row else 0
            check_version(self.location, version)
            for number, (_name, sql) in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements(sql):
                    conn.execute(statement)
                conn.execute(f"UPDATE {BOOKKEEPING} SET version = ?", (number,))

    def _outside(self) -> ThreadConnection:
        """This thread's connection, refused inside a transaction (one at a time)."""
        conn = self.conn
        if conn.in_transaction:
            raise StoreError(f"{self.location}: a transaction inside a transaction")
        return conn

    @contextmanager
    def _transaction(self, mine: ThreadConnection, begin: str,
                     lock: int | None) -> Iterator[ThreadConnection]:
        """A transaction on a connection of the pool, this thread's statements' until it
        ends."""
        with self.borrow() as conn, _begun(conn, begin, lock):
            mine.tx, mine.writing = conn, lock is not None
            try:
                yield mine
            finally:
                mine.tx, mine.writing = None, False

    @contextmanager
    def write(self) -> Iterator[ThreadConnection]:
        """A write transaction under the workspace's write lock; it bumps the write counter
        (`data_version`) for other connections to see."""
        mine = self._outside()
        with shared(self.url, self.pool_size).writers, \
                self._transaction(mine, "BEGIN", _WRITE_LOCK) as conn:
            yield conn
            conn.execute(f"UPDATE {BOOKKEEPING} SET generation = generation + 1")

    @contextmanager
    def write_rows(self) -> Iterator[ThreadConnection]:
        """A write transaction without the workspace's write lock: it waits only for the
        rows it reads `FOR UPDATE` (a session's deliveries and acknowledgements lock the
        session's row first), so it never queues behind a flush. It leaves the write
        counter alone: what it writes is no index or config a flush must re-read (a hint
        is left by a flush that did not read it, for the next)."""
        mine = self._outside()
        with self._transaction(mine, "BEGIN", None) as conn:
            mine.writing = True
            yield conn

    @contextmanager
    def read(self) -> Iterator[ThreadConnection]:
        """A read-only REPEATABLE READ transaction: one snapshot, no lock."""
        mine = self._outside()
        with self._transaction(mine, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                               None) as conn:
            yield conn

    @property
    def for_update(self) -> str:
        """Rows read inside a write are locked: the project's epoch row above all."""
        return " FOR UPDATE" if self.conn.writing else ""

    def data_version(self) -> int:
        """The store's write counter (every write transaction bumps it)."""
        return int(self.conn.execute(f"SELECT generation FROM {BOOKKEEPING}").fetchone()[0])

    def schema_version(self) -> int:
        """How many migrations ran (the bookkeeping table's version)."""
        return int(self.conn.execute(f"SELECT version FROM {BOOKKEEPING}").fetchone()[0])

    def tables(self) -> list[str]:
        """The schema's tables but the bookkeeping one."""
        rows = self.conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = 'BASE TABLE' AND table_name != ?"
            " ORDER BY table_name",
            (BOOKKEEPING,),
        )
        return [r[0] for r in rows]

    def columns(self, table: str) -> list[str]:
        """The table's columns in the current schema, in order."""
        rows = self.conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        )
        return [r[0] for r in rows]

    def checkpoint(self) -> None:
        """Nothing to do: the server recycles its own log."""

    def copied(self) -> None:
        """Identity columns continue after the largest id copied in."""
        conn = self.conn
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND is_identity = 'YES'"
        ).fetchall()
        for table, column in rows:
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                f" coalesce(max({column}), 0) + 1, false) FROM {table}"
            )

    def close(self) -> None:
        """Nothing to close: a thread holds a connection only for a transaction or a
        statement, and the pool's connections serve the process's other stores of this
        URL until exit."""
