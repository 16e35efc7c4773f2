"""Linux's inotify through ctypes: a descriptor to block on, and its events parsed (pure).

The watcher blocks on this descriptor with `poll()` and no timeout, so a service watching
many workspaces costs nothing while nothing changes (watchfiles' loop wakes every `step`
milliseconds instead). The kernel queues an event when the system call that caused it
returns, so every change made before a reader asks is in the queue by then; one the
queue had no room for is reported as an overflow (`Q_OVERFLOW`), never dropped silently.

    struct inotify_event { int wd; uint32 mask; uint32 cookie; uint32 len; char name[len]; }
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from dataclasses import dataclass

MODIFY = 0x2
ATTRIB = 0x4
MOVED_FROM = 0x40
MOVED_TO = 0x80
CREATE = 0x100
DELETE = 0x200
DELETE_SELF = 0x400
MOVE_SELF = 0x800
UNMOUNT = 0x2000
Q_OVERFLOW = 0x4000
IGNORED = 0x8000
ONLYDIR = 0x1000000
DONT_FOLLOW = 0x2000000
EXCL_UNLINK = 0x4000000
ISDIR = 0x40000000

# What a watched folder reports: every change of an entry's content, metadata or name,
# and the folder's own end. Links are never followed; only folders are watched.
FOLDER_MASK = (MODIFY | ATTRIB | MOVED_FROM | MOVED_TO | CREATE | DELETE | DELETE_SELF
               | MOVE_SELF | ONLYDIR | DONT_FOLLOW | EXCL_UNLINK)
READ_SIZE = 1 << 16  # bytes per read: room for about a thousand events
_HEADER = struct.Struct("iIII")


@dataclass(frozen=True)
class Event:
    """One inotify event: the watch it came from, what happened, and the entry's name
    (b"" for the watched folder itself)."""

    wd: int
    mask: int
    cookie: int
    name: bytes

    @property
    def is_dir(self) -> bool:
        """Whether the entry is a folder."""
        return bool(self.mask & ISDIR)


def parse(buffer: bytes) -> list[Event]:
    """The events in what one read returned (a name is padded with NULs to its length)."""
    events = []
    offset = 0
    while offset + _HEADER.size <= len(buffer):
        wd, mask, cookie, length = _HEADER.unpack_from(buffer, offset)
        start = offset + _HEADER.size
        name = buffer[start:start + length].split(b"\0", 1)[0]
        events.append(Event(wd, mask, cookie, name))
        offset = start + length
    return events


class Unavailable(OSError):
    """inotify is not there (another kernel) or cannot be had (the instance limit)."""


class Inotify:
    """One inotify instance: non-blocking, closed on exec."""

    def __init__(self) -> None:
        self._libc = _libc()
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            errno = ctypes.get_errno()
            raise Unavailable(errno, f"inotify_init1: {os.strerror(errno)}")
        self.fd = fd

    def add(self, path: bytes, mask: int = FOLDER_MASK) -> int:
        """Watch the folder at `path`; its watch descriptor (the same one again for a
        folder already watched). OSError (ENOSPC: the user's watch limit) when it cannot."""
        wd = int(self._libc.inotify_add_watch(self.fd, path, mask))
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, os.strerror(errno), os.fsdecode(path))
        return wd

    def remove(self, wd: int) -> None:
        """Stop watching `wd` (its IGNORED event follows; one already gone is no error)."""
        self._libc.inotify_rm_watch(self.fd, wd)

    def read(self) -> list[Event]:
        """Every event queued now ([] when there is none)."""
        chunks = []
        while True:
            try:
                chunk = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return parse(b"".join(chunks))

    def close(self) -> None:
        """Close the instance (every watch goes with it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _libc() -> ctypes.CDLL:
    name = ctypes.util.find_library("c")
    if name is None:
        raise Unavailable("no C library to find inotify in")
    libc = ctypes.CDLL(name, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise Unavailable("this C library has no inotify")
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc
