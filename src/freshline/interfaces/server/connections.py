"""Time limits and caps on the server's connections, and the protocol that keeps them.

uvicorn closes a kept-alive connection that stays idle (`timeout_keep_alive`), but waits
forever for a request that arrives slowly, or never: seventy clients trickling header
bytes would hold seventy connections open. `Guarded` is uvicorn's HTTP/1.1 protocol (h11)
that tells the listener (`listener.py`) where each request is, and the listener's
`occupancy.Occupancy` times it and gives it up:

- from a connection's start, or from the first byte of a request on a kept-alive one,
  the headers must be in within `header_timeout_s`;
- once they are, the body must be in within `body_timeout_s`;
- while the app handles the request, no timer runs (a long conversion is the app's own
  business); between requests the connection may idle `keepalive_timeout_s`;
- these limits shrink as the server fills (`total` connections at most), and a client
  key with `per_address` connections open has its stalest waiting one given up for its
  next (trusted proxies, which carry many clients' connections, are exempt).

A connection given up is closed; an app waiting for its body hears a disconnect. Which
phase a connection is in is `phase_of` the client's h11 state (pure).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from freshline.interfaces.server.addresses import Network
from freshline.interfaces.server.occupancy import Capacity, Phase, Slot

if TYPE_CHECKING:
    from freshline.interfaces.server.listener import Listener


@dataclass(frozen=True)
class ConnectionLimits:
    """The `[server]` limits on connections (seconds, and connections)."""

    header_timeout_s: float = 10
    body_timeout_s: float = 30
    keepalive_timeout_s: float = 30  # clients' pools give theirs up first (httpx: 5 s)
    per_address: int = 64
    exempt: tuple[Network, ...] = ()  # trusted proxies: no limit per address
    total: int = 4096  # at most, and below the open-files limit (`files.connection_room`)

    def capacity(self) -> Capacity:
        """The occupancy these limits allow."""
        return Capacity(self.total, self.per_address, {
            Phase.HEADERS: self.header_timeout_s, Phase.BODY: self.body_timeout_s,
            Phase.IDLE: self.keepalive_timeout_s})


def phase_of(their_state: Any, arrived: bool) -> Phase:
    """The phase of a connection whose client side is in h11 state `their_state`, just
    after bytes `arrived` from the client (or after a response was sent)."""
    if their_state is h11.IDLE:
        return Phase.HEADERS if arrived else Phase.IDLE
    if their_state is h11.SEND_BODY:
        return Phase.BODY
    return Phase.HANDLING


class Guarded(H11Protocol):
    """uvicorn's h11 protocol for one listener's slot (`served` makes it)."""

    slot: Slot
    listener: Listener

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.slot.close = transport.close

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.release(self.slot)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow(arrived=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow(arrived=False)

    def _follow(self, arrived: bool) -> None:
        if not self.transport.is_closing():
            self.listener.move(self.slot, phase_of(self.conn.their_state, arrived))


def served(protocol: Guarded, slot: Slot, listener: Listener) -> Guarded:
    """`protocol`, made to serve `slot` of `listener`."""
    protocol.slot = slot
    protocol.listener = listener
    return protocol
