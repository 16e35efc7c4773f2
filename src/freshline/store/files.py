"""The index table: every file as last scanned."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from freshline.store.db import Database, decode_path, encode_path
from freshline.store.records import FileKind, IndexEntry

_COLUMNS = "path, kind, size, mtime_ns, inode, dev, blob, mode, tags, properties"


def _entry(row: tuple[Any, ...]) -> IndexEntry:
    path, kind, size, mtime_ns, inode, dev, blob, mode, tags, properties = row
    return IndexEntry(
        path=decode_path(path),
        kind=FileKind(kind),
        size=size,
        mtime_ns=mtime_ns,
        inode=inode,
        dev=dev,
        blob=blob,
        mode=mode,
        tags=tuple(json.loads(tags)),
        properties=json.loads(properties),
    )


def _row(e: IndexEntry) -> tuple[Any, ...]:
    return (
        encode_path(e.path),
        e.kind.value,
        e.size,
        e.mtime_ns,
        e.inode,
        e.dev,
        e.blob,
        e.mode,
        json.dumps(list(e.tags)),
        json.dumps(e.properties, sort_keys=True, default=str) if e.properties else "{}",
    )


def _subtree_bounds(prefix: str) -> tuple[bytes, bytes]:
    # Children of `a/b` are the keys in [b"a/b/", b"a/b0"): "0" is the byte after "/".
    raw = encode_path(prefix)
    return raw + b"/", raw + b"0"


class IndexTable:
    """Reads and writes of the `files` table."""

    db: Database

    def index_get(self, path: str) -> IndexEntry | None:
        """The index entry of one path, if any."""
        row = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM files WHERE path = ?", (encode_path(path),)
        ).fetchone()
        return _entry(row) if row else None

    def index_iter(self) -> Iterator[IndexEntry]:
        """Every index entry, in path order."""
        for row in self.db.conn.execute(f"SELECT {_COLUMNS} FROM files ORDER BY path"):
            yield _entry(row)

    def index_under(self, paths: Iterable[str]) -> dict[str, IndexEntry]:
        """The entries at each of `paths` or below it (a path naming a folder)."""
        found: dict[str, IndexEntry] = {}
        conn = self.db.conn
        for path in paths:
            if path in ("", "."):
                return {e.path: e for e in self.index_iter()}
            exact = (encode_path(path),)
            rows = conn.execute(f"SELECT {_COLUMNS} FROM files WHERE path = ?", exact)
            low, high = _subtree_bounds(path)
            subtree = conn.execute(
                f"SELECT {_COLUMNS} FROM files WHERE path >= ? AND path < ?", (low, high)
            )
            for row in [*rows, *subtree]:
                entry = _entry(row)
                found[entry.path] = entry
        return found

    def index_stats(self) -> dict[bytes, tuple[int, int, int]]:
        """Stored path (`encode_path` form) → (size, mtime_ns, inode) for every entry: the
        cheap form a rescan compares, keyed by raw bytes so no row is decoded."""
        rows = self.db.conn.execute("SELECT path, size, mtime_ns, inode FROM files")
        return {p: (s, m, i) for p, s, m, i in rows}

    def index_count(self) -> int:
        """How many files the index holds."""
        return int(self.db.conn.execute("SELECT count(*) FROM files").fetchone()[0])

    def index_put(self, entries: Iterable[IndexEntry]) -> None:
        """Insert or replace entries (call inside `write()`)."""
        self.db.conn.executemany(
            f"INSERT OR REPLACE INTO files ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [_row(e) for e in entries],
        )

    def index_delete(self, paths: Iterable[str]) -> None:
        """Remove entries (call inside `write()`)."""
        self.db.conn.executemany(
            "DELETE FROM files WHERE path = ?", [(encode_path(p),) for p in paths]
        )
