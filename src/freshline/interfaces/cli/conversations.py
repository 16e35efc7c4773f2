"""`freshline sync`, `diff`, `log`, `publish`, `rewind`: a session's conversation in git.

Each checks the session first, so an unknown id gets the one "unknown session" message
every command gives.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from freshline.interfaces.cli.common import JsonOption, emit, exit_with, manager
from freshline.interfaces.cli.output import note, say, warn
from freshline.interfaces.cli.stops import NOT_MERGED, stopped
from freshline.interfaces.hook import transcript_hint
from freshline.interfaces.lines import (
    live_lines,
    logged_line,
    overwrite_line,
    overwrite_lines,
    rewind_summary,
)
from freshline.interfaces.text import plural

if TYPE_CHECKING:
    from freshline.conversation import Conflict
    from freshline.conversation.events import RewindMode
    from freshline.conversation.rewind import Overwrite, RewindPlan
    from freshline.session import SessionManager
    from freshline.session.authorship import WorkspaceChanges
    from freshline.session.rewinding import Confirm, RewindResult
    from freshline.store import SessionRecord

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


def diff(
    ctx: typer.Context,
    session_id: str,
    other: str = typer.Argument(
        None, metavar="[OTHER]", help="Another session (a fork): its head against this one's."
    ),
    start: str = typer.Option(
        None, "--from", metavar="TURN", help="The files where this turn began (see `log`)."
    ),
    end: str = typer.Option(
        None, "--to", metavar="TURN", help="…against where this turn began (default: now)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Show the conversation's own work: its head against the latest refresh parent; with
    OTHER, the patch from this session's head to OTHER's (two forks compared); with
    --from (and --to), the patch between two of its turns (another agent's prompts too).

    The conflicts it has not resolved yet follow, by kind, on standard error. A live
    session's agent only reads your workspace: it has no work of its own, and what the
    workspace did between its first turn and its last (and who did it) is said on
    standard error instead.

    Example: freshline diff 3f2a9c1b7d4e --from 2 --to 5
    """
    from freshline.errors import UsageError
    from freshline.session.authorship import workspace_changes

    if end is not None and start is None:
        raise UsageError("--to needs --from")
    if start is not None and other is not None:
        raise UsageError("give OTHER or --from, not both")
    conflicts: list[Conflict] = []
    live: WorkspaceChanges | None = None
    with manager(ctx, flushes=False) as m:
        s = _written(m, session_id)
        if start is not None:
            patch = m.conversations.diff_turns(session_id, start, end)
        elif other is not None:
            m.get(other)
            patch = m.conversations.diff_between(session_id, other)
        elif s.mode == "live":
            patch, live = "", workspace_changes(m, session_id)
        else:
            patch = m.conversations.diff(session_id)
            conflicts = m.conversations.unresolved_conflicts(session_id)
        head = m.conversations.head(session_id)
        other_head = m.conversations.head(other) if other is not None else None
    data: dict[str, Any] = {"session": session_id, "head": head, "patch": patch,
                            "conflicts": [asdict(c) for c in conflicts]}
    if other is not None:
        data |= {"other": other, "other_head": other_head}
    if live is not None:
        data["live"] = asdict(live)

    def human() -> None:
        print(patch, end="")
        for conflict in conflicts:
            warn(f"unresolved conflict ({conflict.kind}): {', '.join(conflict.paths)}")
        if live is not None:
            for line in live_lines(session_id, live):
                note(line)

    emit(data, as_json, human)


def log(ctx: typer.Context, session_id: str, as_json: bool = JsonOption) -> None:
    """Show the transcript, one line per event (turn number, commit, author, tool,
    content), oldest first; events a rewind took out are marked rewound.

    Example: freshline log 3f2a9c1b7d4e --json
    """
    from freshline.conversation import views

    with manager(ctx, flushes=False) as m:
        _written(m, session_id)
        events = m.conversations.log(session_id)
    numbers, rewound = views.turn_numbers(events), views.rewound(events)
    data = [
        {
            "commit": e.commit,
            "turn": numbers.get(i),
            "rewound": i in rewound,
            "author": e.author.value,
            "content": e.content,
            "tool": e.tool,
            "refresh": asdict(e.refresh) if e.refresh else None,
            "sync": asdict(e.sync) if e.sync else None,
            "rewind": asdict(e.rewind) if e.rewind else None,
        }
        for i, e in enumerate(events)
    ]

    def human() -> None:
        for i, e in enumerate(events):
            say(logged_line(e, numbers.get(i), i in rewound, LOG_WIDTH))

    emit(data, as_json, human)


def rewind(
    ctx: typer.Context,
    session_id: str,
    turn: str = typer.Argument(..., help="A turn's number in `freshline log`, or its commit."),
    code: bool = typer.Option(False, "--code", help="Put back the files only."),
    conversation: bool = typer.Option(
        False, "--conversation", help="Put back the transcript only (what the model is given)."
    ),
    both: bool = typer.Option(False, "--both", help="Put back both (the default)."),
    force: bool = typer.Option(
        False, "--force", help="Live sessions: put back the files the conversation wrote. "
        "Another agent's sessions: rewind even though its agent seems mid-turn."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Overwrite others' changes unasked."),
    as_json: bool = JsonOption,
) -> None:
    """Rewind a session to where TURN began: the files as that turn saw them, the
    transcript up to the turn before, or both. Nothing is deleted: the rewind is a new
    event, and the turns after it stay in the log, marked rewound.

    Paths someone other than the conversation changed since (by hand, a git operation,
    another session) are named first; on a terminal you are asked, elsewhere --yes says
    to overwrite them (without it nothing changes, exit 3). A live session's files are
    your workspace: its code goes back only with --force, and then only the files the
    conversation itself wrote. Another agent's session (Claude Code, Gemini CLI, Codex,
    an ACP agent) rewinds its files (--code, its default) to where that prompt began,
    whoever changed them since; its transcript is the agent's own, and it is refused
    while the agent is mid-turn.

    Example: freshline rewind 3f2a9c1b7d4e 3 --code
    """
    from freshline.conversation.events import RewindMode
    from freshline.errors import RewindStop, UsageError

    chosen = [m for m, on in ((RewindMode.CODE, code), (RewindMode.CONVERSATION, conversation),
                              (RewindMode.BOTH, both)) if on]
    if len(chosen) > 1:
        raise UsageError("give one of --code, --conversation and --both")

    asked: list[RewindPlan] = []

    def confirm(plan: RewindPlan) -> bool:
        asked.append(plan)
        if yes:
            return True
        if as_json or not (sys.stdin.isatty() and sys.stderr.isatty()):
            return False
        sys.stderr.write("".join(f"{line}\n" for line in overwrite_lines(plan)))
        return typer.confirm("overwrite them? (what they hold stays in the conversation's "
                             "history)", default=False, err=True)

    with manager(ctx) as m:
        try:
            done = _rewound(m, session_id, turn, chosen[0] if chosen else None, force, confirm)
        except RewindStop as stop:
            _refused(str(stop), asked[-1], as_json)
    data = {"session": done.session, "head": done.head, **asdict(done.rewind),
            "restored": list(done.restored),
            "overwrites": [_overwrite_dict(o) for o in done.overwrites]}
    def human() -> None:
        for line in rewind_summary(done):
            say(line)

    emit(data, as_json, human)


def _written(m: SessionManager, session_id: str) -> SessionRecord:
    """The session, its last checkpoint written first when a killed process left it."""
    s = m.get(session_id)
    if s.checkpoints:
        from freshline.session.checkpoints import finish

        finish(m, s.id)
    return s


def _rewound(
    m: SessionManager, session_id: str, turn: str, mode: RewindMode | None, force: bool,
    confirm: Confirm,
) -> RewindResult:
    """The rewind of a session of freshline's own (both by default) or of another agent's
    (its files: `checkpoint_rewind`)."""
    from freshline.conversation.events import RewindMode
    from freshline.session.checkpoint_rewind import rewind_files
    from freshline.session.rewinding import rewind as rewind_session

    s = m.get(session_id)
    if not s.checkpoints:
        return rewind_session(m, session_id, turn, mode or RewindMode.BOTH, force, confirm)
    return rewind_files(m, s, turn, mode or RewindMode.CODE, force, confirm,
                        transcript_hint(s))


def _refused(message: str, plan: RewindPlan, as_json: bool) -> NoReturn:
    """Nothing was overwritten: say which paths would have been, and exit 3."""
    if not as_json:
        for o in plan.overwrites:
            sys.stderr.write(f"  {overwrite_line(o)}\n")
    overwrites = [_overwrite_dict(o) for o in plan.overwrites]
    exit_with(message, 3, as_json, {"overwrites": overwrites})


def _overwrite_dict(o: Overwrite) -> dict[str, Any]:
    return {"path": o.path, "by": o.by.value, "name": o.name, "turn": o.turn}


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
