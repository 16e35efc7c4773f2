"""Writing a tree from a base tree plus changes, at a cost that grows with the changes.

Only the directories on the way to a changed path are read (one `cat-file --batch` call)
and rewritten (one `mktree --batch` call, or into the caller's object sink: a pack in
freshline's own repository); every other subtree keeps its id. New tree ids are computed
here with git's own object hashing, so parents can name children written in the same
batch, and checked against what git reports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from posixpath import dirname

from freshline.conversation import batch
from freshline.conversation.git import EMPTY_TREE, Git
from freshline.conversation.objects import Sink
from freshline.errors import GitError

TREE_MODE = "40000"
Entry = tuple[str, str]  # (mode, oid) of one path; mode "40000" for a subtree


def update_tree(
    git: Git, base: str | None, changes: Mapping[str, Entry | None], sink: Sink | None = None
) -> str:
    """The id of `base` (None: empty) with `changes` applied: path → (mode, oid), or None
    to remove. Directories left empty disappear, as git stores none. New trees go to
    `sink` when given (written when the caller closes it), else straight to git."""
    if not changes:
        return base or EMPTY_TREE
    dirs = _affected_dirs(changes)
    old = _read_trees(git, base or EMPTY_TREE, dirs, sink)
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
        written[d] = None
        if entries:
            raw, lines = _serialize(entries)
            written[d] = sink.add("tree", raw) if sink is not None else _tree_id(raw)
            batch += lines
            expected.append(written[d] or "")
    if sink is None:
        _write(git, batch, expected)
    elif written[""] is None:
        sink.add("tree", b"")  # git reads the empty tree without it; fsck wants it written
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


def _read_trees(
    git: Git, base: str, dirs: set[str], sink: Sink | None = None
) -> dict[str, dict[str, Entry]]:
    """The entries of each directory of `base` among `dirs` (absent ones are left out):
    read by `sink` when it can read them all itself, else by one git call."""
    order = sorted(dirs)
    found_here = _read_here(sink, base, order) if sink is not None else None
    if found_here is not None:
        return found_here
    found = batch.objects(git, [f"{base}:{d}" if d else base for d in order])
    return {d: _parse(data) for d, (kind, data) in zip(order, found, strict=True)
            if kind == "tree"}


def _read_here(sink: Sink, base: str, order: list[str]) -> dict[str, dict[str, Entry]] | None:
    """`_read_trees` through the sink's own reads (parents before children, as `order`
    sorts them); None as soon as one tree is not readable there."""
    read: dict[str, dict[str, Entry]] = {}
    for d in order:
        if d:
            parent = read.get(dirname(d))
            entry = parent.get(_name(d)) if parent is not None else None
            if entry is None or entry[0] != TREE_MODE:
                continue  # absent in `base`
            oid = entry[1]
        else:
            oid = base
        if oid == EMPTY_TREE:
            read[d] = {}
            continue
        found = sink.read(oid)
        if found is None or found[0] != "tree":
            return None
        read[d] = _parse(found[1])
    return read


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


def _tree_id(raw: bytes) -> str:
    return hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest()


def _serialize(entries: dict[str, Entry]) -> tuple[bytes, list[bytes]]:
    """The tree object's bytes, and its lines of `mktree --batch` input."""
    def order(name: str) -> bytes:
        key = name.encode("utf-8", "surrogateescape")
        return key + b"/" if entries[name][0] == TREE_MODE else key

    names = sorted(entries, key=order)
    raw = b"".join(
        f"{entries[n][0]} ".encode() + n.encode("utf-8", "surrogateescape") + b"\0"
        + bytes.fromhex(entries[n][1])
        for n in names
    )
    lines = []
    for n in names:
        mode, oid = entries[n]
        kind = "tree" if mode == TREE_MODE else "commit" if mode == "160000" else "blob"
        lines.append(f"{mode} {kind} {oid}\t".encode() + n.encode("utf-8", "surrogateescape"))
    return raw, [*lines, b""]


def _write(git: Git, batch: list[bytes], expected: list[str]) -> None:
    """Write the trees of `batch` (children first) and check git agrees on every id."""
    if not expected:
        return
    out = git.text("mktree", "-z", "--missing", "--batch", input=b"\0".join(batch) + b"\0")
    if out.split() != expected:
        raise GitError("git mktree: tree ids differ from the ones computed")
