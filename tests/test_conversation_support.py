"""Helpers for the conversation tests (real repositories built with plumbing), and tests of
the git wrapper itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from freshline.conversation import batch
from freshline.conversation.conflicts import Conflict, ConflictKind
from freshline.conversation.git import EMPTY_TREE, ZERO, Git
from freshline.errors import GitError
from freshline.store.records import FileKind, IndexEntry

from .conftest import git, git_env


class Upstream:
    """A workspace checkout whose branches the tests move with plumbing (fast, no checkout)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "-b", "main")

    def commit(
        self, branch: str, files: dict[str, str | None], parent: str | None = "branch",
        modes: dict[str, str] | None = None, message: str = "upstream",
    ) -> str:
        """Commit `files` (None deletes) on top of `parent` ("branch": the branch's tip)."""
        if parent == "branch":
            parent = self.rev(f"refs/heads/{branch}")
        index = self.root / ".git" / "test-index"
        index.unlink(missing_ok=True)
        env = git_env(GIT_INDEX_FILE=str(index))
        run = lambda *a, input=None: subprocess.run(  # noqa: E731
            ["git", *a], cwd=self.root, input=input, capture_output=True, env=env, check=True
        ).stdout.decode().strip()
        if parent:
            run("read-tree", parent)
        rows = []
        for path, content in files.items():
            if content is None:
                rows.append(f"0 {ZERO}\t{path}")
            else:
                oid = run("hash-object", "-w", "--stdin", input=content.encode())
                rows.append(f"{(modes or {}).get(path, '100644')} {oid}\t{path}")
        if rows:
            run("update-index", "--index-info", input=("\n".join(rows) + "\n").encode())
        tree = run("write-tree")
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        commit = run(*args)
        git(self.root, "update-ref", f"refs/heads/{branch}", commit)
        return commit

    def chain(self, branch: str, count: int, prefix: str = "filler") -> str:
        """`count` commits on `branch`, each adding one filler file; returns the tip."""
        ref = f"refs/heads/{branch}"
        lines = []
        for i in range(count):
            start = [f"from {self.rev(ref)}"] if i == 0 else []
            body = f"{i}\n"
            lines += [f"commit {ref}", f"committer t <t@t> {1700000000 + i} +0000", "data 1",
                      "c", *start, f"M 100644 inline {prefix}/{i}.txt", f"data {len(body)}",
                      body]
        git(self.root, "fast-import", "--quiet", input="\n".join(lines).encode())
        return self.rev(ref) or ""

    def rev(self, rev: str) -> str | None:
        """The commit `rev` names, or None."""
        proc = subprocess.run(["git", "rev-parse", "--verify", "--quiet", rev + "^{commit}"],
                              cwd=self.root, capture_output=True, env=git_env())
        return proc.stdout.decode().strip() or None

    def switch(self, branch: str) -> None:
        """Point HEAD at `branch` (without touching files)."""
        git(self.root, "symbolic-ref", "HEAD", f"refs/heads/{branch}")

    def show(self, rev: str, path: str) -> str | None:
        """The content of `path` at `rev`, or None when absent."""
        proc = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=self.root,
                              capture_output=True, env=git_env())
        return proc.stdout.decode() if proc.returncode == 0 else None

    def mode(self, rev: str, path: str) -> str:
        """The mode of `path` at `rev`."""
        return git(self.root, "ls-tree", rev, "--", path).split()[0]

    def parents(self, rev: str) -> list[str]:
        """The parents of a commit."""
        return git(self.root, "rev-list", "--parents", "-n1", rev).split()[1:]

    def reachable(self) -> set[str]:
        """Every commit reachable from any ref."""
        return set(git(self.root, "rev-list", "--all").split())


def scan(root: Path) -> list[IndexEntry]:
    """What the tracker would index: every file under `root` except .git and .freshline."""
    entries = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in (".git", ".freshline") or path.is_dir() and not path.is_symlink():
            continue
        link = path.is_symlink()
        data = os.readlink(path).encode() if link else path.read_bytes()
        blob = git(root, "hash-object", "--stdin", input=data) if link else git(
            root, "hash-object", "--no-filters", "--", rel)
        st = path.lstat()
        mode = 0o120000 if link else (0o100755 if st.st_mode & 0o111 else 0o100644)
        kind = FileKind.LINK if link else FileKind.FILE
        entries.append(IndexEntry(rel, kind, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev,
                                  blob, mode))
    return entries


# --- tests of the git wrapper ------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Upstream:
    up = Upstream(tmp_path / "ws")
    up.commit("main", {"a.txt": "a\nb\nc\n"}, parent=None)
    return up


def test_errors_name_the_command_and_git_message(repo: Upstream) -> None:
    with pytest.raises(GitError, match=r"^git cat-file blob: fatal: Not a valid object name"):
        Git(repo.root / ".git").run("cat-file", "blob", "nope")


def test_hooks_never_run(repo: Upstream) -> None:
    hook = repo.root / ".git" / "hooks" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\ntouch {repo.root}/hook-ran\n")
    hook.chmod(0o755)
    git(repo.root, "update-ref", "refs/x/probe", "HEAD")
    assert (repo.root / "hook-ran").exists()  # the hook works for plain git
    (repo.root / "hook-ran").unlink()
    g = Git(repo.root / ".git")
    assert g.update_ref_cas("refs/x/ours", g.rev_parse("HEAD") or "", ZERO)
    assert not (repo.root / "hook-ran").exists()


def test_update_ref_cas_creates_once_and_checks_old(repo: Upstream) -> None:
    g = Git(repo.root / ".git")
    head = g.rev_parse("HEAD")
    other = repo.commit("main", {"b.txt": "b\n"})
    assert head is not None
    assert g.update_ref_cas("refs/x/r", head, ZERO)
    assert not g.update_ref_cas("refs/x/r", other, ZERO)
    assert not g.update_ref_cas("refs/x/r", other, other)
    assert g.update_ref_cas("refs/x/r", other, head)
    assert g.rev_parse("refs/x/r") == other


def test_merge_tree_reports_conflicted_paths(repo: Upstream) -> None:
    base = repo.rev("main")
    ours = repo.commit("ours", {"a.txt": "a\nOURS\nc\n", "d.txt": "d\n"}, parent=base)
    theirs = repo.commit("theirs", {"a.txt": "a\nTHEIRS\nc\n", "e.txt": "e\n"}, parent=base)
    g = Git(repo.root / ".git")
    merged = g.merge_tree(ours, theirs)
    assert merged.conflicts == (Conflict(ConflictKind.CONTENT, ("a.txt",)),)
    content = g.run("cat-file", "blob", f"{merged.tree}:a.txt").decode()
    assert "<<<<<<<" in content and "OURS" in content and "THEIRS" in content
    clean = g.merge_tree(ours, repo.commit("t2", {"e.txt": "e\n"}, parent=base))
    assert clean.conflicts == ()
    assert {e.path for e in g.ls_tree(clean.tree)} == {"a.txt", "d.txt", "e.txt"}


def test_environment_ignores_inherited_git_variables(repo: Upstream, monkeypatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    monkeypatch.setenv("GIT_INDEX_FILE", "/nonexistent/index")
    g = Git(repo.root / ".git")
    assert g.rev_parse("HEAD") == repo.rev("main")
    assert g.missing_objects([repo.rev("main") or "", "1" * 40]) == {"1" * 40}


def test_diff_pairs_is_diff_trees_of_each_pair_in_one_call(repo: Upstream) -> None:
    g = Git(repo.root / ".git")
    base = repo.rev("main") or ""
    one = repo.commit("main", {"a.txt": None, "b c.txt": "b\n", "d/e.txt": "e\n"})
    two = repo.commit("main", {"d/e.txt": "e2\n"}, modes={"d/e.txt": "100755"})
    pairs = [(base, one), (one, one), (one, two), (two, base)]
    trees = [(g.tree_of(old), g.tree_of(new)) for old, new in pairs]
    diffs = batch.diff_pairs(g, pairs, trees)
    assert diffs == [g.diff_trees(old, new) for old, new in [*pairs, *trees]]
    assert diffs[1] == [] and {c.path for c in diffs[0]} == {"a.txt", "b c.txt", "d/e.txt"}


def test_a_git_lock_released_meanwhile_is_retried_and_a_stuck_one_is_one_line(
    repo: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    g = Git(repo.root / ".git")
    lock = repo.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    codes: list[int] = []
    once = g._once

    def another_git_finishes(args, input):  # the holder lets go after our first attempt
        result = once(args, input)
        codes.append(result[0])
        lock.unlink(missing_ok=True)
        return result

    monkeypatch.setattr(g, "_once", another_git_finishes)
    g.run("read-tree", "HEAD")
    assert codes[0] != 0 and codes[-1] == 0

    monkeypatch.setattr("freshline.conversation.git.LOCK_WAIT_S", 0.05)
    lock.write_bytes(b"")
    with pytest.raises(GitError) as stuck:
        Git(repo.root / ".git").run("read-tree", "HEAD")
    assert str(stuck.value) == (
        f"git read-tree HEAD: {lock} is held by another git process (if none is running, "
        "a killed one left it: remove the file)"
    )


def test_commit_chain_writes_what_commit_tree_writes(repo: Upstream) -> None:
    g = Git(repo.root / ".git", date="1700000000 +0200")
    head = repo.rev("main") or ""
    tree = g.tree_of(head)
    then = [(EMPTY_TREE, "second"), (tree, "third\n")]
    ids = batch.commit_chain(g, tree, [head], "first ✓", then)
    one = g.commit_tree(tree, [head], "first ✓")
    two = g.commit_tree(EMPTY_TREE, [one], "second")
    assert ids == [one, two, g.commit_tree(tree, [two], "third\n")]
    assert git(repo.root, "fsck", "--no-progress", "--no-dangling", "--strict") == ""
    now = batch.commit_chain(Git(repo.root / ".git"), tree, [], "undated", [])
    assert git(repo.root, "cat-file", "-t", now[0]) == "commit"
