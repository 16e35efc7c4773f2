"""`freshline push`, `pull` and `session fork`: conversations through a git remote, and
forks of a conversation here.

REMOTE is a remote of the checkout (`origin`), a URL or a path; with none, the checkout's
`origin` (or its only remote). A push that would drop the remote's events, or that raced
another push, changes nothing on the remote for those conversations and exits 3.
"""

from __future__ import annotations

from dataclasses import asdict

import typer

from freshline.interfaces.cli.common import JsonOption, emit, exit_with, manager
from freshline.interfaces.cli.output import note, say, warn
from freshline.interfaces.cli.sessions import session_app
from freshline.interfaces.text import plural

RemoteArg = typer.Argument(
    None, metavar="[REMOTE]", help="A remote of the checkout, a URL or a path (default: origin)."
)


def push(
    ctx: typer.Context,
    remote: str = RemoteArg,
    sessions: list[str] = typer.Option(
        None, "--session", "-s", help="Push only this session's conversation (repeatable)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Push conversations to a git remote, only ever forward (compare-and-swap).

    Example: freshline push origin --session 3f2a9c1b7d4e
    """
    from freshline.session import sharing

    with manager(ctx, flushes=False) as m:
        report = sharing.push(m, remote, sessions or ())
    data = asdict(report)
    if report.rejected:
        for conversation, why in report.rejected.items():
            warn(f"{conversation}: not pushed: {why}")
        exit_with(f"{plural(len(report.rejected), 'conversation')} not pushed to "
                  f"{report.remote}", 3, as_json, data)

    def human() -> None:
        say(f"pushed {plural(len(report.pushed), 'conversation')} to {report.remote}"
            f" ({len(report.up_to_date)} up to date)")

    emit(data, as_json, human)


def pull(ctx: typer.Context, remote: str = RemoteArg, as_json: bool = JsonOption) -> None:
    """Pull conversations from a git remote; a conversation both sides appended to is kept
    aside as the remote's (see `session fork --from`).

    Example: freshline pull origin
    """
    from freshline.session import sharing

    with manager(ctx) as m:
        pulled = sharing.pull(m, remote)
    report = pulled.report
    data = {**asdict(report), "adopted": pulled.adopted,
            "unknown_project": pulled.unknown_project}

    def human() -> None:
        say(f"pulled from {report.remote}: {len(report.created)} new, "
            f"{len(report.forwarded)} moved forward, {len(report.up_to_date)} up to date")
        for conversation, ref in report.diverged.items():
            say(f"  {conversation}: both sides appended; the remote's is kept as {ref}: "
                f"freshline session fork {conversation} --from {remote or report.remote}")
        for conversation in report.busy:
            say(f"  {conversation}: in use (a turn, or unrecorded edits in its worktree); "
                "the remote's is kept aside: pull again later")
        for conversation, project in pulled.unknown_project.items():
            say(f"  {conversation}: project '{project}' is not defined here; no session")

    emit(data, as_json, human)


@session_app.command("fork")
def session_fork(
    ctx: typer.Context,
    session_id: str,
    remote: str = typer.Option(
        None, "--from", help="Fork the head this remote had when both sides appended."
    ),
    at: str = typer.Option(
        None, "--at", help="Fork where this turn began (its number or commit in `log`)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Start a new session whose conversation continues from SESSION_ID's (its history is
    shared, never rewritten): from its head, from where turn --at began, or from the head
    a remote kept aside. SESSION_ID's own conversation is left as it is.

    Prints the new session's id, as `session new` does.

    Example: F=$(freshline session fork 3f2a9c1b7d4e --at 3)
    """
    from freshline.session import sharing

    with manager(ctx) as m:
        record = sharing.fork(m, session_id, remote, at)
    data = {"session": record.id, "from": session_id, "remote": remote, "at": at,
            "title": record.title}

    def human() -> None:
        say(record.id)
        note(f"forked {session_id} into {record.id}; continue with `freshline send "
             f"{record.id} MESSAGE` or `freshline chat --session {record.id}`")

    emit(data, as_json, human)
