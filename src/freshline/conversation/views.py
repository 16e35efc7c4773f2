"""What a conversation's chain means after rewinds: turn numbers and the transcript view.

The first-parent chain keeps every event ever recorded; a rewind never deletes one. Each
event has a predecessor in the transcript view: the event before it in the chain, except
for a rewind of the transcript, whose predecessor is the event before the turn it rewound
to (where that turn began). The view at an event is the walk along these predecessors back
to the root, so the view as it stood at any earlier event is still its own walk, and a
later rewind may go back to a turn an earlier rewind took out (a redo).

Human turns are numbered along the chain, 1 for the first human event, whether or not a
later rewind took them out of the view: a number names one turn for good, and the next
turn after a rewind gets the next number (the session's turn counter and the read ledger
number turns the same way).

Pure: functions of the events (`events.Event`), oldest first, as `Repo.chain` reads them.
"""

from __future__ import annotations

from collections.abc import Sequence

from freshline.conversation.events import Author, Event, Rewind
from freshline.errors import NotFoundError, UsageError

_MIN_PREFIX = 4  # hex digits a commit id given for a turn must have


def turn_numbers(events: Sequence[Event]) -> dict[int, int]:
    """Each human event's index → its turn number (1 for the first)."""
    numbers: dict[int, int] = {}
    for index, event in enumerate(events):
        if event.author is Author.USER:
            numbers[index] = len(numbers) + 1
    return numbers


def view(events: Sequence[Event]) -> list[int]:
    """The indices of the events in the transcript view at the last event, oldest first."""
    if not events:
        return []
    where = {e.commit: i for i, e in enumerate(events) if e.commit}
    walk: list[int] = []
    index = len(events) - 1
    while index >= 0:
        walk.append(index)
        index = _predecessor(events[index], index, where)
    return walk[::-1]


def _predecessor(event: Event, index: int, where: dict[str, int]) -> int:
    rewind = event.rewind
    if rewind is not None and rewind.mode.restores_transcript and rewind.to in where:
        return min(where[rewind.to], index) - 1  # where that turn began
    return index - 1


def transcript(events: Sequence[Event]) -> list[Event]:
    """The events of the transcript view (what the model is given), oldest first."""
    return [events[i] for i in view(events)]


def rewound(events: Sequence[Event]) -> frozenset[int]:
    """The indices of the events a rewind took out of the transcript view."""
    return frozenset(range(len(events))) - frozenset(view(events))


def find_turn(events: Sequence[Event], turn: str) -> int:
    """The index of the human event `turn` names: its number in `log`, or its commit id
    (at least 4 hex digits; digits only is a turn number first). UsageError for neither,
    NotFoundError for no such turn."""
    numbers = turn_numbers(events)
    prefix = turn.lower()
    if turn.isdigit():
        wanted = int(turn)
        for index, number in numbers.items():
            if number == wanted:
                return index
        if len(turn) < _MIN_PREFIX or not any((e.commit or "").startswith(prefix)
                                               for e in events):
            last = f"turns 1 to {len(numbers)}" if numbers else "no turns yet"
            raise NotFoundError(f"no turn {wanted} in this conversation ({last})")
    if len(prefix) < _MIN_PREFIX or any(c not in "0123456789abcdef" for c in prefix):
        raise UsageError(f"{turn!r} is neither a turn number nor a commit id from `freshline log`")
    found = [i for i, e in enumerate(events) if (e.commit or "").startswith(prefix)]
    if len(found) > 1:
        raise UsageError(f"commit id {turn!r} is ambiguous: give more of it")
    if not found:
        raise NotFoundError(f"no event {turn!r} in this conversation")
    if found[0] not in numbers:
        raise UsageError(f"{turn!r} is not a human turn's event: give a turn number or a "
                         "turn's commit from `freshline log`")
    return found[0]


def rewinds_since_last_turn(events: Sequence[Event]) -> tuple[Rewind, ...]:
    """Rewinds recorded after the latest human turn (not yet told to the agent)."""
    found: list[Rewind] = []
    for event in reversed(events):
        if event.author is Author.USER:
            break
        if event.rewind is not None:
            found.append(event.rewind)
    return tuple(reversed(found))


def last_seen(events: Sequence[Event]) -> int:
    """The index of the view's latest event of a turn (the human's, the model's or a
    tool's; the root when there is none): the tree the agent last saw is its tree.
    freshline's own events (a sync, a rewind) are told with the next turn."""
    for index in reversed(view(events)):
        if events[index].author is not Author.SYSTEM:
            return index
    return 0
