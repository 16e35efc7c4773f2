"""`freshline watch`: have the service watch this workspace, stop it (`--stop`), or list
what it watches (`--list`)."""

from __future__ import annotations

from typing import Any

import typer

from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, config, emit, exit_with, workspace_root
from freshline.interfaces.cli.output import say, say_all
from freshline.interfaces.cli.watchers import listing_lines


def watch(
    ctx: typer.Context,
    stop: bool = typer.Option(False, "--stop", help="Stop watching this workspace."),
    list_all: bool = typer.Option(
        False, "--list", help="List every workspace the service watches."),
    as_json: bool = JsonOption,
) -> None:
    """Have the service watch this workspace: changes are logged and documents converted
    as they happen.

    The service (one per user, started by the first command that needs it) watches every
    workspace you used; this asks for this one now, starting the service if none runs.
    --stop stops watching this workspace until a command uses it again; --list shows
    every workspace watched: state, uptime, store, last error (see `freshline service`).

    Example: freshline watch --list
    """
    if stop and list_all:
        raise UsageError("give --stop or --list, not both")
    from freshline.interfaces import serviceclient

    if list_all:
        answer = serviceclient.ask({"op": "list"}, timeout=10)
        rows: list[dict[str, Any]] = answer["data"] if answer else []
        emit(rows, as_json, lambda: say_all(listing_lines(rows)))
        return
    root = str(workspace_root(ctx))
    if stop:
        answer = serviceclient.ask({"op": "unwatch", "root": root}, timeout=30)
        stopped = bool(answer and answer["data"]["stopped"])
        emit({"workspace": root, "stopped": stopped}, as_json, lambda: say(
            f"stopped watching {root}" if stopped else f"the service was not watching {root}"))
        return
    _watch(ctx, root, as_json)


def _watch(ctx: typer.Context, root: str, as_json: bool) -> None:
    from freshline.interfaces import autostart, serviceclient

    cfg = config(ctx)
    if not cfg.workspace.autowatch:
        exit_with(f"{root} says `autowatch = false` in its freshline.toml: the service "
                  "does not watch it", 2, as_json)
    answer = serviceclient.ask({"op": "watch", "root": root}, timeout=30)
    if answer is None:
        autostart.spawn([root])
        data: dict[str, Any] = {"workspace": root, "state": "starting"}
    else:
        data = answer["data"]
    emit(data, as_json, lambda: say(f"{root}: {data['state']} (see `freshline watch --list`)"))
