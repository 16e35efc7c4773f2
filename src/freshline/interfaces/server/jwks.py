"""The issuer's signing keys (its metadata's `jwks_uri`), and when to fetch them again.

A token is judged with the keys held, unless they are due a fetch (`due`, pure): when
none are held, when they do not hold its `kid` (a rotation: the issuer signs with a new
key), or when they are older than `LIFESPAN_S` (so a key the issuer retired is dropped
within that time, and at once for every token after the fetch). Then the token waits
for the fetch; but when the last fetch failed, the next one runs behind the requests
(each judged with what is held): an issuer down costs no request a wait.

Fetches are made one at a time, at least `refetch_s` apart (an attacker's made-up `kid`s
cost the issuer one fetch per `refetch_s`, whatever their number), and a token waits for
the first fetch that begins after it arrived (`ready`): a made-up `kid` sent just before a
rotation delays the new key's first users by at most `refetch_s`, and never refuses
them (seen, issue 47: it locked them out for 60 s, 401 then 429). The waiting is done on
the event loop, not in a worker thread: a flood of unknown `kid`s ties up no thread.

Before the first fetch the issuer's metadata is read (`issuer.discover`); while it cannot
be, the keys cannot be either, and the issuer's tokens are answered 503 (freshline's own
tokens are served all the same).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from enum import Enum

import anyio.to_thread
import jwt

from freshline.interfaces.server.issuer import Fetch, Issuer, Unreachable

LIFESPAN_S = 300.0  # keys held longer than this are fetched again before the next token


class Due(Enum):
    """Whether the keys must be fetched before a token is judged."""

    NOTHING = "nothing"  # the keys held will do
    WAIT = "wait"  # fetch, and judge the token once the fetch is done
    BEHIND = "behind"  # fetch, but judge the token now (the last fetch failed)


class Rejected(Exception):
    """A token that does not hold; `guess` when it could be an attacker's guess."""

    def __init__(self, why: str, guess: bool) -> None:
        super().__init__(why)
        self.guess = guess


def due(kid: str, held: frozenset[str] | None, now: float, loaded_at: float,
        failing: bool) -> Due:
    """What a token naming `kid` needs, with the key ids `held` (None: none yet) fetched at
    `loaded_at`, the last fetch having failed (`failing`) or not."""
    if held is not None and kid in held and now - loaded_at < LIFESPAN_S:
        return Due.NOTHING
    return Due.BEHIND if failing else Due.WAIT


class IssuerKeys:
    """The keys of the issuer whose metadata `locate` reads, by `kid`."""

    def __init__(self, locate: Callable[[], Issuer], refetch_s: float, fetch: Fetch,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.locate = locate
        self.refetch_s = refetch_s
        self.fetch = fetch
        self.clock = clock
        self.error = ""  # why the last fetch failed ("": it did not)
        self.issuer: Issuer | None = None  # its metadata, once read
        self._keys: dict[str, jwt.PyJWK] | None = None
        self._loaded_at = -math.inf
        self._begun_at = -math.inf  # when the last fetch began
        self._running: asyncio.Future[None] | None = None

    def key(self, kid: str) -> jwt.PyJWK:
        """The key of `kid` as held now (Rejected as a guess when there is none;
        Unreachable while no keys could be read)."""
        keys = self._keys
        if keys is None:
            raise Unreachable(f"cannot read the signing keys: {self.error}")
        found = keys.get(kid)
        if found is None:
            raise Rejected(f"no signing key {kid!r}", guess=True)
        return found

    async def ready(self, kid: str) -> None:
        """Return once the keys are as fresh as a token naming `kid` needs (`due`)."""
        asked = self.clock()
        held = None if self._keys is None else frozenset(self._keys)
        need = due(kid, held, asked, self._loaded_at, bool(self.error))
        if need is Due.WAIT:
            await self._fetched_since(asked)
        elif need is Due.BEHIND and self._running is None \
                and asked - self._begun_at >= self.refetch_s:
            self._start()

    def load(self) -> None:
        """Fetch the metadata (first) and the keys now; on failure the keys held stay and
        `error` says why. Blocking: a worker thread's, or the start's."""
        try:
            if self.issuer is None:
                self.issuer = self.locate()
            found = jwt.PyJWKSet.from_dict(self.fetch(self.issuer.jwks_uri)).keys
        except Exception as exc:  # any answer the issuer gives: the keys held stay
            self.error = str(exc) or type(exc).__name__
            return
        self._keys = {k.key_id: k for k in found
                      if k.key_id and k.public_key_use in ("sig", None)}
        self._loaded_at, self.error = self.clock(), ""

    async def _fetched_since(self, asked: float) -> None:
        """Wait for a fetch that began at or after `asked` to end, starting one when none
        will, no sooner than `refetch_s` after the last began."""
        while self._begun_at < asked:
            running = self._running
            if running is not None:
                await asyncio.shield(running)
                continue
            wait = self._begun_at + self.refetch_s - self.clock()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self._start()
        if self._running is not None:
            await asyncio.shield(self._running)

    def _start(self) -> None:
        self._begun_at = self.clock()
        self._running = asyncio.ensure_future(self._fetch())

    async def _fetch(self) -> None:
        try:
            await anyio.to_thread.run_sync(self.load)
        finally:
            self._running = None
