"""The scenario matrix: each scenario builds a tree, then changes it.

Contents are unique per file unless a scenario is about equal contents, so the truth
(`truth.py`) never has to guess between identical candidates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class Tree:
    """A scenario's directory, with the few operations scenarios are written in."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, rel: str | bytes) -> bytes:
        """The absolute path of `rel` as bytes (names need not be UTF-8)."""
        return os.fsencode(self.root) + b"/" + os.fsencode(rel)

    def write(self, rel: str | bytes, text: str | bytes) -> None:
        """Create or overwrite a file, making its folders."""
        full = self.path(rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)

    def append(self, rel: str, text: str) -> None:
        """Add text at the end of a file, in place."""
        with open(self.path(rel), "ab") as f:
            f.write(text.encode())

    def mv(self, old: str | bytes, new: str | bytes) -> None:
        """Rename (one `rename(2)`), making the target's folders."""
        os.makedirs(os.path.dirname(self.path(new)), exist_ok=True)
        os.rename(self.path(old), self.path(new))

    def rm(self, rel: str) -> None:
        """Remove a file, or a folder with everything in it."""
        full = self.path(rel)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        else:
            os.unlink(full)

    def git(self, *args: str) -> None:
        """Run git here, with a fixed identity and none of the user's configuration."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_AUTHOR_NAME="selftest", GIT_AUTHOR_EMAIL="selftest@localhost",
            GIT_COMMITTER_NAME="selftest", GIT_COMMITTER_EMAIL="selftest@localhost",
            GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C",
        )
        subprocess.run(["git", *args], cwd=self.root, env=env, check=True, capture_output=True)

    def commit(self, message: str) -> None:
        """Stage everything and commit."""
        self.git("add", "-A")
        self.git("commit", "--quiet", "--no-verify", "-m", message)


@dataclass(frozen=True)
class Scenario:
    """A tree built by `setup`, then changed by `act`."""

    name: str
    setup: Callable[[Tree], None]
    act: Callable[[Tree], None]
    offline: bool = False  # `act` runs while no freshline process watches
    git_operation: str | None = None  # the operation a HEAD move in `act` is logged as
    needs_git: bool = False


def note(i: int | str, extra: str = "") -> str:
    """A note of a few lines, different for each `i`."""
    return (
        f"# Note {i}\n\nThis is note {i}, with a few lines of its own.\n"
        f"It mentions {i} twice, so that no two notes are alike: {i}.\n{extra}"
    )


def _repo(t: Tree) -> None:
    t.write(".gitignore", ".freshline/\n")
    for name in ("a", "b", "c"):
        t.write(f"src/{name}.md", note(name))
    t.git("init", "--quiet", "--initial-branch=main")
    t.commit("start")


def _diverged(t: Tree) -> None:
    """A repository on `main` with a branch `topic` that edits, adds, deletes and moves."""
    _repo(t)
    t.git("checkout", "--quiet", "-b", "topic")
    t.append("src/a.md", "Edited on topic.\n")
    t.write("src/new.md", note("new on topic"))
    t.rm("src/b.md")
    t.mv("src/c.md", "lib/c.md")
    t.commit("topic work")
    t.git("checkout", "--quiet", "main")


def _stashed_edits(t: Tree) -> None:
    _repo(t)
    t.append("src/a.md", "An edit not committed.\n")
    t.rm("src/b.md")
    t.write("src/untracked.md", note("untracked"))


def _stash_pop_setup(t: Tree) -> None:
    _stashed_edits(t)
    t.git("stash", "--quiet")


def _reset_setup(t: Tree) -> None:
    _repo(t)
    t.append("src/a.md", "A second commit.\n")
    t.write("src/d.md", note("d"))
    t.commit("second")


def _clean_setup(t: Tree) -> None:
    _repo(t)
    t.write("build/out.md", note("build output"))
    t.write("scratch.md", note("scratch"))


def _rebase_setup(t: Tree) -> None:
    _repo(t)
    t.git("checkout", "--quiet", "-b", "topic")
    t.write("src/topic.md", note("topic"))
    t.commit("topic")
    t.git("checkout", "--quiet", "main")
    t.append("src/b.md", "Moved on on main.\n")
    t.commit("main moves")
    t.git("checkout", "--quiet", "topic")


def _basic(t: Tree) -> None:
    for name in ("a", "b", "c"):
        t.write(f"notes/{name}.md", note(name))


def _flip_setup(t: Tree) -> None:
    t.write("x", note("x, a file"))
    t.write("d/inner.md", note("inside d"))


def _flip(t: Tree) -> None:
    t.rm("x")
    t.write("x/in.md", note("x, now a folder"))
    t.rm("d")
    t.write("d", note("d, now a file"))


def _symlink_swap(t: Tree) -> None:
    t.mv("foo.md", "bar.md")
    os.symlink("bar.md", t.path("foo.md"))


def _recreate(t: Tree) -> None:
    t.rm("t")
    for i in range(5):
        t.write(f"t/f{i}.md", note(f"t{i}") if i < 2 else note(f"t{i}", "rewritten\n"))


def _same_second_setup(t: Tree) -> None:
    t.write("s.md", "aaaa\n")
    second = time.time_ns() // 1_000_000_000 * 1_000_000_000
    os.utime(t.path("s.md"), ns=(second, second))


def _same_second(t: Tree) -> None:
    st = os.stat(t.path("s.md"))
    t.write("s.md", "bbbb\n")  # same size, and the clock ticks in whole seconds here
    os.utime(t.path("s.md"), ns=(st.st_atime_ns, st.st_mtime_ns))


def _old_file(t: Tree) -> None:
    t.write("old.md", note("old"))
    past = time.time() - 3600
    os.utime(t.path("old.md"), (past, past))


def _create_modify_delete(t: Tree) -> None:
    t.write("notes/d.md", note("d"))
    t.append("notes/a.md", "more\n")
    t.rm("notes/b.md")


def _inode_reuse(t: Tree) -> None:
    t.rm("cats.md")
    t.write("shopping.txt", "a shopping list\n")  # ext4 hands it the inode just freed


def _rename_edit(t: Tree) -> None:
    t.mv("notes/a.md", "notes/renamed.md")
    t.append("notes/renamed.md", "Edited after the move.\n")


def _thousand(t: Tree) -> None:
    for i in range(1000):
        t.write(f"big/sub{i % 10}/f{i}.txt", f"file {i}\n")


def _deeper_setup(t: Tree) -> None:
    t.write("a/x.md", note("x"))
    t.write("a/b/c/y.md", note("y"))


def _deeper(t: Tree) -> None:
    t.mv("a/x.md", "a/b/c/x.md")
    t.mv("a/b/c/y.md", "a/y.md")


def _tree_setup(t: Tree) -> None:
    for i in range(5):
        t.write(f"t/f{i}.md", note(f"t{i}"))


def _not_utf8(t: Tree) -> None:
    t.write(b"notes/caf\xe9.md", note("latin-1"))
    t.mv("notes/a.md", b"notes/\xff\xfe.md")


def _control_chars(t: Tree) -> None:
    t.write(b"notes/new\nline.md", note("newline"))
    t.mv("notes/a.md", b"notes/tab\there.md")


NFC = unicodedata.normalize("NFC", "café.md")
NFD = unicodedata.normalize("NFD", "café.md")


def _offline_edits(t: Tree) -> None:
    t.write("notes/new.md", note("made while nothing ran"))
    t.append("notes/a.md", "Edited while nothing ran.\n")
    t.rm("notes/b.md")
    t.mv("notes/c.md", "archive/c.md")


SCENARIOS: list[Scenario] = [
    Scenario("create, modify, delete", _basic, _create_modify_delete),
    Scenario(
        "delete + create reusing the inode", lambda t: t.write("cats.md", "cats\n"), _inode_reuse
    ),
    Scenario("rename", _basic, lambda t: t.mv("notes/a.md", "notes/renamed.md")),
    Scenario("rename + edit", _basic, _rename_edit),
    Scenario("rename over an existing file", _basic, lambda t: t.mv("notes/a.md", "notes/b.md")),
    Scenario("folder rename with 1,000 children", _thousand, lambda t: t.mv("big", "moved")),
    Scenario("move deeper, move up", _deeper_setup, _deeper),
    Scenario("file ↔ directory flip", _flip_setup, _flip),
    Scenario(
        "symlink swap while nothing watched", lambda t: t.write("foo.md", note("foo")),
        _symlink_swap, offline=True,
    ),
    Scenario("remove a tree, recreate the names", _tree_setup, _recreate),
    Scenario("touch that changes only the mtime", _old_file, lambda t: os.utime(t.path("old.md"))),
    Scenario("same-size edit in the same second", _same_second_setup, _same_second),
    Scenario("NFC → NFD spelling", lambda t: t.write(NFC, note("café")), lambda t: t.mv(NFC, NFD)),
    Scenario("case-only rename", _basic, lambda t: t.mv("notes/a.md", "notes/A.md")),
    Scenario("a name that is not UTF-8", _basic, _not_utf8),
    Scenario("a name with a newline or a tab", _basic, _control_chars),
    Scenario("edits made while nothing ran", _basic, _offline_edits, offline=True),
    Scenario(
        "git checkout of another branch", _diverged,
        lambda t: t.git("checkout", "--quiet", "topic"), git_operation="checkout", needs_git=True,
    ),
    Scenario(
        "git stash", _stashed_edits, lambda t: t.git("stash", "--quiet", "--include-untracked"),
        needs_git=True,
    ),
    Scenario(
        "git stash pop", _stash_pop_setup, lambda t: t.git("stash", "pop", "--quiet"),
        needs_git=True,
    ),
    Scenario(
        "git reset --hard", _reset_setup, lambda t: t.git("reset", "--quiet", "--hard", "HEAD~1"),
        git_operation="reset", needs_git=True,
    ),
    Scenario(
        "git clean -fd", _clean_setup, lambda t: t.git("clean", "--quiet", "-fd"), needs_git=True,
    ),
    Scenario(
        "git rebase", _rebase_setup, lambda t: t.git("rebase", "--quiet", "main"),
        git_operation="rebase", needs_git=True,
    ),
]
