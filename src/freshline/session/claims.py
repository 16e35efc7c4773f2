"""Acknowledging a delivery: a compare-and-set in one store transaction.

Every channel's acknowledgement ends here: a turn the backend accepted (`claim_turn`,
from `PreparedTurn.accept`), a stored delivery acknowledged by its token however that
was learned (`claim_token`: an MCP client's call, a token found in a transcript, blocks
printed with nothing to prove them). A delivery was built on the session's cursor as it
was then (`Staged.origin`); it counts only if, inside one write transaction, the cursor
is still that and, for a stored delivery, its token is still outstanding. So of two
deliveries built from one cursor, by two threads or two processes, on SQLite or
PostgreSQL, at most one is ever acknowledged; the other is superseded and its changes
are told again from the cursor that moved. A token's claim holds only the session's row
(`Store.session_write`), not the workspace's write lock: it never waits for a flush, and
every write that reads the session waits for it.

`outcome` is the decision, pure; the claims run it against the store.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from freshline.errors import StoreError
from freshline.session.turn import Staged, applied
from freshline.store import Acknowledgement, DeliveryState, SessionRecord, Store


class Outcome(StrEnum):
    """What acknowledging a delivery came to."""

    TAKEN = "taken"  # applied now: the cursor moved to what it covered
    ALREADY = "already"  # acknowledged before: nothing changes
    STALE = "stale"  # built on a cursor that moved since: superseded, told again
    SUPERSEDED = "superseded"  # given up on earlier: a later delivery tells it again
    UNKNOWN = "unknown"  # no such delivery of this session
    WAITING = "waiting"  # it builds on a delivery not acknowledged yet


def outcome(
    cursor: int | None,
    origin: int | None,
    state: DeliveryState | None = DeliveryState.OUTSTANDING,
    basis_taken: bool = True,
) -> Outcome:
    """The fate of acknowledging a delivery built on cursor `origin` while the session's
    cursor is `cursor` (pure). `state` None: the store has no such delivery of the
    session; `basis_taken`: the delivery it builds on, if any, was acknowledged."""
    if state is None:
        return Outcome.UNKNOWN
    if state is DeliveryState.ACKNOWLEDGED:
        return Outcome.ALREADY
    if state is DeliveryState.SUPERSEDED:
        return Outcome.SUPERSEDED
    if not basis_taken:
        return Outcome.WAITING
    return Outcome.TAKEN if cursor == origin else Outcome.STALE


Finish = Callable[[SessionRecord], SessionRecord]


def claim_turn(
    store: Store, session_id: str, staged: Staged, finish: Finish | None = None
) -> tuple[Outcome, SessionRecord]:
    """Acknowledge a delivery the caller holds (not stored: its backend accepted it in
    this process). `finish`, called inside the transaction once the claim holds, returns
    the record to write with what the turn changes besides (its title, its live tree) and
    may write the turn's own rows (its ledger entries). The outcome, and the session as
    it is afterwards."""
    with store.write():
        s = store.session_get(session_id)
        found = outcome(s.cursor, staged.origin)
        if found is not Outcome.TAKEN:
            return found, s
        return found, _take(store, s, staged, finish)


def claim_token(
    store: Store,
    session_id: str,
    token: str,
    how: Acknowledgement,
    note: str | None = None,
) -> tuple[Outcome, SessionRecord]:
    """Acknowledge the stored delivery `token` of the session (`how` it was known taken,
    `note` why, in words). A delivery built on a cursor that moved is superseded. The
    outcome, and the session as it is afterwards."""
    with store.session_write(session_id) as s:
        d = store.delivery_get(token)
        if d is None or d.session != session_id:
            return Outcome.UNKNOWN, s
        basis = store.delivery_get(d.basis) if d.basis else None
        taken = basis is None or basis.state is DeliveryState.ACKNOWLEDGED
        staged = Staged.from_json(d.staged)
        found = outcome(s.cursor, staged.origin, d.state, taken)
        if found is Outcome.STALE:
            store.delivery_settle(token, DeliveryState.SUPERSEDED)
        if found is not Outcome.TAKEN:
            return found, s
        after = _take(store, s, staged)
        if not store.delivery_claim(token, session_id, how, note):
            raise StoreError(f"delivery '{token}' was settled while its session was locked")
        return found, after


def _take(
    store: Store, s: SessionRecord, staged: Staged, finish: Finish | None = None
) -> SessionRecord:
    """Write the session as the delivery leaves it, by compare-and-set on its cursor.
    With the session's row locked the read before is current, so the swap cannot lose;
    it is still the statement's own condition on either backend."""
    after = applied(s, staged)
    after = finish(after) if finish is not None else after
    if not store.session_swap(after, staged.origin):
        raise StoreError(f"session '{s.id}' moved while it was locked")
    return after
