"""The deliveries table: blocks handed to an agent, by delivery token, until taken.

A channel that cannot know at once whether the agent took its blocks (an MCP client
acknowledges later, perhaps through another server process; a hook learns it from the
agent's transcript on its next call) stores each delivery under a short token. Whoever
acknowledges the token, in whatever process, applies what the delivery staged to the
session (`staged`, JSON the session layer writes and reads). Tokens are the primary key,
so they are valid across processes; `delivery_claim` settles one only while it is still
outstanding (a compare-and-set), so each is acknowledged once.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from freshline.store.db import Database

KEEP_SETTLED = 20  # settled deliveries kept per session (acknowledging one again is a no-op)


class DeliveryState(StrEnum):
    """Where a delivery is in its life."""

    OUTSTANDING = "outstanding"  # handed over; not known to be taken yet
    ACKNOWLEDGED = "acknowledged"  # taken: what it staged was applied to the session
    SUPERSEDED = "superseded"  # never taken: a later delivery carries its changes again


class Acknowledgement(StrEnum):
    """How a delivery is known to be taken: the closed set of channels' acknowledgement
    rules (`session.engine.RULES`), and how each stored delivery was taken."""

    BACKEND = "backend"  # the agent's backend accepted the prompt (chat, send, ACP)
    TOKEN = "token"  # the client acknowledged its token explicitly (MCP)
    TRANSCRIPT = "transcript"  # its token was seen in the client's transcript (hooks)
    PRINTED = "printed"  # printed (or returned) = delivered: no proof can exist


@dataclass(frozen=True)
class DeliveryRecord:
    """One delivery as stored."""

    token: str
    session: str
    channel: str  # the `Channel` it went out on
    created_at: float
    covers: int  # the epoch its blocks bring the agent up to
    staged: dict[str, Any]  # what acknowledging applies to the session (session layer)
    state: DeliveryState = DeliveryState.OUTSTANDING
    basis: str | None = None  # the outstanding delivery it was built on, if any
    manifest: bool = False  # whether its blocks carried the manifest
    detail: dict[str, Any] = field(default_factory=dict)  # channel facts (a transcript, …)
    settled_at: float | None = None
    how: Acknowledgement | None = None
    note: str | None = None  # why it was acknowledged that way, in words


_COLUMNS = (
    "token, session, channel, created_at, covers, staged, state, basis, manifest, detail,"
    " settled_at, how, note"
)


def _record(row: tuple[Any, ...]) -> DeliveryRecord:
    token, session, channel, created, covers, staged, state, basis, manifest, detail = row[:10]
    settled_at, how, note = row[10:]
    return DeliveryRecord(
        token=token,
        session=session,
        channel=channel,
        created_at=created,
        covers=covers,
        staged=json.loads(staged),
        state=DeliveryState(state),
        basis=basis,
        manifest=bool(manifest),
        detail=json.loads(detail),
        settled_at=settled_at,
        how=Acknowledgement(how) if how else None,
        note=note,
    )


class DeliveryTable:
    """Reads and writes of the `deliveries` table."""

    db: Database

    def delivery_put(self, d: DeliveryRecord) -> bool:
        """Insert a new delivery (joins the current transaction if there is one); False
        when a delivery has its token already (nothing is written)."""
        sql = (f"INSERT INTO deliveries ({_COLUMNS}) VALUES ({', '.join('?' * 13)})"
               " ON CONFLICT (token) DO NOTHING RETURNING token")
        row = (
            d.token, d.session, d.channel, d.created_at, d.covers,
            json.dumps(d.staged, sort_keys=True), d.state.value, d.basis, int(d.manifest),
            json.dumps(d.detail, sort_keys=True), d.settled_at,
            d.how.value if d.how else None, d.note,
        )
        conn = self.db.conn
        if conn.in_transaction:
            return conn.execute(sql, row).fetchone() is not None
        with self.db.write() as tx:
            return tx.execute(sql, row).fetchone() is not None

    def delivery_get(self, token: str) -> DeliveryRecord | None:
        """One delivery by its token, if the store has it."""
        row = self.db.conn.execute(
            f"SELECT {_COLUMNS} FROM deliveries WHERE token = ?", (token,)
        ).fetchone()
        return _record(row) if row else None

    def deliveries_of(
        self, session: str, state: DeliveryState | None = None
    ) -> list[DeliveryRecord]:
        """A session's deliveries (in one state), oldest first."""
        sql = f"SELECT {_COLUMNS} FROM deliveries WHERE session = ?"
        args: tuple[str, ...] = (session,)
        if state is not None:
            sql, args = sql + " AND state = ?", (session, state.value)
        rows = self.db.conn.execute(sql + " ORDER BY created_at, token", args)
        return [_record(r) for r in rows]

    def delivery_settle(
        self,
        token: str,
        state: DeliveryState,
        how: Acknowledgement | None = None,
        note: str | None = None,
    ) -> None:
        """Mark a delivery acknowledged or superseded (joins the current transaction)."""
        self.db.execute_write(
            "UPDATE deliveries SET state = ?, settled_at = ?, how = ?, note = ? WHERE token = ?",
            (state.value, time.time(), how.value if how else None, note, token),
        )

    def delivery_claim(
        self, token: str, session: str, how: Acknowledgement, note: str | None = None
    ) -> bool:
        """Mark a delivery of `session` acknowledged, only if it is still outstanding (a
        compare-and-set; joins the current transaction). False when it was not."""
        row = self.db.conn.execute(
            "UPDATE deliveries SET state = ?, settled_at = ?, how = ?, note = ?"
            " WHERE token = ? AND session = ? AND state = ? RETURNING token",
            (DeliveryState.ACKNOWLEDGED.value, time.time(), how.value, note, token, session,
             DeliveryState.OUTSTANDING.value),
        ).fetchone()
        return row is not None

    def delivery_detail(self, token: str, detail: dict[str, Any]) -> None:
        """Replace a delivery's channel facts (joins the current transaction)."""
        self.db.execute_write(
            "UPDATE deliveries SET detail = ? WHERE token = ?",
            (json.dumps(detail, sort_keys=True), token),
        )

    def deliveries_prune(self, session: str, keep: int = KEEP_SETTLED) -> None:
        """Forget a session's settled deliveries but the `keep` latest (call inside
        `write()`)."""
        self.db.conn.execute(
            "DELETE FROM deliveries WHERE session = ? AND state != ? AND token NOT IN"
            " (SELECT token FROM deliveries WHERE session = ? AND state != ?"
            "  ORDER BY created_at DESC, token DESC LIMIT ?)",
            (session, DeliveryState.OUTSTANDING.value, session,
             DeliveryState.OUTSTANDING.value, keep),
        )
