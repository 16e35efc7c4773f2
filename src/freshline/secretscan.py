"""Secrets found by what a text holds, and withheld: the content side of the deny list (pure).

`sensitive.py` keeps files out by name (`.env`, `*.pem`); this module finds keys pasted
into ordinary files. The rules are those of detect-secrets' plugins and gitleaks' rule set
(token formats with a fixed prefix, private key blocks, JWTs, passwords in URLs), plus one
for high-entropy strings assigned to a secret-like name (`API_TOKEN = "…"`):

    aws-access-key     AKIA…/ASIA… (20 characters)    github-token   ghp_… gho_… github_pat_…
    aws-secret-key     40 characters after aws…secret  gitlab-token   glpat-…
    openai-key         sk-proj-… sk-…T3BlbkFJ…         slack-token    xoxb-… xoxp-…
    anthropic-key      sk-ant-api03-…                  slack-webhook  hooks.slack.com/services/…
    stripe-key         sk_live_… rk_test_…             google-api-key AIza…
    huggingface-token  hf_…                            npm-token      npm_…
    pypi-token         pypi-AgEIcHlwaS5vcmc…           sendgrid-key   SG.….…
    private-key        -----BEGIN … PRIVATE KEY----- through its END line
    jwt                eyJ….eyJ….… whose header decodes to a JSON object
    basic-auth         the password of scheme://user:password@host
    assigned-secret    a string of 10+ characters with high entropy, no spaces, assigned
                       to a name holding secret, token, password, api_key, … (not a
                       placeholder, path, URL, UUID, or a name ending in id, hash, url, …)

Each rule runs only when a literal it needs occurs in the text (`in` on str is much faster
than any regex), so a text with no candidates costs a few substring searches; its regex is
compiled then, on first use, not when the module loads (every delivery passes this scan,
and most texts never need most rules).

A finding on a line holding `freshline: allow-secret` (in any comment syntax), or on the
line after one that holds nothing else, is allowed. `withhold` replaces each finding by
`[secret withheld: <kind>]` and keeps its line breaks, so line numbers stay true.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cache

ALLOW_MARKER = "freshline: allow-secret"
WITHHELD = "[secret withheld: {kind}]"
WITHHELD_PREFIX = "[secret withheld: "


class SecretKind(StrEnum):
    """What a finding is; the text of `[secret withheld: <kind>]`."""

    AWS_ACCESS_KEY = "aws-access-key"  # an AWS access key id
    AWS_SECRET_KEY = "aws-secret-key"  # the 40-character secret that goes with it
    OPENAI_KEY = "openai-key"  # OpenAI API keys, legacy and project
    ANTHROPIC_KEY = "anthropic-key"  # Anthropic API and admin keys
    GITHUB_TOKEN = "github-token"  # personal, OAuth, app and fine-grained tokens
    GITLAB_TOKEN = "gitlab-token"  # GitLab personal access tokens
    SLACK_TOKEN = "slack-token"  # Slack bot, user and app tokens
    SLACK_WEBHOOK = "slack-webhook"  # a Slack incoming-webhook URL
    STRIPE_KEY = "stripe-key"  # Stripe secret and restricted keys
    GOOGLE_API_KEY = "google-api-key"  # Google Cloud API keys
    HUGGINGFACE_TOKEN = "huggingface-token"  # Hugging Face access tokens
    NPM_TOKEN = "npm-token"  # npm access tokens
    PYPI_TOKEN = "pypi-token"  # PyPI upload tokens
    SENDGRID_KEY = "sendgrid-key"  # SendGrid API keys
    PRIVATE_KEY = "private-key"  # a PEM or PGP private key block
    JWT = "jwt"  # a JSON Web Token
    BASIC_AUTH = "basic-auth"  # a password inside a URL
    ASSIGNED_SECRET = "assigned-secret"  # a high-entropy string assigned to a secret's name


@dataclass(frozen=True, order=True)
class Finding:
    """One secret: its kind and where it lies in the text (`start` to `end`)."""

    start: int
    end: int
    kind: SecretKind


Check = Callable[[re.Match[str]], bool]


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """`re.compile`, once per pattern and on first use (flags are inline: `(?i)`)."""
    return re.compile(pattern)


@dataclass(frozen=True)
class _Rule:
    """A token format. The regex is tried only where one of its anchors occurs (found
    with `str.find`, far faster than a regex search), and must match starting there."""

    kind: SecretKind
    anchors: tuple[str, ...]
    pattern: str
    check: Check | None = None  # a last look at a match (None: every match counts)
    group: int | str = 0  # the part of the match that is the secret
    cased: bool = False  # anchors are looked for in lower, Title and UPPER case too
    bounded: bool = True  # no word character may stand right before the anchor

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern."""
        return _compiled(self.pattern)


def _jwt_header(match: re.Match[str]) -> bool:
    head = match.group(0).split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(decoded, dict)


def _mixed_case(match: re.Match[str]) -> bool:
    token = match.group(0)
    return token.lower() != token and token.upper() != token


_PLACEHOLDER = r"(?i)^(?:[$%<{*]|\.{3})|[x*]{4}|^(?:pass(?:word)?|pwd|secret|token)$"


def _real_password(match: re.Match[str]) -> bool:
    """A password after a scheme (`https:` before the `://`), not a placeholder."""
    before = match.string[match.start() - 1] if match.start() else ""
    return before.isalnum() and _compiled(_PLACEHOLDER).search(match.group("v")) is None


_E = r"(?![A-Za-z0-9_])"  # a token ends before any word character

_RULES: tuple[_Rule, ...] = (
    _Rule(SecretKind.PRIVATE_KEY, ("-----BEGIN",), (
        r"(?s)-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.{0,20000}?-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:\r?\n[ \t]*[A-Za-z0-9+/=:,. -]{16,})+)"), bounded=False),
    _Rule(SecretKind.ANTHROPIC_KEY, ("sk-ant-",), (
        r"sk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{40,}")),
    _Rule(SecretKind.OPENAI_KEY, ("sk-",), (
        r"sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"
        r"|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}")),
    _Rule(SecretKind.AWS_ACCESS_KEY, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), (
        r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E)),
    _Rule(SecretKind.AWS_SECRET_KEY, ("aws",), (
        r"(?i:aws)[A-Za-z0-9_.-]{0,20}?(?i:secret|key)[A-Za-z0-9_.-]{0,20}['\"]?[ \t]*"
        r"(?:=>|:=|=|:)[ \t]*['\"]?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        group="v", cased=True, bounded=False),
    _Rule(SecretKind.GITHUB_TOKEN, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
          (r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})"
                     + _E)),
    _Rule(SecretKind.GITLAB_TOKEN, ("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),
    _Rule(SecretKind.SLACK_TOKEN, ("xox",), (
        r"xox[abposr]-(?:\d+-)+[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")),
    _Rule(SecretKind.SLACK_WEBHOOK, ("https://hooks.slack.com/",), (
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"),
        bounded=False),
    _Rule(SecretKind.STRIPE_KEY, ("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
          r"[rs]k_(?:live|test)_[0-9A-Za-z]{24,}"),
    _Rule(SecretKind.GOOGLE_API_KEY, ("AIza",), (
        r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    _Rule(SecretKind.HUGGINGFACE_TOKEN, ("hf_",), r"hf_[A-Za-z]{34}" + _E,
          check=_mixed_case),
    _Rule(SecretKind.NPM_TOKEN, ("npm_",), r"npm_[A-Za-z0-9]{36}" + _E),
    _Rule(SecretKind.PYPI_TOKEN, ("pypi-AgEIcHlwaS5vcmc",), (
        r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}")),
    _Rule(SecretKind.SENDGRID_KEY, ("SG.",), (
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _E)),
    _Rule(SecretKind.JWT, ("eyJ",), (
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), check=_jwt_header),
    # The anchor is the `://` after a scheme; `_real_password` checks the scheme.
    _Rule(SecretKind.BASIC_AUTH, ("://",), (
        r"://[^\s:/?#@'\"<>]{1,200}:(?P<v>[^\s/?#@'\"<>]{1,200})@"),
        check=_real_password, group="v", bounded=False),
)


def _word_before(text: str, at: int) -> bool:
    return at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")


def _occurrences(text: str, anchors: tuple[str, ...], cased: bool = False) -> list[int]:
    """Where any of `anchors` occurs in `text` (in lower, Title and UPPER case too when
    `cased`), in order. Substring searches: much faster than a regex over the text."""
    if cased and text.isascii():
        text = text.lower()  # same length, and one pass per anchor
    elif cased:
        anchors = tuple({v for a in anchors for v in (a.lower(), a.title(), a.upper())})
    found: set[int] = set()
    for anchor in anchors:
        at = text.find(anchor)
        while at >= 0:
            found.add(at)
            at = text.find(anchor, at + 1)
    return sorted(found)


def _rule_matches(rule: _Rule, text: str) -> Iterator[re.Match[str]]:
    """The matches of `rule` that start at one of its anchors, left to right."""
    done = 0
    for at in _occurrences(text, rule.anchors, rule.cased):
        if at < done or (rule.bounded and _word_before(text, at)):
            continue
        match = rule.regex.match(text, at)
        if match is not None and (rule.check is None or rule.check(match)):
            done = match.end()
            yield match


# -- assignments -----------------------------------------------------------------------------

_KEYWORD = (r"(?i)secret|token|passw(?:or)?d|passphrase|pwd|api[_-]?key|apikey|access[_-]?key"
            r"|private[_-]?key|credential|auth[_-]?(?:key|token)")
_KEYWORD_ANCHORS = ("secret", "token", "passw", "passphrase", "pwd", "key", "credential")
_NAME_REST = r"[A-Za-z0-9_.-]*"
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_TAIL = (
    r"(?m)['\"]?[ \t]*(?::[ \t]*[A-Za-z_][\w\[\], |.]{0,40}?[ \t]*)?"
    r"(?:=>|:=|=|:)[ \t]*"
    r"(?:(?P<q>['\"`])(?P<qv>[^\s'\"`\\]{10,512})(?P=q)"
    r"|(?P<uv>[A-Za-z0-9+/=_.~-]{10,512})[ \t]*(?:[#;].*)?$)")
_WORDS = r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])"
# A name whose last word is one of these holds an id, a reference or a description.
_NOT_SECRET_NAMES = frozenset(
    "id ids uuid guid sha hash digest checksum fingerprint version type kind name names file "
    "path dir url uri endpoint host length len size count format header field env var prefix "
    "suffix label help hint description regex pattern policy rule expiry expires ttl".split())
_UUID = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}\Z"
# Code and words: snake_case, SCREAMING_CASE, kebab-case, dotted.paths.to_names.
_IDENTIFIER = (
    r"[a-z]+(?:[-_.][a-z]+)*|[A-Z]+(?:[-_.][A-Z]+)*"
    r"|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_FILLER = ("example", "placeholder", "your", "changeme", "dummy", "redacted", "withheld",
           "xxxx", "****", "todo", "sample", "<", "${", "{{", "%(", "://")
_SEQUENCES = ("0123456789abcdefghijklmnopqrstuvwxyz", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
              "abcdefghijklmnopqrstuvwxyz0123456789", "1234567890")


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character (0.0 for an empty text)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _is_sequence(value: str) -> bool:
    return any(value in s for s in _SEQUENCES)


def looks_secret(name: str, value: str) -> bool:
    """Whether `value`, assigned to `name` (already known to hold a secret's keyword), is
    a secret: long enough, random enough, and not an id, a path, a placeholder or code."""
    words = _compiled(_WORDS).findall(name)
    if words and words[-1].lower() in _NOT_SECRET_NAMES:
        return False
    low = value.lower()
    if any(f in low for f in _FILLER) or value.startswith(("/", "./", "../", "~/", "$")):
        return False
    if (_compiled(_UUID).match(value) or _compiled(_IDENTIFIER).fullmatch(value)
            or _is_sequence(value)):
        return False
    return entropy(value) >= min(3.0, math.log2(len(value)) - 0.7)


def _assignments(text: str) -> Iterator[tuple[int, int]]:
    """The spans of values assigned to secret-like names. Most keywords are followed by
    no assignment at all, so the tail is tried before the name is looked at."""
    done = -1
    for at in _occurrences(text, _KEYWORD_ANCHORS, cased=True):
        if at < done:
            continue
        end = done = _compiled(_NAME_REST).match(text, at).end()  # type: ignore[union-attr]
        tail = _compiled(_TAIL).match(text, end)
        if tail is None:
            continue
        start = at
        while start > 0 and text[start - 1] in _NAME_CHARS:
            start -= 1
        group = "qv" if tail.group("qv") is not None else "uv"
        name = text[start:end]
        if _compiled(_KEYWORD).search(name) and looks_secret(name, tail.group(group)):
            yield tail.start(group), tail.end(group)


# -- finding and withholding -------------------------------------------------------------------


def _candidates(text: str) -> Iterator[tuple[int, Finding]]:
    """Every match of every rule, with the rule's rank (lower wins an overlap)."""
    for rank, rule in enumerate(_RULES):
        for match in _rule_matches(rule, text):
            yield rank, Finding(match.start(rule.group), match.end(rule.group), rule.kind)
    for start, end in _assignments(text):
        yield len(_RULES), Finding(start, end, SecretKind.ASSIGNED_SECRET)


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
