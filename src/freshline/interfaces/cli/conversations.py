"""`freshline sync`, `diff`, `log`, `publish`: a session's conversation in git.

Each checks the session first, so an unknown id gets the one "unknown session" message
every command gives.
"""

from __future__ import annotations

from dataclasses import asdict

import typer

from freshline.interfaces.cli.common import JsonOption, emit, manager
from freshline.interfaces.cli.output import say, warn
from freshline.interfaces.cli.stops import NOT_MERGED, stopped
from freshline.interfaces.lines import event_line
from freshline.interfaces.text import plural

LOG_WIDTH = 100  # characters of an event's content on its line


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
    from freshline.errors import ConflictStop

    with manager(ctx) as m:
        m.get(session_id)
        try:
            merged = m.sync(session_id, rev, with_conflicts)
        except ConflictStop as stop:
            stopped(session_id, stop, NOT_MERGED, as_json, {"session": session_id})
        head = m.conversations.head(session_id)
    data = {"session": session_id, "head": head, "merged": asdict(merged) if merged else None}

    def human() -> None:
        if merged is None:
            say(f"{rev} is already merged; nothing to do")
            return
        say(f"merged {rev} ({merged.to[:10]}): {plural(len(merged.paths), 'path')} changed")
        for conflict in merged.conflicts:
            say(f"  conflict ({conflict.kind}): {', '.join(conflict.paths)}")

    emit(data, as_json, human)


def diff(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show the conversation's own work: its head against the latest refresh parent.

    The conflicts it has not resolved yet follow, by kind, on standard error.

    Example: freshline diff 3f2a9c1b7d4e
    """
    with manager(ctx, flushes=False) as m:
        m.get(session_id)
        patch = m.conversations.diff(session_id)
        head = m.conversations.head(session_id)
        conflicts = m.conversations.unresolved_conflicts(session_id)
    data = {"session": session_id, "head": head, "patch": patch,
            "conflicts": [asdict(c) for c in conflicts]}

    def human() -> None:
        print(patch, end="")
        for conflict in conflicts:
            warn(f"unresolved conflict ({conflict.kind}): {', '.join(conflict.paths)}")

    emit(data, as_json, human)


def log(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show the transcript, one line per event (commit, author, tool, content), oldest first.

    Example: freshline log 3f2a9c1b7d4e --json
    """
    with manager(ctx, flushes=False) as m:
        m.get(session_id)
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
            say(event_line(e, LOG_WIDTH))

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
    with manager(ctx, flushes=False) as m:
        m.get(session_id)
        commit = m.conversations.publish(session_id, branch)
    emit(
        {"session": session_id, "branch": branch, "commit": commit},
        as_json,
        lambda: say(f"refs/heads/{branch} → {commit[:10]}"),
    )
