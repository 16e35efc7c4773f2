"""Writing a tree from a base tree plus changes, at a cost that grows with the changes.

Only the directories on the way to a changed path are read (one `cat-file --batch` call)
and rewritten (one `mktree --batch` call, or into the caller's object sink: a pack in
freshline's own repository); every other subtree keeps its id. New tree ids are computed
here with git's own object hashing, so parents can name children written in the same
batch, and checked against what git reports. The trees this process wrote or read stay
known (`knowntrees.KNOWN`): a checkpoint's next tree is built from them with no read at
all and by encoding only the entries it changes, and a tree not among them is read by the
sink where it can (a loose object), else by git.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from posixpath import dirname

from freshline.conversation import batch
from freshline.conversation.git import EMPTY_TREE, Git
from freshline.conversation.knowntrees import EMPTY, KNOWN, TREE_MODE, Entry, Tree
from freshline.conversation.objects import Sink
from freshline.errors import GitError


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
        tree = old.get(d, EMPTY)
        entries = dict(tree.entries)
        for path, subdir in inside[d]:
            change = changes.get(path)
            if change is None and subdir is not None and written[subdir]:
                change = (TREE_MODE, written[subdir] or "")
            _settle(entries, _name(path), change, subdir is not None, path in changes)
        written[d] = None
        if entries:
            new = tree.changed(entries, (_name(path) for path, _ in inside[d]))
            raw = new.raw()
            written[d] = sink.add("tree", raw) if sink is not None else _tree_id(raw)
            KNOWN.put(written[d] or "", new)
            if sink is None:
                batch += _mktree_lines(new)
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
) -> dict[str, Tree]:
    """The entries of each directory of `base` among `dirs` (absent ones are left out):
    known already or read by `sink` when every one is, else read by one git call."""
    order = sorted(dirs)
    found_here = _read_here(sink, base, order)
    if found_here is not None:
        return found_here
    found = batch.objects(git, [f"{base}:{d}" if d else base for d in order])
    return {d: Tree.parse(data) for d, (kind, data) in zip(order, found, strict=True)
            if kind == "tree"}


def _read_here(sink: Sink | None, base: str, order: list[str]) -> dict[str, Tree] | None:
    """`_read_trees` from the known trees and the sink's own reads (parents before
    children, as `order` sorts them); None as soon as one tree is neither."""
    read: dict[str, Tree] = {}
    for d in order:
        if d:
            parent = read.get(dirname(d))
            entry = parent.entries.get(_name(d)) if parent is not None else None
            if entry is None or entry[0] != TREE_MODE:
                continue  # absent in `base`
            oid = entry[1]
        else:
            oid = base
        known = EMPTY if oid == EMPTY_TREE else KNOWN.get(oid)
        if known is None:
            found = sink.read(oid) if sink is not None else None
            if found is None or found[0] != "tree":
                return None
            known = Tree.parse(found[1])
            KNOWN.put(oid, known)
        read[d] = known
    return read


def _tree_id(raw: bytes) -> str:
    return hashlib.sha1(b"tree %d\0" % len(raw) + raw).hexdigest()


def _mktree_lines(tree: Tree) -> list[bytes]:
    """The tree's lines of `mktree --batch` input (an empty line ends it)."""
    lines = []
    for n in tree.order():
        mode, oid = tree.entries[n]
        kind = "tree" if mode == TREE_MODE else "commit" if mode == "160000" else "blob"
        lines.append(f"{mode} {kind} {oid}\t".encode() + n.encode("utf-8", "surrogateescape"))
    return [*lines, b""]


def _write(git: Git, batch: list[bytes], expected: list[str]) -> None:
    """Write the trees of `batch` (children first) and check git agrees on every id."""
    if not expected:
        return
    out = git.text("mktree", "-z", "--missing", "--batch", input=b"\0".join(batch) + b"\0")
    if out.split() != expected:
        raise GitError("git mktree: tree ids differ from the ones computed")
