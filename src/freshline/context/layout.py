"""A block before it is written out: fixed lines, and entries a roll-up may fold.

`manifest.py` and `updates.py` describe their block as a `Plan`; `rollup.py` decides what
to fold (a `Folds` state); `write` turns a plan and a state into the block's text. A
folded entry is never dropped: it is counted in a group line (its folder's, its folder
rename's, or one of its git operation's folder groups, written under the operation's
line), and the block then ends with how to get the full list back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from freshline.names import ESCAPE

from .wire import tag


class Pool(StrEnum):
    """Which roll-up an entry belongs to (`rollup.py` folds them in a fixed order)."""

    FILES = "files"  # manifest: the project's files
    DOCUMENTS = "documents"  # manifest: documents with their status
    CHANGES = "changes"  # updates: path changes, paths a scope change or refresh brought
    KEPT = "kept"  # updates: what the agent most needs; folded only when nothing else fits


@dataclass(frozen=True)
class Entry:
    """One `- ` line. With a pool it may be folded into a group that counts it as `label`;
    without one it is always listed (a source pattern, a folder rename)."""

    path: str  # workspace-relative: groups of its folder and of the folders above hold it
    text: str
    label: str = ""
    pool: Pool | None = None
    key: str = ""  # sort key in its list (default: the path)
    count: int = 1  # how many it stands for (a stored file group)
    folded_at: str | None = None  # already a group of this folder (a stored file group)
    counts: tuple[tuple[str, int], ...] = ()  # or, by label, what it counts (earlier changes)
    ops: tuple[int, ...] = ()  # the git operations whose paths hold it
    rename: int | None = None  # the folder rename that moved it, if any

    def tally(self, counts: Counter[str]) -> None:
        """Add what this entry stands for to a group's `counts`."""
        if self.counts:
            counts.update(dict(self.counts))
        else:
            counts[self.label] += self.count

    @property
    def folder(self) -> str:
        """The folder it sits in: groups of this folder and of the ones above may hold it."""
        if self.folded_at is not None:
            return self.folded_at
        return self.path.rpartition("/")[0]


@dataclass(frozen=True)
class Text:
    """A line written as it is; `essential` lines stay when a block is cut to its minimum."""

    line: str
    essential: bool = False


@dataclass(frozen=True)
class Section:
    """A heading and its entries (sorted, duplicates once). Without entries left to list
    the heading goes too, unless `sticky`. `groups` merges that pool's folder groups into
    the list (the manifest's files)."""

    heading: str
    entries: Sequence[Entry]
    sticky: bool = False
    groups: Pool | None = None


@dataclass(frozen=True)
class Groups:
    """The folder groups of some pools, under one heading."""

    heading: str
    pools: tuple[Pool, ...]


Key = Pool | int  # what folder folds apply to: a pool, or a git operation by its index
# A git operation's line from its folder groups (None: none) and whether some of its
# paths are told elsewhere in the block all the same.
GitWriter = Callable[[Mapping[str, Counter[str]] | None, bool], str]


@dataclass(frozen=True)
class GitLine:
    """A git operation's line; it says whether its paths are listed or counted here, and
    its folder groups follow it."""

    index: int
    write: GitWriter


@dataclass(frozen=True)
class WayBack:
    """The block's last line when something was folded: how to get the full list."""

    line: str


Part = Text | Section | Groups | GitLine | WayBack


@dataclass
class Folds:
    """What one block folds: folders per pool and per git operation (its paths counted
    in its own folder groups), folder renames, or all."""

    folders: dict[Key, set[str]] = field(default_factory=dict)
    renames: set[int] = field(default_factory=set)
    minimal: bool = False

    def folded(self, key: Key) -> set[str]:
        """The folded folders of `key` (a set to add to)."""
        return self.folders.setdefault(key, set())

    def copy(self) -> Folds:
        """A copy to fold further."""
        folders = {key: set(folded) for key, folded in self.folders.items()}
        return Folds(folders, set(self.renames), self.minimal)


@dataclass
class Plan:
    """One block: its tag, attributes, parts, and how to write a group's line."""

    name: str
    attributes: list[tuple[str, object]]
    parts: list[Part]
    group_line: Callable[[str, Counter[str]], str]  # (folder, counts by label) → text
    start: Folds = field(default_factory=Folds)  # folds it always has
    legend: str = ""  # the last line when a line holds an escape: how to read names back
    # Group lines written so far: fitting renders a plan several times, mostly with the
    # same groups.
    _lines: dict[tuple[str, frozenset[tuple[str, int]]], str] = field(
        default_factory=dict, repr=False)

    def group(self, folder: str, counts: Counter[str]) -> str:
        """The line of a group of `folder` counting `counts` (`group_line`, remembered)."""
        key = (folder, frozenset(counts.items()))
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = self.group_line(folder, counts)
        return line

    def entries(self) -> Iterable[Entry]:
        """Every entry of every list."""
        for part in self.parts:
            if isinstance(part, Section):
                yield from part.entries


class Placement:
    """Where each entry of a block goes under some folds: listed, or counted in a group."""

    def __init__(self, plan: Plan, folds: Folds) -> None:
        self.folds = folds
        # the groups of each pool and git operation, by folder
        self.groups: dict[Key, dict[str, Counter[str]]] = {}
        self.listed: set[int] = set()  # ids of listed entries
        self.told: Counter[int] = Counter()  # a git operation's paths not in its groups
        self._tops: dict[Key, TopFolded] = {}
        for entry in plan.entries():
            pool = entry.pool
            if pool is None:
                if not folds.minimal:
                    self.listed.add(id(entry))
            elif folds.minimal:
                self._count(pool, "", entry)
            elif pool is not Pool.CHANGES or not self._folded_by_git(entry):
                if entry.ops:
                    self.told.update(entry.ops)
                top = self._top(pool, entry.folder)
                if top is None:
                    self.listed.add(id(entry))
                else:
                    self._count(pool, top, entry)

    def _folded_by_git(self, entry: Entry) -> bool:
        """Whether a path change is in a folded folder rename or in a folder group of a
        git operation (counted under the operation's line)."""
        if entry.rename is not None and entry.rename in self.folds.renames:
            return True  # its folder's rename line says it all
        for op in entry.ops:
            if op in self.folds.folders:
                top = self._top(op, entry.folder)
                if top is not None:
                    self._count(op, top, entry)
                    return True
        return False

    def _count(self, key: Key, folder: str, entry: Entry) -> None:
        by_folder = self.groups.get(key)
        if by_folder is None:
            by_folder = self.groups[key] = {}
        counts = by_folder.get(folder)
        if counts is None:  # not setdefault: a Counter per entry costs
            counts = by_folder[folder] = Counter()
        entry.tally(counts)

    def _top(self, key: Key, folder: str) -> str | None:
        """The highest folded folder of `key` holding `folder` (itself included), if any."""
        tops = self._tops.get(key)
        if tops is None:
            tops = self._tops[key] = TopFolded(self.folds.folded(key))
        return tops(folder)

    def op_groups(self, op: int) -> dict[str, Counter[str]] | None:
        """The folder groups of git operation `op`, or None when none of its paths is."""
        return self.groups.get(op)

    def is_listed(self, entry: Entry) -> bool:
        """Whether `entry` is listed one by one."""
        return id(entry) in self.listed

    def listed_paths(self, plan: Plan) -> frozenset[str]:
        """The paths of the plan's entries listed one by one (those a roll-up may fold)."""
        return frozenset(e.path for e in plan.entries()
                         if e.pool is not None and id(e) in self.listed)

    def rolled_up(self) -> bool:
        """Whether anything was folded."""
        return bool(self.groups or self.folds.renames or self.folds.minimal)


class TopFolded:
    """The highest of `folded` holding a folder (itself included; "" is the root), each
    answer remembered for the folders below it: entries come thousands per folder."""

    def __init__(self, folded: set[str]) -> None:
        self.folded = folded
        self._tops: dict[str, str | None] = {}

    def __call__(self, folder: str) -> str | None:
        tops = self._tops
        # Iterative, not recursive: a workspace may nest folders thousands deep.
        chain: list[str] = []
        current: str | None = folder
        while current is not None and current not in tops:
            chain.append(current)
            current = current.rpartition("/")[0] if current else None
        above = tops[current] if current is not None else None
        for name in reversed(chain):  # from the highest unknown folder down
            if above is None and name in self.folded:
                above = name
            tops[name] = above
        return tops[folder]


def write(plan: Plan, folds: Folds, placed: Placement | None = None) -> str:
    """The block's text under `folds` (`placed`: their placement, when the caller made it)."""
    placed = placed or Placement(plan, folds)
    body: list[str] = []
    for part in plan.parts:
        body.extend(_lines(plan, part, placed))
    if plan.legend and any(ESCAPE in line for line in body):
        body.append(plan.legend)
    return tag(plan.name, plan.attributes, body)


def _lines(plan: Plan, part: Part, placed: Placement) -> list[str]:
    minimal = placed.folds.minimal
    if isinstance(part, Text):
        return [part.line] if part.essential or not minimal else []
    if isinstance(part, WayBack):
        return [part.line] if placed.rolled_up() else []
    if isinstance(part, GitLine):
        if minimal:
            return []
        groups = placed.op_groups(part.index)
        head = part.write(groups, placed.told[part.index] > 0)
        if not groups or set(groups) == {""}:
            return [head]
        return [head, *(f"- {plan.group(folder, groups[folder])}" for folder in sorted(groups))]
    if isinstance(part, Groups):
        merged: dict[str, Counter[str]] = {}
        for pool in part.pools:
            for folder, counts in placed.groups.get(pool, {}).items():
                merged.setdefault(folder, Counter()).update(counts)
        lines = [plan.group(folder, merged[folder]) for folder in sorted(merged)]
        return [part.heading, *(f"- {line}" for line in lines)] if lines else []
    return _list(plan, part, placed)


def _list(plan: Plan, part: Section, placed: Placement) -> list[str]:
    keyed = {(e.key or e.path, e.text) for e in part.entries if placed.is_listed(e)}
    if part.groups is not None:
        groups = placed.groups.get(part.groups, {})
        keyed.update((folder + "/", plan.group(folder, c)) for folder, c in groups.items())
    texts = dict.fromkeys(text for _, text in sorted(keyed))
    if not texts and not (part.sticky and not placed.folds.minimal):
        return []
    return [part.heading, *(f"- {text}" for text in texts)]

