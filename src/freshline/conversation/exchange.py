"""Push, pull and fork over a workspace's two conversation repositories (remotes.py does
one repository's part).

Live conversations are pushed from freshline's own repository and isolated ones from the
checkout's, each set in one atomic push. A pull fetches into freshline's own repository
first (its alternates spare the objects the checkout has), then fetches the isolated
conversations on into the checkout's, where their worktrees need them. A conversation is
moved forward only under its turn lock, never while a turn runs; an isolated one whose
worktree holds unrecorded edits is not moved (its worktree would no longer match its
head): both are kept aside like a diverged head and reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from freshline.conversation import recovery, remotes, turns, views
from freshline.conversation.conversations import Conversations
from freshline.conversation.events import Mode
from freshline.conversation.remotes import PullReport, PushReport, Relation, Remote
from freshline.conversation.repository import Repo
from freshline.errors import NotFoundError, SessionBusy, UsageError


def push(conversations: Conversations, remote: Remote, ids: Sequence[str] = ()) -> PushReport:
    """Push `ids` (default: every conversation) to `remote`."""
    report = PushReport(remote.name)
    groups: dict[Path, tuple[Repo, list[str]]] = {}
    for conversation in ids or conversations.ids():
        if not conversations.exists(conversation):
            raise NotFoundError(f"no conversation {conversation!r}")
        repo = conversations.repo_of(conversation)
        groups.setdefault(repo.git_dir, (repo, []))[1].append(conversation)
    for repo, members in groups.values():
        remotes.push(repo, remote, members, report)
    return report


def pull(conversations: Conversations, remote: Remote) -> PullReport:
    """Bring every conversation of `remote` here (see the module docstring)."""
    report = PullReport(remote.name)
    private = conversations.home(private=True)
    fetched = remotes.fetch(private, remote.url)
    try:
        isolated = [c for c, head in sorted(fetched.heads.items())
                    if _in_checkout(conversations, private, c, head)]
        moved = remotes.move_to(fetched, conversations.repo, isolated)
        try:
            for conversation, head in sorted(fetched.heads.items()):
                repo = moved.repo if conversation in moved.heads else private
                _settle(repo, remote.name, conversation, head, report)
        finally:
            if moved.repo is not private:
                moved.drop()
    finally:
        fetched.drop()
    return report


def _in_checkout(conversations: Conversations, private: Repo, conversation: str,
                 head: str) -> bool:
    """Whether a fetched conversation belongs in the checkout's repository: where it
    already lives, else where its mode puts it."""
    if not conversations.checkout or private.exists(conversation):
        return False
    if conversations.repo.exists(conversation):
        return True
    return remotes.mode_of(private, head, conversation) is Mode.ISOLATED


def _settle(repo: Repo, remote: str, conversation: str, head: str, report: PullReport) -> None:
    how, ours = remotes.compare(repo, conversation, head)
    if how is Relation.ABSENT and remotes.create(repo, conversation, head):
        report.created.append(conversation)
    elif how in (Relation.SAME, Relation.AHEAD):
        report.up_to_date.append(conversation)
        remotes.forget_aside(repo, remote, conversation)
    elif how is Relation.BEHIND and ours is not None:
        if _forward(repo, conversation, ours, head):
            report.forwarded.append(conversation)
            remotes.forget_aside(repo, remote, conversation)
        else:
            remotes.keep_aside(repo, remote, conversation, head)
            report.busy.append(conversation)
    else:  # diverged, or created here while we looked
        report.diverged[conversation] = remotes.keep_aside(repo, remote, conversation, head)


def _forward(repo: Repo, conversation: str, ours: str, theirs: str) -> bool:
    """Move a conversation forward under its turn lock; False when a turn holds it, its
    worktree has unrecorded edits, or its ref moved meanwhile."""
    try:
        with recovery.guard(repo, conversation, wait=False):
            path = repo.worktree(conversation)
            if (path / ".git").exists():
                status = repo.worktree_git(conversation).status()
                if status.staged or status.changed:
                    return False
                # Clean: the next turn checks the new head out again (worktree_git).
                turns.close_worktree(repo, conversation)
            return remotes.forward(repo, conversation, ours, theirs)
    except SessionBusy:
        return False


def fork(conversations: Conversations, source: str, new_id: str,
         remote: str | None = None, at: str | None = None) -> str:
    """Start conversation `new_id` at the head of `source`: the remote's head kept aside
    by a pull (`remote`, its name), else the local one; with `at` (a turn's number or
    commit id from `log`), where that turn began. The history is shared, never copied or
    rewritten. Returns the head."""
    if conversations.exists(new_id):
        raise UsageError(f"conversation {new_id!r} exists already")
    if remote is not None and at is not None:
        raise UsageError("fork at a turn of the local conversation, or from a remote's head")
    if at is not None:
        conversations.recover(source)
        repo = conversations.repo_of(source)
        events = repo.chain(source).events
        head = events[views.find_turn(events, at) - 1].commit or ""
    elif remote is None:
        repo = conversations.repo_of(source)
        head = repo.head(source)
    else:
        repo, head = _aside(conversations, remote, source)
    if not remotes.create(repo, new_id, head):
        raise UsageError(f"conversation {new_id!r} exists already")
    if remote is not None:
        remotes.forget_aside(repo, remote, source)
    return head


def _aside(conversations: Conversations, remote: str, source: str) -> tuple[Repo, str]:
    homes = [conversations.home(private=True)] if conversations.has_private() else []
    if conversations.checkout:
        homes.append(conversations.repo)
    for repo in homes:
        head = remotes.aside(repo, remote, source)
        if head is not None:
            return repo, head
    raise NotFoundError(
        f"no diverged head of conversation {source!r} from remote {remote!r} "
        "(`freshline pull` keeps one when both sides appended)"
    )
