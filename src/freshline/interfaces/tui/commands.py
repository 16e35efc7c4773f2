"""The chat's slash commands: parsing, and running them against the library (no textual).

Each command returns a `Reply` the app shows in the transcript pane. Commands block (git,
a tracker flush), so the app runs them in a worker thread.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import StrEnum

from freshline.context import Channel
from freshline.conversation import Author, views
from freshline.conversation.events import Rewind
from freshline.conversation.rewind import describe
from freshline.errors import ConflictStop, SyncRequired, UsageError
from freshline.interfaces.lines import live_lines, logged_line
from freshline.interfaces.text import plural
from freshline.interfaces.told import told_from_wire, wire_blocks
from freshline.interfaces.tui import rewinding
from freshline.interfaces.tui.status import read_status
from freshline.refs import short_ref
from freshline.session import SessionManager


class Command(StrEnum):
    """A slash command."""

    STATUS = "status"  # the session's state, read fresh
    UPDATES = "updates"  # preview what the next send will deliver (`last`: what the last did)
    DIFF = "diff"  # the conversation's own work as a patch
    SYNC = "sync"  # merge an explicit rev now (isolated conversations)
    LOG = "log"  # the transcript as git records it
    REWIND = "rewind"  # go back to where a turn began (files, transcript or both)
    FORK = "fork"  # a new session from where a turn began; the chat moves to it
    HELP = "help"  # list the commands
    QUIT = "quit"  # leave the chat


HELP = {
    Command.STATUS: "/status — project, mode, epoch vs cursor, documents, target",
    Command.UPDATES: "/updates [last] — what the next send will deliver, at its budget "
                     "(last: what your last message carried)",
    Command.DIFF: "/diff — the conversation's own work as a patch",
    Command.SYNC: "/sync REV [--with-conflicts] — merge REV into the conversation now",
    Command.LOG: "/log — the transcript as git records it, one commit per event",
    Command.REWIND: "/rewind [TURN] [--code | --conversation | --both] [--force] [--yes] — "
                    "go back to where TURN began (without TURN: pick one)",
    Command.FORK: "/fork [TURN] — continue in a new session from where TURN began (default: "
                  "from here); this one stays as it is",
    Command.HELP: "/help — this list",
    Command.QUIT: "/quit — leave (the session stays; reopen it with --session)",
}
WITH_CONFLICTS = "--with-conflicts"
LAST = "last"


@dataclass(frozen=True)
class Invocation:
    """A parsed slash command and its arguments."""

    command: Command
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reply:
    """What a command shows: a title, a plain-text body, and whether it is an error; a
    rewind or fork also gives the input a message back (`draft`), has the transcript shown
    again (`reload`) or moves the chat to another session (`session`)."""

    title: str
    body: str
    error: bool = False
    draft: str | None = None
    reload: bool = False
    session: str | None = None


def parse(text: str) -> Invocation | None:
    """The slash command in `text`, or None when it is a message; UsageError when malformed."""
    if not text.startswith("/"):
        return None
    try:
        words = shlex.split(text[1:])
    except ValueError as exc:
        raise UsageError(f"cannot parse {text!r}: {exc}") from None
    name, args = (words[0].lower(), tuple(words[1:])) if words else ("", ())
    try:
        command = Command(name)
    except ValueError:
        raise UsageError(f"unknown command /{name}; try /help") from None
    if command is Command.SYNC:
        flags = [a for a in args if a.startswith("--")]
        if len(args) - len(flags) != 1 or flags not in ([], [WITH_CONFLICTS]):
            raise UsageError(f"usage: {_usage(Command.SYNC)}")
    elif command is Command.UPDATES:
        if args not in ((), (LAST,)):
            raise UsageError(f"usage: {_usage(Command.UPDATES)}")
    elif command is Command.REWIND:
        rewinding.check_rewind(args)
    elif command is Command.FORK:
        if len(args) > 1 or any(a.startswith("--") for a in args):
            raise UsageError(f"usage: {_usage(Command.FORK)}")
    elif args:
        raise UsageError(f"/{name} takes no arguments")
    return Invocation(command, args)


def _usage(command: Command) -> str:
    return HELP[command].split(" — ")[0]


def names_command(line: str) -> bool:
    """Whether `line` starts with a slash and a known command's name (so it is a command,
    not a message that happens to start with a path like /etc/hosts)."""
    word = line.strip().split(maxsplit=1)[0] if line.strip() else ""
    return word.startswith("/") and word[1:].lower() in {c.value for c in Command}


def run(manager: SessionManager, session_id: str, inv: Invocation) -> Reply:
    """Run a command (not /quit, which the app handles) and say what it found."""
    handlers = {
        Command.STATUS: _status,
        Command.UPDATES: _updates,
        Command.DIFF: _diff,
        Command.SYNC: _sync,
        Command.LOG: _log,
        Command.REWIND: _rewind,
        Command.FORK: _fork,
        Command.HELP: lambda *_: Reply("commands", "\n".join(HELP.values())),
    }
    return handlers[inv.command](manager, session_id, inv.args)


def _rewind(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Reply:
    return _reply("rewind", rewinding.rewind(manager, session_id, args))


def _fork(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Reply:
    return _reply("fork", rewinding.fork(manager, session_id, args))


def _reply(title: str, done: rewinding.Outcome) -> Reply:
    return Reply(title, "\n".join(done.lines), done.error, done.draft, done.reload,
                 done.session)


def _status(manager: SessionManager, session_id: str, _args: tuple[str, ...]) -> Reply:
    manager.tracker.flush()
    st = read_status(manager, session_id)
    docs = ", ".join(f"{n} {state}" for state, n in st.documents.items()) or "none"
    lines = [
        f"session   {st.session} ({st.state})",
        f"project   {st.project} ({st.mode})",
        f"epoch     {st.epoch}; cursor {st.cursor}"
        + ("; the next send delivers updates" if st.behind else "; nothing new"),
        f"documents {docs}" + ("; converting now" if st.converting else ""),
    ]
    if st.target:
        moved = "moved: the next send refreshes" if st.moved else "not moved"
        lines.append(f"target    {short_ref(st.target)} ({moved})")
    return Reply("status", "\n".join(lines))


def _updates(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Reply:
    if LAST in args:
        return _last_told(manager, session_id)
    try:
        block = manager.preview(session_id, Channel.CHAT)
    except ConflictStop as stop:
        return Reply(f"the next send would stop: {stop}", "\n".join(conflict_lines(stop)),
                     error=True)
    except SyncRequired as stop:
        return Reply("the next send would stop: a sync is required", str(stop), error=True)
    budget = manager.config.delivery.budget(Channel.CHAT.value)
    size = f"{len(block or ''):,} of {budget:,} characters"
    return Reply(f"updates (the next send will deliver; {size})",
                 block or "nothing new: the next send carries no updates block")


def _last_told(manager: SessionManager, session_id: str) -> Reply:
    """The blocks the model received with the human's last message (of the transcript as
    the model has it: a rewound one is not it)."""
    users = [e for e in manager.conversations.transcript(session_id) if e.author is Author.USER]
    if not users:
        return Reply("updates last", "no message sent yet in this session")
    last = users[-1]
    blocks = wire_blocks(last.wire or last.content, last.content)
    return Reply(f"updates given with your last message {told_from_wire(blocks)}",
                 blocks or "nothing: that message went without blocks")


def rewind_note(rewind: Rewind) -> str:
    """The transcript's line where a rewind happened."""
    return f"— {describe(rewind)}: {rewind.prompt}" if rewind.prompt else f"— {describe(rewind)}"


def conflict_lines(stop: ConflictStop) -> list[str]:
    """The conflicted paths of a stop with their kinds, one line each."""
    return [f"{path} ({stop.kinds.get(path, 'conflict')})" for path in stop.paths]


def _diff(manager: SessionManager, session_id: str, _args: tuple[str, ...]) -> Reply:
    if manager.get(session_id).mode == "live":
        from freshline.session.authorship import workspace_changes

        live = workspace_changes(manager, session_id)
        return Reply("diff (the conversation's own work)", "\n".join(live_lines(session_id, live)))
    patch = manager.conversations.diff(session_id).strip()
    conflicts = manager.conversations.unresolved_conflicts(session_id)
    lines = [f"unresolved conflict ({c.kind}): {', '.join(c.paths)}" for c in conflicts]
    body = "\n".join([patch, *lines] if patch else lines)
    return Reply("diff (the conversation's own work)", body or "no changes of its own")


def _sync(manager: SessionManager, session_id: str, args: tuple[str, ...]) -> Reply:
    rev = next(a for a in args if not a.startswith("--"))
    try:
        merged = manager.sync(session_id, rev, WITH_CONFLICTS in args)
    except ConflictStop as stop:
        body = "\n".join([*conflict_lines(stop), "", f"run /sync {rev} {WITH_CONFLICTS} to "
                          "record the conflicts and resolve them in the conversation"])
        return Reply(f"sync stopped: {stop}", body, error=True)
    if merged is None:
        return Reply(f"sync {rev}", f"{rev} is already merged: nothing to do")
    lines = [f"merged {merged.to[:12]}; {plural(len(merged.paths), 'path')} changed:",
             *(f"  {p}" for p in merged.paths)]
    if merged.conflicts:
        lines += ["conflicts recorded:", *(f"  {c.describe()}" for c in merged.conflicts)]
    return Reply(f"sync {rev}", "\n".join(lines))


def _log(manager: SessionManager, session_id: str, _args: tuple[str, ...]) -> Reply:
    events = manager.conversations.log(session_id)
    numbers, rewound = views.turn_numbers(events), views.rewound(events)
    return Reply(f"log ({plural(len(events), 'event')})",
                 "\n".join(logged_line(e, numbers.get(i), i in rewound)
                           for i, e in enumerate(events)))
