"""Confinement: what a reader acting for a model may open, checked on what it opened.

Every reader of workspace files on a model's behalf (the agent's tools, the MCP server,
hooks, the ACP proxy) opens the path it was given with `open_reached` and reads the
descriptor it gets. A path is normalized (`..` folded, an absolute path must lie under
the root), then opened beneath the root a component at a time, links inside the root
followed by their text and none out of it (`freshline.beneath`), and refused when the
path as given or the path it led to is

    outside     not under the root, lexically or where its links lead
    internal    `.freshline/`, `.git/`, `freshline.toml`
    ignored     matched by `[workspace] ignore`
    secret      matched by a built-in secret pattern the project did not allow
    out of scope  not among the files (or folders holding files) the rules admit
    hard link   a regular file with more than one link (unless `allow_hardlinks`)
    special     a FIFO, device or socket (never opened, so never waited on)

so a symlink inside the project cannot lead to `.git/config`, a secret, or a file the
project excludes, and a folder swapped for a symlink after the check cannot either: the
check is made on what was opened, and the reader reads that (issue 47). A hard link has
no "where it leads": its other names may be `.git/config`, `.env` or a file outside the
workspace, and nothing tells which, so a file with more than one link is refused
whatever its name. `reach` is the same check for a decision (or a write that replaces
the file). Readers that walk folders check each entry with `refusal`, the same rules
without the resolving (`beneath.files_under` sees real entries and follows no link).
A refusal is an `AccessDenied` (exit 2) whose message says why in one line.
"""


from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from freshline.beneath import Kind, Opened, Outside, open_beneath
from freshline.errors import WorkspaceError
from freshline.markdown import parse_note
from freshline.names import is_escaped, read_back
from freshline.paths import is_internal, lexical_rel, shown, to_abs
from freshline.scope import FileFacts, is_markdown
from freshline.sensitive import secret_pattern

NOTE_HEAD = 1 << 20  # bytes of a note read for its tags and properties, as the scanner does

PathTest = Callable[[str], bool]
SPECIAL_REASON = "not a regular file (a FIFO, device or socket)"


class Refusal(StrEnum):
    """Why a path is refused."""

    OUTSIDE = "outside"  # escapes the root, or cannot be resolved
    INTERNAL = "internal"  # freshline's or git's own files
    IGNORED = "ignored"  # matched by [workspace] ignore
    SECRET = "secret"  # a built-in secret pattern the project did not allow
    OUT_OF_SCOPE = "out-of-scope"  # not a file (or folder) the project includes
    HARDLINK = "hard-link"  # a file with more than one link: its other names are unknown
    SPECIAL = "special"  # a FIFO, device or socket: never opened, never waited on


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
    """Where `user_path` (absolute, or relative to `root`) leads, checked against `rules`
    as `open_reached` checks it; for a decision, or a write that replaces the file. A
    reader opens with `open_reached` instead, and reads what was checked."""
    with open_reached(root, user_path, rules) as opened:
        real_root = Path(os.path.realpath(root))
        return Reached(to_abs(real_root, opened.rel), opened.rel, opened.kind is Kind.FOLDER)


def open_reached(root: Path, user_path: str, rules: Rules | None = None) -> Opened:
    """Open `user_path` (absolute, or relative to `root`) beneath the root without
    following a link out of it (`beneath.open_beneath`), and check what was opened.

    Both the path as given and the path it led to must pass `rules`; a FIFO, device or
    socket is refused unopened, a regular file with more than one link too. The caller
    closes what it gets (a path that names nothing comes back MISSING, to be said so).
    Raises AccessDenied with a one-line reason.
    """
    rules = rules or Rules()
    if not user_path.strip():
        raise AccessDenied("a path is required", Refusal.OUTSIDE)
    root = Path(os.path.abspath(root))
    user_path = as_named(root, user_path)
    try:
        asked = lexical_rel(root, user_path)
        opened = open_beneath(root, asked)
    except Outside as exc:
        raise AccessDenied(shown(f"{user_path}: {exc}; refused"), Refusal.OUTSIDE) from None
    except WorkspaceError as exc:
        raise AccessDenied(f"{exc}; refused", Refusal.OUTSIDE) from None
    except OSError as exc:  # a name too long, a folder it may not enter
        raise AccessDenied(shown(f"{user_path}: cannot open ({exc.strerror or exc}); refused"),
                           Refusal.OUTSIDE) from None
    try:
        _check(user_path, asked, opened, rules)
    except AccessDenied:
        opened.close()
        raise
    return opened


def _check(user_path: str, asked: str, opened: Opened, rules: Rules) -> None:
    if opened.kind is Kind.SPECIAL:
        raise AccessDenied(shown(f"{user_path}: {SPECIAL_REASON}; refused"), Refusal.SPECIAL)
    for side in dict.fromkeys((asked, opened.rel)):
        why = refusal(side, rules, folder=opened.kind is Kind.FOLDER)
        if why is not None:
            via = "" if side == asked else " (where it leads)"
            raise AccessDenied(shown(f"{user_path}: {why[1]}{via}; refused"), why[0])
    links = opened.info.st_nlink if opened.kind is Kind.FILE and opened.info else 0
    if links > 1 and not rules.allow_hardlinks:
        raise AccessDenied(shown(f"{user_path}: {hardlink_reason(links)}; refused"),
                           Refusal.HARDLINK)


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
        with open_beneath(root, rel) as opened:
            if opened.kind is not Kind.FILE:
                return FileFacts(rel)
            note = parse_note(opened.read(NOTE_HEAD))
    except (OSError, WorkspaceError):
        return FileFacts(rel)
    return FileFacts(rel, frozenset(note.tags), dict(note.properties))
