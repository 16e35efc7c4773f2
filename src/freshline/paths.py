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
from collections.abc import Callable, Sequence
from pathlib import Path

from freshline.errors import WorkspaceError

# freshline's own data dir, git's, and the config file are never part of any project.
INTERNAL_NAMES = frozenset({".freshline", ".git", "freshline.toml"})
GLOB_CHARS = frozenset("*?[")

_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")
_EXTENSION = re.compile(r"^\*\.([^/*?\[\]]+)$")


def _normalize(path: str) -> str:
    """Normalize `path` lexically; raise ValueError with a short reason if it escapes."""
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


def normalize_rel(path: str) -> str:
    """Return `path` as a clean workspace-relative POSIX path (`""` is the root).

    Backslashes become `/`; `./`, `//` and trailing `/` go; `a/../b` becomes `b`.
    Raises WorkspaceError for absolute paths and `..` that climbs out of the workspace.
    """
    try:
        return _normalize(path)
    except ValueError as exc:
        raise WorkspaceError(f"{path}: {exc}") from None


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
    segments = pattern.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(seg) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


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


@functools.lru_cache(maxsize=256)
def path_matcher(pattern: str) -> Callable[[str], bool]:
    """A predicate for a folder, glob or extension pattern (raises ValueError if malformed)."""
    norm = normalize_pattern_path(pattern)
    kind = path_kind(norm)
    if kind == "extension":
        ext = norm[2:].lower()
        return lambda path: has_extension(path, ext)
    if kind == "glob":
        regex = glob_regex(norm)
        return lambda path: regex.match(path) is not None
    return lambda path: under(path, norm)


def _ancestors_and_self(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def is_internal(rel_path: str, ignore: Sequence[str] = ()) -> bool:
    """Whether a normalized workspace path is never in scope.

    Internal: `.freshline/` and `freshline.toml` at the root, `.git` at any depth, and
    anything matched by an `ignore` pattern (folder, glob or extension). An ignore pattern
    that matches a folder covers everything inside it, so a walker can prune there.
    """
    if not rel_path:
        return False
    first = rel_path.partition("/")[0]
    if first in INTERNAL_NAMES or ".git" in rel_path.split("/"):
        return True
    if not ignore:
        return False
    prefixes = _ancestors_and_self(rel_path)
    return any(path_matcher(p)(prefix) for p in ignore for prefix in prefixes)


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
    candidate = Path(user_path)
    if candidate.is_absolute():
        rel = _relative_to_root(root, Path(os.path.normpath(candidate)), user_path)
    else:
        rel = normalize_rel(user_path)
    real_root = root.resolve()
    real = to_abs(root, rel).resolve()
    if real != real_root and real_root not in real.parents:
        raise WorkspaceError(f"{user_path}: resolves outside the workspace")
    return rel


def _relative_to_root(root: Path, path: Path, shown: str) -> str:
    # Lexically under the root as given or as resolved; failing that, resolved under the
    # resolved root (the path reaches the workspace through a symlinked alias).
    for base, candidate in ((root, path), (root.resolve(), path), (root.resolve(), None)):
        try:
            inside = (candidate or path.resolve()).relative_to(base)
        except ValueError:
            continue
        return normalize_rel(inside.as_posix())
    raise WorkspaceError(f"{shown}: outside the workspace {root}")
