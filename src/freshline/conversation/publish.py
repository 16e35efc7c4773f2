"""The conversation's own work: diff against the latest refresh parent, and publishing.

Both compare with the latest refresh parent, whose content the head already includes, so
upstream changes never show up as the conversation's. A publication is a commit whose tree
is the head's and whose parents are [previous publication, latest refresh parent]: later
publications fast-forward, and its diff against the target is the conversation's work.
"""

from __future__ import annotations

from freshline.conversation import batch
from freshline.conversation.conflicts import Conflict, by_kind, is_resolved, path_kinds
from freshline.conversation.events import Mode
from freshline.conversation.git import ZERO
from freshline.conversation.repository import Chain, Repo
from freshline.errors import ConflictStop, GitError, UsageError
from freshline.paths import shown

TRAILER = "Freshline-Conversation"
RESOLVE_HINT = (
    "remove the markers of a content conflict; for the other kinds delete the path or keep "
    "it by writing it with a tool"
)


def own_base(chain: Chain) -> str:
    """The latest refresh parent; for a live conversation (whose trees hold only its
    project's files) or one without a base, the root event."""
    base = chain.last_parent if chain.root.mode is Mode.ISOLATED else None
    base = base or chain.events[0].commit
    assert base is not None
    return base


def diff(repo: Repo, conversation: str) -> str:
    """The patch of the conversation's own work (latest refresh parent → head)."""
    chain = repo.chain(conversation)
    return diff_trees(repo, own_base(chain), chain.head)


def diff_trees(repo: Repo, old: str, new: str) -> str:
    """The patch from commit (or tree) `old` to `new`, as git prints it."""
    out = repo.git.run(
        "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary", old, new,
    )
    return out.decode("utf-8", "surrogateescape")


def unresolved_conflicts(repo: Repo, chain: Chain) -> list[Conflict]:
    """The conflicts syncs recorded that the head's tree does not resolve yet
    (conflicts.is_resolved), in the order they were recorded."""
    recorded = [
        (i, e.tree or "", e.merged) for i, e in enumerate(chain.events)
        if e.merged is not None and e.merged.conflicts
    ]
    if not recorded:
        return []
    paths = (p for *_, merged in recorded for p in merged.conflict_paths)
    present = batch.contents(repo.git, chain.head, paths)
    remaining: list[Conflict] = []
    for index, tree, merged in recorded:
        held = set(batch.contents(repo.git, tree, merged.conflict_paths))
        touched = chain.touched_after(index)
        remaining += [
            c for c in merged.conflicts
            if c not in remaining and not is_resolved(c, held, present, touched)
        ]
    return remaining


def publish(repo: Repo, conversation: str, branch: str) -> str:
    """Point refs/heads/`branch` at a publication of the conversation; returns its commit.

    Refuses with ConflictStop (exit 3) while a recorded conflict is unresolved, listing
    them by kind, and with UsageError when the branch holds unrelated work or is checked
    out somewhere.
    """
    ref = _branch_ref(repo, branch)
    chain = repo.chain(conversation)
    if remaining := unresolved_conflicts(repo, chain):
        paths = sorted({p for c in remaining for p in c.paths})
        raise ConflictStop(
            f"not published: unresolved conflicts ({by_kind(remaining)}); {RESOLVE_HINT}",
            paths, path_kinds(remaining),
        )
    if chain.root.mode is not Mode.ISOLATED or chain.last_parent is None:
        raise UsageError(f"conversation {conversation} is live: only isolated work is published")
    previous = repo.git.rev_parse(ref)
    parents = _publication_parents(repo, conversation, branch, previous, chain.last_parent)
    head_tree = chain.head_tree
    if previous is not None and parents == [previous] and repo.git.tree_of(previous) == head_tree:
        return previous  # already published as it stands
    _refuse_checked_out(repo, ref)
    message = (
        f"freshline: publish conversation {conversation}\n\n"
        f"{TRAILER}: {conversation}\nFreshline-Head: {chain.head}\n"
    )
    commit = repo.git.commit_tree(head_tree, parents, message)
    if not repo.git.update_ref_cas(ref, commit, previous or ZERO):
        raise GitError(f"branch {branch} moved while publishing; nothing was changed")
    return commit


def _publication_parents(
    repo: Repo, conversation: str, branch: str, previous: str | None, base: str
) -> list[str]:
    git = repo.git
    if previous is None or git.is_ancestor(previous, base):
        return [base]
    if not _is_publication(repo, previous, conversation):
        raise UsageError(f"branch {branch} exists and is not a publication of {conversation}")
    return [previous] if git.is_ancestor(base, previous) else [previous, base]


def _is_publication(repo: Repo, commit: str, conversation: str) -> bool:
    body = repo.git.text("cat-file", "commit", commit)
    return f"\n{TRAILER}: {conversation}\n" in body + "\n"


def _branch_ref(repo: Repo, branch: str) -> str:
    """refs/heads/`branch`, once git's own rule for branch names accepts `branch` as it is
    (no leading '-', no `@{-N}` shorthand: a name is data, never an option)."""
    if branch.startswith("-"):
        raise UsageError(shown(f"invalid branch name {branch!r}: it may not start with '-'"))
    valid = "\0" not in branch
    if valid:
        code, out, _ = repo.git.run_status("check-ref-format", "--branch", branch)
        valid = code == 0 and out.decode("utf-8", "surrogateescape").strip() == branch
    if not valid:
        raise UsageError(shown(f"invalid branch name {branch!r} (see git check-ref-format)"))
    return f"refs/heads/{branch}"


def _refuse_checked_out(repo: Repo, ref: str) -> None:
    out = repo.git.text("worktree", "list", "--porcelain")
    for block in out.split("\n\n"):
        if f"branch {ref}" in block.splitlines():
            where = block.splitlines()[0].removeprefix("worktree ")
            raise UsageError(f"branch {ref.removeprefix('refs/heads/')} is checked out at {where}")
