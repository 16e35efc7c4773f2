"""`freshline session rm` and `freshline gc`: keeping freshline's own data small."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from freshline.config import parse_duration
from freshline.errors import UsageError
from freshline.interfaces.cli.answers import human_bytes
from freshline.interfaces.cli.common import JsonOption, emit, manager
from freshline.interfaces.cli.output import say
from freshline.interfaces.cli.sessions import session_app
from freshline.interfaces.text import plural

if TYPE_CHECKING:  # the session layer loads only when a command runs
    from freshline.session.lifecycle import Collected


@session_app.command("rm")
def session_rm(
    ctx: typer.Context,
    session_ids: list[str] = typer.Argument(..., metavar="ID...", help="Sessions to remove."),
    archive: Path = typer.Option(
        None, "--archive", help="First write their conversations to this git bundle."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Remove sessions and their conversations (their objects go at `gc`).

    Removes each session's conversation ref, worktree, turn files and rows; every id is
    checked first, and a session in the middle of a turn is refused.

    Example: freshline session rm 3f2a9c1b7d4e --archive old-chat.bundle
    """
    from freshline.session import lifecycle

    with manager(ctx, flushes=False) as m:
        lifecycle.remove(m, session_ids, archive)
    ids = list(dict.fromkeys(session_ids))
    data = {"removed": ids, "archive": str(archive.resolve()) if archive else None}

    def human() -> None:
        for sid in ids:
            say(f"removed {sid}")
        if archive:
            say(f"archived to {archive}")

    emit(data, as_json, human)


def gc(
    ctx: typer.Context,
    older_than: str = typer.Option(
        "30d", "--older-than", help="Remove closed sessions unused this long (e.g. 30d, 12h)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would go; change nothing."),
    include_user_repo: bool = typer.Option(
        False, "--include-user-repo", help="Also run `git gc` (git's defaults) in your repo."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Remove what nobody needs any more, and say how much it freed.

    Closed sessions unused past an age, conversations and worktrees whose session is gone,
    snapshots no project needs; then git's gc on .freshline/conversations.git.

    Example: freshline gc --older-than 14d --dry-run
    """
    try:
        age = parse_duration(older_than)
    except ValueError as exc:
        raise UsageError(f"--older-than: {exc}") from None
    from freshline.session import lifecycle

    with manager(ctx, flushes=False) as m:
        done = lifecycle.collect(m, age, dry_run, include_user_repo)
    data: dict[str, Any] = {
        "dry_run": done.dry_run,
        "closed": done.closed,
        "sessions": done.sessions,
        "busy": done.busy,
        "conversations": done.conversations,
        "worktrees": done.worktrees,
        "documents": done.documents,
        "bytes_before": done.before,
        "bytes_after": done.after,
        "bytes_freed": done.freed,
    }
    emit(data, as_json, lambda: _report(done))


def _report(done: Collected) -> None:
    verb = "would remove" if done.dry_run else "removed"
    lines = [
        (f"{'would close' if done.dry_run else 'closed'} idle", done.closed),
        (f"{verb} sessions", done.sessions),
        (f"{verb} conversations without a session", done.conversations),
        (f"{verb} worktrees without a session", done.worktrees),
        ("left alone (a turn is running)", done.busy),
    ]
    for label, items in lines:
        if items:
            say(f"{label} ({len(items)}): {', '.join(items)}")
    if done.documents:
        say(f"{verb} {plural(len(done.documents), 'snapshot or marker', 'snapshots and markers')}"
            " no project needs")
    found = any(items for _, items in lines) or done.documents
    if not found and (done.dry_run or not done.freed):  # git's own gc may still free some
        say(f"nothing to remove; freshline's data takes {human_bytes(done.before)}")
    elif done.dry_run:
        say(f"a dry run: nothing was removed; freshline's data takes {human_bytes(done.before)}")
    else:
        say(f"freed {human_bytes(done.freed)} ({human_bytes(done.before)} → "
            f"{human_bytes(done.after)})")
