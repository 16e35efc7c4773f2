"""The store's contract, the same on both backends (SQLite and a real PostgreSQL server):
every table's reads and writes, paths that are not UTF-8, one snapshot per read
transaction, one writer at a time, the write counter, migrations."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.errors import NotFoundError
from freshline.store import (
    Acknowledgement,
    Change,
    ChangeKind,
    DeliveryRecord,
    DeliveryState,
    FileKind,
    IndexEntry,
    LedgerEntry,
    LedgerKind,
    ProjectState,
    SessionRecord,
    SessionState,
    Store,
)
from freshline.store.meta import runs
from freshline.store.records import ChangeGroup
from freshline.store.schema import MIGRATIONS
from tests.conftest import StoreBackend

ODD = "caf\udce9/\udcff weird\n.md"  # not UTF-8, a newline: stored as the bytes they are


def entry(path: str, size: int = 1, blob: str = "b" * 40, **extra: object) -> IndexEntry:
    return IndexEntry(path, FileKind.FILE, size, 2**62, 2**40, 7, blob, **extra)  # type: ignore[arg-type]


def session(sid: str, project: str = "p", **extra: object) -> SessionRecord:
    values: dict[str, object] = dict(
        id=sid, project=project, state=SessionState.LANDING, mode="live", created_at=1.5,
        resumed_at=None, cursor=None, manifest_epoch=0, dirty_key="k#0", held_key=None,
        manifest="{}", needs_manifest=True, resumed=False)
    return SessionRecord(**(values | extra))  # type: ignore[arg-type]


@pytest.fixture
def store(backend: StoreBackend, tmp_path: Path) -> Store:
    return backend.store(tmp_path)


def test_the_index_keeps_entries_by_path_bytewise(store: Store) -> None:
    with store.write():
        store.index_put([entry("b.md"), entry(ODD, tags=("t", 'q"'), properties={"k": [1]}),
                         entry("a/x.md"), entry("a/y/z.md"), entry("a0.md")],
                        {"b.md": b"\x00\xffsketch"})
    assert [e.path for e in store.index_iter()] == ["a/x.md", "a/y/z.md", "a0.md", "b.md", ODD]
    odd = store.index_get(ODD)
    assert odd is not None and odd.tags == ("t", 'q"') and odd.properties == {"k": [1]}
    assert odd.mtime_ns == 2**62 and odd.inode == 2**40  # 64-bit integers survive
    assert sorted(store.index_under(["a"])) == ["a/x.md", "a/y/z.md"]
    assert store.index_sketches(["b.md", "a0.md"]) == {"b.md": b"\x00\xffsketch"}
    with store.write():
        store.index_put([entry("b.md", size=9)])  # replaced, not doubled
        store.index_delete(["a0.md"])
    assert store.index_count() == 4
    assert store.index_stats()[b"b.md"][0] == 9
    assert store.index_get("a0.md") is None


def test_the_change_log_reads_back_in_order_and_compacts_whole_epochs(store: Store) -> None:
    with store.write():
        store.project_put(ProjectState("p", 2, 0, "sig", {"include": ["a"]}))
        store.log_append("p", 1, [Change(ChangeKind.CREATED, ODD),
                                  Change(ChangeKind.RENAMED, "n.md", "o.md")])
        store.log_append("p", 2, [Change(ChangeKind.GIT, "", detail={"count": 0})])
        store.log_append("q", 1, [Change(ChangeKind.DELETED, "x")])
    assert store.project_state("p") == ProjectState("p", 2, 0, "sig", {"include": ["a"]})
    assert [(e.epoch, e.change.path) for e in store.log_read("p", 0)] == [
        (1, ODD), (1, "n.md"), (2, "")]
    assert store.log_read("p", 1)[0].change.detail == {"count": 0}
    state, logged = store.log_with_state("p", 0)  # the two reads above, in one statement
    assert state == store.project_state("p") and logged == store.log_read("p", 0)
    assert store.log_with_state("p", 2) == (state, [])
    assert store.log_with_state("r", 0) == (None, [])
    with store.write():
        assert store.log_drop("p", 5, keep=2) == []  # 3 rows: under the cap
        dropped = store.log_drop("p", 1, keep=2)  # never epoch 2, the one to keep
        assert [(e.epoch, e.change.path) for e in dropped] == [(1, ODD), (1, "n.md")]
        assert store.log_drop("p", 0, keep=2) == []
        store.project_put(ProjectState("p", 3, 1, "sig2", {}, 1))
    assert [e.epoch for e in store.log_read("p", 0)] == [2]
    assert store.project_states()["p"].compacted_through == 1
    assert store.project_states()["p"].forgotten_through == 1


def test_the_counts_of_dropped_changes_read_back_and_go_oldest_first(store: Store) -> None:
    moved = Change(ChangeKind.GIT, "", detail={"operation": "checkout", "count": 3})
    with store.write():
        store.groups_append("p", [ChangeGroup(1, 2, ODD, {"created": 3}),
                                  ChangeGroup(1, 2, entry=moved)])
        store.groups_append("p", [ChangeGroup(3, 3, "", {"deleted": 1})])
        store.groups_append("q", [ChangeGroup(1, 1, "x", {"modified": 1})])
    assert store.groups_read("p", 0) == [ChangeGroup(1, 2, ODD, {"created": 3}),
                                         ChangeGroup(1, 2, entry=moved),
                                         ChangeGroup(3, 3, "", {"deleted": 1})]
    assert [g.folder for g in store.groups_read("p", 2)] == [""]
    with store.write():
        assert store.groups_trim("p", 3) is None
        assert store.groups_trim("p", 1) == 2  # a span's groups go together
    assert store.groups_read("p", 0) == [ChangeGroup(3, 3, "", {"deleted": 1})]
    assert len(store.groups_read("q", 0)) == 1


def test_hints_and_meta(store: Store) -> None:
    store.hints_add(["b", ODD, "b"])
    assert store.hints_peek() == sorted(["b", ODD])
    with store.write():
        assert store.hints_take() == sorted(["b", ODD])
    assert store.hints_peek() == []
    store.hints_add(["x", "y", "z"])
    x, y, z = store.hints_pending().rows
    with store.write():
        store.hints_drop([x, z])  # a run with a hole: the row between stays
    assert store.hints_pending().paths == ["y"] and store.hints_pending().rows == (y,)
    store.meta_set("k", "1")
    store.meta_set("k", "100%")
    assert store.meta_get("k") == "100%" and store.meta_get("none") is None
    store.meta_set("j", "2")
    assert store.meta_many(["k", "none", "j"]) == {"k": "100%", "j": "2"}


def test_sessions_round_trip_and_are_found_idle(store: Store) -> None:
    s = session("0123456789ab", external_id="mcp:x", channel="mcp",
                pending_docs=["d.pdf"], announced_failures={"d.pdf": "f"})
    store.session_put(s)
    store.session_put(session("b0", project="q", created_at=3.0))
    assert store.session_get(s.id) == s
    assert store.session_by_external("mcp:x") == s
    store.session_touch(s.id, 5.0, "a title")
    store.session_touch(s.id, 2.0, "another")  # never moves back, keeps the first title
    got = store.session_get(s.id)
    assert (got.active_at, got.title, got.needs_manifest) == (5.0, "a title", True)
    store.session_own(s.id, "ann")
    assert store.session_owned(s.id) == (got, "ann") and store.session_owned("b0")[1] is None
    with store.session_write(s.id) as locked:
        assert locked == got
    assert [x.id for x in store.session_list()] == [s.id, "b0"]
    assert [x.id for x in store.session_list("q")] == ["b0"]
    assert [x.id for x in store.sessions_idle(["mcp", "send"], 6.0)] == [s.id, "b0"]
    assert [x.id for x in store.sessions_idle(["mcp"], 4.0)] == []
    store.session_delete([s.id])
    with pytest.raises(NotFoundError):
        store.session_get(s.id)


def test_the_ledger_and_deliveries(store: Store) -> None:
    me, other = "0123456789ab", "ba9876543210"
    store.ledger_put([LedgerEntry(me, ODD, LedgerKind.READ, "x1", 1),
                      LedgerEntry(me, ODD, LedgerKind.READ, "x2", 2),
                      LedgerEntry(other, ODD, LedgerKind.WRITE, "y", 1)])
    last = store.ledger_last(me, ODD)
    assert last is not None and (last.blob, last.seq) == ("x2", 2)
    with store.write():
        store.index_put([entry(ODD, blob="z" * 40)])
        store.log_append("p", 1, [Change(ChangeKind.MODIFIED, ODD)])
    assert {r.indexed for r in store.ledger_on([ODD])} == {"z" * 40}
    assert store.ledger_changed(me, "p", 0) == {ODD} and store.ledger_changed(me, "p", 1) == set()
    for n in range(4):
        assert store.delivery_put(DeliveryRecord(f"tok{n}", me, "mcp", 10.0 + n, n, {"n": n},
                                                 manifest=True))
    assert not store.delivery_put(DeliveryRecord("tok0", other, "mcp", 1.0, 0, {}))  # taken
    store.delivery_settle("tok0", DeliveryState.ACKNOWLEDGED, Acknowledgement.TOKEN, "ok")
    store.delivery_settle("tok1", DeliveryState.SUPERSEDED)
    store.delivery_detail("tok2", {"seen": True})
    got = store.delivery_get("tok0")
    assert got is not None and got.how is Acknowledgement.TOKEN and got.manifest
    with store.write():
        store.deliveries_prune(me, keep=1)
    assert [d.token for d in store.deliveries_of(me)] == ["tok1", "tok2", "tok3"]
    assert [d.token for d in store.deliveries_of(me, DeliveryState.OUTSTANDING)] == [
        "tok2", "tok3"]
    store.session_delete([me])
    assert store.ledger_of(me) == [] and store.deliveries_of(me) == []
    assert store.ledger_paths(other) == {ODD}


def test_a_failed_write_keeps_nothing(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write():
        store.meta_set("k", "lost")
        raise RuntimeError("boom")
    assert store.meta_get("k") is None
    store.meta_set("k", "kept")  # the connection is usable again
    assert store.meta_get("k") == "kept"


def test_a_read_transaction_sees_one_snapshot_and_the_counter_moves(
    backend: StoreBackend, tmp_path: Path
) -> None:
    mine, other = backend.store(tmp_path), backend.store(tmp_path)  # two processes' worth
    mine.meta_set("k", "1")
    before = mine.data_version()
    with mine.read():
        assert mine.meta_get("k") == "1"
        other.meta_set("k", "2")
        assert mine.meta_get("k") == "1"
    assert mine.meta_get("k") == "2"
    assert mine.data_version() != before


def test_readers_go_on_and_writers_wait_while_another_writes(
    backend: StoreBackend, tmp_path: Path
) -> None:
    first, second = backend.store(tmp_path), backend.store(tmp_path)
    first.meta_set("k", "before")
    holding, order = threading.Event(), []

    def long_write() -> None:
        with first.write():
            first.meta_set("k", "after")
            holding.set()
            time.sleep(0.3)
            order.append("first")

    thread = threading.Thread(target=long_write)
    thread.start()
    holding.wait()
    assert second.meta_get("k") == "before"  # a reader sees the last commit at once
    with second.write():  # a writer waits for the lock instead of failing
        order.append("second")
        assert second.meta_get("k") == "after"  # and then reads what the first wrote
    thread.join()
    assert order == ["first", "second"]


def test_the_schema_is_at_the_latest_version(store: Store) -> None:
    assert store.db.schema_version() == len(MIGRATIONS)
    assert {"files", "projects", "changes", "hints", "meta", "sessions", "ledger",
            "deliveries"} <= set(store.db.tables())


@pytest.mark.parametrize(("numbers", "expected"), [
    ([], []), ([4], [(4, 4)]), ([3, 1, 2], [(1, 3)]),
    ([1, 2, 4, 4, 6, 7], [(1, 2), (4, 4), (6, 7)]),
])
def test_runs_of_hint_rows(numbers: list[int], expected: list[tuple[int, int]]) -> None:
    assert runs(numbers) == expected


@given(st.sets(st.integers(0, 60)))
def test_runs_hold_exactly_the_numbers(numbers: set[int]) -> None:
    found = runs(numbers)
    assert {n for first, last in found for n in range(first, last + 1)} == numbers
    assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(found))  # maximal, in order
