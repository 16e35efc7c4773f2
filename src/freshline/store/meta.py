"""Watcher hints and small key/value facts (heartbeat, last full scan)."""

from __future__ import annotations

from collections.abc import Iterable

from freshline.store.db import Database, decode_path, encode_path, upsert

_PUT = upsert("meta", ["key", "value"], ["key"])


class MetaTable:
    """Reads and writes of the `hints` and `meta` tables."""

    db: Database

    def hints_add(self, paths: Iterable[str]) -> None:
        """Record paths a watcher saw change (its own short transaction)."""
        rows = [(encode_path(p),) for p in paths]
        if rows:
            with self.db.write() as conn:
                conn.executemany("INSERT INTO hints (path) VALUES (?)", rows)

    def hints_peek(self) -> list[str]:
        """Every pending hint, left in place (a flush scans them before taking the lock)."""
        rows = self.db.conn.execute("SELECT path FROM hints")
        return sorted({decode_path(r[0]) for r in rows})

    def hints_take(self) -> list[str]:
        """Remove and return every pending hint (call inside `write()`)."""
        conn = self.db.conn
        paths = sorted({decode_path(r[0]) for r in conn.execute("SELECT path FROM hints")})
        conn.execute("DELETE FROM hints")
        return paths

    def meta_get(self, key: str) -> str | None:
        """A stored fact, if set."""
        row = self.db.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def meta_many(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored facts of `keys` that are set, in one read."""
        wanted = sorted(set(keys))
        rows = self.db.conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' for _ in wanted)})",
            tuple(wanted))
        return {key: value for key, value in rows}

    def meta_set(self, key: str, value: str) -> None:
        """Set a fact (joins the current transaction if there is one)."""
        self.db.execute_write(_PUT, (key, value))
