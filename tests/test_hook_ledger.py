"""The Claude Code hook feeds the read ledger: PostToolUse payloads recorded from Claude
Code 2.1.197 (Read, Edit, Write, NotebookEdit), answered in this process as the hook
process answers them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from freshline.config import load_config
from freshline.errors import UsageError
from freshline.interfaces.hook.claude_code import ADAPTER, MATCHER, parse, tool_use
from freshline.interfaces.hook.protocol import ToolUse
from freshline.session import SessionManager
from freshline.session.evidence import Moment
from freshline.store import LedgerKind
from freshline.tracker.hashing import blob_of
from tests.conftest import hook_in_process

from .conftest import git
from .test_hook import PAYLOADS, context
from .test_ledger_turns import branched

# Every call answered by the workspace's watcher (its socket served in this process).
pytestmark = pytest.mark.usefixtures("service")


def hook(stdin: str) -> str:
    """The hook's stdout for one payload, as `freshline hook claude-code` prints it (its
    fast path, in this process; tests/test_hook.py runs the process)."""
    return hook_in_process(stdin)


RECORDED_ROOT = "/home/user/notes"  # the recorded workspace, replaced by the test's
CLAUDE = "37b520b7-fdba-41e4-a481-45bf386fb6a5"


def recorded(name: str, root: Path, session: str = CLAUDE, **fields: Any) -> str:
    """A recorded payload pointed at `root` (its cwd and the tool's file)."""
    text = (PAYLOADS / f"{name}.json").read_text(encoding="utf-8")
    data = json.loads(text.replace(RECORDED_ROOT, str(root)))
    data.update(session_id=session, **fields)
    return json.dumps(data)


def prompt(root: Path, session: str = CLAUDE) -> str:
    return recorded("user_prompt_submit", root, session, cwd=str(root))


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the hook logs its failures (none expected unless a test says so)."""
    path = tmp_path / "hook.log"
    monkeypatch.setenv("FRESHLINE_HOOK_LOG", str(path))
    return path


@pytest.fixture
def claude(ws: Any, log: Path) -> Any:
    """The recorded workspace: notes/a.md and a notebook, one project over notes/."""
    ws.write("notes/a.md", "# A\n")
    ws.write("notes/nb.ipynb", '{"cells": [], "metadata": {}, "nbformat": 4}\n')
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def ledger(root: Path, session: str = CLAUDE) -> dict[tuple[str, LedgerKind], Any]:
    manager = SessionManager(load_config(root))
    try:
        s = manager.by_external(ADAPTER.external_id(session))
        assert s is not None
        return {(e.path, e.kind): e for e in manager.store.ledger_of(s.id)}
    finally:
        manager.close()


def test_the_recorded_payloads_parse() -> None:
    for name, kind, path in [
        ("post_tool_use_read", LedgerKind.READ, "/notes/a.md"),
        ("post_tool_use_edit", LedgerKind.WRITE, "/notes/a.md"),
        ("post_tool_use_write", LedgerKind.WRITE, "/notes/b.md"),
        ("post_tool_use_notebook_edit", LedgerKind.WRITE, "/notes/nb.ipynb"),
    ]:
        call = parse(recorded(name, Path("/w")))
        assert call.moment is Moment.TOOL and call.event == "PostToolUse"
        assert call.tool == ToolUse((f"/w{path}",), kind)
    assert MATCHER == "Read|Write|Edit|MultiEdit|NotebookEdit|Bash"


@pytest.mark.parametrize(("data", "use"), [
    ({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1"},
     ToolUse((), None, window="t1")),
    ({"tool_name": "Bash", "tool_input": {"file_path": "x.md"}, "tool_use_id": "t2"},
     ToolUse((), None, window="t2")),
    ({"tool_name": "Grep", "tool_input": {"file_path": "x.md"}}, ToolUse(("x.md",), None)),
    ({"tool_name": "Read", "tool_input": "odd"}, ToolUse((), None)),
    ({"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "n.ipynb"},
      "tool_response": {"error": "Cell not found"}}, ToolUse(("n.ipynb",), None)),
])
def test_tool_uses_the_ledger_ignores(data: dict[str, Any], use: ToolUse) -> None:
    assert tool_use(data) == use


def test_a_payload_without_a_tool_is_refused() -> None:
    with pytest.raises(UsageError, match="tool_name"):
        tool_use({"tool_input": {}})


def test_the_scripted_conversation_through_the_hook(claude: Any, log: Path) -> None:
    root = claude.root
    first = context(hook(prompt(root)), "UserPromptSubmit")
    assert "<project_context " in first

    # Claude reads a.md, edits it, writes b.md, reads and edits the notebook
    assert hook(recorded("post_tool_use_read", root)) == ""
    claude.write("notes/a.md", "# A edited\n")
    assert hook(recorded("post_tool_use_edit", root)) == ""
    claude.write("notes/b.md", "# B\n")
    assert hook(recorded("post_tool_use_write", root)) == ""
    assert hook(recorded("post_tool_use_read_notebook", root)) == ""
    claude.write("notes/nb.ipynb", '{"cells": [], "metadata": {"x": 1}, "nbformat": 4}\n')
    assert hook(recorded("post_tool_use_notebook_edit", root)) == ""
    seen = ledger(root)
    assert seen[("notes/a.md", LedgerKind.WRITE)].blob == blob_of(root / "notes/a.md")
    assert seen[("notes/b.md", LedgerKind.WRITE)].turn == 1
    assert ("notes/nb.ipynb", LedgerKind.READ) in seen
    assert not log.exists()

    # nothing but Claude's own writes happened: the next prompt has nothing to say
    assert hook(prompt(root)) == ""

    # the user edits a.md: named first; another Claude session writes c.md: attributed
    claude.write("notes/a.md", "# A edited, then the user\n")
    claude.write("notes/c.md", "# C\n")
    theirs = "9e1d0c2b-0000-4000-8000-000000000002"
    # (its first payload opens its session; nothing is printed for a PostToolUse)
    assert hook(recorded("post_tool_use_write", root, theirs,
                         tool_input={"file_path": str(root / "notes/c.md"), "content": "# C\n"})
                ) == ""
    updates = context(hook(prompt(root)), "UserPromptSubmit")
    lines = updates.split("\n")
    assert lines[2] == (f"- you wrote {root}/notes/a.md at turn 1; it has changed since "
                        "(outside freshline)")
    other = ledger(root, theirs)[("notes/c.md", LedgerKind.WRITE)].session
    assert f"- {root}/notes/c.md (by freshline session {other}, claude-code)" in updates
    assert "b.md" not in updates and "nb.ipynb" not in updates
    assert not log.exists()


def test_secrets_internal_and_outside_files_are_not_recorded(claude: Any, log: Path) -> None:
    root = claude.root
    claude.write("notes/.env", "KEY=1\n")
    hook(prompt(root))
    for path in (root / "notes/.env", root / "freshline.toml", root.parent / "elsewhere.md",
                 root / "notes/missing.md"):
        read = recorded("post_tool_use_read", root, tool_input={"file_path": str(path)})
        assert hook(read) == ""
    assert ledger(root) == {}
    assert not log.exists()


def test_a_relative_file_path_is_taken_from_the_cwd(claude: Any, log: Path) -> None:
    root = claude.root
    hook(prompt(root))
    hook(recorded("post_tool_use_read", root, cwd=str(root / "notes"),
                  tool_input={"file_path": "a.md"}))
    assert ("notes/a.md", LedgerKind.READ) in ledger(root)


def test_a_broken_post_tool_use_payload_is_logged_and_passes(claude: Any, log: Path) -> None:
    data = json.loads(recorded("post_tool_use_read", claude.root))
    del data["tool_name"]
    assert hook(json.dumps(data)) == ""
    assert "tool_name" in log.read_text()


def test_a_git_checkout_is_named_through_the_hook(ws: Any, log: Path) -> None:
    ws.configure({"notes": {"include": ["notes"]}})
    branched(ws)
    root = ws.root
    hook(prompt(root))
    read = recorded("post_tool_use_read", root, tool_input={"file_path": str(root / "notes/g.md")})
    assert hook(read) == ""
    before = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "--quiet", "other")
    manager = SessionManager(load_config(root))
    try:
        manager.tracker.flush()  # the tracker's own typed `git` entry
    finally:
        manager.close()
    updates = context(hook(prompt(root)), "UserPromptSubmit")
    after = git(root, "rev-parse", "HEAD")
    assert updates.split("\n")[2] == (
        f"- you read {root}/notes/g.md at turn 1; it has changed since "
        f"(by git checkout ({before[:7]} → {after[:7]}))")
