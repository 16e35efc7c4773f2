"""The per-user service, as a real process where it matters: started by the first command
that needs it, one per user whatever races, never stale whatever became of it, isolated
per workspace, private, strict about what it is sent, and nothing lost to a kill -9."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from freshline.interfaces import autostart, serviceclient
from freshline.interfaces.cli import app
from freshline.interfaces.service.daemon import Service
from freshline.interfaces.service.requests import MAX_REQUEST
from freshline.interfaces.service.workspaces import Watched, Workspaces
from freshline.store import Store

from .conftest import Workspace, hook_in_process, services_running, serving, wait_for
from .docgen import write_pdf

FRESHLINE = [sys.executable, "-m", "freshline"]
AUTO = {"FRESHLINE_AUTOWATCH": "1"}


@dataclass(frozen=True)
class Done:
    """A command's exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def freshline(ws: Workspace, *args: str, **env: str) -> Done:
    """A command run in this process, as typer runs it (a service it starts is a real
    process all the same)."""
    result = CliRunner().invoke(app, ["-w", str(ws.root), *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Done(result.exit_code, result.stdout, result.stderr)


def as_json(ws: Workspace, *args: str, **env: str) -> Any:
    done = freshline(ws, *args, "--json", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def watched(ws: Workspace) -> dict[str, Any] | None:
    """The service's view of the workspace, None when it does not hold it."""
    answer = serviceclient.ask({"op": "list"}, timeout=10)
    rows = answer["data"] if answer else []
    return next((r for r in rows if r["workspace"] == str(ws.root)), None)


def watching(ws: Workspace) -> bool:
    return (watched(ws) or {}).get("state") == "watching"


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("n/a.md", "# A\n")
    ws.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    return ws


@pytest.fixture
def other(tmp_path: Path) -> Workspace:
    """A second workspace, one project over all of it."""
    ws = Workspace(tmp_path / "other")
    ws.root.mkdir()
    ws.configure({"q": {"include": ["**"]}})
    return ws


@pytest.fixture
def stopped_after() -> Iterator[None]:
    """The test starts real service processes; stop the last one after."""
    try:
        yield
    finally:
        autostart.stop()


# --- 1. never stale -----------------------------------------------------------------------


@pytest.mark.parametrize("became", ["never started", "running", "killed", "stopped"])
def test_answers_are_never_stale_whatever_became_of_the_service(
    notes: Workspace, became: str, stopped_after: None
) -> None:
    """Seen: after the watcher stopped, `changes research --since 10` printed `epoch 10 →
    10` without the edit made meanwhile, nor the new file, and `status` counted the old
    files."""
    env = {} if became == "never started" else AUTO
    before = as_json(notes, "changes", "p", **env)["epoch"]
    if became != "never started":
        wait_for(lambda: watching(notes), "the service watching")
    if became == "killed":
        os.kill(autostart.running() or 0, signal.SIGKILL)
        wait_for(lambda: autostart.running() is None, "the lock let go")
    elif became == "stopped":
        assert freshline(notes, "service", "stop").returncode == 0
    notes.write("n/a.md", "# A, edited\n")
    notes.write("n/new.md", "# New\n")
    changes = as_json(notes, "changes", "p", "--since", str(before), **env)
    assert [(c["kind"], c["path"]) for c in changes["changes"]] == [
        ("modified", "n/a.md"), ("created", "n/new.md")]
    assert changes["epoch"] > before
    assert as_json(notes, "status", **env)["projects"]["p"]["files"] == 2
    assert freshline(notes, "changes", "p", "--since", str(changes["epoch"]),
                     **env).stdout == f"p: epoch {changes['epoch']} → {changes['epoch']}\n"


# --- 2. one per user, started on first use --------------------------------------------------


def test_the_first_commands_start_one_service_for_every_workspace(
    notes: Workspace, other: Workspace, stopped_after: None
) -> None:
    runs = [subprocess.Popen([*FRESHLINE, "-w", str(w.root), "scan"], stdout=subprocess.DEVNULL,
                             env={**os.environ, **AUTO}) for w in (notes, other, notes)]
    assert [r.wait(timeout=120) for r in runs] == [0, 0, 0]
    wait_for(lambda: watching(notes) and watching(other), "both workspaces watched")
    pid = autostart.running()
    wait_for(lambda: services_running(os.environ["XDG_RUNTIME_DIR"]) == [pid],
             "the losers of the race gone")
    listed = as_json(notes, "watch", "--list")
    assert [w["workspace"] for w in listed] == sorted([str(notes.root), str(other.root)])
    assert all(w["pid"] == pid and w["state"] == "watching" for w in listed)
    second = subprocess.run([*FRESHLINE, "service", "run"], capture_output=True, text=True,
                            timeout=60)
    assert second.returncode == 2
    assert second.stderr == f"error: the service is already running (pid {pid})\n"


def test_the_first_start_for_a_user_says_so_once(notes: Workspace, stopped_after: None) -> None:
    """Seen: the first `project add` started a background process without a word."""
    first = freshline(notes, "project", "add", "q", "--include", "n", **AUTO)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("freshline now watches your workspaces in a background "
                              "service") == 1
    assert "`freshline service stop` stops it" in first.stderr
    wait_for(lambda: watching(notes), "the service watching")
    assert autostart.stop()
    again = freshline(notes, "scan", **AUTO)
    assert again.returncode == 0 and again.stderr == ""
    wait_for(lambda: watching(notes), "the service started again, without a word")


def test_a_killed_service_is_started_again_by_the_next_command_which_says_so_once(
    notes: Workspace, stopped_after: None
) -> None:
    assert freshline(notes, "scan", **AUTO).returncode == 0
    wait_for(lambda: watching(notes), "the service watching")
    pid = autostart.running()
    assert pid
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: autostart.running() is None, "the lock let go")
    assert "watcher: not running" in freshline(notes, "status").stdout
    again = freshline(notes, "scan", **AUTO)
    assert again.returncode == 0
    assert again.stderr == ("warning: the freshline service had stopped without a word "
                            "(killed, or the machine restarted); started a new one\n")
    wait_for(lambda: autostart.running() not in (None, pid), "the new service")
    wait_for(lambda: watching(notes), "the workspace watched again")
    assert freshline(notes, "scan", **AUTO).stderr == ""  # said once


def test_service_status_stop_and_restart(notes: Workspace, stopped_after: None) -> None:
    assert freshline(notes, "service", "status").stdout == (
        "service: not running (the next command that needs it starts it)\n")
    assert freshline(notes, "watch", **AUTO).returncode == 0
    wait_for(lambda: watching(notes), "the service watching")
    data = as_json(notes, "service", "status")
    assert data["running"] and data["answering"]
    facts = data["service"]
    assert facts["pid"] == autostart.running() and facts["http"] is True
    assert facts["notifier"] == "InotifyNotifier"
    assert [w["workspace"] for w in facts["watching"]] == [str(notes.root)]
    text = freshline(notes, "service", "status").stdout.splitlines()
    assert text[0].startswith(f"service: running (pid {facts['pid']}, freshline ")
    assert text[1] == f"http hooks on 127.0.0.1:{facts['port']}"
    restarted = as_json(notes, "service", "restart")
    assert restarted["stopped"] == facts["pid"]
    assert restarted["service"]["pid"] not in (None, facts["pid"])
    wait_for(lambda: watching(notes), "the workspace watched again after the restart")
    stopped = freshline(notes, "service", "stop")
    assert stopped.stdout == f"stopped the service (pid {restarted['service']['pid']})\n"
    assert autostart.running() is None
    assert not Path(serviceclient.socket_path()).exists()


def test_watch_stop_lets_a_workspace_go_and_watch_list_shows_the_rest(
    notes: Workspace, other: Workspace, service: Service
) -> None:
    for w in (notes, other):
        assert as_json(w, "watch")["workspace"] == str(w.root)
    wait_for(lambda: watching(notes) and watching(other), "both watched")
    stopped = freshline(notes, "watch", "--stop")
    assert stopped.stdout == f"stopped watching {notes.root}\n"
    assert [w["workspace"] for w in as_json(notes, "watch", "--list")] == [str(other.root)]
    assert service.workspaces.registry.roots() == [str(other.root)]
    assert freshline(notes, "watch", "--stop").stdout == (
        f"the service was not watching {notes.root}\n")
    notes.configure({"p": {"include": ["n"]}}, autowatch=False)
    refused = freshline(notes, "watch")
    assert (refused.returncode, refused.stderr) == (2, f"error: {notes.root} says `autowatch "
                                                    "= false` in its freshline.toml: the "
                                                    "service does not watch it\n")


def test_watch_stop_answers_once_the_workspace_has_left_the_list(
    notes: Workspace, service: Service
) -> None:
    """Seen: `watch --list` right after `watch --stop` still listed the workspace, while
    its stores closed behind a call on its queue (a checkpoint being written)."""
    assert as_json(notes, "watch")["workspace"] == str(notes.root)
    wait_for(lambda: watching(notes), "watched")
    service.hooks.submit(notes.root.resolve(), lambda warm: time.sleep(0.5))
    assert freshline(notes, "watch", "--stop").returncode == 0
    assert watched(notes) is None


def test_the_service_watches_again_every_workspace_it_watched(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen in CI: the list still named a workspace gone while nothing ran, once the
    one listed before it was watched again (it was forgotten only on its own turn)."""
    gone = Workspace(tmp_path / "gone")
    gone.root.mkdir()
    gone.configure({})
    with serving() as service:
        for w in (notes, gone):
            service.workspaces.watch(w.root)
        wait_for(lambda: watching(notes) and watching(gone), "both watched")
    os.remove(gone.root / "freshline.toml")  # no longer a workspace while nothing ran
    notes.write("n/while-stopped.md", "made while no service ran")
    listed_at_watch: list[list[str]] = []
    watch = Workspaces.watch

    def noting(self: Workspaces, root: Path) -> Watched:
        listed_at_watch.append(self.registry.roots())
        return watch(self, root)

    monkeypatch.setattr(Workspaces, "watch", noting)
    with serving() as service:
        wait_for(lambda: watching(notes), "watched again at start")
        assert listed_at_watch == [[str(notes.root)]]
        wait_for(lambda: watching(notes), "watched again at start")
        assert watched(gone) is None and service.workspaces.registry.roots() == [str(notes.root)]
        assert "n/while-stopped.md" in [e.path for e in notes.tracker().files_in_scope("p")]


# --- 3. each workspace on its own -----------------------------------------------------------


def test_a_broken_config_or_a_deleted_folder_in_one_workspace_never_stops_another(
    notes: Workspace, tmp_path: Path, service: Service
) -> None:
    broken, doomed = (Workspace(tmp_path / name) for name in ("broken", "doomed"))
    for w in (broken, doomed):
        w.root.mkdir()
        w.write("n/x.md", "x")
        w.configure({"p": {"include": ["n"]}})
    for w in (notes, broken, doomed):
        service.workspaces.watch(w.root)
    wait_for(lambda: all(watching(w) for w in (notes, broken, doomed)), "all three watched")
    (broken.root / "freshline.toml").write_text("[workspace\n")  # broken mid-edit
    subprocess.run(["rm", "-rf", str(doomed.root)], check=True)
    broken.write("n/y.md", "y")
    notes.write("n/b.md", "b")
    assert as_json(notes, "changes", "p")["changes"][-1]["path"] == "n/b.md"
    wait_for(lambda: watched(doomed) is None, "the deleted workspace let go")
    wait_for(lambda: (watched(broken) or {}).get("error"), "the broken config reported")
    assert watching(broken)  # still watching: the next good edit is flushed
    assert str(doomed.root) not in service.workspaces.registry.roots()
    status = freshline(broken, "status")
    assert status.returncode == 2 and "freshline.toml" in status.stderr
    broken.configure({"p": {"include": ["n"]}})
    assert [c["path"] for c in as_json(broken, "changes", "p")["changes"]] == ["n/y.md"]
    notes.write("n/c.md", "c")
    assert as_json(notes, "changes", "p")["changes"][-1]["path"] == "n/c.md"


def test_a_workspace_whose_config_cannot_be_read_is_not_watched_and_is_tried_again(
    notes: Workspace, service: Service
) -> None:
    (notes.root / "freshline.toml").write_text("[workspace\n")
    held = service.workspaces.watch(notes.root)
    assert held.watcher is None and held.error and "freshline.toml" in held.error
    assert watched(notes)["state"] == "not watched"  # type: ignore[index]
    notes.configure({"p": {"include": ["n"]}})
    assert service.workspaces.watch(notes.root).watcher is not None


# --- 4. what the service does for a workspace ------------------------------------------------


def test_a_project_added_while_watched_gets_its_new_pdf_converted(
    notes: Workspace, service: Service
) -> None:
    """Issue 29, item 1: `project add pc --include "*.pdf"`, then a PDF appears: the watcher
    died of `unknown project 'pc'` and the PDF stayed pending."""
    service.workspaces.watch(notes.root)
    wait_for(lambda: watching(notes), "watched")
    added = freshline(notes, "project", "add", "pc", "--include", "*.pdf")
    assert added.returncode == 0, added.stderr
    write_pdf(notes.root / "paper.pdf", [["A paper about watchers"]])
    wait_for(lambda: as_json(notes, "status")["projects"]["pc"]["documents"] == {"ready": 1},
             "the PDF converted by the service", 60)
    assert (watched(notes) or {}).get("error") is None


def test_scan_with_the_service_lists_what_changed_since_the_last_scan(
    notes: Workspace, service: Service
) -> None:
    """Issue 29, item 3: `echo x >> Tags.md; sleep 2; freshline scan` said nothing changed."""
    service.workspaces.watch(notes.root)
    wait_for(lambda: watching(notes), "watched")
    freshline(notes, "scan")
    notes.write("n/a.md", "# A\nx\n")
    notes.write("n/b.md", "# B\n")
    wait_for(lambda: Store(notes.root / ".freshline").project_state("p").epoch > 0,  # type: ignore[union-attr]
             "the service's own flush")
    epoch = Store(notes.root / ".freshline").project_state("p").epoch  # type: ignore[union-attr]
    assert freshline(notes, "scan").stdout.splitlines()[:3] == [
        f"p: epoch 0 → {epoch}", "  modified  n/a.md", "  created   n/b.md"]
    assert freshline(notes, "scan").stdout.endswith("; nothing changed since the last scan\n")


def test_status_keeps_its_counts_until_the_epoch_moves(
    notes: Workspace, service: Service
) -> None:
    """Seen: `status` on 20,000 notes took 0.3–0.6 s, the files counted again at every
    call. The service counts once per epoch."""
    held = service.workspaces.ready(notes.root)
    assert as_json(notes, "status")["projects"]["p"]["files"] == 1
    key, count, _documents = held.counts["p"]
    held.counts["p"] = (key, 1000, [])  # a count kept: not made again
    assert as_json(notes, "status")["projects"]["p"]["files"] == 1000
    notes.write("n/b.md", "b")
    assert as_json(notes, "status")["projects"]["p"]["files"] == 2  # the epoch moved


def test_store_migrate_stops_watching_and_the_next_command_watches_the_new_store(
    notes: Workspace, service: Service
) -> None:
    """Issue 29, item 2: `store migrate` ran beside a live watcher, which kept writing to
    the old store."""
    service.workspaces.watch(notes.root)
    wait_for(lambda: watching(notes), "watched")
    moved = notes.root / "moved.db"
    done = freshline(notes, "store", "migrate", "--to", f"sqlite:{moved}")
    assert done.returncode == 0, done.stderr
    assert "the service stopped watching the workspace" in done.stdout
    assert watched(notes) is None
    notes.configure({"p": {"include": ["n"]}}, debounce_ms=50)
    (notes.root / "freshline.toml").write_text(
        (notes.root / "freshline.toml").read_text() + f'[store]\nurl = "sqlite:{moved}"\n')
    notes.write("n/after.md", "after the move")
    assert freshline(notes, "watch").returncode == 0
    wait_for(lambda: watching(notes), "watched on the new store")
    assert (watched(notes) or {}).get("store") == str(moved)
    assert [c["path"] for c in as_json(notes, "scan")["projects"]["p"]["changes"]] == [
        "n/after.md"]
    assert Store(notes.root / ".freshline").index_get("n/after.md") is None


# --- 5. private, strict, and nothing lost ----------------------------------------------------


def ask_raw(data: bytes) -> Any:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(serviceclient.socket_path())
        conn.sendall(data)
        return json.loads(conn.makefile("rb").readline())


@pytest.mark.parametrize(
    ("sent", "error"),
    [
        (b"not json\n", "not a JSON line"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'{"op": "status"}\n', "another version of freshline: ask it yourself"),
        (b'{"op": "nope", "version": "V"}\n', "unknown op 'nope'"),
        (b'{"op": "changes", "version": "V", "root": "ROOT", "project": "p", "since": -1}\n',
         "changes: project must be a string and since a whole number ≥ 0"),
        (b'{"op": "status", "version": "V", "root": "relative/path"}\n',
         "status: root must be an absolute path"),
        (b'{"op": "hook", "version": "V", "agent": "vim", "payload": ""}\n',
         "hook: agent must be one of freshline's and payload a string"),
        (b'{"op": "watch", "version": "V", "root": "ROOT", "store": "sqlite:/elsewhere"}\n',
         "the service uses another store (FRESHLINE_STORE_URL): ask it yourself"),
    ],
)
def test_a_malformed_request_gets_an_error_and_changes_nothing(
    notes: Workspace, service: Service, sent: bytes, error: str
) -> None:
    sent = sent.replace(b"V", serviceclient.version().encode()).replace(
        b"ROOT", str(notes.root).encode())
    assert ask_raw(sent) == {"ok": False, "error": error}
    assert service.workspaces.listing() == []
    assert not (notes.root / ".freshline" / "freshline.db").exists()


def test_a_request_over_the_size_limit_is_refused_unread(
    notes: Workspace, service: Service
) -> None:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(serviceclient.socket_path())
        try:
            conn.sendall(b"x" * (MAX_REQUEST + (1 << 16)))
        except BrokenPipeError:
            pass  # the service stopped reading and answered
        answer = json.loads(conn.makefile("rb").readline())
    assert answer == {"ok": False, "error": f"request over {MAX_REQUEST >> 20} MiB"}
    assert service.workspaces.listing() == []


def test_the_service_lives_in_a_folder_nobody_else_can_enter(tmp_path: Path) -> None:
    folder = Path(serviceclient.runtime_dir())
    folder.mkdir(mode=0o700, exist_ok=True)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    folder.chmod(0o755)  # others may enter: neither the client nor the service trust it
    assert serviceclient.ask({"op": "ping"}) is None
    done = subprocess.run([*FRESHLINE, "service", "run"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1
    assert done.stderr == (f"error: {folder} is not this user's alone; the service needs a "
                           "folder nobody else can enter\n")
    folder.chmod(0o700)
    with serving():
        socket_mode = os.stat(serviceclient.socket_path()).st_mode & 0o777
        assert socket_mode == 0o600


def test_a_service_whose_runtime_folder_went_before_it_started_starts_nowhere_else() -> None:
    """Seen: a service a command had just spawned started after the test removed its
    runtime folder, fell back to /tmp/freshline-UID and ran on there, where a later
    client whose environment had no $XDG_RUNTIME_DIR found it."""
    gone = Path(os.environ["XDG_RUNTIME_DIR"]) / "removed" / "freshline"
    done = subprocess.run([*FRESHLINE, "service", "run"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "FRESHLINE_RUNTIME_DIR": str(gone)})
    assert done.returncode == 1 and "is not this user's alone" in done.stderr
    assert not gone.parent.exists()


def test_a_kill_9_mid_flush_loses_nothing(notes: Workspace, stopped_after: None) -> None:
    """The service is killed inside its flush's write (its first full scan, which logs what
    changed while nothing ran): the transaction dies with it, and the next service logs
    every change once."""
    tracker = notes.tracker()
    tracker.flush()
    notes.write("n/a.md", "# A, edited while nothing ran\n")
    notes.write("n/new.md", "# New\n")
    killed = subprocess.run([*FRESHLINE, "service", "run", "--watch", str(notes.root)],
                            env={**os.environ, "FRESHLINE_KILL_AT": "flush:write"}, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert tracker.store.log_read("p", 0) == []  # nothing logged, no hint taken
    assert freshline(notes, "watch", **AUTO).returncode == 0
    wait_for(lambda: watching(notes), "the next service up")
    logged = [(e.change.kind.value, e.change.path) for e in tracker.store.log_read("p", 0)]
    assert logged == [("modified", "n/a.md"), ("created", "n/new.md")]


def test_a_workspace_made_again_where_one_was_deleted_is_answered_anew(
    notes: Workspace, service: Service
) -> None:
    """The service kept the deleted workspace's store open: a new one made at its path
    was answered from the old one (nothing due, for a session it never had)."""
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s", "source":
                          "startup", "cwd": str(notes.root / "n")})
    assert "<project_context " in hook_in_process(payload, workspace=str(notes.root))
    wait_for(lambda: watching(notes), "watched")
    subprocess.run(["rm", "-rf", str(notes.root)], check=True)
    wait_for(lambda: watched(notes) is None, "the deleted workspace let go")
    notes.root.mkdir()
    notes.write("n/again.md", "# made again\n")
    notes.configure({"p": {"include": ["n"]}})
    again = hook_in_process(payload, workspace=str(notes.root))
    assert "<project_context " in again and "n/again.md" in again and "n/a.md" not in again


def test_a_folder_that_is_no_workspace_is_not_held(tmp_path: Path, service: Service) -> None:
    held = service.workspaces.watch(tmp_path)
    assert held.watcher is None and held.error and "no freshline.toml" in held.error
    assert service.workspaces.listing() == []
