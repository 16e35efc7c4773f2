"""A conversation's life on disk: its size, archiving it, removing it, collecting garbage.

`remove` drops a conversation's ref (and pending ref), worktree and turn files; its
objects stay until `collect` runs git's own gc. In freshline's own repository `collect`
prunes at once (`--prune=now`): every writer holds the objects lock (objects.py) from its
first object check until a ref names what it wrote, and a prepared live turn's tree is
named by its pending ref, so nothing a conversation needs is ever unreachable while
`collect` holds the lock alone. The user's repository is collected only on request, and
then with git's own defaults (unreachable objects younger than two weeks stay).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from freshline.conversation.objects import objects_lock
from freshline.conversation.repository import REF_PREFIX, TURNS, Repo, check_id
from freshline.errors import UsageError
from freshline.paths import shown


def disk_usage(path: Path) -> int:
    """Bytes `path` takes on disk (blocks allocated), following no links; 0 if absent."""
    total = 0
    for folder, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def conversation_size(repo: Repo, conversation: str) -> int:
    """Bytes on disk of the objects the conversation reaches, less what the checkout's
    HEAD (and, in the checkout's repository, its branches and tags) already holds: what
    keeping it costs. Objects it shares with another conversation count for both."""
    args = ["rev-list", "--objects", "--disk-usage", "--objects-edge-aggressive",
            repo.ref(conversation), "--not"]
    if repo.checkout:
        head = repo.git.at(repo.workspace).rev_parse("HEAD")
        args += [head] if head else []
        if not repo.private:
            args += ["--branches", "--tags"]
    lines = repo.git.text(*args).splitlines()
    return int(lines[-1]) if lines and lines[-1].isdigit() else 0


def archive(repo: Repo, conversations: Sequence[str], target: Path) -> None:
    """Write the conversations' refs and objects to the git bundle `target`, checked by
    `git bundle verify` before it takes the name (nothing half-written keeps it). From the
    checkout's repository, commits its branches and tags hold are left out (the bundle
    needs that repository to restore); from freshline's own, the bundle stands alone.
    Restore with `git fetch FILE 'refs/freshline/*:refs/freshline/*'`."""
    target = target.resolve()
    if target.exists():
        raise UsageError(shown(f"{target} exists: archive into a new file"))
    if not target.parent.is_dir():
        raise UsageError(shown(f"{target.parent} is not a folder"))
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    refs = [repo.ref(c) for c in conversations]
    outside = [] if repo.private else ["--not", "--branches", "--tags"]
    try:
        repo.git.run("bundle", "create", "--quiet", str(temp), *refs, *outside)
        repo.git.run("bundle", "verify", "--quiet", str(temp))
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def remove(repo: Repo, conversation: str) -> None:
    """Forget a conversation: its worktree, ref, pending ref and turn files (call with its
    turn lock held). What is already gone is skipped, so a second run finishes the first."""
    remove_worktree(repo, repo.worktree(conversation))
    updates = [f"delete {repo.ref(conversation)}\n"]
    if repo.private:
        updates.append(f"delete {repo.pending_ref(conversation)}\n")
    repo.git.run("update-ref", "--stdin", input="".join(updates).encode())
    remove_turn_files(repo.workspace, conversation)


def remove_turn_files(workspace: Path, conversation: str) -> None:
    """Delete a conversation's turn lock and journal (once nobody can take its turns)."""
    for suffix in ("json", "lock"):
        (workspace / TURNS / f"{check_id(conversation)}.{suffix}").unlink(missing_ok=True)


def remove_worktree(repo: Repo, path: Path) -> None:
    """Remove a worktree under `.freshline/worktrees/`, registered with git or not."""
    if (path / ".git").exists():
        code, _, _ = repo.git.run_status("worktree", "remove", "--force", str(path))
        if code == 0:
            return
    if path.exists():
        shutil.rmtree(path)
        repo.git.run_status("worktree", "prune")


@dataclass(frozen=True)
class RefInfo:
    """A conversation ref and when its head was recorded."""

    conversation: str
    when: int  # the head commit's committer time (seconds)


def conversation_refs(repo: Repo) -> list[RefInfo]:
    """Every conversation of the repository with the time of its head."""
    out = repo.git.text("for-each-ref", "--format=%(refname) %(committerdate:unix)", REF_PREFIX)
    infos = []
    for line in out.splitlines():
        name, _, when = line.rpartition(" ")
        infos.append(RefInfo(name.removeprefix(REF_PREFIX), int(when or 0)))
    return infos


def collect(repo: Repo) -> None:
    """Run git's gc on the repository: freshline's own pruned at once, under the objects
    lock held alone; the checkout's with git's own defaults."""
    if not repo.private:
        repo.git.run("gc", "--quiet")
        return
    with objects_lock(repo.git_dir, exclusive=True):
        repo.git.run("gc", "--quiet", "--prune=now")
