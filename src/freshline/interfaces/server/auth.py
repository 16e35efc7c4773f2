"""Bearer authentication in front of the MCP app, and the limit on failed sign-ins.

Every HTTP request must carry `Authorization: Bearer <token>`; `credentials.Credentials`
says what it is worth. A valid one runs the app as its user: the viewer goes to the tools
in a context variable (`VIEWER`), which the SDK's request tasks and worker threads
inherit. The answers otherwise carry no body, so nothing says whether a user or a project
exists:

- no credential, or one that does not hold: 401, with the RFC 9728 challenge pointing at
  the resource metadata when an authorization server is configured;
- a guess (an unknown token, a forged signature) from an address past the limit
  (`limiter.FailureLimiter`): 429 with `retry-after`; a valid credential is never
  refused, whatever its address did before;
- a valid access token of nobody freshline knows: 403;
- the issuer's keys unreadable: 503.

The client's address is the peer's, or what a trusted proxy says (`addresses`). The
metadata itself (`resource.ProtectedResource`) is served here too, to anyone.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

import anyio.to_thread

from freshline.interfaces.server.addresses import Network, client_address, limit_key
from freshline.interfaces.server.credentials import SignIn, Verdict
from freshline.interfaces.server.limiter import FailureLimiter
from freshline.interfaces.server.resource import ProtectedResource, is_metadata_path
from freshline.session.users import OWNER, Viewer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

VIEWER: contextvars.ContextVar[Viewer] = contextvars.ContextVar("freshline_viewer", default=OWNER)
UNAVAILABLE_RETRY_S = 10  # what a 503 tells a client to wait while the issuer is unreachable


def bearer(scope: Scope) -> str | None:
    """The token of the request's `Authorization: Bearer …` header, if any."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            kind, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() or None if kind.lower() == "bearer" else None
    return None


def forwarded_for(scope: Scope) -> list[str]:
    """Every X-Forwarded-For header's value, in order."""
    return [value.decode("latin-1") for name, value in scope.get("headers", ())
            if name.lower() == b"x-forwarded-for"]


class BearerAuth:
    """ASGI middleware: authenticate every HTTP request, then run `app` as its viewer."""

    def __init__(self, app: ASGIApp, sign_in: Callable[[str | None], SignIn],
                 limiter: FailureLimiter, resource: ProtectedResource | None = None,
                 proxies: Sequence[Network] = (),
                 prepare: Callable[[str | None], Awaitable[None]] | None = None) -> None:
        self.app = app
        self.sign_in = sign_in
        self.prepare = prepare
        self.limiter = limiter
        self.resource = resource
        self.proxies = tuple(proxies)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the app's own start and stop
            return
        if self.resource is not None and is_metadata_path(scope.get("path", "")):
            await self._metadata(scope, send)
            return
        token = bearer(scope)
        if self.prepare is not None:
            await self.prepare(token)
        signed = await anyio.to_thread.run_sync(self.sign_in, token)
        if signed.viewer is not None:
            reset = VIEWER.set(signed.viewer)
            try:
                await self.app(scope, receive, send)
            finally:
                VIEWER.reset(reset)
            return
        if signed.verdict is Verdict.NO_USER:
            await _answer(send, 403)

        elif signed.verdict is Verdict.UNAVAILABLE:
            await _answer(send, 503, [(b"retry-after", str(UNAVAILABLE_RETRY_S).encode())])
        elif signed.verdict is Verdict.GUESS:
            await self._guess(scope, send)
        else:
            await _answer(send, 401, self._challenge(signed.verdict is not Verdict.ABSENT))

    async def _guess(self, scope: Scope, send: Send) -> None:
        peer = (scope.get("client") or ("unknown",))[0]
        key = limit_key(client_address(peer, forwarded_for(scope), self.proxies))
        wait = await anyio.to_thread.run_sync(self.limiter.guessed, key)
        if wait > 0:
            await _answer(send, 429, [(b"retry-after", str(int(wait) + 1).encode())])
        else:
            await _answer(send, 401, self._challenge(presented=True))

    def _challenge(self, presented: bool) -> Headers:
        if self.resource is None:
            return [(b"www-authenticate", b"Bearer")]
        error = "invalid_token" if presented else None
        return [(b"www-authenticate", self.resource.challenge(error))]

    async def _metadata(self, scope: Scope, send: Send) -> None:
        assert self.resource is not None
        cors = [(b"access-control-allow-origin", b"*"),
                (b"access-control-allow-methods", b"GET, OPTIONS")]
        if scope.get("method") == "OPTIONS":
            await _answer(send, 204, cors)
        elif scope.get("method") in ("GET", "HEAD"):
            body = self.resource.document()
            await _answer(send, 200, [(b"content-type", b"application/json"), *cors], body)
        else:
            await _answer(send, 405, [(b"allow", b"GET, OPTIONS")])


async def _answer(send: Send, status: int, headers: Headers | None = None,
                  body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
