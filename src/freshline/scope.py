"""Project scope: parse include/exclude patterns and match a file's facts against them.

Pure: no I/O. A file is in scope when it is not internal, not a secret (`sensitive`) the
project did not allow, some inclusion matches and no exclusion does. Pattern kinds and
their canonical text:

    folder     Research/Papers      the path equals it or lies below it
    glob       notes/**/*.md        whole-path match from the root; `*` `?` `[..]` stay in
                                    one level, `**` spans any number of levels
    extension  *.pdf                file name ends with `.pdf`, any case, at any depth
    tag        #paper               markdown tags contain `paper` or `paper/…`, any case
    note       [[Reading List]]     markdown file named `Reading List.md` (any case; a title
                                    with `/` is matched against the path without extension)
    property   [status:active]      front matter `status` equals `active`, both in any case
                                    (values compared as written); a list matches on any
                                    item, a nested map by `key.sub` (`[review.next:2025-12-23]`)
                                    on its values, and a link `[[Note]]` also by `Note`
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from freshline import paths
from freshline.ignore import IgnoreRules
from freshline.markdown import parse_tag
from freshline.sensitive import secret_pattern

MARKDOWN_SUFFIXES = (".md", ".markdown")


class PatternKind(StrEnum):
    """The kinds of scope pattern."""

    FOLDER = "folder"  # a folder or file path: itself and everything below it
    GLOB = "glob"  # a path glob with `*`, `?`, `[...]` and `**`
    EXTENSION = "extension"  # `*.ext`: a case-insensitive file-name suffix
    TAG = "tag"  # `#tag`: markdown notes carrying the tag or a nested one
    NOTE = "note"  # `[[Title]]`: a markdown note by title
    PROPERTY = "property"  # `[key:value]`: a markdown front-matter property


FACT_KINDS = frozenset({PatternKind.TAG, PatternKind.PROPERTY})  # read from a note's text


@dataclass(frozen=True)
class Pattern:
    """One parsed pattern; `value` is normalized, `raw` is what the user wrote."""

    kind: PatternKind
    value: str
    raw: str
    key: str = ""  # the property key, for PROPERTY patterns only

    @property
    def text(self) -> str:
        """The canonical text: equal patterns have equal text."""
        if self.kind is PatternKind.EXTENSION:
            return f"*.{self.value}"
        if self.kind is PatternKind.TAG:
            return f"#{self.value}"
        if self.kind is PatternKind.NOTE:
            return f"[[{self.value}]]"
        if self.kind is PatternKind.PROPERTY:
            return f"[{self.key}:{self.value}]"
        return self.value


@dataclass(frozen=True)
class FileFacts:
    """What matching needs to know about one file."""

    path: str  # workspace-relative POSIX path
    tags: frozenset[str] = frozenset()  # lowercase, without '#'
    properties: Mapping[str, Any] = field(default_factory=dict)


def is_markdown(path: str) -> bool:
    """Whether `path` names a markdown note (by extension, any case)."""
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def parse_pattern(text: str) -> Pattern:
    """Parse one include/exclude pattern; raises ValueError with a short reason."""
    raw = text
    text = text.strip()
    if not text:
        raise ValueError("empty pattern")
    if text.startswith("[["):
        return _parse_note(text, raw)
    if text.startswith("#"):
        return Pattern(PatternKind.TAG, parse_tag(text), raw)
    if text.startswith("[") and text.endswith("]") and ":" in text:
        return _parse_property(text, raw)
    norm = paths.normalize_pattern_path(text)
    kind = PatternKind(paths.path_kind(norm))
    if kind is PatternKind.EXTENSION:
        return Pattern(kind, norm[2:].lower(), raw)
    if kind is PatternKind.GLOB:
        paths.glob_regex(norm)  # raises on a malformed glob
    return Pattern(kind, norm, raw)


def _parse_note(text: str, raw: str) -> Pattern:
    if not text.endswith("]]") or len(text) < 4:
        raise ValueError("malformed note pattern (expected [[Title]])")
    title = text[2:-2].strip()
    if not title:
        raise ValueError("empty note title")
    if "[" in title or "]" in title:
        raise ValueError("malformed note pattern (expected [[Title]])")
    return Pattern(PatternKind.NOTE, title.replace("\\", "/").strip("/"), raw)


def _parse_property(text: str, raw: str) -> Pattern:
    key, _, value = text[1:-1].partition(":")
    key, value = key.strip(), value.strip()
    if not key:
        raise ValueError("property pattern needs a key (expected [key:value])")
    if not value:
        raise ValueError("property pattern needs a value (expected [key:value])")
    return Pattern(PatternKind.PROPERTY, value, raw, key=key)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def property_values(properties: Mapping[str, Any], key: str) -> Iterator[Any]:
    """The scalar values a property pattern's `key` reaches, keys compared in any case.

    `a.b` names the key `b` of the map `a` (or a key named `a.b` itself); a list yields its
    items, and the maps in a list are searched as maps are.
    """
    want = key.casefold()
    for name, value in properties.items():
        have = name.casefold()
        if have == want:
            yield from _leaves(value)
        elif want.startswith(have + "."):
            for nested in _leaves(value, maps=True):
                if isinstance(nested, Mapping):
                    yield from property_values(nested, want[len(have) + 1 :])


def _leaves(value: Any, maps: bool = False) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item, maps)
    elif value is not None and (maps or not isinstance(value, Mapping)):
        yield value


def _property_matches(pattern: Pattern, properties: Mapping[str, Any]) -> bool:
    want = pattern.value.casefold()
    for value in property_values(properties, pattern.key):
        text = _as_text(value).casefold()
        if text == want or (text.startswith("[[") and text.endswith("]]") and text[2:-2] == want):
            return True
    return False


def _note_matches(title: str, path: str) -> bool:
    stem = path.rpartition(".")[0] if "." in path.rpartition("/")[2] else path
    if "/" not in title:
        stem = stem.rpartition("/")[2]
    return stem.casefold() == title.casefold()


def pattern_matches(pattern: Pattern, facts: FileFacts) -> bool:
    """Whether one pattern matches a file (internal paths are the caller's concern)."""
    kind, path = pattern.kind, facts.path
    if kind is PatternKind.FOLDER:
        return paths.under(path, pattern.value)
    if kind is PatternKind.GLOB:
        return paths.glob_regex(pattern.value).match(path) is not None
    if kind is PatternKind.EXTENSION:
        return paths.has_extension(path, pattern.value)
    if not is_markdown(path):
        return False
    if kind is PatternKind.TAG:
        prefix = pattern.value + "/"
        return any(t == pattern.value or t.startswith(prefix) for t in facts.tags)
    if kind is PatternKind.NOTE:
        return _note_matches(pattern.value, path)
    return _property_matches(pattern, facts.properties)


@dataclass(frozen=True)
class Scope:
    """A project's inclusions and exclusions, the workspace's ignore rules, and the
    built-in secret patterns the project opted into (`allow_secrets`).

    `ignore` are the `[workspace] ignore` patterns; `rules`, when given, all of the
    workspace's ignore rules (freshline.ignore). A scanned index holds no ignored path, so
    a project's scope needs only the patterns; the tracker gives the rules to the scopes
    it compares when the rules change.
    """

    include: tuple[Pattern, ...]
    exclude: tuple[Pattern, ...] = ()
    ignore: tuple[str, ...] = ()
    allow_secrets: frozenset[str] = frozenset()
    rules: IgnoreRules | None = field(default=None, compare=False)

    @classmethod
    def from_strings(
        cls,
        include: Iterable[str],
        exclude: Iterable[str] = (),
        ignore: Iterable[str] = (),
        allow_secrets: Iterable[str] = (),
        rules: IgnoreRules | None = None,
    ) -> Scope:
        """Build a scope from pattern texts; raises ValueError for a malformed pattern."""
        return cls(
            tuple(parse_pattern(p) for p in include),
            tuple(parse_pattern(p) for p in exclude),
            tuple(ignore),
            frozenset(allow_secrets),
            rules,
        )

    def matches(self, facts: FileFacts) -> bool:
        """Whether the file is in scope: not internal, ignored or a secret; included and
        not excluded."""
        if not self.include or paths.is_internal(facts.path, self.ignore):
            return False
        if self.rules is not None and self.rules.ignored(facts.path):
            return False
        if self.excludes(facts) or not any(pattern_matches(p, facts) for p in self.include):
            return False
        return secret_pattern(facts.path, self.allow_secrets) is None

    def excludes(self, facts: FileFacts) -> bool:
        """Whether an exclusion matches the file (what an isolated agent may not touch)."""
        return any(pattern_matches(p, facts) for p in self.exclude)

    def excludes_folder(self, folder: str) -> bool:
        """Whether a folder exclusion covers `folder` (everything below it is excluded)."""
        return any(
            p.kind is PatternKind.FOLDER and paths.under(folder, p.value) for p in self.exclude
        )

    @property
    def needs_facts(self) -> bool:
        """Whether matching reads a note's tags or properties (a tag or property pattern
        among the inclusions or exclusions), not only its path."""
        return any(p.kind in FACT_KINDS for p in (*self.include, *self.exclude))

    def matches_path(self, path: str) -> bool:
        """Whether a path is in scope judged by the path alone (no tags or properties)."""
        return self._by_path(path)

    @cached_property
    def _by_path(self) -> Callable[[str], bool]:
        """`matches_path`, its patterns compiled once: a scope judges every path of a
        workspace at its first listing, and the generic match per path costs 10× more."""
        include, exclude = _path_regex(self.include), _path_regex(self.exclude)
        if not self.include or include is None or exclude is None:
            return lambda path: self.matches(FileFacts(path))
        ignore, rules, allowed = self.ignore, self.rules, self.allow_secrets
        is_internal, included, excluded = paths.is_internal, include.match, exclude.match

        def by_path(path: str) -> bool:
            if is_internal(path, ignore) or (rules is not None and rules.ignored(path)):
                return False
            if excluded(path) or not included(path):
                return False
            return secret_pattern(path, allowed) is None

        return by_path


def _path_regex(patterns: Iterable[Pattern]) -> re.Pattern[str] | None:
    """One regex matching a path when some pattern matches it by the path alone (none:
    matches nothing); None when a pattern needs more than the path's text (a note's
    title is matched apart; tags and properties never match a bare path, but are rare
    enough to leave to the generic match)."""
    sources = []
    for p in patterns:
        if p.kind is PatternKind.FOLDER:
            sources.append(re.escape(p.value) + "(?:/.*)?")
        elif p.kind is PatternKind.GLOB:
            sources.append(paths.glob_regex(p.value).pattern.removesuffix(r"\Z"))
        elif p.kind is PatternKind.EXTENSION and p.value.isascii():  # `.ext`, any case
            sources.append(r"(?:.*/)?[^/]+\.(?i:" + re.escape(p.value) + ")")
        else:
            return None
    return re.compile(f"(?:{'|'.join(sources) or '(?!)'})\\Z", re.DOTALL)


def _parsed(patterns: Iterable[str | Pattern]) -> list[Pattern]:
    return [p if isinstance(p, Pattern) else parse_pattern(p) for p in patterns]


def canonical(patterns: Iterable[str | Pattern]) -> list[str]:
    """Patterns in their canonical text, sorted and de-duplicated (`./notes/` → `notes`)."""
    return sorted({p.text for p in _parsed(patterns)})


def _canonical(patterns: Iterable[str | Pattern]) -> list[str]:
    return sorted({f"{p.kind.value}:{p.text}" for p in _parsed(patterns)})


def signature(
    include: Iterable[str | Pattern],
    exclude: Iterable[str | Pattern],
    mode: Any,
    allow_secrets: Iterable[str] = (),
) -> str:
    """A stable hash of the normalized patterns and mode (order and duplicates ignored)."""
    payload: dict[str, object] = {
        "include": _canonical(include),
        "exclude": _canonical(exclude),
        "mode": str(getattr(mode, "value", mode)),
    }
    if allowed := sorted(set(allow_secrets)):  # absent when empty: older signatures stay valid
        payload["allow_secrets"] = allowed
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()[:16]


def describe(pattern: Pattern) -> str:
    """A short human description, e.g. `folder Research/Papers` or `tag #paper`."""
    if pattern.kind is PatternKind.PROPERTY:
        return f"property {pattern.key} = {pattern.value}"
    return f"{pattern.kind.value} {pattern.text}"
