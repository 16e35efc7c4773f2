"""`freshline scan`, `status` and `changes`: the tracker from the command line (`watch` is
in `watching.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from freshline.interfaces.cli import fast
from freshline.interfaces.cli.answers import changes_data, changes_lines
from freshline.interfaces.cli.common import JsonOption, config, emit, manager, state
from freshline.interfaces.cli.output import say_all
from freshline.interfaces.cli.pages import channel_named, page_budget, print_page

if TYPE_CHECKING:
    from freshline.context import Budget


def scan(
    ctx: typer.Context,
    full: bool = typer.Option(False, "--full", help="Walk the whole workspace even when a "
                              "watcher runs."),
    as_json: bool = JsonOption,
) -> None:
    """Bring the index up to date now and show what changed since the last scan, per project.

    With a live watcher only the paths it saw change are checked; --full walks everything.
    What the watcher logged meanwhile is shown too.

    Example: freshline scan --json
    """
    fast.scan(state(ctx).workspace, as_json, full)


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Show each project's epoch, compaction point, files, documents by status, and the watcher.

    Example: freshline status
    """
    fast.status(state(ctx).workspace, as_json)


def changes(
    ctx: typer.Context,
    project: str,
    since: int = typer.Option(0, "--since", help="Report changes after this epoch."),
    page: int = typer.Option(None, "--page", min=1, help="Print this page of the list, "
                             "as the updates block words it (from 1)."),
    channel: str = typer.Option("send", "--channel", help="Size pages for this delivery "
                                "channel's budget (hook, mcp, chat, send, acp)."),
    folder: str = typer.Option("", "--folder", help="Page only the changes under this "
                               "folder (workspace-relative or absolute; from page 1)."),
    as_json: bool = JsonOption,
) -> None:
    """Show what changed in PROJECT after epoch N (the net changes), whole or a page at a time.

    A rolled-up block names the exact command, with --page: each page fits the channel's
    budget and names the next; --folder pages one folder's changes. Older changes the log
    keeps only as counts are shown as counts.

    Example: freshline changes research --since 3 --page 1 --folder notes/2024
    """
    channel_named(channel)
    if page is not None or folder:
        budget = page_budget(config(ctx), channel, as_json, project)
        _changes_page(ctx, project, since, page or 1, budget, as_json, folder)
        return
    from freshline.tracker import Tracker

    cfg = config(ctx)
    data = changes_data(Tracker(cfg), project, since)
    fast.started(cfg)
    emit(data, as_json, lambda: say_all(changes_lines(data)))


def _changes_page(
    ctx: typer.Context, project: str, since: int, page: int, budget: Budget, as_json: bool,
    folder: str,
) -> None:
    from freshline.errors import UsageError
    from freshline.session.delivery import project_changes_page

    with manager(ctx) as m:
        m.tracker.flush()
        epoch = m.tracker.epoch(project)
        if not 0 <= since <= epoch:
            raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
        print_page(project_changes_page(m, project, since, page, budget, folder=folder),
                   as_json)
