"""A fresh workspace's first flush may list its files rather than read them.

Hashing every file is most of a first scan's cost, and the first answer (a manifest) needs
only the paths; taking every file's lstat costs more than listing the folders (a system
call per file). So a flush that may defer (`Tracker.flush(defer=True)`: a hook opening a
session) fills an empty index from the names alone: each regular file's entry holds its
inode (the folder listing gives it for nothing), no size, mtime or blob id (`UNSTATED`,
`UNHASHED`), and the store's meta says some entry is not read yet and when the listing
began (`LISTED_AT`, a little before, so a coarse file-system clock cannot stamp a later
write earlier than that).

An entry listed stands for the bytes its file held at the listing. A file whose inode
change time (`ctime`: every write, rename, chmod and `touch` sets it, and nothing can set
it back) is older than the listing holds them still; one changed since may not. Every
flush that may not defer reads each listed file before it compares (a full scan; the
background watcher's first one does it): a file untouched since the listing gets its blob
id and nothing is logged; one touched since is logged as modified (its old bytes were
never read, so nothing better can be said). A flush that may defer meanwhile takes the
stat of each untouched file (reading those it could not trust by it, `scan.RACY_WINDOW_NS`)
and from then on trusts that stat as every rescan trusts one that did not move. A listed
file deleted, and one created with its very stat (a rename keeps inode, size and mtime),
is that file moved (`twin_blobs`): a rename, as if its blob had been read. An entry
listed by name alone has no stat to be a twin of: its file moved is told as deleted and
created. A listed file that can no longer be read leaves the index, as a first full scan
would have left it.

A scope matching on tags or properties needs every note read: such a workspace is never
listed (`tracker.facts`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from freshline.scope import is_markdown
from freshline.store.records import UNHASHED, FileKind, IndexEntry
from freshline.tracker.hashing import MODE_FILE, git_mode

UNHASHED_META = "tracker.unhashed"  # "1" while some index entry is listed, not read
LISTED_AT = "tracker.listed_at"  # ns: files whose ctime is older hold their bytes as listed
UNSTATED = -1  # the size and mtime of an entry listed by name alone
CLOCK_SLACK_NS = 10_000_000  # how far a file system's coarse clock may lag the real one

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


def unstated_entry(rel: str, inode: int, dev: int) -> IndexEntry:
    """The entry of a regular file known by its name and inode alone (a folder listing)."""
    return IndexEntry(
        path=rel,
        kind=FileKind.FILE,
        size=UNSTATED,
        mtime_ns=UNSTATED,
        inode=inode,
        dev=dev,
        blob=UNHASHED,
        mode=MODE_FILE,  # the exec bit is not known until it is read
        parsed=not is_markdown(rel),
    )


def unstated(listed: tuple[int, int, int]) -> bool:
    """Whether an index stat (size, mtime_ns, inode) is that of an entry listed by name."""
    return listed[0] == UNSTATED


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
