"""Many processes on one PostgreSQL store (a real server): the change log stays the truth.

4 processes × 100 flushes over a churning tree log each change once, each flush under an
epoch of its own; 8 processes sending on 8 sessions of one project announce every note
once to each session; a process killed while it holds the write lock mid-flush loses
nothing and blocks nobody."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.session import SessionManager
from freshline.store import ChangeKind
from freshline.tracker import Tracker
from tests.churn import FLUSHER, notes_workspace
from tests.conftest import StoreBackend, git_env
from tests.pgserver import PgServer

FLUSHERS, FLUSHES, KEPT = 4, 100, 3
SENDERS, ROUNDS = 8, 4

SENDER = """
import sys
from pathlib import Path
from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.session import SessionManager
root, session, name, rounds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
manager = SessionManager(load_config(root))
for n in range(rounds):
    draft = root / f"{name}.draft"
    draft.write_text("x")
    draft.replace(root / "notes" / f"{name}-{n}.md")
    send(manager, session, f"{name}-{n}", get_backend("echo"))
manager.close()
print("ok")
"""

HOLDER = """
import sys, time
from pathlib import Path
from freshline.config import load_config
from freshline.tracker import Tracker
tracker = Tracker(load_config(Path(sys.argv[1])))
apply = tracker._apply
def holding(work):
    out = apply(work)  # written, not committed: the write lock is held
    print("holding", flush=True)
    time.sleep(300)
    return out
tracker._apply = holding
tracker.scan()
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = git_env(PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)


def output(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out


@pytest.fixture
def pg(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> StoreBackend:
    return StoreBackend("postgresql", pg_server, monkeypatch)


@pytest.mark.timeout(300)
def test_concurrent_flushes_log_each_change_once_under_increasing_epochs(
    pg: StoreBackend, tmp_path: Path
) -> None:
    root = notes_workspace(tmp_path)
    text = (root / "freshline.toml").read_text().replace(
        "[workspace]", "[workspace]\nchange_log_cap = 100000", 1)
    (root / "freshline.toml").write_text(text)
    tracker = Tracker(load_config(root))
    tracker.scan()  # the project's epoch 0: every note after it is a change
    procs = [spawn(FLUSHER, str(root), f"w{i}", str(FLUSHES), str(KEPT))
             for i in range(FLUSHERS)]
    flushed = [json.loads(output(p)) for p in procs]
    tracker.scan()  # anything left (nothing should be)
    for epochs in flushed:
        assert epochs == sorted(set(epochs))  # strictly increasing in each process
    every = [e for epochs in flushed for e in epochs]
    assert len(every) == len(set(every))  # no two flushes under one epoch
    log = tracker.store.log_read("p", 0)
    assert [e.epoch for e in log] == sorted(e.epoch for e in log)  # in log order
    assert {e.epoch for e in log} == set(every)
    seen = Counter((e.change.kind, e.change.path) for e in log)
    created = {(ChangeKind.CREATED, f"notes/w{i}/{n}.md")
               for i in range(FLUSHERS) for n in range(FLUSHES)}
    deleted = {(ChangeKind.DELETED, f"notes/w{i}/{n}.md")
               for i in range(FLUSHERS) for n in range(FLUSHES - KEPT)}
    assert set(seen) == created | deleted and set(seen.values()) == {1}


@pytest.mark.timeout(300)
def test_senders_on_sessions_of_one_project_are_each_told_every_note_once(
    pg: StoreBackend, tmp_path: Path
) -> None:
    root = notes_workspace(tmp_path)
    manager = SessionManager(load_config(root))
    try:
        sessions = [manager.new("p").id for _ in range(SENDERS)]
        for s in sessions:
            send(manager, s, "first", get_backend("echo"))
        procs = [spawn(SENDER, str(root), s, f"s{i}", str(ROUNDS))
                 for i, s in enumerate(sessions)]
        for p in procs:
            assert output(p).strip() == "ok"
        for s in sessions:  # one more turn each: whatever came last is told too
            send(manager, s, "last", get_backend("echo"))
        wires = {s: [e.wire or "" for e in manager.conversations.log(s)
                     if e.author.value == "user"] for s in sessions}
    finally:
        manager.close()
    for s in sessions:
        for i in range(SENDERS):
            for n in range(ROUNDS):
                note = f"/notes/s{i}-{n}.md\n"
                assert sum(w.count(note) for w in wires[s]) == 1, (s, note)


@pytest.mark.timeout(120)
def test_a_flush_killed_holding_the_lock_loses_nothing_and_blocks_nobody(
    pg: StoreBackend, tmp_path: Path
) -> None:
    root = notes_workspace(tmp_path)
    tracker = Tracker(load_config(root))
    tracker.scan()
    (root / "notes/a.md").write_text("a\n")
    holder = spawn(HOLDER, str(root))
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=30)
    result = tracker.scan()  # the lock died with the connection: this one proceeds
    assert [(c.kind, c.path) for c in result.projects["p"].changes] == [
        (ChangeKind.CREATED, "notes/a.md")]
    log = tracker.store.log_read("p", 0)
    assert [(e.epoch, e.change.path) for e in log] == [(result.projects["p"].epoch, "notes/a.md")]
    assert tracker.epoch("p") == 1
