"""The watcher as a service (`freshline watch` in subprocesses): it follows config edits
and converts for new projects, says why it stopped, can be stopped and listed, is stopped
by `store migrate`, comes up while clients poll, and `scan` tells what it saw."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from freshline.materialize import DocStatus, SnapshotStore, probe
from freshline.store import Store
from freshline.store.sqlite import DB_NAME
from freshline.tracker import registry
from freshline.tracker.autowatch import stop
from freshline.tracker.hints import watcher_alive
from freshline.tracker.watchlock import holder

from .conftest import Workspace, wait_for
from .docgen import write_pdf

FRESHLINE = [sys.executable, "-m", "freshline"]


def freshline(
    ws: Workspace, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FRESHLINE, "-w", str(ws.root), *args], cwd=ws.root,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})


def as_json(ws: Workspace, *args: str, **env: str) -> Any:
    done = freshline(ws, *args, "--json", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def store_of(ws: Workspace) -> Store:
    return Store(ws.root / ".freshline")


@pytest.fixture
def notes(ws: Workspace) -> Iterator[Workspace]:
    ws.write("n/a.md", "# A\n")
    ws.configure({"p": {"include": ["n"]}}, autowatch_idle=120, debounce_ms=50)
    yield ws
    assert stop(ws.root)  # never leave a watcher behind


@pytest.fixture
def watching(notes: Workspace) -> Iterator[subprocess.Popen[str]]:
    """`freshline watch` on `notes`, up (its heartbeat beats); its log on stdout/stderr."""
    proc = subprocess.Popen([*FRESHLINE, "-w", str(notes.root), "watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: watcher_alive(store_of(notes)), "the watcher's heartbeat")
    yield proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)


def ready(ws: Workspace, path: str) -> bool:
    entry = store_of(ws).index_get(path)
    snapshots = SnapshotStore(ws.root / ".freshline")
    return probe(snapshots, ws.root, path, entry).status is DocStatus.READY


# --- 1. it follows the config and never dies of one batch -----------------------------------


def test_a_project_added_while_watching_gets_its_new_pdf_converted(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    """Issue 29, item 1: `project add pc --include "*.pdf"`, then a PDF appears: the watcher
    died of `unknown project 'pc'` and the PDF stayed pending."""
    added = freshline(notes, "project", "add", "pc", "--include", "*.pdf")
    assert added.returncode == 0, added.stderr
    write_pdf(notes.root / "paper.pdf", [["A paper about watchers"]])
    wait_for(lambda: ready(notes, "paper.pdf"), "the PDF converted by the watcher", 60)
    assert watching.poll() is None
    watching.send_signal(signal.SIGTERM)
    log, _ = watching.communicate(timeout=30)
    assert "unknown project" not in log and "error" not in log
    assert "converted paper.pdf" in log


def test_a_starting_watcher_converts_the_documents_left_pending(notes: Workspace) -> None:
    """Issue 29, item 1: a new watcher left `docs … 3 pending` until `materialize` was run."""
    for i in range(3):
        write_pdf(notes.root / f"docs/d{i}.pdf", [[f"document {i}"]])
    notes.configure({"p": {"include": ["n"]}, "docs": {"include": ["docs"]}})
    assert freshline(notes, "scan").returncode == 0  # (no watcher: under pytest, autowatch is off)
    assert as_json(notes, "status")["projects"]["docs"]["documents"] == {"pending": 3}
    proc = subprocess.Popen([*FRESHLINE, "-w", str(notes.root), "watch", "--quiet"])
    try:
        wait_for(lambda: all(ready(notes, f"docs/d{i}.pdf") for i in range(3)),
                 "the pending documents converted", 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    assert as_json(notes, "status")["projects"]["docs"]["documents"] == {"ready": 3}


def test_a_killed_watcher_is_restarted_by_the_next_command_which_says_so_once(
    notes: Workspace,
) -> None:
    assert freshline(notes, "scan", FRESHLINE_AUTOWATCH="1").returncode == 0
    wait_for(lambda: watcher_alive(store_of(notes)), "the started watcher")
    pid = holder(notes.root)
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: holder(notes.root) is None, "the lock let go")
    status = freshline(notes, "status").stdout
    assert "watcher: not running; it had stopped: it ended without a word" in status
    again = freshline(notes, "scan", FRESHLINE_AUTOWATCH="1")
    assert again.returncode == 0
    assert again.stderr == (f"warning: the watcher of {notes.root} had stopped: it ended "
                            "without a word (killed, or the machine restarted); started a "
                            "new one\n")
    wait_for(lambda: holder(notes.root) not in (None, 0, pid), "the new watcher")
    assert freshline(notes, "scan", FRESHLINE_AUTOWATCH="1").stderr == ""  # said once


def test_a_watcher_an_error_stops_says_why_to_the_next_command(notes: Workspace) -> None:
    odd = os.fsencode(str(notes.root)) + b"/n/d\xff"
    os.makedirs(odd)  # a folder watchfiles cannot decode: the tree cannot be watched
    done = subprocess.run([*FRESHLINE, "-w", str(notes.root), "watch", "--quiet"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: cannot watch {notes.root}")
    status = freshline(notes, "status").stdout
    assert f"watcher: not running; it had stopped: cannot watch {notes.root}" in status
    os.rmdir(odd)
    restarted = freshline(notes, "scan", FRESHLINE_AUTOWATCH="1")
    assert f"had stopped: cannot watch {notes.root}" in restarted.stderr
    wait_for(lambda: watcher_alive(store_of(notes)), "the new watcher")


# --- 2. stop, list, status, migrate -----------------------------------------------------------


def test_watch_stop_and_list_every_watcher_of_the_user(
    notes: Workspace, tmp_path: Path
) -> None:
    other = Workspace(tmp_path / "other")
    other.root.mkdir()
    other.configure({"q": {"include": ["**"]}}, debounce_ms=50)
    procs = [subprocess.Popen([*FRESHLINE, "-w", str(w.root), "watch", "--quiet"])
             for w in (notes, other)]
    try:
        for w in (notes, other):
            wait_for(lambda w=w: watcher_alive(store_of(w)), "both watchers")  # type: ignore[misc]
        pointers = registry.registry_dir()
        (pointers / "garbage.json").write_text("{not json")
        (pointers / "dead.json").write_text(json.dumps({"workspace": "/nowhere", "pid": 1}))
        listed = as_json(notes, "watch", "--list")
        assert [(w["workspace"], w["pid"]) for w in listed] == sorted(
            (str(w.root), p.pid) for w, p in zip((notes, other), procs, strict=True))
        assert all(w["store"].endswith("freshline.db") and w["uptime_s"] >= 0
                   and w["last_error"] is None for w in listed)
        assert sorted(p.name for p in pointers.iterdir()) == sorted(
            f"{registry.pointer_key(w.root)}.json" for w in (notes, other))
        text = freshline(notes, "watch", "--list").stdout.splitlines()
        assert text[0].split() == ["workspace", "pid", "up", "store", "last", "error"]
        assert text[1].split()[:2] == [str(other.root), str(procs[1].pid)]

        stopped = freshline(notes, "watch", "--stop")
        assert stopped.returncode == 0
        assert stopped.stdout == f"stopped the watcher of {notes.root} (pid {procs[0].pid})\n"
        assert procs[0].wait(timeout=30) == 0
        assert [w["workspace"] for w in as_json(notes, "watch", "--list")] == [str(other.root)]
        assert freshline(notes, "watch", "--stop").stdout == (
            f"no watcher is running on {notes.root}\n")
        assert "watcher: not running\n" in freshline(notes, "status").stdout  # stopped: asked
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert freshline(notes, "watch", "--list").stdout == "no watcher is running\n"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--stop", "--list"], "give --stop or --list, not both"),
        (["--json"], "--json goes with --list or --stop"),
    ],
)
def test_watch_refuses_options_that_do_not_go_together(
    notes: Workspace, args: list[str], error: str
) -> None:
    from typer.testing import CliRunner

    from freshline.interfaces.cli import app

    done = CliRunner().invoke(app, ["--workspace", str(notes.root), "watch", *args])
    assert (done.exit_code, done.stderr) == (2, f"error: {error}\n")


def test_status_tells_the_watcher_its_pid_uptime_and_last_error(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    data = as_json(notes, "status")["watcher"]
    assert data["state"] == "running" and data["pid"] == watching.pid
    assert data["store"] == str(notes.root / ".freshline" / "freshline.db")
    assert data["last_error"] is None and data["stopped"] is None
    line = next(x for x in freshline(notes, "status").stdout.splitlines()
                if x.startswith("watcher:"))
    assert line.startswith(f"watcher: running (pid {watching.pid}, up ")
    (notes.root / "freshline.toml").write_text("[workspace\n")  # broken mid-edit
    wait_for(lambda: (registry.read_record(notes.root) or registry.WatcherRecord(
        "", 0, 0, "")).last_error, "the error noted")
    notes.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    assert "; last error: " in freshline(notes, "status").stdout
    assert watching.poll() is None


def test_store_migrate_stops_the_watcher_and_the_next_command_starts_one_on_the_new_store(
    notes: Workspace,
) -> None:
    """Issue 29, item 2: `store migrate` ran beside a live watcher, which kept writing to
    the old store."""
    assert freshline(notes, "scan", FRESHLINE_AUTOWATCH="1").returncode == 0
    wait_for(lambda: watcher_alive(store_of(notes)), "the started watcher")
    pid = holder(notes.root)
    moved = notes.root / "moved.db"
    done = freshline(notes, "store", "migrate", "--to", f"sqlite:{moved}")
    assert done.returncode == 0, done.stderr
    assert f"stopped the watcher (pid {pid})" in done.stdout
    assert holder(notes.root) is None
    url = {"FRESHLINE_STORE_URL": f"sqlite:{moved}", "FRESHLINE_AUTOWATCH": "1"}
    assert freshline(notes, "scan", **url).returncode == 0
    new = Store(notes.root / ".freshline", f"sqlite:{moved}")
    wait_for(lambda: watcher_alive(new), "a watcher on the new store")
    record = registry.read_record(notes.root)
    assert record is not None and record.store == str(moved) and record.pid != pid
    assert not watcher_alive(store_of(notes))  # the old store's hints are not trusted
    notes.write("n/after.md", "after the move")
    scanned = json.loads(freshline(notes, "scan", "--json", **url).stdout)
    assert [c["path"] for c in scanned["projects"]["p"]["changes"]] == ["n/after.md"]
    assert new.index_get("n/after.md") is not None
    assert store_of(notes).index_get("n/after.md") is None


# --- 3. scan tells what changed since the last scan ------------------------------------------


def test_scan_with_a_watcher_lists_what_changed_since_the_last_scan(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    """Issue 29, item 3: `echo x >> Tags.md; sleep 2; freshline scan` said nothing changed."""
    freshline(notes, "scan")
    notes.write("n/a.md", "# A\nx\n")
    notes.write("n/b.md", "# B\n")
    wait_for(lambda: store_of(notes).project_state("p").epoch > 0,  # type: ignore[union-attr]
             "the watcher's own flush")
    scanned = freshline(notes, "scan").stdout.splitlines()
    epoch = store_of(notes).project_state("p").epoch  # type: ignore[union-attr]
    assert scanned[:3] == [f"p: epoch 0 → {epoch}", "  modified  n/a.md", "  created   n/b.md"]
    assert freshline(notes, "scan").stdout.endswith("; nothing changed since the last scan\n")
    notes.write("n/c.md", "c")
    time.sleep(0.3)  # the watcher may log it first, or the scan's flush: either way
    data = as_json(notes, "scan")
    assert data["projects"] == {"p": {
        "project": "p", "since": epoch, "epoch": data["projects"]["p"]["epoch"],
        "compacted": False, "forgotten": False, "counted": [],
        "changes": [{"kind": "created", "path": "n/c.md", "old_path": None, "detail": None}]}}
    assert as_json(notes, "scan")["projects"] == {}


def test_a_watcher_started_on_an_older_store_marks_where_scan_reports_from(
    notes: Workspace,
) -> None:
    tracker = notes.tracker()
    tracker.flush()
    notes.write("n/before.md", "logged before any mark")
    tracker.flush()
    with tracker.store.write():  # a store from before the marks
        tracker.store.db.execute_write("DELETE FROM meta WHERE key LIKE 'scan.reported.%'", ())
    proc = subprocess.Popen([*FRESHLINE, "-w", str(notes.root), "watch", "--quiet"])
    try:
        wait_for(lambda: watcher_alive(store_of(notes)), "the watcher")
        assert as_json(notes, "scan")["projects"] == {}  # since the watcher started
        notes.write("n/later.md", "later")
        assert [c["path"] for c in as_json(notes, "scan")["projects"]["p"]["changes"]] == [
            "n/later.md"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


# --- 4. it comes up while clients poll --------------------------------------------------------


def test_a_starting_watcher_comes_up_while_status_is_asked_every_0_2_s(ws: Workspace) -> None:
    """Issue 29, item 4 (and issue 33: `status` right after the first `project add` said
    `watcher: not running (pid N)`): clients asking kept the new watcher from coming up."""
    for i in range(200):
        ws.write(f"notes/n{i}.md", f"# {i}\n")
    ws.configure({}, autowatch_idle=120)
    try:
        added = freshline(ws, "project", "add", "notes", "--include", "notes",
                          FRESHLINE_AUTOWATCH="1")
        assert added.returncode == 0, added.stderr
        seen = []
        deadline = time.monotonic() + 60
        while not seen or seen[-1] != "running":
            assert time.monotonic() < deadline, f"never up: {seen}"
            seen.append(as_json(ws, "status")["watcher"]["state"])
            time.sleep(0.2)
        assert set(seen) <= {"starting", "running"}, seen
    finally:
        assert stop(ws.root)


def test_a_starting_watcher_leaves_questions_to_the_clients_until_it_is_up(
    notes: Workspace,
) -> None:
    """Issue 29, item 4: a client asking a watcher that is still on its first full scan is
    sent back at once to do the work itself, in its own process: the watcher answers
    nothing (it would run the question beside its scan) until it is up."""
    from freshline.interfaces import watchclient
    from freshline.interfaces.cli import fast

    notes.tracker().flush()  # the store exists: the watcher's start needs no write
    held = sqlite3.connect(notes.root / ".freshline" / DB_NAME, isolation_level=None)
    held.execute("BEGIN IMMEDIATE")  # its first full scan cannot write: it is not up
    proc = subprocess.Popen([*FRESHLINE, "-w", str(notes.root), "watch", "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        root = str(notes.root)
        wait_for(lambda: os.path.exists(watchclient.socket_path(root)), "the socket")
        time.sleep(0.5)  # the first full scan has begun, and waits for the lock
        assert not watcher_alive(store_of(notes))
        assert watchclient.ask(root, {"op": "status"}) is None  # "ask it yourself"
        fast.status(root, as_json=True)  # the slow path meanwhile, in this process
        held.execute("ROLLBACK")
        wait_for(lambda: watcher_alive(store_of(notes)), "the watcher to come up")
        answer = watchclient.ask(root, {"op": "status"})
        assert answer is not None and answer["data"]["watcher"]["state"] == "running"
    finally:
        held.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
