"""`freshline sync`, `diff`, `log`, `publish`: a session's conversation in git."""

from __future__ import annotations

from dataclasses import asdict

import typer

from freshline.interfaces.cli.common import JsonOption, console, emit, err_console
from freshline.interfaces.cli.sessions import manager


def sync(
    ctx: typer.Context,
    session_id: str,
    rev: str,
    with_conflicts: bool = typer.Option(
        False, "--with-conflicts", help="Record the merge with conflict markers to resolve."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Merge REV into the conversation now (the answer to exit 4, "sync required").

    Example: freshline sync 3f2a9c1b7d4e origin/main
    """
    with manager(ctx) as m:
        merged = m.sync(session_id, rev, with_conflicts)
        head = m.conversations.head(session_id)
    data = {"session": session_id, "head": head, "merged": asdict(merged) if merged else None}

    def human() -> None:
        if merged is None:
            console.print(f"{rev} is already merged; nothing to do")
            return
        console.print(f"merged {rev} ({merged.to[:10]}): {len(merged.paths)} paths changed")
        for conflict in merged.conflicts:
            console.print(f"  conflict ({conflict.kind}): {', '.join(conflict.paths)}",
                          markup=False)

    emit(data, as_json, human)


def diff(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show the conversation's own work: its head against the latest refresh parent, and
    the conflicts it has not resolved yet, by kind (on standard error).

    Example: freshline diff 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        patch = m.conversations.diff(session_id)
        conflicts = m.conversations.unresolved_conflicts(session_id)
    data = {"session": session_id, "patch": patch, "conflicts": [asdict(c) for c in conflicts]}

    def human() -> None:
        console.print(patch, markup=False, end="")
        for conflict in conflicts:
            err_console.print(f"unresolved conflict ({conflict.kind}): "
                              f"{', '.join(conflict.paths)}", markup=False)

    emit(data, as_json, human)


def log(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show the transcript: the conversation's first-parent chain, oldest first.

    Example: freshline log 3f2a9c1b7d4e --json
    """
    with manager(ctx) as m:
        events = m.conversations.log(session_id)
    data = [
        {
            "commit": e.commit,
            "author": e.author.value,
            "content": e.content,
            "tool": e.tool,
            "refresh": asdict(e.refresh) if e.refresh else None,
            "sync": asdict(e.sync) if e.sync else None,
        }
        for e in events
    ]

    def human() -> None:
        for e in events:
            label = f"{e.author.value}" + (f" ({e.tool})" if e.tool else "")
            console.print(f"[bold]{label}[/bold] [dim]{(e.commit or '')[:10]}[/dim]")
            if e.content:
                console.print(e.content, markup=False)

    emit(data, as_json, human)


def publish(
    ctx: typer.Context,
    session_id: str,
    branch: str = typer.Option(..., "--branch", "-b", help="The branch to point at the work."),
    as_json: bool = JsonOption,
) -> None:
    """Publish the conversation's work as a branch (refused, exit 3, while a recorded
    conflict is unresolved).

    Example: freshline publish 3f2a9c1b7d4e --branch agent/fix-parser
    """
    with manager(ctx) as m:
        commit = m.conversations.publish(session_id, branch)
    emit(
        {"session": session_id, "branch": branch, "commit": commit},
        as_json,
        lambda: console.print(f"refs/heads/{branch} → {commit[:10]}"),
    )
