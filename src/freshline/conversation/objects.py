"""Writing new git objects: packed in freshline's own repository, loose in the user's.

A live turn over a fresh 20,000-file vault writes 20,000 blobs; `git hash-object -w`
would leave each one a loose file (a file-system entry and a disk block apiece). In
freshline's own repository (`.freshline/conversations.git`) each write is one pack instead:
the objects are compressed into a pack stream here, one at a time (a file is read once,
never held whole with the others), and `git index-pack --stdin` checks and indexes it.
When packs pile up, `git repack --geometric=2` folds the small ones into bigger ones, so a
lookup stays cheap and each object is rewritten only a few times over its life.

In the user's repository (isolated conversations, and live ones recorded before they
moved out of it) objects are written loose, as git writes a commit; git's own `gc --auto`
keeps that repository tidy.

`writing()` makes `freshline gc`'s immediate prune safe: a writer holds the objects lock
(shared) from the moment it checks which objects exist until a ref names what it wrote;
`collecting()` holds it alone.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from freshline.beneath import Kind, Outside, open_beneath
from freshline.conversation.git import Git
from freshline.conversation.looseobjects import ObjectDir
from freshline.conversation.pointer import pointer
from freshline.errors import GitError
from freshline.tracker.hashing import blob_id_fd
from freshline.withholding import Withholder

_TYPES = {"commit": 1, "tree": 2, "blob": 3}
LOCK_NAME = "freshline-objects.lock"
MAX_PACKS = 16  # past this many packs, a write folds the small ones together
_CHUNK = 1 << 20


def object_id(kind: str, data: bytes) -> str:
    """Git's id of an object of `kind` holding `data`."""
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data).hexdigest()


def _pack_header(kind: str, size: int) -> bytes:
    """A pack entry's header: type and size in git's variable-length encoding."""
    byte = (_TYPES[kind] << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


class Sink:
    """Collects new objects for one write; `close()` writes them all at once."""

    def __init__(
        self, git: Git, max_blob: int | None = None, screen: Withholder | None = None
    ) -> None:
        self.git = git
        self.max_blob = max_blob  # a file larger than this becomes a pointer blob
        self.screen = screen  # what live trees record of files with secrets, hard links
        self.written: set[str] = set()

    def add(self, kind: str, data: bytes) -> str:
        """Queue one object; returns its id (an object queued twice is written once)."""
        oid = object_id(kind, data)
        if oid not in self.written:
            self.written.add(oid)
            self._put(kind, data)
        return oid

    def add_path(self, root: Path, rel: str) -> str | None:
        """Queue the blob of file `rel` of `root` (a symlink: its target), as it is now,
        read beneath the root through no link; returns its id, or None when the path is
        gone or no longer a file. A file larger than `max_blob` becomes a pointer blob
        naming its content's id (hashed in chunks, never read whole)."""
        try:
            with open_beneath(root, rel, follow=False) as opened:
                if opened.kind is not Kind.FILE:
                    return None
                if self.max_blob is not None and opened.size > self.max_blob:
                    return self.add("blob", pointer(blob_id_fd(opened.fd), opened.size))
                return self.add("blob", opened.read())
        except Outside:  # a link: its target is its content
            try:
                return self.add("blob", os.fsencode(os.readlink(root / rel)))
            except OSError:
                return None
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def missing(self, oids: Iterable[str]) -> set[str]:
        """The ids among `oids` the repository lacks (one `cat-file` call)."""
        return self.git.missing_objects(oids)

    def read(self, oid: str) -> tuple[str, bytes] | None:
        """(kind, content) of an object this sink can read without git (None: ask git)."""
        return None

    def _put(self, kind: str, data: bytes) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Write everything queued."""
        raise NotImplementedError

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.discard()

    def discard(self) -> None:
        """Drop what was queued (a failed write leaves nothing)."""


class PackSink(Sink):
    """Writes one pack (no deltas; `gc` finds them later) through `git index-pack`."""

    def __init__(
        self, git: Git, max_blob: int | None = None, screen: Withholder | None = None
    ) -> None:
        super().__init__(git, max_blob, screen)
        assert git.git_dir is not None
        self._file: BinaryIO = tempfile.TemporaryFile(dir=git.git_dir)
        self._file.write(b"PACK" + struct.pack(">II", 2, 0))  # the count is set on close
        self._count = 0

    def _put(self, kind: str, data: bytes) -> None:
        with self._disk():
            self._file.write(_pack_header(kind, len(data)) + zlib.compress(data))
        self._count += 1

    def close(self) -> None:
        """Index the pack into the repository."""
        try:
            if self._count:
                with self._disk():
                    self._finish()
                self.git.run_file("index-pack", "--stdin", source=self._file)
        finally:
            self.discard()

    def discard(self) -> None:
        with suppress(OSError):  # what could not be flushed is dropped anyway
            self._file.close()

    @contextmanager
    def _disk(self) -> Iterator[None]:
        """An OSError while writing the pack (a full disk) as one line, as git says it."""
        try:
            yield
        except OSError as exc:
            what, where = exc.strerror or str(exc), self.git.git_dir
            raise GitError(f"git objects: {what} while writing a pack in {where}") from None

    def _finish(self) -> None:
        """Set the object count and append the trailer (SHA-1 of all before it)."""
        self._file.seek(8)
        self._file.write(struct.pack(">I", self._count))
        self._file.seek(0)
        digest = hashlib.sha1()
        while chunk := self._file.read(_CHUNK):
            digest.update(chunk)
        self._file.write(digest.digest())


class LooseSink(Sink):
    """Writes loose objects: one `hash-object -w --stdin-paths` per kind, ids checked."""

    def __init__(
        self, git: Git, max_blob: int | None = None, screen: Withholder | None = None
    ) -> None:
        super().__init__(git, max_blob, screen)
        self._dir = tempfile.TemporaryDirectory(prefix="freshline-objects-")
        self._queued: dict[str, list[tuple[Path, str]]] = {}

    def _put(self, kind: str, data: bytes) -> None:
        files = self._queued.setdefault(kind, [])
        path = Path(self._dir.name) / str(len(self.written))
        path.write_bytes(data)
        files.append((path, object_id(kind, data)))

    def close(self) -> None:
        """Write every queued object, trees after the blobs they name, commits last."""
        try:
            for kind in ("blob", "tree", "commit"):
                self._write(kind, self._queued.get(kind, []))
        finally:
            self._dir.cleanup()

    def discard(self) -> None:
        self._dir.cleanup()

    def _write(self, kind: str, files: list[tuple[Path, str]]) -> None:
        if not files:
            return
        feed = "".join(f"{path}\n" for path, _ in files).encode()
        written = self.git.text(
            "hash-object", "-t", kind, "-w", "--no-filters", "--stdin-paths", input=feed
        ).split()
        if written != [oid for _, oid in files]:
            raise GitError(f"git hash-object: {kind} ids differ from the ones computed")


class DirectSink(Sink):
    """Writes loose objects in this process (looseobjects.ObjectDir) when it is closed, and
    answers `missing` and `read` the same way: a checkpoint's few objects, no git run. What
    it queued is held in memory until then, so closing may be left to another thread."""

    def __init__(
        self, git: Git, store: ObjectDir, max_blob: int | None = None,
        screen: Withholder | None = None,
    ) -> None:
        super().__init__(git, max_blob, screen)
        self.store = store
        self._queued: list[tuple[str, bytes]] = []

    def missing(self, oids: Iterable[str]) -> set[str]:
        """The ids among `oids` neither written here nor held by the repository."""
        return {oid for oid in oids if oid not in self.written and not self.store.has(oid)}

    def read(self, oid: str) -> tuple[str, bytes] | None:
        """A loose object of the repository (None when a pack holds it)."""
        return self.store.read(oid)

    def _put(self, kind: str, data: bytes) -> None:
        self._queued.append((kind, data))

    def close(self) -> None:
        """Write every object queued, in order (a tree after the blobs it names)."""
        for kind, data in self.take():
            self.store.write(kind, data)

    def take(self) -> list[tuple[str, bytes]]:
        """The objects queued, in order, handed to the caller to write (none are left)."""
        queued, self._queued = self._queued, []
        return queued

    def discard(self) -> None:
        self._queued = []


def sink(
    git: Git, packed: bool, max_blob: int | None = None, screen: Withholder | None = None
) -> Sink:
    """A sink for one write: a pack (freshline's own repository) or loose objects."""
    return PackSink(git, max_blob, screen) if packed else LooseSink(git, max_blob, screen)


# --- keeping the private repository tidy and safe to prune -----------------------------------


def pack_count(git_dir: Path) -> int:
    """How many packs the repository holds."""
    try:
        return sum(1 for name in os.listdir(git_dir / "objects" / "pack") if name.endswith(".pack"))
    except FileNotFoundError:
        return 0


def fold_packs(git: Git) -> bool:
    """Fold small packs together once there are more than MAX_PACKS, unless someone is
    writing or collecting (the next write tries again; call it holding no objects lock);
    True if it folded."""
    assert git.git_dir is not None
    if pack_count(git.git_dir) <= MAX_PACKS:
        return False
    with objects_lock(git.git_dir, exclusive=True, wait=False) as alone:
        if alone:
            git.run("repack", "--geometric=2", "-d", "-l", "-q")
        return alone


@contextmanager
def objects_lock(git_dir: Path, exclusive: bool, wait: bool = True) -> Iterator[bool]:
    """Hold the repository's objects lock: shared by writers, exclusive for pruning.
    Yields False (holding nothing) when `wait` is False and it is taken."""
    fd = os.open(git_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fd, mode if wait else mode | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing the descriptor lets the lock go
