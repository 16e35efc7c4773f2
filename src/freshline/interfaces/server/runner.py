"""uvicorn, serving through freshline's own listener, and watched while it runs.

`GuardedServer` is uvicorn's server with its start-up's one difference: connections come
from `listener.Listener` (each admitted by the occupancy the moment it is accepted)
instead of asyncio's server. Once a second it checks that the listener still listens;
when it does not, it stops with `failure` set, and `serve` exits non-zero so that a
supervisor starts it again (seen: a server alive for hours with no listening socket).
A stop never waits more than `STOP_GRACE_S` for requests in flight.

The event loop's own errors are logged in one line, and never raise: a failure to log
must not end the loop. Every log record is throttled (`logs.py`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from typing import Any

import uvicorn

from freshline.interfaces.server.connections import ConnectionLimits, Guarded, served
from freshline.interfaces.server.listener import Listener
from freshline.interfaces.server.logs import throttle_logs
from freshline.interfaces.server.occupancy import Occupancy, Slot

logger = logging.getLogger(__name__)

STARTUP_FAILURE = 3  # uvicorn's exit status when the app's start-up fails
STOP_GRACE_S = 10  # requests still running this long after a stop is asked are cancelled
WATCH_TICKS = 10  # uvicorn ticks every 0.1 s: the listener is checked every second


class GuardedServer(uvicorn.Server):
    """uvicorn serving `sock` within `limits` (run it with `run()`)."""

    def __init__(self, config: uvicorn.Config, sock: socket.socket,
                 limits: ConnectionLimits) -> None:
        super().__init__(config)
        self.sock = sock
        self.limits = limits
        self.listener: Listener | None = None
        self.failure: str | None = None  # why it stopped on its own, if it did

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """The app's start-up, then the listener (what uvicorn's own start-up does, with
        freshline's listener in place of asyncio's server)."""
        await self.lifespan.startup()
        if self.lifespan.should_exit:
            sys.exit(STARTUP_FAILURE)
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(log_loop_error)
        throttle_logs()
        config, limits = self.config, self.limits

        def protocol(slot: Slot) -> Guarded:
            made = Guarded(config=config, server_state=self.server_state,
                           app_state=self.lifespan.state, _loop=loop)
            return served(made, slot, listener)

        listener = Listener(self.sock, Occupancy(limits.capacity()), protocol, limits.exempt,
                            config.ssl, limits.header_timeout_s)
        listener.start()
        self.listener = listener
        self.servers = [listener]  # type: ignore[list-item]  # uvicorn closes it at the end
        self.started = True

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick, and once a second: stop if the listener no longer listens."""
        listener = self.listener
        if counter % WATCH_TICKS == 0 and listener is not None and not listener.alive():
            self.failure = listener.failure or "the listening socket closed"
            return True
        return await super().on_tick(counter)


def log_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's exception handler: one line, and nothing it raises escapes."""
    try:
        exc = context.get("exception")
        logger.error("%s%s", context.get("message", "event loop error"),
                     f": {exc!r}" if exc is not None else "")
    except Exception:  # noqa: S110 - a failure to log must not end the loop
        pass
