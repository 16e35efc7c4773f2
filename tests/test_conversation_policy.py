"""The pure parts: refresh decisions, exec-bit normalization, canonical event messages."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.conversation.conflicts import Conflict, ConflictKind
from freshline.conversation.events import Author, Event, Mode, Refresh, Root, decode, encode
from freshline.conversation.policy import (
    EXECUTABLE,
    REGULAR,
    ModeDiff,
    RefreshAction,
    decide_refresh,
    exec_bit_restores,
)

A, B = "a" * 40, "b" * 40


@pytest.mark.parametrize(
    ("target", "last", "descends", "related", "action"),
    [
        (A, A, False, True, RefreshAction.NONE),
        (A, A, True, True, RefreshAction.NONE),
        (B, A, True, True, RefreshAction.MERGE),
        (B, A, False, True, RefreshAction.SYNC_REQUIRED),
        (B, A, False, False, RefreshAction.UNRELATED),
        (B, None, False, False, RefreshAction.UNRELATED),
        (B, None, True, True, RefreshAction.UNRELATED),
    ],
)
def test_refresh_decision_table(target, last, descends, related, action) -> None:
    assert decide_refresh(target, last, descends, related) is action


oids = st.sampled_from([A, B])
commits = st.one_of(st.none(), oids)


@given(oids, commits, st.booleans(), st.booleans())
def test_refresh_merges_only_forward_moves(target, last, descends, related) -> None:
    action = decide_refresh(target, last, descends, related)
    assert (action is RefreshAction.NONE) == (target == last)
    if action is RefreshAction.MERGE:
        assert descends and last is not None
    if action is RefreshAction.SYNC_REQUIRED:
        assert related and not descends


def diff(path: str, base: str, ours: str, same_blob: bool = True) -> ModeDiff:
    return ModeDiff(path, base, A, ours, A if same_blob else B)


@pytest.mark.parametrize(
    ("entry", "deliberate", "restored"),
    [
        (diff("s", EXECUTABLE, REGULAR), set(), {"s": EXECUTABLE}),
        (diff("s", REGULAR, EXECUTABLE), set(), {"s": REGULAR}),
        (diff("s", EXECUTABLE, REGULAR), {"s"}, {}),
        (diff("s", EXECUTABLE, REGULAR, same_blob=False), set(), {}),
        (diff("s", "120000", REGULAR), set(), {}),
        (diff("s", REGULAR, "120000"), set(), {}),
        (diff("s", REGULAR, REGULAR), set(), {}),
    ],
)
def test_exec_bit_table(entry, deliberate, restored) -> None:
    assert exec_bit_restores([entry], deliberate) == restored


@pytest.mark.parametrize(
    ("entry", "deliberate", "restored"),
    [
        (diff("s", REGULAR, EXECUTABLE, same_blob=False), set(), {"s": REGULAR}),
        (diff("s", EXECUTABLE, REGULAR, same_blob=False), set(), {"s": EXECUTABLE}),
        (diff("s", REGULAR, EXECUTABLE, same_blob=False), {"s"}, {}),
        (diff("s", REGULAR, REGULAR, same_blob=False), set(), {}),
        (diff("s", "120000", EXECUTABLE, same_blob=False), set(), {}),
    ],
)
def test_every_turn_restores_flipped_bits_whatever_the_content(
    entry, deliberate, restored
) -> None:
    assert exec_bit_restores([entry], deliberate, same_content=False) == restored


modes = st.sampled_from([REGULAR, EXECUTABLE, "120000", "160000"])
mode_diffs = st.builds(ModeDiff, st.text("abc", min_size=1, max_size=3), modes, oids, modes, oids)


@given(st.lists(mode_diffs), st.sets(st.text("abc", min_size=1, max_size=3)))
def test_exec_bit_restores_only_pure_flips(diffs, deliberate) -> None:
    restored = exec_bit_restores(diffs, deliberate)
    for path, mode in restored.items():
        assert path not in deliberate and mode in (REGULAR, EXECUTABLE)
        assert any(d.path == path and d.base_mode == mode and d.base_oid == d.our_oid
                   and d.our_mode != mode for d in diffs)
    for d in diffs:
        pure = d.base_oid == d.our_oid and {d.base_mode, d.our_mode} == {REGULAR, EXECUTABLE}
        if pure and d.path not in deliberate and all(o.path != d.path for o in diffs if o != d):
            assert restored[d.path] == d.base_mode


texts = st.text(max_size=20)
paths = st.lists(st.text("ab/.c", min_size=1, max_size=5), max_size=3, unique=True).map(
    lambda xs: tuple(sorted(xs)))
conflicts = st.lists(
    st.builds(Conflict, st.sampled_from(ConflictKind), paths.filter(bool)), max_size=2
).map(tuple)
refreshes = st.builds(Refresh, texts, st.one_of(st.none(), oids), oids, paths, paths, conflicts)
roots = st.builds(Root, st.one_of(st.none(), oids), st.one_of(st.none(), texts),
                  st.one_of(st.none(), oids), st.sampled_from(Mode), st.one_of(st.none(), texts))
json_args = st.dictionaries(texts, st.one_of(texts, st.integers(), st.booleans()), max_size=3)
events = st.builds(
    Event, st.sampled_from(Author), texts,
    refresh=st.one_of(st.none(), refreshes), sync=st.one_of(st.none(), refreshes),
    root=st.one_of(st.none(), roots), tool=st.one_of(st.none(), texts),
    args=st.one_of(st.none(), json_args), result=st.one_of(st.none(), texts),
    changed=paths, mode_changes=paths,
)


@given(events)
def test_event_messages_round_trip_and_are_canonical(event: Event) -> None:
    message = encode(event)
    assert decode(message) == event
    data = json.loads(message)
    assert message == json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert "\n" not in message


@pytest.mark.parametrize(
    "message", ["", "plain commit message", "[1]", '"x"', '{"content":"x"}',
                '{"author":"robot","content":"x"}', '{"author":"user","content":3}'],
)
def test_non_event_messages_decode_to_none(message: str) -> None:
    assert decode(message) is None


def test_conflicts_keep_their_kinds_and_old_records_read_as_content() -> None:
    conflict = Conflict(ConflictKind.MODIFY_DELETE, ("CHANGES.rst",))
    event = Event(Author.SYSTEM, "sync", sync=Refresh("main", A, B, (), (), (conflict,)))
    assert '"conflicts":[{"kind":"modify/delete","paths":["CHANGES.rst"]}]' in encode(event)
    old = encode(event).replace('{"kind":"modify/delete","paths":["CHANGES.rst"]}', '"a.txt"')
    decoded = decode(old)
    assert decoded is not None and decoded.sync is not None
    assert decoded.sync.conflicts == (Conflict(ConflictKind.CONTENT, ("a.txt",)),)


def test_refresh_uses_from_as_its_json_key() -> None:
    event = Event(Author.USER, "hi", refresh=Refresh("refs/heads/main", A, B, ("x",)))
    assert encode(event) == (
        '{"author":"user","content":"hi","refresh":{"from":"' + A + '","normalized":[],'
        '"paths":["x"],"target":"refs/heads/main","to":"' + B + '"}}'
    )
