"""Provenance and stale reads: what the read ledger makes of one delivery's changes.

A pure function of plain records. Given the changes about to be announced to a session,
the ledger's entries on their paths (every session's) and the content each path has now,
it says:

- which changes are the session's own: the path holds exactly the blob this session's
  tool last wrote there (a deletion: its tool deleted it). They are not announced back.
- which files the agent read (or its tool wrote) changed since: the blob it last saw is
  not the blob there now. These open the updates block, with the turn it saw them in.
- who changed each path, only as far as it is provable: a git operation the tracker
  typed (the path is among its paths), the conversation's refresh, another session whose
  tool wrote exactly this blob, or else "outside freshline", never a guessed author.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from freshline.context import GitOperation, Refresh, Source, SourceKind, StaleRead
from freshline.store import Change, ChangeKind, LedgerEntry, LedgerKind

ABSENT = ""  # the blob a ledger write records for a deletion, and a missing file has


@dataclass(frozen=True)
class LedgerNews:
    """What the ledger says about one delivery."""

    own: frozenset[str]  # paths whose change is this session's own write: not announced
    stale: tuple[StaleRead, ...]  # read (or written) by this session, changed since
    writers: tuple[tuple[str, Source], ...]  # announced paths another session wrote

    def kept(self, changes: Sequence[Change]) -> list[Change]:
        """`changes` less the session's own."""
        return [c for c in changes if c.path not in self.own]


@dataclass(frozen=True)
class _Known:
    last: LedgerEntry | None  # this session's latest entry on the path, read or write
    wrote: LedgerEntry | None  # this session's latest write on the path


def _knowledge(session: str, rows: Sequence[LedgerEntry]) -> dict[str, _Known]:
    mine: dict[str, _Known] = {}
    for e in sorted((e for e in rows if e.session == session), key=lambda e: e.seq):
        known = mine.get(e.path, _Known(None, None))
        wrote = e if e.kind is LedgerKind.WRITE else known.wrote
        mine[e.path] = _Known(e, wrote)
    return mine


class _Resolver:
    """Answers, per path, who changed it, from the delivery's evidence."""

    def __init__(
        self,
        session: str,
        rows: Sequence[LedgerEntry],
        git: Sequence[GitOperation],
        refreshes: Sequence[Refresh],
        agents: Mapping[str, str],
    ) -> None:
        self.git = list(reversed(git))  # the latest operation touching a path names it
        self.refreshes = list(reversed(refreshes))
        self.agents = agents
        self.writes: dict[tuple[str, str], LedgerEntry] = {}  # (path, blob) → latest writer
        for e in sorted(rows, key=lambda e: e.at):
            if e.kind is LedgerKind.WRITE and e.session != session:
                self.writes[(e.path, e.blob)] = e

    def source(self, path: str, blob: str | None) -> Source:
        for op in self.git:
            if path in op.paths:
                return Source(SourceKind.GIT, op.operation, "", op.from_commit, op.to_commit)
        for r in self.refreshes:
            if path in r.paths:
                return Source(SourceKind.REFRESH, r.target, "", r.from_commit, r.to_commit)
        writer = self.writes.get((path, blob if blob is not None else ABSENT))
        if writer is not None:
            return Source(SourceKind.SESSION, writer.session, self.agents.get(writer.session, ""))
        return Source(SourceKind.OUTSIDE)


def ledger_news(
    session: str,
    changes: Sequence[Change],
    rows: Sequence[LedgerEntry],
    current: Mapping[str, str | None],
    git: Sequence[GitOperation] = (),
    refreshes: Sequence[Refresh] = (),
    agents: Mapping[str, str] | None = None,
) -> LedgerNews:
    """The ledger's view of a delivery to `session`.

    `changes` are its path changes (created, modified, deleted, renamed); `refreshes` the
    merges into its conversation; `rows` every session's ledger entries on their paths;
    `current` the blob each of those paths has now (None: no file); `agents` names each
    session's agent (claude-code, mcp, freshline).
    """
    mine = _knowledge(session, rows)
    resolve = _Resolver(session, rows, git, refreshes, agents or {})

    def now(path: str) -> str:
        blob = current.get(path)
        return blob if blob is not None else ABSENT

    def own(path: str) -> bool:
        wrote = mine.get(path, _Known(None, None)).wrote
        return wrote is not None and wrote.blob == now(path)

    def stale(path: str, change: ChangeKind, new_path: str | None = None) -> StaleRead | None:
        last = mine.get(path, _Known(None, None)).last
        seen = now(new_path) if change is ChangeKind.RENAMED and new_path else now(path)
        if last is None or last.blob == ABSENT or (change is not ChangeKind.RENAMED
                                                   and last.blob == seen):
            return None
        where = new_path or path
        return StaleRead(path, last.turn, change, resolve.source(where, current.get(where)),
                         wrote=last.kind is LedgerKind.WRITE, new_path=new_path)

    owned: set[str] = set()
    found: dict[str, StaleRead] = {}
    writers: dict[str, Source] = {}
    for c in changes:
        if c.kind is ChangeKind.RENAMED and c.old_path:
            if own(c.path) and own(c.old_path):
                owned.add(c.path)
                continue
            item = stale(c.old_path, ChangeKind.RENAMED, c.path)
        elif own(c.path):
            owned.add(c.path)
            continue
        else:
            item = stale(c.path, _fate(c, current.get(c.path) is None))
        if item is not None:
            found.setdefault(item.path, item)
        source = resolve.source(c.path, current.get(c.path))
        if source.kind is SourceKind.SESSION:
            writers[c.path] = source
    for r in refreshes:
        for path in r.paths:
            gone = current.get(path) is None
            item = stale(path, ChangeKind.DELETED if gone else ChangeKind.MODIFIED)
            if item is not None:
                found.setdefault(path, item)
    return LedgerNews(frozenset(owned), tuple(found[p] for p in sorted(found)),
                      tuple(sorted(writers.items())))


def _fate(c: Change, absent: bool) -> ChangeKind:
    """What a change did to a file the agent saw: a file that left the project and that
    the index no longer sees (ignored, moved out) left it; it was not deleted."""
    if c.kind is ChangeKind.LEFT and absent:
        return ChangeKind.LEFT
    return ChangeKind.DELETED if c.kind is ChangeKind.DELETED or absent else ChangeKind.MODIFIED
