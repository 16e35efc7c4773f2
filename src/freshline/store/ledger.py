"""The read ledger: per session, what its agent last read and last wrote, path by path.

One row per (session, path, kind): the git blob id of the content the agent read (or its
tool wrote), the session's turn, a per-session sequence number saying which came last,
and the time, which orders the writes of different sessions. A blob of `""` records that
the agent's tool deleted the file. Rows are only ever replaced by newer ones, so the table
holds at most two rows per path a session touched.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from freshline.store.db import Database, decode_path, encode_path, upsert

_CHUNK = 500  # paths per `IN (...)` query: far below SQLite's variable limit


class LedgerKind(StrEnum):
    """What the agent did with a path."""

    READ = "read"  # it saw the content: a read, a search hit, another agent's Read
    WRITE = "write"  # its tool wrote the content (or deleted the file: blob "")


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger row: the agent of `session` last read (or wrote) `blob` at `path`."""

    session: str
    path: str  # workspace-relative (an isolated session's: relative to its worktree)
    kind: LedgerKind
    blob: str  # git blob id of the content; "" when the agent's tool deleted the file
    turn: int  # the session's turn it happened in (1 is the first)
    seq: int = 0  # order within the session: a larger seq is a later entry (set when stored)
    at: float = 0.0  # when it was stored (orders the writes of different sessions)


@dataclass(frozen=True)
class LedgerRow:
    """A ledger entry beside the index's blob of its path now (None: not in the index)."""

    entry: LedgerEntry
    indexed: str | None


_COLUMNS = "session, path, kind, blob, turn, seq, at"
_PUT = upsert("ledger", _COLUMNS.split(", "), ["session", "path", "kind"])


def _entry(row: tuple[Any, ...]) -> LedgerEntry:
    session, path, kind, blob, turn, seq, at = row
    return LedgerEntry(session, decode_path(path), LedgerKind(kind), blob, turn, seq, at)


def _chunks(paths: Collection[str]) -> Iterator[list[bytes]]:
    raw = sorted({encode_path(p) for p in paths})
    for i in range(0, len(raw), _CHUNK):
        yield raw[i : i + _CHUNK]


class LedgerTable:
    """Reads and writes of the `ledger` table."""

    db: Database

    def ledger_put(self, entries: Iterable[LedgerEntry]) -> None:
        """Store entries in order, each replacing its session's older entry of the same
        path and kind (joins the current transaction if there is one)."""
        batch = list(entries)
        if not batch:
            return
        conn = self.db.conn
        if not conn.in_transaction:
            with self.db.write():
                self.ledger_put(batch)
            return
        now = time.time()
        sessions = {e.session for e in batch}
        last = {
            s: conn.execute(
                "SELECT coalesce(max(seq), 0) FROM ledger WHERE session = ?", (s,)
            ).fetchone()[0]
            for s in sessions
        }
        rows = []
        for e in batch:
            last[e.session] += 1
            rows.append((e.session, encode_path(e.path), e.kind.value, e.blob, e.turn,
                         last[e.session], now))
        conn.executemany(_PUT, rows)

    def ledger_forget(self, session: str, keep: Collection[int]) -> None:
        """Drop one session's entries of every turn not in `keep` (a rewind took those
        turns out of what its agent remembers)."""
        kept = set(keep)
        with self.db.write():
            turns = [t for (t,) in self.db.conn.execute(
                "SELECT DISTINCT turn FROM ledger WHERE session = ?", (session,))]
            for turn in (t for t in turns if t not in kept):
                self.db.conn.execute(
                    "DELETE FROM ledger WHERE session = ? AND turn = ?", (session, turn))

    def ledger_of(self, session: str) -> list[LedgerEntry]:
        """Every entry of one session, oldest first."""
        rows = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM ledger WHERE session = ? ORDER BY seq", (session,)
        )
        return [_entry(r) for r in rows]

    def ledger_last(self, session: str, path: str) -> LedgerEntry | None:
        """The session's latest entry on `path`, read or write, if any."""
        row = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM ledger WHERE session = ? AND path = ?"
            " ORDER BY seq DESC LIMIT 1",
            (session, encode_path(path)),
        ).fetchone()
        return _entry(row) if row else None

    def ledger_paths(self, session: str) -> set[str]:
        """The paths one session's agent read or wrote."""
        rows = self.db.conn.execute("SELECT path FROM ledger WHERE session = ?", (session,))
        return {decode_path(r[0]) for r in rows}

    def ledger_changed(self, session: str, project: str, since: int) -> set[str]:
        """The paths the session read or wrote that `project`'s change log names (as a path
        or an old path) after epoch `since`: a cost that follows the changes, not the
        ledger."""
        rows = self.db.conn.execute(
            "SELECT DISTINCT l.path FROM changes c JOIN ledger l"
            " ON l.session = ? AND (l.path = c.path OR l.path = c.old_path)"
            " WHERE c.project = ? AND c.epoch > ?",
            (session, project, since),
        )
        return {decode_path(r[0]) for r in rows}

    def ledger_on(self, paths: Collection[str]) -> list[LedgerRow]:
        """Every session's entries on these paths, each with the index's blob of its path."""
        out: list[LedgerRow] = []
        conn = self.db.conn
        columns = ", ".join(f"l.{c}" for c in _COLUMNS.split(", "))
        for chunk in _chunks(paths):
            rows = conn.execute(
                f"SELECT {columns}, f.blob FROM ledger l LEFT JOIN files f ON f.path = l.path"
                f" WHERE l.path IN ({', '.join('?' for _ in chunk)})",
                chunk,
            )
            out += [LedgerRow(_entry(r[:-1]), r[-1]) for r in rows]
        return out
