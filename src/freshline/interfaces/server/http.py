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

The port is bound before anything is printed (by the command, before this module
loads: `listen.py`): a busy one is a one-line error (exit 1), and `serving …` means
clients can connect. The open-files limit is raised to the hard one first, and
connections get what it leaves (`files.py`). uvicorn runs through freshline's listener
(`runner.py`, `listener.py`) with `connections.py`'s time limits and caps, and without
its own X-Forwarded-For handling (only `[server] trusted_proxies` are believed, in
`auth.py`). A listener that stops listening stops the server, non-zero.
"""

from __future__ import annotations

import logging
import socket
import sys
from dataclasses import replace
from typing import Any

from freshline.config import Config, ServerSettings
from freshline.errors import FreshlineError
from freshline.interfaces.mcp.service import FreshlineService, long_lived
from freshline.interfaces.server.addresses import Network, networks
from freshline.interfaces.server.auth import VIEWER, ASGIApp, BearerAuth
from freshline.interfaces.server.connections import ConnectionLimits
from freshline.interfaces.server.credentials import Credentials
from freshline.interfaces.server.files import FEWEST, connection_room, raise_file_limit
from freshline.interfaces.server.limiter import FailureLimiter
from freshline.interfaces.server.listen import MCP_PATH, Listen, bind, public_url
from freshline.interfaces.server.oauth import AccessTokens, access_tokens
from freshline.interfaces.server.resource import ProtectedResource
from freshline.interfaces.server.runner import STOP_GRACE_S, GuardedServer


def limits_of(settings: ServerSettings, files: int | None = None) -> ConnectionLimits:
    """The connection limits `[server]` sets, within what `files` open files leave room
    for (None: `max_connections`)."""
    total = settings.max_connections
    if files is not None:
        total = connection_room(files, total)
    return ConnectionLimits(settings.header_timeout_s, settings.body_timeout_s,
                            settings.keepalive_timeout_s, settings.max_connections_per_address,
                            networks(settings.trusted_proxies), total)


def room_for_connections(settings: ServerSettings) -> ConnectionLimits:
    """The limits, with the open-files limit raised first (FreshlineError when it leaves
    too little room; a warning printed when it leaves less than `max_connections`)."""
    files = raise_file_limit()
    limits = limits_of(settings, files)
    if limits.total < FEWEST:
        raise FreshlineError(f"the open-files limit ({files}) leaves room for {limits.total} "
                             "connections: raise it (ulimit -n)")
    if limits.total < settings.max_connections:
        print(f"warning: the open-files limit ({files}) leaves room for {limits.total} "
              f"connections, not max_connections {settings.max_connections}", file=sys.stderr)
    return limits


def server_for(app: Any, listen: Listen, limits: ConnectionLimits,
               sock: socket.socket) -> GuardedServer:
    """uvicorn serving `app` on `sock` (`bind` made it) within `limits`."""
    import uvicorn

    config = uvicorn.Config(
        app, host=listen.host, port=listen.port, log_level="warning", access_log=False,
        ssl_certfile=str(listen.tls_cert) if listen.tls_cert else None,
        ssl_keyfile=str(listen.tls_key) if listen.tls_key else None,
        lifespan="on", timeout_keep_alive=int(limits.keepalive_timeout_s),
        timeout_graceful_shutdown=STOP_GRACE_S,
        proxy_headers=False,  # only trusted proxies are believed, by auth.py
    )
    return GuardedServer(config, sock, limits)


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
    credentials = Credentials(store, tokens)
    return BearerAuth(mcp_app, credentials, FailureLimiter(store), resource, proxies,
                      credentials.prepare)


def issuer_of(issuer: str, listen: Listen,
              settings: ServerSettings) -> tuple[AccessTokens, ProtectedResource]:
    """The checker of `issuer`'s tokens and the metadata that points clients to it; a
    warning printed when the issuer cannot be read now (its tokens are answered 503 until
    it can be; freshline's own tokens are served all the same)."""
    mcp_url = public_url(listen, settings) + MCP_PATH
    tokens = access_tokens(issuer, settings.oauth_audience or mcp_url, settings.jwks_refetch_s,
                           settings.oauth_token_types)
    if tokens.keys.error:
        print(f"warning: {tokens.keys.error}: its access tokens are answered 503 until it "
              "can be read", file=sys.stderr)
    return tokens, ProtectedResource(mcp_url, tokens.issuer or issuer, settings.oauth_scopes)


def serve(config: Config, listen: Listen, settings: ServerSettings | None = None,
          sock: socket.socket | None = None) -> None:
    """Serve the workspace over HTTP until interrupted (`settings`: `[server]`, with what
    the command line gave over it; `sock`: the port `bind` bound, else bound here).
    FreshlineError when the server stopped on its own (its listener failed)."""
    settings = settings or config.server
    warning = listen.check()
    if warning is not None:
        print(warning, file=sys.stderr)
    limits = room_for_connections(settings)
    resource, tokens = None, None
    if settings.oauth_issuer:
        tokens, resource = issuer_of(settings.oauth_issuer, listen, settings)
    sock = sock or bind(listen)
    # Before the SDK's start-up installs its own handler (one that opens files to log).
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    service = FreshlineService(config, viewer=VIEWER.get)
    try:
        app = build_app(service, listen.host, resource=resource, tokens=tokens,
                        proxies=networks(settings.trusted_proxies))
        server = server_for(app, listen, limits, sock)
        long_lived()
        bound = replace(listen, port=sock.getsockname()[1])
        print(f"serving {bound.url}{MCP_PATH}", file=sys.stderr, flush=True)
        server.run()
    finally:
        service.close()
        sock.close()
    if server.failure is not None:
        raise FreshlineError(f"{server.failure}: stopped (start it again)")
