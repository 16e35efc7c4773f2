"""Markdown note facts: tags and front-matter properties, read the way Obsidian reads them.

No I/O, never raises, linear time in the note's length. Front matter is the YAML block
between `---` lines at the very top (`frontmatter.py`: a real YAML parser with Obsidian's
scalar types); the body's inline tags skip code, math, comments and links (`body.py`).

Tags come from the `tags` property and the body. `tags` is a list; a text value is split
on commas. An item that is not a valid tag (`prompt engineering`, with a blank) is
ignored, never split. The key `tag` is not read (Obsidian dropped it in 1.9), and a note
whose front matter is invalid YAML has no properties and no front-matter tags.
`aliases` and `cssclasses` are lists the same way, so property search sees their items.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from freshline.markdown.body import is_tag_char, tag_words

__all__ = [
    "LIST_KEYS",
    "NoteFacts",
    "inline_tags",
    "is_tag_char",
    "parse_note",
    "parse_tag",
    "split_front_matter",
]

# Properties Obsidian reads as lists; a text value is split on commas.
LIST_KEYS = frozenset({"tags", "aliases", "cssclasses"})
_DELIMITER = "---"


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
    tags = set(_valid_tags(_property_tags(properties or {})))
    tags.update(inline_tags(body))
    return NoteFacts(frozenset(tags), properties or {})


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


def inline_tags(body: str) -> set[str]:
    """The inline `#tags` of a note body (LF line endings, front matter removed)."""
    return set(_valid_tags(tag_words(body)))


def _valid_tags(words: list[str]) -> list[str]:
    out = []
    for word in words:
        try:
            out.append(parse_tag(word))
        except ValueError:
            continue
    return out


def _property_tags(properties: dict[str, Any]) -> list[str]:
    words: list[str] = []
    for key, value in properties.items():
        if key.casefold() == "tags" and isinstance(value, list):
            words.extend(item for item in value if isinstance(item, str))
    return words


def _as_lists(properties: dict[str, Any]) -> dict[str, Any]:
    """`tags`, `aliases` and `cssclasses` given as text become lists, split on commas."""
    for key, value in properties.items():
        if key.casefold() in LIST_KEYS and isinstance(value, str):
            properties[key] = [item.strip() for item in value.split(",") if item.strip()]
    return properties


# --- front matter -------------------------------------------------------------------------


def split_front_matter(text: str) -> tuple[dict[str, Any] | None, str]:
    """Split normalized text (LF, no BOM) into (properties, body).

    Properties are None when the note has no front matter or when it is invalid YAML; an
    invalid block is still front matter, so it is not part of the body either.
    """
    block = _front_matter_block(text)
    if block is None:
        return None, text
    # PyYAML loads with the first front matter read: a command that parses no note (a
    # scan of a workspace scoped by paths alone) never pays for it.
    from freshline.markdown.frontmatter import InvalidFrontMatter, load_properties

    source, body = block
    try:
        return _as_lists(load_properties(source)), body
    except InvalidFrontMatter:
        return None, body


def _front_matter_block(text: str) -> tuple[str, str] | None:
    """(the YAML between the `---` lines, the body after them), or None if there is none."""
    first = text.find("\n")
    if first < 0 or text[:first].rstrip() != _DELIMITER:
        return None
    pos = first
    while (start := text.find("\n" + _DELIMITER, pos)) >= 0:
        end = text.find("\n", start + 1)
        end = len(text) if end < 0 else end
        if not text[start + 1 + len(_DELIMITER) : end].strip():
            return text[first + 1 : start + 1], text[end + 1 :]
        pos = end
    return None
