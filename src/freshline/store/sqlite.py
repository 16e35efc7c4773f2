"""The embedded backend: one SQLite file in WAL mode with a busy timeout.

Each thread gets its own connection (sqlite3 connections are not shared across threads).
Writers run inside `write()`, which opens the transaction with `BEGIN IMMEDIATE` so that
two processes never interleave a read-then-write: the second waits (up to the busy
timeout) instead of failing later.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from freshline.errors import StoreError
from freshline.store.db import Database
from freshline.store.schema import MIGRATIONS, check_version, statements

DB_NAME = "freshline.db"
BUSY_TIMEOUT_MS = 30_000
_SQLITE_FULL = 13  # "database or disk is full" (the primary result code)
_SQLITE_IOERR = 10  # "disk I/O error"
_NEARLY_FULL = 64 * 1024  # bytes free below which an I/O error is taken for a full disk


class SQLiteDatabase(Database):
    """Per-thread SQLite connections to one database file, migrated on first open."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self._local = threading.local()
        self._migrated = False

    @property
    def conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        try:
            # Its own folder, never the ones above: a workspace deleted under a running
            # watcher is not made again, with an empty store in it.
            self.path.parent.mkdir(exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Switching to WAL needs a moment alone with the file; once the file is in WAL
            # (it stays so) do not ask again, or opening fails while a long flush writes.
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                _to_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
            if not self._migrated:
                self._migrate(conn)
                self._migrated = True
        except sqlite3.Error as exc:
            raise self.failure(exc, "cannot open the store") from exc
        return conn

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        check_version(self.location, version)
        if version == len(MIGRATIONS):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the lock.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, (_name, sql) in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in statements(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            _roll_back(conn)
            raise

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (`BEGIN IMMEDIATE`), committed on success, rolled back on error.

        A failure of SQLite itself becomes a StoreError saying what happened (`no space
        left on device while writing …`); nothing of the transaction is kept.
        """
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.failure(exc, "cannot start a write") from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _roll_back(conn)
            raise self.failure(exc) from exc
        except BaseException:
            _roll_back(conn)
            raise

    def failure(self, exc: sqlite3.Error, doing: str = "") -> StoreError:
        """A one-line StoreError for an error SQLite raised on this store."""
        cause = self._cause(exc)
        if cause:
            return StoreError(f"{cause} while writing the store {self.path}")
        return StoreError(f"{self.path}: {doing + ': ' if doing else ''}{exc}")

    def _cause(self, exc: sqlite3.Error) -> str | None:
        # SQLite says SQLITE_FULL for a full database file, but only "disk I/O error" when
        # growing its shared-memory or WAL file fails: then the file system and the file
        # size limit tell what stopped the write.
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code == _SQLITE_FULL:
            return "no space left on device"
        if code != _SQLITE_IOERR:
            return None
        try:
            fs = os.statvfs(self.path.parent)
        except OSError:
            return None
        if fs.f_bavail * fs.f_frsize < _NEARLY_FULL:
            return "no space left on device"
        if resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY:
            return "disk I/O error (a file size limit, ulimit -f, is set)"
        return None

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every read inside it sees one snapshot (WAL)."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def data_version(self) -> int:
        """A number that changes whenever another connection commits (SQLite's own)."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def schema_version(self) -> int:
        """`PRAGMA user_version`: how many migrations ran."""
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def tables(self) -> list[str]:
        """Every table of the file, by name."""
        rows = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " ORDER BY name"
        )
        return [r[0] for r in rows]

    def columns(self, table: str) -> list[str]:
        """`PRAGMA table_info`'s names."""
        return [r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")]

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database and truncate it to nothing (best
        effort: a reader in another process may hold it back)."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def copied(self) -> None:
        """Nothing to do: a row id continues after the largest one."""

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None


def _roll_back(conn: sqlite3.Connection) -> None:
    """Roll back what is left of a failed transaction. SQLite may have rolled it back
    itself (a full disk does that), and a failing rollback must not hide the first error."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _to_wal(conn: sqlite3.Connection) -> None:
    """Switch a new store to WAL. Two processes switching at once may each hold the read
    lock the other waits for: SQLite then answers "locked" at once, without waiting
    (seen: three first commands of a fresh workspace, one failed), so try again."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)
