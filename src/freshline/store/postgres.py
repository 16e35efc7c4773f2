"""The team backend: PostgreSQL through psycopg 3, one schema per workspace.

Each thread gets its own connection, in autocommit: a statement outside a transaction
commits on its own, as with SQLite. `write()` opens a transaction and takes a
transaction-level advisory lock keyed by the workspace's schema, so write transactions
run one at a time (a flush's read-then-write never interleaves with another process's)
while readers never wait; the lock dies with the transaction, or with the connection of
a process that was killed mid-flush. `read()` is a REPEATABLE READ snapshot.

The schema version and a write counter (SQLite's `user_version` and `data_version`) live
in the backend's own table, `freshline_schema`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from freshline.errors import StoreError
from freshline.store.db import Database, Rows
from freshline.store.dialect import postgres
from freshline.store.location import masked
from freshline.store.schema import MIGRATIONS, check_version, statements

BOOKKEEPING = "freshline_schema"
CONNECT_TIMEOUT_S = 10
_MIGRATE_LOCK = 0x6672_6D69  # the second advisory key migrations serialize on
_WRITE_LOCK = 0x6672_7772  # the second advisory key writes serialize on
_KEY = "hashtext('freshline:' || current_schema())"  # the workspace's first advisory key


def _param(value: object) -> object:
    # SQLite stores a bool as 0/1 in an INTEGER column; PostgreSQL wants the integer.
    return int(value) if isinstance(value, bool) else value


def _params(row: Any) -> Any:
    return tuple(_param(v) for v in row) if row else None


class PgConnection:
    """A psycopg connection that reads the store's SQLite dialect; every error a one-line
    StoreError naming the store (password masked)."""

    def __init__(self, raw: psycopg.Connection[Any], location: str) -> None:
        self.raw = raw
        self.location = location
        self.in_transaction = False
        self.writing = False  # inside `write()` (not a read-only snapshot)

    def execute(self, sql: str, parameters: Any = (), /) -> Rows:
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


def failure(location: str, exc: BaseException, doing: str = "") -> StoreError:
    """A one-line StoreError for what PostgreSQL (or reaching it) said; the password of
    the URL never shows."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    said = lines[0] if lines else type(exc).__name__
    return StoreError(f"{location}: {doing + ': ' if doing else ''}{said}")


class PostgresDatabase(Database):
    """Per-thread PostgreSQL connections to one workspace's schema, migrated on first open."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = masked(url)
        self._local = threading.local()
        self._migrated = False

    @property
    def conn(self) -> PgConnection:
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is None or conn.raw.closed:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> PgConnection:
        try:
            raw = psycopg.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                application_name="freshline",
            )
        except psycopg.Error as exc:
            raise failure(self.location, exc, "cannot reach the store") from exc
        conn = PgConnection(raw, self.location)
        if conn.execute("SELECT current_schema()").fetchone()[0] is None:
            raw.close()
            raise StoreError(f"{self.location}: no schema to create the store in "
                             "(create it, or name one in the URL's search_path)")
        if not self._migrated:
            self._migrate(conn)
            self._migrated = True
        return conn

    def _migrate(self, conn: PgConnection) -> None:
        with self._transaction(conn, _MIGRATE_LOCK):
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

    @contextmanager
    def _transaction(self, conn: PgConnection, lock: int) -> Iterator[PgConnection]:
        """A transaction holding the workspace's advisory lock `lock` until it ends."""
        if conn.in_transaction:
            raise StoreError(f"{self.location}: a write inside a transaction")
        conn.execute("BEGIN")
        conn.in_transaction = conn.writing = True
        try:
            conn.execute(f"SELECT pg_advisory_xact_lock({_KEY}, {lock})")
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if not conn.raw.closed:
                try:
                    conn.raw.execute("ROLLBACK")
                except psycopg.Error:
                    conn.raw.close()  # a broken connection: the next use opens another
            raise
        finally:
            conn.in_transaction = conn.writing = False

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A write transaction under the workspace's write lock; it bumps the write counter
        (`data_version`) for other connections to see."""
        with self._transaction(self.conn, _WRITE_LOCK) as conn:
            yield conn
            conn.execute(f"UPDATE {BOOKKEEPING} SET generation = generation + 1")

    @contextmanager
    def read(self) -> Iterator[PgConnection]:
        """A read-only REPEATABLE READ transaction: one snapshot, no lock."""
        conn = self.conn
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.in_transaction = True
        try:
            yield conn
        finally:
            conn.in_transaction = False
            if not conn.raw.closed:
                conn.execute("COMMIT")

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
        """Close this thread's connection."""
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.raw.close()
            self._local.conn = None
