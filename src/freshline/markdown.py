"""Markdown note facts: tags and front-matter properties, with no I/O.

Front matter is read by a small YAML-subset parser (no PyYAML): top-level `key: value`,
flow lists `[a, b]`, block lists (`key:` then `- item` lines), block scalars (`|`, `>`),
quoted strings and `#` comments. Values are kept as the text written (YAML typing is not
applied, so `year: 2024` is `"2024"`); `null`, `~` and empty values are None. Anything
outside the subset (nested maps, anchors, `key:value` without a space) means the note has
no front matter: its text is then all body. A `#word` right after a space is read as a
value, not a comment, so Obsidian-style `tags: #a #b` works.

Inline tags follow Obsidian: `#` at the start of a line or after whitespace, then letters,
digits, `_`, `-`, `/` (nesting) or non-ASCII symbols; not all digits; never inside fenced
code, inline code, comments, URLs, link targets or a heading's leading `#`s.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

TAG_KEYS = frozenset({"tags", "tag"})

_KEY = re.compile(
    r"""^(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<key>[^\s#'"\[\]{},&*!|>%@`?:-][^:]*?))"""
    r"""[ \t]*:(?:[ \t]+(?P<rest>.*))?$"""
)
_ITEM = re.compile(r"^[ \t]*-(?:[ \t]+(?P<rest>.*))?$")
_COMMENT = re.compile(r"[ \t]+#(?=[ \t]|$)")
_DQ = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SQ = re.compile(r"'((?:[^']|'')*)'")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "\\": "\\", "/": "/"}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_BLOCK_SCALAR = re.compile(r"^[|>][+-]?$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_COMMENTS = re.compile(r"%%.*?%%|<!--.*?-->", re.DOTALL)
_LINKS = re.compile(r"\[\[[^\]\n]*\]\]|\]\([^)\n]*\)|[A-Za-z][A-Za-z0-9+.-]*://\S+|<[^>\s]+>")
_TAG_START = re.compile(r"(?<!\S)#(\S+)")


class _Unparsable(Exception):
    """The front matter is outside the supported subset."""


@dataclass(frozen=True)
class NoteFacts:
    """What freshline knows about one markdown note."""

    tags: frozenset[str] = frozenset()  # lowercase, without '#'
    properties: dict[str, Any] = field(default_factory=dict)  # front matter; {} if none


def parse_note(data: bytes | str) -> NoteFacts:
    """Extract tags (front matter and inline) and front-matter properties; never raises."""
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    properties, body = split_front_matter(text)
    tags = set(_front_matter_tags(properties or {}))
    tags.update(inline_tags(body))
    return NoteFacts(frozenset(tags), properties or {})


def is_tag_char(c: str) -> bool:
    """Whether `c` may appear in a tag: letters, digits, `_`, `-`, `/`, non-ASCII symbols."""
    if c in "_-/":
        return True
    if c.isascii():
        return c.isalnum()
    if c == "\ufffd":
        return False  # the stand-in for undecodable bytes
    return unicodedata.category(c)[0] not in "PZC"


def parse_tag(text: str) -> str:
    """Validate a tag written with or without `#`; return it lowercase without `#`.

    Raises ValueError for an empty tag, other characters, or an all-digit tag.
    """
    tag = text.strip().lstrip("#").strip("/")
    if not tag:
        raise ValueError("empty tag")
    if not all(is_tag_char(c) for c in tag):
        raise ValueError("a tag holds only letters, digits, '_', '-' and '/'")
    if tag.isdigit():
        raise ValueError("a tag cannot be all digits")
    return tag.lower()


def _valid_tags(words: list[str]) -> list[str]:
    out = []
    for word in words:
        try:
            out.append(parse_tag(word))
        except ValueError:
            continue
    return out


def _front_matter_tags(properties: dict[str, Any]) -> list[str]:
    words: list[str] = []
    for key, value in properties.items():
        if key.casefold() not in TAG_KEYS or value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                words.extend(re.split(r"[,\s]+", item))
    return _valid_tags(words)


# --- front matter -------------------------------------------------------------------------


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split normalized text (LF, no BOM) into (properties or None, body)."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return None, text
    for end in range(1, len(lines)):
        if lines[end].rstrip() in ("---", "..."):
            break
    else:
        return None, text
    try:
        properties = _parse_mapping(lines[1:end])
    except _Unparsable:
        return None, text
    return properties, "\n".join(lines[end + 1 :])


def _is_blank(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _parse_mapping(lines: list[str]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if _is_blank(line):
            continue
        m = _KEY.match(line)
        if not m:
            raise _Unparsable(line)
        key = next(k for k in (m["dq"], m["sq"], m["key"]) if k is not None).strip()
        rest = _strip_comment(m["rest"] or "")
        nested = []
        while i < len(lines) and (lines[i][:1] in (" ", "\t", "-") or not lines[i].strip()):
            nested.append(lines[i])
            i += 1
        props[key] = _parse_value(rest, nested)
    return props


def _parse_value(rest: str, nested: list[str]) -> Any:
    content = [line for line in nested if line.strip()]
    if _BLOCK_SCALAR.match(rest):
        return _block_scalar(rest[0], nested)
    if rest:
        if any(not _is_blank(line) for line in content):
            raise _Unparsable("continuation lines")
        return _flow_list(rest) if rest.startswith("[") else _scalar(rest)
    items = [line for line in content if not _is_blank(line)]
    if not items:
        return None
    return [_list_item(line) for line in items]


def _list_item(line: str) -> Any:
    m = _ITEM.match(line)
    if not m:
        raise _Unparsable(line)
    return _scalar(_strip_comment(m["rest"] or ""))


def _block_scalar(style: str, nested: list[str]) -> str:
    while nested and not nested[-1].strip():
        nested.pop()
    if any(line.strip() and line[:1] not in (" ", "\t") for line in nested):
        raise _Unparsable("block scalar")
    texts = [line.strip() for line in nested]
    return ("\n" if style == "|" else " ").join(texts)


def _strip_comment(value: str) -> str:
    value = value.strip()
    if value[:1] in ('"', "'"):
        return value
    if _COMMENT.match(" " + value):
        return ""  # the whole value is a comment
    m = _COMMENT.search(value)
    return (value[: m.start()] if m else value).strip()


def _scalar(value: str) -> Any:
    value = value.strip()
    if value[:1] == '"':
        return _quoted(_DQ, value, _unescape)
    if value[:1] == "'":
        return _quoted(_SQ, value, lambda s: s.replace("''", "'"))
    if value in _NULLS:
        return None
    if value[0] in "&*!|>%@`{[]}" or value.startswith("- ") or ": " in value or value[-1] == ":":
        raise _Unparsable(value)
    return value


def _quoted(regex: re.Pattern[str], value: str, decode: Any) -> str:
    m = regex.match(value)
    if not m or _strip_comment(value[m.end() :]):
        raise _Unparsable(value)
    return str(decode(m[1]))


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], m[1]), body)


def _flow_list(value: str) -> list[Any]:
    items: list[Any] = []
    i, n = 1, len(value)
    while i < n:
        while i < n and value[i] in " \t":
            i += 1
        if i < n and value[i] == "]":
            if _strip_comment(value[i + 1 :]):
                raise _Unparsable(value)
            return items
        end = _flow_item_end(value, i)
        text = value[i:end].strip()
        if text:
            items.append(_scalar(text))
        i = end + 1 if end < n and value[end] == "," else end
    raise _Unparsable(value)


def _flow_item_end(value: str, i: int) -> int:
    if value[i : i + 1] in ('"', "'"):
        m = (_DQ if value[i] == '"' else _SQ).match(value, i)
        if not m:
            raise _Unparsable(value)
        i = m.end()
    while i < len(value) and value[i] not in ",]":
        if value[i] in "[{}":
            raise _Unparsable(value)
        i += 1
    return i


# --- inline tags --------------------------------------------------------------------------


def inline_tags(body: str) -> set[str]:
    """The inline `#tags` of a note body (LF line endings, front matter removed)."""
    # Every tag starts with "#": text without one is skipped before the costly passes.
    if "#" not in body:
        return set()
    text = _strip_fences(body)
    if "%%" in text or "<!--" in text:
        text = _COMMENTS.sub(" ", text)
    tags: set[str] = set()
    for paragraph in re.split(r"\n[ \t]*\n", text):
        if "#" not in paragraph:
            continue
        visible = _LINKS.sub(" ", _strip_code_spans(paragraph))
        words = [_tag_prefix(m[1]) for m in _TAG_START.finditer(visible)]
        tags.update(_valid_tags([w for w in words if w]))
    return tags


def _tag_prefix(word: str) -> str:
    for i, c in enumerate(word):
        if not is_tag_char(c):
            return word[:i]
    return word


def _strip_fences(body: str) -> str:
    kept: list[str] = []
    fence = ""
    for line in body.split("\n"):
        if fence:
            stripped = line.strip()
            if len(line) - len(line.lstrip(" ")) < 4 and stripped.startswith(fence):
                if not stripped.strip(fence[0]):
                    fence = ""
            kept.append("")
            continue
        m = _FENCE_OPEN.match(line)
        if m and not (m[1][0] == "`" and "`" in m[2]):
            fence = m[1]
            kept.append("")
        else:
            kept.append(line)
    return "\n".join(kept)


def _strip_code_spans(text: str) -> str:
    out: list[str] = []
    i = 0
    for run in re.finditer(r"`+", text):
        if run.start() < i:
            continue
        close = re.compile(rf"(?<!`){run[0]}(?!`)").search(text, run.end())
        if close:
            out.append(text[i : run.start()] + " ")
            i = close.end()
    out.append(text[i:])
    return "".join(out)
