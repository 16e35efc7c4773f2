"""freshline's own secret rules: the forms gitleaks' rule set does not find (pure).

gitleaks' rules (`gitleaks.py`) find token formats with a fixed shape. These find
secrets by where they stand and by what they decode to:

    private-key         a PEM/OpenSSH/PGP block, also inside a JSON string, also cut short,
                        also base64-encoded (a Kubernetes secret's `tls.key: LS0tLS1CRUdJTi…`)
    jwt                 eyJ….eyJ….… whose header decodes to a JSON object
    openai-key          sk-proj-… sk-svcacct-… (gitleaks wants T3BlbkFJ inside)
    anthropic-key       sk-ant-api03-… of any length
    aws-secret-key      40 characters assigned to an aws…secret / aws…key name
    azure-storage-key   AccountKey=…== and SharedAccessKey=… in a connection string
    discord-bot-token   M…/N…/O… . six . 27+, on a line that says discord, bot or token
    telegram-bot-token  123456789:AA… (35 characters after the colon)
    docker-auth         "auth": "<base64 of user:password>" (a docker config's `auths`)
    netrc-password      machine … login … password … in any file, on one line or several
    http-auth           Authorization: Basic <base64 of user:password> | Bearer <token>
    basic-auth          the password of scheme://user:password@host (user may be empty)
    assigned-secret     a value assigned to a name holding secret, token, password,
                        api_key, … quoted, unquoted (up to a space, quote, `&`, `,`, `;`),
                        or a YAML block scalar on the next line, unless `secretguard` says
                        it is code, an id or a placeholder

Each rule runs where one of its keywords occurs (`secretrules.py`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from urllib.parse import unquote

from freshline import secretguard
from freshline.secretrules import Rule


def _decoded(value: str, urlsafe: bool = False) -> bytes | None:
    padded = value + "=" * (-len(value) % 4)
    try:
        if urlsafe:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _jwt_header(match: re.Match[str], group: int | str) -> bool:
    decoded = _decoded(match.group(group).split(".", 1)[0], urlsafe=True)
    try:
        return decoded is not None and isinstance(json.loads(decoded), dict)
    except ValueError:
        return False


def _user_password(match: re.Match[str], group: int | str) -> bool:
    """Base64 of `user:password` (HTTP Basic, a docker config's `auth`)."""
    decoded = _decoded(match.group(group))
    try:
        user, colon, password = (decoded or b"").decode("utf-8").partition(":")
    except UnicodeDecodeError:
        return False
    return (bool(colon) and user.isprintable() and len(password) >= 3
            and not secretguard.is_placeholder(password))


def _pem_key(match: re.Match[str], group: int | str) -> bool:
    decoded = _decoded(match.group(group)[:96])
    return decoded is not None and b"PRIVATE KEY" in decoded


def _random(match: re.Match[str], group: int | str) -> bool:
    value = match.group(group)
    return (not secretguard.is_placeholder(value) and not secretguard.is_identifier(value)
            and secretguard.random_enough(value))


def _bearer(match: re.Match[str], group: int | str) -> bool:
    if match.group("scheme").lower() == "basic":
        return _user_password(match, group)
    return _random(match, group)


def _real_password(match: re.Match[str], group: int | str) -> bool:
    """A password after a scheme (`https:` before the `://`), not a placeholder nor an
    example (`foo:bar`, `a%20secret`: prose has spaces, passwords seldom do)."""
    before = match.string[match.start() - 1] if match.start() else ""
    value = unquote(match.group(group))
    return (before.isalnum() and len(value) >= 4 and " " not in value
            and re.search(r"^[$%<{*]|\.{3}|[x*]{4}", value) is None
            and not secretguard.is_placeholder(value))


def _key_body(match: re.Match[str], group: int | str) -> bool:
    """A key block holds key material (not the header and footer as strings in code)."""
    return re.search(r"[A-Za-z0-9+/=]{16,}", match.group(group)[10:]) is not None


_NAME_REST = re.compile(r"[A-Za-z0-9_.-]*")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_KEYWORD = re.compile(
    r"(?i)secret|token|passw(?:or)?d|passphrase|pwd|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|credential|creds|auth[_-]?(?:key|token)|master[_-]?key")
_VALUE_END = r"""\s'"`&,;<>"""
_ASSIGNMENT = (
    r"[A-Za-z0-9_.-]*['\"]?[ \t]*(?::[ \t]*[A-Za-z_][\w\[\], |.]{0,40}?[ \t]*)?"
    r"(?:=>|:=|\?=|=|:)[ \t]*"
    r"(?:'([^\s'\\]{1,512})'|\"([^\s\"\\]{1,512})\"|`([^\s`\\]{1,512})`"
    r"|[|>][-+]?[ \t]*\r?\n[ \t]+([^\s'\"`]{1,512})[ \t]*(?:\r?\n|$)"
    rf"|([^{_VALUE_END}]{{0,511}}[^{_VALUE_END})\]}}:.]))")


def _assigned(match: re.Match[str], group: int | str) -> bool:
    """The name around the keyword holds a secret's keyword, and the value looks secret."""
    text = match.string
    start, end = match.start(), _NAME_REST.match(text, match.start()).end()  # type: ignore[union-attr]
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    name = text[start:end]
    return (_KEYWORD.search(name) is not None
            and secretguard.looks_secret(name, match.group(group), quoted=group != 5))


_END = r"(?![A-Za-z0-9_])"  # a token ends before any word character

RULES: tuple[Rule, ...] = (
    Rule("private-key", ("-----begin",), (
        r"(?s)-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.{0,20000}?-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:\r?\n[ \t]*[A-Za-z0-9+/=:,. -]{16,})+)"), group=0, check=_key_body, lines=400),
    Rule("private-key", ("ls0tls1crudjti",), r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{40,}={0,2}",
         group=0, check=_pem_key),
    Rule("anthropic-key", ("sk-ant-",), r"\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{40,}"),
    Rule("openai-key", ("sk-",), (
        r"\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}"
        r"|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}")),
    Rule("aws-secret-key", ("aws",), (
        r"(?i:aws)[A-Za-z0-9_.-]{0,20}?(?i:secret|key)[A-Za-z0-9_.-]{0,20}['\"]?[ \t]*"
        r"(?:=>|:=|=|:)[ \t]*['\"]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")),
    Rule("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
         group=0, check=_jwt_header),
    Rule("azure-storage-key", ("accountkey=", "sharedaccesskey="), (
        r"(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,88}={0,2})")),
    Rule("discord-bot-token", ("discord", "bot", "token"), (
        r"\b([MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})" + _END),
         check=_random),
    Rule("telegram-bot-token", (":aa",), r"\b(\d{8,10}:AA[A-Za-z0-9_-]{33})" + _END),
    Rule("docker-auth", ('"auth"',), r'"auth"[ \t]*:[ \t]*"([A-Za-z0-9+/]{6,}={0,2})"',
         check=_user_password),
    Rule("netrc-password", ("machine",), (
        r"\bmachine[ \t]+\S+(?:\s+(?:login|account)[ \t]+\S+)*\s+password[ \t]+([^\s#]{3,})"),
         check=_random, lines=3),
    Rule("http-auth", ("bearer", "basic"), (
        r"(?i:\b(?P<scheme>bearer|basic))[ \t]+([A-Za-z0-9._~+/-]{8,}=*)(?![A-Za-z0-9._~+/=-])"),
         group=2, check=_bearer),
    Rule("basic-auth", ("-u", "--user"), (
        r"(?:\s|^)(?:-u|--user)(?:[ \t]+|=)['\"]?[^\s:'\"]+:([^\s'\"]{3,})"), check=_random),
    # The anchor is the `://` after a scheme; `_real_password` checks the scheme.
    Rule("basic-auth", ("://",), r"://[^\s:/?#@'\"<>]{0,200}:([^\s/?#@'\"<>]{1,200})@",
         check=_real_password),
)

# Matched at each keyword, not searched for: the name reaches back from there (`_assigned`).
ASSIGNED = Rule(
    "assigned-secret", ("secret", "token", "passw", "passphrase", "pwd", "key", "credential",
                        "creds"),
    _ASSIGNMENT, check=_assigned, anchored=True)
