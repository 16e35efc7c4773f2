"""`freshline chat` through textual's headless pilot, on real workspaces and git repos."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Input, RichLog, Static

from freshline.agent.backends import get_backend
from freshline.config import add_project, init_workspace, load_config
from freshline.errors import UsageError
from freshline.interfaces.tui import ChatApp, open_session, run_chat
from freshline.interfaces.tui.commands import Command, Invocation, parse
from freshline.interfaces.tui.status import Status, short_ref
from freshline.session import SessionManager
from freshline.tracker.watcher import Watcher

from .conftest import git

SIZE = (200, 60)


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[SessionManager]:
    """A live notes workspace (not a git checkout)."""
    root = tmp_path / "vault"
    init_workspace(root)
    write(root, "notes/a.md", "# A\n")
    add_project(root, "notes", ["notes"])
    manager = SessionManager(load_config(root))
    yield manager
    manager.close()


@pytest.fixture
def code(tmp_path: Path) -> Iterator[SessionManager]:
    """A git checkout with an isolated project following branch `feature`, and a teammate's
    worktree on that branch at tmp/teammate."""
    root = tmp_path / "repo"
    init_workspace(root)
    write(root, "src/a.py", "x = 1\n")
    add_project(root, "code", ["src"], mode="isolated")
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    git(root, "branch", "feature")
    git(root, "worktree", "add", "--quiet", str(tmp_path / "teammate"), "feature")
    manager = SessionManager(load_config(root))
    yield manager
    manager.close()


def script(tmp_path: Path, *turns: list[dict[str, object]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": list(turns)}), encoding="utf-8")
    return f"scripted:{path}"


def transcript(app: ChatApp) -> str:
    return "\n".join(line.text for line in app.query_one("#transcript", RichLog).lines)


def status_bar(app: ChatApp) -> str:
    return Text.from_markup(str(app.query_one("#status", Static).content)).plain


async def submit(pilot: Pilot[None], text: str) -> None:
    """Put `text` in the input, press enter and wait for the worker."""
    app = pilot.app
    app.query_one("#prompt", Input).value = text
    await pilot.press("enter")
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_send_shows_message_and_answer_and_moves_the_status_bar(
    notes: SessionManager,
) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        assert "notes │ live │ epoch 0 / cursor 0 fresh" in status_bar(app)
        await submit(pilot, "hello there")
        text = transcript(app)
        assert "you › hello there" in text
        assert "model › echo: received" in text and "blocks: project_context" in text
        assert "<project_context" not in text  # the wire blocks stay off the transcript
        assert app.query_one("#prompt", Input).value == ""

        write(notes.config.root, "notes/b.md", "# B\n")
        await submit(pilot, "/status")
        assert "epoch 1 / cursor 0 behind" in status_bar(app)
        assert "the next send delivers updates" in transcript(app)

        await submit(pilot, "/updates")
        assert "<project_context_updates" in transcript(app)
        assert "notes/b.md" in transcript(app)

        await submit(pilot, "what changed?")
        assert "epoch 1 / cursor 1 fresh" in status_bar(app)
        assert "blocks: project_context_updates" in transcript(app)
        await submit(pilot, "/updates")
        assert "nothing new: the next send carries no updates block" in transcript(app)


async def test_with_a_watcher_the_status_bar_falls_behind_without_a_send(
    notes: SessionManager,
) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"), Watcher(notes.config))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        write(notes.config.root, "notes/new.md", "# New\n")
        for _ in range(200):  # the watcher logs the change and the bar follows
            await pilot.pause(0.05)
            if "cursor 0 behind" in status_bar(app):
                break
        assert "epoch 1 / cursor 0 behind" in status_bar(app)


async def test_log_diff_and_help(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
        await submit(pilot, "/log")
        text = transcript(app)
        assert "system" in text and "conversation opened" in text
        assert "user" in text and "first" in text
        await submit(pilot, "/diff")
        assert "no changes of its own" in transcript(app)
        await submit(pilot, "/help")
        assert "/sync REV [--with-conflicts]" in transcript(app)
        await submit(pilot, "/nope")
        assert "unknown command /nope" in transcript(app)
        await submit(pilot, "/quit")
        assert not app.is_running


async def test_conflict_stop_keeps_the_message_then_sync_resolves(
    code: SessionManager, tmp_path: Path
) -> None:
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "x = 1", "new": "x = 22"}}
    fix = {"tool": "write", "args": {"path": "src/a.py", "content": "x = 23\n"}}
    backend = get_backend(script(tmp_path, [edit, {"say": "set x"}], [fix, {"say": "fixed"}]))
    s = code.new("code", mode="isolated", target="feature").id
    app = ChatApp(code, s, backend)
    async with app.run_test(size=SIZE) as pilot:
        assert "target feature up to date" in status_bar(app)
        await submit(pilot, "set x to 22")
        assert "tool edit" in transcript(app) and "model › set x" in transcript(app)
        head = code.conversations.head(s)

        write(tmp_path / "teammate", "src/a.py", "x = 3\n")
        git(tmp_path / "teammate", "commit", "--quiet", "-am", "three")
        await submit(pilot, "/status")
        assert "target feature moved" in status_bar(app)

        await submit(pilot, "carry on")
        text = transcript(app)
        assert "conflict stop" in text and "src/a.py (content)" in text
        assert "you › carry on" not in text
        assert app.query_one("#prompt", Input).value == "carry on"
        assert code.conversations.head(s) == head

        await submit(pilot, "/sync feature")
        assert "sync stopped" in transcript(app)
        await submit(pilot, "/sync feature --with-conflicts")
        assert "conflicts recorded:" in transcript(app)
        assert "content: src/a.py" in transcript(app)
        assert "target feature up to date" in status_bar(app)
        assert [c.paths for c in code.conversations.unresolved_conflicts(s)] == [("src/a.py",)]

        await submit(pilot, "resolve it")
        assert "model › fixed" in transcript(app)
        assert code.conversations.unresolved_conflicts(s) == []
        await submit(pilot, "/sync")
        assert "usage: /sync REV" in transcript(app)


async def test_backend_failure_keeps_the_message_and_the_cursor(
    notes: SessionManager, tmp_path: Path
) -> None:
    backend = get_backend(script(tmp_path, [{"fail": "auth"}]))
    s = notes.new("notes").id
    app = ChatApp(notes, s, backend)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        assert "not sent:" in transcript(app)
        assert app.query_one("#prompt", Input).value == "hello"
    assert notes.get(s).state.value == "landing"
    assert [e.author.value for e in notes.conversations.log(s)] == ["system"]


async def test_a_dirty_landing_holds_and_says_so(notes: SessionManager) -> None:
    s = notes.new("notes").id
    write(notes.config.root, "notes/late.md", "# Late\n")
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hi")
        assert "held: the project changed before the first send" in transcript(app)
        assert "model › echo" in transcript(app)


async def test_resume_shows_the_earlier_transcript(notes: SessionManager) -> None:
    s = notes.new("notes").id
    async with ChatApp(notes, s, get_backend("echo")).run_test(size=SIZE) as pilot:
        await submit(pilot, "remember me")
    assert open_session(notes, None, s) == s
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "you › remember me" in transcript(app)


def test_open_session_chooses_the_only_project_and_checks_options(
    notes: SessionManager,
) -> None:
    s = open_session(notes, None, None)
    assert notes.get(s).project == "notes"
    with pytest.raises(UsageError, match="not both"):
        open_session(notes, "notes", s)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello", None),
        ("/status", Invocation(Command.STATUS)),
        ("/UPDATES", Invocation(Command.UPDATES)),
        ("/sync main", Invocation(Command.SYNC, ("main",))),
        ("/sync main --with-conflicts", Invocation(Command.SYNC, ("main", "--with-conflicts"))),
        ("/sync 'feature x'", Invocation(Command.SYNC, ("feature x",))),
        ("/quit", Invocation(Command.QUIT)),
    ],
)
def test_parse(text: str, expected: Invocation | None) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("/", "unknown command /"),
        ("/frobnicate", "unknown command /frobnicate"),
        ("/sync", "usage: /sync"),
        ("/sync a b", "usage: /sync"),
        ("/sync a --force", "usage: /sync"),
        ("/sync a --with-conflicts --with-conflicts", "usage: /sync"),
        ("/log extra", "takes no arguments"),
        ("/sync 'unclosed", "cannot parse"),
    ],
)
def test_parse_refuses(text: str, error: str) -> None:
    with pytest.raises(UsageError, match=error):
        parse(text)


@given(st.text().filter(lambda t: not t.startswith("/")))
def test_anything_without_a_slash_is_a_message(text: str) -> None:
    assert parse(text) is None


@pytest.mark.parametrize(
    ("name", "short"),
    [
        ("refs/heads/main", "main"),
        ("refs/heads/feature/x", "feature/x"),
        ("refs/tags/v1", "v1"),
        ("a" * 40, "a" * 12),
        ("HEAD", "HEAD"),
    ],
)
def test_short_ref(name: str, short: str) -> None:
    assert short_ref(name) == short


def test_status_line_says_behind_unseeded_and_moved() -> None:
    base = Status("s", "p", "isolated", "active", 3, None, 1, 2, True, "refs/heads/f", True)
    line = Text.from_markup(base.line()).plain
    assert "epoch 3 / cursor unseeded behind" in line
    assert "docs 1 pending, 2 failed (converting)" in line
    assert "target f moved" in line


def test_run_chat_refuses_a_bad_model_before_opening_anything(notes: SessionManager) -> None:
    with pytest.raises(UsageError, match="unknown model backend"):
        run_chat(notes.config, model="nope")
    with pytest.raises(UsageError, match="takes no option base_url"):
        run_chat(notes.config, base_url="http://127.0.0.1:1")
    assert notes.sessions() == []
