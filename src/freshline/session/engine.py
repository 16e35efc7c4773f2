"""Delivery tokens: blocks handed to an agent now, acknowledged later, in any process.

Every channel that cannot accept a turn the moment it delivers (MCP, the Claude Code
hook, later the ACP proxy and the HTTP server) goes through here:

    issued = deliver(manager, session, Channel.MCP, meter)   # None: nothing to tell
    ...hand `issued.blocks` (its opening tags carry `issued.token`) to the agent...
    acknowledge(manager, session, issued.token)              # once it is known taken

A delivery is stored under its token (`store.deliveries`) with what accepting the turn
would apply to the session (`Staged`), so whichever process learns that the agent took
it — another MCP server, the next hook call — acknowledges it, once. Until then the
session's cursor stays where it was and the next delivery carries the same changes
again, with their epochs.

A channel that learns late (the hook finds its token in the agent's transcript only on
its next call) may hand over a new delivery on top of one still in flight: `basis`
names it, and the new blocks say only what the in-flight one did not. Acknowledging a
delivery requires its basis acknowledged first; a basis found missing supersedes every
delivery built on it, and the next delivery tells all of it again.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from freshline.context import Channel, Meter
from freshline.errors import UsageError
from freshline.session.turn import PreparedTurn, Staged, applied
from freshline.store import (
    Acknowledgement,
    DeliveryRecord,
    DeliveryState,
    SessionRecord,
)

if TYPE_CHECKING:  # the manager uses nothing here; callers pass it in
    from freshline.session.manager import SessionManager

TOKEN_BYTES = 5  # 10 hex digits: short in a block's tag, unique enough per workspace


def new_token() -> str:
    """A fresh delivery token."""
    return secrets.token_hex(TOKEN_BYTES)


@dataclass(frozen=True)
class Issued:
    """A stored delivery: the blocks to hand over and the token that acknowledges them."""

    token: str
    blocks: str
    covers: int  # the epoch the blocks bring the agent up to
    record: DeliveryRecord
    turn: PreparedTurn


def deliver(
    manager: SessionManager,
    session_id: str,
    channel: Channel,
    meter: Meter | None = None,
    basis: Sequence[DeliveryRecord] = (),
    detail: dict[str, Any] | None = None,
    flush: bool = True,
) -> Issued | None:
    """Prepare the session's pending blocks for `channel` and store them under a fresh
    token; None when there is nothing to tell (the cursor then passes over the epochs
    that had nothing for the agent).

    `basis` is the chain of deliveries still in flight (oldest first) that the new one
    builds on; without one, every outstanding delivery of the session is superseded (the
    new blocks carry their changes again). `detail` is kept with the delivery for the
    channel that must later decide it (the hook's transcript and offset). `flush` as in
    `SessionManager.prepare`.
    """
    token = new_token()
    while manager.store.delivery_get(token) is not None:  # 40 random bits met twice
        token = new_token()
    after = [Staged.from_json(d.staged) for d in basis]
    turn = manager.prepare(
        session_id, "", conversation=False, channel=channel, meter=meter, token=token,
        after=after, flush=flush,
    )
    blocks = turn.blocks
    if blocks is None:
        if not basis:
            _pass_over(turn)
        return None
    record = DeliveryRecord(
        token=token,
        session=session_id,
        channel=channel.value,
        created_at=time.time(),
        covers=turn.covers,
        staged=turn.staged.to_json(),
        basis=basis[-1].token if basis else None,
        manifest=turn.manifest is not None,
        detail=dict(detail or {}),
    )
    store = manager.store
    with store.write():
        if not basis:
            for old in store.deliveries_of(session_id, DeliveryState.OUTSTANDING):
                store.delivery_settle(old.token, DeliveryState.SUPERSEDED)
        store.delivery_put(record)
        store.deliveries_prune(session_id)
    return Issued(token, blocks, turn.covers, record, turn)


def _pass_over(turn: PreparedTurn) -> None:
    """Move the cursor over epochs that had nothing to tell (the agent's own writes, say),
    so the next call does not weigh them again. Nothing was delivered: no turn is counted.
    (With deliveries in flight the turn was prepared as if they were taken: it waits.)"""
    if turn.covers != turn.session.cursor:
        turn.accept()


def acknowledge(
    manager: SessionManager,
    session_id: str,
    token: str,
    how: Acknowledgement = Acknowledgement.TOKEN,
    note: str | None = None,
) -> SessionRecord:
    """The agent took the blocks of `token`: apply what they staged to the session (its
    cursor moves to the epoch they covered). Acknowledging a token again changes nothing.

    UsageError for a token this session never had, one superseded by a later delivery,
    or one whose basis is not acknowledged yet.
    """
    store = manager.store
    with store.write():
        d = store.delivery_get(token)
        s = manager.get(session_id)
        if d is None or d.session != session_id:
            raise UsageError(
                f"unknown delivery token '{token}' for session '{session_id}'; "
                "ask for the updates again"
            )
        if d.state is DeliveryState.ACKNOWLEDGED:
            return s
        if d.state is DeliveryState.SUPERSEDED:
            raise UsageError(
                f"delivery token '{token}' was superseded by a later delivery of session "
                f"'{session_id}'; ask for the updates again"
            )
        basis = store.delivery_get(d.basis) if d.basis else None
        if basis is not None and basis.state is not DeliveryState.ACKNOWLEDGED:
            raise UsageError(f"delivery '{token}' builds on '{basis.token}', not taken yet")
        s = applied(s, Staged.from_json(d.staged))
        store.session_put(s)
        store.delivery_settle(token, DeliveryState.ACKNOWLEDGED, how, note)
    return s


def supersede(manager: SessionManager, session_id: str, tokens: Sequence[str] = ()) -> None:
    """Give up on deliveries (default: every outstanding one of the session): their
    changes are told again by the next delivery."""
    store = manager.store
    with store.write():
        pending = store.deliveries_of(session_id, DeliveryState.OUTSTANDING)
        for d in pending:
            if not tokens or d.token in tokens:
                store.delivery_settle(d.token, DeliveryState.SUPERSEDED)


def outstanding(manager: SessionManager, session_id: str) -> list[DeliveryRecord]:
    """The session's deliveries not known to be taken yet, oldest first."""
    return manager.store.deliveries_of(session_id, DeliveryState.OUTSTANDING)


def last_acknowledged(manager: SessionManager, session_id: str) -> DeliveryRecord | None:
    """The session's latest acknowledged delivery (how it was taken tells the channel's
    acknowledgement rule), if any."""
    taken = manager.store.deliveries_of(session_id, DeliveryState.ACKNOWLEDGED)
    return max(taken, key=lambda d: d.settled_at or 0.0) if taken else None
