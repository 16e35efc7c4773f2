"""One turn at a time per conversation, and putting a worktree back when a turn never ends.

`guard()` holds the conversation's turn lock (turnlock.py) for a whole turn: prepare, the
model and its tools, record. Taking the lock finds any journal (journal.py) a dead holder
left and rolls that turn back first; letting it go with the journal still there (a turn
neither recorded nor undone) rolls it back too. `recover()` does the same for commands that
only read a conversation, unless a live turn holds the lock.

A rollback puts the worktree exactly where the turn found it (tree, index, no untracked
leftovers) when the turn was not recorded, and at the head's tree when it was (the ref
moved before the process died). Lock files a killed git left in the worktree, and the
conversation ref's lock, are removed first: only a turn holder touches them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from freshline.conversation import journal, turnlock
from freshline.conversation.journal import Journal
from freshline.conversation.repository import Repo
from freshline.conversation.trees import admin_dir, force_worktree
from freshline.errors import SessionBusy


@contextmanager
def guard(
    repo: Repo,
    conversation: str,
    wait: bool = True,
    on_wait: turnlock.WaitNotice | None = None,
) -> Iterator[None]:
    """Hold the conversation's turn lock for the block (see the module docstring).

    Raises SessionBusy when `wait` is False and another turn holds it; `on_wait` is told,
    after a second of waiting, who does.
    """
    with turnlock.hold(
        repo.turn_file(conversation, "lock"),
        wait,
        on_wait,
        on_acquired=lambda: _roll_back(repo, conversation, stale=True),
        on_release=lambda: _roll_back(repo, conversation, stale=False),
        what=f"session {conversation}",
    ):
        yield


def holding(repo: Repo, conversation: str) -> bool:
    """Whether the calling thread holds the conversation's turn lock."""
    return turnlock.held(repo.turn_file(conversation, "lock"))


def recover(repo: Repo, conversation: str) -> bool:
    """Roll back an interrupted turn, unless a live one holds the lock; True if one was."""
    if repo.turn_file(conversation, "json").exists() and not holding(repo, conversation):
        try:
            with guard(repo, conversation, wait=False):
                return True
        except SessionBusy:
            return False
    return False


def begin(repo: Repo, conversation: str, head: str, tree: str) -> None:
    """Journal a turn before it touches the worktree (only under the turn lock)."""
    if holding(repo, conversation):
        journal.write(repo.turn_file(conversation, "json"), head, tree)


def finish(repo: Repo, conversation: str) -> None:
    """The turn was recorded or undone: nothing to roll back any more."""
    journal.clear(repo.turn_file(conversation, "json"))


def restore(repo: Repo, conversation: str, started: Journal, stale: bool = False) -> None:
    """Put the worktree back as the turn `started` found it, or at the head's tree when
    the ref moved since (the turn was recorded, or, without the lock, another won)."""
    now = repo.head(conversation)
    worktree = repo.worktree_git(conversation, now)
    if stale:
        _remove_stale_locks(repo, conversation)
    tree = started.tree if started.head == now and started.tree else repo.git.tree_of(now)
    force_worktree(repo.git, worktree, tree, now)


def _roll_back(repo: Repo, conversation: str, stale: bool) -> None:
    path = repo.turn_file(conversation, "json")
    started = journal.read(path)
    if started is None:
        return
    if repo.exists(conversation):
        restore(repo, conversation, started, stale)
    journal.clear(path)


def _remove_stale_locks(repo: Repo, conversation: str) -> None:
    """The lock files a git killed with the turn left; nobody else writes these."""
    admin = admin_dir(repo.worktree_git(conversation))
    for name in ("index.lock", "HEAD.lock"):
        (admin / name).unlink(missing_ok=True)
    (repo.git_dir / f"{repo.ref(conversation)}.lock").unlink(missing_ok=True)
    for leftover in admin.glob("freshline-index-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    journal_file = repo.turn_file(conversation, "json")
    for partial in journal_file.parent.glob(f"{journal_file.name}.*.tmp"):
        partial.unlink(missing_ok=True)
