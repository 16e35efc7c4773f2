"""Git work done many at a time in one process: several diffs, a turn's commits, many objects.

A refreshing turn is a handful of git processes; each one saved is a few milliseconds on
a 10k-file checkout (bench/refresh.py). These keep one call for what would take many.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from contextlib import ExitStack

from freshline.conversation.git import IDENTITY, Git, TreeChange, raw_change
from freshline.conversation.objects import Sink, sink


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
    git: Git, tree: str, parents: Sequence[str], message: str, then: Sequence[tuple[str, str]],
    into: Sink | None = None,
) -> list[str]:
    """Write a commit of `tree` on `parents`, then one per (tree, message) of `then`, each
    on the one before, in one call; returns their ids in order.

    The ids are computed here with git's object hashing (so each commit can name the one
    before), as `git commit-tree` would write them: freshline's identity, the repository's
    fixed date if it has one, else now. They go to `into` when given (written when its
    owner closes it), else loose at once, checked against the ids git reports.
    """
    stamp = f"{IDENTITY['name']} <{IDENTITY['email']}> {_date(git)}"
    ids: list[str] = []
    with ExitStack() as stack:
        out = into or stack.enter_context(sink(git, packed=False))
        for commit_tree, commit_message in [(tree, message), *then]:
            header = [f"tree {commit_tree}", *(f"parent {p}" for p in parents),
                      f"author {stamp}", f"committer {stamp}"]
            body = ("\n".join(header) + "\n\n" + commit_message).encode("utf-8")
            ids.append(out.add("commit", body))
            parents = [ids[-1]]
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
    wanted = list(dict.fromkeys(paths))
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
    raw = [name.encode("utf-8", "surrogateescape") for name in names]
    # NUL-separated (-z): a path may hold a newline. A missing object's reply repeats its
    # name, so it is matched whole rather than cut at the first newline.
    out = git.run("cat-file", "--batch", "-z", input=b"".join(n + b"\0" for n in raw))
    found: list[tuple[str, bytes]] = []
    pos = 0
    for name in raw:
        missing = name + b" missing\n"
        if out.startswith(missing, pos):
            pos += len(missing)
            found.append(("", b""))
            continue
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        size = int(header[2])
        found.append((header[1].decode(), out[pos : pos + size]))
        pos += size + 1
    return found
