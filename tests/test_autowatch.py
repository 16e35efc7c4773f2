"""The watcher starts itself, answers the hot commands, logs what it sees, and goes away."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshline.interfaces import watchclient
from freshline.interfaces.cli.autostart import duration
from freshline.store import Store
from freshline.tracker import autowatch
from freshline.tracker.autowatch import enabled
from freshline.tracker.hints import watcher_alive
from freshline.tracker.watchlock import WatchLock, holder

from .conftest import Served, Workspace, wait_for

FRESHLINE = [sys.executable, "-m", "freshline"]


def freshline(
    ws: Workspace, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FRESHLINE, *args], cwd=ws.root, input=stdin, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **env})


@pytest.fixture
def notes(ws: Workspace) -> Iterator[Workspace]:
    ws.write("n/a.md", "# A\n")
    ws.configure({"p": {"include": ["n"]}}, autowatch_idle=60)
    yield ws
    assert autowatch.stop(ws.root)  # never leave a watcher behind


@pytest.mark.parametrize(
    ("env", "setting", "on"),
    [
        ({}, True, False),  # under pytest: off unless asked
        ({"FRESHLINE_AUTOWATCH": "1"}, True, True),
        ({"FRESHLINE_AUTOWATCH": "1"}, False, True),  # asked for, whatever the config says
        ({"FRESHLINE_AUTOWATCH": "0"}, True, False),
        ({"FRESHLINE_AUTOWATCH": "off"}, True, False),
        ({"FRESHLINE_AUTOWATCH": "yes", "CI": "true"}, True, True),
    ],
)
def test_enabled(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], setting: bool, on: bool
) -> None:
    monkeypatch.delenv("FRESHLINE_AUTOWATCH", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = ws.configure({}, autowatch=setting)
    assert enabled(config) is on


def test_enabled_outside_tests_follows_the_config(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("FRESHLINE_AUTOWATCH", "CI", "PYTEST_CURRENT_TEST"):
        monkeypatch.delenv(key, raising=False)
    assert enabled(ws.configure({}))
    assert not enabled(ws.configure({}, autowatch=False))
    monkeypatch.setenv("CI", "1")
    assert not enabled(ws.configure({}))


def test_the_lock_lets_one_process_hold_it(ws: Workspace) -> None:
    ws.configure({})
    first, second = WatchLock(ws.root), WatchLock(ws.root)
    assert first.acquire() and holder(ws.root) == os.getpid()
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from freshline.tracker.watchlock import WatchLock;"
         f"sys.exit(0 if WatchLock({str(ws.root)!r}).acquire() else 3)"], timeout=30)
    assert done.returncode == 3
    first.release()
    assert holder(ws.root) is None and second.acquire()
    second.release()


def test_the_lock_is_taken_in_a_workspace_never_used(tmp_path: Path) -> None:
    """`freshline watch` run first in a workspace with no `.freshline` yet (or a store
    elsewhere) said "no such file or directory: …/watch.lock"."""
    lock = WatchLock(tmp_path)
    assert lock.acquire() and holder(tmp_path) == os.getpid()
    lock.release()


def test_under_pytest_a_command_starts_no_watcher(notes: Workspace) -> None:
    assert freshline(notes, "scan").returncode == 0
    time.sleep(0.5)
    assert holder(notes.root) is None


def test_the_first_flush_starts_one_watcher_for_the_workspace(notes: Workspace) -> None:
    runs = [subprocess.Popen([*FRESHLINE, "scan"], cwd=notes.root, stdout=subprocess.DEVNULL,
                             env={**os.environ, "FRESHLINE_AUTOWATCH": "1"}) for _ in range(3)]
    assert [r.wait(timeout=60) for r in runs] == [0, 0, 0]
    store = Store(notes.root / ".freshline")
    wait_for(lambda: watcher_alive(store))
    pid = holder(notes.root)
    assert pid
    time.sleep(1.0)  # a racing starter that lost the lock has exited by now
    listing = subprocess.run(["pgrep", "-f", "--", f"--workspace {notes.root} watch"],
                             capture_output=True, text=True)
    assert listing.stdout.split() == [str(pid)]
    second = freshline(notes, "watch")
    assert second.returncode == 2
    assert f"a watcher is already running on {notes.root} (pid {pid})" in second.stderr
    notes.write("n/new.md", "new")
    assert freshline(notes, "scan", "--json").returncode == 0  # answered by the watcher
    assert store.index_get("n/new.md") is not None
    log = (notes.root / ".freshline" / "watch.log").read_text()
    assert "Traceback" not in log


def test_the_first_command_of_a_workspace_without_its_data_folder_starts_the_watcher(
    notes: Workspace
) -> None:
    """A freshline.toml written by hand has no `.freshline/` beside it yet: the first
    scan created the store but started no watcher (its log had no folder to go in)."""
    shutil.rmtree(notes.root / ".freshline")
    assert freshline(notes, "scan", FRESHLINE_AUTOWATCH="1").returncode == 0
    wait_for(lambda: holder(notes.root) is not None)
    wait_for(lambda: watcher_alive(Store(notes.root / ".freshline")))


def test_the_first_start_in_a_workspace_says_so_once(notes: Workspace) -> None:
    """Seen: the first `project add` started a background process without a word."""
    first = freshline(notes, "project", "add", "q", "--include", "n", FRESHLINE_AUTOWATCH="1")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("freshline now watches this workspace in a background "
                              "process") == 1
    assert "it exits after 1 min unused" in first.stderr
    wait_for(lambda: holder(notes.root) is not None)
    assert autowatch.stop(notes.root)
    again = freshline(notes, "scan", FRESHLINE_AUTOWATCH="1")
    assert again.returncode == 0 and "now watches" not in again.stderr
    wait_for(lambda: holder(notes.root) is not None)  # started again, without a word


@pytest.mark.parametrize(("seconds", "said"), [
    (1, "1 s"), (59, "59 s"), (60, "1 min"), (90, "90 s"), (3600, "1 h"), (5400, "90 min"),
    (86400, "1 d"), (2592000, "30 d"),
])
def test_a_watcher_s_idle_time_in_words(seconds: int, said: str) -> None:
    assert duration(seconds) == said


def test_the_watcher_leaves_after_its_idle_time(ws: Workspace) -> None:
    ws.write("n/a.md", "# A\n")
    ws.configure({"p": {"include": ["n"]}}, autowatch_idle=1)
    assert freshline(ws, "scan", FRESHLINE_AUTOWATCH="1").returncode == 0
    store = Store(ws.root / ".freshline")
    wait_for(lambda: holder(ws.root) is not None)
    wait_for(lambda: holder(ws.root) is None, timeout=60)
    assert not watcher_alive(store)
    assert not os.path.exists(watchclient.socket_path(str(ws.root)))
    assert "no request for 1 second: stopped watching" in (
        ws.root / ".freshline" / "watch.log").read_text()


def test_a_watcher_whose_workspace_is_deleted_stops(tmp_path: Path) -> None:
    """It stayed for its idle time (an hour by default), watching nothing, after a bench
    or a test deleted its temporary workspace; and the flush the deletion woke made the
    workspace's folder again, with an empty store in it."""
    root = tmp_path / "gone"
    (root / "n").mkdir(parents=True)
    (root / "n" / "a.md").write_text("# A\n")
    (root / "freshline.toml").write_text('[projects.p]\ninclude = ["n"]\n')
    proc = subprocess.Popen([*FRESHLINE, "watch"], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: watcher_alive(Store(root / ".freshline")))
        shutil.rmtree(root)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert f"{root} is gone: stopped watching" in out
    assert not root.exists(), sorted(str(p) for p in root.rglob('*'))


@pytest.fixture
def watching(notes: Workspace) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([*FRESHLINE, "watch"], cwd=notes.root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    store = Store(notes.root / ".freshline")
    wait_for(lambda: watcher_alive(store))
    yield proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_watch_logs_each_batch_path_and_converted_document(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    notes.write("n/b.md", "b")
    notes.write("n/page.html", "<html><body><h1>Hi</h1></body></html>")
    snapshots = notes.root / ".freshline" / "snapshots"
    wait_for(lambda: any(snapshots.glob("*.md")) if snapshots.exists() else False)
    time.sleep(0.5)
    watching.send_signal(signal.SIGTERM)
    out, _err = watching.communicate(timeout=20)
    assert f"watching {notes.root}" in out
    assert re.search(r"p → epoch \d+ \(\d changes?\)", out)
    assert "  created   n/b.md" in out and "converted n/page.html" in out


def test_watch_quiet_logs_nothing_but_problems(notes: Workspace) -> None:
    proc = subprocess.Popen([*FRESHLINE, "watch", "--quiet"], cwd=notes.root,
                            stdout=subprocess.PIPE, text=True)
    store = Store(notes.root / ".freshline")
    try:
        wait_for(lambda: watcher_alive(store))
        notes.write("n/c.md", "c")
        wait_for(lambda: (state := store.project_state("p")) is not None and state.epoch > 0)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=20)
    assert out == ""


def test_the_watcher_answers_the_hot_commands(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    root = str(notes.root)
    answer = watchclient.ask(root, {"op": "status"})
    assert answer["data"]["projects"]["p"]["files"] == 1
    assert answer["data"]["watcher"]["state"] == "running"
    notes.write("n/fresh.md", "fresh")
    scanned = watchclient.ask(root, {"op": "scan"})["data"]
    assert "full" in scanned  # (a full scan only when the machine was too slow for a cookie)
    assert watchclient.ask(root, {"op": "status"})["data"]["projects"]["p"]["files"] == 2
    assert watchclient.ask(root, {"op": "nope"}) is None
    with socket.socket(socket.AF_UNIX) as conn:  # another freshline asking: not answered
        conn.connect(watchclient.socket_path(root))
        conn.sendall(b'{"op": "status", "version": "0.0.0"}\n')
        assert json.loads(conn.makefile().readline())["ok"] is False


def test_every_hook_event_is_answered_by_the_watcher(
    notes: Workspace, watching: subprocess.Popen[str]
) -> None:
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "c",
               "cwd": str(notes.root / "n"), "prompt": "hi"}
    root = str(notes.root)

    def served(event: str, **fields: object) -> str:
        data = json.dumps(payload | {"hook_event_name": event, **fields})
        answer = watchclient.ask(root, {"op": "hook", "agent": "claude-code", "payload": data})
        assert answer is not None, event
        return str(answer["text"])

    assert "<project_context " in served("UserPromptSubmit")
    assert served("UserPromptSubmit") == ""  # nothing due
    # the agent `cd`s out of the workspace: its session is still found, by Claude's id
    away = json.dumps(payload | {"cwd": str(notes.root.parent)})
    assert freshline(notes, "-w", root, "hook", "claude-code", stdin=away).stdout == ""
    notes.write("n/news.md", "news")  # written just before the prompt: the cookie sees it
    hooked = freshline(notes, "hook", "claude-code", stdin=json.dumps(payload))
    assert "n/news.md" in hooked.stdout and hooked.stderr == ""
    read = {"tool_name": "Read", "tool_input": {"file_path": str(notes.root / "n/news.md")},
            "tool_response": {"type": "text"}}
    assert served("PostToolUse", **read) == ""  # handed over: recorded after the answer
    assert served("SessionEnd", reason="exit") == ""  # closed after the answer
    store = Store(notes.root / ".freshline")
    wait_for(lambda: (s := store.session_by_external("claude-code:c")) is not None
             and s.state.value == "closed", "the session closed by the watcher")
    s = store.session_by_external("claude-code:c")
    assert s is not None and [e.path for e in store.ledger_of(s.id)] == ["n/news.md"]


def test_without_a_watcher_the_client_gets_no_answer(notes: Workspace, tmp_path: Path) -> None:
    assert watchclient.ask(str(notes.root), {"op": "status"}) is None
    stale = Path(watchclient.socket_path(str(notes.root)))
    stale.touch()  # a socket file left by a killed watcher
    assert watchclient.ask(str(notes.root), {"op": "status"}) is None
    deep = tmp_path / ("x" * 120)
    assert watchclient.ask(str(deep), {"op": "status"}) is None
    assert watchclient.workspace_root(None, str(notes.root / "n")) == str(notes.root)
    assert watchclient.workspace_root(str(tmp_path), "/") is None


def test_a_workspace_too_deep_for_a_socket_is_served_from_the_runtime_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Path(tempfile.mkdtemp(prefix="run", dir="/tmp"))  # short: sockets are 108 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    deep = Workspace(tmp_path / ("d" * 90))
    deep.root.mkdir()
    deep.write("n/a.md", "# A\n")
    deep.configure({"p": {"include": ["n"]}})
    path = watchclient.socket_path(str(deep.root))
    assert path.startswith(str(run)) and not path.startswith(str(deep.root))
    served = Served(deep.root)
    try:
        answer = watchclient.ask(str(deep.root), {"op": "status"})
        assert answer["data"]["workspace"] == str(deep.root)
    finally:
        served.close()
        assert not os.path.exists(path)
        shutil.rmtree(run)


def test_autowatch_start_never_fails_a_command(
    notes: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FRESHLINE_AUTOWATCH", "1")

    def broken(_config: object) -> None:
        raise OSError("no more processes")

    monkeypatch.setattr(autowatch, "start", broken)
    store = Store(notes.root / ".freshline")
    assert autowatch.ensure(notes.config(), store) is False
