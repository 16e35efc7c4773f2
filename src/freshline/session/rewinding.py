"""Rewinding a session to where one of its human turns began (`sharing.fork` forks it
there).

A rewind is a human's command (the CLI's `rewind`, the chat's `/rewind`), never an
agent's: `conversation/rewind.py` records it as an event and moves the files; this module
decides which files a live session may touch, who changed the ones it would overwrite,
and what the session must forget or be told again:

- A live session's files are the user's checkout: its code goes back only when forced,
  and then only the paths the conversation itself wrote after that turn (its tools'
  events and its read ledger's writes). Who else changed one of them since is found as
  the read ledger finds it (`authorship.py`): another session whose tool wrote exactly
  that content, the git operation logged with the path's latest change, or else outside
  freshline.
- An overwrite of someone else's change is confirmed (`confirm`) or refused (RewindStop,
  exit 3) with nothing moved.
- When the transcript goes back, the read ledger forgets the turns the agent no longer
  remembers (the write guard then asks for a fresh read), and the manifest is delivered
  again when no turn left in the transcript carried it.
- The next turn tells the agent what the rewind changed: the `rewound` entry of its
  updates block (`rewind_entry`), like a refresh's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from freshline.conversation import Author, Event, views
from freshline.conversation.events import Rewind, RewindMode
from freshline.conversation.rewind import Overwrite, RewindPlan
from freshline.errors import RewindStop, UsageError
from freshline.sensitive import is_secret
from freshline.session.authorship import authors
from freshline.store import Change, ChangeKind, LedgerKind, SessionRecord

if TYPE_CHECKING:  # the manager imports `rewind_entry` from here: this takes the base
    from freshline.session.base import SessionBase

MANIFEST_TAG = "<project_context "  # how a turn's wire prompt shows it carried the manifest
Confirm = Callable[[RewindPlan], bool]


@dataclass(frozen=True)
class RewindResult:
    """What a rewind did."""

    session: str
    head: str
    rewind: Rewind
    restored: tuple[str, ...]  # paths whose files it changed
    overwrites: tuple[Overwrite, ...]  # of those, the ones others had changed (confirmed)
    message: str  # the turn's whole message (the chat gives it back to edit and send)


def rewind(
    manager: SessionBase,
    session_id: str,
    turn: str,
    mode: RewindMode = RewindMode.BOTH,
    force: bool = False,
    confirm: Confirm | None = None,
) -> RewindResult:
    """Rewind a session to where `turn` (its number or commit id in `log`) began.

    Raises UsageError for a session without a conversation, a bad turn, or a live
    session's code without `force`; RewindStop when the rewind would overwrite others'
    changes and `confirm` (given the plan) does not say yes; ConflictStop when a code
    rewind past a refresh cannot keep what it merged.
    """
    s = manager.get(session_id)
    if not s.records_conversation:
        raise UsageError(f"session {s.id} records no conversation ({s.channel}): there is "
                         "nothing to rewind")
    live = s.mode == "live"
    if live and mode.restores_files and not force:
        raise UsageError(
            f"session {s.id} is live: its files are your workspace, so its code is not "
            "rewound unless forced (--force puts back only the files the conversation "
            "itself wrote); --conversation rewinds the transcript alone")
    project = manager.reload_config().project(s.project)
    conversations = manager.conversations
    with conversations.rewinding(s.id):
        events = conversations.log(s.id)
        index = views.find_turn(events, turn)
        written: dict[str, str | None] = {}
        if live and mode.restores_files:
            manager.tracker.flush()
            written = {p: blob for p, blob in own_writes(manager, s, events, index).items()
                       if not is_secret(p, project.allow_secrets)}
        # A live tree holds only the project's files; an isolated one the whole checkout.
        in_scope = None if live else project.scope.matches_path
        planned = conversations.plan_rewind(s.id, turn, mode, in_scope, written)
        if live:  # a path whose last write is not known: nothing to prove
            known = [p for p in planned.restored if written.get(p) is not None]
            planned = replace(planned, overwrites=others_changed(manager, s, known, written))
        if planned.overwrites and not (confirm is not None and confirm(planned)):
            by = {o.path: o.by.value for o in planned.overwrites}
            raise RewindStop(stop_message(planned), by)
        head = conversations.apply_rewind(planned)
    if mode.restores_transcript:
        _forget(manager, s.id)
    return RewindResult(s.id, head, planned.rewind, planned.restored, planned.overwrites,
                        events[index].content)


def stop_message(planned: RewindPlan) -> str:
    """The one line of a rewind refused for the others' changes it would overwrite."""
    count = len(planned.overwrites)
    return (f"the rewind to turn {planned.rewind.turn} would overwrite {count} "
            f"{'path' if count == 1 else 'paths'} changed by someone other than this "
            f"conversation since: {', '.join(o.path for o in planned.overwrites)}; nothing "
            "was changed (confirm, or --yes)")


def own_writes(
    manager: SessionBase, s: SessionRecord, events: list[Event], index: int
) -> dict[str, str | None]:
    """The paths the conversation itself wrote after turn `index` began → the content it
    last wrote there (None: not known, a tool event's path the ledger does not have)."""
    number = views.turn_numbers(events)[index]
    written: dict[str, str | None] = {
        p: None for e in events[index:] if e.author is Author.TOOL for p in e.changed
    }
    for entry in manager.store.ledger_of(s.id):
        if entry.kind is LedgerKind.WRITE and entry.turn >= number:
            written[entry.path] = entry.blob
    return written


def others_changed(
    manager: SessionBase, s: SessionRecord, paths: Sequence[str],
    written: Mapping[str, str | None],
) -> tuple[Overwrite, ...]:
    """Of `paths`, those whose content now is not what the conversation last wrote there
    (`written`; `""`: it deleted the file; absent: it never wrote it), each with who
    changed it as far as it is provable (`authorship.authors`)."""
    now = {p: _now(manager, p) or "" for p in paths}
    changed = {p: blob for p, blob in now.items() if blob != written.get(p)}
    found = authors(manager, s.id, changed)
    return tuple(Overwrite(path, found[path].by, found[path].name) for path in changed)


def _now(manager: SessionBase, path: str) -> str | None:
    entry = manager.store.index_get(path)
    return entry.blob if entry is not None else None


def _forget(manager: SessionBase, session_id: str) -> None:
    """After the transcript went back: forget the read ledger's turns it left out, and
    deliver the manifest again when no turn left in it carried one."""
    events = manager.conversations.log(session_id)
    numbers = views.turn_numbers(events)
    shown = [i for i in views.view(events) if i in numbers]
    manager.store.ledger_forget(session_id, {numbers[i] for i in shown})
    if not any(MANIFEST_TAG in (events[i].wire or "") for i in shown):
        with manager.store.write():
            s = manager.store.session_get(session_id)
            manager.store.session_put(replace(s, needs_manifest=True))


def rewind_entry(rewind: Rewind) -> Change:
    """The updates block's `rewound` entry for a rewind recorded since the last turn."""
    detail = {"mode": rewind.mode.value, "turn": rewind.turn, "prompt": rewind.prompt,
              "paths": list(rewind.paths)}
    return Change(ChangeKind.REWOUND, "", detail=detail)
