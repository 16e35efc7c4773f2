"""The MCP server over streamable HTTP at `/mcp`, behind bearer authentication.

The MCP app is the one `freshline mcp` serves over stdio (`mcp.surface.build_server`),
built `shared`: each request runs as its user (`auth.VIEWER`), who sees only the
projects granted to them and the sessions they opened. The transport is stateless: no
MCP session lives in a process's memory, and freshline's sessions and delivery tokens
live in the store, so several `serve` processes can stand behind one load balancer and a
client may reach any of them on each request. Requests are handled concurrently: the
tools run on worker threads, each with its own store connection. The watcher and the
change announcer run in-process, started and stopped with the app (its lifespan).

With an authorization server (`[server] oauth_issuer`) the server is an OAuth 2.1
resource server: it publishes its metadata and accepts that server's access tokens
(`oauth.py`, `resource.py`); freshline's own tokens keep working for scripts.

The port is bound before anything is printed: a busy one is a one-line error (exit 1),
and `serving …` means clients can connect. uvicorn runs with `connections.py`'s time
limits and limit per address, and without its own X-Forwarded-For handling (only
`[server] trusted_proxies` are believed, in `auth.py`).

Binding to anything but a loopback address needs TLS (`tls_cert`, `tls_key`), or an
explicit `insecure_http` that is warned about: bearer tokens must not cross a network
in the clear by accident.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshline.config import Config, ServerSettings
from freshline.config.settings import check_network, check_url
from freshline.errors import FreshlineError, UsageError
from freshline.interfaces.mcp.service import FreshlineService, long_lived
from freshline.interfaces.server.addresses import Network, networks
from freshline.interfaces.server.auth import VIEWER, ASGIApp, BearerAuth
from freshline.interfaces.server.connections import ConnectionLimits, guarded_protocol
from freshline.interfaces.server.credentials import Credentials
from freshline.interfaces.server.limiter import FailureLimiter
from freshline.interfaces.server.oauth import AccessTokens, access_tokens
from freshline.interfaces.server.resource import ProtectedResource

if TYPE_CHECKING:
    import uvicorn

MCP_PATH = "/mcp"
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
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise FreshlineError(f"{where}: address already in use") from None
        raise FreshlineError(f"{where}: {exc.strerror or exc}") from None
    return sock


def limits_of(settings: ServerSettings) -> ConnectionLimits:
    """The connection limits `[server]` sets."""
    return ConnectionLimits(settings.header_timeout_s, settings.body_timeout_s,
                            settings.keepalive_timeout_s, settings.max_connections_per_address,
                            networks(settings.trusted_proxies))


def server_for(app: Any, listen: Listen, limits: ConnectionLimits) -> uvicorn.Server:
    """uvicorn serving `app` with `limits` (run it with the socket `bind` made)."""
    import uvicorn

    config = uvicorn.Config(
        app, host=listen.host, port=listen.port, log_level="warning", access_log=False,
        ssl_certfile=str(listen.tls_cert) if listen.tls_cert else None,
        ssl_keyfile=str(listen.tls_key) if listen.tls_key else None,
        lifespan="on", http=guarded_protocol(limits),
        timeout_keep_alive=int(limits.keepalive_timeout_s),
        proxy_headers=False,  # only trusted proxies are believed, by auth.py
    )
    return uvicorn.Server(config)


def build_app(service: FreshlineService, host: str, watch: bool = True,
              resource: ProtectedResource | None = None, tokens: AccessTokens | None = None,
              proxies: tuple[Network, ...] = (), fast: bool = True) -> ASGIApp:
    """The ASGI app: bearer authentication in front of the shared MCP app at `/mcp`, whose
    hot calls `fast.FastCalls` answers (`fast=False`: the SDK answers every request)."""
    from freshline.interfaces.mcp.surface import build_server
    from freshline.interfaces.server.fast import FastCalls

    server = build_server(service, watch=watch, shared=True)
    mcp_app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH,
                                                  stateless_http=True, host=host)
    if fast:  # inside the authentication: a hot call is signed in and limited as any other
        mcp_app = FastCalls(mcp_app, server, MCP_PATH, server.session_manager.security_settings)
    store = service.manager.store
    return BearerAuth(mcp_app, Credentials(store, tokens), FailureLimiter(store), resource,
                      proxies)


def serve(config: Config, listen: Listen, settings: ServerSettings | None = None) -> None:
    """Serve the workspace over HTTP until interrupted (`settings`: `[server]`, with what
    the command line gave over it)."""
    settings = settings or config.server
    warning = listen.check()
    if warning is not None:
        print(warning, file=sys.stderr)
    resource, tokens = None, None
    if settings.oauth_issuer:
        mcp_url = public_url(listen, settings) + MCP_PATH
        tokens = access_tokens(settings.oauth_issuer, settings.oauth_audience or mcp_url,
                               settings.jwks_refetch_s)
        resource = ProtectedResource(mcp_url, tokens.issuer)
    sock = bind(listen)
    service = FreshlineService(config, viewer=VIEWER.get)
    try:
        app = build_app(service, listen.host, resource=resource, tokens=tokens,
                        proxies=networks(settings.trusted_proxies))
        server = server_for(app, listen, limits_of(settings))
        long_lived()
        bound = replace(listen, port=sock.getsockname()[1])
        print(f"serving {bound.url}{MCP_PATH}", file=sys.stderr, flush=True)
        server.run(sockets=[sock])
    finally:
        service.close()
        sock.close()
