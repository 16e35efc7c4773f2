"""Failed sign-ins per client address (`freshline serve`), shared by every process.

A row is one failure: the address it came from (the limiter's key) and when (wall-clock
seconds, the one clock all processes share). Rows older than the limiter's window are
deleted as new ones arrive. A failure is counted only while its address has fewer than
the limit, read and recorded in one write transaction (`failure_try`): concurrent guesses,
in one process or many, never count past the limit (seen, issue 47: reading, then
recording let 29 to 37 a minute through where 10 were meant).
"""

from __future__ import annotations

from freshline.store.db import Database


class FailureTable:
    """Reads and writes of `auth_failures`."""

    db: Database

    def failures_of(self, address: str, since: float) -> list[float]:
        """When `address` failed after `since`, oldest first."""
        rows = self.db.conn.execute(
            "SELECT at FROM auth_failures WHERE address = ? AND at > ? ORDER BY at",
            (address, since))
        return [float(at) for at, in rows]

    def failure_try(self, address: str, at: float, since: float, limit: int) -> list[float]:
        """When `address` failed after `since`, oldest first; when that is fewer than
        `limit` times, a failure at `at` is recorded too (and every failure before `since`
        forgotten), in the same transaction."""
        with self.db.write() as conn:
            found = [float(when) for when, in conn.execute(
                "SELECT at FROM auth_failures WHERE address = ? AND at > ? ORDER BY at",
                (address, since))]
            if len(found) < limit:
                conn.execute("DELETE FROM auth_failures WHERE at <= ?", (since,))
                conn.execute("INSERT INTO auth_failures (address, at) VALUES (?, ?)",
                             (address, at))
        return found
