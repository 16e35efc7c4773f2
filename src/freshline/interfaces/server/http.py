"""The MCP server over streamable HTTP at `/mcp`, behind bearer authentication.

The MCP app is the one `freshline mcp` serves over stdio (`mcp.surface.build_server`),
built `shared`: each request runs as its user (`auth.VIEWER`), who sees only the
projects granted to them and the sessions they opened. The transport is stateless: no
MCP session lives in a process's memory, and freshline's sessions and delivery tokens
live in the store, so several `serve` processes can stand behind one load balancer and a
client may reach any of them on each request. The watcher and the change announcer run
in-process, started and stopped with the app (its lifespan).

Binding to anything but a loopback address needs TLS (`tls_cert`, `tls_key`), or an
explicit `insecure_http` that is warned about: bearer tokens must not cross a network
in the clear by accident.
"""

from __future__ import annotations

import ipaddress
import sys
from dataclasses import dataclass
from pathlib import Path

from freshline.config import Config
from freshline.errors import UsageError
from freshline.interfaces.mcp.service import FreshlineService
from freshline.interfaces.server.auth import VIEWER, ASGIApp, BearerAuth, FailureLimiter
from freshline.session.users import Viewer, authenticate, viewer_of

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


def build_app(service: FreshlineService, host: str, watch: bool = True) -> ASGIApp:
    """The ASGI app: bearer authentication in front of the shared MCP app at `/mcp`."""
    from freshline.interfaces.mcp.surface import build_server

    server = build_server(service, watch=watch, shared=True)
    mcp_app = server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                         host=host)
    store = service.manager.store

    def who(token: str | None) -> Viewer | None:
        user = authenticate(store, token)
        return viewer_of(user) if user is not None else None

    return BearerAuth(mcp_app, who, FailureLimiter())


def serve(config: Config, listen: Listen) -> None:
    """Serve the workspace over HTTP until interrupted."""
    import uvicorn

    warning = listen.check()
    if warning is not None:
        print(warning, file=sys.stderr)
    service = FreshlineService(config, viewer=VIEWER.get)
    try:
        app = build_app(service, listen.host)
        uvicorn_config = uvicorn.Config(
            app, host=listen.host, port=listen.port, log_level="warning", access_log=False,
            ssl_certfile=str(listen.tls_cert) if listen.tls_cert else None,
            ssl_keyfile=str(listen.tls_key) if listen.tls_key else None,
            lifespan="on",
        )
        scheme = "https" if listen.tls else "http"
        print(f"serving {scheme}://{listen.host}:{listen.port}{MCP_PATH}", file=sys.stderr,
              flush=True)
        uvicorn.Server(uvicorn_config).run()
    finally:
        service.close()
