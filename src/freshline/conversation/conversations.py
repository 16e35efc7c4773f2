"""The one object the session layer holds per workspace: every conversation operation.

A workspace may hold conversations in two repositories (repository.py): freshline's own
(live ones) and, in a checkout, the checkout's (isolated ones). Each operation finds the
conversation's repository first; none is opened (no git runs) before one is needed.
Every operation that opens a conversation first rolls back a turn a dead process left
unfinished (recovery.recover), unless a live turn holds the conversation's lock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from freshline.conversation import publish as _publish
from freshline.conversation import recovery, rewind, storage, trees, turns, views
from freshline.conversation import refresh as _refresh
from freshline.conversation.conflicts import Conflict
from freshline.conversation.events import Event, Mode, Refresh, RewindMode
from freshline.conversation.refresh import PathFilter
from freshline.conversation.repository import PRIVATE_REPO, TURNS, Repo, check_id, is_checkout
from freshline.conversation.trees import LiveDelta
from freshline.conversation.turnlock import WaitNotice
from freshline.conversation.turns import PendingTurn
from freshline.errors import UsageError
from freshline.store.records import IndexEntry
from freshline.withholding import Withholder


class Conversations:
    """A workspace's conversations: open, turns, sync, log, diff, publish.

    `date` fixes commit dates (e.g. "1700000000 +0000") for reproducible ids; live trees
    record files larger than `max_blob` bytes as pointer blobs, and what `screen` says of
    files holding secrets or hard links (withholding.Withholder.tree_content).
    """

    def __init__(
        self, workspace_root: Path, date: str | None = None, max_blob: int | None = None,
        screen: Withholder | None = None,
    ) -> None:
        self.workspace = workspace_root.resolve()
        self._date = date
        self._max_blob = max_blob
        self._screen = screen
        self._homes: dict[bool, Repo] = {}
        self._where: dict[str, Repo] = {}  # conversation → the repository holding it

    def home(self, private: bool) -> Repo:
        """The repository for new conversations: freshline's own (`private`: live ones),
        else the checkout's (isolated ones); outside a checkout both are freshline's."""
        private = private or not is_checkout(self.workspace)
        if private not in self._homes:
            self._homes[private] = Repo(
                self.workspace, self._date, private, self._max_blob, self._screen
            )
        return self._homes[private]

    @property
    def repo(self) -> Repo:
        """The workspace's repository: the checkout's, else freshline's own."""
        return self.home(private=False)

    def repo_of(self, conversation: str) -> Repo:
        """The repository holding `conversation`: freshline's own when it has it, else the
        checkout's (isolated conversations, and live ones recorded before they moved)."""
        known = self._where.get(conversation)
        if known is not None:
            return known
        private = not is_checkout(self.workspace) or (
            self.has_private() and self.home(private=True).exists(conversation)
        )
        repo = self.home(private)
        self._where[conversation] = repo
        return repo

    def live_repo(self, conversation: str) -> Repo:
        """The repository a live conversation is (or will be) opened in: freshline's own,
        remembered for it, whether or not it exists yet (a checkpoint's opens it)."""
        repo = self._where[conversation] = self.home(private=True)
        return repo

    @property
    def git_dir(self) -> Path:
        """The workspace's repository (see `repo`)."""
        return self.repo.git_dir

    def git_dir_of(self, conversation: str) -> Path:
        """The repository holding `conversation`."""
        return self.repo_of(conversation).git_dir

    def open(
        self,
        conversation: str,
        mode: Mode = Mode.LIVE,
        target: str | None = None,
        entries: Iterable[IndexEntry] | None = None,
        project: str | None = None,
    ) -> str:
        """Start a conversation, live ones in freshline's own repository, isolated ones in
        the checkout's; returns the root commit (see turns.open_conversation)."""
        repo = self.home(private=mode is Mode.LIVE)
        commit = turns.open_conversation(repo, conversation, mode, target, entries, project)
        self._where[conversation] = repo
        return commit

    def lock(
        self, conversation: str, wait: bool = True, on_wait: WaitNotice | None = None
    ) -> AbstractContextManager[None]:
        """Hold the conversation's turn lock for a whole turn (prepare → model → record):
        one turn at a time in every thread and process. Raises SessionBusy when `wait` is
        False and a turn is running; `on_wait` hears who holds it after a second."""
        return recovery.guard(self.repo_of(conversation), conversation, wait, on_wait)

    def recover(self, conversation: str) -> bool:
        """Roll back a turn a dead process left unfinished (see recovery.recover)."""
        if not (self.workspace / TURNS / f"{check_id(conversation)}.json").exists():
            return False  # nothing was journaled: no git needed to say so
        return recovery.recover(self.repo_of(conversation), conversation)

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
            self.repo_of(conversation), conversation, message, entries, path_filter, refresh,
            delta,
        )

    def preview_turn(self, conversation: str, path_filter: PathFilter | None = None) -> PendingTurn:
        """What the next turn would merge, moving nothing (see turns.preview_turn)."""
        self.recover(conversation)
        return turns.preview_turn(self.repo_of(conversation), conversation, path_filter)

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
        return _refresh.sync(
            self.repo_of(conversation), conversation, rev, with_conflicts, path_filter
        )

    def head(self, conversation: str) -> str:
        """The conversation's head commit (NotFoundError when unknown)."""
        return self.repo_of(conversation).head(conversation)

    def ids(self) -> list[str]:
        """Every conversation id in either repository, sorted."""
        ids = set(self.repo.conversations())
        if is_checkout(self.workspace) and self.has_private():
            ids.update(self.home(private=True).conversations())
        return sorted(ids)

    def log(self, conversation: str) -> list[Event]:
        """The transcript: the first-parent chain from the root event, oldest first."""
        self.recover(conversation)
        return list(self.repo_of(conversation).chain(conversation).events)

    def started_at(self, conversation: str) -> float:
        """When the conversation's root event was committed (on whichever machine)."""
        root = self.log(conversation)[0].commit or ""
        return float(self.repo_of(conversation).git.text("log", "-1", "--format=%ct", root))

    def transcript(self, conversation: str) -> list[Event]:
        """The transcript view: the events the model is given, after rewinds (views.py)."""
        return views.transcript(self.log(conversation))

    def diff(self, conversation: str) -> str:
        """The conversation's own work as a patch."""
        self.recover(conversation)
        return _publish.diff(self.repo_of(conversation), conversation)

    def diff_turns(self, conversation: str, start: str, end: str | None = None) -> str:
        """The patch from where turn `start` began to where turn `end` began (None: the
        head), turns given as `log` names them (views.find_turn)."""
        self.recover(conversation)
        repo = self.repo_of(conversation)
        events = repo.chain(conversation).events
        old = events[views.find_turn(events, start)].tree or ""
        new = events[views.find_turn(events, end)].tree if end else events[-1].tree
        return _publish.diff_trees(repo, old, new or "")

    def diff_between(self, ours: str, theirs: str) -> str:
        """The patch from `ours`'s head to `theirs`'s (two forks of one conversation)."""
        self.recover(ours)
        self.recover(theirs)
        repos = [self.repo_of(ours), self.repo_of(theirs)]
        # freshline's own repository borrows the checkout's objects: it reads both.
        repo = repos[0] if repos[0] is repos[1] else self.home(private=True)
        return _publish.diff_trees(repo, repos[0].head(ours), repos[1].head(theirs))

    @contextmanager
    def rewinding(self, conversation: str) -> Iterator[None]:
        """Hold what a rewind's plan, review and apply need held together: the turn lock
        and the repository's objects lock."""
        with self.lock(conversation), self.repo_of(conversation).writing():
            yield

    def plan_rewind(
        self, conversation: str, turn: str, mode: RewindMode,
        path_filter: PathFilter | None = None, restore: Collection[str] = (),
    ) -> rewind.RewindPlan:
        """Work out a rewind to where `turn` began, moving nothing (see rewind.plan); inside
        `rewinding`."""
        return rewind.plan(self.repo_of(conversation), conversation, turn, mode, path_filter,
                           restore)

    def apply_rewind(self, planned: rewind.RewindPlan) -> str:
        """Record a planned rewind and move the files and the ref; the new head."""
        return rewind.apply(self.repo_of(planned.conversation), planned)

    def unresolved_conflicts(self, conversation: str) -> list[Conflict]:
        """Conflicts a sync recorded that the head's tree does not resolve yet."""
        self.recover(conversation)
        repo = self.repo_of(conversation)
        return _publish.unresolved_conflicts(repo, repo.chain(conversation))

    def publish(self, conversation: str, branch: str) -> str:
        """Publish the conversation's work on refs/heads/`branch`; returns the commit."""
        self.recover(conversation)
        return _publish.publish(self.repo_of(conversation), conversation, branch)

    def worktree(self, conversation: str) -> Path:
        """Where an isolated conversation's agent reads and writes."""
        return self.repo_of(conversation).worktree(conversation)

    def snapshot_worktree(self, conversation: str) -> str:
        """The tree of the worktree as it is now (to pin a tool event's tree)."""
        return trees.snapshot_worktree(self.repo_of(conversation).worktree_git(conversation))

    def close(self, conversation: str) -> None:
        """Remove an isolated conversation's worktree; its commits stay."""
        with self.lock(conversation):
            turns.close_worktree(self.repo_of(conversation), conversation)

    def reset_worktree(self, conversation: str) -> None:
        """Discard unrecorded worktree edits: put the files back to the head."""
        turns.reset_worktree(self.repo_of(conversation), conversation)

    def live_tree(
        self, entries: Iterable[IndexEntry], root: Path, previous_tree: str | None = None
    ) -> str:
        """Write a tree from index entries into freshline's own repository, where live
        conversations live (only missing blobs are written)."""
        repo = self.home(private=True)
        with repo.writing(), repo.sink() as out:
            return trees.live_tree(repo.git, entries, root, previous_tree, out)

    def exists(self, conversation: str) -> bool:
        """Whether the conversation exists (in either repository; one not created yet is
        not created to say so)."""
        if not self.checkout and not self.has_private():
            return False
        found = self.repo_of(conversation).exists(conversation)
        if not found:
            self._where.pop(conversation, None)  # it may yet be created, in either one
        return found

    def size(self, conversation: str) -> int:
        """Bytes on disk that keeping the conversation costs (storage.conversation_size)."""
        return storage.conversation_size(self.repo_of(conversation), conversation)

    def archive(self, conversations: Sequence[str], target: Path) -> None:
        """Write the conversations to the git bundle `target` (storage.archive); they must
        share one repository (live and isolated ones of a checkout are archived apart)."""
        repos = {self.repo_of(c).git_dir: self.repo_of(c) for c in conversations}
        if len(repos) != 1:
            raise UsageError(
                "these sessions' conversations live in two repositories (live ones in "
                ".freshline/conversations.git, isolated ones in the checkout's): archive "
                "them separately"
            )
        storage.archive(next(iter(repos.values())), conversations, target)

    def remove(self, conversation: str) -> None:
        """Forget a conversation: ref, pending ref, worktree, turn files (its objects go at
        the next `collect`); for a session that recorded none, its turn files. Raises
        SessionBusy while a turn holds it."""
        if not self.exists(conversation):
            storage.remove_turn_files(self.workspace, conversation)
            return
        repo = self.repo_of(conversation)
        with recovery.guard(repo, conversation, wait=False):
            storage.remove(repo, conversation)
        self._where.pop(conversation, None)

    def refs(self) -> list[storage.RefInfo]:
        """Every conversation of either repository, with when its head was recorded (a
        repository not created yet is not created to say so)."""
        found = storage.conversation_refs(self.repo) if self.checkout else []
        if self.has_private():
            found += storage.conversation_refs(self.home(private=True))
        return found

    def remove_worktree(self, path: Path) -> None:
        """Remove a worktree folder no conversation owns any more."""
        storage.remove_worktree(self.repo, path)

    @property
    def checkout(self) -> bool:
        """Whether the workspace is a git checkout."""
        return is_checkout(self.workspace)

    def has_private(self) -> bool:
        """Whether freshline's own repository exists yet."""
        return (self.workspace / PRIVATE_REPO / "HEAD").exists()

    def collect(self, include_user_repo: bool = False) -> None:
        """Run git's gc on freshline's own repository (pruning at once), and on the
        checkout's only when asked (with git's defaults): storage.collect."""
        if self.has_private():
            storage.collect(self.home(private=True))
        if include_user_repo and is_checkout(self.workspace):
            storage.collect(self.repo)

    def changed_paths(
        self, old_tree: str, new_tree: str, conversation: str | None = None
    ) -> list[str]:
        """The paths that differ between two trees (of `conversation`'s repository; by
        default freshline's own, where live trees are)."""
        repo = self.repo_of(conversation) if conversation else self.home(private=True)
        return trees.changed_paths(repo.git, old_tree, new_tree)
