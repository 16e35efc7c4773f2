"""What the typer commands share: the root group (the workspace option anywhere, every error
reported one way), the options given before the command, and the session manager.

Library modules are imported inside the functions that need them, so a command loads only
what it uses.
"""

from __future__ import annotations

import inspect
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

# typer vendors click and exports neither its Context nor its exceptions by name.
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer._click.formatting import HelpFormatter
from typer.core import TyperGroup

from freshline.errors import FreshlineError
from freshline.interfaces.cli.argv import normal_order, valueless_workspace, wants_json
from freshline.interfaces.cli.output import emit, fail, machine_failure

if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.session import SessionManager

JsonOption = typer.Option(False, "--json", help="Print JSON instead of text.")

__all__ = [
    "Group", "HelpGroup", "JsonOption", "autowatch", "config", "emit", "exit_with", "manager",
    "state", "workspace_root",
]


@dataclass
class State:
    """Options given before (or, hoisted, after) the command."""

    workspace: Path | None = None
    json: bool = False  # `--json` was given: errors are JSON on stdout too


class HelpGroup(TyperGroup):
    """A group whose command list gives each command's whole first paragraph, wrapped
    (click cuts it at the first sentence or ~45 characters, with `...`)."""

    def format_commands(  # type: ignore[override]
        self, ctx: typer.Context, formatter: HelpFormatter
    ) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                first = inspect.cleandoc(command.help or "").split("\n\n")[0]
                rows.append((name, " ".join(first.split())))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class Group(HelpGroup):
    """The root group: `--workspace` anywhere, `--json` before the command too, and every
    error as one line and an exit code (with `{"error": …, "exit": N}` on stdout under
    `--json`), whether the root's words or the command's were wrong."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        args = normal_order(args)
        as_json = state(ctx).json = wants_json(args)
        flag = valueless_workspace(args)
        if flag is not None:
            exit_with(f"option {flag} needs a value: the workspace's folder "
                      "(see `freshline --help`)", 2, as_json)
        try:
            return super().parse_args(ctx, args)
        except NoArgsIsHelpError:
            raise  # `freshline` alone prints the help
        except ClickException as exc:
            usage_failed(exc, as_json)

    # typer names click's Context only privately; typer.Context is the one commands receive.
    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        as_json = state(ctx).json
        try:
            return super().invoke(ctx)
        except NoArgsIsHelpError:
            raise  # `freshline project` alone prints the group's help
        except ClickException as exc:
            usage_failed(exc, as_json)
        except FreshlineError as exc:
            exit_with(str(exc), exc.exit_code, as_json)
        except (OSError, sqlite3.Error) as exc:
            # The machine said no (a full disk, a file where a folder should be): one line
            # and exit 1, never a traceback.
            exit_with(machine_failure(exc), 1, as_json)


def usage_failed(exc: ClickException, as_json: bool) -> NoReturn:
    """Report click's usage error in one line, naming the help of the command it was in."""
    where = getattr(exc, "ctx", None)
    # Named as people type it, whatever name the program was started under.
    path = " ".join(["freshline", *where.command_path.split()[1:]]) if where else "freshline"
    exit_with(f"{exc.format_message()} (see `{path} --help`)", exc.exit_code, as_json)


def exit_with(
    message: str, code: int, as_json: bool, extra: dict[str, Any] | None = None
) -> NoReturn:
    """Report an error (see `output.fail`) and leave with its exit code."""
    raise typer.Exit(fail(message, code, as_json, extra))


def state(ctx: typer.Context) -> State:
    """The options given before the command."""
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj


def workspace_root(ctx: typer.Context) -> Path:
    """The workspace this command works on: `--workspace`, else found from the cwd."""
    from freshline.config import find_workspace

    return find_workspace(Path.cwd(), state(ctx).workspace)


def config(ctx: typer.Context) -> Config:
    """The loaded, validated config of this command's workspace."""
    from freshline.config import load_config

    return load_config(workspace_root(ctx))


def autowatch(cfg: Config) -> None:
    """Have the service watch the workspace (starting it if none runs) when this command
    will flush (`autostart.watch`, which says so the first time)."""
    from freshline.interfaces.cli.autostart import watch

    watch(cfg)


@contextmanager
def manager(ctx: typer.Context, flushes: bool = True) -> Iterator[SessionManager]:
    """A session manager for this command's workspace, closed (workers stopped) after.
    A command that `flushes` has the service watch the workspace first (autowatch)."""
    from freshline.session import SessionManager

    cfg = config(ctx)
    m = SessionManager(cfg)
    if flushes:
        autowatch(cfg)
    try:
        yield m
    finally:
        m.close()
