"""A bounded pool of connections, on the standard library.

At most `size` connections are open at once; a caller takes one (an idle one, else a new
one while fewer than `size` are open, else it waits for one to come back) and gives it
back. New connections are made in the caller's thread, so what the server says on a
failed connect (a wrong password, no server) reaches that caller at once, word for word;
there is no background thread. A connection given back broken is closed, and so are the
idle ones beside it (opened before it broke, they most likely broke with it: a server
restart), so the next caller connects afresh rather than failing on each in turn.

The pool knows nothing of a database: it is handed how to open and close a connection.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

C = TypeVar("C")

DEFAULT_SIZE = 8  # connections per store URL per process (`[store] pool_size`)
MAX_SIZE = 1000  # far above any server's max_connections: a larger number is a typo


class PoolTimeout(Exception):
    """No connection came free within the wait."""


class PoolClosed(Exception):
    """The pool was closed (at process exit)."""


class Pool(Generic[C]):
    """At most `size` connections made by `opener`, shared by every thread."""

    def __init__(
        self, opener: Callable[[], C], closer: Callable[[C], None], size: int
    ) -> None:
        if size < 1:
            raise ValueError(f"a pool holds at least one connection, not {size}")
        self.size = size
        self._open = opener
        self._close = closer
        self._idle: list[C] = []  # the most recently given back last
        self._opened = 0  # idle + taken (+ being opened)
        self._closed = False
        self._cond = threading.Condition()

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._closed

    @property
    def opened(self) -> int:
        """How many connections are open (idle or taken)."""
        return self._opened

    @property
    def idle(self) -> int:
        """How many connections wait, open, to be taken."""
        return len(self._idle)

    def take(self, wait_s: float) -> C:
        """A connection: an idle one, else a new one, else the first given back within
        `wait_s` seconds (PoolTimeout). The opener's exception passes through."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while True:
                if self._closed:
                    raise PoolClosed("the pool is closed")
                if self._idle:
                    return self._idle.pop()
                if self._opened < self.size:
                    self._opened += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolTimeout(f"all {self.size} connections busy for {wait_s:g} s")
                self._cond.wait(left)
        try:
            return self._open()
        except BaseException:
            self._forget(1)
            raise

    def give(self, conn: C, reusable: bool = True) -> None:
        """Give back a taken connection; one not `reusable` (broken, or in a state a next
        caller must not inherit) is closed, and the idle ones with it."""
        with self._cond:
            if reusable and not self._closed:
                self._idle.append(conn)
                self._cond.notify()
                return
            dropped = [conn]
            if not reusable:
                dropped += self._idle
                self._idle = []
        for each in dropped:
            self._close(each)
        self._forget(len(dropped))

    @contextmanager
    def connection(self, wait_s: float, reusable: Callable[[C], bool]) -> Iterator[C]:
        """A connection for the block, given back after it (closed if `reusable(conn)`
        says it must not be reused)."""
        conn = self.take(wait_s)
        try:
            yield conn
        finally:
            self.give(conn, reusable(conn))

    def close(self) -> None:
        """Close the idle connections; the taken ones close when given back. Taking from
        a closed pool raises PoolClosed."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._cond.notify_all()
        for conn in idle:
            self._close(conn)
        self._forget(len(idle))

    def _forget(self, count: int) -> None:
        with self._cond:
            self._opened -= count
            self._cond.notify(count)
