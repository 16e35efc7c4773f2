"""Rewinding a conversation to where one of its human turns began, deleting nothing.

A rewind is a new event on the head (a system commit; the ref moves by compare-and-swap
under the turn lock, as a turn's do). Its tree is the tree that turn saw when the files go
back, else the head's; its `rewind` record ends the transcript view where that turn began
when the transcript goes back (views.py). The rewound events stay in the chain.

The files of an isolated conversation are its worktree: edits in it not recorded yet are
recorded first, as an event of their own, so the rewind loses nothing; the move is
journaled like a turn's (recovery.py). A code rewind past a refresh keeps what the refreshes
merged since: the turn's tree is merged with the latest refresh parent (whose merge base is
the refresh parent of that turn), since later refreshes take their base from the graph
(git 2.39 has no `--merge-base`) and would otherwise take the merged changes for reverted.

A live conversation's files are the user's own checkout: only the paths the caller names
(the ones the conversation itself wrote) are put back, their content taken from the tree
that turn recorded. What they held is recorded first, and the new head is held by the
pending ref while the files are written.

`plan` computes everything and moves nothing; `apply` records and moves. Each path the
rewind would overwrite that someone other than the conversation changed after that turn
is an `Overwrite`, for the caller to ask about.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from freshline.conversation import batch, recovery, views
from freshline.conversation.conflicts import by_kind, path_kinds
from freshline.conversation.events import Author, Event, Mode, Rewind, RewindMode, encode
from freshline.conversation.journal import checkpoint
from freshline.conversation.knowntrees import Entry
from freshline.conversation.pointer import parse_pointer
from freshline.conversation.refresh import PENDING_MESSAGE, PathFilter, advance
from freshline.conversation.repository import Chain, Repo
from freshline.conversation.trees import (
    changed_paths,
    move_worktree,
    normalize_modes,
    snapshot_worktree,
)
from freshline.conversation.treewrite import update_tree
from freshline.errors import ConflictStop, UsageError
from freshline.paths import confine, is_internal
from freshline.secretscan import WITHHELD_PREFIX

LINK_MODE = "120000"
PROMPT_WIDTH = 100  # characters of the turn's message a rewind record keeps
KEPT_EDITS = "edits not recorded yet, kept before a rewind"


class By(StrEnum):
    """Who changed a path after the turn rewound to, as far as it is known."""

    OUTSIDE = "outside"  # by hand, outside the tools (recorded by a later turn, or live)
    UNRECORDED = "unrecorded"  # by hand in the worktree, not recorded by any turn yet
    GIT = "git"  # a git operation in the checkout (a live conversation)
    SESSION = "session"  # another session's tool (a live conversation)


@dataclass(frozen=True)
class Overwrite:
    """A path the rewind would overwrite that someone other than the conversation changed
    after the turn: `name` is the target, the git operation or the session."""

    path: str
    by: By
    name: str = ""
    turn: int | None = None  # the turn that recorded it (By.OUTSIDE in an isolated one)


@dataclass(frozen=True)
class RewindPlan:
    """A rewind worked out, nothing moved: what `apply` records and writes."""

    conversation: str
    head: str  # the ref's value when planned: the compare-and-swap's expected old value
    mode: Mode
    rewind: Rewind
    tree: str  # the rewind event's tree
    restored: tuple[str, ...] = ()  # paths whose files the rewind changes
    overwrites: tuple[Overwrite, ...] = ()
    before: str | None = None  # isolated: the worktree's tree as found (on disk)
    kept_edits: str | None = None  # the files' tree to record first (edits not recorded)
    files: Mapping[str, Entry | None] = field(default_factory=dict)  # live: what to write


def plan(
    repo: Repo,
    conversation: str,
    turn: str,
    mode: RewindMode,
    path_filter: PathFilter | None = None,
    restore: Collection[str] = (),
) -> RewindPlan:
    """Work out a rewind of `conversation` to where `turn` (a number or a commit id from
    `log`) began. A live conversation's files are only those in `restore`. Call it, and
    `apply`, holding the turn lock and `repo.writing()` (a plan writes objects). Raises
    NotFoundError / UsageError for a bad turn, ConflictStop when a code rewind past a
    refresh cannot keep what the refresh merged."""
    chain = repo.chain(conversation)
    index = views.find_turn(chain.events, turn)
    human = chain.events[index]
    record = Rewind(views.turn_numbers(chain.events)[index], human.commit or "", mode,
                    _first_line(human.content))
    seen = _seen_tree(chain, record)
    if chain.root.mode is Mode.LIVE:
        found = _live(repo, chain, index, record, restore if mode.restores_files else ())
        told = changed_paths(repo.git, seen, found.tree)
    else:
        found, told = _isolated(repo, chain, index, record, seen)
    if path_filter is not None:
        told = [p for p in told if path_filter(p)]
    return replace(found, rewind=replace(found.rewind, paths=tuple(told)))


def _first_line(text: str) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= PROMPT_WIDTH else line[: PROMPT_WIDTH - 1] + "…"


def _seen_tree(chain: Chain, record: Rewind) -> str:
    """The tree the agent last saw once the rewind is recorded (views.last_seen)."""
    events = [*chain.events, Event(Author.SYSTEM, "", rewind=record)]
    tree = events[views.last_seen(events)].tree
    assert tree is not None
    return tree


def _isolated(
    repo: Repo, chain: Chain, index: int, record: Rewind, seen: str
) -> tuple[RewindPlan, list[str]]:
    """The plan, and the paths that differ from the `seen` tree (to tell the agent)."""
    worktree = repo.worktree_git(chain.conversation, chain.head)  # checked out if missing
    found = RewindPlan(chain.conversation, chain.head, Mode.ISOLATED, record, chain.head_tree)
    if not record.mode.restores_files:  # the files, unrecorded edits too, stay as they are
        return found, changed_paths(repo.git, seen, chain.head_tree)
    before = snapshot_worktree(worktree, (chain.head, chain.head_tree))
    ours, _ = normalize_modes(repo.git, chain.head_tree, before)
    tree, kept = _code_tree(repo, chain, index)
    # Every diff the plan needs, in one git call: what the move changes, what the agent is
    # told, what the worktree holds unrecorded, and each later human turn's edits.
    humans = [i for i in range(index + 1, len(chain.events))
              if chain.events[i].author is Author.USER]
    pairs = [(before, tree), (seen, tree), (chain.head_tree, ours),
             *((chain.events[i - 1].tree or "", chain.events[i].tree or "") for i in humans)]
    moved, told, unrecorded, *edits = (
        sorted({c.path for c in diff}) for diff in batch.diff_pairs(repo.git, trees=pairs))
    others = _changed_by_others(chain, dict(zip(humans, edits, strict=True)), unrecorded)
    plan = replace(
        found, rewind=replace(record, kept=kept), tree=tree, restored=tuple(moved),
        before=before, overwrites=tuple(others[p] for p in moved if p in others),
        kept_edits=ours if ours != chain.head_tree else None,
    )
    return plan, told


def _code_tree(repo: Repo, chain: Chain, index: int) -> tuple[str, str | None]:
    """The files as turn `index` saw them, with what refreshes merged since kept: (tree,
    the latest refresh parent when one was merged in)."""
    events = chain.events
    tree = events[index].tree
    assert tree is not None
    then = Chain(chain.conversation, events[index].commit or "", events[: index + 1]).last_parent
    now = chain.last_parent
    if now is None or now == then:
        return tree, None
    ours = repo.git.commit_tree(tree, [then] if then else [], PENDING_MESSAGE)
    merged = repo.git.merge_tree(ours, now)
    if merged.conflicts:
        raise ConflictStop(
            f"the files of turn {views.turn_numbers(events)[index]} conflict with what "
            f"refreshes merged since ({by_kind(merged.conflicts)}): rewind the "
            "conversation only, or fork the session at that turn",
            list(merged.paths), path_kinds(merged.conflicts),
        )
    return merged.tree, now


def _changed_by_others(
    chain: Chain, edits: Mapping[int, list[str]], unrecorded: list[str]
) -> dict[str, Overwrite]:
    """Per path, who other than the conversation's tools changed it after the turn: the
    paths each later human event (by index) changed beyond what its refresh merged
    (`edits`), then the worktree's edits not recorded yet; the latest is named. What
    refreshes and syncs merged is not among them: a code rewind keeps it (`_code_tree`)."""
    numbers = views.turn_numbers(chain.events)
    found: dict[str, Overwrite] = {}
    for i, paths in edits.items():
        merged = chain.events[i].merged
        for path in paths:
            if merged is None or path not in merged.paths:
                found[path] = Overwrite(path, By.OUTSIDE, turn=numbers[i])
    found.update((path, Overwrite(path, By.UNRECORDED)) for path in unrecorded)
    return found


def _live(
    repo: Repo, chain: Chain, index: int, record: Rewind, restore: Collection[str]
) -> RewindPlan:
    found = RewindPlan(chain.conversation, chain.head, Mode.LIVE, record, chain.head_tree)
    if not restore:
        return found
    then = _entries(repo, chain.events[index].tree or "", restore)
    files: dict[str, Entry | None] = {}
    kept: dict[str, Entry | None] = {}
    for path in sorted(set(restore)):
        target, now = then.get(path), _on_disk(repo, path)
        if (target and target[1]) == (now and now[1]):
            continue
        why = _unrestorable(repo, target) if target is not None else None
        if why is not None:
            raise UsageError(f"{path} {why} at that turn: it cannot be put back; nothing "
                             "was changed")
        files[path], kept[path] = target, now
    if not files:
        return found
    tree = update_tree(repo.git, chain.head_tree, files)
    before = update_tree(repo.git, chain.head_tree, kept)
    return replace(found, tree=tree, restored=tuple(files), files=files,
                   kept_edits=before if before != chain.head_tree else None)


def _entries(repo: Repo, tree: str, paths: Collection[str]) -> dict[str, Entry]:
    wanted = set(paths)
    return {e.path: (e.mode, e.oid) for e in repo.git.ls_tree(tree) if e.path in wanted}


def _on_disk(repo: Repo, path: str) -> Entry | None:
    """The file at `path` as a tree entry, its content written to the repository (so what
    a rewind overwrites is recorded first); None when there is none."""
    full = repo.workspace / path
    if full.is_symlink():
        return LINK_MODE, repo.git.hash_object_write(os.fsencode(os.readlink(full)))
    if not full.is_file():
        return None
    mode = "100755" if os.access(full, os.X_OK) else "100644"
    return mode, repo.git.hash_object_write(path=full)


def _unrestorable(repo: Repo, entry: Entry) -> str | None:
    """Why a recorded file cannot be written back as the turn saw it, if so: the tree
    holds a pointer to its content, or its text with the secrets withheld."""
    (kind, data), = batch.objects(repo.git, [entry[1]])
    if kind != "blob" or entry[0] == LINK_MODE:
        return None
    if parse_pointer(data) is not None:
        return "was too large to be recorded (a pointer blob)"
    if WITHHELD_PREFIX.encode() in data:
        return "held a secret, recorded withheld"
    return None


def apply(repo: Repo, planned: RewindPlan) -> str:
    """Record the rewind (after the edits it keeps) and move the files and the ref; the
    new head. Raises ConversationMoved when the ref moved since `plan`."""
    conversation = planned.conversation
    rewind = planned.rewind
    event = Event(Author.SYSTEM, describe(rewind), rewind=rewind)
    commits = [(planned.tree, encode(event))]
    if planned.kept_edits is not None:
        commits.insert(0, (planned.kept_edits, encode(Event(Author.SYSTEM, KEPT_EDITS))))
    worktree = repo.worktree_git(conversation) if planned.mode is Mode.ISOLATED else None
    with repo.writing():
        with repo.sink() as out:
            (tree, message), *rest = commits
            head = batch.commit_chain(repo.git, tree, [planned.head], message, rest, out)[-1]
        if worktree is not None and planned.before is not None:
            recovery.begin(repo, conversation, planned.head, planned.before)
            checkpoint("rewind:journal")
            move_worktree(worktree, planned.before, planned.tree)
            checkpoint("rewind:moved")
        elif planned.files:
            repo.git.update_refs_cas([(repo.pending_ref(conversation), head, None)])
            _write_files(repo, planned.files)
        advance(repo, conversation, head, planned.head, worktree)
    recovery.finish(repo, conversation)
    return head


def describe(rewind: Rewind) -> str:
    """The rewind event's content: `rewind to turn 3 (code and conversation)`."""
    what = {RewindMode.CODE: "code", RewindMode.CONVERSATION: "conversation",
            RewindMode.BOTH: "code and conversation"}[rewind.mode]
    return f"rewind to turn {rewind.turn} ({what})"


def _write_files(repo: Repo, files: Mapping[str, Entry | None]) -> None:
    """Put the live files back: each path's content from the repository, or removed."""
    wanted = {path: entry for path, entry in files.items() if entry is not None}
    found = batch.objects(repo.git, [oid for _, oid in wanted.values()])
    contents = {path: data for path, (_, data) in zip(wanted, found, strict=True)}
    for path, entry in sorted(files.items()):
        target = _writable(repo, path)
        if entry is None:
            target.unlink(missing_ok=True)
        else:
            _put(target, entry[0], contents[path])


def _writable(repo: Repo, path: str) -> Path:
    """Where `path` lies in the workspace, refused when it is internal or its folder
    resolves outside the workspace (a folder replaced by a symbolic link)."""
    if is_internal(path):
        raise UsageError(f"{path} is internal to freshline or git: not written")
    folder = path.rpartition("/")[0]
    if folder:
        confine(repo.workspace, folder)
    return repo.workspace / path


def _put(target: Path, mode: str, data: bytes) -> None:
    """Write a file (or a link) atomically: a temporary file renamed over it."""
    path = os.fspath(target)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.freshline-{os.getpid()}.tmp"
    try:
        if mode == LINK_MODE:
            os.symlink(os.fsdecode(data), partial)
        else:
            with open(partial, "wb") as out:
                out.write(data)
            os.chmod(partial, 0o755 if mode == "100755" else 0o644)
        os.replace(partial, path)
    except BaseException:
        if os.path.lexists(partial):
            os.unlink(partial)
        raise

