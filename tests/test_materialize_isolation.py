"""Worker isolation: broken, hostile and hanging documents fail; freshline goes on and
no worker outlives its job."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.materialize import Converter, DocStatus, Limits, register, unregister
from tests import docgen
from tests.conftest import ended, wait_for
from tests.docgen import entry
from tests.test_materialize_support import Env, materialize_env, running


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    yield from materialize_env(tmp_path)


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
    assert "<!-- page 2 -->\n\nPage two text" in result.snapshots["paper.pdf"].read_text()
    m = env.materializers[0]
    for path, reason in result.failures.items():
        assert m.store.read_marker(path).reason == reason
        assert m.probe(path, entry(root, path)).status is DocStatus.FAILED


def test_hang_times_out_and_the_worker_is_gone(env: Env) -> None:
    hang = env.write("stuck.hang", str(env.root / "stuck.pid"))
    good = env.write("fine.fake", "fine text")
    m = env.materializer(timeout_s=2.0)

    result = m.ensure("p", 1, [hang, good])

    # A timeout may be the machine's load: the document waits for a later run, not failed.
    assert result.failures == {} and result.statuses["stuck.hang"] is DocStatus.PENDING
    assert m.store.read_marker("stuck.hang").retry_at is not None
    assert "fine.fake" in result.snapshots
    pid, folder = (env.root / "stuck.pid").read_text().splitlines()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # killed and reaped, not a zombie
    assert int(pid) not in m.pool.pids()
    assert not os.path.exists(folder)  # its private folder too (it named the document there)


def test_a_worker_whose_parent_was_killed_leaves_no_folder(tmp_path: Path) -> None:
    """Seen: a /tmp/freshline-doc-* folder left by every run of the suite (a service
    killed with its worker idle: only the parent removed the folder)."""
    code = ("from freshline.materialize.worker import _Worker; import time; "
            "w = _Worker(0, 30.0); print(w.folder, w.pid, flush=True); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    folder, pid = parent.stdout.readline().split()
    assert os.path.isdir(folder)
    parent.kill()
    parent.wait()
    ended(int(pid))  # the worker saw its parent go
    assert not os.path.exists(folder)


@pytest.mark.parametrize(
    ("name", "reason", "timeout_s"),
    [("boom.crash", "worker crashed (signal 9)", 30.0), ("stuck.hang", "timed out after 1 s", 1.0)],
)
def test_load_failures_are_retried_with_backoff_then_stick(
    env: Env, name: str, reason: str, timeout_s: float
) -> None:
    bad = env.write(name, "x")
    waiting = env.materializer(timeout_s=timeout_s)  # backs off 30 s: nothing again at once
    first = waiting.ensure("p", 1, [bad])
    assert first.failures == {} and first.converted == [name] and not first.complete
    assert waiting.probe(name, bad).status is DocStatus.PENDING
    assert waiting.ensure("p", 2, [bad]).converted == []  # still backing off

    other = env.write("again" + name[name.index("."):], "x")
    m = env.materializer(timeout_s=timeout_s, retry_backoff_s=0, load_attempts=3)
    for attempt in (1, 2):
        again = m.ensure("p", 2 + attempt, [other])
        assert again.converted == [other.path] and again.failures == {}
        assert m.store.read_marker(other.path).attempts == attempt
    third = m.ensure("p", 5, [other])
    assert third.failures == {other.path: f"{reason} (3 attempts)"}  # now it sticks
    assert m.ensure("p", 6, [other]).converted == []


@pytest.mark.parametrize(
    ("name", "reason"),
    [
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


def test_close_cancels_a_running_conversion_without_a_marker(env: Env) -> None:
    hang = env.write("stuck.hang", str(env.root / "stuck.pid"))
    m = env.materializer()
    future = m.submit("p", 1, [hang])
    wait_for(lambda: (env.root / "stuck.pid").exists(), "the conversion to start")

    m.close()

    result = future.result()
    assert result.failures == {} and result.converted == []
    assert result.statuses == {"stuck.hang": DocStatus.PENDING} and not result.complete
    assert not m.store.marker_path("stuck.hang").exists()
    assert m.pool.pids() == []


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


def test_unwritable_data_dir_reports_a_failure_and_goes_on(env: Env) -> None:
    doc = env.write("a.fake", "text")
    env.data.mkdir()
    for blocked in ("snapshots", "locks"):
        (env.data / blocked).write_text("a file where a directory should be")

    result = env.materializer().ensure("p", 1, [doc])

    assert result.failures["a.fake"].startswith("could not write the snapshot")
    assert result.snapshots == {}


def test_a_converter_workers_cannot_load_fails_its_documents(env: Env) -> None:
    class Local(Converter):  # a local class: it cannot be pickled to a worker
        name, version, extensions = "local", "1", (".local",)

        def extract(self, path: Path, limits: Limits) -> str:
            return "never"

    local = Local()
    register(local)
    try:
        result = env.materializer().ensure("p", 1, [env.write("a.local", "x")])
    finally:
        unregister(local)

    assert result.failures["a.local"].startswith("could not load the converter (")
