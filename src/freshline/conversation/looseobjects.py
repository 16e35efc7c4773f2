"""A repository's objects and refs read and written in this process, for the checkpoint's
fast path.

A checkpoint of another agent's prompt (checkpoints.py) writes a few blobs, the trees on
their way and one commit, and moves one ref; a git process per step would cost more than
the whole answer may (each is a few milliseconds to start). So these few objects are
written here as loose objects, exactly as git writes them (zlib at git's loose level, a
temporary file renamed into place, read-only), and read back the same way (the trees a
process wrote or read stay known besides: `knowntrees.KNOWN`). Whether git has an object
is answered from the loose files and the packs' `.idx` files of the repository and its
alternates (a binary search in each index, no git process). An object that is not loose
is not read here: the caller asks git (`batch.objects`).

A ref moves here as `git update-ref` moves it, through git's own lock file: `<ref>.lock`
created exclusively, the old value compared (the ref's file, else `packed-refs`), the new
one written and renamed into place; a lock held by someone else is left to git, which
waits for it.

Loose objects pile up only as fast as checkpoints change files; `freshline gc` packs them
with the rest.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import threading
import zlib
from pathlib import Path

LOOSE_LEVEL = 1  # git's core.looseCompression default (best speed)
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
_FANOUT = 8  # the fan-out table's offset in a version 2 index
_IDS = _FANOUT + 4 * 256  # where the sorted object ids begin


class PackIndex:
    """One `.idx` file (version 2), mapped: the object ids its pack holds."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if self._map[:8] != _IDX_MAGIC:
            self._map.close()
            raise ValueError(f"{path} is not a version 2 pack index")
        self.count = self._fanout(255)

    def _fanout(self, byte: int) -> int:
        start = _FANOUT + 4 * byte
        return int.from_bytes(self._map[start : start + 4], "big")

    def __contains__(self, oid: str) -> bool:
        raw = bytes.fromhex(oid)
        low = self._fanout(raw[0] - 1) if raw[0] else 0
        high = self._fanout(raw[0])
        while low < high:  # the ids are sorted: a binary search in [low, high)
            middle = (low + high) // 2
            at = _IDS + 20 * middle
            found = self._map[at : at + 20]
            if found == raw:
                return True
            low, high = (middle + 1, high) if found < raw else (low, middle)
        return False

    def close(self) -> None:
        """Unmap the file."""
        self._map.close()


class ObjectDir:
    """The objects of one repository (`<git dir>/objects`) and of its alternates."""

    def __init__(self, objects: Path) -> None:
        self.objects = objects
        self._dirs = [str(d) for d in (objects, *_alternates(objects))]
        self._packs: dict[str, tuple[float, list[PackIndex]]] = {}

    def has(self, oid: str) -> bool:
        """Whether the repository (or an alternate) holds `oid`, loose or packed."""
        for folder in self._dirs:
            if os.path.exists(_loose_path(folder, oid)):
                return True
        return any(oid in index for folder in self._dirs for index in self._indexes(folder))

    def read(self, oid: str) -> tuple[str, bytes] | None:
        """(kind, content) of a loose object, or None when none is loose here."""
        for folder in self._dirs:
            try:
                with open(_loose_path(folder, oid), "rb") as handle:
                    raw = zlib.decompress(handle.read())
            except (FileNotFoundError, NotADirectoryError):
                continue
            header, _, data = raw.partition(b"\0")
            kind, _, size = header.partition(b" ")
            if int(size) != len(data):
                raise ValueError(f"object {oid} in {folder} is damaged")
            return kind.decode(), data
        return None

    def write(self, kind: str, data: bytes) -> str:
        """Write one object loose; its id. The caller asks `has` first where it matters
        (a blob: each is written once); a tree or commit a checkpoint writes is new all but
        always, and one written twice is the same object (`gc` keeps one)."""
        raw = f"{kind} {len(data)}\0".encode() + data
        oid = hashlib.sha1(raw).hexdigest()
        _write_loose(str(self.objects), oid, zlib.compress(raw, LOOSE_LEVEL))
        return oid

    def _indexes(self, folder: str) -> list[PackIndex]:
        """The pack indexes of `folder`, mapped again when its pack folder changed."""
        pack = f"{folder}/pack"
        try:
            stamp = os.stat(pack).st_mtime
        except FileNotFoundError:
            return []
        known = self._packs.get(folder)
        if known is not None and known[0] == stamp:
            return known[1]
        for index in known[1] if known else []:
            index.close()
        found = [PackIndex(p) for p in sorted(Path(pack).glob("*.idx"))]
        self._packs[folder] = (stamp, found)
        return found

    def close(self) -> None:
        """Unmap the pack indexes."""
        for _, indexes in self._packs.values():
            for index in indexes:
                index.close()
        self._packs.clear()


def _alternates(objects: Path) -> list[Path]:
    """The object folders `info/alternates` names (relative ones from `objects`)."""
    try:
        lines = (objects / "info" / "alternates").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [(objects / line.strip()).resolve() for line in lines
            if line.strip() and not line.startswith("#")]


def _loose_path(objects: str, oid: str) -> str:
    # Strings, not Paths: a checkpoint builds a few dozen of these per prompt.
    return f"{objects}/{oid[:2]}/{oid[2:]}"


def _write_loose(objects: str, oid: str, compressed: bytes) -> None:
    """Put a compressed object in place as git does: a read-only temporary file in its
    folder, renamed to its name (one already there holds the same bytes)."""
    folder = f"{objects}/{oid[:2]}"
    temp = f"{folder}/tmp_obj_{os.getpid()}_{threading.get_ident()}_{oid[2:10]}"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    except FileNotFoundError:
        _fan_out(objects)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        os.write(fd, compressed)
    finally:
        os.close(fd)
    os.rename(temp, f"{folder}/{oid[2:]}")


def _fan_out(objects: str) -> None:
    """Make every one of the 256 folders loose objects go in, at once: the first loose
    write after a repository was made or packed (`gc` removes the emptied ones) pays for
    all of them, the next prompts for none (a folder's creation costs as much as the rest
    of an object's write)."""
    for byte in range(256):
        os.makedirs(f"{objects}/{byte:02x}", exist_ok=True)


def ref_value(git_dir: Path, ref: str) -> str | None:
    """The commit `ref` names: its loose file, else its line in `packed-refs` (None:
    neither)."""
    try:
        return (git_dir / ref).read_text(encoding="ascii").strip() or None
    except (FileNotFoundError, NotADirectoryError):
        pass
    try:
        packed = (git_dir / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    suffix = f" {ref}"
    return next((line[:40] for line in packed.splitlines() if line.endswith(suffix)), None)


def swap_ref(git_dir: Path, ref: str, new: str, old: str) -> bool | None:
    """Move `ref` from `old` to `new` through git's lock file: True when moved, False when
    it was not at `old`, None when another writer holds its lock (ask git)."""
    path = git_dir / ref
    lock = path.with_name(path.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)  # `pack-refs` removes emptied folders
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            if ref_value(git_dir, ref) != old:
                return False
            out.write(new + "\n")
        os.rename(lock, path)
        return True
    finally:
        if os.path.exists(lock):
            os.unlink(lock)
