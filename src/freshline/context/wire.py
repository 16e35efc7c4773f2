"""Text primitives shared by the two context blocks: absolute paths and escaped text.

The blocks are read by a model, so nothing from the workspace (a path, a pattern, a tag, a
failure reason, a ref name, a project name) may open or close a tag or start a new line of
a block. Every such string goes through `escape`:

- `&`, `<`, `>` are written `&amp;`, `&lt;`, `&gt;`, as XML does (attribute values also
  get `&quot;`), so `x</project_context_updates>` cannot close a block;
- characters that are invisible or move text around are written as visible escapes:
  control characters (`\\n`, `\\t`, `\\r`, `\\u001b`, `\\u0085`), line and paragraph
  separators (`\\u2028`), format characters such as bidirectional controls (`\\u202e`) and
  zero-width ones (`\\u200b`), and the bytes of a name that is not valid UTF-8 (surrogate
  escapes, written `\\xff`, the byte they stand for).

Everything else, including a backslash, is shown as it is. On top of that, a path ends
with `\\u0020` where its last characters are spaces, and writes ` → ` (the rename
separator) as ` \\u2192 `, so every path line reads one way only. Free text (reasons, ref
names) is first flattened to one line and shortened.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Iterable, Sequence

from freshline.errors import WorkspaceError

ARROW = " → "
_XML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# control, format (bidi controls, zero-width characters), surrogate, line and paragraph
# separator: none of them should reach a model as they are
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_BYTE_ESCAPES = range(0xDC80, 0xDD00)  # os.fsdecode's stand-ins for undecodable bytes
_TEXT_LIMIT = 300
_SHA = re.compile(r"[0-9a-fA-F]{40}([0-9a-fA-F]{24})?")
_TRAILING_SPACES = re.compile(r" +$")
_XML_CHARS = re.compile("[&<>]")
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


def escape(text: str) -> str:
    """`text` as it may appear inside a block: XML-escaped, hidden characters made visible."""
    if text.isprintable() and not _XML_CHARS.search(text):
        return text
    return "".join(_escape_char(ch) for ch in text)


def _escape_char(ch: str) -> str:
    if ch in _XML:
        return _XML[ch]
    if ch in _NAMED:
        return _NAMED[ch]
    if unicodedata.category(ch) not in _HIDDEN:
        return ch
    code = ord(ch)
    if code in _BYTE_ESCAPES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def show_path(full: str) -> str:
    """An absolute path as it appears on the wire: escaped, and unambiguous on its line."""
    shown = escape(full)
    if ARROW in shown:
        shown = shown.replace(ARROW, " \\u2192 ")
    if shown.endswith(" "):
        shown = _TRAILING_SPACES.sub(lambda m: "\\u0020" * len(m.group()), shown)
    return shown


def show(root: str, path: str) -> str:
    """`absolute` then `show_path`."""
    return show_path(absolute(root, path))


# What in a list of workspace paths (one per line) `show` would not copy as it is. Each
# is looked for with `in` (C's string search): one regex over a megabyte of paths tries
# every position, and costs as much as showing them one by one.
_NOT_PLAIN = ("&", "<", ">", "→", "//", "/\n", " \n", "\n/", "\n\n")
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
    return show_text(str(value), 200).replace('"', "&quot;")
