"""The team's authorization server as a resource server reads it: its metadata (RFC 8414,
else OpenID Connect discovery), from the first document that names the issuer asked for,
for the issuer's own spelling (tokens' `iss` must be it) and its `jwks_uri`.

Documents are read where they are said to be (no redirect), within `FETCH_TIMEOUT_S`,
and any failure is `Unreachable`, in one line.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from freshline.errors import FreshlineError

FETCH_TIMEOUT_S = 10

Fetch = Callable[[str], Any]


class Unreachable(FreshlineError):
    """The authorization server could not be read (its metadata or its keys)."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # metadata and keys are read where they are said to be, nowhere else


def fetch_json(url: str) -> Any:
    """The JSON document at `url` (Unreachable, in one line, when it cannot be read)."""
    opener = urllib.request.build_opener(_NoRedirect())
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with opener.open(request, timeout=FETCH_TIMEOUT_S) as answer:
            return json.load(answer)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise Unreachable(f"{url}: {reason}") from None


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be, in the order MCP clients look: RFC 8414's
    well-known URL (the issuer's path after it), then OpenID Connect discovery's."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    if not path:
        return [f"{origin}/.well-known/oauth-authorization-server",
                f"{origin}/.well-known/openid-configuration"]
    return [f"{origin}/.well-known/oauth-authorization-server{path}",
            f"{origin}/.well-known/openid-configuration{path}",
            f"{origin}{path}/.well-known/openid-configuration"]


@dataclass(frozen=True)
class Issuer:
    """What the resource server needs of an issuer's metadata."""

    issuer: str  # as the metadata spells it: tokens' `iss` is compared with this
    jwks_uri: str


def same_issuer(a: str, b: str) -> bool:
    """Whether two issuer identifiers are the same: equal strings, or a root issuer with
    and without its trailing slash (as MCP clients compare them)."""
    return a == b or (a.rstrip("/") == b.rstrip("/") and not urlsplit(a).path.strip("/"))


def discover(issuer: str, fetch: Fetch = fetch_json) -> Issuer:
    """The issuer's metadata, from the first document that names this issuer
    (Unreachable when none does)."""
    seen = []
    for url in metadata_urls(issuer):
        try:
            metadata = fetch(url)
        except Unreachable as exc:
            seen.append(str(exc))
            continue
        named = metadata.get("issuer") if isinstance(metadata, dict) else None
        if not isinstance(named, str) or not same_issuer(named, issuer):
            seen.append(f"{url}: not the metadata of {issuer}")
            continue
        keys = metadata.get("jwks_uri")
        if not isinstance(keys, str):
            raise Unreachable(f"{url}: the metadata names no jwks_uri")
        return Issuer(named, keys)
    raise Unreachable(f"cannot read the authorization server's metadata ({'; '.join(seen)})")
