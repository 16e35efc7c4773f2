"""Rename detection (pure): pair deleted and created paths of one batch.

Pairs by inode first (a `mv` keeps it), then by blob id; only unique matches pair, so
two identical new files never steal one deleted file. Paired children that together
make up a whole directory are summarized as one folder rename.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from freshline.store.records import ChangeKind, IndexEntry
from freshline.tracker.observed import FolderRename, Observed

K = TypeVar("K", bound=Hashable)


def _unique(entries: Iterable[IndexEntry], key: Callable[[IndexEntry], K]) -> dict[K, IndexEntry]:
    groups: dict[K, list[IndexEntry]] = defaultdict(list)
    for e in entries:
        groups[key(e)].append(e)
    return {k: v[0] for k, v in groups.items() if len(v) == 1}


def _pair_by(
    deleted: dict[str, IndexEntry],
    created: dict[str, IndexEntry],
    key: Callable[[IndexEntry], K],
) -> list[tuple[IndexEntry, IndexEntry]]:
    gone, new = _unique(deleted.values(), key), _unique(created.values(), key)
    pairs = [(gone[k], new[k]) for k in gone.keys() & new.keys()]
    for old, fresh in pairs:
        del deleted[old.path], created[fresh.path]
    return pairs


def pair_renames(
    deleted: dict[str, IndexEntry], created: dict[str, IndexEntry]
) -> tuple[list[Observed], list[Observed]]:
    """Renames found among `deleted` and `created`, and the observations left unpaired.

    `deleted` maps paths to their old index entries, `created` to their fresh entries.
    """
    deleted, created = dict(deleted), dict(created)
    pairs = _pair_by(deleted, created, lambda e: (e.dev, e.inode, e.kind))
    pairs += _pair_by(deleted, created, lambda e: (e.blob, e.kind))
    renames = [Observed(ChangeKind.RENAMED, old, new) for old, new in pairs]
    rest = [Observed(ChangeKind.DELETED, e, None) for e in deleted.values()]
    rest += [Observed(ChangeKind.CREATED, None, e) for e in created.values()]
    return renames, rest


def _split_common_tail(old: str, new: str) -> tuple[str, str] | None:
    a, b = old.split("/"), new.split("/")
    n = 0
    while n < min(len(a), len(b)) - 1 and a[-1 - n] == b[-1 - n]:
        n += 1
    if n == 0:
        return None
    return "/".join(a[:-n]), "/".join(b[:-n])


def folder_renames(
    renames: Iterable[Observed], entries_under: Callable[[str], int]
) -> list[FolderRename]:
    """Folders moved as a whole: every entry the index had under the old folder was renamed
    to the same place under one new folder. `entries_under(dir)` counts the index's
    entries below a directory before the batch."""
    groups: dict[tuple[str, str], int] = defaultdict(int)
    for r in renames:
        assert r.old is not None and r.new is not None
        split = _split_common_tail(r.old.path, r.new.path)
        if split and split[0] and split[1]:
            groups[split] += 1
    found = [FolderRename(o, n) for (o, n), count in groups.items() if entries_under(o) == count]
    return sorted(found, key=lambda f: f.old)
