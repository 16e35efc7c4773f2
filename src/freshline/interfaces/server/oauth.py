"""Access tokens of the team's authorization server, checked as an OAuth 2.1 resource
server must (the MCP authorization spec; RFC 9068's JWT access tokens; RFC 8725).

A token is judged in two steps. First its header, before any key is looked at
(`token_header`, pure): three base64url parts whose header names an accepted algorithm
(RS256 or ES256: `none` and HMAC are refused), a key (`kid`, a string), the type of an
access token (`typ`: `at+jwt`, RFC 9068 section 4; `[server] oauth_token_types` for an
issuer that types its tokens otherwise) and no critical extension (`crit`: none is
understood here). Then PyJWT verifies the signature with the issuer's key of that `kid`
(`jwks.IssuerKeys`), `iss` (the issuer as its metadata spells it), `aud` (the audience),
and `exp`, `nbf` and `iat` with `LEEWAY_S` seconds of leeway. Its `sub` names the user.

A token that fails is `Rejected`, saying whether it could be a guess (malformed, an
unknown key, a signature that does not verify, anything PyJWT or the cryptography
library raise of it: nothing a client sends is a 500) or is genuine but not valid here
(expired, for another audience or issuer): only guesses count against the client's
address.
"""

from __future__ import annotations

from dataclasses import dataclass

import jwt

from freshline.interfaces.server.issuer import Unreachable, discover, fetch_json
from freshline.interfaces.server.jwks import IssuerKeys, Rejected

ALGORITHMS = ("RS256", "ES256")
ACCESS_TOKEN_TYPES = ("at+jwt",)  # RFC 9068: `application/at+jwt`, its prefix left out
LEEWAY_S = 60
REFETCH_S = 1  # keys are fetched at most this often for tokens whose `kid` they lack
KID_MAX = 1024  # a longer key id is no issuer's
# PyJWT's errors for a token that is well formed and signed by the issuer, but not valid
# here or now: not a guess.
_GENUINE = (jwt.ExpiredSignatureError, jwt.ImmatureSignatureError, jwt.InvalidAudienceError,
            jwt.InvalidIssuerError, jwt.MissingRequiredClaimError)


@dataclass(frozen=True)
class Header:
    """What a token's header says that matters before its signature is checked."""

    alg: str
    kid: str


def media_type(typ: str) -> str:
    """A `typ` as the media type it names (RFC 7515 section 4.1.9: case-insensitive, and
    `application/` left out when it holds no slash)."""
    typ = typ.strip().lower()
    return typ if "/" in typ else f"application/{typ}"


def token_header(token: str, types: frozenset[str]) -> Header:
    """The header of `token` when it may be an access token of `types` (media types),
    else Rejected as a guess."""
    try:
        header = jwt.get_unverified_header(token)
    except Exception as exc:  # PyJWT raises several kinds of its own for a malformed one
        raise Rejected(f"not a JWT: {exc}", guess=True) from None
    if "crit" in header or "b64" in header:
        raise Rejected("the token asks for an extension (crit) not understood", guess=True)
    alg, kid, typ = header.get("alg"), header.get("kid"), header.get("typ")
    if alg not in ALGORITHMS:
        raise Rejected(f"algorithm {alg!r} is not accepted", guess=True)
    if not isinstance(kid, str) or not 0 < len(kid) <= KID_MAX:
        raise Rejected("the token names no key (kid)", guess=True)
    if not isinstance(typ, str) or media_type(typ) not in types:
        raise Rejected(f"type {typ!r} is not an access token's", guess=True)
    return Header(alg, kid)


@dataclass(frozen=True)
class AccessTokens:
    """Checks access tokens of one issuer (its keys) for one audience."""

    audience: str
    keys: IssuerKeys
    types: frozenset[str] = frozenset(map(media_type, ACCESS_TOKEN_TYPES))

    @property
    def issuer(self) -> str | None:
        """The issuer as its metadata spells it (None while it cannot be read)."""
        return self.keys.issuer.issuer if self.keys.issuer is not None else None

    async def ready(self, token: str) -> None:
        """Return once the issuer's keys are fresh enough to judge `token` (on the event
        loop, before `subject` is called in a worker thread)."""
        try:
            header = token_header(token, self.types)
        except Rejected:
            return  # judged without any key
        await self.keys.ready(header.kid)

    def subject(self, token: str) -> str:
        """The `sub` of a valid token (Rejected; Unreachable while the issuer's keys
        cannot be read)."""
        header = token_header(token, self.types)
        key = self.keys.key(header.kid)
        issuer = self.issuer
        if issuer is None:
            raise Unreachable("the authorization server's metadata is not read yet")
        try:
            claims = jwt.decode(token, key, algorithms=[header.alg], audience=self.audience,
                                issuer=issuer, leeway=LEEWAY_S,
                                options={"require": ["exp", "iss", "aud", "sub"]})
        except _GENUINE as exc:
            raise Rejected(str(exc), guess=False) from None
        except Exception as exc:  # a bad signature, a malformed claim, a key's own error
            raise Rejected(str(exc), guess=True) from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise Rejected("the token's sub is not a name", guess=False)
        return subject


def access_tokens(issuer: str, audience: str, refetch_s: float = REFETCH_S,
                  types: tuple[str, ...] = ACCESS_TOKEN_TYPES) -> AccessTokens:
    """The checker of `issuer`'s tokens for `audience`, its metadata and keys read now
    if they can be (`keys.error` says why not: they are tried again as tokens come)."""
    keys = IssuerKeys(lambda: discover(issuer), refetch_s, fetch_json)
    keys.load()
    return AccessTokens(audience, keys, frozenset(map(media_type, types)))
