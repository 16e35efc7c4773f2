"""Writing the trees events point at: live trees from the index, worktree snapshots.

A live tree is the previous turn's tree with only the differing entries changed (through
treewrite, so the cost grows with the changes), writing blobs only when the repository
lacks them (in a checkout, freshline's repository borrows the user's objects: a tracked
file is never copied). Its new blobs and trees go to one object sink (objects.py: a pack in
freshline's own repository); a file above the repository's `max_blob` is recorded as a
pointer blob (pointer.py). A worktree snapshot is `git status` on the worktree's own index
(its stat cache makes unchanged files free), then `git add` of just the paths it reports.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from freshline.conversation.git import Git, TreeChange
from freshline.conversation.knowntrees import Entry
from freshline.conversation.objects import Sink, sink
from freshline.conversation.pointer import pointer, recorded_oid
from freshline.conversation.policy import ModeDiff, exec_bit_restores
from freshline.conversation.treewrite import update_tree
from freshline.store.records import FileKind, IndexEntry
from freshline.withholding import TreeContent

LINK_MODE = "120000"
_LISTINGS: OrderedDict[str, dict[str, Entry]] = OrderedDict()  # tree id → its files
_LISTINGS_KEPT = 2
_LISTINGS_LOCK = threading.Lock()


@dataclass(frozen=True)
class LiveDelta:
    """What changed in the index since the previous turn's tree."""

    changed: tuple[IndexEntry, ...] = ()  # created or modified entries
    removed: tuple[str, ...] = ()  # paths no longer in scope
    base: str | None = None  # the live tree it applies to (None: the head's tree)


def live_tree(
    git: Git, entries: Iterable[IndexEntry], root: Path, previous_tree: str | None,
    into: Sink | None = None, screen_all: bool = False,
) -> str:
    """Write the tree of `entries` (paths relative to `root`) and return its id.

    Starts from `previous_tree` when given, so only differing entries are written. New
    objects go to `into` (written when its owner closes it), else loose, at once.
    `screen_all`: `previous_tree` is not a conversation's (the checkout's HEAD, whose
    files were never screened), so every entry passes the sink's screen.
    """
    with _sink_for(git, into) as out:
        wanted = {e.path: e for e in entries}
        known = _listing(git, previous_tree)
        cap = out.max_blob
        rescreen = screen_all and out.screen is not None
        changed = tuple(e for e in wanted.values()
                        if rescreen or known.get(e.path) != _entry(e, cap))
        removed = tuple(path for path in known if path not in wanted)
        changes = _changes(git, LiveDelta(changed, removed), root, out)
        tree = update_tree(git, previous_tree, changes, out)
    listing = {p: e for p, e in known.items() if p not in changes}
    _remember(tree, listing | {p: e for p, e in changes.items() if e is not None})
    return tree


def live_tree_delta(
    git: Git, previous_tree: str | None, delta: LiveDelta, root: Path, into: Sink | None = None
) -> str:
    """Write `previous_tree` with `delta` applied; costs what the delta costs."""
    with _sink_for(git, into) as out:
        return update_tree(git, previous_tree, _changes(git, delta, root, out), out)


@contextmanager
def _sink_for(git: Git, into: Sink | None) -> Iterator[Sink]:
    """`into`, left open for its owner; else a loose sink closed here."""
    if into is not None:
        yield into
        return
    with sink(git, packed=False) as own:
        yield own


def _changes(git: Git, delta: LiveDelta, root: Path, out: Sink) -> dict[str, Entry | None]:
    blobs = _ensure_blobs(git, list(delta.changed), root, out)
    changes: dict[str, Entry | None] = dict.fromkeys(delta.removed)
    for entry in delta.changed:
        oid = blobs[entry.path]
        changes[entry.path] = (_mode(entry), oid) if oid else None
    return changes


def _listing(git: Git, tree: str | None) -> dict[str, Entry]:
    if tree is None:
        return {}
    with _LISTINGS_LOCK:
        listing = _LISTINGS.get(tree)
    if listing is None:
        listing = {t.path: (t.mode, t.oid) for t in git.ls_tree(tree)}
        _remember(tree, listing)
    return listing


def _remember(tree: str, listing: dict[str, Entry]) -> None:
    with _LISTINGS_LOCK:
        _LISTINGS[tree] = listing
        _LISTINGS.move_to_end(tree)
        while len(_LISTINGS) > _LISTINGS_KEPT:
            _LISTINGS.popitem(last=False)


def _mode(entry: IndexEntry) -> str:
    return LINK_MODE if entry.kind is FileKind.LINK else f"{entry.mode:o}"


def _entry(entry: IndexEntry, cap: int | None) -> Entry:
    """The (mode, oid) a live tree records for an index entry (a pointer above `cap`)."""
    blob = entry.blob
    if entry.kind is not FileKind.LINK:
        blob = recorded_oid(entry.blob, entry.size, cap)
    return _mode(entry), blob


def _ensure_blobs(
    git: Git, entries: list[IndexEntry], root: Path, out: Sink
) -> dict[str, str | None]:
    """The blob id each entry is recorded with, queuing into `out` the ones git lacks.

    A file above the sink's `max_blob` is recorded as a pointer blob naming its indexed
    content. A file that changed since it was scanned gets the id of what was actually
    read; one that vanished since gets None (it leaves the tree). With a screen, each file
    is read once and what is recorded is what the screen read: a file holding a secret as
    its withheld text, a binary one holding a secret and a hard link not at all, whether
    or not git has its blob (a tracked file's blob would carry the secret too).
    """
    cap = out.max_blob
    blobs: dict[str, str | None] = {e.path: _entry(e, cap)[1] for e in entries}
    missing = out.missing(oid for oid in blobs.values() if oid)
    for entry in entries:
        oid = blobs[entry.path]
        if out.screen is not None and entry.kind is not FileKind.LINK and oid == entry.blob:
            blobs[entry.path] = _screened(out, out.screen.tree_content(entry.path, root, oid),
                                          missing)
        elif oid in missing:
            blobs[entry.path] = _added(entry, root, out)
    return blobs


def _screened(out: Sink, content: TreeContent, missing: set[str]) -> str | None:
    """The blob a screened file is recorded with: the bytes the screen read (queued when
    git lacks them), or None (left out)."""
    if content.data is None:
        return None
    if content.blob in missing or not content.keep:
        return out.add("blob", content.data)
    return content.blob


def _added(entry: IndexEntry, root: Path, out: Sink) -> str | None:
    """Queue an unscreened entry's blob: a link's target, a file as read now, or above
    the cap a pointer to its indexed content."""
    path = root / entry.path
    if entry.kind is FileKind.LINK or _entry(entry, out.max_blob)[1] == entry.blob:
        return out.add_path(root, entry.path)
    if os.path.lexists(path):
        return out.add("blob", pointer(entry.blob, entry.size))
    return None


def admin_dir(worktree: Git) -> Path:
    """The worktree's administrative directory (read from its `.git` file, no git run)."""
    assert worktree.cwd is not None
    pointer = (worktree.cwd / ".git").read_text(encoding="utf-8").strip()
    return worktree.cwd / pointer.removeprefix("gitdir: ")


def head_ref(worktree: Git) -> str:
    """The name of the worktree's HEAD as the main repository addresses it."""
    return f"worktrees/{admin_dir(worktree).name}/HEAD"


def snapshot_worktree(
    worktree: Git, head: tuple[str, str] | None = None, keep_index: bool = True
) -> str:
    """The tree of everything in the worktree (modes kept); refreshes its index.

    `head`: the (commit, tree) the worktree should have checked out; when nothing differs
    from it, that tree is the answer and none is written. Only the paths `status` reports
    are added: a blanket `add -A` would re-add every racily clean entry. The worktree's own
    index is used (the turn lock keeps other writers away); `keep_index=False` works on a
    copy instead and leaves the index as it was (a preview, which holds no lock).
    """
    if keep_index:
        return _snapshot(worktree, head, refresh=True)
    with worktree.temp_index(seed=admin_dir(worktree) / "index") as index:
        return _snapshot(index, head, refresh=False)


def _snapshot(index: Git, head: tuple[str, str] | None, refresh: bool) -> str:
    status = index.status(refresh=refresh)
    if head is not None and status.head == head[0] and not (status.staged or status.changed):
        return head[1]
    _add(index, status.changed)
    return index.write_tree()


def normalize_modes(
    git: Git, previous: str, tree: str, deliberate: frozenset[str] = frozenset()
) -> tuple[str, tuple[str, ...]]:
    """`tree` with executable bits set outside the tools put back as `previous` has them
    (policy.exec_bit_restores, whatever the content); returns it and the paths restored."""
    if tree == previous:
        return tree, ()
    diffs = mode_diffs(git.diff_trees(previous, tree))
    restores = exec_bit_restores(diffs, deliberate, same_content=False)
    if not restores:
        return tree, ()
    changes = {d.path: (restores[d.path], d.our_oid) for d in diffs if d.path in restores}
    return update_tree(git, tree, changes), tuple(sorted(restores))


def mode_diffs(changes: Sequence[TreeChange]) -> list[ModeDiff]:
    """The modified entries of a diff as the exec-bit policy reads them."""
    return [
        ModeDiff(c.path, c.old_mode, c.old_oid, c.new_mode, c.new_oid)
        for c in changes
        if c.status == "M"
    ]


def _add(index: Git, paths: Sequence[str]) -> None:
    if not paths:
        return
    feed = b"".join(b":(literal)" + os.fsencode(p) + b"\0" for p in paths)
    code, _, _ = index.run_status(
        "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=feed
    )
    if code != 0:  # a listed path vanished since: the whole tree then
        index.run("add", "-A")


def move_worktree(worktree: Git, from_tree: str, to_tree: str) -> None:
    """Move the files from `from_tree` (what is on disk, and in the index) to `to_tree`.

    Fails, changing nothing, on local edits to a path that moves or an untracked file in
    the way (a one-tree merge: the index already is `from_tree`).
    """
    if from_tree != to_tree:
        worktree.run("read-tree", "-m", "-u", to_tree)


def force_worktree(repo_git: Git, worktree: Git, tree: str, commit: str) -> None:
    """Make the worktree exactly `tree` whatever it holds now (a half-applied move, files
    a tool wrote): files and index, no untracked leftovers, HEAD at `commit`."""
    worktree.run("read-tree", "--reset", "-u", tree)
    worktree.run("clean", "-f", "-d", "-q")
    repo_git.update_refs_cas([(head_ref(worktree), commit, None)])


def changed_paths(git: Git, old_tree: str, new_tree: str) -> list[str]:
    """The paths that differ between two trees (added, modified, deleted, mode), sorted."""
    return sorted({change.path for change in git.diff_trees(old_tree, new_tree)})
