"""Text primitives shared by the two context blocks: absolute paths, safe text, capped lists.

The blocks are read by a model, so every path is shown absolute and verbatim whenever that
is unambiguous. A path that could break the line structure or forge a closing tag (a
control character, a line separator, trailing whitespace, ` → ` or `</`) is shown as a JSON
string instead, with `</` written `<\\/`. Free text (patterns, reasons, ref names) is
flattened to one line and shortened; attribute values are XML-escaped.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Sequence

from freshline.errors import WorkspaceError

ARROW = " → "
MORE = "… and {} more"
_LINE_BREAKERS = {"Cc", "Zl", "Zp"}  # control characters and Unicode line/paragraph separators
_TEXT_LIMIT = 300
_SHA = re.compile(r"[0-9a-fA-F]{40}([0-9a-fA-F]{24})?")


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
    rel = posixpath.normpath(path)
    if rel == ".." or rel.startswith("../"):
        raise WorkspaceError(f"path escapes the workspace: {path}")
    if rel == ".":
        return root
    return posixpath.join(root, rel)


def _breaks_lines(text: str) -> bool:
    return any(unicodedata.category(ch) in _LINE_BREAKERS for ch in text)


def show_path(full: str) -> str:
    """An absolute path as it appears on the wire: verbatim unless that would be ambiguous."""
    if _breaks_lines(full) or full != full.rstrip() or "</" in full or ARROW in full:
        return json.dumps(full, ensure_ascii=False).replace("</", "<\\/")
    return full


def show(root: str, path: str) -> str:
    """`absolute` then `show_path`."""
    return show_path(absolute(root, path))


def show_text(text: str, limit: int = _TEXT_LIMIT) -> str:
    """Free text flattened to one line, `</` defused, shortened to `limit` characters."""
    flat = "".join(" " if unicodedata.category(ch) in _LINE_BREAKERS else ch for ch in text)
    flat = " ".join(flat.split()).replace("</", "<\\/")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def short_commit(rev: str) -> str:
    """A full object id shortened to 7 characters; anything else (a ref name) as text."""
    return rev[:7] if _SHA.fullmatch(rev) else show_text(rev, 80)


def tag(name: str, attributes: Sequence[tuple[str, object]], body: Iterable[str]) -> str:
    """`<name a="v">`, the body lines, `</name>`, joined by newlines (no trailing newline)."""
    attrs = "".join(f' {key}="{_attr(value)}"' for key, value in attributes)
    return "\n".join([f"<{name}{attrs}>", *body, f"</{name}>"])


def _attr(value: object) -> str:
    return html.escape(show_text(str(value), 200), quote=True)


def section(heading: str, entries: Sequence[str], budget: int) -> list[str]:
    """`heading`, at most `budget` entries as `- entry` lines, then `… and K more` if any."""
    if not entries:
        return []
    shown = max(budget, 0)
    lines = [heading, *(f"- {entry}" for entry in entries[:shown])]
    if len(entries) > shown:
        lines.append(MORE.format(len(entries) - shown))
    return lines
