"""The chat's `/rewind [TURN]` and `/fork [TURN]` (no textual: the app shows the replies).

`/rewind` without a TURN asks the app for a picker of the last turns first
(`recent_turns`). A rewind of the transcript gives the turn's message back to the input, to
edit and send again, and the app shows the transcript as the model now has it; a fork
moves the chat to the new session. Overwriting what someone other than the conversation
changed since is refused until the command is typed again with `--yes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshline.conversation import Author, views
from freshline.conversation.events import RewindMode
from freshline.conversation.rewind import RewindPlan
from freshline.errors import RewindStop, UsageError
from freshline.interfaces.lines import overwrite_line, overwrite_lines, rewind_summary
from freshline.interfaces.text import clip
from freshline.session import SessionManager

YES = "--yes"
FORCE = "--force"
MODES = {"--code": RewindMode.CODE, "--conversation": RewindMode.CONVERSATION,
         "--both": RewindMode.BOTH}
PICKED = 10  # turns the picker offers, the latest last


@dataclass(frozen=True)
class Outcome:
    """What a /rewind or /fork did, beyond the lines it shows: the message to give back
    to the input, whether the transcript is to be shown again, the session to move to."""

    lines: list[str]
    error: bool = False
    draft: str | None = None
    reload: bool = False
    session: str | None = None


def check_rewind(args: tuple[str, ...]) -> None:
    """UsageError unless `args` are at most a TURN and the flags /rewind takes."""
    flags = [a for a in args if a.startswith("--")]
    modes = [a for a in flags if a in MODES]
    if len(args) - len(flags) > 1 or len(modes) > 1 or set(flags) - {*MODES, YES, FORCE}:
        raise UsageError("usage: /rewind [TURN] [--code | --conversation | --both] "
                         "[--force] [--yes]")


def turn_of(args: tuple[str, ...]) -> str | None:
    """The TURN among a command's arguments, if one was given."""
    return next((a for a in args if not a.startswith("--")), None)


def recent_turns(manager: SessionManager, session_id: str) -> list[tuple[str, str]]:
    """The picker's choices: (turn number, its message's first line), the latest last;
    a turn an earlier rewind took out is offered too (marked), to go back to it."""
    events = manager.conversations.log(session_id)
    numbers, rewound = views.turn_numbers(events), views.rewound(events)
    return [(str(number), clip(events[i].content, 60) + ("  (rewound)" if i in rewound else ""))
            for i, number in list(numbers.items())[-PICKED:]]


def rewind(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Outcome:
    """Run /rewind TURN [flags]."""
    from freshline.session.rewinding import rewind as rewind_session

    turn = turn_of(args)
    if turn is None:
        raise UsageError("which turn? /rewind TURN (a number from /log)")
    mode = next((MODES[a] for a in args if a in MODES), RewindMode.BOTH)
    asked: list[RewindPlan] = []

    def confirm(plan: RewindPlan) -> bool:
        asked.append(plan)
        return YES in args

    try:
        done = rewind_session(manager, session_id, turn, mode, FORCE in args, confirm)
    except RewindStop:
        again = " ".join(["/rewind", *args, YES])
        return Outcome([*overwrite_lines(asked[-1]), f"nothing was changed; type {again} to "
                        "overwrite them (what they hold stays in the conversation's history)"],
                       error=True)
    lines = rewind_summary(done)
    lines += [f"  overwritten: {overwrite_line(o)}" for o in done.overwrites]
    forgets = mode.restores_transcript
    if forgets:
        lines.append("the message of that turn is back in the input: edit it and send")
    return Outcome(lines, draft=done.message if forgets else None, reload=forgets)


def fork(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Outcome:
    """Run /fork [TURN]: a new session from where TURN began (default: the head)."""
    from freshline.session.sharing import fork as fork_session

    if len(args) > 1 or any(a.startswith("--") for a in args):
        raise UsageError("usage: /fork [TURN]")
    turn = args[0] if args else None
    record = fork_session(manager, session_id, None, turn)
    where = f"where turn {turn} began" if turn else "its latest turn"
    said = [e for e in manager.conversations.transcript(record.id) if e.author is Author.USER]
    return Outcome([f"forked session {session_id} at {where}: this chat is now on session "
                    f"{record.id} ({len(said)} earlier messages); the original is unchanged "
                    f"(freshline chat --session {session_id})"], reload=True, session=record.id)
