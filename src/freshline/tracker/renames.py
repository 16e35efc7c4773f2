"""Rename detection (pure): pair deleted and created paths of one batch on content evidence.

A deleted and a created path are one rename only when the content says so: the same blob
id (and kind), or, for text files, a similarity of at least 50 % (`similarity`). Inode and
device are never proof (ext4 hands a freed inode to the next new file at once): among
several identical candidates they pick the pair, and when a batch is too large to compare
every text pair they choose the pairs worth comparing. Pairing is greedy, best score
first, ties by path, so the same batch always pairs the same way. Paired children that
together make up a whole directory are summarized as one folder rename.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from freshline.store.records import ChangeKind, FileKind, IndexEntry
from freshline.tracker.observed import FolderRename, Observed
from freshline.tracker.similarity import RENAME_SIMILARITY, similarity

# Past this many (deleted × created) text pairs, only pairs sharing an inode are compared.
COMPARE_ALL_LIMIT = 10_000

Sketches = Mapping[str, bytes]


def pair_renames(
    deleted: Mapping[str, IndexEntry],
    created: Mapping[str, IndexEntry],
    old_sketches: Callable[[list[str]], Sketches],
    new_text: Callable[[str], bytes | None],
) -> tuple[list[Observed], list[Observed]]:
    """Renames found among `deleted` and `created`, and the observations left unpaired.

    `deleted` maps paths to their old index entries, `created` to their fresh entries.
    Once identical contents are paired, `old_sketches(paths)` looks up the line sketches
    of deleted text files (see `similarity`) and `new_text(path)` reads a created file's
    bytes (None unless it is a text file small enough to compare).
    """
    gone, new = dict(deleted), dict(created)
    pairs = _identical(gone, new)
    texts = [p for p, e in gone.items() if e.kind is FileKind.FILE]
    if texts and new:
        pairs += _similar(gone, new, old_sketches(sorted(texts)), new_text)
    renames = [Observed(ChangeKind.RENAMED, old, fresh) for old, fresh in pairs]
    rest = [Observed(ChangeKind.DELETED, e, None) for e in gone.values()]
    rest += [Observed(ChangeKind.CREATED, None, e) for e in new.values()]
    return renames, rest


def _take(
    gone: dict[str, IndexEntry], new: dict[str, IndexEntry], old: str, fresh: str
) -> tuple[IndexEntry, IndexEntry]:
    return gone.pop(old), new.pop(fresh)


def _identical(
    gone: dict[str, IndexEntry], new: dict[str, IndexEntry]
) -> list[tuple[IndexEntry, IndexEntry]]:
    """Pairs with the same content: a unique match, or one picked out by its inode."""
    groups: dict[tuple[str, FileKind], tuple[list[str], list[str]]] = defaultdict(
        lambda: ([], [])
    )
    for path, e in sorted(gone.items()):
        groups[e.blob, e.kind][0].append(path)
    for path, e in sorted(new.items()):
        groups[e.blob, e.kind][1].append(path)
    pairs = []
    for olds, fresh in groups.values():
        if not olds or not fresh:
            continue
        if len(olds) == 1 and len(fresh) == 1:
            pairs.append(_take(gone, new, olds[0], fresh[0]))
            continue
        by_inode = {_inode(gone[p]): p for p in olds}
        for path in fresh:
            match = by_inode.pop(_inode(new[path]), None)
            if match is not None:
                pairs.append(_take(gone, new, match, path))
    return pairs


def _inode(e: IndexEntry) -> tuple[int, int]:
    return e.dev, e.inode


def _similar(
    gone: dict[str, IndexEntry],
    new: dict[str, IndexEntry],
    old_sketches: Sketches,
    new_text: Callable[[str], bytes | None],
) -> list[tuple[IndexEntry, IndexEntry]]:
    """Pairs of text files at least `RENAME_SIMILARITY` alike, best first."""
    olds = sorted(p for p in gone if p in old_sketches)
    fresh = sorted(p for p in new if new[p].kind is FileKind.FILE)
    if len(olds) * len(fresh) <= COMPARE_ALL_LIMIT:
        candidates = [(o, f) for o in olds for f in fresh]
    else:
        inodes = {_inode(gone[p]): p for p in olds}
        candidates = [(inodes[_inode(new[f])], f) for f in fresh if _inode(new[f]) in inodes]
    texts: dict[str, bytes | None] = {}
    scored = []
    for o, f in candidates:
        if f not in texts:
            texts[f] = new_text(f)
        text = texts[f]
        if text is not None:
            score = similarity(old_sketches[o], gone[o].size, text)
            if score >= RENAME_SIMILARITY:
                scored.append((-score, o, f))
    pairs = []
    for _, o, f in sorted(scored):
        if o in gone and f in new:
            pairs.append(_take(gone, new, o, f))
    return pairs


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
