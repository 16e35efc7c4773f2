"""`freshline serve` under a connection flood: how long does a legitimate client wait?

One `serve` process at an open-files limit of 1024 (its connections get 768 of them).
An attacker on 20 loopback addresses keeps FLOOD connections open that send part of a
request line and never finish it (slowloris), opening a new one whenever the server
closes one. Meanwhile a client makes ROUNDS requests one after another, from an address
of its own and then from one of the attacker's addresses (a client behind the same NAT).
Each request carries no token, so the authentication answers it (401): the figure is the
server's, not a tool's.

Printed: p50/p99 latency of those requests under the flood and without it (the baseline:
the same client and server, just before the flood), p99 under the flood ÷ p99 without,
and p99 under the flood itself (goal ≤ 1 s: the client waits its turn in the port's
backlog, which the attacker keeps full, while the server gives up a slow connection for
each one it takes), how many of its requests failed (goal 0), the server's most open
files against its limit, and whether it still answers once the flood stops (goal: yes).

Usage: python bench/flood.py [--quick]   (ROUNDS 200, FLOOD 20 × 64; --quick: 50)
"""

from __future__ import annotations

import os
import resource
import select
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.conftest import Workspace  # noqa: E402
from tests.serving import free_port, start_server, stop_server  # noqa: E402

FILES = 1024
ATTACKERS = [f"127.0.0.{100 + i}" for i in range(20)]
PER_ATTACKER = 64
PARTIAL = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
REQUEST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def ask(port: int, source: str) -> float | None:
    """Seconds one request from `source` took to be answered (None: it failed)."""
    start = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30,
                                      source_address=(source, 0)) as sock:
            sock.sendall(REQUEST)
            if not sock.recv(64).startswith(b"HTTP/1.1 401"):
                return None
    except OSError:
        return None
    return time.perf_counter() - start


def latencies(port: int, source: str, rounds: int) -> tuple[list[float], int]:
    """The latencies of `rounds` requests, and how many failed."""
    found = [ask(port, source) for _ in range(rounds)]
    return [t for t in found if t is not None], sum(t is None for t in found)


class Flood(threading.Thread):
    """Keeps PER_ATTACKER slow connections open from each attacker address."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.opened = 0
        self.poller = select.poll()
        self.held: dict[int, tuple[socket.socket, str]] = {}  # by descriptor

    def open_one(self, source: str) -> None:
        sock = socket.socket()
        sock.setblocking(False)
        sock.bind((source, 0))
        sock.connect_ex(("127.0.0.1", self.port))
        self.held[sock.fileno()] = (sock, source)
        self.poller.register(sock, select.POLLOUT)
        self.opened += 1

    def run(self) -> None:
        for source in ATTACKERS:
            for _ in range(PER_ATTACKER):
                self.open_one(source)
        while not self.stop.is_set():
            for fd, events in self.poller.poll(100):
                sock, source = self.held[fd]
                if events & select.POLLOUT and not events & (select.POLLHUP | select.POLLERR):
                    try:
                        sock.send(PARTIAL)  # once: then only its end is waited for
                        self.poller.modify(sock, select.POLLIN)
                        continue
                    except OSError:
                        pass
                self.poller.unregister(fd)
                del self.held[fd]
                sock.close()
                self.open_one(source)
        for sock, _ in self.held.values():
            sock.close()


def open_files(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def main() -> None:
    rounds = 50 if "--quick" in sys.argv else 200
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # the flood's own sockets
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.root.mkdir()
        ws.write("notes/a.md", "# A\n")
        ws.configure({"p": {"include": ["notes"]}})
        port = free_port()
        proc = start_server(ws.root, port, files=FILES)
        try:
            latencies(port, "127.0.0.2", 20)  # warm
            calm, calm_failed = latencies(port, "127.0.0.2", rounds)
            flood = Flood(port)
            flood.start()
            most, done = [0], threading.Event()

            def watch() -> None:
                while not done.is_set():
                    most[0] = max(most[0], open_files(proc.pid))
                    time.sleep(0.05)

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            time.sleep(2)  # the flood fills the server
            own, shared, own_failed, shared_failed = [], [], 0, 0
            for _ in range(rounds):  # the two in turn: the flood is the same for both
                for source, found in (("127.0.0.2", own), (ATTACKERS[0], shared)):
                    took = ask(port, source)
                    if took is None:
                        own_failed += 1
                    else:
                        found.append(took)
            flood.stop.set()
            flood.join(30)
            done.set()
            watcher.join(5)
            after = ask(port, "127.0.0.2")
            report(calm, own, shared, calm_failed + own_failed + shared_failed, most[0],
                   flood.opened, after is not None and proc.poll() is None)
        finally:
            stop_server(proc)


def report(calm: list[float], own: list[float], shared: list[float], failed: int,
           most_files: int, opened: int, answers: bool) -> None:
    def p(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1] * 1000 if len(values) > 1 else 0.0

    flooded = own + shared
    print(f"flood: {len(ATTACKERS)} addresses, {opened} slow connections opened in all")
    print(f"without the flood: p50 {p(calm, 50):.1f} ms, p99 {p(calm, 99):.1f} ms")
    print(f"under the flood, own address: p50 {p(own, 50):.1f} ms, p99 {p(own, 99):.1f} ms")
    print(f"under the flood, an attacker's address: p50 {p(shared, 50):.1f} ms, "
          f"p99 {p(shared, 99):.1f} ms")
    print(f"p99 under the flood / without: {p(flooded, 99) / max(p(calm, 99), 1e-9):.1f}x")
    print(f"p99 under the flood: {p(flooded, 99) / 1000:.2f} s (goal <= 1 s)")
    print(f"requests failed: {failed} (goal 0)")
    print(f"server's open files at most: {most_files} of {FILES}")
    print(f"answers after the flood: {'yes' if answers else 'NO'}")


if __name__ == "__main__":
    main()
