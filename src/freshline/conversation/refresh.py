"""Refresh and sync: merging the checkout target into a conversation, in memory.

The graph makes git's natural merge base right (git 2.39 has no `--merge-base`): the root's
first parent is the base and every merged target becomes a second parent, so the merge base
of the head and a target that descends from the last refresh parent is that parent. Before
merging, executable-bit residue is restored to the base's modes (policy.exec_bit_restores).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from freshline.conversation.events import Author, Event, Mode, Refresh, encode
from freshline.conversation.git import Git, TreeChange
from freshline.conversation.policy import ModeDiff, RefreshAction, decide_refresh, exec_bit_restores
from freshline.conversation.repository import Chain, Repo
from freshline.conversation.trees import head_ref, move_worktree, snapshot_worktree
from freshline.errors import (
    ConflictStop,
    ConversationMoved,
    NotFoundError,
    SyncRequired,
    UsageError,
)

PathFilter = Callable[[str], bool]
PENDING_MESSAGE = "freshline: working state before a merge (not an event)\n"


@dataclass(frozen=True)
class Merge:
    """A merge computed in memory: its tree and what it records."""

    tree: str
    target: str  # the merged commit (the second parent)
    record: Refresh


def refresh_target(repo: Repo, chain: Chain) -> str | None:
    """The target commit this turn must merge, or None; raises SyncRequired or ConflictStop."""
    root = chain.root
    if root.mode is not Mode.ISOLATED or not (root.target or "").startswith("refs/"):
        return None  # live conversations read the workspace; a fixed commit never moves
    assert root.target is not None
    target = repo.git.rev_parse(root.target)
    last = chain.last_parent
    if target is None:
        raise SyncRequired(f"target {_short(root.target)} no longer exists: {_sync_hint(chain)}")
    descends = last is not None and target != last and repo.git.is_ancestor(last, target)
    related = last is not None and not descends and repo.git.related(last, target)
    action = decide_refresh(target, last, descends, related)
    if action is RefreshAction.SYNC_REQUIRED:
        raise SyncRequired(
            f"target {_short(root.target)} no longer descends from the last refresh "
            f"{(last or '')[:12]}: {_sync_hint(chain)}"
        )
    if action is RefreshAction.UNRELATED:
        raise ConflictStop(f"target {_short(root.target)} shares no history with the conversation")
    return target if action is RefreshAction.MERGE else None


def merge_target(
    repo: Repo,
    chain: Chain,
    ours_tree: str,
    target: str,
    name: str,
    with_conflicts: bool = False,
    path_filter: PathFilter | None = None,
    base: str | None = None,
) -> Merge:
    """Merge `target` into the conversation whose working tree is `ours_tree`.

    `base`: the merge base when already known (a refresh: the last refresh parent). Writes
    objects only. Raises ConflictStop on conflicts unless `with_conflicts`, in which case
    the tree holds the conflict-marked files and the record lists them.
    """
    git = repo.git
    base = base or _merge_base(repo, chain.head, target)
    previous = chain.last_parent
    ours = _as_commit(git, chain, ours_tree)
    ours_diff, upstream = git.diff_commits([(base, ours), (previous or base, target)])
    restores = exec_bit_restores(_mode_diffs(ours_diff), chain.deliberate_modes)
    if restores:
        ours = _as_commit(git, chain, _with_modes(repo, ours_tree, restores))
    tree, conflicts = git.merge_tree(ours, target)
    if conflicts and not with_conflicts:
        raise ConflictStop(f"merging {_short(name)} conflicts in {len(conflicts)} "
                           f"{'path' if len(conflicts) == 1 else 'paths'}",
                           conflicts)
    paths = sorted({change.path for change in upstream})
    if path_filter is not None:
        paths = [p for p in paths if path_filter(p)]
    record = Refresh(name, previous, target, tuple(paths), tuple(sorted(restores)),
                     tuple(conflicts))
    return Merge(tree, target, record)


def _as_commit(git: Git, chain: Chain, tree: str) -> str:
    """The head when `tree` is its tree, else a commit of `tree` on it (merge-tree merges
    commits; this one is never referenced)."""
    if tree == chain.head_tree:
        return chain.head
    return git.commit_tree(tree, [chain.head], PENDING_MESSAGE)


def sync(
    repo: Repo,
    conversation: str,
    rev: str,
    with_conflicts: bool = False,
    path_filter: PathFilter | None = None,
) -> Refresh | None:
    """Merge an explicit `rev` into an isolated conversation now, as a system event.

    Returns what was merged, or None when the conversation already contains `rev`.
    """
    chain = repo.chain(conversation)
    if chain.root.mode is not Mode.ISOLATED:
        raise UsageError(f"conversation {conversation} is live: there is nothing to sync")
    target = repo.git.rev_parse(rev)
    if target is None:
        raise NotFoundError(f"unknown rev {rev!r}")
    if repo.git.is_ancestor(target, chain.head):
        return None
    worktree = repo.worktree_git(conversation, chain.head)
    ours = snapshot_worktree(worktree, (chain.head, chain.head_tree))
    merge = merge_target(repo, chain, ours, target, rev, with_conflicts, path_filter)
    event = Event(Author.SYSTEM, f"sync {rev}", sync=merge.record)
    commit = repo.git.commit_tree(merge.tree, [chain.head, target], encode(event))
    move_worktree(worktree, ours, merge.tree)
    try:
        advance(repo, conversation, commit, chain.head, worktree)
    except ConversationMoved:
        move_worktree(worktree, merge.tree, ours)  # nothing recorded: nothing moved either
        raise
    return merge.record


def advance(
    repo: Repo, conversation: str, new: str, old: str, worktree: Git | None = None
) -> None:
    """Move the conversation's ref from `old` to `new` (and the worktree's HEAD with it, in
    one transaction), or fail if another writer moved the ref first."""
    updates: list[tuple[str, str, str | None]] = [(repo.ref(conversation), new, old)]
    if worktree is not None:
        updates.append((head_ref(worktree), new, None))
    if not repo.git.update_refs_cas(updates):
        raise ConversationMoved(
            f"conversation {conversation} moved while this turn was prepared (another send "
            "won); nothing was recorded: send again"
        )


def _merge_base(repo: Repo, head: str, target: str) -> str:
    code, out, _ = repo.git.run_status("merge-base", head, target)
    if code != 0:
        raise ConflictStop(f"{target[:12]} shares no history with the conversation")
    return out.decode().strip()


def _mode_diffs(changes: list[TreeChange]) -> list[ModeDiff]:
    return [
        ModeDiff(c.path, c.old_mode, c.old_oid, c.new_mode, c.new_oid)
        for c in changes
        if c.status == "M" and c.old_oid == c.new_oid
    ]


def _with_modes(repo: Repo, tree: str, modes: dict[str, str]) -> str:
    """`tree` with the given paths' modes replaced (same blobs)."""
    if not modes:
        return tree
    with repo.git.temp_index() as index:
        index.run("read-tree", tree)
        blobs = {e.path: e.oid for e in index.ls_tree(tree) if e.path in modes}
        index.index_info((mode, blobs[path], path) for path, mode in modes.items())
        return index.write_tree()


def _short(name: str) -> str:
    return name.removeprefix("refs/heads/")


def _sync_hint(chain: Chain) -> str:
    return f"run `freshline sync {chain.conversation} REV` to choose what to merge"
