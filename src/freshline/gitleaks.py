"""gitleaks' rule set, read as data: `data/gitleaks.json` (pure once loaded).

The rules are gitleaks' default configuration, vendored verbatim as `data/gitleaks.toml`
(MIT, `data/gitleaks-LICENSE`) and loaded from the JSON `scripts/gitleaks_rules.py` makes
of it (parsing the TOML costs ~95 ms, the JSON ~1 ms). Each rule keeps gitleaks' meaning:
its keywords, its secret group (else the first group that matched), more than `entropy`
bits a character, the global allowlist (regexes, stop words) and its own (on the secret,
the match or the line). Their regexes are Go's (RE2): `python_regex` reads them the way
Go does (ASCII classes, a `(?i)` in mid pattern, POSIX classes, `\\z`).

Left out: rules that need a file's path (`scan` sees text only), and the few whose form
freshline's own rules find better (`REPLACED`, each with why). A rule's id is the kind of
its findings, except those freshline has always named otherwise (`KINDS`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache
from typing import Any

from freshline.secretrules import Check, Rule

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "gitleaks.json")

# gitleaks' rules freshline finds with one of its own, and why.
REPLACED = {
    "private-key": "freshline's also finds a key inside a JSON string and a block cut short",
    "jwt": "freshline's decodes the header (the keyword `ey` is in most lines of code)",
    "generic-api-key": "freshline's assignments have the identifier guard",
}
# The kinds freshline named before it took gitleaks' rules, by gitleaks' rule id.
KINDS = {
    "aws-access-token": "aws-access-key",
    "openai-api-key": "openai-key",
    "anthropic-api-key": "anthropic-key",
    "anthropic-admin-api-key": "anthropic-key",
    "github-pat": "github-token",
    "github-oauth": "github-token",
    "github-app-token": "github-token",
    "github-refresh-token": "github-token",
    "github-fine-grained-pat": "github-token",
    "gitlab-pat": "gitlab-token",
    "slack-bot-token": "slack-token",
    "slack-user-token": "slack-token",
    "slack-app-token": "slack-token",
    "slack-legacy-bot-token": "slack-token",
    "slack-legacy-workspace-token": "slack-token",
    "slack-legacy-token": "slack-token",
    "slack-config-access-token": "slack-token",
    "slack-config-refresh-token": "slack-token",
    "slack-webhook-url": "slack-webhook",
    "stripe-access-token": "stripe-key",
    "gcp-api-key": "google-api-key",
    "huggingface-access-token": "huggingface-token",
    "huggingface-organization-api-token": "huggingface-token",
    "npm-access-token": "npm-token",
    "pypi-upload-token": "pypi-token",
    "sendgrid-api-token": "sendgrid-key",
}

# gitleaks ends most tokens before a quote, a space, `;`, an escaped line break or the end;
# a token followed by `,`, `:` or `)` is as much a secret, so any character that cannot
# continue it ends it here.
_TOKEN_END = (r"""(?:[\x60'"\s;]|\\[nr]|$)""", r"(?![A-Za-z0-9_+/=-])")
_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "xdigit": "0-9A-Fa-f",
          "upper": "A-Z", "lower": "a-z", "space": r"\t\n\v\f\r ", "word": r"\w",
          "punct": r"!-/:-@\[-`{-~"}


def _tokens(pattern: str) -> Iterator[str]:
    """`pattern` cut into escapes (`\\x`), whole bracket classes and single characters."""
    at = 0
    while at < len(pattern):
        end = at + 1
        if pattern[at] == "\\":
            end += 1
        elif pattern[at] == "[":
            end += pattern[end:end + 1] == "^"
            end += pattern[end:end + 1] == "]"  # a `]` first is a literal
            while end < len(pattern) and pattern[end] != "]":
                if pattern[end] == "\\":
                    end += 2
                elif pattern.startswith("[:", end):
                    end = pattern.index(":]", end) + 2
                else:
                    end += 1
            end += 1
        yield pattern[at:end]
        at = end


def _class(token: str) -> str:
    for name, chars in _POSIX.items():
        token = token.replace(f"[:{name}:]", chars)
    return token


def _flags(tokens: list[str], at: int) -> str | None:
    """The flags of a `(?flags)` starting at `tokens[at]`, if one does."""
    if tokens[at:at + 2] != ["(", "?"]:
        return None
    end = at + 2
    while end < len(tokens) and tokens[end].isalpha():
        end += 1
    return "".join(tokens[at + 2:end]) if end < len(tokens) and tokens[end] == ")" else None


def _scoped(tokens: list[str]) -> list[str]:
    """Go's `(?i)` in mid pattern sets the flag up to the end of its group, through later
    alternatives too; Python takes flags only at the start, or scoped: `(?i:…)`."""
    out: list[str] = []
    at = 0
    while at < len(tokens):
        flags = _flags(tokens, at) if out else None
        if not flags:
            out.append(tokens[at])
            at += 1
            continue
        depth, at = 0, at + 3 + len(flags)
        branches: list[list[str]] = [[]]
        while at < len(tokens) and not (depth == 0 and tokens[at] == ")"):
            depth += (tokens[at] == "(") - (tokens[at] == ")")
            if depth == 0 and tokens[at] == "|":
                branches.append([])
            else:
                branches[-1].append(tokens[at])
            at += 1
        out.append("|".join(f"(?{flags}:{''.join(_scoped(b))})" for b in branches))
    return out


def python_regex(go: str) -> str:
    """The Go (RE2) regex `go` as Python's `re` reads it (with `re.ASCII`, as Go's `\\w`,
    `\\s` and `\\b` are ASCII)."""
    tokens = [_class(t) if t.startswith("[") else r"\Z" if t == r"\z" else t
              for t in _tokens(go.replace(*_TOKEN_END))]
    return "".join(_scoped(tokens))


def _allowed(allowlist: Mapping[str, Any]) -> Callable[[str, str, str], bool]:
    """Whether an allowlist allows a finding (secret, match, line). A condition on paths or
    commits cannot hold for a text alone: an `AND` allowlist holding one allows nothing."""
    if allowlist.get("condition") == "AND" and (allowlist.get("paths")
                                                 or allowlist.get("commits")):
        return lambda secret, match, line: False
    regexes = [re.compile(python_regex(r), re.ASCII) for r in allowlist.get("regexes", ())]
    stopwords = tuple(allowlist.get("stopwords", ()))
    target = {"match": 1, "line": 2}.get(allowlist.get("regexTarget", ""), 0)

    def allowed(secret: str, match: str, line: str) -> bool:
        text = (secret, match, line)[target]
        low = secret.lower()
        return (any(r.search(text) for r in regexes)
                or any(word in low for word in stopwords))

    return allowed


def _check(allowlists: Sequence[Mapping[str, Any]]) -> Check:
    allows = [_allowed(a) for a in allowlists]

    def check(match: re.Match[str], group: int | str) -> bool:
        text, (start, end) = match.string, match.span()
        line_end = text.find("\n", end)
        line = text[text.rfind("\n", 0, start) + 1:len(text) if line_end < 0 else line_end]
        secret = match.group(group)
        return not any(allowed(secret, match.group(0), line) for allowed in allows)

    return check


def _lines(pattern: str) -> int:
    """How many lines after its keyword's a match of `pattern` may reach."""
    return 6 if re.search(r"\\[rn]\]|\[\\s\\S|\(\?s", pattern) else 1


def rules_of(config: Mapping[str, Any]) -> list[Rule]:
    """The rules of a gitleaks configuration that a text alone can be checked against."""
    shared = config.get("allowlist")
    rules = []
    for data in config.get("rules", ()):
        if "regex" not in data or "path" in data or data["id"] in REPLACED:
            continue
        allowlists = ([shared] if shared else []) + list(data.get("allowlists", ()))
        pattern = python_regex(data["regex"])
        rules.append(Rule(
            KINDS.get(data["id"], data["id"]), tuple(k.lower() for k in data["keywords"]),
            pattern, re.ASCII, data.get("secretGroup"), float(data.get("entropy", 0.0)),
            _check(allowlists) if allowlists else None, _lines(pattern)))
    return rules


@cache
def rules() -> list[Rule]:
    """gitleaks' rules, as vendored (loaded once)."""
    with open(DATA, encoding="utf-8") as file:
        return rules_of(json.load(file)["config"])
