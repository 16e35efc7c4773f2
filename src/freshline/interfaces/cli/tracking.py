"""`freshline scan`, `status` and `changes`: the tracker from the command line (`watch` is
in `watching.py`)."""

from __future__ import annotations

import typer

from freshline.interfaces.cli import fast
from freshline.interfaces.cli.answers import changes_data, changes_lines
from freshline.interfaces.cli.common import JsonOption, config, emit, state
from freshline.interfaces.cli.output import say_all


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
    as_json: bool = JsonOption,
) -> None:
    """Show what changed in PROJECT after epoch N (coalesced), or that the log was compacted.

    Example: freshline changes research --since 3
    """
    from freshline.tracker import Tracker

    data = changes_data(Tracker(config(ctx)), project, since)
    emit(data, as_json, lambda: say_all(changes_lines(data)))
