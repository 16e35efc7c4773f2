"""The store: the only package that speaks SQL. One interface (`Store`), two backends:
SQLite under `.freshline/` (the embedded default) and PostgreSQL (teams), chosen by
`[store] url` in freshline.toml or FRESHLINE_STORE_URL (see `location.py`)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from freshline.store.db import Connection, Database
from freshline.store.deliveries import (
    Acknowledgement,
    DeliveryRecord,
    DeliveryState,
    DeliveryTable,
)
from freshline.store.failures import FailureTable
from freshline.store.files import IndexTable
from freshline.store.ledger import LedgerEntry, LedgerKind, LedgerRow, LedgerTable
from freshline.store.location import Backend, Location, parse
from freshline.store.log import LogTable, ProjectState
from freshline.store.meta import MetaTable
from freshline.store.pool import DEFAULT_SIZE as DEFAULT_POOL_SIZE
from freshline.store.records import Change, ChangeKind, FileKind, IndexEntry, LoggedChange
from freshline.store.sessions import SessionRecord, SessionState, SessionTable
from freshline.store.sqlite import DB_NAME, SQLiteDatabase
from freshline.store.users import UserRecord, UserTable
from freshline.store.withheld import WithheldRow, WithheldTable

__all__ = [
    "Acknowledgement",
    "Backend",
    "Change",
    "ChangeKind",
    "DeliveryRecord",
    "DeliveryState",
    "FileKind",
    "IndexEntry",
    "LedgerEntry",
    "LedgerKind",
    "LedgerRow",
    "LoggedChange",
    "ProjectState",
    "SessionRecord",
    "SessionState",
    "Store",
    "UserRecord",
    "WithheldRow",
    "open_database",
]


def open_database(
    data_dir: Path, url: str | None = None, pool_size: int = DEFAULT_POOL_SIZE
) -> Database:
    """The database a store URL names (None or "": `data_dir`/freshline.db); a relative
    `sqlite:PATH` is taken from `data_dir`'s parent, the workspace root. PostgreSQL's
    connections come from this process's pool of `pool_size` for the URL."""
    if not url:
        return SQLiteDatabase(Path(data_dir) / DB_NAME)
    where = parse(url, Path(data_dir).parent)
    return database_at(where, pool_size)


def database_at(where: Location, pool_size: int = DEFAULT_POOL_SIZE) -> Database:
    """The database at a parsed location (psycopg is imported only for PostgreSQL)."""
    if where.backend is Backend.SQLITE:
        return SQLiteDatabase(Path(where.target))
    from freshline.store.postgres import PostgresDatabase

    return PostgresDatabase(where.target, pool_size)


class Store(
    IndexTable, LedgerTable, LogTable, MetaTable, SessionTable, DeliveryTable, UserTable,
    FailureTable,
    WithheldTable,
):
    """freshline's persistent state for one workspace."""

    def __init__(
        self, data_dir: Path, url: str | None = None, pool_size: int = DEFAULT_POOL_SIZE
    ) -> None:
        self._data_dir = Path(data_dir)
        self.db = open_database(self._data_dir, url, pool_size)

    @property
    def data_dir(self) -> Path:
        """The workspace's private directory (`.freshline/`): files beside the database."""
        return self._data_dir

    @property
    def location(self) -> str:
        """Where the database is, safe to print (a path, or a URL without password)."""
        return self.db.location

    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction: `with store.write(): ...` (one at a time per store)."""
        return self.db.write()

    def read(self) -> AbstractContextManager[Connection]:
        """A read transaction: `with store.read(): ...` reads one consistent snapshot."""
        return self.db.read()

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap "did anyone write?"."""
        return self.db.data_version()

    def checkpoint(self) -> None:
        """Give back the write-ahead log's space (best effort; `freshline gc` calls it)."""
        self.db.checkpoint()

    def close(self) -> None:
        """Close this thread's connection (SQLite; PostgreSQL's stay in the process's
        pool)."""
        self.db.close()
