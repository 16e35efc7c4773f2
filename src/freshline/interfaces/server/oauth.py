"""Access tokens of the team's authorization server, checked as an OAuth 2.1 resource
server must (the MCP authorization spec; RFC 9068's JWT access tokens).

The issuer's metadata (RFC 8414, else OpenID Connect discovery) is read once, when the
server starts, for its `jwks_uri`; it must name the issuer it was asked for. A token is
accepted when PyJWT verifies its signature with the issuer's key of the token's `kid`
(RS256 or ES256, nothing else: `none` and HMAC are refused before any key is looked at),
`iss` is the issuer, `aud` holds the audience, and `exp`, `nbf` and `iat` hold with
`LEEWAY_S` seconds of leeway. Its `sub` names the user.

Keys (`IssuerKeys`) are fetched on first use and again after `KEYS_LIFESPAN_S` (keeping
the old ones if that fails, and trying again `refetch_s` later); a `kid` they do not hold
refetches them, at most once per `refetch_s` seconds, so a rotation is picked up at once
and a flood of made-up key ids costs one fetch a minute.

A token that fails is `Rejected`, saying whether it could be a guess (malformed, an
unknown key, a signature that does not verify) or is genuine but not valid here (expired,
for another audience or issuer): only guesses count against the client's address.
"""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jwt

from freshline.errors import FreshlineError

ALGORITHMS = ("RS256", "ES256")
LEEWAY_S = 60
KEYS_LIFESPAN_S = 3_600  # the keys are fetched again after this, whatever happened
REFETCH_S = 60  # an unknown `kid` refetches the keys at most this often
FETCH_TIMEOUT_S = 10
# PyJWT's errors for a token that is well formed and signed by the issuer, but not valid
# here or now: not a guess.
_GENUINE = (jwt.ExpiredSignatureError, jwt.ImmatureSignatureError, jwt.InvalidAudienceError,
            jwt.InvalidIssuerError, jwt.MissingRequiredClaimError)

Fetch = Callable[[str], Any]


class Unreachable(FreshlineError):
    """The authorization server could not be read (its metadata or its keys)."""


class Rejected(Exception):
    """A token that does not hold; `guess` when it could be an attacker's guess."""

    def __init__(self, why: str, guess: bool) -> None:
        super().__init__(why)
        self.guess = guess


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


class IssuerKeys:
    """The issuer's signing keys by `kid` (see the module docstring for when they are
    fetched)."""

    def __init__(self, jwks_uri: str, refetch_s: float = REFETCH_S,
                 fetch: Fetch = fetch_json, clock: Callable[[], float] = time.monotonic) -> None:
        self.jwks_uri = jwks_uri
        self.refetch_s = refetch_s
        self.fetch = fetch
        self.clock = clock
        self._keys: dict[str, jwt.PyJWK] | None = None
        self._loaded_at = -math.inf  # the last fetch that worked
        self._tried_at = -math.inf  # the last fetch tried
        self._refetched_at = -math.inf  # the last fetch an unknown kid caused
        self._error = ""
        self._lock = threading.Lock()

    def key(self, kid: str) -> jwt.PyJWK:
        """The key of `kid` (Rejected as a guess when the issuer has none; Unreachable
        while its keys cannot be read)."""
        with self._lock:
            now = self.clock()
            if self._stale(now):
                self._load(now)
            if self._keys is not None and kid not in self._keys \
                    and now - self._refetched_at >= self.refetch_s:
                self._refetched_at = now
                self._load(now)
            if self._keys is None:
                raise Unreachable(f"cannot read the signing keys: {self._error}")
            found = self._keys.get(kid)
        if found is None:
            raise Rejected(f"no key {kid!r} at {self.jwks_uri}", guess=True)
        return found

    def _stale(self, now: float) -> bool:
        """Whether the keys are due a fetch: never read, or past their lifespan; a fetch
        that failed is tried again `refetch_s` later (an issuer down costs no request a
        wait)."""
        old = self._keys is None or now - self._loaded_at >= KEYS_LIFESPAN_S
        return old and now - self._tried_at >= self.refetch_s

    def _load(self, now: float) -> None:
        """Fetch the keys; on failure the ones held (if any) stay."""
        self._tried_at = now
        try:
            found = jwt.PyJWKSet.from_dict(self.fetch(self.jwks_uri)).keys
        except (Unreachable, jwt.PyJWKSetError, jwt.PyJWKError, AttributeError) as exc:
            self._error = str(exc)
            return
        self._keys = {k.key_id: k for k in found
                      if k.key_id and k.public_key_use in ("sig", None)}
        self._loaded_at = now


@dataclass(frozen=True)
class AccessTokens:
    """Checks access tokens of one issuer for one audience."""

    issuer: str
    audience: str
    keys: IssuerKeys

    def subject(self, token: str) -> str:
        """The `sub` of a valid token (Rejected, or Unreachable when the keys cannot be
        read)."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.DecodeError as exc:
            raise Rejected(f"not a JWT: {exc}", guess=True) from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise Rejected(f"algorithm {alg!r} is not accepted", guess=True)
        if not isinstance(kid, str):
            raise Rejected("the token names no key (kid)", guess=True)
        try:
            claims = jwt.decode(
                token, self.keys.key(kid), algorithms=[alg], audience=self.audience,
                issuer=self.issuer, leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except _GENUINE as exc:
            raise Rejected(str(exc), guess=False) from None
        except jwt.PyJWTError as exc:
            raise Rejected(str(exc), guess=True) from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise Rejected("the token's sub is not a name", guess=False)
        return subject


def access_tokens(issuer: str, audience: str, refetch_s: float = REFETCH_S) -> AccessTokens:
    """The checker of `issuer`'s tokens for `audience`, its metadata read now
    (Unreachable when it cannot be)."""
    found = discover(issuer)
    return AccessTokens(found.issuer, audience, IssuerKeys(found.jwks_uri, refetch_s))
