"""`freshline session …`, `send`, `updates`, `materialize`: delivery from the command line."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from freshline.config import Mode
from freshline.errors import UsageError
from freshline.interfaces.cli.answers import (
    STATE_WORDS,
    session_dict,
    sessions_data,
    sessions_lines,
    updates_lines,
    when,
)
from freshline.interfaces.cli.common import JsonOption, emit, manager
from freshline.interfaces.cli.deliveries import acknowledgement_line, delivery_dict
from freshline.interfaces.cli.output import say, say_all, warn
from freshline.interfaces.cli.progress import activity
from freshline.interfaces.cli.replies import TurnPrinter
from freshline.interfaces.cli.stops import NEXT_SEND_STOPS, NOT_SENT, stopped
from freshline.interfaces.text import plural

if TYPE_CHECKING:
    from freshline.materialize import MaterializeResult
    from freshline.store import SessionRecord

# `manager` is imported from here by the command modules that came before common had it.
__all__ = ["BaseUrlOption", "ModelOption", "manager", "read_message", "session_app"]

session_app = typer.Typer(help="Open, list, show and resume sessions.")
ModelOption = typer.Option(
    None, "--model", "-m",
    help="echo, scripted:FILE, openai:MODEL or anthropic:MODEL (default: [model] default in "
    "freshline.toml, else echo).",
)
BaseUrlOption = typer.Option(None, "--base-url", help="An OpenAI- or Anthropic-compatible server.")
NoWaitOption = typer.Option(
    False, "--no-wait", help="Fail at once if another send on the session is running."
)
STDIN = "-"


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
    with manager(ctx) as m, activity(f"opening a session on {project}", as_json) as shown:
        s = m.new(project, mode, target, progress=shown.documents)
    emit(session_dict(s), as_json, lambda: say(s.id))


@session_app.command("list")
def session_list(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """List sessions, the one used last at the bottom.

    Each with its agent (claude-code, gemini-cli or codex through their hooks, else its
    channel: chat, send, mcp, acp), its state (new: nothing sent yet; active; closed),
    when it was opened and last used, its first message or prompt as a title and its
    conversation's size.

    Example: freshline session list
    """
    with manager(ctx) as m:
        data = sessions_data(m)
    emit(data, as_json, lambda: say_all(sessions_lines(data)))


def describe_session(s: SessionRecord, epoch: int) -> list[str]:
    """A session in sentences: what it is, what the agent was told, what comes next."""
    lines = [f"Session {s.id} on project {s.project} ({s.mode}), {STATE_WORDS[s.state.value]}; "
             f"opened {when(s.created_at)}"
             + (f", resumed {when(s.resumed_at)}." if s.resumed_at else ".")]
    if s.target:
        lines.append(f"It follows {s.target} (the checkout target).")
    if s.cursor is None:
        lines.append("The agent has been told nothing yet.")
    else:
        lines.append(f"The agent has been told everything up to epoch {s.cursor}.")
    behind = epoch - s.cursor if s.cursor is not None else None
    if s.needs_manifest:
        lines.append(f"The next send delivers the project manifest (built at epoch "
                     f"{s.manifest_epoch})" + (" and what changed after it." if epoch >
                                                s.manifest_epoch else "."))
    elif behind:
        lines.append(f"The project is at epoch {epoch}: the next send delivers "
                     f"{plural(behind, 'epoch')} of changes.")
    else:
        lines.append(f"The project is at epoch {epoch}: nothing new to deliver.")
    if s.pending_docs:
        lines.append(f"Announced as converting: {', '.join(s.pending_docs)}.")
    if s.announced_failures:
        lines.append(f"Announced as failed to convert: {', '.join(sorted(s.announced_failures))}.")
    return lines


@session_app.command("show")
def session_show(
    ctx: typer.Context,
    session_id: str,
    manifest: bool = typer.Option(False, "--manifest", help="Also print the manifest block."),
    as_json: bool = JsonOption,
) -> None:
    """Show one session in a few sentences (and its manifest with --manifest).

    Example: freshline session show 3f2a9c1b7d4e
    """
    with manager(ctx, flushes=False) as m:
        s = m.get(session_id)
        epoch = m.tracker.epoch(s.project)
        text = m.manifest_text(session_id)
        deliveries = delivery_dict(m, s)

    def human() -> None:
        for line in describe_session(s, epoch):
            say(line)
        taken = acknowledgement_line(deliveries)
        if taken:
            say(taken)
        if manifest:
            say()
            say(text)

    data = {"manifest": text, "project_epoch": epoch, "deliveries": deliveries}
    emit(session_dict(s) | data, as_json, human)


@session_app.command("resume")
def session_resume(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Reopen a session: its manifest is rebuilt and delivered on the next send.

    Example: freshline session resume 3f2a9c1b7d4e
    """
    with manager(ctx) as m:
        s = m.resume(session_id)
    emit(session_dict(s), as_json, lambda: say(f"resumed {s.id}"))


@session_app.command("close")
def session_close(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Close a session: sends are refused until `session resume` reopens it.

    Example: freshline session close 3f2a9c1b7d4e
    """
    with manager(ctx, flushes=False) as m:
        s = m.close_session(session_id)
    emit(session_dict(s), as_json, lambda: say(f"closed {s.id}"))


def read_message(message: str) -> str:
    """The message to send: MESSAGE, or standard input for `-`; UsageError when empty."""
    text = sys.stdin.read() if message == STDIN else message
    if not text.strip():
        where = "standard input was empty" if message == STDIN else "the message is empty"
        raise UsageError(f"{where}: nothing to send (give a MESSAGE, or - to read it from "
                         "standard input)")
    return text.rstrip("\n") if message == STDIN else text


def send(
    ctx: typer.Context,
    session_id: str,
    message: str = typer.Argument(..., help="What to say; - reads it from standard input."),
    model: str = ModelOption,
    base_url: str = BaseUrlOption,
    no_wait: bool = NoWaitOption,
    as_json: bool = JsonOption,
) -> None:
    """Send MESSAGE in a session, with whatever changed delivered first.

    One send at a time per session: a second one waits for the first, or fails at once
    with --no-wait.

    Example: freshline send 3f2a9c1b7d4e "what changed in the papers?"
    """
    from freshline.agent.backends import backend_for
    from freshline.agent.runtime import send as send_turn
    from freshline.errors import ConflictStop, SyncRequired

    text = read_message(message)

    def waiting(holder: str) -> None:
        warn(f"waiting for another send on session {session_id} ({holder})…")

    printer = None if as_json else TurnPrinter()
    with manager(ctx) as m:
        m.get(session_id)
        backend = backend_for(m.config.model, model, base_url)
        try:
            result = send_turn(m, session_id, text, backend,
                               on_text=printer.text if printer else None,
                               wait=not no_wait, on_wait=waiting,
                               on_event=printer.event if printer else None)
        except (ConflictStop, SyncRequired) as stop:
            stopped(session_id, stop, NOT_SENT, as_json,
                    {"session": session_id, "accepted": False, "sent": False})
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
    emit(data, as_json, lambda: None)  # people saw the turn as it happened


def updates(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show what the next send would deliver, at its budget (delivers and moves nothing).

    The manifest when one is due, then the updates, including the refresh it would merge.
    Exits 3 or 4 when the next send would stop on a conflict or need a sync.

    Example: freshline updates 3f2a9c1b7d4e
    """
    from freshline.context import Channel
    from freshline.errors import ConflictStop, SyncRequired

    with manager(ctx) as m:
        try:
            block = m.preview(session_id, Channel.SEND)
        except (ConflictStop, SyncRequired) as stop:
            stopped(session_id, stop, NEXT_SEND_STOPS, as_json,
                    {"session": session_id, "blocks": None})
    data = {"session": session_id, "blocks": block}
    emit(data, as_json, lambda: say_all(updates_lines(data)))


def materialize(
    ctx: typer.Context,
    project: str = typer.Argument(None, help="One project (default: all)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Convert failures again."),
    as_json: bool = JsonOption,
) -> None:
    """Convert documents (PDF, DOCX, PPTX, XLSX, HTML) to text snapshots now.

    Snapshots and failure markers of documents no longer in any project are dropped. A
    document that fails to convert is listed with its reason; the exit code stays 0.

    Example: freshline materialize research --retry-failed
    """
    results: dict[str, MaterializeResult] = {}
    with manager(ctx) as m:
        names = [project] if project else list(m.config.projects)
        for name in names:
            m.config.project(name)
            with activity(f"{name}: converting documents", as_json) as shown:
                results[name] = m.materialize(name, retry_failed, progress=shown.documents)
        pruned = m.prune_documents()
    # A run sends failures to a worker too: they are counted once, as failed.
    converted = {name: [p for p in r.converted if p not in r.failures]
                 for name, r in results.items()}
    data: dict[str, Any] = {
        name: {
            "revision": r.revision,
            "complete": r.complete,
            "converted": converted[name],
            "snapshots": {k: str(v) for k, v in r.snapshots.items()},
            "failures": r.failures,
        }
        for name, r in results.items()
    }
    data = {"projects": data, "pruned": [str(p) for p in pruned]}

    def human() -> None:
        for name, r in results.items():
            say(f"{name}: {len(converted[name])} converted, "
                f"{plural(len(r.snapshots), 'snapshot')}, {len(r.failures)} failed")
            for path, reason in sorted(r.failures.items()):
                say(f"  failed {path}: {reason}")

    emit(data, as_json, human)
