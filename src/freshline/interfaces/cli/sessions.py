"""`freshline session …`, `send`, `updates`, `materialize`: delivery from the command line."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.markup import escape
from rich.progress import Progress as Bar
from rich.table import Table

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send as send_turn
from freshline.config import Mode
from freshline.context import Channel
from freshline.errors import ConflictStop, SyncRequired
from freshline.interfaces.cli.common import JsonOption, config, console, emit, err_console
from freshline.materialize import MaterializeResult, Progress
from freshline.session import SessionManager
from freshline.store import SessionRecord

session_app = typer.Typer(help="Open, list, show and resume sessions.")
ModelOption = typer.Option(
    "echo", "--model", "-m", help="echo, scripted:FILE, openai:MODEL or anthropic:MODEL."
)
BaseUrlOption = typer.Option(None, "--base-url", help="An OpenAI- or Anthropic-compatible server.")
NoWaitOption = typer.Option(
    False, "--no-wait", help="Fail at once if another send on the session is running."
)


@contextmanager
def manager(ctx: typer.Context) -> Iterator[SessionManager]:
    """A session manager for this command's workspace, closed (workers stopped) after."""
    m = SessionManager(config(ctx))
    try:
        yield m
    finally:
        m.close()


def session_dict(s: SessionRecord) -> dict[str, Any]:
    """A session as JSON-able data (the manifest text left out)."""
    return {
        "id": s.id,
        "project": s.project,
        "state": s.state.value,
        "mode": s.mode,
        "cursor": s.cursor,
        "manifest_epoch": s.manifest_epoch,
        "created_at": s.created_at,
        "resumed_at": s.resumed_at,
        "pending_documents": s.pending_docs,
        "announced_failures": sorted(s.announced_failures),
        "target": s.target,
        "agent_session": agent_session(s),
    }


def agent_session(s: SessionRecord) -> str | None:
    """The other agent's session this one is pinned to, in words ("claude-code 7eac…"),
    or None (MCP sessions' ids are freshline's own)."""
    agent, _, theirs = (s.external_id or "").partition(":")
    return f"{agent} {theirs}" if agent == "claude-code" and theirs else None


def delivery_dict(m: SessionManager, s: SessionRecord) -> dict[str, Any]:
    """How the session's deliveries are acknowledged: the latest one taken, and how many
    are still out."""
    from freshline.session import tokens

    taken = tokens.last_acknowledged(m, s.id)
    return {
        "outstanding": len(tokens.outstanding(m, s.id)),
        "last_acknowledged": None if taken is None else {
            "token": taken.token, "channel": taken.channel, "how": taken.how,
            "note": taken.note, "covers": taken.covers,
        },
    }


@session_app.command("new")
def session_new(
    ctx: typer.Context,
    project: str = typer.Option(..., "--project", "-p", help="The project to talk about."),
    mode: Mode = typer.Option(None, "--mode", help="live or isolated (default: the project's)."),
    target: str = typer.Option(None, "--target", help="Isolated: the rev to follow."),
    as_json: bool = JsonOption,
) -> None:
    """Open a session: convert the project's documents and build its manifest.

    Example: freshline session new --project research
    """
    with manager(ctx) as m:
        s = m.new(project, mode, target)
    emit(session_dict(s), as_json, lambda: console.print(s.id))


@session_app.command("list")
def session_list(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """List sessions.

    Example: freshline session list
    """
    with manager(ctx) as m:
        sessions = m.sessions()

    def human() -> None:
        table = Table("id", "project", "state", "mode", "cursor", "agent session")
        for s in sessions:
            table.add_row(s.id, s.project, s.state.value, s.mode, str(s.cursor),
                          agent_session(s) or "")
        console.print(table)

    emit([session_dict(s) for s in sessions], as_json, human)


@session_app.command("show")
def session_show(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show one session's state and its manifest.

    Example: freshline session show 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        s = m.get(session_id)
        manifest = m.manifest_text(session_id)
        deliveries = delivery_dict(m, s)
    data = session_dict(s) | {"deliveries": deliveries, "manifest": manifest}

    def human() -> None:
        for key, value in session_dict(s).items():
            console.print(f"{key}: {value}", markup=False)
        console.print(_acknowledgement_line(deliveries), markup=False)
        console.print(manifest, markup=False)

    emit(data, as_json, human)


def _acknowledgement_line(deliveries: dict[str, Any]) -> str:
    taken = deliveries["last_acknowledged"]
    out = f"; {deliveries['outstanding']} outstanding" if deliveries["outstanding"] else ""
    if taken is None:
        return f"deliveries: none acknowledged yet{out}"
    how = {"token": "by its token", "transcript": "found in the agent's transcript",
           "printed": "acknowledged when printed"}[taken["how"]]
    note = f" ({taken['note']})" if taken["note"] else ""
    return f"deliveries: the last, {taken['token']} on {taken['channel']}, {how}{note}{out}"


@session_app.command("resume")
def session_resume(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Reopen a session: its manifest is rebuilt and delivered on the next send.

    Example: freshline session resume 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        s = m.resume(session_id)
    emit(session_dict(s), as_json, lambda: console.print(f"resumed {s.id}"))


def send(
    ctx: typer.Context,
    session_id: str,
    message: str,
    model: str = ModelOption,
    base_url: str = BaseUrlOption,
    no_wait: bool = NoWaitOption,
    as_json: bool = JsonOption,
) -> None:
    """Send MESSAGE in a session, with whatever changed delivered first (one send at a time
    per session: a second one waits for the first, or fails at once with --no-wait).

    Example: freshline send 3f2a9c1b7d4e "what changed in the papers?"
    """
    options = {"base_url": base_url} if base_url else {}
    backend = get_backend(model, **options)
    stream = None if as_json else (lambda chunk: console.print(chunk, end="", markup=False))

    def waiting(holder: str) -> None:
        err_console.print(f"waiting for another send on session {session_id} ({holder})…",
                          markup=False)

    with manager(ctx) as m:
        try:
            result = send_turn(m, session_id, message, backend, on_text=stream,
                               wait=not no_wait, on_wait=waiting)
        except (ConflictStop, SyncRequired) as stop:
            _stopped({"session": session_id, "accepted": False, "sent": False}, stop, as_json)
        m.settle()
    data = {
        "session": result.session,
        "accepted": result.accepted,
        "held": result.held,
        "wire_prompt": result.wire_prompt,
        "response": result.response,
        "cursor_before": result.cursor_before,
        "cursor_after": result.cursor_after,
        "head": result.head,
        "refreshed": result.refreshed,
        "conflicts": [],
    }
    emit(data, as_json, lambda: console.print())


def _stopped(data: dict[str, Any], stop: ConflictStop | SyncRequired, as_json: bool) -> NoReturn:
    """Report what stops the next send (a conflict, exit 3; a sync required, exit 4)."""
    conflicts = stop.kinds if isinstance(stop, ConflictStop) else {}
    data = data | {
        "stopped": "conflict" if isinstance(stop, ConflictStop) else "sync_required",
        "message": str(stop),
        "conflicts": [{"path": p, "kind": k} for p, k in sorted(conflicts.items())],
    }

    def human() -> None:
        err_console.print(f"[red]stopped:[/red] {escape(str(stop))}")
        for path, kind in sorted(conflicts.items()):
            err_console.print(f"  conflict ({kind}): {path}", markup=False)
        hint = "with `freshline sync`" if conflicts else "with `freshline sync SESSION REV`"
        err_console.print(f"the message was not sent; resolve {hint}", markup=False)

    emit(data, as_json, human)
    raise typer.Exit(stop.exit_code)


@session_app.command("close")
def session_close(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Close a session: sends are refused until `session resume` reopens it.

    Example: freshline session close 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        s = m.close_session(session_id)
    emit(session_dict(s), as_json, lambda: console.print(f"closed {s.id}"))


def updates(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show what the next send would deliver at its budget: the manifest when due, then
    the updates, including the refresh it would merge (delivers and moves nothing). Exits 3
    or 4 when the next send would stop on a conflict or need a sync.

    Example: freshline updates 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        try:
            block = m.preview(session_id, Channel.SEND)
        except (ConflictStop, SyncRequired) as stop:
            _stopped({"session": session_id, "blocks": None}, stop, as_json)
    emit(
        {"session": session_id, "blocks": block},
        as_json,
        lambda: console.print(block or "nothing new", markup=False),
    )


def materialize(
    ctx: typer.Context,
    project: str = typer.Argument(None, help="One project (default: all)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Convert failures again."),
    as_json: bool = JsonOption,
) -> None:
    """Convert documents (PDF, DOCX, PPTX, XLSX, HTML) to text snapshots now, and drop the
    snapshots and failure markers of documents no longer in any project.

    Example: freshline materialize research --retry-failed
    """
    results: dict[str, MaterializeResult] = {}
    with manager(ctx) as m:
        names = [project] if project else list(m.config.projects)
        for name in names:
            m.config.project(name)
            with _progress(as_json) as report:
                results[name] = m.materialize(name, retry_failed, progress=report)
        pruned = m.prune_documents()
    data: dict[str, Any] = {
        name: {
            "revision": r.revision,
            "complete": r.complete,
            "converted": r.converted,
            "snapshots": {k: str(v) for k, v in r.snapshots.items()},
            "failures": r.failures,
        }
        for name, r in results.items()
    }
    data = {"projects": data, "pruned": [str(p) for p in pruned]}

    def human() -> None:
        for name, r in results.items():
            console.print(
                f"{name}: {len(r.converted)} converted, {len(r.snapshots)} snapshots, "
                f"{len(r.failures)} failed"
            )
            for path, reason in sorted(r.failures.items()):
                console.print(f"  failed {path}: {reason}", markup=False)

    emit(data, as_json, human)


@contextmanager
def _progress(quiet: bool) -> Iterator[Any]:
    """A progress callback: a bar on a terminal, plain lines elsewhere, nothing for JSON."""
    if quiet:
        yield None
    elif sys.stdout.isatty():
        with Bar(console=console, transient=True) as bar:
            task = bar.add_task("converting", total=None)

            def tick(p: Progress) -> None:
                bar.update(task, total=p.total, completed=p.done, description=p.path)

            yield tick
    else:

        def line(p: Progress) -> None:
            if p.finished:
                status = f"failed: {p.reason}" if p.reason else "ok"
                console.print(f"[{p.done}/{p.total}] {p.path} {status}", markup=False)

        yield line
