"""Where `freshline serve` listens: the address, its checks, and the bound socket.

Only the standard library and the config: the command binds the port before the
server's libraries (the MCP SDK, uvicorn) load, so a busy port is one line at once.
Binding to anything but a loopback address needs TLS (`tls_cert`, `tls_key`), or an
explicit `insecure_http` that is warned about: bearer tokens must not cross a network
in the clear by accident.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from freshline.config import ServerSettings
from freshline.config.settings import check_network, check_url
from freshline.errors import FreshlineError, UsageError

MCP_PATH = "/mcp"
BACKLOG = 2048  # connections the kernel holds for the server while it is full
INSECURE_WARNING = (
    "warning: serving plain HTTP on {host}: bearer tokens cross the network unencrypted "
    "(use --tls-cert/--tls-key, or a TLS proxy in front)"
)


@dataclass(frozen=True)
class Listen:
    """Where and how to listen."""

    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure_http: bool = False

    @property
    def tls(self) -> bool:
        """Whether HTTPS is served."""
        return self.tls_cert is not None

    @property
    def url(self) -> str:
        """The URL of this address (its origin)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def check(self) -> str | None:
        """UsageError for settings that must not run; the warning to print, if any."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise UsageError("give both --tls-cert and --tls-key")
        for path in (self.tls_cert, self.tls_key):
            if path is not None and not path.is_file():
                raise UsageError(f"no such file: {path}")
        if not 0 <= self.port <= 65535:
            raise UsageError(f"invalid port {self.port}: 0 to 65535")
        if self.tls or is_loopback(self.host):
            return None
        if not self.insecure_http:
            raise UsageError(
                f"{self.host} is not a loopback address: give --tls-cert and --tls-key, or "
                "--insecure-http to serve plain HTTP anyway"
            )
        return INSECURE_WARNING.format(host=self.host)


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def given_settings(settings: ServerSettings, oauth_issuer: str | None = None,
                   oauth_audience: str | None = None, public_url: str | None = None,
                   trusted_proxies: tuple[str, ...] = ()) -> ServerSettings:
    """`[server]` with what the command line gave over it (UsageError naming the option
    for a value that is not usable)."""
    changes: dict[str, Any] = {}
    for option, name, value in (("--oauth-issuer", "oauth_issuer", oauth_issuer),
                                ("--public-url", "public_url", public_url)):
        if value is not None:
            changes[name] = _checked(option, check_url, value)
    if oauth_audience is not None:
        changes["oauth_audience"] = oauth_audience
    if trusted_proxies:
        changes["trusted_proxies"] = tuple(
            _checked("--trusted-proxy", check_network, p) for p in trusted_proxies)
    return replace(settings, **changes)


def _checked(option: str, check: Callable[[str], str], value: str) -> str:
    try:
        return check(value)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def public_url(listen: Listen, settings: ServerSettings) -> str:
    """Where clients reach the server: `public_url`, else the address served (UsageError
    when that names no host a client could use, and OAuth needs one)."""
    if settings.public_url:
        return settings.public_url.rstrip("/")
    unspecified = listen.host in ("0.0.0.0", "::", "")
    if settings.oauth_issuer and unspecified:
        raise UsageError(f"{listen.host} names no host clients reach: give --public-url")
    return listen.url


def bind(listen: Listen) -> socket.socket:
    """A socket listening on the address (FreshlineError, one line, when it cannot be:
    `127.0.0.1:8765: address already in use`)."""
    where = f"{listen.host}:{listen.port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            listen.host, listen.port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise UsageError(f"{where}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise FreshlineError(f"{where}: address already in use") from None
        raise FreshlineError(f"{where}: {exc.strerror or exc}") from None
    return sock
