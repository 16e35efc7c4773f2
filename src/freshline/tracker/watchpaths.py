"""What the watcher watches, and what a file event it receives is about (pure once built).

The watcher watches the workspace's folders and, in a git checkout, the folders of the
refs that say where HEAD and the branches point, and the cookie folder; no other folder
under `.git/` or `.freshline/` (the store's own writes there would wake it at every
write). An event is one of:

    a path in the workspace      -> a hint (the path, workspace-relative)
    a flush's cookie             -> answer it (after the hints before it are stored)
    HEAD, a branch, packed-refs  -> a ref moved: flush (a commit logs a `git` change)
                                    and tell whoever shows a checkout target
    freshline.toml, info/exclude -> the config or an ignore file above the workspace's
                                    own changed: flush (which reads them again)
    anything else                -> nothing
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path

from freshline.paths import CONFIG_FILE, INTERNAL_DIRS, is_internal
from freshline.tracker.gitmoves import common_dir, git_dir

# The refs whose moves a checkout target can follow (never refs/freshline/: conversations
# move those on every turn).
REF_FOLDERS = ("refs/heads/", "refs/remotes/", "refs/tags/")
EXCLUDE = "info/exclude"  # git's own ignore file (`respect_gitignore` reads it)


class Seen(enum.Enum):
    """What one event path is about."""

    HINT = "hint"  # a path in the workspace changed
    COOKIE = "cookie"  # a flush waits for the watcher to catch up
    REF = "ref"  # HEAD, a branch or packed-refs moved
    CONFIG = "config"  # freshline.toml changed
    NOTHING = "nothing"  # internal, ignored, or outside


@dataclass(frozen=True)
class EventPaths:
    """Sorts the absolute paths of file events for one workspace."""

    root: str
    cookies: str  # the cookie folder
    gitdir: str | None = None  # the checkout's git directory (HEAD lives there)
    common: str | None = None  # where its branches and packed-refs live

    def sort(self, path: str, ignore: tuple[str, ...] = ()) -> tuple[Seen, str]:
        """What `path` is about, and for a hint its workspace-relative form ("" for the
        root itself)."""
        if os.path.dirname(path) == self.cookies:
            return Seen.COOKIE, path
        if self._is_ref(path):
            return Seen.REF, path
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        if rel == CONFIG_FILE or self._in_common(path) == EXCLUDE:
            return Seen.CONFIG, rel
        if rel.startswith("../") or rel == ".." or is_internal(rel, ignore):
            return Seen.NOTHING, rel
        return Seen.HINT, "" if rel == "." else rel

    def _is_ref(self, path: str) -> bool:
        if self.gitdir is not None and path == os.path.join(self.gitdir, "HEAD"):
            return True
        rel = self._in_common(path)
        return rel == "packed-refs" or rel.startswith(REF_FOLDERS)

    def _in_common(self, path: str) -> str:
        """`path` relative to the common git folder ("" when not in it)."""
        if self.common is None or not path.startswith(self.common + os.sep):
            return ""
        return path[len(self.common) + 1:].replace(os.sep, "/")

    def tops(self) -> tuple[str, ...]:
        """The folders watched from: the workspace, the cookie folder, and the git
        folders that live outside it (a linked worktree's)."""
        inside = self.root.rstrip("/") + "/"
        git = {d for d in (self.gitdir, self.common) if d is not None}
        return (self.root, self.cookies,
                *sorted(d for d in git if not (d + "/").startswith(inside)))

    def wants(self, folder: str) -> bool:
        """Whether the watcher watches `folder` (absolute): a workspace folder outside
        `.git/` and `.freshline/`, the git folders themselves (HEAD, packed-refs) and
        their branch, remote and tag folders."""
        if folder in (self.cookies, self.gitdir, self.common):
            return True
        in_git = self._in_common(folder)
        if in_git:
            return in_git == "refs" or (in_git + "/").startswith(REF_FOLDERS)
        rel = os.path.relpath(folder, self.root)
        if rel == "." or rel == ".." or rel.startswith("../"):
            return rel == "."
        return not INTERNAL_DIRS.intersection(rel.split(os.sep))


def event_paths(root: Path, cookies: Path) -> EventPaths:
    """The event paths of the workspace at `root` (resolved), its git folders found now."""
    gitdir = git_dir(root)
    if gitdir is None:
        return EventPaths(str(root), str(cookies))
    return EventPaths(str(root), str(cookies), str(gitdir), str(common_dir(gitdir)))
