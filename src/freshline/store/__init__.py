"""The store: the only module that speaks SQL (SQLite under `.freshline/`)."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from freshline.store.db import Database
from freshline.store.deliveries import (
    Acknowledgement,
    DeliveryRecord,
    DeliveryState,
    DeliveryTable,
)
from freshline.store.files import IndexTable
from freshline.store.ledger import LedgerEntry, LedgerKind, LedgerRow, LedgerTable
from freshline.store.log import LogTable, ProjectState
from freshline.store.meta import MetaTable
from freshline.store.records import Change, ChangeKind, FileKind, IndexEntry, LoggedChange
from freshline.store.sessions import SessionRecord, SessionState, SessionTable
from freshline.store.users import UserRecord, UserTable

__all__ = [
    "Acknowledgement",
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
]


class Store(
    IndexTable, LedgerTable, LogTable, MetaTable, SessionTable, DeliveryTable, UserTable
):
    """freshline's persistent state for one workspace."""

    def __init__(self, data_dir: Path) -> None:
        self.db = Database(data_dir)

    @property
    def data_dir(self) -> Path:
        """The directory holding the database (`.freshline/`)."""
        return self.db.path.parent

    def write(self) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction: `with store.write(): ...`."""
        return self.db.write()

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read transaction: `with store.read(): ...` reads one consistent snapshot."""
        return self.db.read()

    def data_version(self) -> int:
        """Changes whenever another connection commits: a cheap "did anyone write?"."""
        return self.db.data_version()

    def checkpoint(self) -> None:
        """Truncate the write-ahead log (best effort; `freshline gc` calls it)."""
        self.db.checkpoint()

    def close(self) -> None:
        """Close this thread's connection."""
        self.db.close()
