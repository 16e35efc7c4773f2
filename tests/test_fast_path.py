"""The hot commands answered by the running service: the hook process loads only the
socket's client, and `status`, `changes`, `updates` and `session list` print the same
both ways."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app, fast
from freshline.interfaces.cli.argv import hot_command
from freshline.interfaces.service.daemon import Service
from freshline.session import SessionManager
from freshline.session.owners import OWNER_ENV

from .conftest import Workspace, serving

# Nothing of the library beyond what talks to the socket, no front end, and none of the
# standard library's heavier modules (json loads re, enum and functools).
HEAVY = ("typer", "click", "rich", "pydantic", "yaml", "sqlite3", "freshline.store",
         "freshline.tracker", "freshline.config", "freshline.session.manager",
         "freshline.interfaces.hook.core", "freshline.paths", "json", "re", "enum",
         "pathlib", "typing", "collections")
# What the first hook call in a fresh workspace (no service, no index: the hook does the
# work itself) never needs, so never loads: the front ends, the agent, rewinds and remotes
# (its prompt records a checkpoint: the conversation layer's writing half loads, and the
# first one writes the project as a pack through a temporary file), conversion workers
# and converters (the project has no document to convert), and the heavier standard
# modules they bring (`secrets` too: tokens and ids are `os.urandom`'s).
FIRST_CALL_NEVER = (
    "typer", "click", "rich", "pydantic", "yaml", "tomlkit", "freshline.agent",
    "freshline.session.rewinding", "freshline.session.sharing",
    "freshline.session.checkpoint_rewind", "freshline.conversation.remotes",
    "freshline.conversation.exchange", "freshline.materialize.converters.pdf",
    "freshline.materialize.converters.word", "freshline.materialize.converters.slides",
    "freshline.materialize.converters.sheets", "freshline.materialize.converters.web",
    "multiprocessing", "socket", "uuid", "platform", "secrets",
)
# The last full scan (each `updates` flushes: with no service, a full scan), and who
# watches (the service says it does; with none, nobody).
AGO = re.compile(r"\d+ s ago|\"last_full_scan\": [\d.]+|watcher: .*|\"watcher\": \{[^}]*\}")
# A hot command run as the console script runs it; then the modules it loaded, on stderr.
LOADED = ("import sys\nfrom freshline.interfaces.cli import fast\n"
          "code = fast.run(sys.argv[1:])\nloaded = sorted(sys.modules)\n"
          "import json\nsys.stderr.write(json.dumps(loaded))\nsys.exit(code)\n")


def loaded_by(argv: list[str], stdin: str = "") -> tuple[str, set[str]]:
    """What a hot command printed, and the modules it loaded, run in a process of its own."""
    done = subprocess.run([sys.executable, "-c", LOADED, *argv], input=stdin,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, set(json.loads(done.stderr))


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def test_the_hook_answered_by_the_service_imports_only_the_socket_client(
    notes: Workspace, service: Service
) -> None:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "c1",
                          "cwd": str(notes.root / "notes"), "prompt": "hi"})
    out, loaded = loaded_by(["hook", "claude-code"], payload)
    assert "<project_context " in out
    assert not {m for m in loaded if m.startswith(HEAVY)}
    service.hooks.drain()  # the follow-up: the service watches the workspace it answered for
    assert [w["workspace"] for w in service.workspaces.listing()] == [str(notes.root)]


def test_a_first_hook_call_without_a_service_loads_no_git_workers_or_front_end(
    notes: Workspace
) -> None:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "c1",
                          "cwd": str(notes.root / "notes"), "prompt": "hi"})
    out, loaded = loaded_by(["hook", "claude-code"], payload)
    assert "<project_context " in out and "notes/a.md" in out
    assert "freshline.session.manager" in loaded  # the slow path did the work itself
    assert sorted(m for m in loaded if m.startswith(FIRST_CALL_NEVER)) == []


def test_changes_answered_by_the_service_imports_only_the_socket_client(
    notes: Workspace, service: Service
) -> None:
    notes.tracker().flush()
    notes.write("notes/b\tc.md", "# B\n")  # a name `shown` escapes
    notes.tracker().flush()
    out, loaded = loaded_by(["-w", str(notes.root), "changes", "notes", "--since", "0"])
    assert out.splitlines() == ["created   notes/b\\tc.md", "notes: epoch 0 → 1"]
    assert not {m for m in loaded if m.startswith(HEAVY)}


def test_status_answered_by_the_service_imports_only_the_socket_client(
    notes: Workspace, service: Service
) -> None:
    """It loaded the config and the store (the watcher registry's one constant) only to
    print the watcher's answer: 190 ms where 50 do."""
    out, loaded = loaded_by(["-w", str(notes.root), "status"])
    assert out.startswith("project ") and "\nnotes " in out
    assert f"watcher: watching (service pid {os.getpid()}" in out
    assert not {m for m in loaded if m.startswith(HEAVY)}


def test_the_console_script_loads_none_of_the_heavier_standard_modules() -> None:
    # An installer's launcher runs before any of freshline's code: pip before 25 wrote one
    # whose `re.sub` of argv[0] loaded re, enum and functools for every hook call.
    script = os.path.join(os.path.dirname(sys.executable), "freshline")
    done = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr
    loaded = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines()}
    assert not loaded & {"re", "enum", "functools", "collections", "typing", "json"}


def test_the_owner_mark_is_read_without_the_session_layer() -> None:
    assert fast.OWNER_ENV == OWNER_ENV


def run_fast(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert fast.run(argv) == 0
    return capsys.readouterr().out


def run_slow(*argv: str) -> str:
    done = CliRunner().invoke(app, list(argv))
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_status_changes_updates_and_sessions_print_the_same_through_the_service(
    notes: Workspace, capsys: pytest.CaptureFixture[str], as_json: list[str]
) -> None:
    root = str(notes.root)
    notes.tracker().flush()
    notes.write("notes/b.md", "# B\n")
    notes.write("notes/a.md", "# A again\n")
    notes.tracker().flush()
    manager = SessionManager(notes.config())
    try:
        session = manager.new("notes").id
    finally:
        manager.close()
    commands = (["status"], ["changes", "notes", "--since", "1"], ["changes", "notes"],
                ["updates", session], ["session", "list"])
    with serving():
        served = [run_fast("-w", root, *command, *as_json, capsys=capsys)
                  for command in commands]
    for command in commands[1:]:  # with no service to ask, they are typer's
        assert fast.run(["-w", root, *command]) is None
    slow = [run_slow("-w", root, *command, *as_json) for command in commands]
    assert [AGO.sub("", out) for out in served] == [AGO.sub("", out) for out in slow]
    assert "notes/b.md" in slow[2]  # (the first flush listed both files: epoch 1)
    assert session in slow[4]


def test_without_a_service_changes_and_updates_are_typers(notes: Workspace) -> None:
    argv = ["-w", str(notes.root), "changes", "notes", "--since", "9"]
    assert hot_command(argv) is not None and fast.run(argv) is None
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 2 and "project notes has epochs 0 to 0" in done.output
