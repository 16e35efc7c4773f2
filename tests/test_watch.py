"""The real watcher (`freshline watch` in a subprocess) and concurrent flushes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from freshline.errors import FreshlineError
from freshline.materialize import DocStatus, SnapshotStore, probe
from freshline.store.records import ChangeKind
from freshline.tracker import FlushResult, hints
from freshline.tracker.hints import watcher_alive
from freshline.tracker.watcher import Watcher

from .conftest import Workspace, wait_for

FRESHLINE = [sys.executable, "-m", "freshline"]


@pytest.fixture
def watched(ws: Workspace) -> Iterator[tuple[Workspace, subprocess.Popen[bytes]]]:
    ws.write("n/start.md", "start")
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=1000)
    proc = subprocess.Popen(
        [*FRESHLINE, "--workspace", str(ws.root), "watch"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    tracker = ws.tracker()
    wait_for(lambda: watcher_alive(tracker.store) and tracker.store.project_state("p"))
    yield ws, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)


def test_a_flush_sees_writes_at_once_while_the_watcher_runs(watched) -> None:  # type: ignore[no-untyped-def]
    ws, _proc = watched
    tracker = ws.tracker()
    tracker.flush()
    before = tracker.epoch("p")
    ws.write("n/new.md", "hello")
    ws.write("n/start.md", "changed")
    result = tracker.flush()  # no sleep: the cookie makes the watcher catch up first
    assert not result.full
    # The watcher may have logged the batch itself already; either way it is logged now.
    changes = tracker.changes_since("p", before).changes
    assert {(c.kind, c.path) for c in changes} == {
        (ChangeKind.CREATED, "n/new.md"),
        (ChangeKind.MODIFIED, "n/start.md"),
    }


def test_with_the_watcher_gone_a_flush_still_finds_changes(watched) -> None:  # type: ignore[no-untyped-def]
    ws, proc = watched
    tracker = ws.tracker()
    tracker.flush()
    proc.kill()  # no goodbye: its heartbeat still looks fresh, its hints are lost
    proc.wait()
    ws.write("n/after.md", "written while nobody watched")
    result = tracker.flush()
    assert result.full
    assert [c.path for c in result.projects["p"].changes] == ["n/after.md"]


def test_two_processes_flushing_at_once_log_each_change_once(ws: Workspace) -> None:
    ws.configure({"p": {"include": ["n"]}})
    ws.tracker().scan()
    for i in range(300):
        ws.write(f"n/{i}.md", f"note {i}")
    procs = [
        subprocess.Popen(
            [*FRESHLINE, "--workspace", str(ws.root), "scan", "--json"],
            stdout=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        for _ in range(3)
    ]
    outputs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    logged = ws.tracker().store.log_read("p", 0)
    assert sorted(c.change.path for c in logged) == sorted(f"n/{i}.md" for i in range(300))
    epochs = [o["projects"]["p"]["epoch"] for o in outputs if "p" in o["projects"]]
    assert epochs == [1]


def test_the_watcher_converts_a_dropped_document_in_the_background(watched) -> None:  # type: ignore[no-untyped-def]
    ws, _proc = watched
    ws.write("n/page.html", "<html><body><h1>Dropped in</h1><p>text</p></body></html>")
    snapshots = SnapshotStore(ws.root / ".freshline")
    tracker = ws.tracker()

    def converted() -> bool:
        entry = tracker.store.index_get("n/page.html")
        return probe(snapshots, ws.root, "n/page.html", entry).status is DocStatus.READY

    wait_for(converted, timeout=60)  # no send, no `materialize`: the watcher did it
    assert "Dropped in" in snapshots.snapshot_path("n/page.html").read_text()


def test_a_watcher_busy_in_a_long_conversion_still_looks_alive(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hints, "HEARTBEAT_EVERY_S", 0.1)
    monkeypatch.setattr(hints, "HEARTBEAT_TTL_S", 0.5)
    ws.write("n/start.md", "start")
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    busy, release = threading.Event(), threading.Event()

    def convert(_result: FlushResult) -> None:  # a conversion that takes its time
        busy.set()
        release.wait(30)

    watcher = Watcher(ws.config(), on_flush=convert)
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        reader = ws.tracker()
        wait_for(lambda: watcher_alive(reader.store))
        ws.write("n/new.md", "a document to convert")
        wait_for(busy.is_set)
        ws.write("n/later.md", "written while the watcher works")
        for _ in range(10):  # twice the heartbeat's lifetime
            assert watcher_alive(reader.store)
            time.sleep(0.1)
        result = reader.flush()  # the cookie is answered while the worker is busy
        assert not result.full
        assert "n/later.md" in [e.path for e in reader.files_in_scope("p")]
    finally:
        release.set()
        watcher.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert not watcher_alive(reader.store)


def test_a_name_watchfiles_cannot_decode_costs_a_full_scan_not_the_watcher(
    ws: Workspace,
) -> None:
    ws.write("n/start.md", "start")
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    watcher = Watcher(ws.config())
    thread = threading.Thread(target=watcher.run)
    thread.start()
    try:
        reader = ws.tracker()
        wait_for(lambda: watcher_alive(reader.store))
        with open(os.fsencode(str(ws.root)) + b"/n/caf\xe9.md", "wb") as f:
            f.write(b"latin-1 name")  # watchfiles loses the batch this event is in
        result = reader.flush()
        assert result.full  # the watcher asked for it, or stopped beating meanwhile
        assert [c.path for c in result.projects["p"].changes] == [os.fsdecode(b"n/caf\xe9.md")]
        ws.write("n/after.md", "written while the watcher may be restarting")

        def trusted_again() -> bool:  # once nothing opens the odd file any more
            ws.write("n/probe.md", repr(time.time()))
            return watcher_alive(reader.store) and not reader.flush().full

        wait_for(trusted_again, timeout=60)
        assert "n/after.md" in [e.path for e in reader.files_in_scope("p")]
    finally:
        watcher.stop()
        thread.join(timeout=30)
    assert not thread.is_alive()


def test_a_folder_watchfiles_cannot_decode_stops_the_watcher_with_one_line(
    ws: Workspace,
) -> None:
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    os.makedirs(os.fsencode(str(ws.root)) + b"/n/d\xff")
    watcher = Watcher(ws.config())
    with pytest.raises(FreshlineError) as info:
        watcher.run()
    assert str(info.value).startswith(f"cannot watch {ws.root.resolve()}: ")
    assert "flushes scan the whole workspace instead" in str(info.value)
    assert not watcher_alive(ws.tracker().store)
