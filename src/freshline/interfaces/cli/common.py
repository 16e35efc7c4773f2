"""What every command shares: the workspace option, JSON or rich output, error exits."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from freshline.config import Config, find_workspace, load_config
from freshline.errors import FreshlineError, os_failure
from freshline.paths import shown

console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOption = typer.Option(False, "--json", help="Print JSON instead of text.")


@dataclass
class State:
    """Options given before the command."""

    workspace: Path | None = None


class Group(TyperGroup):
    """A command group that turns freshline's errors into one line and an exit code."""

    # typer vendors click and names its Context only privately; typer.Context is the one
    # every command receives.
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except FreshlineError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(exc.exit_code) from None
        except (OSError, sqlite3.Error) as exc:
            # The machine said no (a full disk, a file where a folder should be): one line
            # and exit 1, never a traceback.
            message = os_failure(exc) if isinstance(exc, OSError) else f"the store failed: {exc}"
            err_console.print(f"[red]error:[/red] {escape(shown(str(message)))}")
            raise typer.Exit(1) from None


def state(ctx: typer.Context) -> State:
    """The options given before the command."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj


def workspace_root(ctx: typer.Context) -> Path:
    """The workspace this command works on: `--workspace`, else found from the cwd."""
    return find_workspace(Path.cwd(), state(ctx).workspace)


def config(ctx: typer.Context) -> Config:
    """The loaded, validated config of this command's workspace."""
    return load_config(workspace_root(ctx))


def emit(data: Any, as_json: bool, human: Callable[[], None]) -> None:
    """Print `data` as JSON, or call `human` to print it for people."""
    if as_json:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    else:
        human()
