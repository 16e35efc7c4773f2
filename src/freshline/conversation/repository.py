"""Where conversations live, and what a conversation's first-parent chain says.

Live conversations live in freshline's own bare repository, `.freshline/conversations.git`:
their trees hold every in-scope file, untracked ones included, and none of that belongs in
the user's `.git`. In a git checkout that repository borrows the user's objects (its
`objects/info/alternates` names the user's object store), so a tracked file is never
copied: only what the user's repository lacks is written. Its root events name the
checkout's commit as `base` in their message but have no parent, so its history never
depends on commits the user might rewrite. Isolated conversations live in the checkout's
own repository, as their worktrees and published branches need (their trees are the
checkout's commits plus the agent's edits). Live conversations recorded before this split
stay where they are: a conversation is looked up in the private repository first.

Everything a conversation knows (root, refresh parents, deliberate mode changes, recorded
conflicts) is read back from its commits: there is no other state.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from freshline.conversation import objects
from freshline.conversation.events import Author, Event, Mode, Refresh, Root, decode
from freshline.conversation.git import Git
from freshline.conversation.looseobjects import ObjectDir, ref_value, swap_ref
from freshline.errors import GitError, NotFoundError, UsageError
from freshline.withholding import Withholder

REF_PREFIX = "refs/freshline/conversations/"
PENDING_PREFIX = "refs/freshline/pending/"  # a prepared live turn's tree, until it is recorded
PRIVATE_REPO = Path(".freshline") / "conversations.git"
WORKTREES = Path(".freshline") / "worktrees"
TURNS = Path(".freshline") / "turns"  # per conversation: the turn lock and journal
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_checkout(workspace_root: Path) -> bool:
    """Whether the workspace root is itself a git checkout."""
    return (workspace_root / ".git").exists()


def user_repository(workspace_root: Path) -> Path:
    """The git directory (common dir) of a checkout workspace."""
    root = workspace_root.resolve()
    return Path(Git(cwd=root).text("rev-parse", "--path-format=absolute", "--git-common-dir"))


def private_repository(workspace_root: Path) -> Path:
    """`.freshline/conversations.git`, created on first use; in a checkout, its alternates
    name the user's object store (a relative path: the workspace may move)."""
    root = workspace_root.resolve()
    private = root / PRIVATE_REPO
    if not (private / "HEAD").exists():
        private.parent.mkdir(parents=True, exist_ok=True)
        Git().run("init", "--quiet", "--bare", str(private))
    if is_checkout(root):
        borrowed = os.path.relpath(user_repository(root) / "objects", private / "objects")
        alternates = private / "objects" / "info" / "alternates"
        if not alternates.exists() or alternates.read_text(encoding="utf-8") != borrowed + "\n":
            alternates.parent.mkdir(parents=True, exist_ok=True)
            alternates.write_text(borrowed + "\n", encoding="utf-8")
    return private


def repository_for(workspace_root: Path, private: bool = False) -> Path:
    """The git directory that holds the workspace's conversations (created on first use):
    with `private` (live conversations) or outside a checkout, freshline's own; else the
    checkout's."""
    root = workspace_root.resolve()
    if private or not is_checkout(root):
        return private_repository(root)
    return user_repository(root)


def check_id(conversation: str) -> str:
    """`conversation` if it is a usable ref component, else UsageError."""
    if not _ID.fullmatch(conversation) or ".." in conversation or conversation.endswith(".lock"):
        raise UsageError(f"invalid conversation id {conversation!r}: use letters, digits, . _ -")
    return conversation


@dataclass(frozen=True)
class Chain:
    """A conversation as its first-parent chain describes it (events oldest first)."""

    conversation: str
    head: str
    events: tuple[Event, ...]

    @property
    def root(self) -> Root:
        """The root event's details."""
        root = self.events[0].root
        assert root is not None
        return root

    @property
    def followed(self) -> str | None:
        """The ref an isolated conversation follows (a fixed commit never moves: None)."""
        target = self.root.target
        isolated = self.root.mode is Mode.ISOLATED
        return target if isolated and target and target.startswith("refs/") else None

    @property
    def head_tree(self) -> str:
        """The tree of the head event."""
        tree = self.events[-1].tree
        assert tree is not None
        return tree

    @property
    def last_parent(self) -> str | None:
        """The latest refresh parent: the last merged target, else the base."""
        for event in reversed(self.events):
            if event.merged is not None:
                return event.merged.to
        return self.root.base

    @property
    def syncs_since_last_turn(self) -> tuple[Refresh, ...]:
        """Syncs recorded after the latest human turn (not yet announced to the agent)."""
        syncs: list[Refresh] = []
        for event in reversed(self.events):
            if event.author is Author.USER:
                break
            if event.sync is not None:
                syncs.append(event.sync)
        return tuple(reversed(syncs))

    @property
    def deliberate_modes(self) -> frozenset[str]:
        """Paths whose mode a tool changed on purpose."""
        return frozenset(p for e in self.events for p in e.mode_changes)

    def touched_after(self, index: int) -> frozenset[str]:
        """Paths tool events after event `index` wrote, deleted or chmod-ed."""
        return frozenset(
            p for e in self.events[index + 1 :] for p in (*e.changed, *e.mode_changes)
        )


class Repo:
    """One workspace's conversation repository."""

    def __init__(
        self, workspace_root: Path, date: str | None = None, private: bool = False,
        max_blob: int | None = None, screen: Withholder | None = None,
    ) -> None:
        self.workspace = workspace_root.resolve()
        self.checkout = is_checkout(self.workspace)
        self.private = private or not self.checkout  # freshline's own repository
        self.git_dir = repository_for(self.workspace, self.private)
        self.git = Git(self.git_dir, date=date)
        self.max_blob = max_blob  # live trees record larger files as pointers (pointer.py)
        self.screen = screen  # live trees withhold secrets and leave hard links out
        self._chains: dict[str, Chain] = {}  # the last chain read, per conversation

    @cached_property
    def loose(self) -> ObjectDir:
        """Its objects as this process reads and writes them without git (looseobjects)."""
        return ObjectDir(self.git_dir / "objects")

    def ref_value(self, conversation: str) -> str | None:
        """The commit the conversation's ref names, read without git (None: no such
        conversation)."""
        return ref_value(self.git_dir, self.ref(conversation))

    def swap_ref(self, conversation: str, new: str, old: str) -> bool:
        """Move the conversation's ref from `old` to `new` (False: it was not at `old`),
        through git's lock file in this process, or by git when another holds it."""
        moved = swap_ref(self.git_dir, self.ref(conversation), new, old)
        if moved is None:
            return self.git.update_ref_cas(self.ref(conversation), new, old)
        return moved

    def sink(self) -> objects.Sink:
        """Where one write's new objects go: a pack in freshline's own repository, loose
        objects in the user's."""
        return objects.sink(self.git, self.private, self.max_blob, self.screen)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the objects lock (shared) while writing objects and the ref that names
        them: `freshline gc` prunes freshline's own repository only when nobody does.
        Then, the lock let go, fold its packs if they piled up (objects.fold_packs)."""
        if not self.private:
            yield
            return
        with objects.objects_lock(self.git_dir, exclusive=False):
            yield
        objects.fold_packs(self.git)

    @staticmethod
    def pending_ref(conversation: str) -> str:
        """The ref that keeps a prepared live turn's tree until the turn is recorded."""
        return PENDING_PREFIX + check_id(conversation)

    @staticmethod
    def ref(conversation: str) -> str:
        """The ref of a conversation."""
        return REF_PREFIX + check_id(conversation)

    def worktree(self, conversation: str) -> Path:
        """Where an isolated conversation's agent works."""
        return self.workspace / WORKTREES / check_id(conversation)

    def turn_file(self, conversation: str, suffix: str) -> Path:
        """The conversation's turn lock (`lock`) or journal (`json`)."""
        return self.workspace / TURNS / f"{check_id(conversation)}.{suffix}"

    def worktree_git(self, conversation: str, head: str | None = None) -> Git:
        """A Git running inside the conversation's worktree.

        A missing worktree is checked out again at `head` when given (its files are the
        head's: nothing unrecorded survived anyway), else NotFoundError.
        """
        path = self.worktree(conversation)
        if not (path / ".git").exists():
            if head is None or path.exists():
                raise NotFoundError(f"conversation {conversation} has no worktree at {path}")
            self.git.worktree_add(path, head)
        return self.git.at(path)

    def head(self, conversation: str) -> str:
        """The conversation's head commit, or NotFoundError."""
        head = self.git.rev_parse(self.ref(conversation))
        if head is None:
            raise NotFoundError(f"no conversation {conversation!r}")
        return head

    def exists(self, conversation: str) -> bool:
        """Whether the conversation's ref exists."""
        return self.git.rev_parse(self.ref(conversation)) is not None

    def conversations(self) -> list[str]:
        """The ids of every conversation in the repository, sorted."""
        return sorted(name.removeprefix(REF_PREFIX) for name in self.git.refs(REF_PREFIX))

    def chain(self, conversation: str, head: str | None = None) -> Chain:
        """Read the first-parent chain from `head` (default: the ref) back to the root."""
        start = head or self.ref(conversation)
        try:
            chain = self._read(conversation, start)
        except GitError:
            if not self.exists(conversation):
                raise NotFoundError(f"no conversation {conversation!r}") from None
            raise
        if chain is None:
            raise GitError(f"conversation {conversation} has no root event below {start}")
        self._chains[conversation] = chain
        return chain

    def extend(self, conversation: str, old_head: str, events: Sequence[Event]) -> None:
        """Remember that `events` (commit and tree set) now follow `old_head`: the writer
        that just recorded them spares the next read its walk."""
        known = self._chains.get(conversation)
        if known is not None and known.head == old_head and events:
            assert events[-1].commit is not None
            self._chains[conversation] = Chain(
                conversation, events[-1].commit, known.events + tuple(events)
            )

    def current(self, conversation: str) -> tuple[Chain, str | None]:
        """The conversation's chain now and the commit its followed ref names (None when it
        follows none, or the ref is gone): one git call when the chain was read before."""
        known = self._chains.get(conversation)
        if known is not None and known.followed is not None:
            ids = self.git.rev_parse_all([self.ref(conversation), known.followed])
            if ids is not None:
                return self.chain(conversation, ids[0]), ids[1]
        chain = self.chain(conversation)
        return chain, self.git.rev_parse(chain.followed) if chain.followed else None

    def _read(self, conversation: str, start: str) -> Chain | None:
        # Commits never change: the walk can stop at the head of the last chain read and
        # reuse its events, so a read costs what the conversation gained since.
        known = self._chains.get(conversation)
        if known is not None and known.head == start:
            return known
        newest_first: list[Event] = []
        for event in self._walk(start):
            if known is not None and event.commit == known.head:
                events = known.events + tuple(reversed(newest_first))
                break
            newest_first.append(event)
            if event.root is not None:
                events = tuple(reversed(newest_first))
                break
        else:
            return None
        assert events[-1].commit is not None
        return Chain(conversation, events[-1].commit, events)

    def _walk(self, head: str) -> Iterator[Event]:
        # Stream the log and stop at the root: the base's own history can be very long.
        log = self.git.stream("log", "--first-parent", "-z", "--format=%H %T%n%B", head)
        pending = b""
        with closing(log):
            for chunk in log:
                *records, pending = (pending + chunk).split(b"\0")
                for record in records:
                    yield self._event(record)
        if pending.strip():
            yield self._event(pending)

    @staticmethod
    def _event(record: bytes) -> Event:
        ids, _, body = record.decode("utf-8", "surrogateescape").partition("\n")
        commit, tree = ids.split()
        event = decode(body.strip(), commit=commit, tree=tree)
        if event is None:
            raise GitError(f"commit {commit[:12]} in a conversation is not an event")
        return event
