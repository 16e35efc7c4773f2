"""Materializer.ensure end to end: real documents, real worker processes, real locks."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from freshline.errors import WorkspaceError
from freshline.materialize import (
    DocStatus,
    Materializer,
    MaterializeResult,
    MaterializeSettings,
    Progress,
    register,
    unregister,
)
from freshline.store.records import IndexEntry
from tests import docgen
from tests.docgen import entry

WORKER_CODE = "freshline.materialize.worker import serve"


class Env:
    """A workspace root, its data dir, and the log/gate files of the fake converter."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / ".freshline"
        self.log = root.parent / "conversions.log"
        self.gate = root.parent / "gate"
        self.materializers: list[Materializer] = []

    def materializer(self, **settings: object) -> Materializer:
        merged: dict[str, object] = {"workers": 2, "timeout_s": 30.0, **settings}
        m = Materializer(self.root, self.data, MaterializeSettings(**merged))  # type: ignore[arg-type]
        self.materializers.append(m)
        return m

    def write(self, path: str, text: str) -> IndexEntry:
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(text)
        return entry(self.root, path)

    def conversions(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []

    def open_gate(self) -> None:
        self.gate.touch()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    root = tmp_path / "ws"
    root.mkdir()
    environment = Env(root)
    fakes = [
        docgen.FakeConverter(environment.log, environment.gate),
        docgen.HangConverter(),
        docgen.CrashConverter(),
        docgen.ExitConverter(),
        docgen.HogConverter(),
    ]
    for converter in fakes:
        register(converter)
    earlier = set(worker_children())  # left by other tests: not this test's business
    yield environment
    for m in environment.materializers:
        m.close()
    for converter in fakes:
        unregister(converter)
    assert set(worker_children()) <= earlier


def worker_children() -> list[int]:
    """Live worker processes whose parent is this test process."""
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and WORKER_CODE in cmdline:
            found.append(pid)
    return found


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


def in_thread(call: Callable[[], MaterializeResult]) -> tuple[threading.Thread, list]:
    box: list = []
    thread = threading.Thread(target=lambda: box.append(call()))
    thread.start()
    return thread, box


def test_every_format_converted_and_bad_ones_fail_with_reasons(env: Env) -> None:
    root = env.root
    docgen.write_pdf(root / "paper.pdf", [["Page one text"], ["Page two text"]])
    docgen.write_docx(root / "report.docx", "Report", ["an item"], [["k", "v"], ["a", "1"]])
    docgen.write_pptx(root / "deck.pptx", [("Intro", "Body", "A note")])
    docgen.write_xlsx(root / "book.xlsx", {"One": [["a"], [1]], "Two": [["b"], [2]]})
    (root / "page.html").write_text("<p>Hello <script>nope()</script>world</p>")
    (root / "notes.md").write_text("# not a document")
    whole = docgen.pdf_bytes([["cut short"]] * 3)
    (root / "truncated.pdf").write_bytes(whole[: len(whole) // 2])
    (root / "random.pdf").write_bytes(os.urandom(2048))
    docgen.write_encrypted_pdf(root / "locked.pdf", [["secret"]])
    docgen.write_pdf(root / "scan.pdf", [["x"]], text=False)
    docgen.write_zip_bomb_docx(root / "bomb.docx", unpacked_mib=300)
    sources = [entry(root, p.name) for p in sorted(root.iterdir()) if p.is_file()]

    result = env.materializer().ensure("docs", 7, sources)

    good = ["book.xlsx", "deck.pptx", "page.html", "paper.pdf", "report.docx"]
    assert sorted(result.snapshots) == good
    assert result.failures == {
        "bomb.docx": "unpacks to 300 MiB, over the 256 MiB limit (zip bomb?)",
        "locked.pdf": "encrypted PDF (password required)",
        "random.pdf": result.failures["random.pdf"],
        "scan.pdf": "no extractable text",
        "truncated.pdf": result.failures["truncated.pdf"],
    }
    assert result.failures["random.pdf"].startswith("unreadable PDF")
    assert result.failures["truncated.pdf"].startswith("unreadable PDF")
    assert "notes.md" not in result.statuses
    assert result.complete and result.revision == 7 and result.project == "docs"
    assert sorted(result.converted) == sorted(result.statuses)
    page = result.snapshots["page.html"].read_text()
    assert "Hello world" in page and "nope" not in page
    assert "## Page 2\n\nPage two text" in result.snapshots["paper.pdf"].read_text()
    m = env.materializers[0]
    for path, reason in result.failures.items():
        assert m.store.read_marker(path).reason == reason
        assert m.probe(path, entry(root, path)).status is DocStatus.FAILED


def test_hang_times_out_and_the_worker_is_gone(env: Env) -> None:
    hang = env.write("stuck.hang", "x")
    good = env.write("fine.fake", "fine text")
    m = env.materializer(timeout_s=2.0)

    result = m.ensure("p", 1, [hang, good])

    assert result.failures == {"stuck.hang": "timed out after 2 s"}
    assert "fine.fake" in result.snapshots
    pid = int((env.root / "stuck.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped, not a zombie
    assert pid not in m.pool.pids()


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("boom.crash", "worker crashed (signal 9)"),
        ("quit.exit", "worker crashed (exit code 3)"),
        ("greedy.hog", "out of memory (limit 1024 MiB)"),
    ],
)
def test_crash_and_memory_exhaustion_become_failures(env: Env, name: str, reason: str) -> None:
    bad = env.write(name, "x")
    others = [env.write(f"ok{i}.fake", f"text {i}") for i in range(3)]
    m = env.materializer()

    result = m.ensure("p", 1, [bad, *others])

    assert result.failures == {name: reason}
    assert sorted(result.snapshots) == ["ok0.fake", "ok1.fake", "ok2.fake"]
    assert m.probe(name, bad).reason == reason
    second = m.ensure("p", 2, [bad, *others])
    assert second.converted == [] and second.failures == {name: reason}


def test_zip_bomb_past_the_size_check_hits_the_memory_limit(env: Env) -> None:
    bomb = docgen.write_zip_bomb_docx(env.root / "bomb.docx", unpacked_mib=768)
    m = env.materializer(max_unpacked_mb=1 << 20, memory_mb=512)

    result = m.ensure("p", 1, [entry(env.root, bomb.name)])

    assert result.failures == {"bomb.docx": "out of memory (limit 512 MiB)"}


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

    assert sorted(p.name for p in removed) == sorted(
        [m.store.snapshot_path("drop.fake").name, m.store.marker_path("bad.fake").name]
    )
    assert m.store.snapshot_path("keep.fake").exists()
    assert m.probe("drop.fake", sources[1]).status is DocStatus.PENDING


def test_close_cancels_a_running_conversion_without_a_marker(env: Env) -> None:
    hang = env.write("stuck.hang", "x")
    m = env.materializer()
    future = m.submit("p", 1, [hang])
    wait_for(lambda: (env.root / "stuck.pid").exists(), "the conversion to start")

    m.close()

    result = future.result()
    assert result.failures == {} and result.converted == []
    assert result.statuses == {"stuck.hang": DocStatus.PENDING} and not result.complete
    assert not m.store.marker_path("stuck.hang").exists()
    assert m.pool.pids() == []


def test_submit_runs_in_the_background_and_joins_like_ensure(env: Env) -> None:
    doc = env.write("a.fake", "WAIT background text")
    m = env.materializer()
    first, second = m.submit("p", 1, [doc]), m.submit("p", 1, [doc])
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [2], "both to share a run")
    env.open_gate()

    assert first.result() is second.result()
    assert first.result().converted == ["a.fake"]


def test_workers_exit_when_their_parent_dies(env: Env, tmp_path: Path) -> None:
    env.write("a.fake", "text")
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys\n"
        "from pathlib import Path\n"
        "from freshline.materialize import Materializer, MaterializeSettings, register\n"
        "from tests import docgen\n"
        "root = Path(sys.argv[1])\n"
        "register(docgen.FakeConverter(root / 'log', root / 'gate'))\n"
        "m = Materializer(root, root / '.freshline', MaterializeSettings(workers=1))\n"
        "m.ensure('p', 1, [docgen.entry(root, 'a.fake')])\n"
        "print(*m.pool.pids(), flush=True)\n"
        "import os; os._exit(0)  # no close(): the worker must notice on its own\n"
    )
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, str(script), str(env.root)], capture_output=True, text=True,
        check=True, cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)},
    )
    (pid,) = (int(word) for word in done.stdout.split())
    wait_for(lambda: not running(pid), "the orphaned worker to exit")


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_an_older_revision_joins_a_newer_run(env: Env) -> None:
    doc = env.write("a.fake", "WAIT text")
    m = env.materializer()
    newer = m.submit("p", 5, [doc])
    wait_for(lambda: len(m.in_flight("p")) == 1, "the newer run to start")
    older = m.submit("p", 3, [doc])
    wait_for(lambda: [r.callers for r in m.in_flight("p")] == [2], "the older caller to join")
    env.open_gate()

    assert older.result() is newer.result() and newer.result().revision == 5


def test_unwritable_data_dir_reports_a_failure_and_goes_on(env: Env) -> None:
    doc = env.write("a.fake", "text")
    env.data.mkdir()
    for blocked in ("snapshots", "locks"):
        (env.data / blocked).write_text("a file where a directory should be")

    result = env.materializer().ensure("p", 1, [doc])

    assert result.failures["a.fake"].startswith("could not write the snapshot")
    assert result.snapshots == {}
