"""The database behind a store: one interface, two backends (SQLite, PostgreSQL).

The store's tables (`files.py`, `log.py`, …) keep one body of queries and run them on
`db.conn`, a connection of this thread, with SQLite's dialect; the PostgreSQL backend
translates it (`dialect.py`). Writers run inside `write()`: one write transaction at a
time per store, so a read-then-write never interleaves with another writer's (SQLite's
`BEGIN IMMEDIATE`, PostgreSQL's advisory lock keyed by the workspace's schema); readers
are never blocked. Statements outside a transaction commit on their own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol


def encode_path(path: str) -> bytes:
    """A workspace path as stored: UTF-8, surrogate escapes kept as raw bytes."""
    return path.encode("utf-8", "surrogateescape")


def decode_path(raw: bytes) -> str:
    """The inverse of `encode_path`."""
    return bytes(raw).decode("utf-8", "surrogateescape")


def upsert(
    table: str, columns: Iterable[str], key: Iterable[str], defaulted: Iterable[str] = ()
) -> str:
    """`INSERT … ON CONFLICT (key) DO UPDATE` of every other column: the portable form of
    SQLite's `INSERT OR REPLACE` (both backends read it). The `defaulted` columns are not
    bound: inserted or updated, they take their default."""
    names, keys = list(columns), list(key)
    sets = ", ".join(f"{c} = excluded.{c}" for c in [*names, *defaulted] if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
        f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"
    )


class Rows(Protocol):
    """What a statement returns: rows as tuples."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """One connection as the store's tables use it (sqlite3's shape)."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Any = (), /) -> Rows: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any: ...


class Database(ABC):
    """Per-thread connections to one store, migrated on first open."""

    location: str  # where the store is, safe to print (a file, or a URL without password)

    @property
    @abstractmethod
    def conn(self) -> Connection:
        """This thread's connection (opened, and the schema migrated, on first use)."""

    @abstractmethod
    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction, committed on success and rolled back on error; one at a time
        per store."""

    def write_rows(self) -> AbstractContextManager[Connection]:
        """A write transaction that serializes only on the rows it locks (`for_update`):
        for writes that touch no index (a session's deliveries, a watcher's hints: a flush
        takes only the hints it read). Where the whole store is locked by any write
        (SQLite), it is `write()`."""
        return self.write()

    @abstractmethod
    def read(self) -> AbstractContextManager[Connection]:
        """A read transaction: every read inside it sees one snapshot."""

    @abstractmethod
    def data_version(self) -> int:
        """A number that changes whenever another connection commits a write."""

    @abstractmethod
    def schema_version(self) -> int:
        """How many migrations the store has applied."""

    @abstractmethod
    def tables(self) -> list[str]:
        """The store's tables, by name (its own bookkeeping left out)."""

    @abstractmethod
    def columns(self, table: str) -> list[str]:
        """A table's columns, in their order."""

    @abstractmethod
    def close(self) -> None:
        """Close this thread's connection."""

    @property
    def for_update(self) -> str:
        """The clause that locks the rows a write transaction reads ("" where the whole
        store is locked anyway)."""
        return ""

    def execute_write(self, sql: str, args: tuple[object, ...]) -> None:
        """Run one write statement inside the current transaction, or in its own."""
        conn = self.conn
        if conn.in_transaction:
            conn.execute(sql, args)
        else:
            with self.write() as tx:
                tx.execute(sql, args)

    @abstractmethod
    def checkpoint(self) -> None:
        """Give back space the database keeps for its own log (best effort)."""

    @abstractmethod
    def copied(self) -> None:
        """After rows were copied in with their ids: make new ids follow them."""
