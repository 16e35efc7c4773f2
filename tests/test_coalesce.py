"""Coalescing: table tests of every rule, and a property test against a reference replay."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.store.records import Change, ChangeKind
from freshline.tracker.coalesce import coalesce

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED


def ch(kind: ChangeKind, path: str, old: str | None = None) -> Change:
    return Change(kind, path, old)


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        ([ch(C, "a"), ch(M, "a")], [ch(C, "a")]),
        ([ch(C, "a"), ch(D, "a")], []),
        ([ch(D, "a"), ch(C, "a")], [ch(M, "a")]),
        ([ch(R, "b", "a"), ch(R, "c", "b")], [ch(R, "c", "a")]),
        ([ch(R, "b", "a"), ch(D, "b")], [ch(D, "a")]),
        ([ch(M, "a"), ch(R, "b", "a")], [ch(M, "b"), ch(R, "b", "a")]),
        ([ch(R, "b", "a"), ch(R, "a", "b")], []),
        ([ch(C, "a"), ch(R, "b", "a")], [ch(C, "b")]),
        ([ch(R, "b", "a"), ch(C, "a")], [ch(C, "a"), ch(R, "b", "a")]),
        ([ch(M, "a"), ch(M, "a")], [ch(M, "a")]),
        ([ch(D, "b"), ch(R, "b", "a")], [ch(R, "b", "a")]),
        ([ch(R, "b", "a"), ch(D, "b"), ch(C, "a")], [ch(M, "a")]),
    ],
)
def test_rules(sequence: list[Change], expected: list[Change]) -> None:
    assert coalesce(sequence) == expected


def test_project_entries_pass_through_after_paths() -> None:
    config = Change(ChangeKind.CONFIG, "", detail={"include_added": ["x"]})
    folder = Change(R, "new", "old", detail={"folder": True})
    out = coalesce([config, ch(C, "a"), folder, config])
    assert out == [ch(C, "a"), config, folder]


# -- property: the coalesced set, applied at once, equals the sequence applied in order --

PATHS = ["a", "b", "c"]


def apply_at_once(before: dict[str, int], net: list[Change]) -> dict[str, set[str]]:
    """What a reader knows after applying `net`: which paths exist and which it must re-read."""
    state = {p: {"orig", p} for p in before}
    for c in net:
        if c.kind is R:
            assert c.old_path is not None
            state.pop(c.old_path, None)
    for c in net:
        if c.kind is R:
            assert c.old_path is not None
            state[c.path] = {"orig", c.old_path}
        elif c.kind is D:
            state.pop(c.path, None)
        elif c.kind in (C, M):
            state[c.path] = {"fresh"}
    return state


@st.composite
def valid_sequences(draw: st.DrawFn) -> tuple[dict[str, int], list[Change]]:
    initial = draw(st.sets(st.sampled_from(PATHS)))
    state = {p: 0 for p in initial}
    seq: list[Change] = []
    for _ in range(draw(st.integers(0, 8))):
        present, absent = sorted(state), [p for p in PATHS if p not in state]
        options = []
        if absent:
            options.append(("create", draw(st.sampled_from(absent))))
        if present:
            options += [("modify", draw(st.sampled_from(present))),
                        ("delete", draw(st.sampled_from(present)))]
        if present and absent:
            pair = (draw(st.sampled_from(present)), draw(st.sampled_from(absent)))
            options.append(("rename", pair))
        op, arg = draw(st.sampled_from(options))
        if op == "create":
            seq.append(ch(C, arg))
            state[arg] = 1
        elif op == "modify":
            seq.append(ch(M, arg))
        elif op == "delete":
            seq.append(ch(D, arg))
            del state[arg]
        else:
            seq.append(ch(R, arg[1], arg[0]))
            state[arg[1]] = state.pop(arg[0])
    return {p: 0 for p in initial}, seq


@given(valid_sequences())
def test_coalesced_set_matches_ordered_replay(case: tuple[dict[str, int], list[Change]]) -> None:
    initial, seq = case
    # Each path's content is (origin, last write tick); 0 ticks means untouched original.
    truth = {p: (p, 0) for p in initial}
    tick = 0
    for c in seq:
        tick += 1
        if c.kind in (C, M):
            truth[c.path] = (None, tick)
        elif c.kind is D:
            del truth[c.path]
        else:
            assert c.old_path is not None
            origin, t = truth.pop(c.old_path)
            truth[c.path] = (origin, t)
    known = apply_at_once(initial, coalesce(seq))
    assert set(known) == set(truth)
    for path, (origin, t) in truth.items():
        if t == 0:  # untouched content: the reader must know where it came from
            assert known[path] == {"orig", origin}
        else:  # rewritten content: the reader must be told to re-read it
            assert "fresh" in known[path] or any(
                c.kind is M and c.path == path for c in coalesce(seq)
            )
