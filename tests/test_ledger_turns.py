"""The read ledger through freshline's own turns: a scripted model reading and writing with
the built-in tools, in live and isolated sessions, on real workspaces and repositories."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from freshline.agent.backends.scripted import ScriptedBackend
from freshline.agent.errors import BackendRateLimited
from freshline.agent.messages import Role
from freshline.agent.runtime import SendResult, history, send
from freshline.config import load_config
from freshline.session import SessionManager
from freshline.store import LedgerKind
from freshline.tracker.hashing import blob_of

from .conftest import Workspace, git
from .test_runtime import Recorder


class Script(Recorder, ScriptedBackend):
    """A scripted model that also keeps every request it was sent."""

    def __init__(self, path: Path) -> None:
        ScriptedBackend.__init__(self, path)
        self.requests = []


def script(tmp_path: Path, *turns: list[dict[str, Any]]) -> Script:
    path = tmp_path / f"script{len(list(tmp_path.glob('script*')))}.json"
    path.write_text(json.dumps({"turns": [[*t, {"say": "ok"}] for t in turns]}))
    return Script(path)


def read(path: str, **args: Any) -> dict[str, Any]:
    return {"tool": "read", "args": {"path": path, **args}}


def tool_results(result: SendResult) -> list[str]:
    return [e.content for e in result.events if e.author.value == "tool"]


def branched(ws: Workspace) -> None:
    """Make the configured workspace a git checkout on main, with a branch `other` where
    notes/g.md differs."""
    ws.write("notes/g.md", "# G on main\n")
    git(ws.root, "init", "--quiet", "--initial-branch=main")
    (ws.root / ".gitignore").write_text(".freshline/\n")
    git(ws.root, "add", "-A")
    git(ws.root, "commit", "--quiet", "-m", "start")
    git(ws.root, "checkout", "--quiet", "-b", "other")
    ws.write("notes/g.md", "# G on other\n")
    git(ws.root, "commit", "--quiet", "-am", "other")
    git(ws.root, "checkout", "--quiet", "main")


@pytest.fixture
def repo(ws: Workspace) -> Workspace:
    """A live project `p` over notes/ in a `branched` checkout."""
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    branched(ws)
    return ws


def test_a_scripted_live_conversation(repo: Workspace, tmp_path: Path) -> None:
    root = repo.root
    manager = SessionManager(load_config(root))
    try:
        s = manager.new("p")
        model = script(tmp_path, [read("notes/a.md"), read(str(root / "notes/g.md"))],
                       [], [], [])
        send(manager, s.id, "read them", model)

        # the user edits a.md: the next turn names it first
        repo.write("notes/a.md", "# A, edited by the user\n")
        manager.tracker.flush()
        assert manager.priority(manager.get(s.id)) == {"notes/a.md"}
        two = send(manager, s.id, "what changed?", model).wire_prompt
        updates = two[two.index("<project_context_updates"):]
        lines = updates.split("\n")
        assert lines[1].startswith("Files you read or wrote that changed since")
        assert lines[2] == (f"- you read {root}/notes/a.md at turn 1; it has changed since "
                            "(outside freshline)")
        assert lines[3].startswith("Changes to the project since your last turn")

        # another session (a Claude Code session the hook follows) writes c.md
        other = manager.new("p", external_id="claude-code:p:0b1f", convert=False)
        repo.write("notes/c.md", "# C\n")
        manager.record_write(other.id, "notes/c.md", blob_of(root / "notes/c.md") or "")
        three = send(manager, s.id, "and now?", model).wire_prompt
        assert (f"- {root}/notes/c.md (by freshline session {other.id}, claude-code)"
                in three)
        assert "Files you read" not in three  # nothing the agent read changed

        # `git checkout other` changed g.md, which the agent read: a git operation
        before = git(root, "rev-parse", "HEAD")
        git(root, "checkout", "--quiet", "other")
        manager.tracker.flush()  # the tracker's own typed `git` entry, beside the path
        four = send(manager, s.id, "after the checkout", model).wire_prompt
        after = git(root, "rev-parse", "HEAD")
        assert (f"- you read {root}/notes/g.md at turn 1; it has changed since "
                f"(by git checkout ({before[:7]} → {after[:7]}))") in four
        assert f"HEAD moved {before[:7]} → {after[:7]} by checkout" in four
    finally:
        manager.close()


def test_an_agents_own_write_is_not_announced_back(repo: Workspace) -> None:
    root = repo.root
    manager = SessionManager(load_config(root))
    try:
        s = manager.new("p", external_id="claude-code:p:77aa", convert=False)
        manager.prepare(s.id, "", conversation=False).accept()
        repo.write("notes/b.md", "# B, written by the agent\n")
        manager.record_write(s.id, "notes/b.md", blob_of(root / "notes/b.md") or "")
        repo.write("notes/d.md", "# D, by the user\n")
        turn = manager.prepare(s.id, "", conversation=False)
        assert turn.updates is not None and "notes/d.md" in turn.updates
        assert "b.md" not in turn.updates
        # once the user changes it, it is news again, and the agent's write is named
        turn.accept()
        repo.write("notes/b.md", "# B, then the user\n")
        again = manager.prepare(s.id, "", conversation=False).updates
        assert again is not None
        assert f"you wrote {root}/notes/b.md at turn 1; it has changed since" in again
    finally:
        manager.close()


def test_reads_renamed_or_deleted_say_so(repo: Workspace, tmp_path: Path) -> None:
    root = repo.root
    repo.write("notes/r.md", "# R, to be renamed\n")
    manager = SessionManager(load_config(root))
    try:
        s = manager.new("p")
        model = script(tmp_path, [read("notes/a.md"), read("notes/r.md")], [])
        send(manager, s.id, "read", model)
        (root / "notes/r.md").rename(root / "notes/moved.md")
        (root / "notes/a.md").unlink()
        wire = send(manager, s.id, "now?", model).wire_prompt
        assert f"- you read {root}/notes/a.md at turn 1; it was deleted since" in wire
        assert (f"- you read {root}/notes/r.md at turn 1; it was renamed to "
                f"{root}/notes/moved.md since") in wire
    finally:
        manager.close()


def test_search_hits_and_document_snapshots_count_as_reads(ws: Workspace, tmp_path: Path,
                                                           ) -> None:
    ws.write("notes/a.md", "alpha\n")
    ws.write("notes/b.md", "beta\n")
    ws.configure({"p": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        send(manager, s.id, "find", script(tmp_path, [{"tool": "search",
                                                       "args": {"pattern": "alph"}}]))
        seen = {e.path: e for e in manager.store.ledger_of(s.id)}
        assert set(seen) == {"notes/a.md"}  # only the file whose lines it showed
        assert seen["notes/a.md"].blob == blob_of(ws.root / "notes/a.md")
        assert seen["notes/a.md"].kind is LedgerKind.READ and seen["notes/a.md"].turn == 1
    finally:
        manager.close()


# ---------------------------------------------------------------- isolated: the write guard


def test_edit_is_refused_on_a_changed_file_and_allowed_after_a_new_read(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> None:
    manager, root = code
    (root / "src/never.py").write_text("untouched = True\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "never read")
    s = manager.new("code")
    worktree = manager.conversations.worktree(s.id)
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 10"}}
    model = script(
        tmp_path,
        [read("src/a.py"), {"tool": "write", "args": {"path": "src/b.py", "content": "b = 2\n"}}],
        [edit, read("src/a.py"), edit,
         {"tool": "write", "args": {"path": "src/never.py", "content": "x\n"}}],
    )
    send(manager, s.id, "one", model)
    (worktree / "src/a.py").write_text("a = 1\nb = 'the user was here'\n")  # not a tool
    result = send(manager, s.id, "two", model)
    assert "b.py" not in result.wire_prompt  # the agent's own write is not news
    refused, _, edited, never = tool_results(result)
    assert refused == (f"edit: {worktree}/src/a.py changed since you read it at turn 1; "
                       "read it again")
    assert edited == f"edited {worktree}/src/a.py"
    assert never == (f"write: {worktree}/src/never.py exists and you have not read it in "
                     "this conversation; read it before changing it")
    assert (worktree / "src/a.py").read_text() == "a = 10\nb = 'the user was here'\n"
    assert (worktree / "src/never.py").read_text() == "untouched = True\n"
    last = manager.store.ledger_last(s.id, "src/a.py")
    assert last is not None and (last.kind, last.turn) == (LedgerKind.WRITE, 2)
    assert last.blob == blob_of(worktree / "src/a.py")


def test_a_refresh_makes_an_own_write_stale(code: tuple[SessionManager, Path],
                                            tmp_path: Path) -> None:
    manager, root = code
    (root / "src/a.py").write_text("a = 1\n\n\n\nz = 1\n")
    git(root, "commit", "--quiet", "-am", "longer a")
    s = manager.new("code")
    worktree = manager.conversations.worktree(s.id)
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}}
    model = script(tmp_path, [read("src/a.py"), edit], [edit])
    send(manager, s.id, "one", model)
    (root / "src/a.py").write_text("a = 1\n\n\n\nz = 2\n")  # upstream edits the other end
    git(root, "commit", "--quiet", "-am", "upstream z")
    result = send(manager, s.id, "two", model)
    assert re.search(rf"- you wrote {worktree}/src/a.py at turn 1; it has changed since "
                     r"\(by the refresh from [^)]*main\)", result.wire_prompt)
    assert tool_results(result) == [f"edit: {worktree}/src/a.py changed since you wrote it "
                                    "at turn 1; read it again"]


def test_a_failed_turn_leaves_nothing_in_the_ledger(code: tuple[SessionManager, Path],
                                                   tmp_path: Path) -> None:
    manager, _ = code
    s = manager.new("code")
    path = tmp_path / "fails.json"
    path.write_text(json.dumps({"turns": [[read("src/a.py"), {"fail": "rate_limit"}]]}))
    with pytest.raises(BackendRateLimited):
        send(manager, s.id, "one", ScriptedBackend(path))
    assert manager.store.ledger_of(s.id) == []
    assert manager.get(s.id).turns == 0


# ---------------------------------------------------------------- lean replay


def test_a_twenty_turn_replay_carries_each_version_once(ws: Workspace, tmp_path: Path) -> None:
    versions = {"a": 0, "b": 0}

    def edit(name: str) -> None:
        versions[name] += 1
        body = "".join(f"{name} v{versions[name]} line {i}\n" for i in range(1, 6))
        ws.write(f"notes/{name}.md", body)

    edit("a")
    edit("b")
    ws.configure({"p": {"include": ["notes"]}})
    turns: list[list[dict[str, Any]]] = []
    for t in range(20):
        steps = [read("notes/a.md")]
        if t % 3 == 0:
            steps.append(read("notes/b.md", start=2, end=3))
        if t % 4 == 0:
            steps.append(read(f"{ws.root}/notes/b.md"))
        turns.append(steps)
    model = script(tmp_path, *turns, [])
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        for t in range(20):
            if t and t % 5 == 0:
                edit("a")
            if t and t % 7 == 0:
                edit("b")
            send(manager, s.id, f"turn {t + 1}", model)
        replayed = history(manager, s.id)
        send(manager, s.id, "turn 21", model)
        assert model.requests[-1][:-1] == replayed  # what the model was sent
    finally:
        manager.close()
    texts = [m.content for m in replayed if m.role is Role.TOOL]
    for name in versions:
        for v in range(1, versions[name] + 1):
            line = f"{name} v{v} line 4\n"  # only whole reads show line 4
            assert sum(text.count(line) for text in texts) <= 1, (name, v)
    assert any("a v4 line 1" in text for text in texts)  # the latest read is there, whole
    superseded = [t for t in texts if t.startswith("[superseded by the read at turn ")]
    assert len(superseded) >= 20
    calls = [c for m in replayed if m.role is Role.ASSISTANT for c in m.tool_calls]
    assert len(calls) == len(texts)  # each result follows the call it answers
    assert {m.tool_call_id for m in replayed if m.role is Role.TOOL} == {c.id for c in calls}


def test_a_partial_read_is_kept_until_a_read_covers_it(ws: Workspace, tmp_path: Path) -> None:
    ws.write("notes/a.md", "".join(f"line {i}\n" for i in range(1, 9)))
    ws.configure({"p": {"include": ["notes"]}})
    model = script(tmp_path, [read("notes/a.md", start=2, end=5)],
                   [read("notes/a.md", start=3, end=4)], [read("notes/a.md", start=1)], [])
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        for t in range(3):
            send(manager, s.id, f"turn {t + 1}", model)
            if t == 1:
                texts = [m.content for m in history(manager, s.id) if m.role is Role.TOOL]
                assert "lines 2-5]\nline 2\n" in texts[0]  # lines 3-4 do not cover it
                assert "lines 3-4]\nline 3\n" in texts[1]
        texts = [m.content for m in history(manager, s.id) if m.role is Role.TOOL]
    finally:
        manager.close()
    assert texts[:2] == ["[superseded by the read at turn 3]"] * 2
    assert "line 8" in texts[2]


def test_the_ledger_can_be_switched_off(repo: Workspace, tmp_path: Path) -> None:
    manager = SessionManager(load_config(repo.root), ledger=False)
    try:
        s = manager.new("p")
        send(manager, s.id, "read", script(tmp_path, [read("notes/a.md")]))
        assert manager.store.ledger_of(s.id) == []
        assert manager.priority(replace(s)) == frozenset()
    finally:
        manager.close()


def test_stale_reads_stay_listed_when_the_budget_rolls_up_the_rest(ws: Workspace,
                                                                  tmp_path: Path) -> None:
    ws.write("notes/deep/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    (ws.root / "freshline.toml").write_text(
        (ws.root / "freshline.toml").read_text() + "[delivery]\nsend = 2000\n")
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        send(manager, s.id, "read", script(tmp_path, [read("notes/deep/a.md")], []))
        for i in range(300):
            ws.write(f"notes/deep/n{i:03}.md", "new\n")
        ws.write("notes/deep/a.md", "# A, edited\n")
        turn = manager.prepare(s.id, "now?")
    finally:
        manager.close()
    assert turn.updates is not None and len(turn.wire_prompt) <= 2000 + len("now?") + 2
    assert f"- you read {ws.root}/notes/deep/a.md at turn 1; it has changed since" in turn.updates
    assert re.search(r"notes/deep/: 300 created", turn.updates)  # the rest is grouped


def test_a_deletion_by_the_agent_is_its_own(code: tuple[SessionManager, Path],
                                            tmp_path: Path) -> None:
    manager, _ = code
    s = manager.new("code")
    worktree = manager.conversations.worktree(s.id)
    model = script(tmp_path, [read("src/a.py"), {"tool": "delete", "args": {"path": "src/a.py"}}],
                   [{"tool": "write", "args": {"path": "src/a.py", "content": "new\n"}}])
    send(manager, s.id, "one", model)
    last = manager.store.ledger_last(s.id, "src/a.py")
    assert last is not None and (last.kind, last.blob) == (LedgerKind.WRITE, "")
    created = send(manager, s.id, "two", model)  # no file: it may be created again
    assert tool_results(created) == [f"created {worktree}/src/a.py (4 bytes)"]
