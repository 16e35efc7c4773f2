"""A thin wrapper over git plumbing with a fixed environment.

Every command runs with freshline's own identity, no system or user configuration, hooks
disabled and the C locale, so what freshline records does not depend on who runs it. Every
failure becomes a GitError naming the command and the first line git wrote to stderr.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from freshline.conversation.conflicts import MergeResult, parse_merge_tree
from freshline.errors import GitError

ZERO = "0" * 40  # the "old value" that makes update-ref create a ref only if it is absent
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree
IDENTITY = {"name": "freshline", "email": "freshline@localhost"}
# Another git holds a lock file (an index or a ref): the command did nothing, so it is
# retried for up to LOCK_WAIT_S before the caller hears of it.
_LOCKED = re.compile(rb"Unable to create '([^']+\.lock)': File exists")
LOCK_WAIT_S = 2.0
_CAS_FAILED = (b"but expected", b"already exists", b"unable to resolve reference")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of `ls-tree -r`: a file, a link or a submodule."""

    mode: str
    kind: str
    oid: str
    path: str


@dataclass(frozen=True)
class TreeChange:
    """One entry of `diff-tree -r --raw` between two trees."""

    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str
    status: str
    path: str


@dataclass(frozen=True)
class Status:
    """What `status` found in a work tree: the checked-out commit, and what differs."""

    head: str | None  # the commit HEAD names (None before the first commit)
    staged: bool  # the index differs from HEAD
    changed: tuple[str, ...]  # paths whose file differs from the index, or untracked (a
    # directory holding only untracked files is one entry, ending with "/")


def _environment(date: str | None) -> dict[str, str]:
    # Inherited GIT_* variables (GIT_DIR, GIT_INDEX_FILE from a hook…) would redirect us.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME=IDENTITY["name"],
        GIT_AUTHOR_EMAIL=IDENTITY["email"],
        GIT_COMMITTER_NAME=IDENTITY["name"],
        GIT_COMMITTER_EMAIL=IDENTITY["email"],
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        HOME=os.devnull,
        XDG_CONFIG_HOME=os.devnull,
        LC_ALL="C",
    )
    if date is not None:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


class Git:
    """Runs git against one repository (`git_dir`) or inside one work tree (`cwd`)."""

    def __init__(
        self, git_dir: Path | None = None, cwd: Path | None = None, date: str | None = None
    ) -> None:
        self.git_dir = git_dir
        self.cwd = cwd
        self.env = _environment(date)

    def with_index(self, index: Path) -> Git:
        """The same repository with GIT_INDEX_FILE pointing at `index`."""
        other = Git(self.git_dir, self.cwd)
        other.env = {**self.env, "GIT_INDEX_FILE": str(index)}
        return other

    def at(self, cwd: Path) -> Git:
        """The same settings, running inside `cwd` (a work tree) with git's own discovery."""
        other = Git(None, cwd)
        other.env = dict(self.env)
        return other

    def _argv(self, args: Sequence[str]) -> list[str]:
        base = ["git", "-c", "core.hooksPath=/dev/null", "-c", "gc.auto=0"]
        if self.git_dir is not None:
            base.append(f"--git-dir={self.git_dir}")
        return [*base, *args]

    def run(self, *args: str, input: bytes | None = None) -> bytes:
        """Run git; return stdout, or raise GitError naming the command."""
        code, out, err = self.run_status(*args, input=input)
        if code != 0:
            raise _error(args, err)
        return out

    def run_status(self, *args: str, input: bytes | None = None) -> tuple[int, bytes, bytes]:
        """Run git and return (exit code, stdout, stderr) without judging the code.

        A run that failed only because another git held a lock file is tried again for a
        little while; if the lock stays, GitError says which file (one line).
        """
        deadline, pause = time.monotonic() + LOCK_WAIT_S, 0.01
        while True:
            code, out, err = self._once(args, input)
            locked = _LOCKED.search(err) if code != 0 else None
            if locked is None:
                return code, out, err
            if time.monotonic() >= deadline:
                raise GitError(
                    f"git {_name(args)}: {os.fsdecode(locked.group(1))} is held by another git "
                    "process (if none is running, a killed one left it: remove the file)"
                )
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _once(self, args: Sequence[str], input: bytes | None) -> tuple[int, bytes, bytes]:
        try:
            proc = subprocess.run(
                self._argv(args), input=input, capture_output=True, env=self.env, cwd=self.cwd
            )
        except OSError as exc:
            raise GitError(f"git {args[0]} could not run: {exc}") from exc
        return proc.returncode, proc.stdout, proc.stderr

    def text(self, *args: str, input: bytes | None = None) -> str:
        """Run git and return stdout decoded and stripped."""
        return self.run(*args, input=input).decode("utf-8", "surrogateescape").strip()

    def stream(self, *args: str) -> Generator[bytes, None, None]:
        """Yield stdout in chunks; stopping early ends the process."""
        proc = subprocess.Popen(
            self._argv(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
            cwd=self.cwd,
        )
        assert proc.stdout is not None and proc.stderr is not None
        finished = False
        try:
            while chunk := proc.stdout.read(65536):
                yield chunk
            finished = True
        finally:
            if not finished:
                proc.kill()
            proc.stdout.close()
            err = proc.stderr.read()
            proc.stderr.close()
            code = proc.wait()
        if finished and code != 0:
            raise _error(args, err)

    # --- objects -------------------------------------------------------------------

    def hash_object_write(self, data: bytes | None = None, path: Path | None = None) -> str:
        """Write one blob from bytes or from a file (no filters) and return its id."""
        if data is not None:
            return self.text("hash-object", "-w", "--no-filters", "--stdin", input=data)
        return self.text("hash-object", "-w", "--no-filters", "--", str(path))

    def hash_paths_write(self, paths: Sequence[Path]) -> list[str]:
        """Write the blobs of many files in one call; ids in the same order."""
        if not paths:
            return []
        feed = "".join(f"{p}\n" for p in paths).encode("utf-8", "surrogateescape")
        out = self.text("hash-object", "-w", "--no-filters", "--stdin-paths", input=feed)
        return out.split("\n")

    def missing_objects(self, oids: Iterable[str]) -> set[str]:
        """The ids among `oids` that the repository does not hold (one cat-file call)."""
        wanted = list(dict.fromkeys(oids))
        if not wanted:
            return set()
        out = self.run("cat-file", "--batch-check", input="\n".join(wanted).encode() + b"\n")
        return {
            line.split(" ", 1)[0]
            for line in out.decode().splitlines()
            if line.endswith(" missing")
        }

    def rev_parse(self, rev: str) -> str | None:
        """The commit id `rev` names, or None when it names nothing (`rev` is never taken
        for an option, whatever it starts with)."""
        if "\0" in rev:
            return None
        code, out, _ = self.run_status(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"
        )
        return out.decode().strip() if code == 0 else None

    def rev_parse_all(self, revs: Sequence[str]) -> list[str] | None:
        """The commit each of `revs` names, in one call; None when any names none (or
        could pass for an option: without --verify, rev-parse has no end of options)."""
        if any(rev.startswith("-") or "\0" in rev for rev in revs):
            return None
        code, out, _ = self.run_status("rev-parse", *(f"{rev}^{{commit}}" for rev in revs))
        ids = out.decode().split()
        return ids if code == 0 and len(ids) == len(revs) else None

    def tree_of(self, commit: str) -> str:
        """The tree id of a commit."""
        return self.text("rev-parse", f"{commit}^{{tree}}")

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether `ancestor` is reachable from `descendant` (or equal to it)."""
        code, _, err = self.run_status("merge-base", "--is-ancestor", ancestor, descendant)
        if code > 1:
            raise _error(("merge-base", "--is-ancestor"), err)
        return code == 0

    def related(self, a: str, b: str) -> bool:
        """Whether two commits share any history."""
        code, _, err = self.run_status("merge-base", a, b)
        if code > 1:
            raise _error(("merge-base",), err)
        return code == 0

    def update_ref_cas(self, ref: str, new: str, old: str) -> bool:
        """Move `ref` to `new` only if it is at `old` (ZERO: only if absent); False if not."""
        return self.update_refs_cas([(ref, new, old)])

    def update_refs_cas(self, updates: Sequence[tuple[str, str, str | None]]) -> bool:
        """Apply (ref, new, old) updates in one transaction; False when a check fails.

        `old` None writes the ref itself without a check, even a symbolic one (a HEAD).
        """
        lines = [
            f"update {ref} {new} {old}" if old else f"option no-deref\nupdate {ref} {new}"
            for ref, new, old in updates
        ]
        feed = "".join(line + "\n" for line in lines).encode()
        code, _, err = self.run_status("update-ref", "--stdin", input=feed)
        if code == 0:
            return True
        if any(reason in err for reason in _CAS_FAILED):
            return False
        raise _error(("update-ref", updates[0][0]), err)

    def refs(self, prefix: str) -> dict[str, str]:
        """The refs under `prefix`, name → commit id."""
        out = self.text("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        pairs = (line.split(" ", 1) for line in out.splitlines() if line)
        return {name: oid for name, oid in pairs}

    # --- trees and commits ---------------------------------------------------------

    def commit_tree(self, tree: str, parents: Sequence[str], message: str) -> str:
        """Write a commit object (no ref moves) and return its id."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self.text(*args, input=message.encode("utf-8"))

    def write_tree(self) -> str:
        """Write the current index as a tree."""
        return self.text("write-tree")

    def index_info(self, lines: Iterable[tuple[str, str, str]]) -> None:
        """Feed (mode, oid, path) rows to `update-index --index-info`; mode "0" removes."""
        feed = b"".join(
            f"{mode} {oid}\t{path}".encode("utf-8", "surrogateescape") + b"\0"
            for mode, oid, path in lines
        )
        if feed:
            self.run("update-index", "-z", "--replace", "--index-info", input=feed)

    def ls_tree(self, tree: str) -> list[TreeEntry]:
        """Every non-tree entry of a tree, recursively."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", tree)
        entries = []
        for record in out.split(b"\0"):
            if record:
                meta, path = record.split(b"\t", 1)
                mode, kind, oid = meta.decode().split()
                entries.append(TreeEntry(mode, kind, oid, path.decode("utf-8", "surrogateescape")))
        return entries

    def diff_trees(self, old: str, new: str) -> list[TreeChange]:
        """What differs between two tree-ishes, file by file (no rename detection)."""
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--raw", old, new)
        fields = iter(out.split(b"\0"))
        return [raw_change(meta, next(fields)) for meta in fields if meta.startswith(b":")]

    def merge_tree(self, ours: str, theirs: str) -> MergeResult:
        """Three-way merge two commits in memory: the tree, and each conflict with its kind."""
        code, out, err = self.run_status(
            "merge-tree", "--write-tree", "--name-only", "-z", ours, theirs
        )
        if code not in (0, 1):
            raise _error(("merge-tree", "--write-tree"), err)
        return parse_merge_tree(out)

    @contextmanager
    def temp_index(self, seed: Path | None = None) -> Iterator[Git]:
        """A Git bound to a private index file (a copy of `seed` when given), removed after.

        With a seed the file sits next to it, so it can replace the seed atomically. The copy
        keeps the seed's mtime: git takes an entry as unchanged when its stat data matches
        and it is older than the index file, so a fresh mtime would hide same-size edits
        made in the tick the seed was written ("racily clean" entries).
        """
        where = seed.parent if seed is not None else None
        with tempfile.TemporaryDirectory(prefix="freshline-index-", dir=where) as tmp:
            index = Path(tmp) / "index"
            if seed is not None and seed.exists():
                shutil.copy2(seed, index)
            yield self.with_index(index)

    def status(self, refresh: bool = True) -> Status:
        """Compare HEAD, the index and the files (renames off).

        Untracked files are listed as `git status` does by default, a wholly untracked
        directory as one entry: that mode is the one git 2.39's untracked cache serves,
        which spares a walk of every directory. With `refresh` the index's stat cache is
        written back when git can, as `git status` does.
        """
        optional = () if refresh else ("--no-optional-locks",)
        out = self.run(
            "-c", "core.untrackedCache=true", *optional, "status", "--porcelain=v2", "-z",
            "--branch", "--untracked-files=normal", "--no-renames", "--ignore-submodules=none",
        )
        head, staged, changed = None, False, []
        for record in out.decode("utf-8", "surrogateescape").split("\0"):
            kind, _, rest = record.partition(" ")
            if kind == "#" and rest.startswith("branch.oid "):
                oid = rest.removeprefix("branch.oid ")
                head = None if oid == "(initial)" else oid
            elif kind == "?":
                changed.append(rest)
            elif kind in ("1", "u"):
                fields = rest.split(" ", 7 if kind == "1" else 9)
                staged = staged or fields[0][0] != "."
                if fields[0][1] != "." or kind == "u":
                    changed.append(fields[-1])
        return Status(head, staged, tuple(changed))

    # --- worktrees -----------------------------------------------------------------

    def worktree_add(self, path: Path, commit: str) -> None:
        """Check `commit` out, detached, in a new worktree at `path`."""
        self.run("worktree", "add", "--detach", "--force", str(path), commit)

    def worktree_remove(self, path: Path) -> None:
        """Remove a worktree and its administrative files."""
        self.run("worktree", "remove", "--force", str(path))


def raw_change(meta: bytes, path: bytes) -> TreeChange:
    """One `diff-tree --raw -z` record: its `:modes oids status` field and its path."""
    old_mode, new_mode, old_oid, new_oid, status = meta[1:].decode().split()
    name = path.decode("utf-8", "surrogateescape")
    return TreeChange(old_mode, new_mode, old_oid, new_oid, status, name)


def _name(args: Sequence[str]) -> str:
    """The command's name and first argument, options before it skipped."""
    while len(args) > 2 and args[0].startswith("-"):
        args = args[2:] if args[0] == "-c" else args[1:]
    return " ".join(args[:2])


def _error(args: Sequence[str], stderr: bytes) -> GitError:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    first = lines[0] if lines else "failed without a message"
    return GitError(f"git {_name(args)}: {first}")
