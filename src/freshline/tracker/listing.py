"""A fresh workspace's first flush may list its files rather than read them.

Hashing every file is most of a first scan's cost, and the first answer (a manifest) needs
only the paths. So a flush that may defer (`Tracker.flush(defer=True)`: a hook opening a
session) fills an empty index from a listing: each regular file's entry holds its lstat
(size, mtime_ns, inode) and no blob id (`UNHASHED`), and the store's meta says some entry
is not read yet. A file modified within the racy window before the listing
(`scan.RACY_WINDOW_NS`) is read at once: its stat could not tell a later edit of the same
size apart.

An entry listed stands for the bytes its file held at the listing, exactly as far as its
stat does, the same trust every rescan puts in a stat that did not move. Every flush that
may not defer reads each listed file before it compares (a full scan; the background
watcher's first one does it): a file whose stat is still the one listed gets its blob id
and nothing is logged; one whose stat moved is logged as modified (its old bytes were never
read, so nothing better can be said). Until then, a flush that may defer compares listed
entries by their stat alone. A listed file deleted, and one created with its very stat (a
rename keeps inode, size and mtime), is that file moved (`twin_blobs`): a rename, as if
its blob had been read. A listed file that can no longer be read leaves the index, as a
first full scan would have left it.

A scope matching on tags or properties needs every note read: such a workspace is never
listed (`tracker.facts`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from freshline.scope import is_markdown
from freshline.store.records import UNHASHED, FileKind, IndexEntry
from freshline.tracker.hashing import git_mode

UNHASHED_META = "tracker.unhashed"  # "1" while some index entry is listed, not read

StatKey = tuple[int, int, int, int, int]


def listed_entry(rel: str, st: os.stat_result) -> IndexEntry:
    """The entry of a regular file as its lstat describes it, content not read."""
    return IndexEntry(
        path=rel,
        kind=FileKind.FILE,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        inode=st.st_ino,
        dev=st.st_dev,
        blob=UNHASHED,
        mode=git_mode(st),
        parsed=not is_markdown(rel),  # listed only while no scope reads notes' facts
    )


def stat_key(entry: IndexEntry) -> StatKey:
    """What identifies a file's bytes without reading them: device, inode, size, mtime
    and mode."""
    return entry.dev, entry.inode, entry.size, entry.mtime_ns, entry.mode


def twin_blobs(
    deleted: Mapping[str, IndexEntry], created: Mapping[str, IndexEntry]
) -> dict[str, IndexEntry]:
    """`deleted`, each listed entry given the blob id of a created file with its very
    stat (the same file, moved); the others as they are."""
    twins = {stat_key(e): e for e in created.values() if e.hashed}
    out = dict(deleted)
    for path, entry in deleted.items():
        twin = None if entry.hashed else twins.get(stat_key(entry))
        if twin is not None and twin.kind is entry.kind:
            out[path] = replace(entry, blob=twin.blob)
    return out
