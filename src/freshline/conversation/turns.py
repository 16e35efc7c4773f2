"""Opening conversations and recording turns in two steps around the model call.

`prepare_turn` runs before the model is called: it computes the human commit's tree (and
the refresh merge, in memory) and raises ConflictStop / SyncRequired with nothing moved.
`commit_turn` runs after the model answered: it writes the human commit and the event
commits, then moves the ref by compare-and-swap from the head `prepare_turn` saw, so of two
concurrent sends one wins and the other leaves no trace but unreferenced objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from freshline.conversation.events import Author, Event, Mode, Refresh, Root, encode
from freshline.conversation.git import EMPTY_TREE, ZERO, Git
from freshline.conversation.refresh import PathFilter, advance, merge_target, refresh_target
from freshline.conversation.repository import Repo
from freshline.conversation.trees import (
    LiveDelta,
    head_ref,
    live_tree,
    live_tree_delta,
    move_worktree,
    snapshot_worktree,
)
from freshline.errors import NotFoundError, UsageError
from freshline.store.records import IndexEntry


@dataclass(frozen=True)
class PendingTurn:
    """A human turn computed but not recorded: what `commit_turn` will write."""

    repo: Repo = field(repr=False, compare=False)
    conversation: str
    head: str  # the ref's value when prepared: the compare-and-swap's expected old value
    message: str
    tree: str  # the human commit's tree (the merge result when refreshed)
    parents: tuple[str, ...]  # (head,) or (head, target) when refreshed
    mode: Mode
    refresh: Refresh | None = None  # what this turn's refresh merged
    merges: tuple[Refresh, ...] = ()  # syncs since the last turn, then the refresh: to announce
    unmerged: str | None = None  # isolated: the worktree's tree before the refresh moved it
    wire: str | None = None  # what the model received for the message (see Event.wire)


def open_conversation(
    repo: Repo,
    conversation: str,
    mode: Mode,
    target: str | None = None,
    entries: Iterable[IndexEntry] | None = None,
    project: str | None = None,
) -> str:
    """Write the root event and create the ref (and the worktree in isolated mode).

    `target` (isolated): a rev to follow; default what the workspace has checked out now.
    `entries` (live): the in-scope index, written as the root's tree.
    """
    ref = repo.ref(conversation)
    if repo.exists(conversation):
        raise UsageError(f"conversation {conversation} already exists")
    name, base = _target(repo, target) if repo.checkout else (None, None)
    if mode is Mode.ISOLATED and base is None:
        raise UsageError("isolated mode needs a git checkout with at least one commit")
    base_tree = repo.git.tree_of(base) if base else None
    tree = base_tree or EMPTY_TREE
    if mode is Mode.LIVE and entries is not None:
        tree = live_tree(repo.git, entries, repo.workspace, base_tree)
    root = Root(base, name, base, mode, project)
    event = Event(Author.SYSTEM, "conversation opened", root=root)
    commit = repo.git.commit_tree(tree, [base] if base else [], encode(event))
    if not repo.git.update_ref_cas(ref, commit, ZERO):
        raise UsageError(f"conversation {conversation} already exists")
    if mode is Mode.ISOLATED:
        _add_worktree(repo, conversation, commit)
    return commit


def prepare_turn(
    repo: Repo,
    conversation: str,
    message: str,
    entries: Iterable[IndexEntry] | None = None,
    path_filter: PathFilter | None = None,
    refresh: bool = True,
    delta: LiveDelta | None = None,
) -> PendingTurn:
    """Compute the human turn before the model is called; nothing is recorded yet.

    Live: the tree is `delta` applied to its base (what changed since that tree was written:
    costs what the delta costs), else, when there is no delta or its base tree is gone, it
    is written from `entries` (iterated only then: a lazy iterable costs nothing when the
    delta applies), else it is the head's tree. Isolated: the
    worktree is snapshotted and, when the target moved, merged in memory and the worktree
    moved to the result. Raises ConflictStop or SyncRequired with the ref and worktree as
    they were.
    """
    chain = repo.chain(conversation)
    head_tree = chain.head_tree
    turn = PendingTurn(repo, conversation, chain.head, message, head_tree, (chain.head,),
                       chain.root.mode, merges=chain.syncs_since_last_turn)
    if chain.root.mode is Mode.LIVE:
        base = head_tree if delta is None else delta.base or head_tree
        if delta is not None and (base == head_tree or not repo.git.missing_objects([base])):
            return replace(turn, tree=live_tree_delta(repo.git, base, delta, repo.workspace))
        if entries is None:
            return turn
        return replace(turn, tree=live_tree(repo.git, entries, repo.workspace, head_tree))
    worktree = repo.worktree_git(conversation, chain.head)
    ours = snapshot_worktree(worktree, (chain.head, head_tree))
    target = refresh_target(repo, chain) if refresh else None
    if target is None:
        return replace(turn, tree=ours)
    assert chain.root.target is not None
    merge = merge_target(repo, chain, ours, target, chain.root.target, path_filter=path_filter,
                         base=chain.last_parent)
    move_worktree(worktree, ours, merge.tree)
    return replace(turn, tree=merge.tree, parents=(chain.head, target), refresh=merge.record,
                   merges=(*turn.merges, merge.record), unmerged=ours)


def abandon_turn(pending: PendingTurn) -> None:
    """Undo what preparing an isolated turn did to the worktree (a refresh's merge, and
    any file a tool wrote since), after a failure before `commit_turn` recorded it."""
    if pending.mode is not Mode.ISOLATED or pending.repo.head(pending.conversation) != pending.head:
        return  # live, or another send won the ref: the worktree is the winner's now
    worktree = pending.repo.worktree_git(pending.conversation, pending.head)
    move_worktree(worktree, snapshot_worktree(worktree), pending.unmerged or pending.tree)


def commit_turn(pending: PendingTurn, events: Sequence[Event]) -> str:
    """Record the human commit and `events`, then move the ref by compare-and-swap.

    An event's tree is its own `tree` when set, else the previous event's; in isolated mode
    the last event without a tree gets a snapshot of the worktree (the agent's edits).
    Returns the new head; raises ConversationMoved when another send moved the ref first.
    """
    repo = pending.repo
    for event in events:
        if event.root or event.refresh or event.sync:
            raise UsageError("root, refresh and sync events are written by freshline itself")
    human = Event(Author.USER, pending.message, refresh=pending.refresh, wire=pending.wire)
    worktree = repo.worktree_git(pending.conversation) if pending.mode is Mode.ISOLATED else None
    head = repo.git.commit_tree(pending.tree, pending.parents, encode(human))
    tree = pending.tree
    for i, event in enumerate(events):
        if event.tree:
            tree = event.tree
        elif worktree is not None and i == len(events) - 1:
            tree = snapshot_worktree(worktree)
        head = repo.git.commit_tree(tree, [head], encode(event))
    advance(repo, pending.conversation, head, pending.head, worktree)
    return head


def close_worktree(repo: Repo, conversation: str) -> None:
    """Remove an isolated conversation's worktree (its commits stay)."""
    path = repo.worktree(conversation)
    if path.exists():
        repo.git.worktree_remove(path)


def reset_worktree(repo: Repo, conversation: str) -> None:
    """Put the worktree's files back to the conversation head (discarding unrecorded edits)."""
    worktree = repo.worktree_git(conversation)
    head = repo.head(conversation)
    move_worktree(worktree, snapshot_worktree(worktree), repo.git.tree_of(head))
    repo.git.update_refs_cas([(head_ref(worktree), head, None)])


def _target(repo: Repo, target: str | None) -> tuple[str | None, str | None]:
    """(name, commit) of the checkout target: a full ref name, or a commit id if fixed."""
    here = Git(cwd=repo.workspace)
    if target in (None, "HEAD"):
        code, out, _ = here.run_status("symbolic-ref", "-q", "HEAD")
        name = out.decode().strip() if code == 0 else None
        commit = here.rev_parse("HEAD")
        return (name or commit), commit
    assert target is not None
    commit = here.rev_parse(target)
    if commit is None:
        raise NotFoundError(f"unknown rev {target!r}")
    code, out, _ = here.run_status(
        "rev-parse", "--verify", "--symbolic-full-name", "--end-of-options", target
    )
    full = out.decode().strip() if code == 0 else ""
    return (full if full.startswith("refs/") else commit), commit


def _add_worktree(repo: Repo, conversation: str, commit: str) -> None:
    path = repo.worktree(conversation)
    path.parent.mkdir(parents=True, exist_ok=True)
    _ignore_private_dir(repo.workspace)
    try:
        repo.git.worktree_add(path, commit)
    except Exception:
        repo.git.run_status("update-ref", "-d", repo.ref(conversation), commit)
        raise


def _ignore_private_dir(workspace: Path) -> None:
    # Keeps `.freshline/` (worktrees included) out of the user's `git status`.
    ignore = workspace / ".freshline" / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
