"""Unfolding what the room left allows (`context/unfold.py`, pure): table tests of its
order and estimates, and properties over random blocks."""

from __future__ import annotations

import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from freshline.context import Budget, DocumentInfo, Meter, UpdatesInput, render_updates
from freshline.context.layout import Folds, Plan, write
from freshline.context.rollup import MoveKind, apply, moves, undo
from freshline.context.unfold import unfolds
from freshline.context.updates import updates_plan
from freshline.materialize.status import DocStatus
from freshline.store.records import Change, ChangeKind

ROOT = "/w"
K = ChangeKind


def folded(plan: Plan, made: int) -> tuple[list[Plan | None], list[Folds], list]:
    plans: list[Plan | None] = [None, plan]
    sequence = moves(plans)[:made]
    folds = [Folds(), plan.start.copy()]
    for move in sequence:
        apply(folds[move.block], move)
    return plans, folds, sequence


def test_a_leaf_folder_s_estimate_is_what_listing_it_adds() -> None:
    changes = [Change(K.CREATED, f"a/b/n{i}.md") for i in range(5)]
    changes += [Change(K.CREATED, f"a/c/n{i}.md") for i in range(5)]
    plan = updates_plan(UpdatesInput("p", ROOT, 1, 2, changes=changes))
    assert plan is not None
    plans, folds, made = folded(plan, 2)  # a/b and a/c folded: two group lines
    before = write(plan, folds[1])
    out = unfolds(plans, folds, made, 10_000, Meter())
    assert [m.target for m in out] == ["a/b", "a/c"]  # everything fits: both, in order
    undo(folds[1], out[0])
    after = write(plan, folds[1])
    assert len(after) > len(before)


def test_folders_come_back_before_entries_and_the_shallowest_first() -> None:
    """Room for one more group's worth: `notes/2024` (12 subfolders) is given back before
    a leaf of 25 notes, though the leaf brings back more lines."""
    changes = [Change(K.CREATED, f"notes/2024/{m:02}/n{i}.md") for m in range(1, 13)
               for i in range(25)]
    changes += [Change(K.CREATED, f"projects/p{p}/n{i}.md") for p in range(3) for i in range(25)]
    ready = [DocumentInfo(f"papers/d{i}.pdf", DocStatus.READY, f".freshline/s/{i}.md")
             for i in range(200)]
    u = UpdatesInput("p", ROOT, 1, 2, changes=changes, ready_documents=ready)
    text = render_updates(u, Budget(2_400)) or ""
    assert len(text) <= 2_400
    assert all(f"{ROOT}/notes/2024/{m:02}/: 25 created" in text for m in range(1, 13)), text
    assert f"{ROOT}/notes/2024/: " not in text


def test_nothing_is_undone_in_a_block_cut_to_its_minimum() -> None:
    changes = [Change(K.CREATED, f"f{i % 7}/n{i}.md") for i in range(50)]
    plan = updates_plan(UpdatesInput("p", ROOT, 1, 2, changes=changes))
    assert plan is not None
    sequence = moves([None, plan])
    plans, folds, made = folded(plan, len(sequence))
    assert folds[1].minimal
    assert unfolds(plans, folds, made, 100_000, Meter()) == []


names = st.sampled_from(["a", "b", "c", "d e", "é"])
paths = st.lists(names, min_size=1, max_size=4).map("/".join)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Plan, int, int]:
    chosen = draw(st.lists(paths, min_size=1, max_size=60, unique=True))
    kinds = [K.CREATED, K.MODIFIED, K.DELETED]
    changes = [Change(draw(st.sampled_from(kinds)), p) for p in chosen]
    git = []
    if draw(st.booleans()):
        moved = draw(st.lists(st.sampled_from(chosen), unique=True))
        git = [Change(K.GIT, "", detail={"operation": "checkout", "from": "a" * 40,
                                          "to": "b" * 40, "paths": moved})]
    plan = updates_plan(UpdatesInput.from_changes("p", ROOT, 1, 2, [*changes, *git]))
    assert plan is not None
    made = draw(st.integers(0, len(moves([None, plan]))))
    return plan, made, draw(st.integers(0, 5_000))


@given(cases())
@settings(max_examples=150)
def test_only_folds_made_and_shown_are_undone_each_once(case: tuple[Plan, int, int]) -> None:
    plan, made, room = case
    plans, folds, sequence = folded(plan, made)
    out = unfolds(plans, folds, sequence, room, Meter())
    assert len(out) == len(set(out)) and all(m in sequence for m in out)
    assert all(m.kind is not MoveKind.MINIMAL for m in out)
    state = folds[1].copy()
    for move in out:  # each shows when it is undone: no folded folder of its key above it
        if move.kind is MoveKind.FOLDER:
            assert move.key is not None
            mine, folder = state.folded(move.key), str(move.target)
            while folder:
                folder = posixpath.dirname(folder)
                assert folder not in mine
        undo(state, move)
