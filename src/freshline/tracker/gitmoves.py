"""Typed git operations: the checkout's HEAD moved between two flushes.

A `git checkout` of another branch rewrites hundreds of files at once; told path by path
the agent drowns. So each flush reads HEAD (a few small file reads, no git process) and,
when it moved since the last flush, names the operation from HEAD's reflog and lists the
paths the two commits differ in (one `git diff-tree`), as EdenFS's CommitTransition does.
The per-path changes are logged as usual beside it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from freshline.errors import GitError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree
REFLOG_TAIL = 64 * 1024  # bytes of the reflog read from its end
_SHA = re.compile(rb"[0-9a-f]{40}([0-9a-f]{24})?")
# The first word of a reflog message, as git writes it, and the operation it names.
_OPERATIONS = {
    "checkout": "checkout",
    "switch": "checkout",
    "merge": "merge",
    "pull": "pull",
    "reset": "reset",
    "rebase": "rebase",
    "commit": "commit",
    "cherry-pick": "cherry-pick",
    "stash": "stash",
}


@dataclass(frozen=True)
class HeadMove:
    """HEAD went from `old` ("" when the branch had no commit yet) to `new`."""

    operation: str  # checkout, merge, pull, reset, rebase, commit, cherry-pick, stash, other
    old: str
    new: str
    paths: tuple[str, ...]  # every path the two commits' trees differ in


def git_dir(root: Path) -> Path | None:
    """The git directory of a workspace that is a git checkout (`.git`, or where a `.git`
    file points for a linked worktree), else None."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return Path(dot)
    text = _read(dot)
    if not text.startswith("gitdir: "):
        return None
    return (root / text.removeprefix("gitdir: ")).resolve()


def ref_stamps(root: Path) -> tuple[int, ...]:
    """When the checkout's HEAD, packed refs and branch, remote and tag folders last
    changed (0 for what is not there; () outside a checkout): a few stats that tell a
    ref may have moved (git renames a ref file into place, which touches its folder)."""
    gitdir = git_dir(root)
    if gitdir is None:
        return ()
    common = common_dir(gitdir)
    places = (gitdir / "HEAD", common / "packed-refs", common / "refs" / "heads",
              common / "refs" / "remotes", common / "refs" / "tags")
    return tuple(_mtime(p) for p in places)


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def read_head(gitdir: Path) -> str:
    """The commit HEAD names, or "" when it names a branch with no commit yet.

    Plain reads (every flush does this): HEAD, the branch's loose ref, and only when that
    is missing the `commondir` of a linked worktree and `packed-refs`."""
    where = str(gitdir)
    value = _read(os.path.join(where, "HEAD"))
    seen = 0
    while value.startswith("ref: ") and seen < 5:  # a symbolic ref, maybe to another one
        value = _resolve(where, value.removeprefix("ref: "))
        seen += 1
    return value if _SHA.fullmatch(value.encode()) else ""


def _read(path: str) -> str:
    """A small file's text, stripped; "" when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        return os.read(fd, 1 << 16).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    finally:
        os.close(fd)


def common_dir(gitdir: Path) -> Path:
    """Where the branches and `packed-refs` of a git directory are: its `commondir` for a
    linked worktree's, else itself."""
    common = _read(os.path.join(gitdir, "commondir"))
    return Path(os.path.normpath(os.path.join(gitdir, common))) if common else gitdir


def _resolve(gitdir: str, ref: str) -> str:
    value = _read(os.path.join(gitdir, ref))
    if value:
        return value
    base = str(common_dir(Path(gitdir)))
    if base != gitdir:
        value = _read(os.path.join(base, ref))
        if value:
            return value
    for line in _read(os.path.join(base, "packed-refs")).splitlines():
        oid, _, name = line.partition(" ")
        if name == ref:
            return oid
    return ""


def operation(messages: list[str]) -> str:
    """The operation a run of reflog messages records: the one they all name, else other."""
    named = {_OPERATIONS.get(re.split(r"[\s:(]", m, maxsplit=1)[0], "other") for m in messages}
    return named.pop() if len(named) == 1 else "other"


def reflog_span(tail: bytes, old: str, new: str) -> list[str]:
    """The messages of the reflog entries that took HEAD from `old` to `new` (pure).

    `tail` is the end of HEAD's reflog; the span runs back from the last entry to the
    newest one that left `old`. Empty when the reflog does not reach that far.
    """
    entries = []
    for line in tail.split(b"\n"):
        head, _, message = line.partition(b"\t")
        fields = head.split(b" ", 2)
        if len(fields) == 3 and _SHA.fullmatch(fields[0]) and _SHA.fullmatch(fields[1]):
            text = message.decode("utf-8", "replace")
            entries.append((fields[0].decode(), fields[1].decode(), text))
    if not entries or entries[-1][1] != new:
        return []
    for start in range(len(entries) - 1, -1, -1):
        if entries[start][0] == (old or "0" * len(new)):
            return [m for _, _, m in entries[start:]]
    return []


def _reflog_tail(gitdir: Path) -> bytes:
    try:
        with open(gitdir / "logs" / "HEAD", "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - REFLOG_TAIL))
            return f.read()
    except OSError:
        return b""


def changed_paths(gitdir: Path, old: str, new: str) -> tuple[str, ...]:
    """The paths two commits' trees differ in (one `git diff-tree`; raises GitError)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    done = subprocess.run(
        ["git", f"--git-dir={gitdir}", "diff-tree", "-r", "-z", "--no-renames", "--name-only",
         old or EMPTY_TREE, new],
        capture_output=True, env=env, check=False,
    )
    if done.returncode != 0:
        first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise GitError(f"git diff-tree: {first[0] if first else 'failed'}")
    return tuple(os.fsdecode(p) for p in done.stdout.split(b"\0") if p)


def head_move(gitdir: Path, old: str, new: str) -> HeadMove:
    """How HEAD went from `old` to `new`: the operation and the paths that differ."""
    kind = operation(reflog_span(_reflog_tail(gitdir), old, new) or ["?"])
    return HeadMove(kind, old, new, changed_paths(gitdir, old, new))
