"""A fresh workspace's first flush may list its files rather than read them.

Hashing every file is most of a first scan's cost, and the first answer (a manifest) needs
only the paths; taking every file's lstat costs more than listing the folders (a system
call per file). So a flush that may defer (`Tracker.flush(defer=True)`: a hook opening a
session) fills an empty index from the names alone: each regular file's entry holds its
inode (the folder listing gives it for nothing), no size, mtime or blob id (`UNSTATED`,
`UNHASHED`), and the store's meta says some entry is not read yet and when the listing
began (`LISTED_AT`).

That moment is read from the file system's own clock, never the wall clock: the two
differ (a file system stamps a change with a coarse clock, a tick behind the real one,
or with a clock of its own; a network file system with its server's), and any slack
guessed between them either stamps a file written just before the listing as touched
since (told modified, though nobody touched it) or a file written just after as older
than the listing (its change lost). So the listing touches a stamp in `.freshline/`
(`fs_clock`) until its change time ticks once, and takes that tick: every file changed
before the listing began has an older ctime, every one changed after it one at least as
late, whatever the clock's grain. A clock coarser than `TICK_WAIT_NS`, or a stamp that
cannot be written, lists nothing: that flush reads every file, as a first scan does.

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

import contextlib
import functools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from freshline.paths import DATA_DIR
from freshline.scope import is_markdown
from freshline.store.records import UNHASHED, FileKind, IndexEntry
from freshline.tracker.hashing import MODE_FILE, git_mode

UNHASHED_META = "tracker.unhashed"  # "1" while some index entry is listed, not read
LISTED_AT = "tracker.listed_at"  # ns: files whose ctime is older hold their bytes as listed
UNSTATED = -1  # the size and mtime of an entry listed by name alone
STAMP_NAME = "listing.stamp"  # in .freshline/: its change time reads the file system's clock
TICK_WAIT_NS = 50_000_000  # a jiffy is 1-10 ms; a clock slower than this is not waited for

StatKey = tuple[int, int, int, int, int]


def fs_clock(root: str, wait_ns: int = TICK_WAIT_NS) -> int | None:
    """The file system's clock at `root`, just ticked: later than the ctime of every file
    changed before the call, no later than that of any file changed after it. None when
    the stamp in `.freshline/` cannot be written, or its clock does not tick in `wait_ns`."""
    folder = os.path.join(root, DATA_DIR)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)  # a workspace's first command may come before its store
        fd = os.open(os.path.join(folder, STAMP_NAME),
                     os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError:
        return None
    try:
        return first_tick(functools.partial(_touch, fd), wait_ns)
    except OSError:
        return None
    finally:
        os.close(fd)


def _touch(fd: int) -> int:
    # A ctime read since the file's last change asks the next change for a fine stamp
    # (Linux's multigrain timestamps): there the second touch ticks; on a coarse clock,
    # the first touch in the next jiffy.
    os.utime(fd)
    return os.fstat(fd).st_ctime_ns


def first_tick(touch: Callable[[], int], wait_ns: int) -> int | None:
    """The first clock `touch` reads later than its first reading, or None when none did
    within `wait_ns`."""
    first = touch()
    deadline = time.monotonic_ns() + wait_ns
    while True:
        now = touch()
        if now > first:
            return now
        if time.monotonic_ns() > deadline:
            return None


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
    # A first call builds one per file before it answers: filling the record's fields at
    # once costs a fifth of the frozen dataclass's `__init__` (a guarded setattr a field).
    entry = object.__new__(IndexEntry)
    vars(entry).update({
        "path": rel,
        "kind": FileKind.FILE,
        "size": UNSTATED,
        "mtime_ns": UNSTATED,
        "inode": inode,
        "dev": dev,
        "blob": UNHASHED,
        "mode": MODE_FILE,  # the exec bit is not known until it is read
        "tags": (),
        "properties": {},
        "parsed": not is_markdown(rel),
    })
    return entry


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
