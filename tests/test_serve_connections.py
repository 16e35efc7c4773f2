"""`freshline serve`'s connections (issue 30, and item 1 of issue 33): headers within a
time limit, a body within another, idle keep-alive closed, at most N open connections per
address; a busy port is one line and exit 1, and `serving …` is printed only once the
port is bound.

Most tests run the server's own uvicorn set-up (`http.server_for`) in a thread with a
small ASGI app; one runs a `serve` process against 70 clients slow to send headers.
"""

from __future__ import annotations

import asyncio
import resource
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from freshline.config.settings import ServerSettings
from freshline.interfaces.server.connections import ConnectionLimits, Phase, phase_of
from freshline.interfaces.server.http import server_for
from freshline.interfaces.server.listen import Listen, bind
from freshline.interfaces.server.listener import Listener
from freshline.interfaces.server.occupancy import Occupancy, Slot
from freshline.interfaces.server.runner import GuardedServer
from tests.conftest import Workspace, wait_for
from tests.serving import free_port, start_server, stop_server

SHORT = ConnectionLimits(header_timeout_s=1, body_timeout_s=1, keepalive_timeout_s=1,
                         per_address=100)
PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
WHOLE = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"


async def echo(scope: Any, receive: Any, send: Any) -> None:
    """Answer with the request's body length, once the whole body came (or `lost`)."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def running(limits: ConnectionLimits, app: Any = echo) -> Iterator[int]:
    """The server's uvicorn set-up around `app` in a thread; yields its port."""
    with started(limits, app) as (server, thread):
        yield server.sock.getsockname()[1]


@contextmanager
def started(limits: ConnectionLimits,
            app: Any = echo) -> Iterator[tuple[GuardedServer, threading.Thread]]:
    """The server's uvicorn set-up around `app`, and the thread it runs in."""
    listen = Listen("127.0.0.1", 0)
    sock = bind(listen)
    server = server_for(app, listen, limits, sock)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, "the server to start")
        yield server, thread
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    sock.setblocking(False)
    return sock


def readable(sock: socket.socket, timeout_s: float = 0) -> bool:
    """Whether `sock` has bytes (or its end) to read within `timeout_s` (poll: the flood's
    descriptors are past select()'s 1024)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def closed(sock: socket.socket) -> bool:
    """Whether the server closed `sock` (what it sent before is read and dropped)."""
    while readable(sock):
        try:
            if not sock.recv(65536):
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True
    return False


def request(port: int, body: bytes = b"hello", source: str = "127.0.0.1") -> bytes:
    """One whole request on a fresh connection from `source`; the response's raw bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10,
                                  source_address=(source, 0)) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def exchange(sock: socket.socket) -> bytes:
    """Send a whole request on `sock`; the response's first bytes."""
    sock.send(WHOLE)
    assert readable(sock, 10), "no response"
    return sock.recv(65536)


def trickle(socks: list[socket.socket], seconds: float) -> list[socket.socket]:
    """Send each socket one more header byte every 0.2 s for up to `seconds`; the sockets
    the server has not closed by then."""
    deadline = time.monotonic() + seconds
    open_ = list(socks)
    while open_ and time.monotonic() < deadline:
        for sock in list(open_):
            try:
                sock.send(b"x")
            except OSError:
                open_.remove(sock)
                continue
            if closed(sock):
                open_.remove(sock)
        time.sleep(0.2)
    return open_


def test_a_connection_that_sends_nothing_is_dropped() -> None:
    with running(SHORT) as port, connect(port) as sock:
        wait_for(lambda: closed(sock), "the silent connection to be dropped", timeout=20)


def test_a_body_slower_than_its_time_limit_is_dropped() -> None:
    with running(SHORT) as port, connect(port) as sock:
        sock.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"y" * 10)
        wait_for(lambda: closed(sock), "the slow body to be dropped", timeout=20)


def test_an_idle_keep_alive_connection_is_closed() -> None:
    with running(SHORT) as port, connect(port) as sock:
        sock.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        wait_for(lambda: closed(sock), "the idle connection to be closed", timeout=20)


def test_a_server_whose_listening_socket_fails_stops_and_says_why() -> None:
    """Seen (issue 47): after a flood, serve stayed alive for good with no listening
    socket. A listener that stops listening now stops the server, which exits non-zero
    (`http.serve`), so that a supervisor starts it again."""
    with started(SHORT) as (server, thread):
        server.sock.shutdown(socket.SHUT_RDWR)  # accept() fails from now on: EINVAL
        thread.join(30)
        assert not thread.is_alive()
        assert server.failure == "the listening socket failed: Invalid argument"


def test_the_server_keeps_an_idle_connection_longer_than_clients_do() -> None:
    """Seen (issue 30, load): a bench client died on ReadError when the server closed a
    kept-alive connection at the moment the client sent on it: both gave up an idle
    connection after 5 s. A client's pool must give it up first."""
    import httpx2  # the MCP SDK's HTTP client

    client_keeps = httpx2.Limits().keepalive_expiry
    assert client_keeps is not None
    for limit in (ConnectionLimits().keepalive_timeout_s, ServerSettings().keepalive_timeout_s):
        assert limit > client_keeps


def test_a_handler_slower_than_the_time_limits_is_not_cut_off() -> None:
    async def slow(scope: Any, receive: Any, send: Any) -> None:
        import anyio

        if scope["type"] == "http":
            await receive()
            await anyio.sleep(2.5)  # longer than every limit of SHORT
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"4")]})
            await send({"type": "http.response.body", "body": b"done"})

    with running(SHORT, slow) as port:
        assert request(port, b"").endswith(b"\r\n\r\ndone")


def test_a_connection_past_the_limit_per_address_takes_the_place_of_its_stalest() -> None:
    """Seen (issue 47): behind an address that held its 64 connections open, a client got
    1 request of 50 through. The newest connection of an address at its limit now takes
    the place of that address's stalest one still waiting for its request."""
    limits = ConnectionLimits(header_timeout_s=60, per_address=5)
    with running(limits) as port:
        held = [connect(port, "127.0.0.21") for _ in range(5)]
        newest = connect(port, "127.0.0.21")
        wait_for(lambda: closed(held[0]), "the stalest connection to be given up")
        other = connect(port, "127.0.0.22")  # another address has its own count
        assert not any(closed(s) for s in [*held[1:], newest, other])
        assert exchange(newest).startswith(b"HTTP/1.1 200 ")
        for sock in [*held, newest, other]:
            sock.close()


def test_a_connection_whose_request_is_handled_is_never_given_up() -> None:
    release, handling = threading.Event(), threading.Semaphore(0)

    async def held(scope: Any, receive: Any, send: Any) -> None:
        import anyio

        if scope["type"] == "http":
            await receive()
            handling.release()
            await anyio.to_thread.run_sync(release.wait)
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})

    limits = ConnectionLimits(header_timeout_s=60, per_address=2)
    with running(limits, held) as port:
        busy = [connect(port, "127.0.0.24") for _ in range(2)]
        for sock in busy:
            sock.send(WHOLE)
            assert handling.acquire(timeout=10)
        refused = connect(port, "127.0.0.24")
        wait_for(lambda: closed(refused), "the third connection to be refused")
        release.set()
        assert not any(closed(s) for s in busy)
        for sock in busy:
            sock.close()


def test_a_trusted_proxy_is_not_held_to_the_limit_per_address() -> None:
    from freshline.interfaces.server.addresses import networks

    limits = ConnectionLimits(header_timeout_s=60, per_address=2,
                              exempt=networks(["127.0.0.23/32"]))
    with running(limits) as port:
        held = [connect(port, "127.0.0.23") for _ in range(6)]
        time.sleep(0.5)
        assert not any(closed(s) for s in held)
        for sock in held:
            sock.close()


@pytest.mark.parametrize(
    ("state", "arrived", "phase"),
    [
        ("IDLE", True, Phase.HEADERS),  # bytes of a request line or headers came
        ("IDLE", False, Phase.IDLE),  # between requests: the keep-alive timer's turn
        ("SEND_BODY", True, Phase.BODY),
        ("SEND_BODY", False, Phase.BODY),
        ("DONE", True, Phase.HANDLING),  # the whole request is in: the app's time
        ("MUST_CLOSE", False, Phase.HANDLING),
        ("CLOSED", False, Phase.HANDLING),
        ("ERROR", True, Phase.HANDLING),
    ],
)
def test_the_phase_of_a_connection_follows_the_client_side(
    state: str, arrived: bool, phase: Phase
) -> None:
    import h11

    assert phase_of(getattr(h11, state), arrived) is phase


# --- a `serve` process -------------------------------------------------------------------------


def test_serve_holds_a_flood_from_twenty_addresses_at_1024_open_files(ws: Workspace) -> None:
    """Seen (issue 47): from 20 addresses at an open-files limit of 1024, serve exited "too
    many open files"; behind an attacker's address a client got 1 request of 50 through.
    Now 1,280 connections that never finish their headers leave it answering everyone,
    the attacker's address too, and are dropped."""
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    with (ws.root / "freshline.toml").open("a") as config:
        config.write("[server]\nheader_timeout_s = 2\n")
    port = free_port()
    proc = start_server(ws.root, port, files=1024)
    attackers = [f"127.0.0.{100 + i}" for i in range(20)]
    try:
        with more_files(4096):
            flood = [connect(port, attackers[i % 20]) for i in range(20 * 64)]
            for sock in flood:
                sock.send(PARTIAL)
            assert b" 401 " in request(port)  # another address
            assert b" 401 " in request(port, source=attackers[0])  # behind the attacker's
            assert trickle(flood, 20) == []  # all given up or timed out
            for sock in flood:
                sock.close()
        assert b" 401 " in request(port)
        assert proc.poll() is None
        log = (ws.root.parent / f"serve-{port}.log").read_text()
        assert "warning: the open-files limit (1024) leaves room for 768 connections, not " \
               "max_connections 4096" in log
    finally:
        stop_server(proc)


def test_serve_raises_its_open_files_limit_to_the_hard_one() -> None:
    code = ("import resource; from freshline.interfaces.server.files import raise_file_limit; "
            "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 1024)); "
            "print(raise_file_limit(), *resource.getrlimit(resource.RLIMIT_NOFILE))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["1024", "1024", "1024"]


@contextmanager
def more_files(wanted: int) -> Iterator[None]:
    """This process's soft open-files limit raised to `wanted` (as far as its hard one
    allows) for a while."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(wanted, hard)), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def serve_command(root: Path, port: int) -> list[str]:
    return [sys.executable, "-m", "freshline", "--workspace", str(root), "serve", "--port",
            str(port)]


def test_serve_on_a_busy_port_says_so_at_once_in_one_line_and_exits_1(
    two_projects: Workspace,
) -> None:
    """Seen (issue 45): a busy port took 4.7 s to be said, the time the server's libraries
    took to load. The port is now bound before they load."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = serve_command(two_projects.root, port)
        done = subprocess.run([command[0], "-X", "importtime", *command[1:]],
                              capture_output=True, text=True, timeout=60)
    imports = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    said = [line for line in done.stderr.splitlines() if not line.startswith("import time:")]
    assert done.returncode == 1
    assert said == [f"error: 127.0.0.1:{port}: address already in use"]
    assert done.stdout == ""
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in imports}
    assert not loaded & {"uvicorn", "mcp", "starlette", "jwt", "h11"}, loaded


def test_serving_is_printed_once_the_port_is_bound(two_projects: Workspace) -> None:
    port = free_port()
    proc = subprocess.Popen(serve_command(two_projects.root, port), stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"serving http://127.0.0.1:{port}/mcp\n"
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # at once
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


class Recorded(asyncio.Protocol):
    """A protocol that lets its slot be given up and notes its end."""

    def __init__(self, slot: Slot, listener: Listener) -> None:
        self.slot, self.listener = slot, listener

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.slot.close = transport.close

    def connection_lost(self, exc: Exception | None) -> None:
        self.listener.release(self.slot)


async def test_the_addresses_of_one_ipv6_slash_64_share_its_limit() -> None:
    """Seen (issue 47): connections were counted per exact address, and one IPv6 host
    holds a /64 of them."""
    occupancy = Occupancy(ConnectionLimits(per_address=1).capacity())
    with socket.socket() as unused:
        listener = Listener(unused, occupancy, lambda slot: Recorded(slot, listener))
        first, first_peer = socket.socketpair()
        second, second_peer = socket.socketpair()
        other, other_peer = socket.socketpair()
        listener.take(first, ("2001:db8:1:2::1", 5000, 0, 0))
        await asyncio.sleep(0.05)
        listener.take(second, ("2001:db8:1:2:ffff::9", 5001, 0, 0))  # the same /64
        listener.take(other, ("2001:db8:1:3::1", 5002, 0, 0))  # the next /64
        await asyncio.sleep(0.05)
        assert [closed(s) for s in (first_peer, second_peer, other_peer)] == [True, False, False]
        assert occupancy.open == 2
        for sock in (first_peer, second_peer, other_peer):
            sock.close()
        listener.close()


def test_a_request_that_fails_again_and_again_is_logged_once_a_second(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Seen (issue 47): each request that made a 500 logged its traceback: 814 KB/s."""

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            raise RuntimeError("boom")

    with running(SHORT, failing) as port:
        answers = [request(port, b"") for _ in range(30)]
    assert all(a.startswith(b"HTTP/1.1 500 ") for a in answers)
    logged = capfd.readouterr().err
    assert 1 <= logged.count("Exception in ASGI application") <= 3  # the requests took < 3 s
    assert logged.count("RuntimeError: boom") == logged.count("Exception in ASGI application")
