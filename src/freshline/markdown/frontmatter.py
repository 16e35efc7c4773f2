"""Front matter: the YAML block between `---` lines at the top of a note, read as Obsidian does.

A real YAML parser, PyYAML (with libyaml's C parser where it is installed), composes the
block into nodes; freshline turns the nodes into values with Obsidian's semantics rather
than YAML 1.1's:

- Plain scalars stay the text written: dates are not converted and numbers are not
  parsed (`year: 2024` is `"2024"`, `v: 1.50` is `"1.50"`), so values compare as written.
- Booleans are YAML 1.2's: `true` / `false` (in the three spellings YAML 1.2 allows);
  `yes`, `no`, `on`, `off` are text. `null`, `~` and an empty value are None.
- An unquoted wiki link, which YAML reads as a list inside a list (`[[Note]]`), is the
  text `"[[Note]]"`, as if it were quoted: Obsidian shows it as that link.
- Keys are text (`true:` is the key `"true"`). Explicit standard tags keep the text
  written (`!!int 0x10` is `"0x10"`); any other tag (`!custom`) makes the block invalid.
- Anchors and aliases work, but a block whose aliases would expand to more values than
  it has characters (a "billion laughs"), or that refers to itself, is invalid.

A block that is not valid YAML, or whose top level is not a mapping, is invalid: the note
has no properties then (Obsidian shows such a block as invalid), and the block is still
front matter, not body text.

PyYAML's own constructor is not used: it costs more than the parse, and its YAML 1.1
types are the ones Obsidian does not have. Composing calls `resolve` for every node,
so it is replaced by a lookup in two small sets.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

try:
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # PyYAML built without libyaml: the pure-Python loader reads the same YAML
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

# Deeper nesting than this is refused: the stored properties are serialized recursively.
MAX_DEPTH = 64
_STANDARD = "tag:yaml.org,2002:"
STR, BOOL, NULL = _STANDARD + "str", _STANDARD + "bool", _STANDARD + "null"
SEQ, MAP = _STANDARD + "seq", _STANDARD + "map"
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# Explicit standard scalar tags whose YAML 1.1 value freshline does not take: text as written.
_AS_WRITTEN = frozenset(_STANDARD + t for t in ("str", "int", "float", "timestamp", "binary"))
_COLLECTIONS = frozenset(_STANDARD + t for t in ("seq", "map", "omap", "pairs", "set"))


class InvalidFrontMatter(ValueError):
    """The front matter is not valid YAML, or not a mapping."""


class _Composer(_BaseLoader):
    """PyYAML's parser and composer with Obsidian's implicit types (see the module)."""

    def resolve(self, kind: type[Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            if implicit[0] and value in _NULLS:
                return NULL
            if implicit[0] and value in _BOOLS:
                return BOOL
            return STR
        return SEQ if kind is SequenceNode else MAP


def load_properties(source: str) -> dict[str, Any]:
    """Parse a front-matter block's YAML; raises InvalidFrontMatter.

    An empty block (or one holding only comments) is an empty mapping.
    """
    composer = _Composer(source)
    try:
        node = composer.get_single_node()
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise InvalidFrontMatter(str(exc).partition("\n")[0]) from None
    finally:
        composer.dispose()
    if node is None:
        return {}
    if not isinstance(node, MappingNode):
        raise InvalidFrontMatter("front matter is not a mapping")
    # Without aliases a block holds fewer values than characters; more means an alias
    # expands too far (or refers to itself).
    mapping: dict[str, Any] = _Values(len(source) + 16).value(node, 0)
    return mapping


class _Values:
    """Turns composed nodes into plain values, counting them against a budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def value(self, node: Node, depth: int) -> Any:
        self.budget -= 1
        if self.budget < 0 or depth > MAX_DEPTH:
            raise InvalidFrontMatter("front matter nests or repeats too much")
        tag = node.tag
        if isinstance(node, ScalarNode):
            return node.value if tag == STR else self._scalar(node.value, tag)
        if tag not in _COLLECTIONS:
            raise InvalidFrontMatter(f"unknown tag {tag}")
        depth += 1
        if isinstance(node, SequenceNode):
            link = _wiki_link(node)
            if link is not None:
                return link
            return [self.value(item, depth) for item in node.value]
        assert isinstance(node, MappingNode)
        return {self._key(k, depth): self.value(v, depth) for k, v in node.value}

    def _scalar(self, value: str, tag: str) -> Any:
        if tag in _AS_WRITTEN:
            return value
        if tag == NULL:
            return None
        if tag == BOOL and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise InvalidFrontMatter(f"unknown tag {tag}")

    def _key(self, node: Node, depth: int) -> str:
        if not isinstance(node, ScalarNode):
            raise InvalidFrontMatter("a key is a list or a map")
        key = self.value(node, depth)
        if isinstance(key, bool):
            return "true" if key else "false"
        return "null" if key is None else str(key)


def _wiki_link(node: SequenceNode) -> str | None:
    """`[[Text]]` written unquoted: a flow list holding, bracket against bracket, a flow
    list holding one plain scalar."""
    if not node.flow_style or len(node.value) != 1:
        return None
    inner = node.value[0]
    if not (isinstance(inner, SequenceNode) and inner.flow_style and len(inner.value) == 1):
        return None
    text = inner.value[0]
    # a plain scalar: libyaml gives it the style "", the pure-Python parser None
    if not isinstance(text, ScalarNode) or text.style or text.tag != STR:
        return None
    adjacent = (
        inner.start_mark.index == node.start_mark.index + 1
        and inner.end_mark.index + 1 == node.end_mark.index
    )
    return f"[[{text.value}]]" if adjacent else None
