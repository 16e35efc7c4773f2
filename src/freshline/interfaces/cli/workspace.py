"""`freshline init` and `freshline project …`: the workspace and its projects.

Patterns are printed as they are written (`[status:active]`, `[[Note]]`, `Inbox/[ab].md`):
nothing here goes through a markup renderer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from freshline.interfaces.cli import fast
from freshline.interfaces.cli.answers import project_dict
from freshline.interfaces.cli.common import (
    JsonOption,
    autowatch,
    config,
    emit,
    manager,
    state,
    workspace_root,
)
from freshline.interfaces.cli.output import say, warn
from freshline.interfaces.cli.pages import channel_named, page_budget, print_page
from freshline.interfaces.cli.progress import activity
from freshline.interfaces.text import columns, plural

if TYPE_CHECKING:
    from freshline.config import Config, ProjectConfig

project_app = typer.Typer(help="Define and inspect projects: named scopes in the workspace.")


def init(
    directory: Path = typer.Argument(Path("."), help="The workspace root to initialize."),
    nested: bool = typer.Option(
        False, "--nested", help="Make a workspace inside another one (which then never "
        "tracks this one's freshline.toml and .freshline/)."),
    as_json: bool = JsonOption,
) -> None:
    """Create freshline.toml and .freshline/ in DIR (idempotent).

    Example: freshline init ~/notes
    """
    from freshline.config import init_workspace

    done = init_workspace(directory, nested=nested)
    root = str(directory.resolve())

    def human() -> None:
        for line in done or [f"{root} is already a freshline workspace; nothing to do"]:
            say(line)

    emit({"workspace": root, "actions": done}, as_json, human)


def matching_files(cfg: Config, name: str) -> int:
    """How many files the project includes now (the index brought up to date first)."""
    from freshline.tracker import Tracker

    tracker = Tracker(cfg)
    autowatch(cfg)
    tracker.flush()
    return len(tracker.files_in_scope(name))


def secrets_sentence(p: ProjectConfig) -> str:
    """What a project does with secrets, in words."""
    if not p.allow_secrets:
        return ("secrets (.env, *.pem, id_rsa*, .ssh/, ... see the README) are never in this "
                "project: never listed, read or sent to a model")
    named = ", ".join(p.allow_secrets)
    return (f"this project OPTS IN to secrets matching {named} (allow_secrets): such files are "
            "listed, read and may be sent to a model; every other secret stays refused")


@project_app.command("add")
def project_add(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="A simple identifier: letters, digits, _ and -."),
    include: list[str] = typer.Option(..., "--include", "-i", help="A pattern to include."),
    exclude: list[str] = typer.Option([], "--exclude", "-x", help="A pattern to exclude."),
    mode: str = typer.Option("live", "--mode", help="live or isolated."),
    as_json: bool = JsonOption,
) -> None:
    """Add a project to freshline.toml and say how many files it matches now.

    Comments and order in the file are kept.

    Example: freshline project add research --include Research/Papers --include '#paper'
    """
    from freshline.config import add_project, load_config

    root = workspace_root(ctx)
    project = add_project(root, name, include, exclude, mode)
    with activity(f"scanning the workspace for {name}'s files", as_json):
        files = matching_files(load_config(root), name)

    def human() -> None:
        say(f"added project {name}: {plural(files, 'file')} "
            f"{'matches' if files == 1 else 'match'} now")
        if not files:
            warn(f"no file matches {name} yet; check its patterns with "
                 f"`freshline project show {name}`")

    emit(project_dict(project) | {"files": files}, as_json, human)


@project_app.command("list")
def project_list(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """List the workspace's projects.

    Example: freshline project list --json
    """
    fast.projects(state(ctx).workspace, as_json)


@project_app.command("show")
def project_show(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """Show one project's patterns, what each one means, its signature, and whether it
    opted into any secrets.

    Example: freshline project show research
    """
    from freshline.scope import describe, parse_pattern

    project = config(ctx).project(name)

    def human() -> None:
        say(f"{name}  mode {project.mode.value}  signature {project.signature}")
        rows = [[label, raw, describe(parse_pattern(raw))]
                for label, patterns in (("include", project.include),
                                        ("exclude", project.exclude))
                for raw in patterns]
        for line in columns(["", "pattern", "meaning"], rows)[1:]:
            say("  " + line)
        say(f"  {secrets_sentence(project)}")

    emit(project_dict(project), as_json, human)


@project_app.command("rm")
def project_rm(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """Remove a project from freshline.toml (other projects' comments stay).

    Example: freshline project rm research
    """
    from freshline.config import remove_project

    remove_project(workspace_root(ctx), name)
    emit({"removed": name}, as_json, lambda: say(f"removed project {name}"))


@project_app.command("files")
def project_files(
    ctx: typer.Context,
    name: str,
    page: int = typer.Option(None, "--page", min=1, help="Print this page of the files and "
                             "documents (each with its snapshot), from 1."),
    folder: str = typer.Option("", "--folder", help="With --page: only this folder's (as "
                               "shown, absolute, or relative to the workspace)."),
    channel: str = typer.Option("send", "--channel", help="Size pages for this delivery "
                                "channel's budget (hook, mcp, chat, send, acp)."),
    as_json: bool = JsonOption,
) -> None:
    """List the files a project includes now (the workspace is scanned first), whole or a
    page at a time.

    A rolled-up manifest names the exact command, with --page: each page fits the
    channel's budget and names the next.

    Example: freshline project files research --page 1 --folder notes
    """
    from freshline.tracker import Tracker

    channel_named(channel)
    cfg = config(ctx)
    cfg.project(name)
    if page is not None:
        from freshline.session.delivery import files_page

        budget = page_budget(cfg, channel, as_json, name)
        with manager(ctx) as m:
            print_page(files_page(m, name, page, budget, folder), as_json)
        return
    tracker = Tracker(cfg)
    autowatch(cfg)
    tracker.flush()
    paths = [e.path for e in tracker.files_in_scope(name)]

    def human() -> None:
        from freshline.paths import shown

        for p in paths:
            say(shown(p))  # a name with a newline stays on its line
        say(plural(len(paths), "file"))

    emit(paths, as_json, human)
