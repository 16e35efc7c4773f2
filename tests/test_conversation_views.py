"""The transcript view after rewinds and the turn numbers (conversation/views.py, pure):
table tests of the edge cases and properties over random histories of turns and rewinds."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.conversation import Author, Event
from freshline.conversation.events import Rewind, RewindMode, decode, encode
from freshline.conversation.views import (
    find_turn,
    last_seen,
    rewinds_since_last_turn,
    rewound,
    transcript,
    turn_numbers,
    view,
)
from freshline.errors import NotFoundError, UsageError


def commit(index: int) -> str:
    """The made-up commit id of the event at `index`."""
    return hashlib.sha1(str(index).encode()).hexdigest()


def history(*steps: str | tuple[int, RewindMode]) -> list[Event]:
    """Events from steps: "t" a turn (the human's message and an answer), "s" a sync, a
    (turn, mode) pair a rewind to that turn."""
    events = [Event(Author.SYSTEM, "opened")]
    humans: list[int] = []
    for step in steps:
        if step == "t":
            humans.append(len(events))
            events += [Event(Author.USER, f"m{len(humans)}"), Event(Author.ASSISTANT, "ok")]
        elif step == "s":
            events.append(Event(Author.SYSTEM, "sync"))
        else:
            assert isinstance(step, tuple)
            turn, mode = step
            to = commit(humans[turn - 1])
            events.append(Event(Author.SYSTEM, "rewind", rewind=Rewind(turn, to, mode)))
    return [replace(e, commit=commit(i)) for i, e in enumerate(events)]


def said(events: list[Event]) -> list[str]:
    return [e.content for e in transcript(events) if e.author is Author.USER]


@pytest.mark.parametrize("steps, expected", [
    ((), []),
    (("t", "t", "t"), ["m1", "m2", "m3"]),
    (("t", "t", "t", (2, RewindMode.BOTH)), ["m1"]),
    (("t", "t", "t", (2, RewindMode.CODE)), ["m1", "m2", "m3"]),
    (("t", "t", "t", (2, RewindMode.CONVERSATION), "t"), ["m1", "m4"]),
    (("t", "t", (1, RewindMode.BOTH)), []),
    # a redo: back to where turn 3 began, which an earlier rewind had taken out
    (("t", "t", "t", (1, RewindMode.BOTH), "t", (3, RewindMode.BOTH)), ["m1", "m2"]),
    (("t", "t", (2, RewindMode.BOTH), (1, RewindMode.BOTH), "t"), ["m3"]),
])
def test_the_transcript_after_rewinds(steps: tuple[object, ...], expected: list[str]) -> None:
    assert said(history(*steps)) == expected  # type: ignore[arg-type]


def test_turns_are_numbered_along_the_chain_for_good() -> None:
    events = history("t", "t", (1, RewindMode.BOTH), "t")
    assert list(turn_numbers(events).values()) == [1, 2, 3]
    assert [events[i].content for i in sorted(rewound(events))] == ["m1", "ok", "m2", "ok"]


def test_find_turn_by_number_or_commit() -> None:
    events = history("t", "t")
    assert find_turn(events, "2") == 3
    assert find_turn(events, commit(1)[:7].upper()) == 1
    with pytest.raises(NotFoundError, match=r"no turn 3 in this conversation \(turns 1 to 2\)"):
        find_turn(events, "3")
    with pytest.raises(NotFoundError, match="no turns yet"):
        find_turn(history(), "1")
    twins = list(events)
    twins[1], twins[3] = (replace(twins[i], commit=f"abcd{i}".ljust(40, "0")) for i in (1, 3))
    with pytest.raises(UsageError, match="ambiguous"):
        find_turn(twins, "abcd")
    assert find_turn(twins, "abcd3") == 3
    with pytest.raises(UsageError, match="not a human turn's event"):
        find_turn(events, commit(2))
    for bad in ("", "abc", "-1", "1.5", "g000000"):
        with pytest.raises(UsageError, match="neither a turn number nor a commit id"):
            find_turn(events, bad)


def test_a_commit_id_of_digits_only_is_a_commit_unless_it_is_a_turn_number() -> None:
    """Seen: `rewind(..., "64349656")`, a turn's commit given by its first 8 hex digits,
    all of them decimal, was taken for turn 64,349,656 (about 1 in 40 abbreviations)."""
    events = history("t", "t")
    events[3] = replace(events[3], commit="64349656".ljust(40, "a"))
    assert find_turn(events, "64349656") == 3
    events[1] = replace(events[1], commit="2000".ljust(40, "b"))
    assert find_turn(events, "2") == 3  # a turn number first
    assert find_turn(events, "2000") == 1
    with pytest.raises(NotFoundError, match="no turn 9999 in this conversation"):
        find_turn(events, "9999")


def test_rewinds_are_told_once_and_the_last_seen_tree_skips_freshlines_own_events() -> None:
    events = history("t", "t", "s", (1, RewindMode.CODE), (2, RewindMode.BOTH))
    assert [r.turn for r in rewinds_since_last_turn(events)] == [1, 2]
    assert rewinds_since_last_turn(history("t", (1, RewindMode.CODE), "t")) == ()
    assert events[last_seen(events)].content == "ok" and last_seen(events) == 2
    assert last_seen(history("t", (1, RewindMode.BOTH))) == 0  # the root: nothing seen yet


def test_a_rewind_round_trips_through_its_commit_message() -> None:
    event = Event(Author.SYSTEM, "rewind to turn 2 (code)",
                  rewind=Rewind(2, "a" * 40, RewindMode.CODE, "fix it", ("src/a.py",), "b" * 40))
    assert decode(encode(event)) == event
    assert '"rewind":{"kept":"bbb' in encode(event)


STEPS = st.lists(st.one_of(st.just("t"), st.just("s"),
                           st.tuples(st.integers(1, 8), st.sampled_from(list(RewindMode)))),
                 max_size=14)


def valid(steps: list[object]) -> list[object]:
    """Steps whose rewinds name turns that exist by then."""
    out, turns = [], 0
    for step in steps:
        if isinstance(step, tuple) and step[0] > turns:
            continue
        turns += step == "t"
        out.append(step)
    return out


@given(STEPS)
def test_views_properties(raw: list[object]) -> None:
    steps = valid(raw)
    events = history(*steps)  # type: ignore[arg-type]
    shown = view(events)
    assert shown == sorted(shown) and (not events or shown[0] == 0)
    assert set(shown) | rewound(events) == set(range(len(events)))
    assert sorted(turn_numbers(events).values()) == list(range(1, steps.count("t") + 1))
    if not events:
        return
    last = events[-1]
    if last.rewind is None or not last.rewind.mode.restores_transcript:
        assert shown == [*view(events[:-1]), len(events) - 1]  # a turn or a code rewind
    else:
        begun = next(i for i, e in enumerate(events) if e.commit == last.rewind.to)
        assert shown == [*view(events[:begun]), len(events) - 1]  # where that turn began
    assert events[last_seen(events)].author is not Author.SYSTEM or last_seen(events) == 0
