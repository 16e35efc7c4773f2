"""Concurrent sends on one session from several processes: one turn at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import add_project, init_workspace, load_config
from freshline.errors import SessionBusy
from freshline.interfaces.cli import app
from freshline.session import SessionManager

from .conftest import git, git_env, turn_running

PROCESSES, ROUNDS = 4, 5
SENDER = """
import sys
from pathlib import Path
from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.session import SessionManager
root, session, name, rounds, model = sys.argv[1:6]
manager = SessionManager(load_config(Path(root)))
backend = get_backend(model)
for n in range(int(rounds)):
    if model == "echo":  # live: a new note before each send, to be announced once
        # written whole (temp file, rename): another sender's flush may look at any moment,
        # and a file it saw empty, then with its text, is truly created then modified
        draft = Path(root) / f"{name}-{n}.draft"  # outside the project
        draft.write_text("x")
        draft.replace(Path(root) / "notes" / f"{name}-{n}.md")
    send(manager, session, f"{name}-{n}", backend)
manager.close()
print("ok")
"""


def senders(root: Path, session: str, models: list[str]) -> list[subprocess.Popen[bytes]]:
    env = git_env(PYTHONPATH=os.pathsep.join(sys.path))
    return [
        subprocess.Popen([sys.executable, "-c", SENDER, str(root), session, f"p{i}",
                          str(ROUNDS), model], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env)
        for i, model in enumerate(models)
    ]


def finished(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and out.strip() == b"ok", err.decode()


def upstream_commit(root: Path, n: int) -> None:
    lines = ["commit refs/heads/main", f"committer t <t@t> {1700000000 + n} +0000", "data 2",
             "up", f"from {git(root, 'rev-parse', 'main')}", f"M 100644 inline src/up/{n}.py",
             "data 4", f"u={n}", ""]
    git(root, "fast-import", "--quiet", input="\n".join(lines).encode())


def test_seen_concurrent_isolated_sends_take_turns_and_leave_no_strays(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> None:
    """Seen (4 processes, 12 rounds): losers' tool writes stayed in the worktree and were
    later recorded as the agent's work, sends failed on git's index.lock or on "untracked
    working tree file would be overwritten"."""
    manager, root = code
    session = manager.new("code").id
    models = []
    for i in range(PROCESSES):
        # A scripted model plays the turn of the conversation's next human message: each
        # sender's script writes, at every turn, a file naming itself and the turn.
        turns = [[{"tool": "write", "args": {"path": f"src/p{i}-t{t}.py", "content": f"{t}\n"}},
                  {"say": "written"}] for t in range(PROCESSES * ROUNDS)]
        script = tmp_path / f"p{i}.json"
        script.write_text(json.dumps({"turns": turns}))
        models.append(f"scripted:{script}")
    procs = senders(root, session, models)
    for n in range(5):  # upstream moves while they send: refreshing turns
        upstream_commit(root, n)
    finished(procs)

    log = manager.conversations.log(session)
    users = [e for e in log if e.author.value == "user"]
    assert sorted(e.content for e in users) == sorted(
        f"p{i}-{n}" for i in range(PROCESSES) for n in range(ROUNDS))
    for previous, event in zip(log, log[1:], strict=False):
        own = manager.conversations.changed_paths(previous.tree or "", event.tree or "")
        if event.tool == "write":
            assert own == list(event.changed)  # exactly its own write
        elif event.author.value == "user":
            assert all(p.startswith("src/up/") for p in own)  # a refresh, never strays
        else:
            assert own == []
    worktree = manager.conversations.worktree(session)
    assert git(worktree, "status", "--porcelain", "--untracked-files=all") == ""
    head_files = git(root, "ls-tree", "-r", "--name-only", log[-1].commit or "").split()
    written = {f"src/{e.content.split('-')[0]}-t{t}.py" for t, e in enumerate(users)}
    assert written == {p for p in head_files if p.startswith("src/p")}


def test_seen_concurrent_live_sends_never_announce_a_change_twice(tmp_path: Path) -> None:
    """Seen: 40 of 200 changes were announced twice (a send prepared between another's
    record and accept)."""
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "notes").mkdir()
    add_project(root, "notes", ["notes"])
    manager = SessionManager(load_config(root))
    try:
        session = manager.new("notes").id
        send(manager, session, "first", get_backend("echo"))
        finished(senders(root, session, ["echo"] * PROCESSES))
        wires = [e.wire or "" for e in manager.conversations.log(session)
                 if e.author.value == "user"]
    finally:
        manager.close()
    for i in range(PROCESSES):
        for n in range(ROUNDS):
            note = f"/notes/p{i}-{n}.md\n"
            assert sum(w.count(note) for w in wires) == 1, note


def test_a_second_send_waits_with_a_message_or_fails_fast(
    code: tuple[SessionManager, Path],
) -> None:
    manager, _root = code
    session = manager.new("code").id
    with turn_running(manager, session) as release:
        with pytest.raises(SessionBusy, match=f"session {session} is busy"):
            send(manager, session, "now", get_backend("echo"), wait=False)
        told: list[str] = []

        def waiting(who: str) -> None:
            told.append(who)
            release.set()  # the first turn ends once the second has been told

        result = send(manager, session, "after", get_backend("echo"), on_wait=waiting)
        assert result.accepted and told == ["another thread of this process"]


def test_cli_send_with_no_wait_fails_at_once_while_a_turn_runs(
    code: tuple[SessionManager, Path],
) -> None:
    manager, root = code
    session = manager.new("code").id
    results: list[Result] = []

    def cli_send(*extra: str) -> None:  # another thread: the lock is per thread, too
        results.append(CliRunner().invoke(
            app, ["--workspace", str(root), "send", session, "hi", *extra]))

    with manager.turn_lock(session):
        thread = threading.Thread(target=cli_send, args=("--no-wait",))
        thread.start()
        thread.join()
    assert results[0].exit_code == 1
    assert f"session {session} is busy: another thread of this process holds it" in (
        results[0].stderr)
    cli_send()
    assert results[1].exit_code == 0
