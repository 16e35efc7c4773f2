"""Sessions after use: closing idle ones, removing them, and collecting what nobody needs.

Hook, MCP and ACP sessions belong to agents freshline does not run, which rarely say they
are done: they close once unused for `[sessions] idle_close` (a hook's next prompt resumes
its session). `remove` forgets sessions with their conversations (ref, worktree, turn
files) and every row keyed by them, after archiving the conversations when asked.
`collect` (`freshline gc`) removes closed sessions unused past an age, conversations and
worktrees whose session is gone, snapshots no project needs, then runs git's gc on
freshline's own repository (and on the checkout's only when asked), truncates the store's
write-ahead log, and says what it freed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.errors import SessionBusy, UsageError
from freshline.store import SessionRecord, SessionState

if TYPE_CHECKING:
    from freshline.session.base import SessionBase

IDLE_CHANNELS = frozenset({"hook", "mcp", "acp"})  # agents freshline does not run
# A conversation or worktree with no session is left alone this long: `session new`
# opens the conversation just before it stores the session.
ORPHAN_GRACE_S = 3600


def close_idle(manager: SessionBase, now: float | None = None) -> list[SessionRecord]:
    """Close hook, MCP and ACP sessions unused for `[sessions] idle_close`; returns them."""
    idle = manager.config.sessions.idle_close
    if not idle:
        return []
    before = (now or time.time()) - idle
    if not manager.store.sessions_idle(IDLE_CHANNELS, before):
        return []
    with manager.store.write():  # look again: another process may have used one since
        stale = manager.store.sessions_idle(IDLE_CHANNELS, before)
        for s in stale:
            manager.store.session_put(replace(s, state=SessionState.CLOSED))
    return stale


def most_recent(
    sessions: Iterable[SessionRecord], channel: str, project: str | None = None
) -> SessionRecord | None:
    """The session of `channel` (of `project`, if given) used last, if any."""
    mine = [s for s in sessions if s.channel == channel and project in (None, s.project)]
    return max(mine, key=lambda s: (s.last_active, s.created_at, s.id), default=None)


def remove(manager: SessionBase, session_ids: list[str], archive: Path | None = None) -> None:
    """Forget sessions: their conversations (archived first to the git bundle `archive`
    when given), worktrees, turn files and rows. Checks every id before changing anything;
    raises SessionBusy, changing nothing, while a turn runs on one of them."""
    records = [manager.store.session_get(i) for i in dict.fromkeys(session_ids)]
    recorded = [s.id for s in records if manager.conversations.exists(s.id)]
    if archive is not None and not recorded:
        raise UsageError("nothing to archive: these sessions recorded no conversation")
    with ExitStack() as held:
        for sid in recorded:
            held.enter_context(manager.turn_lock(sid, wait=False))
        if archive is not None:
            manager.conversations.archive(recorded, archive)
        for s in records:  # a session without a conversation may still have turn files
            manager.conversations.remove(s.id)
        manager.store.session_delete([s.id for s in records])


@dataclass
class Collected:
    """What `collect` removed (or, in a dry run, would remove) and the bytes it freed."""

    dry_run: bool
    closed: list[str] = field(default_factory=list)  # idle sessions closed
    sessions: list[str] = field(default_factory=list)  # closed sessions removed
    busy: list[str] = field(default_factory=list)  # left alone: a turn held them
    conversations: list[str] = field(default_factory=list)  # with no session, removed
    worktrees: list[str] = field(default_factory=list)  # with no session, removed
    documents: list[str] = field(default_factory=list)  # snapshots and markers dropped
    before: int = 0  # bytes on disk before (`.freshline`, and the user's .git if asked)
    after: int = 0  # bytes on disk after (a dry run: the same)

    @property
    def freed(self) -> int:
        """Bytes freed."""
        return max(self.before - self.after, 0)


def collect(
    manager: SessionBase,
    older_than: float,
    dry_run: bool = False,
    include_user_repo: bool = False,
    now: float | None = None,
) -> Collected:
    """Remove closed sessions unused for `older_than` seconds (idle hook, MCP and ACP
    sessions are closed first; a landing, never used, counts as closed), conversations and
    worktrees whose session is gone,
    snapshots and markers no project needs; then git's gc (`Conversations.collect`).
    A dry run changes nothing and reports what would go."""
    now = now or time.time()
    out = Collected(dry_run)
    out.before = _usage(manager, include_user_repo)
    idle = manager.config.sessions.idle_close
    would_close = manager.store.sessions_idle(IDLE_CHANNELS, now - idle) if idle else []
    out.closed = [s.id for s in would_close]
    for s in manager.sessions():
        done = s.state is not SessionState.ACTIVE or s.id in out.closed  # closed, or unused
        if done and s.last_active < now - older_than:
            out.sessions.append(s.id)
    _orphans(manager, out, now)
    out.documents = [str(p) for p in manager.prune_documents(dry_run=True)]
    if dry_run:
        out.after = out.before
        return out
    close_idle(manager, now)
    _remove_all(manager, out)
    manager.prune_documents()
    manager.conversations.collect(include_user_repo)
    manager.store.checkpoint()
    out.after = _usage(manager, include_user_repo)
    return out


def _orphans(manager: SessionBase, out: Collected, now: float) -> None:
    """Conversations and worktrees no session owns, older than the grace period."""
    from freshline.conversation.repository import WORKTREES  # git: for `gc` alone

    known = {s.id for s in manager.sessions()}
    old = now - ORPHAN_GRACE_S
    out.conversations = sorted(
        r.conversation for r in manager.conversations.refs()
        if r.conversation not in known and r.when < old
    )
    folder = manager.config.root / WORKTREES
    if folder.is_dir():
        out.worktrees = sorted(
            p.name for p in folder.iterdir()
            if p.name not in known and p.name not in out.conversations
            and p.lstat().st_mtime < old
        )


def _remove_all(manager: SessionBase, out: Collected) -> None:
    from freshline.conversation.repository import WORKTREES

    for sid in list(out.sessions):
        try:
            remove(manager, [sid])
        except SessionBusy:
            out.sessions.remove(sid)
            out.busy.append(sid)
    for conversation in list(out.conversations):
        try:
            manager.conversations.remove(conversation)
        except SessionBusy:
            out.conversations.remove(conversation)
            out.busy.append(conversation)
    for name in out.worktrees:
        manager.conversations.remove_worktree(manager.config.root / WORKTREES / name)


def _usage(manager: SessionBase, include_user_repo: bool) -> int:
    from freshline.conversation.storage import disk_usage

    total = disk_usage(manager.config.data_dir)
    if include_user_repo and manager.conversations.checkout:
        total += disk_usage(manager.conversations.repo.git_dir)
    return total
