"""An exclusive lock per conversation, held by one thread of one process at a time.

`flock` on a small file excludes other processes, and the kernel releases it when a holder
dies, however it dies: a lock never outlives its process. A per-process RLock in front of
it excludes the other threads and makes the lock reentrant for the thread that holds it
(the flock is taken once, by the outermost hold). The file keeps the holder's pid, for the
message a waiting process shows. Lock files are never deleted: removing a file another
process is about to lock would let two holders in.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from freshline.errors import SessionBusy

WAIT_NOTICE_S = 1.0  # a waiting caller hears why after this long
_MAX_PAUSE_S = 0.05

WaitNotice = Callable[[str], None]
"""Told once, after WAIT_NOTICE_S, who holds the lock (e.g. "pid 4242")."""


@dataclass
class _Holder:
    rlock: threading.RLock = field(default_factory=threading.RLock)
    owner: int | None = None  # the thread holding it
    depth: int = 0
    fd: int | None = None


_HOLDERS: dict[Path, _Holder] = {}
_HOLDERS_LOCK = threading.Lock()


def _holder(path: Path) -> _Holder:
    with _HOLDERS_LOCK:
        return _HOLDERS.setdefault(path, _Holder())


def held(path: Path) -> bool:
    """Whether the calling thread holds the lock at `path`."""
    holder = _holder(path)
    return holder.depth > 0 and holder.owner == threading.get_ident()


@contextmanager
def hold(
    path: Path,
    wait: bool = True,
    on_wait: WaitNotice | None = None,
    on_acquired: Callable[[], None] | None = None,
    on_release: Callable[[], None] | None = None,
    what: str = "the lock",
) -> Iterator[None]:
    """Hold the lock at `path` for the block.

    `wait=False` raises SessionBusy ("`what` is busy: …") at once when someone else
    holds it. `on_acquired` runs
    when this hold took the lock (not when it nested in one the thread already had), and
    `on_release` just before the outermost hold lets it go.
    """
    holder = _holder(path)
    fresh = _acquire(path, holder, wait, on_wait, what)
    try:
        if fresh and on_acquired is not None:
            on_acquired()
        yield
    finally:
        _release(holder, on_release)


def _acquire(
    path: Path, holder: _Holder, wait: bool, on_wait: WaitNotice | None, what: str
) -> bool:
    start, pause, told = time.monotonic(), 0.002, False
    while True:
        if holder.rlock.acquire(blocking=False):
            if holder.depth:
                holder.depth += 1
                return False
            fd = _flock(path)
            if fd is not None:
                holder.fd, holder.depth, holder.owner = fd, 1, threading.get_ident()
                return True
            holder.rlock.release()
        if not wait:
            raise SessionBusy(f"{what} is busy: {_who(path)} holds it")
        if on_wait is not None and not told and time.monotonic() - start >= WAIT_NOTICE_S:
            on_wait(_who(path))
            told = True
        time.sleep(pause)
        pause = min(pause * 2, _MAX_PAUSE_S)


def _release(holder: _Holder, on_release: Callable[[], None] | None) -> None:
    holder.depth -= 1
    if holder.depth:
        holder.rlock.release()
        return
    try:
        if on_release is not None:
            on_release()
    finally:
        fd, holder.fd, holder.owner = holder.fd, None, None
        if fd is not None:
            os.close(fd)  # closing the last descriptor releases the flock
        holder.rlock.release()


def _flock(path: Path) -> int | None:
    """A descriptor holding the flock, or None when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # a full disk: the lock holds without the pid, which only names the holder
    return fd


def _who(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        pid = ""
    if pid.isdigit() and int(pid) == os.getpid():
        return "another thread of this process"
    return f"pid {pid}" if pid.isdigit() else "another process"
