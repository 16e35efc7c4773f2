"""Roll-ups: the order in which a block's entries are folded into groups to fit a budget.

Most informative first: what goes first is what the agent loses least by. Over a manifest
(block 0) and an updates block (block 1) delivered together, the folds come in this order:

1. the files of a folder renamed as a whole (its rename line already says where they went);
2. the manifest's files, per folder (the agent can list folders itself);
3. the paths of each git operation, largest first, into folder groups under the
   operation's line (counts by kind per folder), the deepest folders first, up to the
   operation's line alone;
4. the manifest's documents, per folder, with counts by status (the read tools find a
   document's snapshot; what changed is news the agent has no other way to get);
5. the updates' other path changes, per folder;
6. what the agent most needs (the priority paths, documents whose status changed,
   conflicts), per folder;
7. the whole block into one group per pool (its minimum), the updates first.

Folders fold deepest first, so a block keeps as much of the tree's shape as fits; at one
depth, the folders whose fold saves the most characters go first. `fit.py` finds the
shortest prefix of these moves that fits, then undoes the folds the room left allows
(`unfold.py`).
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .layout import Entry, Folds, Key, Plan, Pool

MANIFEST, UPDATES = 0, 1  # block indexes
GROUP_CHARS = 30  # about what a group line adds to its folder's path


class MoveKind(Enum):
    """What one fold does."""

    RENAME = "rename"  # a folder rename's files into its line
    FOLDER = "folder"  # a folder's entries of one pool (or git operation) into one group
    MINIMAL = "minimal"  # the whole block into its minimum


@dataclass(frozen=True)
class Move:
    """One fold of one block: a folder of `key` (a pool, or a git operation by its
    index), a folder rename (`target`, its index), or the whole block."""

    block: int
    kind: MoveKind
    key: Key | None = None
    target: str | int = ""


def apply(folds: Folds, move: Move) -> None:
    """Make `move` in `folds` (the folds of its block)."""
    _fold(folds, move, True)


def undo(folds: Folds, move: Move) -> None:
    """Undo `move` in `folds`."""
    _fold(folds, move, False)


def _fold(folds: Folds, move: Move, made: bool) -> None:
    if move.kind is MoveKind.MINIMAL:
        folds.minimal = made
        return
    if move.kind is MoveKind.RENAME:
        members: set[Any] = folds.renames
        member: object = int(move.target)
    else:
        assert move.key is not None
        members, member = folds.folded(move.key), str(move.target)
    if made:
        members.add(member)
    else:
        members.discard(member)


def _depth(folder: str) -> int:
    return folder.count("/") + 1 if folder else 0


def _ancestors(folder: str) -> Iterable[str]:
    while folder:
        yield folder
        folder = posixpath.dirname(folder)
    yield ""


def lines_of(entries: Iterable[Entry]) -> Iterator[tuple[str, int]]:
    """Each entry's line as `folder_order` weighs it: its folder and about its characters."""
    return ((entry.folder, len(entry.text) + 3) for entry in entries)


def folder_order(
    weighed: Iterable[tuple[str, int]], folded: Iterable[str] = ()
) -> list[tuple[str, int, int]]:
    """The folders to fold, in order, each with the lines its fold removes plus one (the
    entries and groups it takes in) and about the characters it saves. `weighed` are the
    listed lines (folder, characters), `folded` the folders folded already. A folder is
    worth folding when it would take in at least two lines."""
    direct: dict[str, list[int]] = {}
    for folder, chars in weighed:
        stats = direct.get(folder)
        if stats is None:  # not setdefault: a list per line costs
            stats = direct[folder] = [0, 0]
        stats[0] += 1
        stats[1] += chars
    nodes = {folder for d in direct for folder in _ancestors(d)}
    children: dict[str, list[str]] = {}
    for node in nodes:
        if node:
            children.setdefault(posixpath.dirname(node), []).append(node)
    by_depth: dict[int, list[str]] = {}
    for node in nodes:
        by_depth.setdefault(_depth(node), []).append(node)
    planned = set(folded)
    seen: dict[str, tuple[int, int]] = {}  # lines and characters, as the folder above sees it
    order: list[tuple[str, int, int]] = []
    for depth in sorted(by_depth, reverse=True):
        candidates = []
        for node in by_depth[depth]:
            lines, chars = direct.get(node, [0, 0])
            for child in children.get(node, ()):
                lines, chars = lines + seen[child][0], chars + seen[child][1]
            seen[node] = (lines, chars)
            group = (1, len(node) + GROUP_CHARS)
            if node in planned:
                seen[node] = group
            elif lines >= 2:
                candidates.append((-(chars - group[1]), node, lines))
        for saved, node, lines in sorted(candidates):
            planned.add(node)
            seen[node] = (1, len(node) + GROUP_CHARS)
            order.append((node, lines, -saved))
    return order


def moves(plans: Sequence[Plan | None]) -> list[Move]:
    """Every fold of the blocks, in the order they are made (see the module docstring)."""
    manifest, updates = plans[MANIFEST], plans[UPDATES]
    out: list[Move] = []
    if updates is not None:
        out += _counted(UPDATES, MoveKind.RENAME, _renames(updates))
    if manifest is not None:
        out += _folders(MANIFEST, manifest, Pool.FILES)
    if updates is not None:
        out += _git_folders(updates)
    if manifest is not None:
        out += _folders(MANIFEST, manifest, Pool.DOCUMENTS)
    if updates is not None:
        out += _folders(UPDATES, updates, Pool.CHANGES)
        out += _folders(UPDATES, updates, Pool.KEPT)
    out += [Move(block, MoveKind.MINIMAL) for block in (UPDATES, MANIFEST) if plans[block]]
    return out


def _renames(plan: Plan) -> Counter[int]:
    return Counter(e.rename for e in plan.entries()
                   if e.pool is Pool.CHANGES and e.rename is not None)


def _counted(block: int, kind: MoveKind, sizes: Counter[int]) -> list[Move]:
    return [Move(block, kind, None, index)
            for index, _ in sorted(sizes.items(), key=lambda item: (-item[1], item[0]))]


def _git_folders(plan: Plan) -> list[Move]:
    """Each git operation's folder folds, the operation with the most paths first, each
    over the paths no operation before it took."""
    paths: dict[int, list[Entry]] = {}
    for e in plan.entries():
        if e.pool is Pool.CHANGES and e.ops:
            paths.setdefault(e.ops[0], []).append(e)
    out: list[Move] = []
    for op in sorted(paths, key=lambda i: (-len(paths[i]), i)):
        out += [Move(UPDATES, MoveKind.FOLDER, op, folder)
                for folder, _, _ in folder_order(lines_of(paths[op]))]
    return out


def _folders(block: int, plan: Plan, pool: Pool) -> list[Move]:
    """Folder folds of one pool, over the entries still listed once the renames and git
    operations before them are folded (those fold only path changes)."""
    entries = [e for e in plan.entries() if e.pool is pool
               and not (pool is Pool.CHANGES and (e.ops or e.rename is not None))]
    already = plan.start.folded(pool)
    return [Move(block, MoveKind.FOLDER, pool, folder)
            for folder, _, _ in folder_order(lines_of(entries), already)]
