"""Opening conversations and recording turns in two steps around the model call.

`prepare_turn` runs before the model is called: it computes the human commit's tree (and
the refresh merge, in memory) and raises ConflictStop / SyncRequired with nothing moved.
`commit_turn` runs after the model answered: it writes the human commit and the event
commits, then moves the ref by compare-and-swap from the head `prepare_turn` saw, so of two
concurrent sends one wins and the other leaves no trace but unreferenced objects.

Under the conversation's turn lock (recovery.guard), an isolated turn is journaled before
it touches the worktree, so a turn whose process dies is rolled back by the next holder.
At every turn, executable bits flipped outside the tools are put back as the previous
event's tree has them (trees.normalize_modes); a tool's chmod is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from freshline.conversation import batch, recovery, views
from freshline.conversation.events import (
    Author,
    Event,
    Mode,
    Refresh,
    Rewind,
    Root,
    decode,
    encode,
)
from freshline.conversation.git import ZERO, Git
from freshline.conversation.journal import Journal, checkpoint
from freshline.conversation.refresh import PathFilter, advance, merge_target, refresh_target
from freshline.conversation.repository import Chain, Repo
from freshline.conversation.trees import (
    LiveDelta,
    force_worktree,
    live_tree,
    live_tree_delta,
    move_worktree,
    normalize_modes,
    snapshot_worktree,
)
from freshline.errors import ConflictStop, NotFoundError, SyncRequired, UsageError
from freshline.store.records import IndexEntry
from freshline.withholding import Withholder


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
    rewinds: tuple[Rewind, ...] = ()  # rewinds since the last turn: to announce
    before: str | None = None  # isolated: the worktree's tree as the turn found it
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
    root = Root(base, name, base, mode, project)
    event = Event(Author.SYSTEM, "conversation opened", root=root)
    # In freshline's own repository the base is named, never a parent: its history must
    # not hang on commits the user may rewrite.
    parents = [base] if base and not repo.private else []
    with repo.writing():
        with repo.sink() as out:
            if mode is Mode.LIVE and entries is not None:
                tree = live_tree(repo.git, entries, repo.workspace, base_tree, out,
                                 screen_all=True)
            else:  # the empty tree is written too: git reads it without, fsck does not
                tree = base_tree or out.add("tree", b"")
            commit = batch.commit_chain(repo.git, tree, parents, encode(event), [], out)[0]
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
    delta applies), else it is the head's tree. Isolated: the worktree is snapshotted (modes
    normalized) and, when the target moved, merged in memory; the turn is journaled (under
    the turn lock) and the worktree moved to the result. Raises ConflictStop or
    SyncRequired with the ref and worktree as they were.
    """
    chain, target = repo.current(conversation)
    turn = _start(repo, chain, message)
    if chain.root.mode is Mode.LIVE:
        return _live_turn(repo, turn, chain.head_tree, entries, delta)
    worktree = repo.worktree_git(conversation, chain.head)
    before, turn = _snapshot_and_merge(chain, worktree, True, lambda before: _isolated_turn(
        repo, chain, turn, before, refresh, target, path_filter))
    recovery.begin(repo, conversation, chain.head, before)
    checkpoint("prepare:journal")
    move_worktree(worktree, before, turn.tree)
    checkpoint("prepare:moved")
    return turn


def preview_turn(
    repo: Repo, conversation: str, path_filter: PathFilter | None = None
) -> PendingTurn:
    """What `prepare_turn` would compute now, moving nothing (not even the worktree's
    index): the refresh it would merge, or the ConflictStop / SyncRequired it would hit."""
    chain, target = repo.current(conversation)
    turn = _start(repo, chain, "")
    if chain.root.mode is Mode.LIVE:
        return turn
    worktree = repo.worktree_git(conversation, chain.head)
    return _snapshot_and_merge(chain, worktree, False, lambda before: _isolated_turn(
        repo, chain, turn, before, True, target, path_filter))[1]


def _snapshot_and_merge(
    chain: Chain, worktree: Git, keep_index: bool, compute: Callable[[str], PendingTurn]
) -> tuple[str, PendingTurn]:
    """Snapshot the worktree and `compute` the turn from it: (worktree's tree, turn).

    The worktree is usually clean, so the turn is computed for the head's tree while
    `git status` checks the files in another thread (both mostly wait on git); when the
    worktree turns out to differ, it is computed again from the snapshot.
    """
    with ThreadPoolExecutor(1, thread_name_prefix="freshline-snapshot") as pool:
        snapshot = pool.submit(snapshot_worktree, worktree, (chain.head, chain.head_tree),
                               keep_index)
        guess = _outcome(lambda: compute(chain.head_tree))
        before = snapshot.result()
    checkpoint("prepare:snapshot")
    return before, guess() if before == chain.head_tree else compute(before)


def _outcome(compute: Callable[[], PendingTurn]) -> Callable[[], PendingTurn]:
    """`compute` run now; calling the result returns its turn or raises its stop."""
    try:
        turn = compute()
    except (ConflictStop, SyncRequired) as stop:
        caught = stop  # the `as` name is gone after the except block

        def stopped() -> PendingTurn:
            raise caught

        return stopped
    return lambda: turn


def _start(repo: Repo, chain: Chain, message: str) -> PendingTurn:
    return PendingTurn(repo, chain.conversation, chain.head, message, chain.head_tree,
                       (chain.head,), chain.root.mode, merges=chain.syncs_since_last_turn,
                       rewinds=views.rewinds_since_last_turn(chain.events))


def _live_turn(
    repo: Repo, turn: PendingTurn, head_tree: str, entries: Iterable[IndexEntry] | None,
    delta: LiveDelta | None,
) -> PendingTurn:
    """The live turn's tree, written (one sink) and held by the conversation's pending ref
    until the turn is recorded or abandoned, so `gc` never prunes it meanwhile."""
    base = head_tree if delta is None else delta.base or head_tree
    with repo.writing():
        with repo.sink() as out:
            if delta is not None and (base == head_tree or not repo.git.missing_objects([base])):
                tree = live_tree_delta(repo.git, base, delta, repo.workspace, out)
            elif entries is not None:
                tree = live_tree(repo.git, entries, repo.workspace, head_tree, out)
            else:
                return turn
        if repo.private and tree != head_tree:
            repo.git.update_refs_cas([(repo.pending_ref(turn.conversation), tree, None)])
    return replace(turn, tree=tree)


def _isolated_turn(
    repo: Repo, chain: Chain, turn: PendingTurn, before: str, refresh: bool,
    followed: str | None, path_filter: PathFilter | None,
) -> PendingTurn:
    """The human turn of an isolated conversation whose worktree holds `before`;
    `followed`: the commit the followed ref names now (Repo.current)."""
    ours, _ = normalize_modes(repo.git, chain.head_tree, before)
    turn = replace(turn, tree=ours, before=before)
    target = refresh_target(repo, chain, followed) if refresh else None
    if target is None:
        return turn
    assert chain.root.target is not None
    merge = merge_target(repo, chain, ours, target, chain.root.target,
                         path_filter=path_filter, base=chain.last_parent)
    return replace(turn, tree=merge.tree, parents=(chain.head, target), refresh=merge.record,
                   merges=(*turn.merges, merge.record))


def abandon_turn(pending: PendingTurn) -> None:
    """Put an isolated worktree back exactly as the turn found it (the refresh's merge and
    every file a tool wrote undone), after a failure before `commit_turn` recorded it; at
    the head's tree if another writer moved the ref meanwhile. A live turn lets go of its
    pending tree."""
    if pending.mode is not Mode.ISOLATED:
        release_pending(pending.repo, pending.conversation)
        return
    started = Journal(pending.head, pending.before or pending.tree, 0)
    recovery.restore(pending.repo, pending.conversation, started)
    recovery.finish(pending.repo, pending.conversation)


def snapshot_event(pending: PendingTurn, deliberate: Iterable[str] = ()) -> str:
    """The worktree's tree now, for a tool event that wrote files: modes flipped outside
    the tools since the turn began put back, `deliberate` (chmod-ed paths) kept."""
    worktree = pending.repo.worktree_git(pending.conversation)
    tree, _ = normalize_modes(pending.repo.git, pending.tree, snapshot_worktree(worktree),
                              frozenset(deliberate))
    return tree


def commit_turn(pending: PendingTurn, events: Sequence[Event]) -> str:
    """Record the human commit and `events`, then move the ref by compare-and-swap.

    An event's tree is its own `tree` when set, else the previous event's; in isolated mode
    the last event without a tree gets a snapshot of the worktree (the agent's edits, modes
    normalized; the files follow). Returns the new head; raises ConversationMoved when
    another send moved the ref first.
    """
    repo = pending.repo
    for event in events:
        if event.root or event.refresh or event.sync or event.rewind:
            raise UsageError("root, refresh, sync and rewind events are written by freshline "
                             "itself")
    human = Event(Author.USER, pending.message, refresh=pending.refresh, wire=pending.wire)
    human, *screened = [screened_event(e, repo.screen) for e in (human, *events)]
    events = screened
    worktree = repo.worktree_git(pending.conversation) if pending.mode is Mode.ISOLATED else None
    trees: list[str] = [pending.tree]
    on_disk = None
    for i, event in enumerate(events):
        tree = event.tree or trees[-1]
        if not event.tree and worktree is not None and i == len(events) - 1:
            on_disk = snapshot_worktree(worktree)
            deliberate = frozenset(p for e in events for p in e.mode_changes)
            tree, _ = normalize_modes(repo.git, pending.tree, on_disk, deliberate)
        trees.append(tree)
    messages = [encode(e) for e in events]
    with repo.writing():
        with repo.sink() as out:
            ids = batch.commit_chain(repo.git, pending.tree, pending.parents, encode(human),
                                     list(zip(trees[1:], messages, strict=True)), out)
        head = ids[-1]
        checkpoint("record:commits")
        if worktree is not None and on_disk is not None:
            move_worktree(worktree, on_disk, trees[-1])  # modes set outside the tools, put back
        advance(repo, pending.conversation, head, pending.head, worktree)
    recorded = [_as_read(e, t, c) for e, t, c in zip([human, *events], trees, ids, strict=True)]
    repo.extend(pending.conversation, pending.head, recorded)
    checkpoint("record:advanced")
    recovery.finish(repo, pending.conversation)
    return head


def screened_event(event: Event, screen: Withholder | None) -> Event:
    """`event` with every secret in its texts withheld: a commit never stores one (a user
    may paste a key; a tool result was withheld when the tool ran)."""
    if screen is None:
        return event
    def withheld(text: str | None) -> str | None:
        return screen.text(text).text if text else text

    return replace(event, content=withheld(event.content) or "", result=withheld(event.result),
                   wire=withheld(event.wire), args=_withheld_args(event.args, screen))


def _withheld_args(value: Any, screen: Withholder) -> Any:
    """A tool call's arguments with every string's secrets withheld."""
    if isinstance(value, str):
        return screen.text(value).text
    if isinstance(value, dict):
        return {k: _withheld_args(v, screen) for k, v in value.items()}
    if isinstance(value, list):
        return [_withheld_args(v, screen) for v in value]
    return value


def _as_read(event: Event, tree: str, commit: str) -> Event:
    """The event as reading its commit back gives it (canonical field order included)."""
    read = decode(encode(event), commit=commit, tree=tree)
    assert read is not None
    return read


def release_pending(repo: Repo, conversation: str) -> None:
    """Drop the conversation's pending ref (a live turn's tree not recorded)."""
    if repo.private:
        repo.git.update_refs_cas([(repo.pending_ref(conversation), ZERO, None)])


def close_worktree(repo: Repo, conversation: str) -> None:
    """Remove an isolated conversation's worktree (its commits stay)."""
    path = repo.worktree(conversation)
    if path.exists():
        repo.git.worktree_remove(path)


def reset_worktree(repo: Repo, conversation: str) -> None:
    """Put the worktree back at the conversation head (discarding unrecorded edits)."""
    with recovery.guard(repo, conversation):
        worktree = repo.worktree_git(conversation)
        head = repo.head(conversation)
        tree = repo.git.tree_of(head)
        recovery.begin(repo, conversation, head, tree)  # killed midway: finished on recovery
        force_worktree(repo.git, worktree, tree, head)
        recovery.finish(repo, conversation)


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
