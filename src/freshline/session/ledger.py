"""The read ledger, session side: what each session's agent read and wrote, by content.

Every reader acting for an agent records what it gave the agent: the built-in `read` and
`search` tools, MCP's `read_document`, Claude Code's `Read` seen through a PostToolUse
hook; every writer records what it wrote (the isolated tools `write` and `edit`, Claude
Code's `Write`/`Edit`/`MultiEdit`/`NotebookEdit`). An entry is a path, the git blob id of
the content and the session's turn, so "changed since you read it" is decided by content,
never by mtime.

A turn run by freshline (chat, send) keeps its tools' entries in a `TurnLedger` and stores
them only when the turn is accepted: a turn that failed left nothing in the model's
history, so it must leave nothing in the ledger either. Agents freshline does not run
(hook, MCP) record at once, in the turn of their last delivery.

`Ledger.news` turns a delivery's changes into the ledger's view of them
(`provenance.ledger_news`): the session's own writes (not announced), stale reads
(announced first) and other sessions' writes (attributed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from freshline.context import GitOperation, Refresh
from freshline.errors import NotFoundError
from freshline.materialize.snapshots import SnapshotStore
from freshline.materialize.status import Probe
from freshline.session.provenance import LedgerNews, ledger_news
from freshline.store import Change, ChangeKind, LedgerEntry, LedgerKind, SessionRecord, Store
from freshline.tracker.hashing import blob_of

_NOTHING = LedgerNews(frozenset(), (), ())
_PROJECT_LEVEL = (ChangeKind.CONFIG, ChangeKind.COMPACTED, ChangeKind.REFRESHED, ChangeKind.GIT)


def snapshot_fingerprint(probe: Probe) -> str | None:
    """The source content a document's snapshot was made from: what a reader of the
    snapshot saw (None without a readable snapshot)."""
    if probe.snapshot is None:
        return None
    header = SnapshotStore.header_at(probe.snapshot)
    return header.fingerprint if header is not None else None


def agent_of(s: SessionRecord) -> str:
    """Which agent a session serves: `claude-code`, `mcp`, … (from its external id), or
    `freshline` for freshline's own chat and send."""
    return s.external_id.partition(":")[0] if s.external_id else "freshline"


class TurnLedger:
    """The ledger as one turn's tools see it: the stored entries, and this turn's own,
    kept apart (`staged`) until the turn is accepted."""

    def __init__(self, store: Store, session: str, turn: int) -> None:
        self.store = store
        self.session = session
        self.turn = turn
        self.staged: list[LedgerEntry] = []

    def known(self, path: str) -> LedgerEntry | None:
        """What the agent last read or wrote at `path` in this conversation, if anything."""
        for e in reversed(self.staged):
            if e.path == path:
                return e
        return self.store.ledger_last(self.session, path)

    def note(self, path: str, blob: str, kind: LedgerKind) -> None:
        """Record, for this turn, that the agent read (or its tool wrote) `blob` at `path`."""
        self.staged.append(LedgerEntry(self.session, path, kind, blob, self.turn))


class Ledger:
    """The read ledger of one workspace's sessions. A disabled ledger records nothing and
    says nothing (the bench's baseline)."""

    def __init__(self, store: Store, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled

    def for_turn(self, s: SessionRecord, turn: int) -> TurnLedger | None:
        """The ledger a turn's tools record into (None when disabled)."""
        return TurnLedger(self.store, s.id, turn) if self.enabled else None

    def record(
        self, session_id: str, path: str, blob: str, kind: LedgerKind, turn: int | None = None
    ) -> None:
        """Record that the session's agent read (or wrote) `blob` at workspace-relative
        `path`, in `turn` (default: the turn of its last delivery, at least 1)."""
        if not self.enabled:
            return
        s = self.store.session_get(session_id)
        number = turn if turn is not None else max(s.turns, 1)
        self.store.ledger_put([LedgerEntry(s.id, path, kind, blob, number)])

    def paths(self, s: SessionRecord) -> frozenset[str]:
        """The paths the session's agent read or wrote that changed since its cursor."""
        if not self.enabled:
            return frozenset()
        since = s.cursor if s.cursor is not None else s.manifest_epoch
        return frozenset(self.store.ledger_changed(s.id, s.project, since))

    def news(
        self,
        s: SessionRecord,
        changes: Sequence[Change],
        refreshed: Sequence[Change] = (),
        worktree: Path | None = None,
    ) -> LedgerNews:
        """The ledger's view of a delivery to `s` of `changes` (a change-log slice: path
        changes and `git` entries) and `refreshed` entries: own writes, stale reads, other
        sessions' writes. Paths hold what the index has now, or in an isolated session
        what its `worktree` has."""
        if not self.enabled:
            return _NOTHING
        moves = [c for c in changes if c.path and c.kind not in _PROJECT_LEVEL]
        git = [GitOperation.from_detail(c.detail) for c in changes if c.kind is ChangeKind.GIT]
        refreshes = [Refresh.from_detail(c.detail) for c in refreshed]
        paths = {p for c in moves for p in (c.path, c.old_path) if p}
        paths.update(p for r in refreshes for p in r.paths)
        found = self.store.ledger_on(paths) if paths else []
        if not found:
            return _NOTHING
        rows = [r.entry for r in found]
        if worktree is None:
            current = {r.entry.path: r.indexed for r in found}
        else:
            current = {p: blob_of(worktree / p) for p in {e.path for e in rows}}
        agents = {e.session: self._agent(e.session) for e in rows if e.session != s.id}
        return ledger_news(s.id, moves, rows, current, git, refreshes, agents)

    def _agent(self, session_id: str) -> str:
        try:
            return agent_of(self.store.session_get(session_id))
        except NotFoundError:
            return ""
