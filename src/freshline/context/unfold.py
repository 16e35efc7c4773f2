"""Unfolding: after the shortest prefix of folds that fits, give back what the room left
allows, the largest gain first.

The folds are made in a fixed order (`rollup.py`), and the fit takes the shortest prefix
that fits, so a late fold that saved a lot can leave room that an early, small fold no
longer needs: 300 document lines folded last leave thousands of characters under a budget
in which every change was already counted at the root. `unfolds` works out which of the
folds made to undo, in order. Only a fold the block shows can be undone (a folder group
with no folded folder above it, a folder rename's line); undoing a folder's fold shows its
folded subfolders as groups, which may then be undone in turn. Of those shown, the ones
that give back folders go before those that give back only entries (the tree's shape
first), the shallowest first (a group high in the tree hides the most of it), and at one
depth the one that gives back the most lines; a folder rename's files come last (its line
already says where they went). Each is taken while its estimated cost fits in the room
left, else never (the room only shrinks). The estimates come from the entries' own lines
and their groups' lines as the plan writes them; `fit.py` renders to check them, keeping
the longest run of them that really fits.
"""

from __future__ import annotations

import heapq
import itertools
import posixpath
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .budget import Meter
from .layout import Entry, Folds, Key, Plan, Pool
from .rollup import Move, MoveKind

_LAST = 1 << 30  # the depth a folder rename's files are given back at: after any folder


@dataclass
class _Tree:
    """The entries one key holds, by folder: what a group of each folder would count, and
    what listing its own entries takes."""

    plan: Plan
    meter: Meter
    lines: Counter[str] = field(default_factory=Counter)  # entries directly in a folder
    chars: Counter[str] = field(default_factory=Counter)  # and their lines' characters
    counts: dict[str, Counter[str]] = field(default_factory=dict)  # a group's counts
    children: dict[str, list[str]] = field(default_factory=dict)  # sorted: the same order

    @classmethod
    def of(cls, plan: Plan, meter: Meter, entries: Iterator[Entry]) -> _Tree:
        """The tree of `entries`: each listed in its folder, counted in the groups of
        its folder and of those above."""
        tree = cls(plan, meter)
        texts: dict[str, list[str]] = {}
        for entry in entries:
            folder = entry.folder
            counts = tree.counts.get(folder)
            if counts is None:
                counts = tree.counts[folder] = Counter()
                texts[folder] = []
            entry.tally(counts)
            texts[folder].append(entry.text)
        for folder, lines in texts.items():  # sizes add up: one measure per folder
            tree.lines[folder] = len(lines)
            tree.chars[folder] = meter.size("".join(lines)) + 3 * len(lines)  # "- ", newline
        for folder in list(tree.counts):  # every folder above one that holds entries
            while folder:
                folder = posixpath.dirname(folder)
                if folder in tree.counts:
                    break
                tree.counts[folder] = Counter()
        for folder in sorted(tree.counts, key=lambda f: (-_depth(f), f)):  # children first
            if folder:
                parent = posixpath.dirname(folder)
                tree.children.setdefault(parent, []).append(folder)
                tree.counts[parent].update(tree.counts[folder])
        return tree

    def group(self, folder: str) -> int:
        """What the group line of `folder` takes (with "- " and its newline)."""
        return self.meter.size(self.plan.group(folder, self.counts.get(folder, Counter()))) + 3

    def opened(self, folder: str, folded: set[str]) -> tuple[int, int, list[str]]:
        """Undoing the fold of `folder`: the lines it brings back less its own, the
        characters that adds, and the folded folders below it that then show."""
        lines, chars, shown = 0, 0, list[str]()
        stack = [folder]
        while stack:
            current = stack.pop()
            lines += self.lines[current]
            chars += self.chars[current]
            for child in self.children.get(current, ()):
                if child in folded:
                    lines, chars = lines + 1, chars + self.group(child)
                    shown.append(child)
                else:
                    stack.append(child)
        return lines - 1, chars - self.group(folder), shown


def unfolds(plans: Sequence[Plan | None], folds: Sequence[Folds], made: Sequence[Move],
            room: int, meter: Meter) -> list[Move]:
    """The folds among `made` (which gave `folds`) to undo, in order, each estimated to
    fit in the `room` the ones before it left. `folds` is left as it was."""
    undoable = {(m.block, m.key, m.target): m for m in made if m.kind is not MoveKind.MINIMAL}
    trees: dict[tuple[int, Key], _Tree] = {}
    heap: list[tuple[bool, int, int, int, int, Move]] = []
    folded = {(b, key): set(f) for b, fs in enumerate(folds) for key, f in fs.folders.items()}
    order = itertools.count()  # ties: in the order offered

    def offer(move: Move) -> None:
        if move.kind is MoveKind.RENAME:
            depth, shown = _LAST, list[str]()
            lines, chars = _renamed(plans[move.block], int(move.target), meter)
        else:
            assert move.key is not None
            depth = _depth(str(move.target))
            tree = _tree(trees, plans, folds, move.block, move.key, meter)
            lines, chars, shown = tree.opened(str(move.target), folded[move.block, move.key])
        heapq.heappush(heap, (not shown, depth, -lines, chars, next(order), move))

    out: list[Move] = []
    for move in undoable.values():
        if not folds[move.block].minimal and _shown(move, folds[move.block]):
            offer(move)
    while heap:
        _, _, _, chars, _, move = heapq.heappop(heap)
        if chars > room:
            continue  # the room only shrinks: it never will
        room -= chars
        out.append(move)
        if move.kind is MoveKind.FOLDER:
            assert move.key is not None
            mine = folded[move.block, move.key]
            tree = trees[move.block, move.key]
            _, _, shown = tree.opened(str(move.target), mine)
            mine.discard(str(move.target))
            for child in shown:
                below = undoable.get((move.block, move.key, child))
                if below is not None:
                    offer(below)
    return out


def _shown(move: Move, folds: Folds) -> bool:
    """Whether the block shows `move`'s fold: a folder rename's, or a folder group with
    no folded folder above it."""
    if move.kind is MoveKind.RENAME:
        return True
    assert move.key is not None
    folded, folder = folds.folders.get(move.key, set()), str(move.target)
    while folder:
        folder = posixpath.dirname(folder)
        if folder in folded:
            return False
    return True


def _depth(folder: str) -> int:
    return folder.count("/") + 1 if folder else 0


def _tree(trees: dict[tuple[int, Key], _Tree], plans: Sequence[Plan | None],
          folds: Sequence[Folds], block: int, key: Key, meter: Meter) -> _Tree:
    tree = trees.get((block, key))
    if tree is None:
        plan = plans[block]
        assert plan is not None
        tree = trees[block, key] = _Tree.of(plan, meter, _held(plan, folds[block], key))
    return tree


def _held(plan: Plan, folds: Folds, key: Key) -> Iterator[Entry]:
    """The entries `key` holds: a pool's (its path changes less those in a folded folder
    rename or git operation), or a git operation's paths."""
    for e in plan.entries():
        if e.pool is None:
            continue
        if isinstance(key, int):
            if e.pool is Pool.CHANGES and key in e.ops:
                yield e
        elif e.pool is key and not (key is Pool.CHANGES and _taken(e, folds)):
            yield e


def _taken(entry: Entry, folds: Folds) -> bool:
    return (entry.rename is not None and entry.rename in folds.renames) or any(
        folds.folders.get(op) for op in entry.ops)


def _renamed(plan: Plan | None, rename: int, meter: Meter) -> tuple[int, int]:
    """Listing a folder rename's files again: how many lines, and their characters."""
    assert plan is not None
    texts = [e.text for e in plan.entries() if e.rename == rename and e.pool is Pool.CHANGES]
    return len(texts), sum(meter.size(t) + 3 for t in texts)
