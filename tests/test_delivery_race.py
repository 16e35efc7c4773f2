"""Two deliveries built from one cursor: at most one is ever acknowledged.

Seen (issue 27): two MCP servers on one workspace, both asked `project_updates(session)` at
the same moment, issued two tokens for one epoch range and both acknowledgements
succeeded (30 of 725 paths told twice). Acknowledging is a compare-and-set on the
session's cursor and the token's state in one store transaction, and issuing re-checks
the cursor under the store's lock; these tests drive it with threads and with processes,
on SQLite and on PostgreSQL. The real servers race in tests/test_mcp_race.py, and the
whole 20 × 30 figure is `bench/delivery_race.py`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from freshline.context import Channel
from freshline.errors import UsageError
from freshline.session import SessionManager
from freshline.session.engine import Deliveries, Issued
from tests.conftest import StoreBackend, Workspace, git_env

THREADS, ROUNDS = 4, 6
PROCESSES = 3

_PATH = re.compile(r"^- (/\S+\.md)$", re.M)


@pytest.fixture
def notes(ws: Workspace, backend: StoreBackend) -> Iterator[Workspace]:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    yield ws


def opened(ws: Workspace) -> str:
    """A new MCP session of project `p`, its manifest taken."""
    m = SessionManager(ws.config())
    try:
        s = m.new("p", channel=Channel.MCP).id
        first = Deliveries(m).issue(s, Channel.MCP)
        assert first is not None
        Deliveries(m).acknowledge(s, first.token)
        return s
    finally:
        m.close()


def told_twice(acknowledged: list[str]) -> list[str]:
    """The paths named by more than one acknowledged block."""
    counts = Counter(p for blocks in acknowledged for p in set(_PATH.findall(blocks)))
    return sorted(p for p, n in counts.items() if n > 1)


def test_a_delivery_prepared_before_another_was_acknowledged_never_counts_too(
    notes: Workspace,
) -> None:
    """The race, one step at a time: B is prepared from the cursor, A is issued and
    acknowledged, then B is stored and acknowledged."""
    session = opened(notes)
    a, b = SessionManager(notes.config()), SessionManager(notes.config())
    try:
        notes.write("notes/c.md", "# C\n")
        prepared, go = threading.Event(), threading.Event()
        prepare = b.prepare

        def pausing(*args: Any, **kwargs: Any) -> Any:
            turn = prepare(*args, **kwargs)
            prepared.set()
            go.wait(30)
            return turn

        b.prepare = pausing  # type: ignore[method-assign]
        late: list[Issued | None] = []
        thread = threading.Thread(target=lambda: late.append(Deliveries(b).issue(session,
                                                                            Channel.MCP)))
        thread.start()
        assert prepared.wait(30)
        first = Deliveries(a).issue(session, Channel.MCP)
        assert first is not None and "notes/c.md" in first.blocks
        Deliveries(a).acknowledge(session, first.token)
        go.set()
        thread.join(30)
        [second] = late
        taken = [first.blocks]
        if second is not None:
            try:
                Deliveries(b).acknowledge(session, second.token)
                taken.append(second.blocks)
            except UsageError:
                pass
        assert told_twice(taken) == []
    finally:
        a.close()
        b.close()


def written_whole(root: Path, rel: str, text: str) -> None:
    """Write a file by renaming a draft (outside the project) over it: another thread's
    flush may look at any moment, and a file it saw empty, then with its text, is truly
    created then modified."""
    draft = root / f"{Path(rel).stem}.draft"
    draft.write_text(text, encoding="utf-8")
    draft.replace(root / rel)


def race(manager: SessionManager, session: str, root: Path, name: str, rounds: int) -> list[str]:
    """Rounds of: a new note, a delivery, its acknowledgement; the blocks acknowledged
    (in a thread here, in a process through RACER)."""
    engine, taken = Deliveries(manager), []
    for n in range(rounds):
        written_whole(root, f"notes/{name}-{n}.md", f"# {name} {n}\n")
        try:
            issued = engine.issue(session, Channel.MCP)
            if issued is not None:
                engine.acknowledge(session, issued.token)
                taken.append(issued.blocks)
        except UsageError:
            continue  # superseded by another's delivery, or refused: told again later
    return taken


def test_threads_racing_on_one_session_acknowledge_each_path_once(notes: Workspace) -> None:
    session = opened(notes)
    managers = [SessionManager(notes.config()) for _ in range(THREADS)]
    results: list[list[str]] = [[] for _ in managers]
    threads = [
        threading.Thread(target=lambda i=i, m=m: results[i].extend(
            race(m, session, notes.root, f"t{i}", ROUNDS)))
        for i, m in enumerate(managers)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        for m in managers:
            m.close()
    taken = [blocks for result in results for blocks in result]
    assert told_twice(taken) == []
    assert _everything_told_once_taken(notes, session, taken)


def _everything_told_once_taken(ws: Workspace, session: str, taken: list[str]) -> bool:
    """Whatever no acknowledged block named is still owed: the next delivery names it."""
    m = SessionManager(ws.config())
    try:
        rest = Deliveries(m).issue(session, Channel.MCP)
        told = {p for blocks in taken for p in _PATH.findall(blocks)}
        if rest is not None:
            told |= set(_PATH.findall(rest.blocks))
        wanted = {str(p) for p in (ws.root / "notes").glob("*-*.md")}
        return wanted <= told
    finally:
        m.close()


RACER = """
import json, sys
from pathlib import Path
from freshline.config import load_config
from freshline.session import SessionManager
from tests.test_delivery_race import race
root, session, name, rounds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
manager = SessionManager(load_config(root))
taken = race(manager, session, root, name, rounds)
manager.close()
print(json.dumps(taken))
"""


def test_processes_racing_on_one_session_acknowledge_each_path_once(notes: Workspace) -> None:
    session = opened(notes)
    env = git_env(PYTHONPATH=os.pathsep.join(sys.path))
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, str(notes.root), session, f"p{i}",
                          str(ROUNDS)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for i in range(PROCESSES)
    ]
    taken: list[str] = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        taken += json.loads(out)
    assert told_twice(taken) == []
    assert _everything_told_once_taken(notes, session, taken)


def test_a_token_of_a_cursor_that_moved_is_refused_and_superseded(notes: Workspace) -> None:
    """Acknowledging checks the cursor the delivery was built from, not only its token."""
    session = opened(notes)
    m = SessionManager(notes.config())
    try:
        notes.write("notes/c.md", "# C\n")
        first = Deliveries(m).issue(session, Channel.MCP)
        assert first is not None
        stale = first.record
        assert stale is not None
        Deliveries(m).acknowledge(session, first.token)
        notes.write("notes/d.md", "# D\n")
        second = Deliveries(m).issue(session, Channel.MCP)
        assert second is not None
        Deliveries(m).acknowledge(session, second.token)
        # A copy of the first delivery under another token, as a racing server stored it.
        m.store.delivery_put(replace(stale, token="0123456789"))
        with pytest.raises(UsageError, match="superseded"):
            Deliveries(m).acknowledge(session, "0123456789")
        assert m.get(session).cursor == second.covers
    finally:
        m.close()


