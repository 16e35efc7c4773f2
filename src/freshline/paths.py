"""Workspace-relative paths: normalizing, confining, and what is internal.

Internally every path is a workspace-relative POSIX string (`Research/Papers/a.pdf`, the
root is `""`). Names that are not valid UTF-8 arrive surrogate-escaped from `os.fsdecode`
and pass through every function here unchanged: nothing encodes them.

The path-pattern primitives (folder, glob, extension) live here rather than in `scope`
because `[workspace] ignore` uses the same syntax and `scope` itself depends on
`is_internal`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from pathlib import Path

from freshline.errors import WorkspaceError
from freshline.printable import shown as shown  # re-exported: its callers import it here

# freshline's own data dir, git's, and the config file are never part of any project.
CONFIG_FILE = "freshline.toml"
DATA_DIR = ".freshline"  # here, not in config/: the watcher's lock and registry need only it
INTERNAL_DIRS = frozenset({DATA_DIR, ".git"})
INTERNAL_NAMES = INTERNAL_DIRS | {CONFIG_FILE}
GLOB_CHARS = frozenset("*?[")

_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")
_EXTENSION = re.compile(r"^\*\.([^/*?\[\]]+)$")


def _normalize(path: str, literal: bool = False) -> str:
    """Normalize `path` lexically; raise ValueError with a short reason if it escapes.
    `literal`: a backslash is part of a name, not a separator."""
    if not literal:
        path = path.replace("\\", "/")
    if path.startswith("/") or _DRIVE.match(path):
        raise ValueError("absolute path; use a path relative to the workspace")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise ValueError("'..' escapes the workspace")
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def normalize_rel(path: str, literal: bool = False) -> str:
    """Return `path` as a clean workspace-relative POSIX path (`""` is the root).

    Backslashes become `/` (unless `literal`: a POSIX name may hold one); `./`, `//` and
    trailing `/` go; `a/../b` becomes `b`. Raises WorkspaceError for absolute paths and
    `..` that climbs out of the workspace.
    """
    try:
        return _normalize(path, literal)
    except ValueError as exc:
        raise WorkspaceError(f"{shown(path)}: {exc}") from None


def normalize_pattern_path(text: str) -> str:
    """Normalize the path part of a folder, glob or extension pattern.

    Raises ValueError with a short reason (empty, absolute, escaping).
    """
    text = text.strip()
    if not text:
        raise ValueError("empty pattern")
    norm = _normalize(text)
    if not norm:
        raise ValueError("pattern names the whole workspace; use '**'")
    return norm


def path_kind(norm: str) -> str:
    """Classify a normalized path pattern as "extension", "glob" or "folder"."""
    if _EXTENSION.match(norm):
        return "extension"
    if GLOB_CHARS.intersection(norm):
        return "glob"
    return "folder"


def under(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or inside it (`A/B` is not inside `A/BC`)."""
    return path == folder or path.startswith(folder + "/")


def has_extension(path: str, ext: str) -> bool:
    """Whether the file name of `path` ends with `.ext`, ignoring case (`ext` is lowercase)."""
    name = path.rpartition("/")[2].lower()
    return name.endswith("." + ext) and len(name) > len(ext) + 1


@functools.lru_cache(maxsize=1024)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a normalized glob: `*`, `?` and `[...]` stay within one level; `**` spans levels.

    Raises ValueError for an unclosed `[`.
    """
    return re.compile(_glob_source(pattern) + r"\Z", re.DOTALL)


def _glob_source(pattern: str) -> str:
    segments = pattern.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(seg) + ("" if last else "/"))
    return "".join(out)


def _segment_regex(seg: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            while i + 1 < len(seg) and seg[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = seg.find("]", i + 2)
            if end < 0:
                raise ValueError("unclosed '[' in glob")
            body = seg[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = re.sub(r"([\\\]^\[])", r"\\\1", body[1:] if negate else body)
            out.append(f"[{'^/' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _ignore_source(pattern: str) -> str:
    norm = normalize_pattern_path(pattern)
    kind = path_kind(norm)
    if kind == "extension":
        body = rf"(?:.*/)?[^/]+\.(?i:{re.escape(norm[2:])})"
    elif kind == "glob":
        body = _glob_source(norm)
    else:
        body = re.escape(norm)
    return body + "(?:/.*)?"  # a matched folder covers everything inside it


@functools.lru_cache(maxsize=64)
def ignore_regex(ignore: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for a set of ignore patterns (folder, glob or extension), matching a path
    when the path itself or any folder above it matches; raises ValueError if malformed."""
    return re.compile("(?:" + "|".join(_ignore_source(p) for p in ignore) + r")\Z", re.DOTALL)


def is_internal(rel_path: str, ignore: Sequence[str] = ()) -> bool:
    """Whether a normalized workspace path is never in scope.

    Internal: `.freshline/`, `.git` and `freshline.toml` at any depth (below the root they
    belong to a nested workspace or repository), and anything matched by an `ignore`
    pattern (folder, glob or extension). An ignore pattern that matches a folder covers
    everything inside it, so a walker can prune there.
    """
    if not rel_path:
        return False
    if rel_path.partition("/")[0] in INTERNAL_NAMES:
        return True
    if "/" in rel_path and _nested_internal(rel_path):
        return True
    if not ignore:
        return False
    return ignore_regex(tuple(ignore)).match(rel_path) is not None


def _nested_internal(rel_path: str) -> bool:
    if rel_path.endswith("/" + CONFIG_FILE):
        return True
    return "/." in rel_path and not INTERNAL_DIRS.isdisjoint(rel_path.split("/"))


def to_abs(root: Path, rel: str) -> Path:
    """The absolute path of workspace-relative `rel` under `root`."""
    return root / rel if rel else root


def confine(root: Path, user_path: str) -> str:
    """Resolve a user- or agent-given path to a workspace-relative POSIX path.

    Accepts relative paths (from `root`) and absolute paths inside `root`. Raises
    WorkspaceError for `..` escapes, absolute paths outside `root`, and symlinks that
    resolve outside `root`.
    """
    root = Path(os.path.abspath(root))
    rel = lexical_rel(root, user_path)
    try:
        real_root, real = root.resolve(), to_abs(root, rel).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop, an unreadable directory
        raise WorkspaceError(shown(f"{user_path}: cannot resolve ({exc})")) from None
    if real != real_root and real_root not in real.parents:
        raise WorkspaceError(f"{shown(user_path)}: resolves outside the workspace")
    return rel


def lexical_rel(root: Path, user_path: str) -> str:
    """A user- or agent-given path as a workspace-relative POSIX path, folded lexically
    (nothing resolved). Raises WorkspaceError for a NUL byte, a `..` escape, or an
    absolute path outside `root`."""
    if "\0" in user_path:
        raise WorkspaceError(f"{shown(user_path)}: contains a NUL byte")
    candidate = Path(user_path)
    # A backslash separates folders, unless the name holding it is there as written.
    literal = "\\" in user_path and os.path.lexists(os.path.join(root, user_path))
    if not candidate.is_absolute():
        return normalize_rel(user_path, literal)
    return _relative_to_root(root, Path(os.path.normpath(candidate)), user_path, literal)


def _relative_to_root(root: Path, path: Path, user_path: str, literal: bool) -> str:
    # Lexically under the root as given or as resolved; failing that, resolved under the
    # resolved root (the path reaches the workspace through a symlinked alias).
    for base, candidate in ((root, path), (root.resolve(), path), (root.resolve(), None)):
        try:
            inside = (candidate or path.resolve()).relative_to(base)
        except (ValueError, RuntimeError, OSError):  # elsewhere, or a loop on the way
            continue
        return normalize_rel(inside.as_posix(), literal)
    raise WorkspaceError(f"{shown(user_path)}: outside the workspace {shown(str(root))}")
