"""The index table: every file as last scanned."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from freshline.store.db import Connection, Database, decode_path, encode_path, upsert
from freshline.store.records import UNHASHED, FileKind, IndexEntry, content_key

_COLUMNS = "path, kind, size, mtime_ns, inode, dev, blob, mode, tags, properties"

Stats = dict[bytes, tuple[int, int, int]]
_PUT = upsert("files", [*_COLUMNS.split(", "), "lines"], ["path"])
# A row without a sketch leaves `lines` to its default (NULL) rather than bind None:
# sqlite3 looks for an adapter of each None it binds (an exception made and dropped), a
# third of the cost of a fresh listing's row.
_PUT_UNSKETCHED = upsert("files", _COLUMNS.split(", "), ["path"], defaulted=["lines"])


UNPARSED = "null"  # the tags of a note whose tags and properties were not read

_KINDS = {kind.value: kind for kind in FileKind}  # a dict lookup costs less than the call
_KIND_TEXT = {kind: kind.value for kind in FileKind}  # and less than an enum's `.value`


def _entry(row: tuple[Any, ...], path: str | None = None) -> IndexEntry:
    """The entry a row holds (`path`: its path, already decoded)."""
    raw, kind, size, mtime_ns, inode, dev, blob, mode, tags, properties = row
    parsed = tags != UNPARSED
    return IndexEntry(
        path=decode_path(raw) if path is None else path,
        kind=_KINDS[kind],
        size=size,
        mtime_ns=mtime_ns,
        inode=inode,
        dev=dev,
        blob=blob,
        mode=mode,
        # Most files have neither: a listing of 100k entries skips the decoder's calls.
        tags=tuple(json.loads(tags)) if parsed and tags != "[]" else (),
        properties=json.loads(properties) if properties != "{}" else {},
        parsed=parsed,
    )


def _tags_json(tags: tuple[str, ...]) -> str:
    """`json.dumps(list(tags))`, written directly when no tag needs escaping (the common
    case, and a tenth of the encoder's cost)."""
    joined = '", "'.join(tags)
    if joined.isascii() and joined.isprintable() and "\\" not in joined:
        if joined.count('"') == 2 * (len(tags) - 1):  # only the separators' quotes
            return f'["{joined}"]'
    return json.dumps(list(tags))


def _row(e: IndexEntry) -> tuple[Any, ...]:
    # BLOBs go in as bytearrays: sqlite3 binds a bytearray as it is, while it first asks a
    # bytes object (a subclassable type) whether it adapts itself, at a cost per value.
    return (
        bytearray(encode_path(e.path)),
        _KIND_TEXT[e.kind],
        e.size,
        e.mtime_ns,
        e.inode,
        e.dev,
        e.blob,
        e.mode,
        # Most files have neither: skip the encoder's per-call cost.
        UNPARSED if not e.parsed else _tags_json(e.tags) if e.tags else "[]",
        json.dumps(e.properties, sort_keys=True, default=str) if e.properties else "{}",
    )


def _subtree_bounds(prefix: str) -> tuple[bytes, bytes]:
    # Children of `a/b` are the keys in [b"a/b/", b"a/b0"): "0" is the byte after "/".
    raw = encode_path(prefix)
    return raw + b"/", raw + b"0"


class IndexTable:
    """Reads and writes of the `files` table."""

    db: Database
    # (connection, its data_version, stats) of the last index_stats: see there.
    _stats: tuple[Connection | None, int, Stats] | None = None

    def index_get(self, path: str) -> IndexEntry | None:
        """The index entry of one path, if any."""
        row = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM files WHERE path = ?", (encode_path(path),)
        ).fetchone()
        return _entry(row) if row else None

    def index_iter(self, keep: Callable[[str], bool] | None = None) -> Iterator[IndexEntry]:
        """Every index entry, in path order; with `keep`, only those whose path it keeps
        (asked before the rest of the row is decoded)."""
        rows = self.db.conn.execute(f"SELECT {_COLUMNS} FROM files ORDER BY path")
        if keep is None:
            yield from map(_entry, rows)
            return
        for row in rows:
            path = decode_path(row[0])
            if keep(path):
                yield _entry(row, path)

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

    def index_stats(self) -> Stats:
        """Stored path (`encode_path` form) → (size, mtime_ns, inode) for every entry: the
        cheap form a rescan compares, keyed by raw bytes so no row is decoded.

        Returns a fresh dict. The rows are kept in memory while no other connection has
        committed (`data_version`) and this one has not written the index, so a repeated
        rescan in one process does not load 100k rows again.
        """
        conn = self.db.conn
        version = self.db.data_version()  # before the rows
        cached = self._stats
        if cached is None or cached[0] is not conn or cached[1] != version:
            rows = conn.execute("SELECT path, size, mtime_ns, inode FROM files")
            cached = self._stats = (conn, version, {p: (s, m, i) for p, s, m, i in rows})
        return dict(cached[2])

    def _forget_stats(self) -> None:
        # The write may yet roll back: reload next time rather than patch. The old dict
        # stays until that reload replaces it, so freeing 100k rows does not land on a
        # small flush.
        if self._stats is not None:
            self._stats = (None, 0, self._stats[2])

    def index_unparsed(self) -> list[bytes]:
        """The stored paths (`encode_path` form) of the notes stored unparsed."""
        rows = self.db.conn.execute("SELECT path FROM files WHERE tags = ?", (UNPARSED,))
        return [bytes(path) for path, in rows]

    def index_unhashed(self) -> Stats:
        """Stored path → (size, mtime_ns, inode) of the entries listed but not read yet."""
        rows = self.db.conn.execute(
            "SELECT path, size, mtime_ns, inode FROM files WHERE blob = ?", (UNHASHED,)
        )
        return {bytes(p): (s, m, i) for p, s, m, i in rows}

    def index_empty(self) -> bool:
        """Whether the index holds no entry at all (a workspace never scanned)."""
        return self.db.conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None

    def index_count(self) -> int:
        """How many files the index holds."""
        return int(self.db.conn.execute("SELECT count(*) FROM files").fetchone()[0])

    def index_contents(self, paths: Iterable[str]) -> dict[str, str]:
        """The content (`records.content_key`) indexed at each of `paths` that has an
        entry; a path without one is left out."""
        conn = self.db.conn
        found: dict[str, str] = {}
        for path in paths:
            row = conn.execute(
                "SELECT mode, blob FROM files WHERE path = ?", (encode_path(path),)
            ).fetchone()
            if row:
                found[path] = content_key(int(row[0]), row[1])
        return found

    def index_sketches(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The line sketches stored for `paths` (text files only; see tracker.similarity)."""
        conn = self.db.conn
        found: dict[str, bytes] = {}
        for path in paths:
            row = conn.execute(
                "SELECT lines FROM files WHERE path = ?", (encode_path(path),)
            ).fetchone()
            if row and row[0] is not None:
                found[path] = bytes(row[0])
        return found

    def index_put(
        self, entries: Iterable[IndexEntry], sketches: Mapping[str, bytes] | None = None
    ) -> None:
        """Insert or replace entries, each with its line sketch if `sketches` has one
        (call inside `write()`)."""
        lines = sketches or {}
        written = list(entries)
        if written:
            self._forget_stats()
        conn = self.db.conn  # rows made one at a time: 100k of them at once weigh
        conn.executemany(_PUT, ((*_row(e), bytearray(lines[e.path]))
                                for e in written if e.path in lines))
        conn.executemany(_PUT_UNSKETCHED, (_row(e) for e in written if e.path not in lines))

    def index_delete(self, paths: Iterable[str]) -> None:
        """Remove entries (call inside `write()`)."""
        rows = [(encode_path(p),) for p in paths]
        if rows:
            self._forget_stats()
        self.db.conn.executemany("DELETE FROM files WHERE path = ?", rows)
