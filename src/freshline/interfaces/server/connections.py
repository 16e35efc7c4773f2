"""Time limits and a per-address limit on the server's connections.

uvicorn closes a kept-alive connection that stays idle (`timeout_keep_alive`), but waits
forever for a request that arrives slowly, or never: seventy clients trickling header
bytes would hold seventy connections open. `guarded_protocol` is uvicorn's HTTP/1.1
protocol (h11) with two more timers and a count:

- from a connection's start, or from the first byte of a request on a kept-alive one,
  the headers must be in within `header_timeout_s`;
- once they are, the body must be in within `body_timeout_s`;
- while the app handles the request, no timer runs (a long conversion is the app's own
  business); between requests, uvicorn's keep-alive timer does;
- an address with `per_address` connections open has its next one closed at once
  (trusted proxies, which carry many clients' connections, are exempt).

A connection over its time is closed; an app waiting for its body hears a disconnect.
Which timer runs is `phase_of` the client's h11 state (pure).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from freshline.interfaces.server.addresses import Network, parse, trusted


@dataclass(frozen=True)
class ConnectionLimits:
    """The `[server]` limits on connections (seconds, and connections per address)."""

    header_timeout_s: float = 10
    body_timeout_s: float = 30
    keepalive_timeout_s: float = 30  # clients' pools give theirs up first (httpx: 5 s)
    per_address: int = 64
    exempt: tuple[Network, ...] = ()  # trusted proxies: no limit per address


class Phase(Enum):
    """Where a connection's current request is, as far as time limits go."""

    IDLE = "idle"  # between requests: uvicorn's keep-alive timer
    HEADERS = "headers"  # a request began: its headers are due
    BODY = "body"  # the headers are in: the body is due
    HANDLING = "handling"  # the request is in (or the connection is ending): no timer


def phase_of(their_state: Any, arrived: bool) -> Phase:
    """The phase of a connection whose client side is in h11 state `their_state`, just
    after bytes `arrived` from the client (or after a response was sent)."""
    if their_state is h11.IDLE:
        return Phase.HEADERS if arrived else Phase.IDLE
    if their_state is h11.SEND_BODY:
        return Phase.BODY
    return Phase.HANDLING


class Occupancy:
    """Open connections per address (used on the event loop only)."""

    def __init__(self, limit: int, exempt: tuple[Network, ...]) -> None:
        self.limit = limit
        self.exempt = exempt
        self.open: Counter[str] = Counter()

    def admit(self, address: str) -> bool:
        """Count a new connection from `address`; False (and not counted) past the limit."""
        if not trusted(parse(address), self.exempt):
            if self.open[address] >= self.limit:
                return False
        self.open[address] += 1
        return True

    def leave(self, address: str) -> None:
        """A connection from `address` closed."""
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


def guarded_protocol(limits: ConnectionLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with `limits` (one count of connections per class:
    make one per server)."""
    occupancy = Occupancy(limits.per_address, limits.exempt)
    timeouts = {Phase.HEADERS: limits.header_timeout_s, Phase.BODY: limits.body_timeout_s}

    class Guarded(H11Protocol):
        _phase = Phase.IDLE
        _timer: asyncio.TimerHandle | None = None
        _counted: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            address = self.client[0] if self.client else "unknown"
            if not occupancy.admit(address):
                transport.close()
                return
            self._counted = address
            self._follow(arrived=True)  # a new connection owes its first request's headers

        def connection_lost(self, exc: Exception | None) -> None:
            self._set(Phase.HANDLING)
            if self._counted is not None:
                occupancy.leave(self._counted)
                self._counted = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow(arrived=True)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._follow(arrived=False)

        def _follow(self, arrived: bool) -> None:
            if not self.transport.is_closing():
                self._set(phase_of(self.conn.their_state, arrived))

        def _set(self, phase: Phase) -> None:
            # A timer runs from the moment its phase begins: bytes trickling in keep it.
            if phase is self._phase:
                return
            self._phase = phase
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if phase in timeouts:
                self._timer = self.loop.call_later(timeouts[phase], self._expire)

        def _expire(self) -> None:
            self._timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return Guarded
