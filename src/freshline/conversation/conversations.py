"""The one object the session layer holds per workspace: every conversation operation.

Every operation that opens a conversation first rolls back a turn a dead process left
unfinished (recovery.recover), unless a live turn holds the conversation's lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

from freshline.conversation import publish as _publish
from freshline.conversation import recovery, trees, turns
from freshline.conversation import refresh as _refresh
from freshline.conversation.conflicts import Conflict
from freshline.conversation.events import Event, Mode, Refresh
from freshline.conversation.refresh import PathFilter
from freshline.conversation.repository import Repo
from freshline.conversation.trees import LiveDelta
from freshline.conversation.turnlock import WaitNotice
from freshline.conversation.turns import PendingTurn
from freshline.store.records import IndexEntry


class Conversations:
    """A workspace's conversations: open, turns, sync, log, diff, publish.

    `date` fixes commit dates (e.g. "1700000000 +0000") for reproducible ids.
    """

    def __init__(self, workspace_root: Path, date: str | None = None) -> None:
        self.repo = Repo(workspace_root, date=date)

    @property
    def git_dir(self) -> Path:
        """The repository holding the conversations."""
        return self.repo.git_dir

    def open(
        self,
        conversation: str,
        mode: Mode = Mode.LIVE,
        target: str | None = None,
        entries: Iterable[IndexEntry] | None = None,
        project: str | None = None,
    ) -> str:
        """Start a conversation; returns the root commit (see turns.open_conversation)."""
        return turns.open_conversation(self.repo, conversation, mode, target, entries, project)

    def lock(
        self, conversation: str, wait: bool = True, on_wait: WaitNotice | None = None
    ) -> AbstractContextManager[None]:
        """Hold the conversation's turn lock for a whole turn (prepare → model → record):
        one turn at a time in every thread and process. Raises SessionBusy when `wait` is
        False and a turn is running; `on_wait` hears who holds it after a second."""
        return recovery.guard(self.repo, conversation, wait, on_wait)

    def recover(self, conversation: str) -> bool:
        """Roll back a turn a dead process left unfinished (see recovery.recover)."""
        return recovery.recover(self.repo, conversation)

    def prepare_turn(
        self,
        conversation: str,
        message: str,
        entries: Iterable[IndexEntry] | None = None,
        path_filter: PathFilter | None = None,
        refresh: bool = True,
        delta: LiveDelta | None = None,
    ) -> PendingTurn:
        """Compute a human turn before the model is called (see turns.prepare_turn)."""
        self.recover(conversation)
        return turns.prepare_turn(
            self.repo, conversation, message, entries, path_filter, refresh, delta
        )

    def preview_turn(self, conversation: str, path_filter: PathFilter | None = None) -> PendingTurn:
        """What the next turn would merge, moving nothing (see turns.preview_turn)."""
        self.recover(conversation)
        return turns.preview_turn(self.repo, conversation, path_filter)

    @staticmethod
    def abandon_turn(pending: PendingTurn) -> None:
        """Undo what preparing a turn did to an isolated worktree (see turns.abandon_turn)."""
        turns.abandon_turn(pending)

    @staticmethod
    def commit_turn(pending: PendingTurn, events: Sequence[Event]) -> str:
        """Record a prepared turn and its events; returns the new head."""
        return turns.commit_turn(pending, events)

    @staticmethod
    def snapshot_event(pending: PendingTurn, deliberate: Iterable[str] = ()) -> str:
        """The tree of a tool event that wrote files (see turns.snapshot_event)."""
        return turns.snapshot_event(pending, deliberate)

    def sync(
        self,
        conversation: str,
        rev: str,
        with_conflicts: bool = False,
        path_filter: PathFilter | None = None,
    ) -> Refresh | None:
        """Merge an explicit rev now (see refresh.sync)."""
        return _refresh.sync(self.repo, conversation, rev, with_conflicts, path_filter)

    def head(self, conversation: str) -> str:
        """The conversation's head commit (NotFoundError when unknown)."""
        return self.repo.head(conversation)

    def ids(self) -> list[str]:
        """Every conversation id, sorted."""
        return self.repo.conversations()

    def log(self, conversation: str) -> list[Event]:
        """The transcript: the first-parent chain from the root event, oldest first."""
        self.recover(conversation)
        return list(self.repo.chain(conversation).events)

    def diff(self, conversation: str) -> str:
        """The conversation's own work as a patch."""
        self.recover(conversation)
        return _publish.diff(self.repo, conversation)

    def unresolved_conflicts(self, conversation: str) -> list[Conflict]:
        """Conflicts a sync recorded that the head's tree does not resolve yet."""
        self.recover(conversation)
        return _publish.unresolved_conflicts(self.repo, self.repo.chain(conversation))

    def publish(self, conversation: str, branch: str) -> str:
        """Publish the conversation's work on refs/heads/`branch`; returns the commit."""
        self.recover(conversation)
        return _publish.publish(self.repo, conversation, branch)

    def worktree(self, conversation: str) -> Path:
        """Where an isolated conversation's agent reads and writes."""
        return self.repo.worktree(conversation)

    def snapshot_worktree(self, conversation: str) -> str:
        """The tree of the worktree as it is now (to pin a tool event's tree)."""
        return trees.snapshot_worktree(self.repo.worktree_git(conversation))

    def close(self, conversation: str) -> None:
        """Remove an isolated conversation's worktree; its commits stay."""
        with self.lock(conversation):
            turns.close_worktree(self.repo, conversation)

    def reset_worktree(self, conversation: str) -> None:
        """Discard unrecorded worktree edits: put the files back to the head."""
        turns.reset_worktree(self.repo, conversation)

    def live_tree(
        self, entries: Iterable[IndexEntry], root: Path, previous_tree: str | None = None
    ) -> str:
        """Write a tree from index entries (only missing blobs are written)."""
        return trees.live_tree(self.repo.git, entries, root, previous_tree)

    def changed_paths(self, old_tree: str, new_tree: str) -> list[str]:
        """The paths that differ between two trees."""
        return trees.changed_paths(self.repo.git, old_tree, new_tree)
