"""The truth a self-test compares every observation mode with: what changed between two
snapshots of a tree, worked out from the snapshots alone (no index, no inode, no event).

A snapshot maps each path to its content: kind (file or link), bytes (a link's target) and
executable bit; it also lists the directories, and the commit HEAD names in a git
checkout. The expected change set follows freshline's documented rules: a path in both
snapshots whose content differs is modified; a deleted and a created path are a rename
when their bytes are identical (one candidate each side) or, for text files, at least
50 % alike (git's rename score, `tracker.similarity`), best pairs first, plus modified when
the bytes differ; a folder whose every entry moved to the same place under one new
folder, and which is gone, is also summarized once; a HEAD move is one `git` entry with
the paths git says the two commits differ in.
"""

from __future__ import annotations

import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from freshline.paths import is_internal
from freshline.store.records import Change, ChangeKind
from freshline.tracker.gitmoves import EMPTY_TREE, git_dir, read_head
from freshline.tracker.similarity import RENAME_SIMILARITY, similarity, sketch

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED


@dataclass(frozen=True)
class Content:
    """What a path holds."""

    link: bool
    data: bytes  # the file's bytes, or the link's target
    executable: bool = False


@dataclass
class Snapshot:
    """A tree at one moment: in-scope paths, directories, and HEAD (None: no checkout)."""

    files: dict[str, Content] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    head: str | None = None


def snapshot(root: Path) -> Snapshot:
    """Read every file, link and directory under `root` (internal paths left out)."""
    snap = Snapshot()
    broot = os.fsencode(root)
    for top, dirnames, filenames in os.walk(broot):
        rel_top = os.path.relpath(top, broot)
        prefix = b"" if rel_top == b"." else rel_top + b"/"
        for name in sorted(dirnames):
            rel = os.fsdecode(prefix + name)
            if is_internal(rel) or os.path.islink(os.path.join(top, name)):
                dirnames.remove(name)
                if not is_internal(rel):  # a link to a directory is a link
                    snap.files[rel] = Content(True, os.readlink(os.path.join(top, name)))
                continue
            snap.dirs.add(rel)
        for name in filenames:
            rel = os.fsdecode(prefix + name)
            if not is_internal(rel):
                snap.files[rel] = _content(os.path.join(top, name))
    gitdir = git_dir(root)
    snap.head = read_head(gitdir) if gitdir is not None else None
    return snap


def _content(path: bytes) -> Content:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return Content(True, os.readlink(path))
    with open(path, "rb") as f:
        return Content(False, f.read(), bool(st.st_mode & 0o111))


def expected_changes(
    before: Snapshot, after: Snapshot, root: Path, operation: str | None = None
) -> list[Change]:
    """The change set freshline must report for the move from `before` to `after` (in a
    project that includes everything); `operation` names a HEAD move's git operation."""
    old, new = before.files, after.files
    changes = [Change(M, p) for p in old.keys() & new.keys() if old[p] != new[p]]
    gone = sorted(old.keys() - new.keys())
    came = sorted(new.keys() - old.keys())
    pairs = _pairs(before, after, gone, came)
    for source, target in pairs:
        changes.append(Change(R, target, source))
        if old[source] != new[target]:
            changes.append(Change(M, target))
    paired = {s for s, _ in pairs} | {t for _, t in pairs}
    changes += [Change(D, p) for p in gone if p not in paired]
    changes += [Change(C, p) for p in came if p not in paired]
    changes.sort(key=lambda c: (c.path, c.kind.value))
    changes += _folders(before, after, pairs)
    if before.head is not None and after.head is not None and before.head != after.head:
        changes += _git_move(root, before.head, after.head, operation or "other")
    return changes


def _pairs(
    before: Snapshot, after: Snapshot, gone: list[str], came: list[str]
) -> list[tuple[str, str]]:
    """Renames: identical bytes first (only where one candidate each side), then alike."""
    pairs = []
    for source in gone:
        same = [t for t in came if _same(before.files[source], after.files[t])]
        twins = [s for s in gone if _same(before.files[s], before.files[source])]
        if len(same) == 1 and len(twins) == 1:
            pairs.append((source, same[0]))
    left_gone = [s for s in gone if s not in {p[0] for p in pairs}]
    left_came = [t for t in came if t not in {p[1] for p in pairs}]
    scores = sorted(
        (-score, s, t)
        for s in left_gone
        for t in left_came
        if (score := _alike(before.files[s], after.files[t])) >= RENAME_SIMILARITY
    )
    for _, s, t in scores:
        if s in left_gone and t in left_came:
            pairs.append((s, t))
            left_gone.remove(s)
            left_came.remove(t)
    return pairs


def _same(a: Content, b: Content) -> bool:
    return a.link == b.link and a.data == b.data


def _alike(a: Content, b: Content) -> float:
    if a.link or b.link or sketch(b.data) is None:
        return 0.0
    old = sketch(a.data)
    return similarity(old, len(a.data), b.data) if old is not None else 0.0


def _folders(before: Snapshot, after: Snapshot, pairs: list[tuple[str, str]]) -> list[Change]:
    """Folder summaries: every path under `old` moved to the same place under `new`, where
    (old, new) is what is left of a rename once the longest common tail is cut off."""
    found = set()
    for source, target in pairs:
        a, b = source.split("/"), target.split("/")
        depth = 0
        while depth < min(len(a), len(b)) - 1 and a[-1 - depth] == b[-1 - depth]:
            depth += 1
        if depth:
            old, new = "/".join(a[:-depth]), "/".join(b[:-depth])
            if _moved_whole(before, after, pairs, old, new):
                found.add((old, new))
    return [Change(R, new, old, {"folder": True}) for old, new in sorted(found)]


def _moved_whole(
    before: Snapshot, after: Snapshot, pairs: list[tuple[str, str]], old: str, new: str
) -> bool:
    inside = [p for p in before.files if p.startswith(old + "/")]
    moved = {s for s, t in pairs if s.startswith(old + "/") and t == new + s[len(old):]}
    return bool(inside) and set(inside) == moved and old not in after.dirs


def _git_move(root: Path, old: str, new: str, operation: str) -> list[Change]:
    """The `git` entry of a HEAD move: the paths git says the commits differ in."""
    out = subprocess.run(
        ["git", "-C", str(root), "diff-tree", "-r", "-z", "--no-renames", "--name-only",
         old or EMPTY_TREE, new],
        capture_output=True, check=True,
    ).stdout
    names = (os.fsdecode(raw) for raw in out.split(b"\0") if raw)
    paths = sorted(p for p in names if not is_internal(p))
    if not paths:
        return []
    detail = {"operation": operation, "from": old, "to": new, "paths": paths, "count": len(paths)}
    return [Change(ChangeKind.GIT, "", detail=detail)]
