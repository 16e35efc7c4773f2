"""`freshline serve` under load: many clients over HTTP against two server processes.

Two `serve` processes share one workspace and its store: PostgreSQL (a server of its own,
started in a temp dir as tests/pgserver.py does), the team's setting. Each process handles
its requests concurrently. Each client opens a session, takes its manifest, then
makes SENDS rounds of `project_updates` + `acknowledge`, switching server on every
request, while a writer creates a note every WRITE_EVERY_S seconds (the 1-client baseline
makes BASELINE_SENDS rounds: its p99 is a percentile, not the slowest of 20). When the writer
stops, each client drains what is left. Every note must be announced to every client in
exactly one acknowledged delivery: the run counts the lost and the duplicated ones
(goal 0 and 0). Printed: throughput (rounds per second), p50/p99 latency of
`project_updates`, the CPU time a round costs the two servers, PostgreSQL and the clients'
own process (Linux /proc), the rounds per second that CPU allows on this machine's cores
at most, and p99 at N clients ÷ p99 at 1 client (the baseline, same servers, same run;
goal ≤ 5).

The load generator runs on the machine's cores beside the servers, as wrk does beside a
web server, so it should cost them little: by default each client speaks the
streamable-HTTP JSON-RPC wire itself (`Wire`: one POST per call, the 2026-07-28
protocol, on a kept-alive connection), checking every answer as the SDK's client would.
`--sdk` runs the MCP Python SDK's client instead (`Client`, a session per server per
client): the figures of a real client, whose own CPU then takes a third of the machine's.

Bounded: at most CLIENTS × SENDS rounds and DEADLINE_S seconds; 127.0.0.1 only (every
client shares that address: `[server] max_connections_per_address` is raised for it).
Usage: python bench/serve.py [--quick] [--sdk]   (50 clients × 20 sends; --quick: 10 × 5)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp import Client  # noqa: E402
from tests.conftest import Workspace  # noqa: E402
from tests.pgserver import bench_server  # noqa: E402
from tests.serving import connect, free_port, start_servers, stop_server  # noqa: E402

from freshline.config import load_config  # noqa: E402
from freshline.session import users  # noqa: E402
from freshline.store import Store  # noqa: E402
from freshline.store.location import ENV_VAR as STORE_URL  # noqa: E402

PROTOCOL = "2026-07-28"
WRITE_EVERY_S = 0.05
BASELINE_SENDS = 100
DEADLINE_S = 600.0
_UPDATES = re.compile(r"<project_context_updates .*?</project_context_updates>", re.S)
_NOTE = re.compile(r"notes/(w-\d+-\d+)\.md")


@dataclass
class Tally:
    """What one client was told, and how long `project_updates` took."""

    latencies: list[float] = field(default_factory=list)
    told: list[str] = field(default_factory=list)


def cpu_s(pid: int | None = None) -> float:
    """CPU seconds (user + system) of this process, or of process `pid` (Linux /proc)."""
    if pid is None:
        return time.process_time()
    stat = Path(f"/proc/{pid}/stat").read_text()
    utime, stime = stat.rpartition(")")[2].split()[11:13]
    return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")


def postgres_pids(data: Path) -> list[int]:
    """The PostgreSQL server's processes: the postmaster (postmaster.pid) and its children."""
    main = int((data / "postmaster.pid").read_text().split()[0])
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rpartition(")")[2].split()[1]) == main:
                children.append(int(stat.parent.name))
        except OSError:
            continue  # gone meanwhile
    return [main, *children]  # a backend lives as long as its pooled connection


@dataclass(frozen=True)
class Answer:
    """A tool's result: its text content and its structured content."""

    text: str
    fields: dict[str, Any]


class Caller(Protocol):
    """Calls a tool on one server (RuntimeError for a tool error)."""

    async def __call__(self, tool: str, arguments: dict[str, Any]) -> Answer: ...


def sdk_caller(client: Client) -> Caller:
    """Calls through the MCP SDK's client."""

    async def call(tool: str, arguments: dict[str, Any]) -> Answer:
        result = await client.call_tool(tool, arguments)
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            raise RuntimeError(text)
        found = result.structured_content or {}
        return Answer(text, found.get("result", found))

    return call


class Wire:
    """A client speaking the streamable-HTTP wire itself: each call one self-contained
    POST of a JSON-RPC request (protocol 2026-07-28: no handshake, no MCP session) on a
    kept-alive HTTP/1.1 connection, answered by one JSON-RPC response (as JSON, or as an
    SSE event when the server took long enough to start a stream). Plain asyncio
    streams: an HTTP library's own work per request would weigh as much as the server's."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path = parts.hostname or "", parts.port or 80, parts.path
        self.head = (f"POST {self.path} HTTP/1.1\r\nhost: {parts.netloc}\r\n"
                     f"authorization: Bearer {token}\r\ncontent-type: application/json\r\n"
                     "accept: application/json, text/event-stream\r\n"
                     f"mcp-protocol-version: {PROTOCOL}\r\nmcp-method: tools/call\r\n")
        self._ids = itertools.count(1)
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def __call__(self, tool: str, arguments: dict[str, Any]) -> Answer:
        ident = next(self._ids)
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments,
                                      "_meta": _META}}).encode()
        reader, writer = await self._connection()
        writer.write(f"{self.head}mcp-name: {tool}\r\ncontent-length: {len(body)}\r\n\r\n"
                     .encode() + body)
        status, headers, payload = await _response(reader)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {payload[:200]!r}")
        reply = _reply(headers.get("content-type", ""), payload, ident)
        if "error" in reply:
            raise RuntimeError(reply["error"].get("message", reply["error"]))
        result = reply["result"]
        text = "\n".join(c.get("text", "") for c in result.get("content", []))
        if result.get("isError"):
            raise RuntimeError(text)
        return Answer(text, result.get("structuredContent") or {})

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The kept-alive connection, made again when the server closed it while idle."""
        if self._streams is None or self._streams[0].at_eof():
            await self.close()
            self._streams = await asyncio.open_connection(self.host, self.port)
        return self._streams

    async def close(self) -> None:
        """Close the connection, if open."""
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


async def _response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    """An HTTP/1.1 response's status, headers (lower-cased) and body."""
    status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        return int(status_line.split()[1]), headers, await reader.readexactly(
            int(headers["content-length"]))
    body = b""
    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):  # chunked
        body += await reader.readexactly(size)
        await reader.readexactly(2)
    await reader.readexactly(2)
    return int(status_line.split()[1]), headers, body


_META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
         "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
         "io.modelcontextprotocol/clientCapabilities": {}}


def _reply(content_type: str, payload: bytes, ident: int) -> dict[str, Any]:
    """The JSON-RPC response to request `ident` in a JSON or an SSE body."""
    if not content_type.startswith("text/event-stream"):
        found: dict[str, Any] = json.loads(payload)
        return found
    for line in payload.decode().splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == ident:
                return dict(message)
    raise RuntimeError(f"no answer to request {ident} in the event stream")


@asynccontextmanager
async def callers(urls: list[str], token: str, sdk: bool) -> AsyncIterator[list[Caller]]:
    """A client's callers, one per server: the SDK's (a session each), or `Wire`s."""
    if sdk:
        async with connect(urls[0], token) as one, connect(urls[1], token) as two:
            yield [sdk_caller(one), sdk_caller(two)]
        return
    wires = [Wire(url, token) for url in urls]
    try:
        yield list(wires)
    finally:
        for wire in wires:
            await wire.close()


async def updates(call: Caller, session: str, tally: Tally | None) -> str | None:
    """One project_updates + acknowledge; the notes announced go to `tally`."""
    start = time.perf_counter()
    answer = await call("project_updates", {"session": session})
    if tally is not None:
        tally.latencies.append(time.perf_counter() - start)
    token = answer.fields["token"]
    if token is None:
        return None
    if tally is not None:
        for block in _UPDATES.findall(answer.text):
            tally.told += _NOTE.findall(block)
    return str(token)


async def measure(root: Path, urls: list[str], token: str, clients: int, sends: int,
                  sdk: bool) -> tuple[list[Tally], int, float]:
    """Run `clients` clients; returns their tallies, notes written, wall seconds."""
    tallies = [Tally() for _ in range(clients)]
    started, writing_done = asyncio.Event(), asyncio.Event()
    ready: list[int] = []  # clients holding their manifest
    finishing: list[int] = []  # clients done with their rounds
    written = 0

    async def writer() -> None:
        nonlocal written
        (root / "staging").mkdir(exist_ok=True)
        while not writing_done.is_set():
            # Whole at once: a note caught empty, then full, is rightly told twice.
            staged = root / f"staging/w-{clients}-{written}.md"
            staged.write_text(f"{written}\n")
            staged.replace(root / f"notes/w-{clients}-{written}.md")
            written += 1
            await asyncio.sleep(WRITE_EVERY_S)

    async def client(tally: Tally) -> None:
        async with callers(urls, token, sdk) as servers:
            one, two = servers
            session = (await one("open_session", {"project": "p"})).fields["session"]
            first = await updates(two, session, None)  # the manifest
            if first:
                await one("acknowledge", {"session": session, "token": first})
            ready.append(1)
            if len(ready) == clients:
                started.set()
            await started.wait()
            for i in range(sends):
                got = await updates(servers[i % 2], session, tally)
                if got:
                    await servers[(i + 1) % 2]("acknowledge", {"session": session, "token": got})
            finishing.append(1)
            if len(finishing) == clients:
                writing_done.set()
            await writing_done.wait()
            while got := await updates(servers[0], session, tally):
                await servers[1]("acknowledge", {"session": session, "token": got})

    tasks = [asyncio.create_task(client(t)) for t in tallies]
    await started.wait()
    begin = time.perf_counter()
    write_task = asyncio.create_task(writer())
    await asyncio.wait_for(asyncio.gather(*tasks), DEADLINE_S)
    wall = time.perf_counter() - begin
    await write_task
    return tallies, written, wall


def report(label: str, tallies: list[Tally], written: int, clients: int, sends: int,
           wall: float, cpu: tuple[float, float, float]) -> float:
    """Print a run's figures (`cpu`: the servers', PostgreSQL's and the clients' CPU
    seconds); its p99."""
    latencies = sorted(x for t in tallies for x in t.latencies)
    p50 = statistics.median(latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    expected = {f"w-{clients}-{i}" for i in range(written)}
    lost = sum(len(expected - set(t.told)) for t in tallies)
    duplicated = sum(len(t.told) - len(set(t.told)) for t in tallies)
    rounds = clients * sends
    servers, postgres, own = (c / rounds * 1000 for c in cpu)
    ceiling = (os.cpu_count() or 1) * 1000 / (servers + postgres + own)
    print(f"{label}: {clients} clients x {sends} sends, {written} notes written: "
          f"{rounds / wall:.1f} rounds/s, project_updates p50 {p50 * 1000:.0f} ms "
          f"p99 {p99 * 1000:.0f} ms; CPU a round: servers {servers:.0f} ms, PostgreSQL "
          f"{postgres:.0f} ms, clients {own:.0f} ms (at most {ceiling:.0f} rounds/s on "
          f"{os.cpu_count()} idle cores); lost {lost}, duplicated {duplicated}")
    return p99


def main() -> None:
    quick, sdk = "--quick" in sys.argv, "--sdk" in sys.argv
    clients, sends = (10, 5) if quick else (50, 20)
    print(f"clients: {'the MCP SDK' if sdk else 'the wire (asyncio streams)'}")
    server = bench_server("bench/serve.py")
    try:
        os.environ[STORE_URL] = server.new_schema()  # the serve processes inherit it
        with tempfile.TemporaryDirectory(prefix="freshline-bench-serve-") as tmp:
            p99_one, p99_many = run(Path(tmp), server.data, clients, sends, sdk)
    finally:
        os.environ.pop(STORE_URL, None)
        server.stop()
    print(f"p99 at {clients} clients / p99 at 1 client: {p99_many / p99_one:.1f} (goal <= 5)")


def run(tmp: Path, data: Path, clients: int, sends: int, sdk: bool) -> tuple[float, float]:
    """The baseline's p99 and the load's, on two servers of a new workspace."""
    ws = Workspace(tmp / "ws")
    ws.root.mkdir()
    ws.write("notes/a.md", "# A\n")
    # Neither compaction nor roll-ups: a session is told every note by name, however
    # long the run and however many notes a slow round gathers.
    ws.configure({"p": {"include": ["notes"]}}, change_log_cap=10_000_000)
    with (ws.root / "freshline.toml").open("a") as toml:
        toml.write("[delivery]\nmcp = 1000000\n[server]\nmax_connections_per_address = 1000\n")
    config = load_config(ws.root)
    store = Store(ws.root / ".freshline", config.store_url)
    token = users.add(store, config, "bench", ["p"])
    store.close()
    assert token is not None
    ports = [free_port(), free_port()]
    procs = start_servers(ws.root, *[(port,) for port in ports])
    urls = [f"http://127.0.0.1:{port}/mcp" for port in ports]

    def spent() -> tuple[float, float, float]:
        return (sum(cpu_s(p.pid) for p in procs), sum(map(cpu_s, postgres_pids(data))), cpu_s())

    def phase(label: str, many: int, rounds: int) -> float:
        before = spent()
        tallies, written, wall = asyncio.run(measure(ws.root, urls, token, many, rounds, sdk))
        (servers, postgres, own), then = before, spent()
        cpu = (then[0] - servers, then[1] - postgres, then[2] - own)
        return report(label, tallies, written, many, rounds, wall, cpu)

    try:
        p99_one = phase("baseline", 1, BASELINE_SENDS if sends > 5 else sends)
        p99_many = phase("load", clients, sends)
    finally:
        stop_server(*procs)
    return p99_one, p99_many


if __name__ == "__main__":
    main()
