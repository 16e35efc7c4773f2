"""Bearer authentication in front of the MCP app, and a limit on failed attempts.

Every HTTP request must carry `Authorization: Bearer <token>`. The token is checked against
the store on each request (`session.users.authenticate`), so a removed user or a revoked
grant holds from the next request, whichever server process it reaches. A missing or
wrong token is answered 401 with an empty body (nothing says whether the user exists);
an address that failed `limit` times within `window_s` seconds is answered 429 until the
oldest of those failures ages out, without looking at its token at all. The viewer found
is handed to the tools in a context variable (`VIEWER`), which the SDK's request tasks
and worker threads inherit.
"""

from __future__ import annotations

import contextvars
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread

from freshline.session.users import OWNER, Viewer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

VIEWER: contextvars.ContextVar[Viewer] = contextvars.ContextVar("freshline_viewer", default=OWNER)
FAILURE_LIMIT = 10  # failed attempts per address ...
FAILURE_WINDOW_S = 60.0  # ... within this many seconds, before it is turned away
MAX_ADDRESSES = 10_000  # addresses remembered before the stale ones are dropped


@dataclass
class FailureLimiter:
    """Failed attempts per address within a sliding window (pure: the caller gives the
    time)."""

    limit: int = FAILURE_LIMIT
    window_s: float = FAILURE_WINDOW_S
    _failures: dict[str, deque[float]] = field(default_factory=dict)

    def retry_after(self, address: str, now: float) -> float:
        """Seconds until `address` may try again (0: it may now)."""
        seen = self._failures.get(address)
        if seen is None:
            return 0.0
        while seen and seen[0] <= now - self.window_s:
            seen.popleft()
        if not seen:
            del self._failures[address]
            return 0.0
        return seen[0] + self.window_s - now if len(seen) >= self.limit else 0.0

    def failed(self, address: str, now: float) -> None:
        """Count one failed attempt of `address` (addresses whose failures all aged out
        are forgotten once many are kept, so a scan of many addresses costs no memory)."""
        if len(self._failures) >= MAX_ADDRESSES:
            for stale in [a for a, seen in self._failures.items()
                          if seen[-1] <= now - self.window_s]:
                del self._failures[stale]
        self._failures.setdefault(address, deque()).append(now)


def bearer(scope: Scope) -> str | None:
    """The token of the request's `Authorization: Bearer …` header, if any."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            kind, _, token = value.decode("latin-1").strip().partition(" ")
            return token.strip() or None if kind.lower() == "bearer" else None
    return None


class BearerAuth:
    """ASGI middleware: authenticate every HTTP request, then run `app` as its viewer."""

    def __init__(self, app: ASGIApp, authenticate: Callable[[str | None], Viewer | None],
                 limiter: FailureLimiter | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.authenticate = authenticate
        self.limiter = limiter or FailureLimiter()
        self.clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan: the app's own start and stop
            return
        address = (scope.get("client") or ("unknown",))[0]
        wait = self.limiter.retry_after(address, self.clock())
        if wait > 0:
            await _answer(send, 429, [(b"retry-after", str(int(wait) + 1).encode())])
            return
        token = bearer(scope)
        viewer = await anyio.to_thread.run_sync(self.authenticate, token)
        if viewer is None:
            self.limiter.failed(address, self.clock())
            await _answer(send, 401, [(b"www-authenticate", b"Bearer")])
            return
        reset = VIEWER.set(viewer)
        try:
            await self.app(scope, receive, send)
        finally:
            VIEWER.reset(reset)


async def _answer(send: Send, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", b"0"), *headers]})
    await send({"type": "http.response.body", "body": b""})
