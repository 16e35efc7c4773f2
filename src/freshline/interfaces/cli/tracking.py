"""`freshline scan`, `status` and `changes`: the tracker from the command line (`watch` is
in `watching.py`)."""

from __future__ import annotations

from typing import Any

import typer

from freshline.interfaces.cli import fast
from freshline.interfaces.cli.answers import change_dict, change_line
from freshline.interfaces.cli.common import JsonOption, config, emit, state
from freshline.interfaces.cli.output import say


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
    from freshline.errors import UsageError
    from freshline.tracker import Tracker

    tracker = Tracker(config(ctx))
    epoch = tracker.epoch(project)
    if not 0 <= since <= epoch:
        raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
    answer = tracker.changes_since(project, since)
    data: dict[str, Any] = {
        "project": project,
        "since": since,
        "epoch": answer.epoch,
        "compacted": answer.compacted,
        "changes": [change_dict(c) for c in answer.changes],
    }

    def human() -> None:
        if answer.compacted:
            say(f"the log no longer reaches epoch {since}: re-enumerate {project}")
        for c in data["changes"]:
            say(change_line(c))
        say(f"{project}: epoch {since} → {answer.epoch}")

    emit(data, as_json, human)
