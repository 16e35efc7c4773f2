"""`freshline init` and `freshline project …`: the workspace and its projects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from freshline.config import ProjectConfig, add_project, init_workspace, remove_project
from freshline.interfaces.cli.common import JsonOption, config, console, emit, workspace_root
from freshline.scope import describe, parse_pattern
from freshline.tracker import Tracker

project_app = typer.Typer(help="Define and inspect projects: named scopes in the workspace.")


def init(
    directory: Path = typer.Argument(Path("."), help="The workspace root to initialize."),
    as_json: bool = JsonOption,
) -> None:
    """Create freshline.toml and .freshline/ in DIR (idempotent).

    Example: freshline init ~/notes
    """
    done = init_workspace(directory)
    root = str(directory.resolve())

    def human() -> None:
        for line in done or [f"{root} is already a freshline workspace; nothing to do"]:
            console.print(line)

    emit({"workspace": root, "actions": done}, as_json, human)


def project_dict(p: ProjectConfig) -> dict[str, Any]:
    """A project's definition as JSON-able data."""
    return {
        "name": p.name,
        "include": list(p.include),
        "exclude": list(p.exclude),
        "mode": p.mode.value,
        "allow_secrets": list(p.allow_secrets),
        "signature": p.signature,
    }


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
    """Add a project to freshline.toml (comments and order are kept).

    Example: freshline project add research --include Research/Papers --include '#paper'
    """
    project = add_project(workspace_root(ctx), name, include, exclude, mode)
    emit(project_dict(project), as_json, lambda: console.print(f"added project {name}"))


@project_app.command("list")
def project_list(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """List the workspace's projects.

    Example: freshline project list --json
    """
    projects = config(ctx).projects

    def human() -> None:
        table = Table("project", "mode", "include", "exclude")
        for p in projects.values():
            table.add_row(p.name, p.mode.value, ", ".join(p.include), ", ".join(p.exclude))
        console.print(table)

    emit([project_dict(p) for p in projects.values()], as_json, human)


@project_app.command("show")
def project_show(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """Show one project's patterns, what each one means, its signature, and whether it
    opted into any secrets.

    Example: freshline project show research
    """
    project = config(ctx).project(name)
    data = project_dict(project)

    def human() -> None:
        console.print(f"[bold]{name}[/bold]  mode={project.mode.value}")
        console.print(f"  signature {project.signature}")
        for label, patterns in (("include", project.include), ("exclude", project.exclude)):
            for raw in patterns:
                console.print(f"  {label}  {raw:<30} {describe(parse_pattern(raw))}")
        console.print(f"  {secrets_sentence(project)}", markup=False)

    emit(data, as_json, human)


@project_app.command("rm")
def project_rm(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """Remove a project from freshline.toml.

    Example: freshline project rm research
    """
    remove_project(workspace_root(ctx), name)
    emit({"removed": name}, as_json, lambda: console.print(f"removed project {name}"))


@project_app.command("files")
def project_files(ctx: typer.Context, name: str, as_json: bool = JsonOption) -> None:
    """List the files a project includes now (the workspace is scanned first).

    Example: freshline project files research
    """
    cfg = config(ctx)
    cfg.project(name)
    tracker = Tracker(cfg)
    tracker.flush()
    paths = [e.path for e in tracker.files_in_scope(name)]

    def human() -> None:
        for p in paths:
            console.print(p, markup=False)
        console.print(f"[dim]{len(paths)} files[/dim]")

    emit(paths, as_json, human)
