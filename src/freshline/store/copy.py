"""Copying a whole store to another backend (`freshline store migrate --to …`).

Every table is copied row for row (ids included) inside one snapshot of the source and
one write transaction of the target, then each table's count is compared: a mismatch, or
a target that already holds rows, leaves the target as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshline.errors import StoreError, UsageError
from freshline.store.db import Database


@dataclass(frozen=True)
class Copied:
    """One table as copied: its name and how many rows both stores now hold."""

    table: str
    rows: int


def copy_store(source: Database, target: Database) -> list[Copied]:
    """Copy every table of `source` into the empty `target` (both at this freshline's
    schema); the counts per table, verified. UsageError when the target holds rows."""
    tables = source.tables()
    missing = sorted(set(tables) - set(target.tables()))
    if missing:
        raise StoreError(f"{target.location}: has no table {', '.join(missing)}")
    full = [t for t in tables if _count(target, t)]
    if full:
        raise UsageError(f"{target.location} is not empty (rows in {', '.join(full)}): "
                         "copy into a new database or schema")
    done = []
    with source.read(), target.write():
        for table in tables:
            columns = source.columns(table)
            names = ", ".join(columns)
            rows = source.conn.execute(f"SELECT {names} FROM {table}")
            target.conn.executemany(
                f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' for _ in columns)})",
                rows,
            )
            expected, got = _count(source, table), _count(target, table)
            if expected != got:
                raise StoreError(f"{target.location}: {table} has {got} rows after the copy, "
                                 f"the source {expected}; nothing was kept")
            done.append(Copied(table, got))
        target.copied()
    return done


def _count(db: Database, table: str) -> int:
    return int(db.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
