"""`freshline watch`: run the workspace's watcher (`daemon.py`), stop it (`--stop`), or list
every watcher of this user (`--list`)."""

from __future__ import annotations

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli import daemon
from freshline.interfaces.cli.common import JsonOption, config, emit, exit_with, workspace_root
from freshline.interfaces.cli.output import say
from freshline.interfaces.cli.watchers import listing_data, listing_lines


def watch(
    ctx: typer.Context,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Log only warnings and errors."),
    idle_exit: int = typer.Option(
        None, "--idle-exit", min=1, metavar="SECONDS",
        help="Exit after this many seconds without a request (the autowatch uses it).",
    ),
    stop: bool = typer.Option(False, "--stop", help="Stop this workspace's watcher."),
    list_all: bool = typer.Option(
        False, "--list", help="List every watcher of yours on this machine."),
    as_json: bool = JsonOption,
) -> None:
    """Watch the workspace, log what changes and convert changed documents, until Ctrl-C.

    Each batch's changed paths and each converted document get a line (--quiet: only
    problems). One watcher per workspace: a second one exits 2. --stop stops the
    workspace's watcher (the next command that flushes starts a new one, unless autowatch
    is off); --list shows every running watcher: workspace, pid, uptime, store, last error.

    Example: freshline watch --list
    """
    if stop and list_all:
        raise UsageError("give --stop or --list, not both")
    if list_all:
        from freshline.tracker.registry import listing

        rows = listing_data(listing())

        def human() -> None:
            for line in listing_lines(rows):
                say(line)

        emit(rows, as_json, human)
    elif stop:
        _stop(ctx, as_json)
    elif as_json:
        raise UsageError("--json goes with --list or --stop")
    else:
        code = daemon.run(config(ctx), quiet, idle_exit)
        if code:
            raise typer.Exit(code)


def _stop(ctx: typer.Context, as_json: bool) -> None:
    """Stop the workspace's watcher and wait until it has let go of the workspace."""
    from freshline.tracker.autowatch import stop
    from freshline.tracker.watchlock import holder

    root = workspace_root(ctx)
    pid = holder(root)
    if pid is not None and not stop(root):
        exit_with(f"the watcher of {root} (pid {pid}) did not stop; stop it with "
                  f"`kill {pid}`", 1, as_json)
    data = {"workspace": str(root), "stopped": pid}

    def human() -> None:
        say(f"stopped the watcher of {root} (pid {pid})" if pid is not None
            else f"no watcher is running on {root}")

    emit(data, as_json, human)
