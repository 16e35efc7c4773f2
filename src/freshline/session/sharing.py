"""Sessions that travel: push and pull conversations through a git remote, fork a
diverged one, and adopt a conversation that arrived from another machine.

A conversation is its commits; a session is this workspace's row about it (cursor,
manifest, ledger), which never travels: epochs count one workspace's changes only. So a
pulled conversation gets a fresh row here (`adopt`), like a resumed session: its first
send delivers the manifest as this workspace has it now, with a line saying the project
may have changed, and the history before it is replayed from the commits. A conversation
whose project this workspace does not define is pulled but gets no row (reported).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from freshline.context import Channel
from freshline.conversation import Author, exchange
from freshline.conversation.remotes import PullReport, PushReport, Remote, resolve
from freshline.errors import UsageError
from freshline.session.manager import SessionManager
from freshline.session.manifest import build_manifest
from freshline.store import SessionRecord, SessionState
from freshline.store.sessions import PULLED, session_title


@dataclass
class Pulled:
    """A pull's report, with the sessions opened for new conversations."""

    report: PullReport
    adopted: list[str] = field(default_factory=list)
    unknown_project: dict[str, str] = field(default_factory=dict)  # id -> its project


def remote_of(manager: SessionManager, remote: str | None) -> Remote:
    """The remote `remote` names for this workspace (see remotes.resolve)."""
    return resolve(manager.config.root, remote)


def push(manager: SessionManager, remote: str | None, sessions: Sequence[str] = ()) -> PushReport:
    """Push the sessions' conversations (default: all) to `remote`."""
    for session in sessions:
        manager.get(session)
    return exchange.push(manager.conversations, remote_of(manager, remote), sessions)


def pull(manager: SessionManager, remote: str | None) -> Pulled:
    """Pull every conversation of `remote`; adopt the new ones as sessions."""
    report = exchange.pull(manager.conversations, remote_of(manager, remote))
    pulled = Pulled(report)
    for conversation in report.created:
        project = adopt(manager, conversation, pulled=True)
        if project is not None:
            pulled.unknown_project[conversation] = project
        else:
            pulled.adopted.append(conversation)
    return pulled


def fork(
    manager: SessionManager, session: str, remote: str | None, at: str | None = None
) -> SessionRecord:
    """A new session whose conversation starts at `session`'s head: with `remote`, at the
    remote's head a pull kept aside (both sides had appended); with `at` (a turn's number
    or commit id in `log`), where that turn began; else at the local head. The original
    is left as it was. The fork's title and first manifest say what it is a fork of."""
    key = None if remote is None else remote_of(manager, remote).name
    original = manager.store.session_get(session) if key is None else None
    if original is not None and not original.records_conversation:
        raise UsageError(f"session {session} records no conversation: there is nothing to "
                         "fork")
    new_id = uuid.uuid4().hex[:12]
    exchange.fork(manager.conversations, session, new_id, key, at)
    where = fork_point(session, remote, at)
    title = original.title if original is not None else None
    project = adopt(manager, new_id, forked=where, title=fork_title(title, remote, at))
    if project is not None:
        raise UsageError(f"conversation {new_id} was forked, but this workspace has no "
                         f"project '{project}' to open a session of it on")
    return manager.store.session_get(new_id)


def fork_point(session: str, remote: str | None, at: str | None) -> str:
    """Where a fork starts, in words: "session 3f2a9c1b7d4e, where its turn 3 began"."""
    if at is not None:
        return f"session {session}, where its {_turn(at)} began"
    if remote is not None:
        return f"session {session} as remote {remote} had it"
    return f"session {session}"


def fork_title(title: str | None, remote: str | None, at: str | None) -> str:
    """A fork's title, told apart from its original's in `session list`: "fork at turn 3:
    <the original's title>"."""
    where = f" at {_turn(at)}" if at is not None else f" from {remote}" if remote else ""
    return session_title(f"fork{where}: {title}" if title else f"fork{where}") or "fork"


def _turn(at: str) -> str:
    return f"turn {at}" if at.isdigit() else f"commit {at[:10]}"


def adopt(
    manager: SessionManager, conversation: str, pulled: bool = False, forked: str = "",
    title: str | None = None,
) -> str | None:
    """Open a session row for a conversation recorded elsewhere (see the module
    docstring). Returns None, or the project it names when this workspace has none. A
    `pulled` one is listed on the channel `pull`, opened when its conversation started;
    a `forked` one's first manifest says what it was forked from (`fork_point`) instead
    of calling it resumed. `title` replaces the one its first message gives."""
    events = manager.conversations.log(conversation)
    root = events[0].root
    assert root is not None
    project = root.project or ""
    config = manager.reload_config()
    if project not in config.projects:
        return project
    mode = root.mode.value
    worktree = manager.conversations.worktree(conversation) if mode == "isolated" else None
    built = build_manifest(config, manager.tracker, manager.materializer, project, not forked,
                           manager.in_scope.entries, worktree, forked=forked)
    said = [e for e in events if e.author is Author.USER]
    now = time.time()
    opened = manager.conversations.started_at(conversation) if pulled else now
    manager.store.session_put(SessionRecord(
        id=conversation, project=project, state=SessionState.ACTIVE, mode=mode,
        created_at=opened, resumed_at=now, cursor=built.epoch if built.complete else None,
        manifest_epoch=built.epoch, dirty_key=built.dirty_key, held_key=None,
        manifest=built.stored, needs_manifest=True, resumed=True, pending_docs=built.pending,
        target=root.target, turns=len(said),
        channel=PULLED if pulled else Channel.SEND.value, active_at=now,
        title=title or (session_title(said[0].content) if said else None),
    ))
    return None
