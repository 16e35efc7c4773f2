"""What a request's bearer credential is worth: who it signs in, or why it does not.

Two kinds are accepted. A token freshline made (`fl_…`, `freshline user add`) is looked
up by its hash (`session.users.authenticate`). Any other token is an access token of the
team's authorization server when one is configured (`oauth.AccessTokens`): its `sub`
names the user (`session.users.subject_user`). Users and grants are read from the store
on each request, so a removed user or a revoked grant holds from the next one. Before a
request's worker thread judges an access token, `prepare` waits on the event loop for
the issuer's keys it needs (`jwks.IssuerKeys.ready`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from freshline.interfaces.server.issuer import Unreachable
from freshline.interfaces.server.jwks import Rejected
from freshline.interfaces.server.oauth import AccessTokens
from freshline.session.users import TOKEN_PREFIX, Viewer, authenticate, subject_user, viewer_of
from freshline.store import Store


class Verdict(Enum):
    """What a credential is worth."""

    ACCEPTED = "accepted"  # it signs in a user: served as them
    NO_USER = "no user"  # valid, but it names nobody freshline knows: 403, no hint
    ABSENT = "absent"  # none was presented: 401 (an OAuth client's first request)
    GUESS = "guess"  # an unknown token, a bad signature, not a JWT: counted, 401 or 429
    LAPSED = "lapsed"  # the issuer's, but expired or for another audience: 401, not counted
    UNAVAILABLE = "unavailable"  # the issuer's keys cannot be read now: 503


@dataclass(frozen=True)
class SignIn:
    """A credential's verdict, and the viewer it signs in (ACCEPTED only)."""

    verdict: Verdict
    viewer: Viewer | None = None


@dataclass(frozen=True)
class Credentials:
    """Judges credentials against the store's users and, when given, the issuer's
    access tokens. Blocking (the store): call it in a worker thread, after `prepare`."""

    store: Store
    tokens: AccessTokens | None = None

    async def prepare(self, token: str | None) -> None:
        """Wait for what judging `token` needs that the event loop can wait for (the
        issuer's keys), so that no worker thread waits for it."""
        if token and self.tokens is not None and not token.startswith(TOKEN_PREFIX):
            await self.tokens.ready(token)

    def __call__(self, token: str | None) -> SignIn:
        """The verdict on `token` (the request's bearer token, or None)."""
        if not token:
            return SignIn(Verdict.ABSENT)
        if token.startswith(TOKEN_PREFIX) or self.tokens is None:
            user = authenticate(self.store, token)
        else:
            try:
                subject = self.tokens.subject(token)
            except Rejected as exc:
                return SignIn(Verdict.GUESS if exc.guess else Verdict.LAPSED)
            except Unreachable:
                return SignIn(Verdict.UNAVAILABLE)
            user = subject_user(self.store, subject)
            if user is None:
                return SignIn(Verdict.NO_USER)
        if user is None:
            return SignIn(Verdict.GUESS)
        return SignIn(Verdict.ACCEPTED, viewer_of(user))
