"""The delivery engine: one state machine for every channel (DESIGN section 7).

    issue ─► record ─► take evidence ─► acknowledge (a compare-and-set: claims.py)
                              └───────► supersede (the next delivery tells it again)

A channel brings two things: its budget (`[delivery]` per `Channel`) and its
acknowledgement rule, one of a closed set (`RULES`, `store.Acknowledgement`):

    BACKEND     the agent's backend accepted the prompt: chat and send (the model answered),
                the ACP proxy (the agent's first output). Known in the issuing process.
    TOKEN       the client acknowledges the token explicitly: MCP over stdio or HTTP, in
                any server process of the workspace.
    TRANSCRIPT  the token is seen in the client's transcript: hooks, on a later call
                (`settle`, with the client's `evidence.TranscriptFormat`).
    PRINTED     printed = delivered, where no proof can exist: a hook whose client names
                no transcript or keeps no hook output in it, MCP's `catch_up` prompt.

Deliveries acknowledged later (TOKEN, TRANSCRIPT) are stored under a fresh token written
into each block's opening tag (`store.deliveries`), with what accepting them applies to
the session (`Staged`); whoever learns that the agent took one, in whatever process,
acknowledges it once. Until then the cursor stays and the next delivery tells the same
changes again with their epochs: a TOKEN channel's new delivery supersedes the ones
outstanding, a TRANSCRIPT channel's builds on the chain still in flight (`basis`) and says
only what it did not. Issuing re-checks under the store's lock that the cursor it
prepared from is still the session's, and acknowledging compares it again, so two
deliveries built from one cursor never both count.

A session is delivered to only by the channel that opened it (`owners.py`).

    engine = Deliveries(manager)
    issued = engine.issue(session, Channel.MCP, meter)     # None: nothing to tell
    ...hand `issued.blocks` to the agent...
    engine.acknowledge(session, issued.token)              # once it is known taken
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from freshline.context import Channel, Meter
from freshline.errors import UsageError
from freshline.session.claims import Outcome, claim_token
from freshline.session.evidence import (
    Moment,
    Verdict,
    Witness,
    read_evidence,
    size_of,
    stage,
    verdict,
)
from freshline.session.manager import SessionManager
from freshline.session.turn import PreparedTurn, Staged
from freshline.store import Acknowledgement, DeliveryRecord, DeliveryState, SessionRecord

if TYPE_CHECKING:  # git loads only for sessions with a conversation
    from freshline.conversation.events import Rewind

TOKEN_BYTES = 5  # 10 hex digits: short in a block's tag, unique enough per workspace
ISSUE_TRIES = 5  # prepares of one delivery while other processes keep moving the cursor

RULES = {
    Channel.CHAT: Acknowledgement.BACKEND,
    Channel.SEND: Acknowledgement.BACKEND,
    Channel.ACP: Acknowledgement.BACKEND,
    Channel.MCP: Acknowledgement.TOKEN,
    Channel.HOOK: Acknowledgement.TRANSCRIPT,
}
UNREADABLE = "no readable transcript at {path}: acknowledged when printed"
NO_HOOK_OUTPUT = ("the transcript at {path} records no hook output at all: acknowledged "
                  "when printed")


def new_token() -> str:
    """A fresh delivery token."""
    # `secrets.token_hex`, without importing `secrets` (it loads `random`: the hook's start-up).
    return os.urandom(TOKEN_BYTES).hex()


@dataclass(frozen=True)
class Issued:
    """A delivery handed over: its blocks and the token that acknowledges them."""

    token: str  # "" on a BACKEND channel: it is claimed in process, never by token
    blocks: str
    covers: int  # the epoch the blocks bring the agent up to
    turn: PreparedTurn
    record: DeliveryRecord | None  # stored (TOKEN, TRANSCRIPT): acknowledged later

    @property
    def converting(self) -> bool:
        """Whether the blocks announced documents as still converting."""
        return bool(self.turn.staged.pending)


class Deliveries:
    """The delivery engine over one workspace's session manager."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        self.store = manager.store

    # -- issue ---------------------------------------------------------------------------

    def issue(
        self,
        session_id: str,
        channel: Channel,
        meter: Meter | None = None,
        limit: int | None = None,
        witness: Witness | None = None,
        flush: bool = True,
        known: SessionRecord | None = None,
        rewinds: Sequence[Rewind] = (),
    ) -> Issued | None:
        """The session's pending blocks for `channel` (its budget, at most `limit`
        characters, as `meter` counts them), recorded as its rule needs; None when there
        is nothing to tell (the cursor then passes over epochs that had nothing for the
        agent). A TRANSCRIPT channel builds on its deliveries still in flight (`settle`
        decided the others) and notes its `witness`; without a transcript its blocks are
        acknowledged as printed. `flush` and `known` as in `SessionManager.prepare` (the
        first prepare only: a cursor moved since `known` was read is caught on storing,
        and the next prepare reads the session afresh). `rewinds`: the rewinds of its
        conversation to tell (a checkpoint session's, recorded since its last prompt).

        UsageError when another channel opened the session, or it is closed."""
        rule = RULES[channel]
        for attempt in range(ISSUE_TRIES):
            basis = self.outstanding(session_id) if rule is Acknowledgement.TRANSCRIPT else []
            token = new_token() if rule is not Acknowledgement.BACKEND else ""
            turn = self.manager.prepare(
                session_id, "", conversation=False, channel=channel, meter=meter,
                token=token or None, after=[Staged.from_json(d.staged) for d in basis],
                flush=flush and attempt == 0, limit=limit, known=known if attempt == 0 else None,
                rewinds=rewinds,
            )
            blocks = turn.blocks
            if blocks is None:
                if not basis:
                    self._pass_over(turn)
                return None
            if rule is Acknowledgement.BACKEND:
                return Issued(token, blocks, turn.covers, turn, None)
            record = self._record(turn, token, channel, basis, witness)
            if self._stored(record, turn, basis):
                issued = Issued(token, blocks, turn.covers, turn, record)
                if witness is not None and witness.blind is not None:
                    note = f"{witness.blind}: acknowledged when printed"
                    self.acknowledge(session_id, token, Acknowledgement.PRINTED, note)
                return issued
        raise UsageError(f"session '{session_id}' moves faster than it can be delivered to; "
                         "ask again")

    @staticmethod
    def _pass_over(turn: PreparedTurn) -> None:
        """Move the cursor over epochs that had nothing to tell (the agent's own writes,
        say), so the next call does not weigh them again. Nothing was delivered: no turn
        is counted. (With deliveries in flight the turn was prepared as if they were
        taken: it waits.)"""
        if turn.covers != turn.session.cursor:
            turn.accept()

    @staticmethod
    def _record(
        turn: PreparedTurn,
        token: str,
        channel: Channel,
        basis: list[DeliveryRecord],
        witness: Witness | None,
    ) -> DeliveryRecord:
        detail: dict[str, Any] = {}
        if witness is not None:
            path = witness.transcript
            detail = {"moment": witness.moment.value, "offset": size_of(path),
                      "transcript": str(path) if path else None}
        return DeliveryRecord(
            token=token, session=turn.session.id, channel=channel.value,
            created_at=time.time(), covers=turn.covers, staged=turn.staged.to_json(),
            basis=basis[-1].token if basis else None, manifest=turn.manifest is not None,
            detail=detail,
        )

    def _stored(
        self, record: DeliveryRecord, turn: PreparedTurn, basis: list[DeliveryRecord]
    ) -> bool:
        """Store the delivery if the cursor it was prepared from (that of the chain it
        builds on) is still the session's (False: another delivery was acknowledged
        meanwhile, or one has its token; prepare again). Without a basis it supersedes the
        session's outstanding deliveries."""
        origin = Staged.from_json(basis[0].staged).origin if basis else turn.staged.origin
        store = self.store
        with store.session_write(record.session) as locked:
            if locked.cursor != origin:
                return False
            if not basis:
                for old in store.deliveries_of(record.session, DeliveryState.OUTSTANDING):
                    store.delivery_settle(old.token, DeliveryState.SUPERSEDED)
            if not store.delivery_put(record):  # 40 random bits met twice: prepare again
                return False
            store.deliveries_prune(record.session)
        return True

    # -- acknowledge, supersede ----------------------------------------------------------

    def acknowledge(
        self,
        session_id: str,
        token: str,
        how: Acknowledgement = Acknowledgement.TOKEN,
        note: str | None = None,
    ) -> SessionRecord:
        """The agent took the blocks of `token` (`how` it is known, `note` why in words):
        apply what they staged to the session; its cursor moves to the epoch they covered.
        Acknowledging a token again changes nothing.

        UsageError for a token this session never had, one superseded by a later
        delivery (or built on a cursor that moved since: it is superseded now), or one
        whose basis is not acknowledged yet."""
        found, s = claim_token(self.store, session_id, token, how, note)
        if found in (Outcome.TAKEN, Outcome.ALREADY):
            return s
        if found is Outcome.UNKNOWN:
            raise UsageError(f"unknown delivery token '{token}' for session '{session_id}'; "
                             "ask for the updates again")
        if found is Outcome.WAITING:
            raise UsageError(f"delivery '{token}' builds on one not taken yet")
        raise UsageError(f"delivery token '{token}' was superseded by a later delivery of "
                         f"session '{session_id}'; ask for the updates again")

    @staticmethod
    def accept(issued: Issued) -> None:
        """A BACKEND channel's agent took the blocks (in this process): claim them."""
        issued.turn.accept()

    def supersede(self, session_id: str, tokens: tuple[str, ...] = ()) -> None:
        """Give up on deliveries (default: every outstanding one of the session): their
        changes are told again by the next delivery."""
        with self.store.session_write(session_id):
            for d in self.store.deliveries_of(session_id, DeliveryState.OUTSTANDING):
                if not tokens or d.token in tokens:
                    self.store.delivery_settle(d.token, DeliveryState.SUPERSEDED)

    def lost_context(self, session_id: str, compacted: bool = False) -> SessionRecord:
        """The agent lost what it was told (it compacted or cleared its conversation):
        whatever was handed over is gone with it, and the manifest comes again (without
        the closed-for-a-while note). A compaction summarized the conversation, and the
        summary may have dropped what the last block told (it went into the very request
        that compacted, or just before): those changes are told again with the manifest,
        from where that block began."""
        back = self._retold_from(session_id) if compacted else None
        self.supersede(session_id)
        s = self.manager.resume(session_id, convert=False, closed=False)
        if back is None or (s.cursor is not None and back >= s.cursor):
            return s
        with self.store.session_write(session_id) as locked:
            s = replace(locked, cursor=back)
            self.store.session_put(s)
        return s

    def _retold_from(self, session_id: str) -> int | None:
        """The cursor the last delivery the agent was given began from (outstanding ones
        included), or None when it was given none."""
        given = [*self.store.deliveries_of(session_id, DeliveryState.ACKNOWLEDGED),
                 *self.outstanding(session_id)]
        if not given:
            return None
        last = max(given, key=lambda d: d.created_at)
        first = min((d for d in given if d.created_at >= _chain_start(given, last)),
                    key=lambda d: d.created_at)
        staged = Staged.from_json(first.staged)
        return staged.origin if staged.origin is not None else staged.since

    def outstanding(self, session_id: str) -> list[DeliveryRecord]:
        """The session's deliveries not known to be taken yet, oldest first."""
        return self.store.deliveries_of(session_id, DeliveryState.OUTSTANDING)

    def last_acknowledged(self, session_id: str) -> DeliveryRecord | None:
        """The session's latest acknowledged delivery (how it was taken tells the
        channel's acknowledgement rule), if any."""
        taken = self.store.deliveries_of(session_id, DeliveryState.ACKNOWLEDGED)
        return max(taken, key=lambda d: d.settled_at or 0.0) if taken else None

    # -- evidence ------------------------------------------------------------------------

    def settle(self, session_id: str, witness: Witness) -> list[DeliveryRecord]:
        """Decide the session's outstanding deliveries (one chain, oldest first) from the
        client's transcript: acknowledge the ones found, give up from the first missing
        one on (the next delivery tells it all again), and return those still in flight
        (on a prompt, each goes out with it)."""
        chain = self.outstanding(session_id)
        if not chain:
            return []
        start = min(_offset(d) for d in chain)
        evidence = read_evidence(witness.transcript, start, [d.token for d in chain],
                                 witness.format)
        for i, d in enumerate(chain):
            where = stage(_moment(d), bool(d.detail.get("prompted")), witness.moment)
            fate = verdict(d.token in evidence.found, evidence.answered_after(_offset(d)),
                           where, evidence.proves)
            if fate is Verdict.IN_FLIGHT:
                return self._prompted(chain[i:], witness.moment)
            if fate is Verdict.MISSING:
                self.supersede(session_id)
                return []
            how, note = Acknowledgement.TRANSCRIPT, None
            if fate is Verdict.UNREADABLE:
                how = Acknowledgement.PRINTED
                words = NO_HOOK_OUTPUT if evidence.readable else UNREADABLE
                note = words.format(path=witness.transcript)
            self.acknowledge(session_id, d.token, how, note)
        return []

    def _prompted(self, chain: list[DeliveryRecord], now: Moment) -> list[DeliveryRecord]:
        """The chain still in flight; on a prompt, each of its deliveries goes out with it."""
        if now is not Moment.PROMPT:
            return chain
        with self.store.session_write(chain[0].session):
            for d in chain:
                self.store.delivery_detail(d.token, {**d.detail, "prompted": True})
        return [replace(d, detail={**d.detail, "prompted": True}) for d in chain]


def _chain_start(given: Sequence[DeliveryRecord], last: DeliveryRecord) -> float:
    """When the chain of deliveries `last` builds on began (a hook's delivery builds on
    the ones still in flight: `basis`)."""
    by_token = {d.token: d for d in given}
    first = last
    while first.basis is not None and first.basis in by_token:
        first = by_token[first.basis]
    return first.created_at


def _offset(d: DeliveryRecord) -> int:
    return int(d.detail.get("offset", 0))


def _moment(d: DeliveryRecord) -> Moment:
    """Where a delivery was printed (a prompt's, when the record does not say)."""
    try:
        return Moment(str(d.detail.get("moment")))
    except ValueError:
        return Moment.PROMPT

