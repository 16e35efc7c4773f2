"""Text primitives shared by the two context blocks: absolute paths and escaped text.

The blocks are read by a model, so nothing from the workspace (a path, a pattern, a tag, a
failure reason, a ref name, a project name) may open or close a block or start a new line
of one; and a name must reach the agent as it is on disk, so that copying it reaches the
file. Every such string goes through `escape` (`freshline.names`): it stays as it is but
for a backslash (`\\\\`), what is invisible or moves text around (control characters,
line and paragraph separators, format characters: `\\n`, `\\u202e`), the bytes of a
name that is not UTF-8 (`\\xff`) and the `<` of `<project_context…` or
`</project_context…` (`\\x3c`). Each escape is one a shell's `$'…'` reads back, and a
block holding one says so (`phrases.READ_BACK`); freshline's readers take a name as
shown. On top of that, a path ends with `\\x20` where its last characters are spaces,
and writes ` → ` (the rename separator) as ` \\u2192 `, so every path line reads one way
only. Free text (reasons, ref names) is first flattened to one line and shortened; an
attribute value writes `"` as `\\x22`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence

from freshline.errors import WorkspaceError
from freshline.names import escape

ARROW = " → "
_TEXT_LIMIT = 300
_SHA = re.compile(r"[0-9a-fA-F]{40}([0-9a-fA-F]{24})?")
_TRAILING_SPACES = re.compile(r" +$")
_UNNORMALIZED = re.compile(r"(^|/)\.{1,2}(/|$)|//|/$")  # what normpath would change


def normalize_root(root: str) -> str:
    """The workspace root without a trailing slash; it must be an absolute POSIX path."""
    if not root.startswith("/"):
        raise WorkspaceError(f"workspace root must be an absolute path: {root!r}")
    return posixpath.normpath(root)


def absolute(root: str, path: str) -> str:
    """`path` (workspace-relative, or absolute inside `root`) as an absolute path."""
    if path.startswith("/"):
        full = posixpath.normpath(path)
        if full != root and not full.startswith(root.rstrip("/") + "/"):
            raise WorkspaceError(f"path is outside the workspace {root}: {path}")
        return full
    if path and not _UNNORMALIZED.search(path):
        return f"{root}/{path}" if root != "/" else f"/{path}"
    rel = posixpath.normpath(path)
    if rel == ".." or rel.startswith("../"):
        raise WorkspaceError(f"path escapes the workspace: {path}")
    if rel == ".":
        return root
    return posixpath.join(root, rel)


def show_path(full: str) -> str:
    """An absolute path as it appears on the wire: escaped, and unambiguous on its line."""
    shown = escape(full)
    if ARROW in shown:
        shown = shown.replace(ARROW, " \\u2192 ")
    if shown.endswith(" "):
        shown = _TRAILING_SPACES.sub(lambda m: "\\x20" * len(m.group()), shown)
    return shown


def show(root: str, path: str) -> str:
    """`absolute` then `show_path`."""
    return show_path(absolute(root, path))


# What in a list of workspace paths (one per line) `show` would not copy as it is. Each
# is looked for with `in` (C's string search): one regex over a megabyte of paths tries
# every position, and costs as much as showing them one by one.
_NOT_PLAIN = ("\\", "<", "→", "//", "/\n", " \n", "\n/", "\n\n")
_DOT_PART = re.compile(r"(?:^|/)\.\.?(?:/|$)", re.MULTILINE)  # a `.` or `..` component


def shown_lengths(root: str, paths: Sequence[str]) -> list[int]:
    """`len(show(root, p))` for each of `paths`; at once when none needs escaping or
    normalizing (a first manifest weighs tens of thousands of paths)."""
    joined = "\n".join(paths)
    if not (_plain(joined, len(paths)) and show_path(root) == root and "→" not in root):
        return [len(show(root, p)) for p in paths]
    base = len(root) + 1 if root != "/" else 1
    return [base + len(p) for p in paths]


def _plain(joined: str, count: int) -> bool:
    """Whether each of the `count` paths `joined` by newlines is shown as it is."""
    if not joined or joined.count("\n") != count - 1:  # an empty path, a newline in a name
        return False
    if not joined.replace("\n", "").isprintable() or any(s in joined for s in _NOT_PLAIN):
        return False
    if joined.startswith(("/", "\n")) or joined.endswith(("/", " ", "\n")):
        return False
    dots = joined.startswith(".") or "/." in joined or "\n." in joined
    return not dots or _DOT_PART.search(joined) is None


def show_text(text: str, limit: int = _TEXT_LIMIT) -> str:
    """Free text flattened to one line, shortened to `limit` characters, then escaped."""
    flat = " ".join(text.split())
    return escape(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def short_commit(rev: str) -> str:
    """A full object id shortened to 7 characters; anything else (a ref name) as text."""
    return rev[:7] if _SHA.fullmatch(rev) else show_text(rev, 80)


def count(n: int) -> str:
    """A number as the blocks write it: `1,204`."""
    return f"{n:,}"


def tag(name: str, attributes: Sequence[tuple[str, object]], body: Iterable[str]) -> str:
    """`<name a="v">`, the body lines, `</name>`, joined by newlines (no trailing newline)."""
    attrs = "".join(f' {key}="{_attr(value)}"' for key, value in attributes)
    return "\n".join([f"<{name}{attrs}>", *body, f"</{name}>"])


def _attr(value: object) -> str:
    return show_text(str(value), 200).replace('"', "\\x22")
