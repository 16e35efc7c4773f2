"""Who a request comes from: the client address, believing X-Forwarded-For only from a
trusted proxy, and the key failed sign-ins are counted under (pure).

Each proxy appends the address it received the request from to X-Forwarded-For, so the
list is read from the right: starting at the peer, every hop that is a trusted proxy is
believed about the one before it, and the first that is not is the client. Whatever a
client writes into the header itself lies to the left of what its first proxy appended,
and is never reached. An entry that is not an address stops the walk at the last one
believed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
IPV6_PREFIX = 64  # one IPv6 host holds a /64: counting per address would count nothing


def networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """The networks of CIDR strings (checked when the config loaded)."""
    return tuple(ipaddress.ip_network(c.strip(), strict=False) for c in cidrs)


def parse(text: str) -> Address | None:
    """An address as a header or the server gives it (`[v6]:port` and IPv4 mapped into
    IPv6 allowed), or None."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # an IPv4 address with a port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def trusted(address: Address | None, proxies: Sequence[Network]) -> bool:
    """Whether `address` is one of the trusted proxies."""
    return address is not None and any(address in net for net in proxies)


def client_address(peer: str, forwarded: Sequence[str], proxies: Sequence[Network]) -> str:
    """The client's address: `peer`, or what trusted proxies say in X-Forwarded-For
    (`forwarded`: each header's value, in order)."""
    hops = [h for value in forwarded for h in value.split(",") if h.strip()]
    current = parse(peer)
    if current is None:
        return peer
    for hop in reversed(hops):
        if not trusted(current, proxies):
            break
        previous = parse(hop)
        if previous is None:
            break
        current = previous
    return str(current)


def limit_key(address: str) -> str:
    """The key failures are counted under: an IPv4 address, the /64 of an IPv6 one, any
    other text as it is."""
    parsed = parse(address)
    if parsed is None:
        return address
    if parsed.version == 4:
        return str(parsed)
    return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
