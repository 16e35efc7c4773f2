"""Who changed a live session's files, as far as it is provable, and what its workspace did
between its turns.

A live session's files are the user's own workspace, and its agent only reads them: the
trees of its turns record what each turn saw, never work of its own. So what changed
between two turns is the workspace's change, and each path's author is named only when
provable, as the read ledger names one: another session whose tool wrote exactly that
content, else the git operation logged with the path's latest change, else "outside
freshline" (by hand, or a program freshline does not know). A rewind asks the same
question of the files it would overwrite (`rewinding.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from freshline.conversation import views
from freshline.conversation.git import ZERO
from freshline.conversation.rewind import By
from freshline.store import ChangeKind, LedgerKind
from freshline.store.records import LoggedChange

if TYPE_CHECKING:  # the manager imports the rewinding module, which imports this
    from freshline.session.base import SessionBase

ABSENT = ""  # the blob a deleted path has (the ledger records a tool's deletion so)


@dataclass(frozen=True)
class Authored:
    """A path and who made it hold what it holds: `name` is the git operation (GIT) or the
    session (SESSION)."""

    path: str
    by: By
    name: str = ""


@dataclass(frozen=True)
class WorkspaceChanges:
    """What a live session's workspace did between its first turn and its last."""

    first_turn: int
    last_turn: int
    changes: tuple[Authored, ...] = ()


def authors(
    manager: SessionBase, session_id: str, blobs: Mapping[str, str]
) -> dict[str, Authored]:
    """Who made each path hold its blob (ABSENT: who deleted it), as far as provable; the
    session's own writes do not count (see the module docstring)."""
    if not blobs:
        return {}
    s = manager.store.session_get(session_id)
    others = {
        (row.entry.path, row.entry.blob): row.entry.session
        for row in manager.store.ledger_on(list(blobs))
        if row.entry.kind is LedgerKind.WRITE and row.entry.session != session_id
    }
    log = manager.store.log_read(s.project, 0)
    found: dict[str, Authored] = {}
    for path, blob in blobs.items():
        session = others.get((path, blob))
        operation = None if session is not None else git_operation(log, path)
        if session is not None:
            found[path] = Authored(path, By.SESSION, session)
        elif operation is not None:
            found[path] = Authored(path, By.GIT, operation)
        else:
            found[path] = Authored(path, By.OUTSIDE)
    return found


def git_operation(log: Sequence[LoggedChange], path: str) -> str | None:
    """The git operation logged with the latest change of `path`, if one was."""
    epochs = [r.epoch for r in log if path in (r.change.path, r.change.old_path)
              and r.change.kind is not ChangeKind.GIT]
    for r in log:
        if epochs and r.epoch == epochs[-1] and r.change.kind is ChangeKind.GIT:
            detail = r.change.detail or {}
            if path in detail.get("paths", ()):
                return str(detail.get("operation", "other"))
    return None


def workspace_changes(manager: SessionBase, session_id: str) -> WorkspaceChanges:
    """How a live session's workspace changed between the tree its first turn saw and the
    tree its last turn saw, each path with its author (nothing before a second turn)."""
    events = manager.conversations.log(session_id)
    numbers = views.turn_numbers(events)
    if not numbers:
        return WorkspaceChanges(0, 0)
    first, last = min(numbers), max(numbers)
    old, new = events[first].tree, events[last].tree
    assert old is not None and new is not None
    git = manager.conversations.repo_of(session_id).git
    blobs = {c.path: ABSENT if c.new_oid == ZERO else c.new_oid
             for c in git.diff_trees(old, new)}
    found = authors(manager, session_id, blobs)
    return WorkspaceChanges(numbers[first], numbers[last],
                            tuple(found[p] for p in sorted(found)))

