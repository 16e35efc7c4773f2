"""Opening a path beneath a directory: one component at a time, never through a link unseen.

A reader that checks a path and opens it by name later opens whatever the name leads to
*then*: a folder swapped for a symlink between the two makes the open follow it out of
the workspace. So a path is opened here from the root's descriptor, a component at a
time (`openat` with O_NOFOLLOW): a folder is entered as the folder it is, and a link is
read (`readlink`) and its target walked the same way from where the link stands; a
target above the root is `Outside`. What was opened is then known by its descriptor
(`fstat`): the caller checks and reads that very file, whatever the names do meanwhile.
The last component is opened with O_NONBLOCK and only after `lstat` says it is a file or
a folder, so a FIFO, device or socket is never waited on (`Kind.SPECIAL`).

Walks (`files_under`) see real entries only: a link met by a walk is not followed, and
each folder is opened from its parent's descriptor the same way.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from freshline.errors import WorkspaceError

MAX_LINKS = 40  # links followed in one path, as the kernel allows
RETRIES = 8  # a component that changes kind while it is opened, this many times in a row
CHUNK = 1 << 20

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LAST = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_CHANGED = frozenset({errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.ENXIO, errno.EMLINK})


class Kind(StrEnum):
    """What a path names."""

    FILE = "file"  # a regular file, open
    FOLDER = "folder"  # a directory, open
    MISSING = "missing"  # nothing there (or a file where a folder should be)
    SPECIAL = "special"  # a FIFO, device or socket: never opened


class Outside(WorkspaceError):
    """A link leads out of the root (or round in a loop), or the path kept changing while
    it was opened; the message says which, without the path."""


@dataclass
class Opened:
    """What a root-relative path names, open when it is a file or a folder."""

    rel: str  # the real root-relative path: links followed ("" is the root)
    kind: Kind
    fd: int = -1  # an open descriptor of a FILE or FOLDER, else -1
    info: os.stat_result | None = None  # its fstat (a SPECIAL's lstat)

    @property
    def size(self) -> int:
        """The size of what was opened, as fstat saw it."""
        return self.info.st_size if self.info is not None else 0

    def read(self, limit: int | None = None) -> bytes:
        """The file's bytes from its start: all, or the first `limit`."""
        return read_fd(self.fd, limit)

    def close(self) -> None:
        """Close the descriptor (again: nothing)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """A file's bytes from offset 0 (`pread`: the descriptor's position is not used)."""
    parts: list[bytes] = []
    offset = 0
    while limit is None or offset < limit:
        want = CHUNK if limit is None else min(CHUNK, limit - offset)
        chunk = os.pread(fd, want, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def open_beneath(root: Path, rel: str, follow: bool = True) -> Opened:
    """Open normalized root-relative `rel` under `root` without following a link out of it.

    Links inside the root are followed by their text (`follow=False`: none is, a link is
    Outside); `Opened.rel` is where they led. Raises Outside for a link leading above the
    root, a loop, or a path that kept changing while it was opened; OSError for what the
    system refuses (permissions).
    """
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    walk = _Walk(root, root_fd, follow)
    try:
        return walk.run([p for p in rel.split("/") if p])
    finally:
        walk.close()


class _Walk:
    """One walk down from the root: the descriptors of the folders entered so far."""

    def __init__(self, root: Path, root_fd: int, follow: bool) -> None:
        self.root = root
        self.follow = follow
        self.fds = [root_fd]
        self.names: list[str] = []
        self.links = 0

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []

    def run(self, todo: list[str]) -> Opened:
        while todo:
            name = todo.pop(0)
            if name == ".":
                continue
            if name == "..":
                self._up()
                continue
            found = self._step(name, last=not todo)
            if isinstance(found, str):  # a link: its target goes first
                todo[:0] = self._target(found)
            elif isinstance(found, int):  # a folder entered
                self.fds.append(found)
                self.names.append(name)
            else:
                if found.kind is Kind.MISSING:
                    found.rel = self._lexical([name, *todo])
                return found
        return self._opened_folder()

    def _opened_folder(self) -> Opened:
        fd = os.dup(self.fds[-1])
        return Opened("/".join(self.names), Kind.FOLDER, fd, os.fstat(fd))

    def _rel(self, name: str) -> str:
        return "/".join([*self.names, name])

    def _step(self, name: str, last: bool) -> str | int | Opened:
        """One component: a link's target, a folder's descriptor, or what the path ends at."""
        here = self.fds[-1]
        for _ in range(RETRIES):
            try:
                st = os.stat(name, dir_fd=here, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return Opened("", Kind.MISSING)
            if stat.S_ISLNK(st.st_mode):
                try:
                    return os.readlink(name, dir_fd=here)
                except OSError as exc:
                    if exc.errno in (errno.EINVAL, errno.ENOENT):
                        continue  # no longer a link
                    raise
            if not stat.S_ISDIR(st.st_mode) and not last:
                return Opened("", Kind.MISSING)  # a file where a folder should be
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                return Opened(self._rel(name), Kind.SPECIAL, info=st)
            try:
                fd = os.open(name, _LAST if last else _DIR, dir_fd=here)
            except OSError as exc:
                if exc.errno in _CHANGED:
                    continue  # it changed kind since the lstat: look again
                raise
            if not last:
                return fd  # O_DIRECTORY with O_NOFOLLOW: a real folder
            return _classify(fd, self._rel(name))
        raise Outside("kept changing while it was opened")

    def _target(self, text: str) -> list[str]:
        """The components a link's text stands for, from where the walk is."""
        self.links += 1
        if not self.follow:
            raise Outside("a symbolic link where none may be")
        if self.links > MAX_LINKS:
            raise Outside("too many levels of links")
        if not text.startswith("/"):
            return [p for p in text.split("/") if p]
        rel = _under_root(self.root, text)
        if rel is None:
            raise Outside("resolves outside the workspace")
        while len(self.fds) > 1:
            self._up()
        return [p for p in rel.split("/") if p]

    def _up(self) -> None:
        if not self.names:
            raise Outside("resolves outside the workspace")
        os.close(self.fds.pop())
        self.names.pop()

    def _lexical(self, rest: list[str]) -> str:
        """The real path so far and `rest` folded lexically (nothing left to follow)."""
        parts = list(self.names)
        for part in rest:
            if part == "..":
                if not parts:
                    raise Outside("resolves outside the workspace")
                parts.pop()
            elif part != ".":
                parts.append(part)
        return "/".join(parts)


def _classify(fd: int, rel: str) -> Opened:
    """What an opened descriptor is: a file or a folder kept open, anything else closed."""
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return Opened(rel, Kind.FILE, fd, info)
    if stat.S_ISDIR(info.st_mode):
        return Opened(rel, Kind.FOLDER, fd, info)
    os.close(fd)
    return Opened(rel, Kind.SPECIAL, info=info)


def _under_root(root: Path, target: str) -> str | None:
    """An absolute link target as a root-relative path, or None when it lies outside."""
    target = os.path.normpath(target)
    for base in (os.path.abspath(root), os.path.realpath(root)):
        if target == base:
            return ""
        if target.startswith(base.rstrip("/") + "/"):
            return target[len(base.rstrip("/")) + 1:]
    return None


def folder_fd(root: Path, rel: str, create: bool = False) -> int:
    """A descriptor of the folder `rel` under `root` entered through no link at all (`rel`
    is a real path, as `Opened.rel` gives one), made on the way when `create`. Raises
    Outside where a component is now a link, OSError where it is not a folder; the caller
    closes the fd."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in (p for p in rel.split("/") if p):
            nxt = _enter_made(fd, name, create, rel)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _enter_made(fd: int, name: str, create: bool, rel: str) -> int:
    for _ in range(RETRIES):
        try:
            return os.open(name, _DIR, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                raise Outside(f"{rel}: a link stands where a folder was") from None
            raise
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            pass  # made meanwhile by another: enter it
    raise Outside(f"{rel}: kept changing while it was made")


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def read_regular(path: str | Path) -> bytes | None:
    """What the regular file at `path` holds (a path outside any workspace, read as the
    system resolves it), never waiting on a FIFO; None when it is not a regular file."""
    try:
        fd = os.open(path, _LAST & ~os.O_NOFOLLOW)
    except OSError:
        return None
    with _classify(fd, "") as opened:
        return opened.read() if opened.kind is Kind.FILE else None


def open_inside(root: Path, path: Path) -> Opened:
    """Open `path`, a file freshline keeps under `root` (a snapshot), through no link at
    all. Raises Outside when it is not under `root`."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise Outside(f"{path} is not under {root}")
    return open_beneath(root, "" if rel == "." else rel, follow=False)


def open_entry(dir_fd: int, name: str, rel: str) -> Opened:
    """An entry a walk met in the folder open as `dir_fd`, opened there without following
    a link (an entry that became a link since is MISSING: walks never follow one)."""
    try:
        fd = os.open(name, _LAST, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _CHANGED:
            gone = exc.errno not in (errno.ENXIO,)
            return Opened(rel, Kind.MISSING if gone else Kind.SPECIAL)
        raise
    return _classify(fd, rel)


@dataclass
class _Folder:
    """A folder a walk opened, closed once it and the subfolders opened from it are done."""

    fd: int
    rel: str
    holds: int = 1

    def release(self) -> None:
        self.holds -= 1
        if self.holds == 0:
            os.close(self.fd)


def files_under(
    top: Opened, visible: Callable[[str, bool], bool]
) -> Iterator[tuple[int, str, str]]:
    """Every regular file under the open folder `top` that `visible(rel, is_folder)` lets
    through (folders it refuses are not entered), files of a folder before its
    subfolders, each in name order: (the descriptor of its folder, open while the file is
    handled, its name, its root-relative path). Links are never followed.

    Iterative, and a folder's descriptor is closed once its subfolders are opened, so a
    tree thousands of levels deep holds a few descriptors, not one per level.
    """
    held: list[_Folder] = []
    stack: list[tuple[_Folder | None, str, str]] = [(None, "", top.rel)]
    try:
        while stack:
            parent, name, rel = stack.pop()
            folder = _enter(top, parent, name, rel)
            if folder is None:
                continue
            held.append(folder)
            files, subfolders = _entries(folder, visible)
            folder.holds += len(subfolders)
            stack.extend((folder, n, r) for n, r in reversed(subfolders))
            for file_name, file_rel in files:
                yield folder.fd, file_name, file_rel
            folder.release()
            held = [f for f in held if f.holds]
    finally:
        for folder in held:
            if folder.holds:
                os.close(folder.fd)


def _enter(top: Opened, parent: _Folder | None, name: str, rel: str) -> _Folder | None:
    """Open one folder of a walk from its parent's descriptor (None: it changed or is
    unreadable: skipped), releasing the parent's hold on it."""
    if parent is None:
        return _Folder(os.dup(top.fd), rel)
    try:
        return _Folder(os.open(name, _DIR, dir_fd=parent.fd), rel)
    except OSError:
        return None  # a link now, gone, unreadable, or out of descriptors
    finally:
        parent.release()


def _entries(
    folder: _Folder, visible: Callable[[str, bool], bool]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A folder's visible regular files and subfolders, each as (name, rel), by name."""
    files: list[tuple[str, str]] = []
    subfolders: list[tuple[str, str]] = []
    try:
        with os.scandir(folder.fd) as found:
            entries = sorted(found, key=lambda e: e.name)
            for entry in entries:
                rel = f"{folder.rel}/{entry.name}" if folder.rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if visible(rel, True):
                        subfolders.append((entry.name, rel))
                elif entry.is_file(follow_symlinks=False) and visible(rel, False):
                    files.append((entry.name, rel))
    except OSError:
        pass  # unreadable: nothing under it is searched
    return files, subfolders
