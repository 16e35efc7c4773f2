"""The service's listening sockets, accepted from one thread that sleeps in `poll()`.

socketserver's `serve_forever` wakes every `poll_interval` to look for a shutdown; this
thread has no timeout: a pipe wakes it to stop. Each connection is handled on a thread of
its own, at most `MAX_CONNECTIONS` at once (one more is closed at once: a local process
opening connections without end costs the service nothing but that), each with a time
limit on every read and write, so a client that stops talking frees its thread.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from collections.abc import Callable

MAX_CONNECTIONS = 64
IO_TIMEOUT_S = 30.0  # a client silent this long is let go

Handler = Callable[[socket.socket], None]


class Acceptor:
    """Accepts on each listening socket and hands each connection to its handler."""

    def __init__(self, listeners: list[tuple[socket.socket, Handler]]) -> None:
        self._listeners = {sock.fileno(): (sock, handler) for sock, handler in listeners}
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="freshline-accept", daemon=True)

    def start(self) -> None:
        """Start accepting."""
        for sock, _handler in self._listeners.values():
            sock.setblocking(False)
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and close the listening sockets (connections being handled
        finish on their own threads)."""
        self._closing = True
        os.write(self._wake_w, b"x")
        if self._thread.is_alive():
            self._thread.join()
        for sock, _handler in self._listeners.values():
            sock.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        for fd in self._listeners:
            poller.register(fd, select.POLLIN)
        while not self._closing:
            for fd, _events in poller.poll():  # no timeout: asleep until a client comes
                if fd in self._listeners and not self._closing:
                    self._accept(*self._listeners[fd])

    def _accept(self, sock: socket.socket, handler: Handler) -> None:
        try:
            conn, _address = sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        if not self._slots.acquire(blocking=False):
            conn.close()
            return
        conn.setblocking(True)
        conn.settimeout(IO_TIMEOUT_S)
        threading.Thread(target=self._serve, args=(conn, handler), daemon=True,
                         name="freshline-conn").start()

    def _serve(self, conn: socket.socket, handler: Handler) -> None:
        try:
            with conn:
                handler(conn)
        except OSError:
            pass  # the client went away, or was too slow: nothing to answer
        finally:
            self._slots.release()
