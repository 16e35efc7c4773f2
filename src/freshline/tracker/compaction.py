"""Compaction that keeps the shape (pure): what the change log drops past its cap, counted.

Past `change_log_cap` rows the oldest whole epochs leave the log. They are not simply
lost: `fold` coalesces them and counts the net path changes per folder (by kind), and
keeps each HEAD move and scope change as one entry without its list of paths, all tagged
with the span of epochs they came from. A reader whose cursor lies before the log's
start still learns where things changed and how much (`Bulk/sub03/: 100 created, epochs
5–9`). One compaction's folders are rolled up into their parents, deepest first, until
they are few (`per_run`); the groups of a project are kept up to `group_cap`, the oldest
spans dropped first. A reader behind even those gets a fresh manifest instead.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable
from itertools import groupby

from freshline.store.records import Change, ChangeGroup, ChangeKind, LoggedChange
from freshline.tracker.coalesce import coalesce_sets, is_folder_rename

_ENTRIES = (ChangeKind.GIT, ChangeKind.CONFIG)  # project-level rows kept, one group each
_PATH_LISTS = ("paths", "newly_included", "no_longer_included")  # left out of an entry


def group_cap(cap: int) -> int:
    """How many groups a project keeps for a log of `cap` rows: a tenth, at least 20."""
    return max(cap // 10, 20)


def per_run(cap: int) -> int:
    """How many folder groups one compaction keeps at most (a quarter of `group_cap`)."""
    return max(group_cap(cap) // 4, 5)


def fold(dropped: list[LoggedChange], most: int) -> list[ChangeGroup]:
    """The groups that stand for `dropped` (whole epochs, oldest first): net path changes
    counted per folder, at most `most` folders; each HEAD move and scope change as an
    entry without its paths."""
    if not dropped:
        return []
    first, last = dropped[0].epoch, dropped[-1].epoch
    epochs = groupby(dropped, key=lambda e: e.epoch)
    counts: dict[str, Counter[str]] = {}
    entries: list[ChangeGroup] = []
    for c in coalesce_sets([e.change for e in rows] for _, rows in epochs):
        if c.kind in _ENTRIES:
            detail = {k: v for k, v in (c.detail or {}).items() if k not in _PATH_LISTS}
            entries.append(ChangeGroup(first, last, entry=Change(c.kind, "", detail=detail)))
        elif c.path and not is_folder_rename(c) and c.kind is not ChangeKind.COMPACTED:
            counts.setdefault(posixpath.dirname(c.path), Counter())[c.kind.value] += 1
    rolled = _rolled_up(counts, most)
    return [ChangeGroup(first, last, folder, dict(sorted(n.items())))
            for folder, n in sorted(rolled.items())] + entries


def _rolled_up(counts: dict[str, Counter[str]], most: int) -> dict[str, Counter[str]]:
    """`counts` with the deepest folders merged into their parents until at most `most`
    remain (or only the root does)."""
    while len(counts) > most:
        depth = max(_depth(f) for f in counts)
        merged: dict[str, Counter[str]] = {}
        for folder, n in counts.items():
            key = posixpath.dirname(folder) if _depth(folder) == depth else folder
            merged.setdefault(key, Counter()).update(n)
        counts = merged
    return counts


def _depth(folder: str) -> int:
    return folder.count("/") + 1 if folder else 0


def merged(groups: Iterable[ChangeGroup]) -> list[ChangeGroup]:
    """Groups as a reader gets them: one per folder (its counts summed, its span from the
    earliest to the latest), by folder; then the entries, oldest first."""
    folders: dict[str, ChangeGroup] = {}
    entries: list[ChangeGroup] = []
    for g in groups:
        if g.entry is not None:
            entries.append(g)
            continue
        seen = folders.get(g.folder)
        if seen is None:
            folders[g.folder] = g
            continue
        total = Counter(seen.counts)
        total.update(g.counts)
        folders[g.folder] = ChangeGroup(min(seen.first_epoch, g.first_epoch),
                                        max(seen.last_epoch, g.last_epoch), g.folder,
                                        dict(sorted(total.items())))
    return [folders[f] for f in sorted(folders)] + entries
