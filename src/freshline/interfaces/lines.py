"""Library records as one line each, for the CLI, the chat and the demo alike."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from freshline.interfaces.text import clip, plural

if TYPE_CHECKING:
    from freshline.agent.messages import TurnEvent
    from freshline.conversation import Event
    from freshline.conversation.rewind import Overwrite, RewindPlan
    from freshline.session.authorship import Authored, WorkspaceChanges
    from freshline.session.rewinding import RewindResult


def event_line(event: Event, width: int = 60) -> str:
    """One transcript event: commit, author, tool or merge, the content on one line, clipped."""
    tag = event.tool or ("merge" if event.merged else "rewind" if event.rewind else "")
    commit = (event.commit or "")[:10]
    return f"{commit} {event.author.value:<9} {tag:<6} {clip(event.content, width)}".rstrip()


def tool_lines(events: Iterable[TurnEvent], width: int = 60) -> list[str]:
    """One line per tool call of a turn (see `tool_line`)."""
    return [line for line in (tool_line(e, width) for e in events) if line is not None]


def tool_line(event: TurnEvent, width: int = 60) -> str | None:
    """A tool call on one line: the tool, its arguments and its result (a refusal says
    why), clipped; None for an event that is not a tool call."""
    name = event.extra.get("tool")
    if event.author.value != "tool" or not name:
        return None
    args = json.dumps(event.extra.get("args", {}), ensure_ascii=False)
    return f"tool {name} {clip(args, width)} → {clip(event.content, width)}"


def logged_line(event: Event, turn: int | None, rewound: bool, width: int = 60) -> str:
    """An event as `log` shows it: a human turn's number first, `(rewound)` after an
    event a rewind took out of the transcript."""
    number = f"turn {turn}" if turn is not None else ""
    return f"{number:<9}{event_line(event, width)}" + ("  (rewound)" if rewound else "")


def overwrite_line(o: Overwrite | Authored) -> str:
    """A path (a rewind would overwrite, or a live session's workspace changed), and who
    changed it."""
    turn = getattr(o, "turn", None)  # an Overwrite's: the turn that recorded a hand edit
    who = {
        "outside": f"edited by hand, recorded at turn {turn}" if turn else
                   "changed outside freshline",
        "unrecorded": "edited by hand in the worktree, not recorded yet",
        "git": f"changed by git {o.name}",
        "session": f"written by session {o.name}",
    }[o.by.value]
    return f"{o.path} ({who})"


def live_lines(session: str, live: WorkspaceChanges) -> list[str]:
    """What `diff` says of a live session: it has no work of its own, and what its
    workspace did between its first turn and its last, path by path, with who did it."""
    lines = [f"no changes of its own: session {session} is live, its agent only reads your "
             "workspace"]
    if live.first_turn == live.last_turn:
        return lines
    count = len(live.changes)
    lines.append(f"between turn {live.first_turn} and turn {live.last_turn} the workspace "
                 f"changed in {plural(count, 'path')}" + (":" if count else ""))
    return lines + [f"  {overwrite_line(c)}" for c in live.changes]


def overwrite_lines(plan: RewindPlan) -> list[str]:
    """What a rewind would overwrite of others' changes: a heading, then a line a path."""
    count = len(plan.overwrites)
    return [f"the rewind to turn {plan.rewind.turn} would overwrite {plural(count, 'path')} "
            "changed since by someone other than this conversation:",
            *(f"  {overwrite_line(o)}" for o in plan.overwrites)]


def rewind_summary(done: RewindResult) -> list[str]:
    """What a rewind did, in a few lines."""
    from freshline.conversation.rewind import describe

    lines = [f"{describe(done.rewind)}: {plural(len(done.restored), 'file')} put back"
             + (f", {len(done.overwrites)} of them changed by others since" if done.overwrites
                else "")]
    lines += [f"  {path}" for path in done.restored]
    if done.rewind.kept:
        lines.append(f"what refreshes merged since is kept (up to {done.rewind.kept[:10]})")
    told = len(done.rewind.paths)
    lines.append(f"the next message tells the agent: {plural(told, 'path')} differ"
                 f"{'s' if told == 1 else ''} from what it last saw")
    return lines
