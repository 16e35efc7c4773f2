"""Materializer.ensure: fingerprint rules, single-flight runs, locks, progress, prune."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.errors import UsageError, WorkspaceError
from freshline.materialize import DocStatus, MaterializeSettings, Progress, snapshot_id
from freshline.store.records import IndexEntry
from tests.conftest import wait_for
from tests.test_materialize_support import Env, in_thread, materialize_env


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    yield from materialize_env(tmp_path)


def test_nothing_changed_converts_nothing_and_starts_no_worker(env: Env) -> None:
    sources = [env.write(f"d{i}.fake", f"doc {i}") for i in range(4)]
    first = env.materializer().ensure("p", 1, sources)
    assert sorted(first.converted) == [s.path for s in sources]

    fresh = env.materializer()
    second = fresh.ensure("p", 1, sources)

    assert second.converted == [] and second.complete
    assert second.snapshots == first.snapshots
    assert fresh.pool.pids() == []
    assert sorted(env.conversions()) == sorted(s.path for s in sources)


def test_edited_file_is_converted_again_under_the_same_pointer(env: Env) -> None:
    m = env.materializer()
    first = m.ensure("p", 1, [env.write("a.fake", "version one")])
    edited = env.write("a.fake", "version two")
    assert m.probe("a.fake", edited).status is DocStatus.STALE

    second = m.ensure("p", 2, [edited])

    assert second.converted == ["a.fake"]
    assert second.snapshots["a.fake"] == first.snapshots["a.fake"]
    assert "version two" in second.snapshots["a.fake"].read_text()
    assert m.store.read_header("a.fake").fingerprint == edited.blob
    assert m.probe("a.fake", edited).status is DocStatus.READY


def test_marker_for_an_older_version_is_ignored_and_success_clears_it(env: Env) -> None:
    m = env.materializer()
    failed = m.ensure("p", 1, [env.write("a.fake", "FAIL now")])
    assert failed.failures == {"a.fake": "told to fail"}
    assert m.store.marker_path("a.fake").exists()

    fixed = env.write("a.fake", "works now")
    assert m.probe("a.fake", fixed).status is DocStatus.PENDING
    result = m.ensure("p", 2, [fixed])

    assert result.converted == ["a.fake"] and result.failures == {}
    assert not m.store.marker_path("a.fake").exists()


def test_edit_then_fail_keeps_the_stale_snapshot(env: Env) -> None:
    m = env.materializer()
    good = m.ensure("p", 1, [env.write("a.fake", "good text")])
    broken = env.write("a.fake", "FAIL after edit")

    result = m.ensure("p", 2, [broken])

    assert result.failures == {"a.fake": "told to fail"}
    assert result.snapshots == good.snapshots  # stale but usable
    assert "good text" in good.snapshots["a.fake"].read_text()
    state = m.probe("a.fake", broken)
    assert (state.status, state.snapshot, state.reason) == (
        DocStatus.FAILED, good.snapshots["a.fake"], "told to fail",
    )
    assert m.store.read_marker("a.fake").fingerprint == broken.blob
    assert m.ensure("p", 3, [broken]).converted == []  # the marker is honoured
    retried = m.ensure("p", 4, [broken], retry_failed=True)
    assert retried.converted == ["a.fake"] and retried.failures == {"a.fake": "told to fail"}


def test_marker_write_failure_keeps_the_stale_snapshot_usable(env: Env) -> None:
    m = env.materializer()
    good = m.ensure("p", 1, [env.write("a.fake", "good text")])
    m.store.marker_path("a.fake").mkdir()  # the marker's path is taken: writing it fails
    broken = env.write("a.fake", "FAIL after edit")

    result = m.ensure("p", 2, [broken])

    assert result.failures == {"a.fake": "told to fail"}
    assert result.snapshots == good.snapshots
    assert "good text" in good.snapshots["a.fake"].read_text()
    state = m.probe("a.fake", broken)
    assert (state.status, state.snapshot) == (DocStatus.STALE, good.snapshots["a.fake"])


def test_concurrent_callers_of_one_revision_share_one_run(env: Env) -> None:
    sources = [env.write(f"d{i}.fake", f"WAIT text {i}") for i in range(3)]
    m = env.materializer()

    threads = [in_thread(lambda: m.ensure("p", 5, sources)) for _ in range(4)]
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [4], "all callers to join")
    env.open_gate()
    for thread, _ in threads:
        thread.join()

    results = [box[0] for _, box in threads]
    assert all(result is results[0] for result in results)
    assert sorted(env.conversions()) == ["d0.fake", "d1.fake", "d2.fake"]
    assert results[0].complete and len(results[0].snapshots) == 3
    assert m.in_flight("p") == []


def test_newer_revision_does_not_join_and_converts_the_new_file(env: Env) -> None:
    a = env.write("a.fake", "WAIT text a")
    m = env.materializer()
    old_thread, old_box = in_thread(lambda: m.ensure("p", 1, [a]))
    wait_for(lambda: env.conversions() == ["a.fake"], "the old run to start converting")

    b = env.write("b.fake", "text b")  # created after the old run began
    new_thread, new_box = in_thread(lambda: m.ensure("p", 2, [a, b]))
    wait_for(lambda: len(m.in_flight("p")) == 2, "the newer run to start alongside")
    wait_for(lambda: "b.fake" in env.conversions(), "the newer run to convert b")
    env.open_gate()
    old_thread.join()
    new_thread.join()

    old, new = old_box[0], new_box[0]
    assert (old.revision, old.converted) == (1, ["a.fake"])
    assert (new.revision, new.converted) == (2, ["b.fake"])  # a was done by the old run
    assert sorted(new.snapshots) == ["a.fake", "b.fake"] and new.complete
    assert sorted(env.conversions()) == ["a.fake", "b.fake"]


def test_joiner_sees_the_failures_of_the_run_it_joined(env: Env) -> None:
    bad = env.write("bad.fake", "WAIT FAIL please")
    m = env.materializer()
    events: list[Progress] = []
    owner_thread, owner_box = in_thread(lambda: m.ensure("p", 3, [bad]))
    wait_for(lambda: len(m.in_flight("p")) == 1, "the run to start")
    joiner_thread, joiner_box = in_thread(lambda: m.ensure("p", 3, [bad], progress=events.append))
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [2], "the joiner to join")
    env.open_gate()
    owner_thread.join()
    joiner_thread.join()

    assert joiner_box[0] is owner_box[0]
    assert joiner_box[0].failures == {"bad.fake": "told to fail"}
    assert joiner_box[0].complete and joiner_box[0].statuses["bad.fake"] is DocStatus.FAILED
    assert events[-1] == Progress(1, 1, "bad.fake", finished=True, reason="told to fail")


def test_two_materializers_never_convert_one_file_at_once(env: Env) -> None:
    doc = env.write("shared.fake", "WAIT shared text")
    first, second = env.materializer(), env.materializer()
    one = in_thread(lambda: first.ensure("alpha", 1, [doc]))
    wait_for(lambda: env.conversions() == ["shared.fake"], "the first conversion to start")
    two = in_thread(lambda: second.ensure("beta", 1, [doc]))
    wait_for(lambda: len(second.in_flight("beta")) == 1, "the second project's run")
    env.open_gate()
    for thread, _ in (one, two):
        thread.join()

    results = [one[1][0], two[1][0]]
    assert env.conversions() == ["shared.fake"]
    assert [r.converted for r in results] == [["shared.fake"], []]
    assert all(r.snapshots == results[0].snapshots for r in results)


def test_progress_reports_each_conversion(env: Env) -> None:
    sources = [env.write(f"d{i}.fake", f"doc {i}") for i in range(3)]
    events: list[Progress] = []

    env.materializer(workers=1).ensure("p", 1, sources, progress=events.append)

    finished = [e for e in events if e.finished]
    assert [e.done for e in finished] == [1, 2, 3]
    assert {e.path for e in finished} == {s.path for s in sources}
    assert all(e.total == 3 for e in events) and len(events) == 6


def test_deleted_source_is_reported_not_converted(env: Env) -> None:
    gone = env.write("gone.fake", "text")
    (env.root / "gone.fake").unlink()

    result = env.materializer().ensure("p", 1, [gone])

    assert result.statuses == {"gone.fake": DocStatus.DELETED}
    assert result.converted == [] and result.snapshots == {} and result.complete


def test_paths_outside_the_workspace_are_refused(env: Env) -> None:
    outside = env.write("a.fake", "x")
    escaping = IndexEntry(**{**outside.__dict__, "path": "../a.fake"})

    with pytest.raises(WorkspaceError):
        env.materializer().ensure("p", 1, [escaping])


def test_prune_removes_snapshots_and_markers_of_dropped_sources(env: Env) -> None:
    m = env.materializer()
    sources = [env.write("keep.fake", "kept"), env.write("drop.fake", "dropped")]
    sources.append(env.write("bad.fake", "FAIL"))
    m.ensure("p", 1, sources)

    removed = m.prune(["keep.fake"])

    dropped = {"drop.fake": m.store.snapshot_path, "bad.fake": m.store.marker_path}
    assert {p.name for p in removed} == {where(path).name for path, where in dropped.items()} | {
        f"{snapshot_id(path)}.lock" for path in dropped
    }
    assert m.store.snapshot_path("keep.fake").exists()
    assert m.probe("drop.fake", sources[1]).status is DocStatus.PENDING


def test_submit_runs_in_the_background_and_joins_like_ensure(env: Env) -> None:
    doc = env.write("a.fake", "WAIT background text")
    m = env.materializer()
    first, second = m.submit("p", 1, [doc]), m.submit("p", 1, [doc])
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [2], "both to share a run")
    env.open_gate()

    assert first.result() is second.result()
    assert first.result().converted == ["a.fake"]


def test_an_older_revision_joins_a_newer_run(env: Env) -> None:
    doc = env.write("a.fake", "WAIT text")
    m = env.materializer()
    newer = m.submit("p", 5, [doc])
    wait_for(lambda: len(m.in_flight("p")) == 1, "the newer run to start")
    older = m.submit("p", 3, [doc])
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [2], "the older caller to join")
    env.open_gate()

    assert older.result() is newer.result() and newer.result().revision == 5


def test_probe_all_counts_documents_only(env: Env) -> None:
    m = env.materializer()
    ready, bad = env.write("ok.fake", "text"), env.write("bad.fake", "FAIL")
    m.ensure("p", 1, [ready, bad])
    pending = env.write("new.fake", "text")
    note = env.write("note.md", "# a note")

    found = m.probe_all([ready, bad, pending, note])

    assert {path: p.status for path, p in found.items()} == {
        "ok.fake": DocStatus.READY, "bad.fake": DocStatus.FAILED, "new.fake": DocStatus.PENDING,
    }


@pytest.mark.parametrize("setting", ["workers", "timeout_s", "memory_mb", "max_rows"])
def test_settings_must_be_positive(setting: str) -> None:
    with pytest.raises(UsageError, match=setting):
        MaterializeSettings(**{setting: 0})
