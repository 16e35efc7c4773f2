"""The typer app: every command, registered in one place (one line each)."""

from __future__ import annotations

from pathlib import Path

import typer

from freshline.interfaces.cli import (
    acp_proxy,
    conversations,
    integrations,
    remotes,
    selftest,
    service,
    sessions,
    storage,
    store,
    team,
    tracking,
    watching,
    workspace,
)
from freshline.interfaces.cli.common import Group, HelpGroup, state

app = typer.Typer(
    cls=Group,
    no_args_is_help=True,
    add_completion=True,
    # Plain help, wrapped by click: rich's shows flags as taking a value (`--json <bool>`),
    # keeps a docstring's line breaks and reads `[model]` as markup.
    rich_markup_mode=None,
    help="freshline keeps AI agent conversations fresh about the files they work on.",
)


def _version(value: bool) -> None:
    if value:
        from freshline.interfaces.cli.fast import version_line

        typer.echo(version_line())
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    workspace_dir: Path | None = typer.Option(
        None, "--workspace", "-w",
        help="The workspace root (default: found from the cwd); before or after the command.",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """freshline keeps AI agent conversations fresh about the files they work on."""
    state(ctx).workspace = workspace_dir


app.command()(workspace.init)
app.add_typer(workspace.project_app, cls=HelpGroup, name="project")
app.command()(tracking.scan)
app.command()(watching.watch)
app.add_typer(service.service_app, cls=HelpGroup, name="service")
app.command()(tracking.status)
app.command()(tracking.changes)
app.command()(selftest.selftest)
app.command()(sessions.materialize)
app.add_typer(sessions.session_app, cls=HelpGroup, name="session")
app.command()(sessions.send)
app.command()(sessions.updates)
app.command()(conversations.sync)
app.command()(conversations.diff)
app.command()(conversations.log)
app.command()(conversations.publish)
app.command()(conversations.rewind)
app.command()(remotes.push)
app.command()(remotes.pull)
app.command()(integrations.chat)
app.add_typer(integrations.mcp_app, cls=HelpGroup, name="mcp")
app.add_typer(integrations.hook_app, cls=HelpGroup, name="hook")
app.command(context_settings=acp_proxy.CONTEXT)(acp_proxy.acp)
app.command()(integrations.demo)
app.command()(storage.gc)
app.command()(team.serve)
app.add_typer(team.user_app, cls=HelpGroup, name="user")
app.add_typer(store.store_app, cls=HelpGroup, name="store")
