"""A prepared turn: the wire prompt and everything that changes only once it is accepted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from freshline.context import UpdatesInput
from freshline.session.ledger import TurnLedger
from freshline.store import Change, SessionRecord, SessionState

if TYPE_CHECKING:  # git loads only for a turn that records one (a hook's never does)
    from freshline.conversation import Event, PendingTurn


@dataclass
class Staged:
    """Session changes applied by `accept()`, never before."""

    since: int  # the epoch the updates were computed from
    cursor: int  # the epoch the prompt covered
    pending: set[str]
    failures: dict[str, str]
    origin: int | None = None  # the session's cursor it was built on (set by `prepare`)
    manifest: tuple[str, int, str] | None = None  # a rebuilt manifest: text, epoch, key
    turn: int = 0  # the session's turn this delivery counts as (0: it carried nothing)
    told: UpdatesInput | None = None  # what the updates were made from, as data (for people)

    def to_json(self) -> dict[str, Any]:
        """The staged changes as JSON-able data (a stored delivery keeps them). `told` is
        left out: it is for a person watching the turn in the process that prepared it, and
        acknowledging a delivery never needs it."""
        return {
            "since": self.since,
            "cursor": self.cursor,
            "origin": self.origin,
            "turn": self.turn,
            "pending": sorted(self.pending),
            "failures": dict(sorted(self.failures.items())),
            "manifest": list(self.manifest) if self.manifest else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Staged:
        """The inverse of `to_json`."""
        manifest, origin = data.get("manifest"), data.get("origin", data["since"])
        return cls(
            since=int(data["since"]),
            cursor=int(data["cursor"]),
            origin=None if origin is None else int(origin),
            pending=set(data["pending"]),
            failures=dict(data["failures"]),
            turn=int(data["turn"]),
            manifest=(str(manifest[0]), int(manifest[1]), str(manifest[2])) if manifest else None,
        )


def applied(s: SessionRecord, staged: Staged) -> SessionRecord:
    """The session once the agent took a delivery that staged `staged` (pure; the claim
    checked that the session's cursor is still `staged.origin`, `claims.claim`).

    The covered epoch is taken as is, even when lower (a project whose log was reset
    answers `compacted` from a cursor beyond its epoch); the turns delivered never go back.
    A closed session stays closed: a late acknowledgement moves its cursor only.
    """
    s = replace(
        s,
        state=SessionState.CLOSED if s.state is SessionState.CLOSED else SessionState.ACTIVE,
        cursor=staged.cursor,
        turns=max(s.turns, staged.turn),
        needs_manifest=False,
        resumed=False,
        pending_docs=sorted(staged.pending),
        announced_failures=dict(sorted(staged.failures.items())),
    )
    if staged.manifest is not None:
        text, epoch, key = staged.manifest
        s = replace(s, manifest=text, manifest_epoch=epoch, dirty_key=key)
    return s


@dataclass
class PreparedTurn:
    """What `prepare()` built. Send `wire_prompt`, then `record()` and `accept()`."""

    session: SessionRecord
    message: str
    manifest: str | None  # the manifest block, on a first turn or after resume
    updates: str | None  # the updates block, when the cursor was behind
    held: str | None  # why the send waited (a landing whose project went dirty)
    fanout: bool
    staged: Staged
    conversation: PendingTurn | None = None
    _accept: Callable[[PreparedTurn], None] | None = field(default=None, repr=False)
    accepted: bool = False
    head: str | None = None  # the conversation head after `record()`
    number: int = 1  # the session's turn this is (its ledger entries carry it)
    ledger: TurnLedger | None = None  # what the turn's tools read and wrote, stored on accept
    listed: frozenset[str] = frozenset()  # the paths the updates block lists one by one

    def told(self) -> list[Change]:
        """The path changes the updates block lists one by one (its structured form)."""
        return [c for c in self.staged.told.changes if c.path in self.listed] \
            if self.staged.told else []

    @property
    def wire_prompt(self) -> str:
        """Exactly what the model receives: blocks first, then the message."""
        parts = [b for b in (self.manifest, self.updates) if b]
        return "\n\n".join([*parts, self.message])

    @property
    def blocks(self) -> str | None:
        """The manifest and updates blocks alone (no message), as delivered; None when
        there is nothing to tell."""
        return "\n\n".join(b for b in (self.manifest, self.updates) if b) or None

    @property
    def covers(self) -> int:
        """The epoch this prompt brings the agent up to."""
        return self.staged.cursor

    def record(self, events: Sequence[Event]) -> str | None:
        """Write the human turn and its events to the conversation (compare-and-swap)."""
        if self.conversation is None:
            return None
        from freshline.conversation import commit_turn

        wire = self.wire_prompt if self.wire_prompt != self.message else None
        self.head = commit_turn(replace(self.conversation, wire=wire), events)
        return self.head

    def abandon(self) -> None:
        """Undo what preparing did to an isolated worktree, when the turn fails before
        `record()`: nothing is recorded, so nothing stays half-written on disk either."""
        if self.conversation is not None and self.head is None:
            from freshline.conversation import abandon_turn

            abandon_turn(self.conversation)

    def accept(self) -> None:
        """Call once the backend accepted the prompt: advance the cursor, apply the sets.

        A fan-out turn (one prompt to several agents) never advances anything.
        """
        if self.fanout or self.accepted:
            return
        assert self._accept is not None
        self._accept(self)
        self.accepted = True
