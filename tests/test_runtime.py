"""One send end to end: what the model is given across turns, and what a failure leaves."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from freshline.agent.backends import get_backend
from freshline.agent.backends.base import Backend
from freshline.agent.backends.echo import EchoBackend
from freshline.agent.errors import BackendRateLimited
from freshline.agent.messages import AssistantReply, Message, TextCallback, ToolSpec
from freshline.agent.runtime import send
from freshline.session import SessionManager

from .conftest import Workspace, git


class Recorder(Backend):
    """A backend that keeps every request it was sent (mixed in before a real one)."""

    requests: list[list[Message]]

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        self.requests.append(list(messages))
        return super().complete(messages, tools, on_text)  # type: ignore[safe-super]


class Recording(Recorder, EchoBackend):
    """The echo backend, keeping every request it was sent."""

    def __init__(self) -> None:
        self.requests = []


def test_later_turns_replay_the_blocks_earlier_turns_were_sent_with(ws: Workspace) -> None:
    ws.write("notes/a.md", "a")
    ws.configure({"p": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        backend = Recording()
        send(manager, s.id, "one", backend)
        ws.write("notes/b.md", "b")
        send(manager, s.id, "two", backend)
        send(manager, s.id, "three", backend)
    finally:
        manager.close()
    third = [m.content for m in backend.requests[2]]
    assert third[0].startswith("<project_context") and third[0].endswith("one")
    assert "<project_context_updates" in third[2] and third[2].endswith("two")
    assert third[-1] == "three"
    log = manager.conversations.log(s.id)
    assert [e.content for e in log if e.author.value == "user"] == ["one", "two", "three"]


def test_a_failed_isolated_send_leaves_the_worktree_as_it_was(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> None:
    manager, root = code
    s = manager.new("code")
    worktree = manager.conversations.worktree(s.id)
    (root / "src/a.py").write_text("a = 2\n")
    git(root, "commit", "--quiet", "-am", "upstream edits a")
    script = tmp_path / "script.json"
    write = {"tool": "write", "args": {"path": "src/new.py", "content": "x = 1\n"}}
    script.write_text(json.dumps({"turns": [[write, {"fail": "rate_limit"}]]}))
    head = manager.conversations.head(s.id)
    with pytest.raises(BackendRateLimited):
        send(manager, s.id, "go", get_backend(f"scripted:{script}"))
    assert manager.conversations.head(s.id) == head
    assert (worktree / "src/a.py").read_text() == "a = 1\n"  # the refresh was undone
    assert not (worktree / "src/new.py").exists()  # and so was the failed turn's write
    git(root, "reset", "--quiet", "--hard", "HEAD~1")  # upstream takes its edit back
    git(root, "commit", "--quiet", "--allow-empty", "-m", "upstream moves on")
    send(manager, s.id, "again", get_backend("echo"))
    assert "a = 2" not in manager.conversations.diff(s.id)


def test_a_send_converts_only_when_documents_are_converting(ws: Workspace) -> None:
    ws.write("notes/a.md", "a")
    ws.configure({"p": {"include": ["notes"]}})
    manager = SessionManager(ws.config())
    try:
        s = manager.new("p")
        send(manager, s.id, "first", get_backend("echo"))
        ws.write("notes/b.md", "b")
        send(manager, s.id, "no document changed", get_backend("echo"))
        assert not manager._background  # nothing to convert: the project was not listed
        ws.write("notes/page.html", "<p>hi</p>")
        result = send(manager, s.id, "a page", get_backend("echo"))
        assert "page.html (converting" in result.wire_prompt
        assert manager._background  # the page converts for a later turn
        manager.settle()
        later = send(manager, s.id, "and now?", get_backend("echo"))
        assert "Snapshots ready" in later.wire_prompt
    finally:
        manager.close()
def test_seen_each_tool_event_records_the_tree_with_its_writes(
    code: tuple[SessionManager, Path], tmp_path: Path
) -> None:
    """Seen: tool-event commits carried the turn's starting tree, so `git show <edit
    event>` showed no change; only the turn's last event had the edits."""
    manager, root = code
    s = manager.new("code")
    script = tmp_path / "script.json"
    steps = [{"tool": "write", "args": {"path": "src/b.py", "content": "b = 1\n"}},
             {"tool": "read", "args": {"path": "src/a.py"}},
             {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}},
             {"tool": "chmod", "args": {"path": "src/b.py", "executable": True}},
             {"say": "done"}]
    script.write_text(json.dumps({"turns": [steps]}))
    send(manager, s.id, "go", get_backend(f"scripted:{script}"))
    events = manager.conversations.log(s.id)
    tools = [e for e in events if e.tool]
    assert [e.tool for e in tools] == ["write", "read", "edit", "chmod"]
    assert tools[0].changed == ("src/b.py",) and tools[3].mode_changes == ("src/b.py",)

    def changed(event) -> str:
        return git(root, "show", "--format=", "--name-status", event.commit or "")

    assert changed(tools[0]) == "A\tsrc/b.py"
    assert changed(tools[1]) == ""  # a read writes nothing
    assert changed(tools[2]) == "M\tsrc/a.py"
    assert changed(tools[3]) == "M\tsrc/b.py"
    assert git(root, "ls-tree", tools[3].commit or "", "src/b.py").split()[0] == "100755"
    assert changed(events[-1]) == ""  # the answer changed nothing after the last tool
