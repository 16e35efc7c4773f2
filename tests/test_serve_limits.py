"""The limit on failed sign-ins of `freshline serve` (issue 30): it never refuses a valid
credential, counts per client address (X-Forwarded-For only from a trusted proxy), and
keeps its counts in the store, so every `serve` process on it shares them.

The servers are real processes; each test sends from a loopback address of its own
(127.0.0.0/8 is all this machine), so their counts do not mix.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.config import load_config
from freshline.interfaces.server.addresses import client_address, limit_key, networks
from freshline.interfaces.server.limiter import retry_after
from freshline.session import users
from freshline.store import Store
from tests.conftest import Workspace
from tests.serving import free_port, start_servers, stop_server

BAD = "fl_not-a-token"
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass
class Servers:
    """Two `serve` processes on one workspace (its SQLite store), the second trusting the
    proxy at 127.0.0.14, and alice's token."""

    urls: list[str]
    token: str


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    ws = Workspace(tmp_path_factory.mktemp("limits") / "ws")
    ws.root.mkdir()
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    store = Store(ws.root / ".freshline")
    token = users.add(store, load_config(ws.root), "alice", ["p"])
    store.close()
    ports = [free_port() for _ in range(2)]
    procs = start_servers(ws.root, (ports[0],), (ports[1], "--trusted-proxy", "127.0.0.14/32"))
    try:
        assert token is not None
        yield Servers([f"http://127.0.0.1:{port}/mcp" for port in ports], token)
    finally:
        stop_server(*procs)


async def post(url: str, token: str | None, source: str, forwarded: str | None = None) -> int:
    """The status of one MCP request to `url` sent from the loopback address `source`."""
    headers = dict(ACCEPT)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    transport = httpx2.AsyncHTTPTransport(local_address=source)
    async with httpx2.AsyncClient(transport=transport, timeout=30) as http:
        return (await http.post(url, json=LIST, headers=headers)).status_code


async def test_a_valid_token_after_ten_failures_from_its_address_is_served(
    servers: Servers,
) -> None:
    source = "127.0.0.11"
    assert [await post(servers.urls[0], BAD, source) for _ in range(10)] == [401] * 10
    assert await post(servers.urls[0], BAD, source) == 429
    assert await post(servers.urls[0], servers.token, source) == 200
    assert await post(servers.urls[1], servers.token, source) == 200
    assert await post(servers.urls[1], BAD, source) == 429  # still limited for guesses


async def test_a_spoofed_forwarded_for_from_an_untrusted_peer_changes_nothing(
    servers: Servers,
) -> None:
    source = "127.0.0.1"  # uvicorn trusts this peer's X-Forwarded-For by default
    statuses = [await post(servers.urls[0], BAD, source, f"10.9.{i}.1") for i in range(10)]
    assert statuses == [401] * 10
    assert await post(servers.urls[0], BAD, source, "10.9.99.1") == 429


async def test_every_serve_process_on_the_store_shares_the_counts(servers: Servers) -> None:
    source = "127.0.0.13"
    statuses = [await post(servers.urls[i % 2], BAD, source) for i in range(10)]
    assert statuses == [401] * 10
    assert [await post(url, BAD, source) for url in servers.urls] == [429, 429]


async def test_a_trusted_proxy_names_the_client_it_forwards(servers: Servers) -> None:
    proxy = "127.0.0.14"
    statuses = [await post(servers.urls[1], BAD, proxy, "198.51.100.7") for _ in range(10)]
    assert statuses == [401] * 10
    assert await post(servers.urls[1], BAD, proxy, "198.51.100.7") == 429
    assert await post(servers.urls[1], BAD, proxy, "198.51.100.8") == 401  # another client
    # what the client itself wrote before the proxy's entry is not believed
    assert await post(servers.urls[1], BAD, proxy, "203.0.113.5, 198.51.100.7") == 429
    assert await post(servers.urls[1], servers.token, proxy, "198.51.100.7") == 200


async def test_concurrent_guesses_never_pass_the_limit(servers: Servers) -> None:
    """Seen (issue 47): the limiter read the count, then recorded: 10 concurrent guesses
    let 29 to 37 a minute through where 10 were meant."""
    source = "127.0.0.16"
    statuses = await asyncio.gather(*(post(servers.urls[n % 2], BAD, source)
                                      for n in range(20)))
    assert sorted(statuses) == [401] * 10 + [429] * 10


async def test_a_request_without_a_credential_is_never_counted(servers: Servers) -> None:
    source = "127.0.0.15"  # an OAuth client's first request carries none, by design
    assert [await post(servers.urls[0], None, source) for _ in range(12)] == [401] * 12
    assert await post(servers.urls[0], BAD, source) == 401


# --- the pure parts ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failures", "now", "expected"),
    [
        ([], 100.0, 0.0),
        ([95.0] * 9, 100.0, 0.0),  # under the limit
        ([50.0 + i for i in range(10)], 100.0, 10.0),  # the oldest ages out at 110
        ([40.0] + [50.0 + i for i in range(10)], 100.0, 10.0),  # 40 aged out already
        ([41.0] + [50.0 + i for i in range(10)], 100.0, 10.0),  # 41 ages out first
        ([41.0 + i for i in range(12)], 100.0, 3.0),  # the 3rd oldest must age out: 43+60
        ([30.0 + i for i in range(10)], 100.0, 0.0),  # all aged out
    ],
)
def test_retry_after_is_when_the_window_holds_fewer_than_the_limit(
    failures: list[float], now: float, expected: float
) -> None:
    assert retry_after(failures, now, limit=10, window_s=60) == pytest.approx(expected)


hundredths = st.integers(0, 100_000).map(lambda n: n / 100)


@given(st.lists(hundredths, max_size=30), hundredths, st.integers(1, 12),
       st.integers(100, 12_000).map(lambda n: n / 100))
def test_retry_after_waits_exactly_until_a_failure_fits(
    failures: list[float], now: float, limit: int, window: float
) -> None:
    past = [f for f in failures if f <= now]

    def within(t: float) -> int:
        return sum(1 for f in past if t - window < f <= t)

    wait = retry_after(past, now, limit, window)
    assert wait >= 0
    if wait == 0:
        assert within(now) < limit
    else:
        assert within(now + wait + 1e-6) < limit
        assert within(max(now, now + wait - 1e-3)) >= limit


TRUSTED = networks(["10.0.0.0/8", "2001:db8::/32"])


@pytest.mark.parametrize(
    ("peer", "forwarded", "expected"),
    [
        ("192.0.2.1", ["198.51.100.7"], "192.0.2.1"),  # untrusted peer: its header is ignored
        ("10.0.0.1", ["198.51.100.7"], "198.51.100.7"),
        ("10.0.0.1", ["203.0.113.5, 198.51.100.7"], "198.51.100.7"),  # rightmost untrusted
        ("10.0.0.1", ["198.51.100.7, 10.0.0.2"], "198.51.100.7"),  # through two proxies
        ("10.0.0.1", ["198.51.100.7", "10.0.0.2"], "198.51.100.7"),  # two headers
        ("10.0.0.1", [], "10.0.0.1"),
        ("10.0.0.1", ["garbage"], "10.0.0.1"),
        ("10.0.0.1", ["198.51.100.7, garbage"], "10.0.0.1"),  # stops at what it cannot read
        ("10.0.0.1", ["10.0.0.3"], "10.0.0.3"),  # all trusted: the farthest one
        ("::ffff:10.0.0.1", ["198.51.100.7"], "198.51.100.7"),  # IPv4 mapped into IPv6
        ("2001:db8::1", ["[2001:db9::5]:443"], "2001:db9::5"),
        ("10.0.0.1", ["198.51.100.7:50312"], "198.51.100.7"),  # some proxies add the port
        ("unknown", ["198.51.100.7"], "unknown"),
    ],
)
def test_the_client_address_believes_only_trusted_proxies(
    peer: str, forwarded: list[str], expected: str
) -> None:
    assert client_address(peer, forwarded, TRUSTED) == expected


addresses = st.ip_addresses(v=4).map(str)


@given(addresses, st.lists(addresses, max_size=4), st.lists(addresses, max_size=4))
def test_what_a_client_writes_before_a_trusted_proxy_cannot_move_its_address(
    client: str, spoofed: list[str], proxies: list[str]
) -> None:
    trusted = networks([f"{p}/32" for p in proxies] + ["10.0.0.0/8"])
    real = client if not any(ipaddress.ip_address(client) in n for n in trusted) else None
    if real is None:
        return
    chain = ", ".join([*spoofed, client, *(p for p in proxies)])
    assert client_address("10.0.0.1", [chain], trusted) == client


@given(st.ip_addresses())
def test_the_limit_key_is_the_address_or_an_ipv6_slash_64(
    address: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    key = limit_key(str(address))
    if address.version == 4:
        assert key == str(address)
    elif address.ipv4_mapped is not None:
        assert key == str(address.ipv4_mapped)
    else:
        assert ipaddress.ip_address(str(address)) in ipaddress.ip_network(key)
        assert key.endswith("/64")


def test_an_address_that_is_no_ip_is_its_own_key() -> None:
    assert limit_key("unknown") == "unknown"
