"""Watcher hints and small key/value facts (heartbeat, last full scan)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from freshline.store.db import Database, decode_path, encode_path, upsert

_PUT = upsert("meta", ["key", "value"], ["key"])


def runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """The runs of consecutive integers among `numbers`, as (first, last) pairs in order:
    together they hold exactly `numbers` (pure)."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


@dataclass(frozen=True)
class Hints:
    """The hints pending at one moment: their paths, and the rows that hold them."""

    paths: list[str]
    rows: tuple[int, ...]


class MetaTable:
    """Reads and writes of the `hints` and `meta` tables."""

    db: Database

    def hints_add(self, paths: Iterable[str]) -> None:
        """Record paths a watcher saw change (its own short transaction). It does not
        wait for the store's write lock (PostgreSQL): a flush takes only the hints it
        read (`hints_take`), so one added meanwhile waits for the next, and a watcher
        answers a flush's cookie without queueing behind other flushes."""
        rows = [(encode_path(p),) for p in paths]
        if rows:
            with self.db.write_rows() as conn:
                conn.executemany("INSERT INTO hints (path) VALUES (?)", rows)

    def hints_peek(self) -> list[str]:
        """Every pending hint, left in place (a flush scans them before taking the lock)."""
        return self.hints_pending().paths

    def hints_pending(self) -> Hints:
        """Every pending hint and the rows holding them, left in place."""
        rows = self.db.conn.execute("SELECT id, path FROM hints ORDER BY id").fetchall()
        return Hints(sorted({decode_path(r[1]) for r in rows}), tuple(r[0] for r in rows))

    def hints_take(self) -> list[str]:
        """Remove and return every pending hint (call inside `write()`)."""
        conn = self.db.conn
        paths = sorted({decode_path(r[0]) for r in conn.execute("SELECT path FROM hints")})
        conn.execute("DELETE FROM hints")
        return paths

    def hints_drop(self, rows: Iterable[int]) -> None:
        """Remove the hints of `rows` (`Hints.rows`: those a flush read and covered;
        call inside `write()`): a statement per run of consecutive rows, however many
        hints a bulk change left."""
        self.db.conn.executemany("DELETE FROM hints WHERE id BETWEEN ? AND ?", runs(rows))

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
