"""How secret rules run: keywords found in one pass, each rule's regex only on their lines (pure).

A rule is a regex and the keywords it needs (gitleaks' design: a rule whose keywords do
not occur in a text costs nothing). One Aho-Corasick automaton over every rule's keywords
finds them all in a single pass over the text, lower-cased as bytes (`ahocorasick_rs`:
~150 MB/s here, where a `str.find` per keyword managed 5 MB/s for gitleaks' 244). A rule
then searches only the lines holding one of its keywords, and `lines` more after them
(a multi-line form: a `curl` command continued with `\\`, a `.netrc` entry), so a text
full of `key` and `token` costs a regex over those lines, never over the whole text.

A match names its secret by a group (`group`), or else by its first group that matched
(gitleaks' convention), or else the whole match; the secret must carry more than
`entropy` bits a character and pass the rule's `check` (allowlists, the identifier guard).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

Check = Callable[[re.Match[str], int | str], bool]  # a match and its secret's group; True keeps it


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character (0.0 for an empty text)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


@dataclass(frozen=True)
class Rule:
    """One form of secret: its kind, the keywords it needs, the regex that finds it."""

    kind: str  # what `[secret withheld: <kind>]` says
    keywords: tuple[str, ...]  # lower case; the rule runs on lines holding one of them
    pattern: str
    flags: int = 0
    group: int | str | None = None  # the secret; None: the first group that matched
    entropy: float = 0.0  # the secret must carry more bits a character than this
    check: Check | None = None  # a last look at a match (None: every match counts)
    lines: int = 1  # how many lines after a keyword's line a match may reach
    anchored: bool = False  # matched at each keyword (not searched for on its lines)

    @cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern (compiled on first use: most texts never need most rules)."""
        return re.compile(self.pattern, self.flags)

    def secret_group(self, match: re.Match[str]) -> int | str:
        """The group of `match` that is the secret."""
        if self.group is not None:
            return self.group
        return next((i for i in range(1, len(match.groups()) + 1) if match.group(i)), 0)


def folded(text: str) -> bytes:
    """`text` lower-cased as ASCII bytes, one byte a character (any other character is `?`),
    so an offset in it is the same offset in `text`."""
    return text.encode("ascii", "replace").lower()


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int, more: int) -> int:
    end = text.find("\n", at)
    for _ in range(more):
        if end < 0:
            break
        end = text.find("\n", end + 1)
    return len(text) if end < 0 else end


def _windows(text: str, hits: list[int], lines: int) -> Iterator[tuple[int, int]]:
    """The stretches of `text` a rule searches: each hit's line and `lines` more, merged."""
    start = end = -1
    for at in sorted(hits):
        if at <= end:
            continue  # inside the window already open; its line's end is reached too
        s, e = _line_start(text, at), _line_end(text, at, lines)
        if s <= end + 1:  # the next line: one search covers both
            end = e
            continue
        if end >= 0:
            yield start, end
        start, end = s, e
    if end >= 0:
        yield start, end


def _matches(rule: Rule, text: str, hits: list[int]) -> Iterator[re.Match[str]]:
    """The matches of `rule` at its keywords (anchored) or on their lines."""
    if not rule.anchored:
        for start, end in _windows(text, hits, rule.lines):
            yield from rule.regex.finditer(text, start, end)
        return
    done = -1
    for at in sorted(hits):
        match = rule.regex.match(text, at) if at >= done else None
        if match is not None:
            done = match.end()
            yield match


@dataclass(frozen=True)
class Found:
    """One match of one rule: the rule's rank in its set (lower wins an overlap)."""

    start: int
    end: int
    rank: int
    kind: str


@dataclass(frozen=True)
class RuleSet:
    """Rules in order of precedence, and the automaton of their keywords."""

    rules: tuple[Rule, ...]
    _by_keyword: dict[bytes, list[int]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for rank, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                self._by_keyword.setdefault(keyword.encode("ascii"), []).append(rank)

    @cached_property
    def _automaton(self) -> object:
        from ahocorasick_rs import BytesAhoCorasick, Implementation

        return BytesAhoCorasick(list(self._by_keyword), implementation=Implementation.DFA)

    @cached_property
    def _keywords(self) -> list[list[int]]:
        return list(self._by_keyword.values())

    def hits(self, text: str) -> dict[int, list[int]]:
        """Where each rule's keywords occur in `text`, by the rule's rank."""
        found: dict[int, list[int]] = {}
        keywords = self._keywords
        for index, start, _ in self._automaton.find_matches_as_indexes(  # type: ignore[attr-defined]
                folded(text), overlapping=True):
            for rank in keywords[index]:
                found.setdefault(rank, []).append(start)
        return found

    def find(self, text: str) -> Iterator[Found]:
        """Every secret the rules find in `text` (overlaps included), rule by rule."""
        for rank, hits in sorted(self.hits(text).items()):
            rule = self.rules[rank]
            for match in _matches(rule, text, hits):
                group = rule.secret_group(match)
                secret = match.group(group)
                if (secret and entropy(secret) > rule.entropy
                        and (rule.check is None or rule.check(match, group))):
                    yield Found(match.start(group), match.end(group), rank, rule.kind)


def joined(*sets: Sequence[Rule]) -> RuleSet:
    """One rule set of several lists of rules, the first list's rules taking precedence."""
    return RuleSet(tuple(rule for rules in sets for rule in rules))
