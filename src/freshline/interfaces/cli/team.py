"""`freshline serve` and `freshline user …`: one workspace shared by a team over HTTP, and
who may use it, seeing which projects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from freshline.interfaces.cli.common import JsonOption, config, emit
from freshline.interfaces.cli.output import say, warn
from freshline.interfaces.text import columns

if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.store import Store

user_app = typer.Typer(help="Users of `freshline serve`: bearer tokens and project grants.")


def serve(
    ctx: typer.Context,
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on."),
    port: int = typer.Option(8765, "--port", help="The port to listen on."),
    tls_cert: Path = typer.Option(None, "--tls-cert", help="Serve HTTPS with this certificate."),
    tls_key: Path = typer.Option(None, "--tls-key", help="The certificate's private key."),
    insecure_http: bool = typer.Option(
        False, "--insecure-http", help="Serve plain HTTP on a non-loopback address (warned)."
    ),
    oauth_issuer: str = typer.Option(
        None, "--oauth-issuer", metavar="URL",
        help="Accept access tokens of this OAuth 2.1 authorization server ([server] "
             "oauth_issuer).",
    ),
    oauth_audience: str = typer.Option(
        None, "--oauth-audience", metavar="AUD",
        help="The audience tokens must name (default: the public /mcp URL).",
    ),
    public_url: str = typer.Option(
        None, "--public-url", metavar="URL",
        help="Where clients reach this server, e.g. behind a TLS proxy (default: its address).",
    ),
    trusted_proxies: list[str] = typer.Option(
        None, "--trusted-proxy", metavar="CIDR",
        help="A proxy whose X-Forwarded-For names the client (repeatable).",
    ),
) -> None:
    """Serve the workspace's MCP server over HTTP at /mcp, for the users `user add` made.

    Every request needs `Authorization: Bearer TOKEN`: a token `user add` printed, or with
    --oauth-issuer an access token of that authorization server whose subject is a user.
    Each user sees the projects granted to them. The watcher runs inside the server.

    Example: freshline serve --oauth-issuer https://auth.example.com/realms/team
    """
    from freshline.interfaces.server.listen import Listen, bind, given_settings
    from freshline.interfaces.server.listen import public_url as reached_at

    listen = Listen(host, port, tls_cert, tls_key, insecure_http)
    listen.check()  # before the workspace is opened: a refused setting changes nothing
    cfg = config(ctx)
    settings = given_settings(cfg.server, oauth_issuer, oauth_audience, public_url,
                              tuple(trusted_proxies or ()))
    if settings.oauth_issuer:
        reached_at(listen, settings)  # a usage error before the port is taken
    sock = bind(listen)  # a busy port is said before the server's libraries load
    try:
        from freshline.interfaces.server.http import serve as run

        run(cfg, listen, settings, sock)
    finally:
        sock.close()


@contextmanager
def _store(ctx: typer.Context) -> Iterator[tuple[Config, Store]]:
    from freshline.store import Store

    cfg = config(ctx)
    store = Store(cfg.data_dir, cfg.store_url, cfg.store.pool_size)
    try:
        yield cfg, store
    finally:
        store.close()


@user_app.command("add")
def user_add(
    ctx: typer.Context,
    name: str,
    projects: list[str] = typer.Option(
        None, "--project", "-p", help="A project this user may see (repeatable)."
    ),
    subject: str = typer.Option(
        None, "--subject",
        help="The `sub` of their OAuth access tokens: they sign in through the "
             "authorization server (`serve --oauth-issuer`), and get no token.",
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create a user and print their bearer token, once (only its hash is kept); with
    --subject, a user who signs in through the team's authorization server instead.

    Example: freshline user add alice --project research
    """
    from freshline.session import users

    with _store(ctx) as (cfg, store):
        token = users.add(store, cfg, name, projects or (), subject)

    def human() -> None:
        if token is None:
            say(f"added user {name}: signs in through OAuth as subject {subject}")
            return
        say(token)
        warn("this token is shown once: give it to the user now (`user rm` and `user add` "
             "make a new one)")

    data = {"user": name, "token": token, "subject": subject, "projects": list(projects or ())}
    emit(data, as_json, human)


@user_app.command("list")
def user_list(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """List users and the projects granted to each.

    Example: freshline user list --json
    """
    with _store(ctx) as (_, store):
        found = store.user_list()
    data = [{"user": u.name, "projects": list(u.projects), "subject": u.subject,
             "created_at": u.created_at} for u in found]

    def human() -> None:
        rows = [(u.name, ", ".join(u.projects) or "(none)", u.subject or "-",
                 datetime.fromtimestamp(u.created_at, UTC).strftime("%Y-%m-%d"))
                for u in found]
        for line in columns(("user", "projects", "subject", "created"), rows):
            say(line)

    emit(data, as_json, human)


@user_app.command("grant")
def user_grant(ctx: typer.Context, name: str, project: str, as_json: bool = JsonOption) -> None:
    """Let a user see a project.

    Example: freshline user grant alice research
    """
    from freshline.session import users

    with _store(ctx) as (cfg, store):
        users.grant(store, cfg, name, project)
        granted = store.user_get(name).projects
    emit({"user": name, "projects": list(granted)}, as_json,
         lambda: say(f"{name} may see: {', '.join(granted)}"))


@user_app.command("revoke")
def user_revoke(ctx: typer.Context, name: str, project: str, as_json: bool = JsonOption) -> None:
    """Take a project away from a user (from their next request on).

    Example: freshline user revoke alice research
    """
    from freshline.session import users

    with _store(ctx) as (_, store):
        users.revoke(store, name, project)
        granted = store.user_get(name).projects
    emit({"user": name, "projects": list(granted)}, as_json,
         lambda: say(f"{name} may see: {', '.join(granted) or '(no project)'}"))


@user_app.command("rm")
def user_rm(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """Remove a user: their token stops working at once.

    Example: freshline user rm alice
    """
    with _store(ctx) as (_, store):
        store.user_remove(name)
    emit({"removed": name}, as_json, lambda: say(f"removed user {name}"))
