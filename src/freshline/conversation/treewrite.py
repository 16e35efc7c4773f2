"""Writing a tree from a base tree plus changes, at a cost that grows with the changes.

Only the directories on the way to a changed path are read (one `cat-file --batch` call)
and rewritten (one `mktree --batch` call); every other subtree keeps its id. New tree ids
are computed here with git's own object hashing, so parents can name children written in
the same batch, and checked against what git reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from posixpath import dirname

from freshline.conversation import batch
from freshline.conversation.git import EMPTY_TREE, Git
from freshline.errors import GitError

TREE_MODE = "40000"
Entry = tuple[str, str]  # (mode, oid) of one path; mode "40000" for a subtree


def update_tree(git: Git, base: str | None, changes: Mapping[str, Entry | None]) -> str:
    """The id of `base` (None: empty) with `changes` applied: path → (mode, oid), or None
    to remove. Directories left empty disappear, as git stores none."""
    if not changes:
        return base or EMPTY_TREE
    dirs = _affected_dirs(changes)
    old = _read_trees(git, base or EMPTY_TREE, dirs)
    inside: dict[str, list[tuple[str, str | None]]] = {d: [] for d in dirs}
    for path in (*(d for d in dirs if d), *changes):  # subdirectories first, files override
        inside[dirname(path)].append((path, path if path in dirs else None))
    written: dict[str, str | None] = {}
    batch: list[bytes] = []
    expected: list[str] = []
    for d in sorted(dirs, key=lambda p: -p.count("/") - (p != "")):
        entries = dict(old.get(d, {}))
        for path, subdir in inside[d]:
            change = changes.get(path)
            if change is None and subdir is not None and written[subdir]:
                change = (TREE_MODE, written[subdir] or "")
            _settle(entries, _name(path), change, subdir is not None, path in changes)
        written[d] = _serialize(entries, batch) if entries else None
        if written[d]:
            expected.append(written[d] or "")
    _write(git, batch, expected)
    return written[""] or EMPTY_TREE


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _settle(
    entries: dict[str, Entry], name: str, entry: Entry | None, is_dir: bool, asked: bool
) -> None:
    """Put `entry` under `name`, or remove what was asked to go: a file removed (`asked`)
    or a directory left empty (`is_dir`). Removing "a" where "a" is a directory, or "a/b"
    where "a" is a file, removes nothing."""
    if entry is not None:
        entries[name] = entry
        return
    was_dir = entries.get(name, (TREE_MODE, ""))[0] == TREE_MODE
    if was_dir == is_dir or (asked and is_dir):
        entries.pop(name, None)


def _affected_dirs(changes: Mapping[str, Entry | None]) -> set[str]:
    dirs = {""}
    for path in changes:
        parent = dirname(path)
        while parent not in dirs:
            dirs.add(parent)
            parent = dirname(parent)
    return dirs


def _read_trees(git: Git, base: str, dirs: set[str]) -> dict[str, dict[str, Entry]]:
    """The entries of each directory of `base` among `dirs` (absent ones are left out)."""
    order = sorted(dirs)
    found = batch.objects(git, [f"{base}:{d}" if d else base for d in order])
    return {d: _parse(data) for d, (kind, data) in zip(order, found, strict=True)
            if kind == "tree"}


def _parse(raw: bytes) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    pos = 0
    while pos < len(raw):
        space = raw.index(b" ", pos)
        nul = raw.index(b"\0", space)
        name = raw[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries[name] = (raw[pos:space].decode(), raw[nul + 1 : nul + 21].hex())
        pos = nul + 21
    return entries


def _serialize(entries: dict[str, Entry], batch: list[bytes]) -> str:
    """Append the tree's mktree input to `batch` and return its id as git will compute it."""
    def order(name: str) -> bytes:
        key = name.encode("utf-8", "surrogateescape")
        return key + b"/" if entries[name][0] == TREE_MODE else key

    names = sorted(entries, key=order)
    raw = b"".join(
        f"{entries[n][0]} ".encode() + n.encode("utf-8", "surrogateescape") + b"\0"
        + bytes.fromhex(entries[n][1])
        for n in names
    )
    for n in names:
        mode, oid = entries[n]
        kind = "tree" if mode == TREE_MODE else "commit" if mode == "160000" else "blob"
        batch.append(f"{mode} {kind} {oid}\t".encode() + n.encode("utf-8", "surrogateescape"))
    batch.append(b"")
    return hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest()


def _write(git: Git, batch: list[bytes], expected: list[str]) -> None:
    """Write the trees of `batch` (children first) and check git agrees on every id."""
    if not expected:
        return
    out = git.text("mktree", "-z", "--missing", "--batch", input=b"\0".join(batch) + b"\0")
    if out.split() != expected:
        raise GitError("git mktree: tree ids differ from the ones computed")
