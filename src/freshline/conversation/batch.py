"""Git work done many at a time in one process: several diffs, a turn's commits, many objects.

A refreshing turn is a handful of git processes; each one saved is a few milliseconds on
a 10k-file checkout (bench/refresh.py). These keep one call for what would take many.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from freshline.conversation.git import IDENTITY, Git, TreeChange, raw_change
from freshline.errors import GitError


def diff_pairs(
    git: Git, commits: Sequence[tuple[str, str]] = (), trees: Sequence[tuple[str, str]] = ()
) -> list[list[TreeChange]]:
    """`Git.diff_trees` of each (old, new) pair of commits, then of trees, in one call."""
    lines = [f"{new} {old}" for old, new in commits]  # a commit and its "parent"
    lines += [f"{old} {new}" for old, new in trees]  # two trees, in diff order
    feed = "".join(f"{line}\n" for line in lines).encode()
    out = git.run(
        "diff-tree", "--stdin", "--always", "-r", "-z", "--no-renames", "--raw", input=feed
    )
    diffs: list[list[TreeChange]] = []
    fields = iter(out.split(b"\0"))
    for field in fields:
        if field.startswith(b":"):
            diffs[-1].append(raw_change(field, next(fields)))
            continue
        # Each pair's diff starts with a header: a commit id ending in NUL, or the two
        # tree ids of a tree pair ending in a newline (glued to what follows it).
        *echoed, last = field.split(b"\n")
        diffs.extend([] for _ in echoed)
        if last.startswith(b":"):
            diffs[-1].append(raw_change(last, next(fields)))
        elif last:
            diffs.append([])
    return diffs


def commit_chain(
    git: Git, tree: str, parents: Sequence[str], message: str, then: Sequence[tuple[str, str]]
) -> list[str]:
    """Write a commit of `tree` on `parents`, then one per (tree, message) of `then`, each
    on the one before, in one call; returns their ids in order.

    The ids are computed here with git's object hashing (so each commit can name the one
    before) and checked against what git writes, as `git commit-tree` would write them:
    freshline's identity, the repository's fixed date if it has one, else now.
    """
    stamp = f"{IDENTITY['name']} <{IDENTITY['email']}> {_date(git)}"
    bodies: list[bytes] = []
    ids: list[str] = []
    for commit_tree, commit_message in [(tree, message), *then]:
        header = [f"tree {commit_tree}", *(f"parent {p}" for p in parents),
                  f"author {stamp}", f"committer {stamp}"]
        body = ("\n".join(header) + "\n\n" + commit_message).encode("utf-8")
        bodies.append(body)
        ids.append(hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest())
        parents = [ids[-1]]
    with tempfile.TemporaryDirectory(prefix="freshline-commits-") as tmp:
        files = [Path(tmp) / str(i) for i in range(len(bodies))]
        for file, body in zip(files, bodies, strict=True):
            file.write_bytes(body)
        feed = "".join(f"{file}\n" for file in files).encode()
        written = git.text("hash-object", "-t", "commit", "-w", "--no-filters",
                           "--stdin-paths", input=feed).split()
    if written != ids:
        raise GitError("git hash-object: commit ids differ from the ones computed")
    return ids


def _date(git: Git) -> str:
    fixed = git.env.get("GIT_COMMITTER_DATE")
    if fixed:
        return fixed
    now = time.time()
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "-" if offset < 0 else "+"
    return f"{int(now)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def contents(git: Git, tree: str, paths: Iterable[str]) -> dict[str, bytes | None]:
    """The paths `tree` holds → their content (None for a directory or submodule); absent
    paths are left out."""
    wanted = [p for p in dict.fromkeys(paths) if "\n" not in p]
    found = objects(git, [f"{tree}:{p}" for p in wanted])
    return {
        path: data if kind == "blob" else None
        for path, (kind, data) in zip(wanted, found, strict=True) if kind
    }


def objects(git: Git, names: Sequence[str]) -> list[tuple[str, bytes]]:
    """(type, content) of each object name (`<tree>:<path>` too), in one `cat-file --batch`
    call; ("", b"") for a name that names nothing."""
    if not names:
        return []
    feed = "".join(f"{name}\n" for name in names).encode("utf-8", "surrogateescape")
    out = git.run("cat-file", "--batch", input=feed)
    found: list[tuple[str, bytes]] = []
    pos = 0
    for _ in names:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if header[-1] == b"missing":
            found.append(("", b""))
            continue
        size = int(header[2])
        found.append((header[1].decode(), out[pos : pos + size]))
        pos += size + 1
    return found
