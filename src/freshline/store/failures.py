"""Failed sign-ins per client address (`freshline serve`), shared by every process.

A row is one failure: the address it came from (the limiter's key) and when (wall-clock
seconds, the one clock all processes share). Rows older than the limiter's window are
deleted as new ones arrive. Single statements, each committing on its own: a failure
needs no write lock, and two processes counting at once may each let one more through.
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

    def failure_add(self, address: str, at: float, forget_before: float) -> None:
        """Record a failure of `address` at `at`; forget every failure before
        `forget_before`."""
        conn = self.db.conn
        conn.execute("DELETE FROM auth_failures WHERE at < ?", (forget_before,))
        conn.execute("INSERT INTO auth_failures (address, at) VALUES (?, ?)", (address, at))
