"""The built-in deny list of secrets: files that never reach a model unless a project opts in.

Pure: no I/O. A pattern is matched against the trailing components of a workspace-relative
path, ignoring case (a case-insensitive file system would serve `.ENV` as `.env`):

    .env                a file of that name at any depth
    *.pem               `*` stays within one name
    .aws/credentials    those last two components, at any depth
    .ssh/               a folder of that name at any depth: it and everything below it

A path is a secret when some pattern matches it that its project did not name, exactly as
written here, in `allow_secrets`. Nothing else can lift the deny list.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

# The deny list. Keep it in step with README.md ("Security") and the table test.
SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".gnupg/",
    ".aws/credentials",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".git-credentials",
    "credentials.json",
    "*secret*.json",
    "kubeconfig",
)


def _component(text: str) -> str:
    return "[^/]*".join(re.escape(piece) for piece in text.split("*"))


def _source(pattern: str) -> str:
    parts = "/".join(_component(p) for p in pattern.rstrip("/").split("/"))
    # A folder pattern covers everything below the folder; any pattern may sit at any depth.
    tail = "(?:/.*)?" if pattern.endswith("/") else ""
    return rf"(?:.*/)?{parts}{tail}"


@functools.lru_cache(maxsize=1)
def _each() -> tuple[tuple[str, re.Pattern[str]], ...]:
    flags = re.IGNORECASE | re.DOTALL
    return tuple((p, re.compile(_source(p) + r"\Z", flags)) for p in SECRET_PATTERNS)


def _quick() -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...], re.Pattern[str]]:
    """The last components of the file patterns, by kind: exact names (`.env`), prefixes
    (`id_rsa*`), suffixes (`*.pem`) and the rest (`*secret*.json`) as one regex."""
    exact: set[str] = set()
    prefixes: list[str] = []
    suffixes: list[str] = []
    others: list[str] = []
    for pattern in SECRET_PATTERNS:
        if pattern.endswith("/"):
            continue
        last = pattern.split("/")[-1].lower()
        if "*" not in last:
            exact.add(last)
        elif last.count("*") == 1 and last.endswith("*"):
            prefixes.append(last[:-1])
        elif last.count("*") == 1 and last.startswith("*"):
            suffixes.append(last[1:])
        else:
            others.append(_component(last))
    regex = re.compile(f"(?:{'|'.join(others) or '(?!)'})" + r"\Z", re.DOTALL)
    return frozenset(exact), tuple(prefixes), tuple(suffixes), regex


# A cheap first look that rules out nearly every path: most are no secret at all.
_EXACT, _PREFIXES, _SUFFIXES, _OTHERS = _quick()
_FOLDERS = tuple(f"/{p.lower()}" for p in SECRET_PATTERNS if p.endswith("/"))
_HIDDEN_FOLDERS = all(f.startswith("/.") for f in _FOLDERS)  # `.ssh/`, `.gnupg/`


def _maybe(path: str) -> bool:
    """False when no pattern can match `path`; True when one might."""
    low = path.lower()
    name = low[low.rfind("/") + 1 :]
    if name in _EXACT or name.startswith(_PREFIXES) or name.endswith(_SUFFIXES):
        return True
    if _OTHERS.match(name):
        return True
    if _HIDDEN_FOLDERS and not low.startswith(".") and "/." not in low:
        return False  # no folder of the list can be among a path's without a hidden one
    wrapped = f"/{low}/"
    for folder in _FOLDERS:  # a loop, not any(): this runs for every path of a workspace
        if folder in wrapped:
            return True
    return False


def secret_patterns(path: str) -> list[str]:
    """Every built-in pattern that matches a workspace-relative path, in list order."""
    if not path or not _maybe(path):
        return []
    return [text for text, regex in _each() if regex.match(path)]


def secret_pattern(path: str, allowed: Collection[str] = ()) -> str | None:
    """The first built-in pattern matching `path` that is not in `allowed`, or None.

    None means the path is not a secret for a project that allows `allowed`.
    """
    if not path or not _maybe(path):
        return None  # nearly every path: a scope asks it of each file it judges
    for text, regex in _each():
        if text not in allowed and regex.match(path):
            return text
    return None


def is_secret(path: str, allowed: Collection[str] = ()) -> bool:
    """Whether `path` is a secret for a project that allows the patterns in `allowed`."""
    return secret_pattern(path, allowed) is not None


def check_allowed(pattern: str) -> str:
    """`pattern` if it names a built-in secret pattern exactly, else ValueError."""
    if pattern not in SECRET_PATTERNS:
        raise ValueError(
            f"not a built-in secret pattern (expected one of: {', '.join(SECRET_PATTERNS)})"
        )
    return pattern
