"""Secrets found by what a text holds, and withheld: the content side of the deny list (pure).

`sensitive.py` keeps files out by name (`.env`, `*.pem`); this module finds keys pasted
into ordinary files. Its rules are gitleaks' rule set, read as data (`gitleaks.py`: some
200 token formats of as many services), and freshline's own (`secretforms.py`: key
blocks, JWTs, passwords in URLs, headers and `.netrc` entries, base64 that decodes to a
key or to `user:password`, and values assigned to a secret's name, which `secretguard.py`
tells from code). `secretrules.py` runs them: one pass finds every rule's keywords, and a
rule's regex runs only on the lines holding one, so a text with no candidates costs that
pass and no regex.

A finding on a line holding `freshline: allow-secret` (in any comment syntax), or on the
line after one that holds nothing else, is allowed. `withhold` replaces each finding by
`[secret withheld: <kind>]` and keeps its line breaks, so line numbers stay true.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from freshline.secretrules import RuleSet, entropy, joined

__all__ = ["ALLOW_MARKER", "Finding", "SecretKind", "Withheld", "count_note", "entropy",
           "find_secrets", "scan", "withhold"]

ALLOW_MARKER = "freshline: allow-secret"
WITHHELD = "[secret withheld: {kind}]"
WITHHELD_PREFIX = "[secret withheld: "


class SecretKind(str):
    """What a finding is: its rule's kind, the text of `[secret withheld: <kind>]`. Kinds
    come from data (gitleaks' rule ids), so this is an open set of names; the constants
    are the kinds freshline's own rules and code name."""

    __slots__ = ()

    @property
    def value(self) -> str:
        """The kind's name (read as an enum member's value is)."""
        return str(self)

    AWS_ACCESS_KEY: ClassVar[SecretKind]
    AWS_SECRET_KEY: ClassVar[SecretKind]
    OPENAI_KEY: ClassVar[SecretKind]
    ANTHROPIC_KEY: ClassVar[SecretKind]
    GITHUB_TOKEN: ClassVar[SecretKind]
    GITLAB_TOKEN: ClassVar[SecretKind]
    SLACK_TOKEN: ClassVar[SecretKind]
    SLACK_WEBHOOK: ClassVar[SecretKind]
    STRIPE_KEY: ClassVar[SecretKind]
    GOOGLE_API_KEY: ClassVar[SecretKind]
    HUGGINGFACE_TOKEN: ClassVar[SecretKind]
    NPM_TOKEN: ClassVar[SecretKind]
    PYPI_TOKEN: ClassVar[SecretKind]
    SENDGRID_KEY: ClassVar[SecretKind]
    PRIVATE_KEY: ClassVar[SecretKind]
    JWT: ClassVar[SecretKind]
    BASIC_AUTH: ClassVar[SecretKind]
    ASSIGNED_SECRET: ClassVar[SecretKind]


for _name in SecretKind.__annotations__:  # AWS_ACCESS_KEY = SecretKind("aws-access-key"), …
    setattr(SecretKind, _name, SecretKind(_name.lower().replace("_", "-")))


@dataclass(frozen=True, order=True)
class Finding:
    """One secret: its kind and where it lies in the text (`start` to `end`)."""

    start: int
    end: int
    kind: SecretKind


@cache
def rule_set() -> RuleSet:
    """Every rule, most specific first: freshline's own forms, gitleaks' rules, then
    values assigned to a secret's name (loaded on first use)."""
    from freshline import gitleaks, secretforms

    return joined(secretforms.RULES, gitleaks.rules(), (secretforms.ASSIGNED,))


def _candidates(text: str) -> Iterator[tuple[int, Finding]]:
    """Every match of every rule, with the rule's rank (lower wins an overlap)."""
    for found in rule_set().find(text):
        yield found.rank, Finding(found.start, found.end, SecretKind(found.kind))


def _allowed_lines(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each line a marker allows: its own, and the next when the
    marker line holds nothing else but comment punctuation."""
    spans: list[tuple[int, int]] = []
    at = text.find(ALLOW_MARKER)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        spans.append((start, end))
        rest = text[start:end].replace(ALLOW_MARKER, "")
        if end < len(text) and not re.sub(r"[\s#/;*<>!\-%]", "", rest):
            following = text.find("\n", end + 1)
            spans.append((end + 1, len(text) if following < 0 else following))
        at = text.find(ALLOW_MARKER, end)
    return spans


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, in order, none overlapping another, those on allowed lines
    left out. Overlapping matches are one finding spanning them all, of the kind of the
    most specific rule among them (the order of the table above)."""
    kept: list[Finding] = []
    ranks: list[int] = []
    for rank, f in sorted(_candidates(text), key=lambda c: (c[1].start, c[0])):
        if kept and f.start < kept[-1].end:
            best = f.kind if rank < ranks[-1] else kept[-1].kind
            kept[-1] = Finding(kept[-1].start, max(kept[-1].end, f.end), best)
            ranks[-1] = min(rank, ranks[-1])
        elif f.end > f.start:
            kept.append(f)
            ranks.append(rank)
    if kept and ALLOW_MARKER in text:
        allowed = _allowed_lines(text)
        kept = [f for f in kept if not any(s <= f.start <= e for s, e in allowed)]
    return kept


def withhold(text: str, findings: list[Finding]) -> str:
    """`text` with each finding replaced by `[secret withheld: <kind>]` followed by the
    line breaks it spanned (so every other line keeps its number)."""
    if not findings:
        return text
    out: list[str] = []
    at = 0
    for f in findings:
        out += [text[at:f.start], WITHHELD.format(kind=f.kind.value),
                "\n" * text.count("\n", f.start, f.end)]
        at = f.end
    out.append(text[at:])
    return "".join(out)


@dataclass(frozen=True)
class Withheld:
    """A text with its secrets withheld, and what they were."""

    text: str
    kinds: tuple[SecretKind, ...] = ()  # one per secret withheld, in order

    @property
    def count(self) -> int:
        """How many secrets were withheld."""
        return len(self.kinds)


def scan(text: str) -> Withheld:
    """`text` with every secret it holds withheld. Withholding one secret changes what
    stands beside its neighbours (a token glued to a key block ends where the block was),
    so the text is scanned again until nothing more is found."""
    kinds: list[SecretKind] = []
    findings = find_secrets(text)
    while findings:
        kinds += [f.kind for f in findings]
        text = withhold(text, findings)
        findings = find_secrets(text)
    return Withheld(text, tuple(kinds))


def count_note(kinds: tuple[SecretKind, ...] | list[SecretKind]) -> str:
    """How a result says what was withheld: `[2 secrets withheld: openai-key, jwt]`."""
    names = ", ".join(dict.fromkeys(k.value for k in kinds))
    noun = "secret" if len(kinds) == 1 else "secrets"
    return f"[{len(kinds)} {noun} withheld: {names}]"
