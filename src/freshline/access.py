"""Confinement: what a reader acting for a model may open, decided after the path resolves.

Every reader of workspace files on a model's behalf (the agent's tools, the MCP server,
hooks, and later the ACP proxy) passes the path it was given through `reach`. A path is
normalized (`..` folded, an absolute path must lie under the root), then resolved
(symlinks followed), and refused when either form is

    outside     not under the root, lexically or once resolved
    internal    `.freshline/`, `.git/`, `freshline.toml`
    ignored     matched by `[workspace] ignore`
    secret      matched by a built-in secret pattern the project did not allow
    out of scope  not among the files (or folders holding files) the rules admit
    hard link   a regular file with more than one link (unless `allow_hardlinks`)

so a symlink inside the project cannot lead to `.git/config`, a secret, or a file the
project excludes. A hard link has no "where it leads": its other names may be
`.git/config`, `.env` or a file outside the workspace, and nothing tells which, so a file
with more than one link is refused whatever its name. Readers that walk folders check each
entry with `refusal`, the same rules without the resolving (a walk sees real entries and
does not follow links), and `hard_links` before they open a file.
A refusal is an `AccessDenied` (exit 2) whose message says why in one line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from freshline.errors import WorkspaceError
from freshline.markdown import parse_note
from freshline.names import is_escaped, read_back
from freshline.paths import confine, is_internal, shown, to_abs
from freshline.scope import FileFacts, is_markdown
from freshline.sensitive import secret_pattern

NOTE_HEAD = 1 << 20  # bytes of a note read for its tags and properties, as the scanner does

PathTest = Callable[[str], bool]


class Refusal(StrEnum):
    """Why a path is refused."""

    OUTSIDE = "outside"  # escapes the root, or cannot be resolved
    INTERNAL = "internal"  # freshline's or git's own files
    IGNORED = "ignored"  # matched by [workspace] ignore
    SECRET = "secret"  # a built-in secret pattern the project did not allow
    OUT_OF_SCOPE = "out-of-scope"  # not a file (or folder) the project includes
    HARDLINK = "hard-link"  # a file with more than one link: its other names are unknown


class AccessDenied(WorkspaceError):
    """A path a reader may not open; the message is one line saying why."""

    def __init__(self, message: str, refusal: Refusal) -> None:
        super().__init__(message)
        self.refusal = refusal


@dataclass(frozen=True)
class Rules:
    """What one reader may see, apart from the root it applies to.

    The defaults see every file of the root that is not internal and not a secret.
    """

    ignore: tuple[str, ...] = ()  # the workspace's ignore patterns
    ignored: PathTest | None = None  # the workspace's ignore rules (.gitignore, Obsidian, …)
    allow_secrets: Collection[str] = frozenset()  # secret patterns the project opted into
    admits: PathTest | None = None  # files in scope (None: every file)
    admits_folder: PathTest | None = None  # folders that may hold files in scope (None: all)
    readable_internal: PathTest | None = None  # internal files served anyway (snapshots)
    not_admitted: str = "not in the project"  # the reason given for what `admits` refuses
    allow_hardlinks: bool = False  # read files with more than one hard link


@dataclass(frozen=True)
class Reached:
    """A path that passed confinement."""

    path: Path  # the real path to open (symlinks resolved)
    rel: str  # its root-relative POSIX path ("" for the root itself)
    is_dir: bool


def refusal(rel: str, rules: Rules, folder: bool = False) -> tuple[Refusal, str] | None:
    """Why a normalized root-relative path may not be seen (the refusal and a short
    reason), or None when it may. Nothing is resolved: `rel` must be a real path."""
    if not rel:
        return None
    if rules.readable_internal is not None and rules.readable_internal(rel):
        return None
    if is_internal(rel):
        return Refusal.INTERNAL, "an internal path of freshline or git"
    if rules.ignore and is_internal(rel, rules.ignore):
        return Refusal.IGNORED, "ignored by the workspace ([workspace] ignore)"
    if rules.ignored is not None and rules.ignored(rel):
        return Refusal.IGNORED, "ignored by the workspace's ignore rules"
    pattern = secret_pattern(rel, rules.allow_secrets)
    if pattern is not None:
        return Refusal.SECRET, (
            f"a secret (matches {pattern!r}); secrets are never read unless the project "
            "lists that pattern in allow_secrets"
        )
    admits = rules.admits_folder if folder else rules.admits
    if admits is not None and not admits(rel):
        return Refusal.OUT_OF_SCOPE, rules.not_admitted
    return None


def reach(root: Path, user_path: str, rules: Rules | None = None) -> Reached:
    """Resolve `user_path` (absolute, or relative to `root`) and check it against `rules`.

    Both the path as given and the path it resolves to must pass, so no link leads out of
    what the rules admit. Raises AccessDenied with a one-line reason.
    """
    rules = rules or Rules()
    if not user_path.strip():
        raise AccessDenied("a path is required", Refusal.OUTSIDE)
    root = Path(os.path.abspath(root))
    user_path = as_named(root, user_path)
    try:
        asked = confine(root, user_path)
        real = to_abs(root, asked).resolve()
        real_root = root.resolve()
        rel = "" if real == real_root else real.relative_to(real_root).as_posix()
        is_dir = real.is_dir()
    except WorkspaceError as exc:
        raise AccessDenied(f"{exc}; refused", Refusal.OUTSIDE) from None
    except (OSError, RuntimeError, ValueError) as exc:  # a loop, a name too long
        raise AccessDenied(shown(f"{user_path}: cannot resolve ({exc}); refused"),
                           Refusal.OUTSIDE) from None
    for side in dict.fromkeys((asked, rel)):
        why = refusal(side, rules, folder=is_dir)
        if why is not None:
            via = "" if side == asked else " (where it leads)"
            raise AccessDenied(shown(f"{user_path}: {why[1]}{via}; refused"), why[0])
    if not rules.allow_hardlinks:
        links = hard_links(real)
        if links > 1:
            raise AccessDenied(shown(f"{user_path}: {hardlink_reason(links)}; refused"),
                               Refusal.HARDLINK)
    return Reached(real, rel, is_dir)


def as_named(root: Path, user_path: str) -> str:
    """The name `user_path` stands for as a block shows names (`names.read_back`: `a\\nb`
    for a name holding a newline, `a\\\\b` for one holding a backslash) when that name
    is there, else `user_path` as written."""
    if not is_escaped(user_path):
        return user_path
    back = read_back(user_path)
    return back if os.path.lexists(os.path.join(root, back)) else user_path


def hard_links(path: Path) -> int:
    """How many hard links a regular file has (0: not a regular file, or gone)."""
    try:
        info = os.stat(path)
    except OSError:
        return 0
    return info.st_nlink if stat.S_ISREG(info.st_mode) else 0


def hardlink_reason(links: int) -> str:
    """Why a file with `links` hard links is not read, in a few words."""
    return (f"a file with {links} hard links (another name may be a secret, git's or "
            "outside the workspace; [security] allow_hardlinks = true reads them)")


def file_facts(root: Path, rel: str) -> FileFacts:
    """A file's facts read from disk now: tags and properties of a note, else the path."""
    if not is_markdown(rel):
        return FileFacts(rel)
    try:
        with open(to_abs(root, rel), "rb") as handle:
            note = parse_note(handle.read(NOTE_HEAD))
    except OSError:
        return FileFacts(rel)
    return FileFacts(rel, frozenset(note.tags), dict(note.properties))
