"""Refresh and sync: merging the checkout target into a conversation, in memory.

The graph makes git's natural merge base right (git 2.39 has no `--merge-base`): the root's
first parent is the base and every merged target becomes a second parent, so the merge base
of the head and a target that descends from the last refresh parent is that parent. Before
merging, executable-bit residue is restored to the base's modes (policy.exec_bit_restores).
A merge announces exactly the paths whose entry differs between the agent's tree before it
and after it, and records each conflict with the kind git gave it (conflicts.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from freshline.conversation import batch, recovery
from freshline.conversation.conflicts import by_kind, path_kinds
from freshline.conversation.events import Author, Event, Mode, Refresh, encode
from freshline.conversation.git import ZERO, Git
from freshline.conversation.policy import RefreshAction, decide_refresh, exec_bit_restores
from freshline.conversation.repository import Chain, Repo
from freshline.conversation.trees import (
    head_ref,
    mode_diffs,
    move_worktree,
    normalize_modes,
    snapshot_worktree,
)
from freshline.conversation.treewrite import update_tree
from freshline.errors import (
    ConflictStop,
    ConversationMoved,
    NotFoundError,
    SyncRequired,
    UsageError,
)
from freshline.refs import short_ref

PathFilter = Callable[[str], bool]
PENDING_MESSAGE = "freshline: working state before a merge (not an event)\n"


@dataclass(frozen=True)
class Merge:
    """A merge computed in memory: its tree and what it records."""

    tree: str
    target: str  # the merged commit (the second parent)
    record: Refresh


def refresh_target(repo: Repo, chain: Chain, target: str | None) -> str | None:
    """The target commit this turn must merge, or None; raises SyncRequired or ConflictStop.

    `target`: the commit the conversation's followed ref names now (Repo.current).
    """
    root = chain.root
    if chain.followed is None:
        return None  # live conversations read the workspace; a fixed commit never moves
    assert root.target is not None
    last = chain.last_parent
    if target is None:
        raise SyncRequired(
            f"target {short_ref(root.target)} no longer exists: {_sync_hint(chain)}"
        )
    descends = last is not None and target != last and repo.git.is_ancestor(last, target)
    related = last is not None and not descends and repo.git.related(last, target)
    action = decide_refresh(target, last, descends, related)
    if action is RefreshAction.SYNC_REQUIRED:
        raise SyncRequired(
            f"target {short_ref(root.target)} no longer descends from the last refresh "
            f"{(last or '')[:12]}: {_sync_hint(chain)}"
        )
    if action is RefreshAction.UNRELATED:
        raise ConflictStop(
            f"target {short_ref(root.target)} shares no history with the conversation"
        )
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
    ours = _as_commit(git, chain, ours_tree)
    merged = git.merge_tree(ours, target)
    # Merged first, both diffs in one call: residue to restore is rare, and then the
    # merge is done again.
    residue, changed = batch.diff_pairs(git, [(base, ours)], [(ours_tree, merged.tree)])
    ours_diff = mode_diffs(residue)
    restores = exec_bit_restores(ours_diff, chain.deliberate_modes)
    if restores:
        blobs = {d.path: d.our_oid for d in ours_diff}
        modes = {path: (mode, blobs[path]) for path, mode in restores.items()}
        restored = _as_commit(git, chain, update_tree(git, ours_tree, modes))
        merged = git.merge_tree(restored, target)
        changed = git.diff_trees(ours_tree, merged.tree)
    if merged.conflicts and not with_conflicts:
        count = len(merged.paths)
        raise ConflictStop(
            f"merging {short_ref(name)} conflicts in {count} {'path' if count == 1 else 'paths'}"
            f": {by_kind(merged.conflicts)}",
            list(merged.paths), path_kinds(merged.conflicts), short_ref(name),
        )
    paths = sorted({c.path for c in changed})
    if path_filter is not None:
        paths = [p for p in paths if path_filter(p)]
    record = Refresh(name, chain.last_parent, target, tuple(paths), tuple(sorted(restores)),
                     merged.conflicts)
    return Merge(merged.tree, target, record)


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
    with recovery.guard(repo, conversation):
        chain = repo.chain(conversation)
        if chain.root.mode is not Mode.ISOLATED:
            raise UsageError(f"conversation {conversation} is live: there is nothing to sync")
        target = repo.git.rev_parse(rev)
        if target is None:
            raise NotFoundError(f"unknown rev {rev!r}")
        if repo.git.is_ancestor(target, chain.head):
            return None
        worktree = repo.worktree_git(conversation, chain.head)
        raw = snapshot_worktree(worktree, (chain.head, chain.head_tree))
        ours, _ = normalize_modes(repo.git, chain.head_tree, raw)
        merge = merge_target(repo, chain, ours, target, rev, with_conflicts, path_filter)
        event = Event(Author.SYSTEM, f"sync {rev}", sync=merge.record)
        commit = repo.git.commit_tree(merge.tree, [chain.head, target], encode(event))
        recovery.begin(repo, conversation, chain.head, raw)
        move_worktree(worktree, raw, merge.tree)
        # A failure from here leaves the journal: letting the lock go rolls the worktree back.
        advance(repo, conversation, commit, chain.head, worktree)
        recovery.finish(repo, conversation)
        return merge.record


def advance(
    repo: Repo, conversation: str, new: str, old: str, worktree: Git | None = None
) -> None:
    """Move the conversation's ref from `old` to `new` (and the worktree's HEAD with it, in
    one transaction; in freshline's own repository the pending ref goes, since the turn's
    tree is now the head's), or fail if another writer moved the ref first."""
    updates: list[tuple[str, str, str | None]] = [(repo.ref(conversation), new, old)]
    if worktree is not None:
        updates.append((head_ref(worktree), new, None))
    if repo.private:
        updates.append((repo.pending_ref(conversation), ZERO, None))
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


def _sync_hint(chain: Chain) -> str:
    return f"run `freshline sync {chain.conversation} REV` to choose what to merge"
