"""Coalescing: table tests of every rule, and property tests against a model of trees."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from freshline.store.records import (
    UNHASHED,
    Change,
    ChangeKind,
    FileKind,
    IndexEntry,
    content_key,
    entry_content,
)
from freshline.tracker.coalesce import (
    coalesce,
    coalesce_sets,
    net,
    net_lookups,
    repeated_paths,
)

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
        ([ch(R, "b", "a"), ch(M, "b")], [ch(M, "b"), ch(R, "b", "a")]),
        ([ch(R, "b", "a"), ch(R, "a", "b")], []),
        ([ch(C, "a"), ch(R, "b", "a")], [ch(C, "b")]),
        ([ch(R, "b", "a"), ch(C, "a")], [ch(C, "a"), ch(R, "b", "a")]),
        ([ch(M, "a"), ch(M, "a")], [ch(M, "a")]),
        # renamed over a path the reader still knew: never a silent overwrite
        ([ch(D, "b"), ch(R, "b", "a")], [ch(D, "a"), ch(M, "b")]),
        ([ch(D, "b"), ch(R, "b", "a"), ch(C, "a")], [ch(M, "a"), ch(M, "b")]),
        ([ch(R, "b", "a"), ch(D, "b"), ch(C, "a")], [ch(M, "a")]),
    ],
)
def test_rules(sequence: list[Change], expected: list[Change]) -> None:
    assert coalesce(sequence) == expected


@pytest.mark.parametrize(
    ("sets", "expected"),
    [
        # One flush's rows are a set: the rename is not undone by the row sorted before it
        # (a rename plus an edit between two turns reported as a rename only).
        ([[ch(M, "t2"), ch(R, "t2", "t")]], [ch(M, "t2"), ch(R, "t2", "t")]),
        # a swap in one flush: each rename reads the state before the set
        ([[ch(R, "a", "b"), ch(R, "b", "a")]], [ch(R, "a", "b"), ch(R, "b", "a")]),
        ([[ch(R, "a", "b"), ch(R, "b", "a")], [ch(R, "a", "b"), ch(R, "b", "a")]], []),
        ([[ch(M, "b"), ch(R, "b", "a")], [ch(R, "c", "b")]], [ch(M, "c"), ch(R, "c", "a")]),
        # a's content moved onto c, told deleted + modified; b then renamed onto a is the same
        (
            [[ch(D, "c")], [ch(R, "c", "a")], [ch(R, "a", "b")]],
            [ch(M, "a"), ch(D, "b"), ch(M, "c")],
        ),
        # a flush's scope change said keep left, its batch that keep moved: one rename,
        # never "deleted keep" beside "renamed keep → new"
        ([[Change(ChangeKind.LEFT, "keep", detail={"why": "ignored"})], [ch(R, "new", "keep")]],
         [ch(R, "new", "keep")]),
    ],
)
def test_sets(sets: list[list[Change]], expected: list[Change]) -> None:
    assert coalesce_sets(sets) == expected


def test_project_entries_pass_through_after_paths() -> None:
    config = Change(ChangeKind.CONFIG, "", detail={"include_added": ["x"]})
    moved = Change(ChangeKind.GIT, "", detail={"operation": "checkout", "count": 1})
    out = coalesce([config, ch(C, "a"), moved, config])
    assert out == [ch(C, "a"), config, moved]


def test_folder_renames_chain_and_stay_only_while_files_moved_with_them() -> None:
    folder = {"folder": True}
    first = [Change(R, "b", "a", folder), ch(R, "b/x", "a/x")]
    second = [Change(R, "c", "b", folder), ch(R, "c/x", "b/x")]
    assert coalesce_sets([first, second]) == [ch(R, "c/x", "a/x"), Change(R, "c", "a", folder)]
    back = [Change(R, "a", "b", folder), ch(R, "a/x", "b/x")]
    assert coalesce_sets([first, back]) == []


# -- property: the coalesced set, applied at once to the old tree, gives the new tree --
#
# A file's content is (lineage, version): a rename keeps both, an edit bumps the version.
# Each batch is observed the way a scan sees it (before and after trees only): paths in
# both with other content are modified; a deleted and a created path with the same
# lineage pair as a rename (plus modified when the version moved).

PATHS = ["a", "b", "c", "d"]
Tree = dict[str, tuple[int, int]]


def observe(before: Tree, after: Tree) -> list[Change]:
    """The set of changes a scan logs for one batch."""
    out = [ch(M, p) for p in before.keys() & after.keys() if before[p] != after[p]]
    gone = {before[p][0]: p for p in before.keys() - after.keys()}
    for p in sorted(after.keys() - before.keys()):
        old = gone.pop(after[p][0], None)
        if old is None:
            out.append(ch(C, p))
            continue
        out.append(ch(R, p, old))
        if before[old] != after[p]:
            out.append(ch(M, p))
    return out + [ch(D, p) for p in gone.values()]


def replay(initial: Tree, final: Tree, net: list[Change]) -> Tree:
    """What a reader who knew `initial` knows after applying `net` at once."""
    state = dict(initial)
    renames = [c for c in net if c.kind is R]
    for c in renames:
        assert c.old_path in initial, f"phantom rename source {c.old_path}"
        state.pop(c.old_path or "")
    sources = {c.old_path for c in renames}
    for c in renames:
        assert c.path not in state or c.path in sources, f"rename overwrites {c.path}"
        state[c.path] = initial[c.old_path or ""]
    for c in net:
        if c.kind is D:
            assert c.path in initial, f"phantom deletion {c.path}"
            del state[c.path]
        elif c.kind in (C, M):
            state[c.path] = final[c.path]
    return state


Operate = Callable[[st.DrawFn, Tree, Tree, Iterator[int]], None]


def evolve(draw: st.DrawFn, operate: Operate, most: int) -> tuple[Tree, list[tuple[Tree, Tree]]]:
    """A tree, then one to four batches of up to `most` operations each: the tree at the
    start, and each batch's tree before and after it."""
    lineage = iter(range(1, 1000))
    tree: Tree = {p: (next(lineage), 0) for p in draw(st.sets(st.sampled_from(PATHS)))}
    initial, steps = dict(tree), []
    for _ in range(draw(st.integers(1, 4))):
        before = dict(tree)
        for _ in range(draw(st.integers(0, most))):
            operate(draw, tree, before, lineage)
        steps.append((before, dict(tree)))
    return initial, steps


@st.composite
def batches(draw: st.DrawFn) -> tuple[Tree, list[list[Change]], Tree]:
    initial, steps = evolve(draw, _operate, 4)
    sets = []
    for before, after in steps:
        changes = observe(before, after)
        random.Random(draw(st.integers())).shuffle(changes)  # a set: any order
        sets.append(changes)
    return initial, sets, steps[-1][1]


def _operate(draw: st.DrawFn, tree: Tree, _before: Tree, lineage: Iterator[int]) -> None:
    present, absent = sorted(tree), [p for p in PATHS if p not in tree]
    options = ["create"] if absent else []
    if present:
        options += ["modify", "delete"]
    if present and (absent or len(present) > 1):
        options.append("rename")
    op = draw(st.sampled_from(options))
    if op == "create":
        tree[draw(st.sampled_from(absent))] = (next(lineage), 0)
    elif op == "modify":
        path = draw(st.sampled_from(present))
        tree[path] = (tree[path][0], tree[path][1] + 1)
    elif op == "delete":
        del tree[draw(st.sampled_from(present))]
    else:  # onto an absent path, or over an existing one
        source = draw(st.sampled_from(present))
        target = draw(st.sampled_from([p for p in PATHS if p != source]))
        tree[target] = tree.pop(source)


@given(batches())
def test_coalesced_sets_applied_to_the_old_tree_give_the_new_tree(
    case: tuple[Tree, list[list[Change]], Tree],
) -> None:
    initial, sets, final = case
    net = coalesce_sets(sets)
    assert replay(initial, final, net) == final
    assert len({(c.path, c.kind) for c in net}) == len(net)
    for c in net:  # no content change hidden behind a rename
        if c.kind is R and initial[c.old_path or ""] != final[c.path]:
            assert ch(M, c.path) in net
    kinds: dict[str, set[ChangeKind]] = {}
    for c in net:  # one kind per path (a rename's edit is told on its line)
        kinds.setdefault(c.path, set()).add(c.kind)
    assert all(len(k) == 1 or k == {R, M} for k in kinds.values())
    moved = {c.old_path for c in net if c.kind is R}
    assert not moved & {c.path for c in net if c.kind is D}  # never moved and deleted


# -- scope transitions, and what was undone ----------------------------------------------

E, L = ChangeKind.ENTERED, ChangeKind.LEFT
WHY = {"why": "tagged", "pattern": "#personal"}
IGNORED, MOVED = {"why": "ignored"}, {"why": "moved"}


def ch_b(kind: ChangeKind, path: str, before: str) -> Change:
    return Change(kind, path, before=before)


def moved(kind: ChangeKind, path: str, before: str | None = None) -> Change:
    return Change(kind, path, detail=WHY if kind in (E, L) else None, before=before)


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        ([moved(L, "a")], [moved(L, "a")]),
        ([moved(E, "a"), moved(L, "a")], []),  # came in and went: never there for the reader
        ([moved(L, "a"), moved(E, "a")], [ch(M, "a")]),  # unless undone (see `net`)
        ([moved(E, "a"), ch(M, "a")], [moved(E, "a")]),
        ([ch(M, "a"), moved(L, "a")], [moved(L, "a")]),
        ([ch(C, "a"), moved(L, "a")], []),
        ([moved(L, "a"), ch(D, "a")], [ch(D, "a")]),
        ([moved(E, "a"), ch(D, "a")], []),
        # the reader's path left with its content; `net` finds a gone: deleted
        ([ch(R, "b", "a"), moved(L, "b")], [moved(L, "a")]),
    ],
)
def test_scope_transition_rules(sequence: list[Change], expected: list[Change]) -> None:
    out = coalesce(sequence)
    assert out == expected
    assert [c.detail for c in out] == [c.detail for c in expected]


@pytest.mark.parametrize(
    ("sequence", "now", "expected"),
    [
        # an edit reverted: the content at the start is there again
        ([ch_b(M, "a", "1"), ch_b(M, "a", "2")], {"a": "1"}, []),
        ([ch_b(M, "a", "1"), ch_b(M, "a", "2")], {"a": "3"}, [ch(M, "a")]),
        # deleted and recreated byte for byte
        ([ch_b(D, "a", "1"), ch(C, "a")], {"a": "1"}, []),
        # a rename whose content came back is a rename only
        ([Change(R, "b", "a", before="1"), ch_b(M, "b", "1")], {"b": "1"}, [ch(R, "b", "a")]),
        # left, then gone: one deletion
        ([Change(L, "a", detail=WHY, before="1")], {}, [ch(D, "a")]),
        ([Change(L, "a", detail=WHY, before="1")], {"a": "1"}, [moved(L, "a")]),
        # left and back as it was
        ([Change(L, "a", detail=WHY, before="1"), moved(E, "a")], {"a": "1"}, []),
        # hidden by an ignore rule or moved out: the index cannot see it, it is not gone
        ([Change(L, "a", detail=IGNORED, before="1")], {}, [Change(L, "a", detail=IGNORED)]),
        ([Change(L, "a", detail=MOVED, before="1")], {}, [Change(L, "a", detail=MOVED)]),
    ],
)
def test_net_drops_what_was_undone(
    sequence: list[Change], now: dict[str, str], expected: list[Change]
) -> None:
    out = coalesce(sequence)
    repeated = {c.path for c in sequence if sum(d.path == c.path for d in sequence) > 1}
    lookups = net_lookups(out, repeated | {"b"})
    assert net(out, {p: now[p] for p in lookups if p in now}) == expected


def told(sets: list[list[Change]], now: dict[str, str]) -> list[Change]:
    """What the change log answers for `sets`: coalesced, less what `now` shows undone."""
    out = coalesce_sets(sets)
    lookups = net_lookups(out, repeated_paths(c for changes in sets for c in changes))
    return net(out, {p: now[p] for p in lookups if p in now})


@pytest.mark.parametrize(
    ("sets", "now", "expected"),
    [
        # edited and back, then renamed
        ([[ch_b(M, "a", "1")], [ch_b(M, "a", "2")], [Change(R, "b", "a", before="1")]],
         {"b": "1"}, [ch(R, "b", "a")]),
        # renamed and edited, edited back, renamed again: the path between is not told
        ([[Change(R, "b", "a", before="1"), ch_b(M, "b", "1")], [ch_b(M, "b", "2")],
          [Change(R, "c", "b", before="1")]], {"c": "1"}, [ch(R, "c", "a")]),
        # left the scope, back, then moved with its folder (the listing machine saw it)
        ([[Change(L, "d/y", detail=WHY, before="1")], [moved(E, "d/y")],
          [Change(R, "a/y", "d/y", before="1")]], {"a/y": "1"}, [ch(R, "a/y", "d/y")]),
        # edited for good, then renamed: both told
        ([[ch_b(M, "a", "1")], [Change(R, "b", "a", before="2")]], {"b": "2"},
         [ch(M, "b"), ch(R, "b", "a")]),
        # moved out of the scope (deleted for it), a copy came in elsewhere and moved back
        ([[ch_b(D, "a/y", "1")], [moved(E, "d/y")], [Change(R, "a/y", "d/y", before="1")]],
         {"a/y": "1"}, []),
        # a file moved onto one deleted before, with the same bytes: the source is gone
        ([[ch_b(D, "b", "1")], [Change(R, "b", "a", before="1")]], {"b": "1"}, [ch(D, "a")]),
        ([[ch_b(D, "b", "1")], [Change(R, "b", "a", before="2")]], {"b": "2"},
         [ch(D, "a"), ch(M, "b")]),
    ],
)
def test_content_that_came_back_by_a_rename_is_not_told_again(
    sets: list[list[Change]], now: dict[str, str], expected: list[Change]
) -> None:
    assert told(sets, now) == expected


def test_a_head_move_seen_in_steps_is_one_move_over_the_paths_still_told() -> None:
    def step(old: str, new: str, paths: list[str], op: str = "rebase") -> Change:
        return Change(ChangeKind.GIT, "", detail={"operation": op, "from": old, "to": new,
                                                  "paths": paths, "count": len(paths)})

    out = coalesce_sets([[step("a", "b", ["x", "y"]), ch_b(M, "x", "1")],
                         [step("b", "c", ["x", "z"]), ch_b(M, "x", "2"), ch(C, "z")]])
    told = net(out, {"x": "1"})
    assert told == [ch(C, "z"), step("a", "c", ["z"])]
    other = coalesce([step("a", "b", ["x"], "merge"), step("b", "a", ["x"], "reset")])
    assert len(other) == 2  # two operations stay two


# -- property: with contents, nothing the reader still holds is told again -----------------


@st.composite
def content_batches(draw: st.DrawFn) -> tuple[dict[str, int], list[list[Change]], dict[str, int]]:
    """Batches of edits over a few paths whose content is a small number, so that an edit
    often brings a file back to what it held; each batch observed as a scan logs it
    (modified with the content before, deleted, created; no renames)."""
    tree = {p: draw(st.integers(0, 2)) for p in draw(st.sets(st.sampled_from(PATHS)))}
    initial, sets = dict(tree), []
    for _ in range(draw(st.integers(1, 5))):
        before = dict(tree)
        for path in draw(st.lists(st.sampled_from(PATHS), max_size=3)):
            value = draw(st.one_of(st.none(), st.integers(0, 2)))
            if value is None:
                tree.pop(path, None)
            else:
                tree[path] = value
        changes = [Change(M, p, before=str(before[p])) for p in before.keys() & tree.keys()
                   if before[p] != tree[p]]
        changes += [Change(D, p, before=str(before[p])) for p in before.keys() - tree.keys()]
        changes += [ch(C, p) for p in tree.keys() - before.keys()]
        sets.append(changes)
    return initial, sets, tree


@given(content_batches())
def test_net_changes_are_exactly_the_difference(
    case: tuple[dict[str, int], list[list[Change]], dict[str, int]],
) -> None:
    initial, sets, final = case
    answer = {(c.kind, c.path) for c in told(sets, {p: str(v) for p, v in final.items()})}
    expected = {(M, p) for p in initial.keys() & final.keys() if initial[p] != final[p]}
    expected |= {(D, p) for p in initial.keys() - final.keys()}
    expected |= {(C, p) for p in final.keys() - initial.keys()}
    assert answer == expected


def content(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@st.composite
def moves_and_edits(draw: st.DrawFn) -> tuple[Tree, list[list[Change]], Tree]:
    """Batches of edits that often bring a file back to what it held, and renames onto
    paths free before the batch, each observed as a scan logs it (with the content each
    change's path, a rename's old path, held before it)."""
    initial, steps = evolve(draw, _move_or_edit, 3)
    sets = []
    for before, after in steps:
        observed = observe(before, after)
        origin = {c.path: c.old_path for c in observed if c.kind is R}
        sets.append([replace(c, before=content(before[c.old_path or origin.get(c.path, c.path)])
                             if c.kind is not C else None) for c in observed])
    return initial, sets, steps[-1][1]


def _move_or_edit(draw: st.DrawFn, tree: Tree, before: Tree, _lineage: Iterator[int]) -> None:
    free = [p for p in PATHS if p not in tree and p not in before]
    if tree and free and draw(st.booleans()):
        tree[draw(st.sampled_from(free))] = tree.pop(draw(st.sampled_from(sorted(tree))))
    elif tree:
        path = draw(st.sampled_from(sorted(tree)))
        tree[path] = (tree[path][0], draw(st.integers(0, 1)))


@given(moves_and_edits())
@example(({"a": (1, 0)}, [[ch_b(M, "a", "1.0")], [ch_b(M, "a", "1.1")],
                          [Change(R, "b", "a", before="1.0")]], {"b": (1, 0)}))
def test_net_changes_with_renames_replay_exactly_and_tell_nothing_held(
    case: tuple[Tree, list[list[Change]], Tree],
) -> None:
    initial, sets, final = case
    answer = told(sets, {p: content(v) for p, v in final.items()})
    assert replay(initial, final, answer) == final
    held = {c.path: initial[c.old_path or ""] for c in answer if c.kind is R}
    for c in answer:
        if c.kind is M:
            assert held.get(c.path, initial.get(c.path)) != final[c.path], c


def test_a_listed_file_is_never_found_back_to_its_content() -> None:
    """An entry listed by its stat, not read, has no known content: an edit of it is
    never taken for undone, however the index still lists it."""
    listed = IndexEntry("a.md", FileKind.FILE, 3, 1, 2, 3, UNHASHED)
    assert entry_content(listed) is None
    edited = Change(M, "a.md", before=entry_content(listed))
    assert net([edited], {"a.md": content_key(listed.mode, UNHASHED)}) == [edited]
