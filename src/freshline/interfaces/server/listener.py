"""The server's listening socket, accepting only what `occupancy.Occupancy` has room for.

asyncio's own servers accept up to a whole backlog at each turn of the loop and make each
connection's transport later: a flood opens more files than the process may (seen: from
20 addresses at an open-files limit of 1024, `accept()` failed, and the log record of that
failure needed a file too, which ended the loop and the server). Here each connection
is admitted or refused the moment it is accepted, so connections never hold more than
`Capacity.total + spare` files: a full server gives up its stalest waiting connection for
each new one, and with nothing to give up (or too many still closing) it does not read
the socket at all (clients wait in the kernel's backlog, in turn) until one closes.

Nothing the socket raises stops the listener: out of files (other processes' too) it
rests and tries again; anything else is logged in one line. `alive()` says whether it
still listens; the server exits when it does not, so a supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from enum import Enum

from freshline.interfaces.server.addresses import Network, limit_key, parse, trusted
from freshline.interfaces.server.occupancy import Occupancy, Phase, Slot

logger = logging.getLogger(__name__)

BATCH = 64  # connections accepted at most per turn of the loop (others get theirs)
REST_S = 0.5  # how long to wait after the system ran out of files or memory
OUT_OF_RESOURCES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
# What accept() reports of one connection's network trouble (accept(2) on Linux: "treat
# them like EAGAIN"): that connection is gone, the socket listens on.
ONE_CONNECTION = (errno.ECONNABORTED, errno.EPROTO, errno.ENOPROTOOPT, errno.EHOSTDOWN,
                  errno.ENONET, errno.EHOSTUNREACH, errno.EOPNOTSUPP, errno.ENETUNREACH,
                  errno.ENETDOWN, errno.EPERM)

ProtocolFactory = Callable[[Slot], asyncio.Protocol]


class State(Enum):
    """What the listener is doing."""

    READING = "reading"  # accepting connections as they come
    FULL = "full"  # no room, nothing to give up: waiting for a connection to close
    RESTING = "resting"  # the system ran out of files or memory: trying again soon
    CLOSED = "closed"  # stopped (or its socket failed): no longer listening


class Listener:
    """Accepts connections on `sock` into `occupancy`, each served by a protocol that
    `factory` makes for its slot (and that reports its phases to `move` and its end to
    `release`). Runs on the event loop; uvicorn closes it as one of its servers."""

    def __init__(self, sock: socket.socket, occupancy: Occupancy, factory: ProtocolFactory,
                 exempt: tuple[Network, ...] = (), tls: ssl.SSLContext | None = None,
                 handshake_s: float | None = None) -> None:
        self.sock = sock
        self.occupancy = occupancy
        self.factory = factory
        self.exempt = exempt
        self.tls = tls
        self.handshake_s = handshake_s if tls is not None else None
        self.state = State.CLOSED
        self.failure: str | None = None  # why it stopped listening on its own
        self._loop = asyncio.get_running_loop()
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = float("inf")
        self._closed = asyncio.Event()

    def start(self) -> None:
        """Begin accepting."""
        self.sock.setblocking(False)
        self._read()

    def alive(self) -> bool:
        """Whether it still listens (and, full while there is room again, reads again)."""
        if self.state is State.CLOSED or self.sock.fileno() < 0:
            return False
        if self.state is State.FULL and self.occupancy.accepting():
            self._read()
        return True

    def close(self) -> None:
        """Stop accepting (the connections open stay open)."""
        if self.state is not State.CLOSED:
            self._unread()
            self.state = State.CLOSED
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        self._closed.set()

    async def wait_closed(self) -> None:
        """Return once `close` was called."""
        await self._closed.wait()

    def move(self, slot: Slot, phase: Phase) -> None:
        """A connection's request entered `phase`."""
        self.occupancy.move(slot, phase, self._loop.time())
        self._plan()

    def release(self, slot: Slot) -> None:
        """A connection closed (its file is given back)."""
        self.occupancy.release(slot)
        if self.state is State.FULL and self.occupancy.accepting():
            self._read()

    def _read(self) -> None:
        if self.state is not State.READING:
            self.state = State.READING
            self._loop.add_reader(self.sock.fileno(), self._readable)

    def _unread(self) -> None:
        if self.state is State.READING:
            self._loop.remove_reader(self.sock.fileno())

    def _readable(self) -> None:
        for _ in range(BATCH):
            if not self.occupancy.accepting():
                self._unread()
                self.state = State.FULL
                return
            try:
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in ONE_CONNECTION:
                    continue
                self._failed(exc)
                return
            self.take(conn, address)

    def _failed(self, exc: OSError) -> None:
        self._unread()
        if exc.errno in OUT_OF_RESOURCES:
            logger.warning("accepting connections: %s (trying again in %s s)",
                           exc.strerror, REST_S)
            self.state = State.RESTING
            self._loop.call_later(REST_S, self._rested)
        else:
            self.state = State.CLOSED
            self.failure = f"the listening socket failed: {exc.strerror or exc}"
            logger.error("%s", self.failure)

    def _rested(self) -> None:
        if self.state is State.RESTING:
            self._read()

    def take(self, conn: socket.socket, address: object) -> None:
        """Admit or refuse a connection just accepted from `address` (as accept() gives it)."""
        peer = address[0] if isinstance(address, tuple) else str(address)
        admission = self.occupancy.admit(limit_key(peer), trusted(parse(peer), self.exempt),
                                         self._loop.time())
        if admission.evicted is not None:
            admission.evicted.close()
        if admission.slot is None:
            conn.close()
            return
        slot = admission.slot
        task = self._loop.create_task(self._loop.connect_accepted_socket(
            lambda: self.factory(slot), conn, ssl=self.tls,
            ssl_handshake_timeout=self.handshake_s))
        slot.close = task.cancel  # until its protocol is made: then its transport's
        task.add_done_callback(lambda done: self._connected(done, conn, slot))
        self._plan()

    def _connected(self, task: asyncio.Task[object], conn: socket.socket, slot: Slot) -> None:
        if task.cancelled() or task.exception() is not None:
            conn.close()  # the transport closed it already, or never took it
            self.release(slot)

    def _plan(self) -> None:
        """Time the next sweep for the next slot to expire (sooner as the server fills)."""
        due = self.occupancy.next_deadline()
        if due is None or due >= self._sweep_at:
            return
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep_at = due
        self._sweep = self._loop.call_at(due, self._expire)

    def _expire(self) -> None:
        self._sweep, self._sweep_at = None, float("inf")
        for slot in self.occupancy.expired(self._loop.time()):
            slot.close()
        self._plan()
