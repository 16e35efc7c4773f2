"""`freshline chat` through textual's headless pilot, on real workspaces and git repos."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Static

from freshline.agent.backends import get_backend
from freshline.config import add_project, init_workspace, load_config
from freshline.errors import UsageError
from freshline.interfaces.service.daemon import Service
from freshline.interfaces.tui import ChatApp, open_session, run_chat
from freshline.interfaces.tui.commands import Command, Invocation, parse
from freshline.interfaces.tui.status import Status
from freshline.interfaces.tui.widgets import StatusBar
from freshline.refs import short_ref
from freshline.session import SessionManager

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
    return app.transcript_text()


def status_bar(app: ChatApp) -> str:
    return Text.from_markup(str(app.query_one("#status", Static).content)).plain


async def submit(pilot: Pilot[None], text: str) -> None:
    """Put `text` in the input, press enter and wait for the worker."""
    app = pilot.app
    assert isinstance(app, ChatApp)
    app.prompt.load_text(text)
    await pilot.press("enter")
    await settle(pilot)


def type_in(app: ChatApp, text: str) -> None:
    """Replace the input's text, the cursor at its end (as after typing it)."""
    app.prompt.load_text(text)
    app.prompt.move_cursor(app.prompt.document.end)


# A turn that sets x to 22 in src/a.py (the write guard wants a read first).
SET_X: list[dict[str, object]] = [
    {"tool": "read", "args": {"path": "src/a.py"}},
    {"tool": "edit", "args": {"path": "src/a.py", "old": "x = 1", "new": "x = 22"}},
    {"say": "set x"},
]


@asynccontextmanager
async def a_conflict_ahead(
    code: SessionManager, tmp_path: Path, reply: str
) -> AsyncIterator[tuple[ChatApp, Pilot[None]]]:
    """A chat on an isolated session of `feature` whose agent set x to 22 while a teammate
    committed x = 3 there: its next send conflicts; the turn after plays `reply`."""
    backend = get_backend(script(tmp_path, SET_X, [{"say": reply}]))
    app = ChatApp(code, code.new("code", mode="isolated", target="feature").id, backend)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "set x to 22")
        write(tmp_path / "teammate", "src/a.py", "x = 3\n")
        git(tmp_path / "teammate", "commit", "--quiet", "-am", "three")
        yield app, pilot


async def settle(pilot: Pilot[None]) -> None:
    """Wait for the workers and the messages they posted."""
    await pilot.app.workers.wait_for_complete()
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
        assert app.prompt.text == ""

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


async def test_with_the_service_the_status_bar_falls_behind_without_a_send(
    notes: SessionManager, service: Service
) -> None:
    s = notes.new("notes").id
    service.workspaces.ready(notes.config.root)
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        write(notes.config.root, "notes/new.md", "# New\n")
        for _ in range(200):  # the service logs the change and the bar follows
            await pilot.pause(0.05)
            if "cursor 0 behind" in status_bar(app):
                break
        assert "epoch 1 / cursor 0 behind" in status_bar(app)


async def test_a_commit_on_the_target_moves_the_bar_without_status(
    code: SessionManager, tmp_path: Path
) -> None:
    """Issue 29, item 5: after `git commit` on the target the bar said `up to date` for
    30+ s, until `/status`."""
    s = code.new("code", mode="isolated", target="feature").id
    app = ChatApp(code, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        assert "target feature up to date" in status_bar(app)
        write(tmp_path / "teammate", "src/b.py", "y = 2\n")
        git(tmp_path / "teammate", "add", "-A")
        git(tmp_path / "teammate", "commit", "--quiet", "-m", "b")
        for _ in range(600):  # the chat sees refs/heads/feature move; the bar follows
            await pilot.pause(0.05)
            if "target feature moved" in status_bar(app):
                break
        assert "target feature moved" in status_bar(app)


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
    read = {"tool": "read", "args": {"path": "src/a.py"}}  # tools write only what was read
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "x = 1", "new": "x = 22"}}
    fix = {"tool": "write", "args": {"path": "src/a.py", "content": "x = 23\n"}}
    backend = get_backend(script(tmp_path, [read, edit, {"say": "set x"}],
                                 [read, fix, {"say": "fixed"}]))
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
        assert app.prompt.text == "carry on"
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
        assert app.prompt.text == "hello"
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
    docs = {"pending": 1, "failed": 2}
    base = Status("s", "p", "isolated", "active", 3, None, docs, True, "refs/heads/f", True)
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


# --- the input: lines, history, completion, Ctrl-C -------------------------------------


async def test_a_paste_keeps_every_line_and_ctrl_j_or_shift_enter_adds_one(
    notes: SessionManager,
) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(events.Paste("first line\nsecond line\nthird"))
        await pilot.pause()
        assert app.prompt.text == "first line\nsecond line\nthird"
        await pilot.press("ctrl+j", "x", "shift+enter", "y")
        assert app.prompt.text == "first line\nsecond line\nthird\nx\ny"
        assert transcript(app) == ""  # a new line is not a send
        await pilot.press("enter")
        await settle(pilot)
        sent = [e.content for e in notes.conversations.log(s) if e.author.value == "user"]
        assert sent == ["first line\nsecond line\nthird\nx\ny"]
        assert app.prompt.text == ""


async def test_up_and_down_walk_the_history_and_keep_the_draft(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
        await submit(pilot, "/status")
        await submit(pilot, "second")
        await pilot.press("d", "r", "a", "f", "t")
        await pilot.press("up")
        assert app.prompt.text == "second"
        await pilot.press("up", "up")
        assert app.prompt.text == "first"
        await pilot.press("up")
        assert app.prompt.text == "first"  # the oldest stays
        await pilot.press("down", "down", "down")
        assert app.prompt.text == "draft"
    resumed = ChatApp(notes, s, get_backend("echo"))
    async with resumed.run_test(size=SIZE) as pilot:
        await pilot.press("up")
        assert resumed.prompt.text == "second"  # a resumed chat remembers its messages


async def test_tab_completes_commands_and_workspace_paths(notes: SessionManager) -> None:
    write(notes.config.root, "notes/Reading List.md", "# R\n")
    write(notes.config.root, "notes/Retrieval.md", "# R\n")
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("/", "s", "t", "tab")
        assert app.prompt.text == "/status "
        type_in(app, "look at no")
        await pilot.press("tab")
        assert app.prompt.text == "look at notes/"
        await pilot.press("R", "e", "tab")
        await pilot.pause()
        assert app.prompt.text == "look at notes/Re"  # two fit: the common part
        activity = str(app.query_one("#activity", Static).content)
        assert "notes/Reading List.md" in activity and "notes/Retrieval.md" in activity
        await pilot.press("a", "tab")
        assert app.prompt.text == "look at notes/Reading List.md"
        type_in(app, "see .fresh")
        await pilot.press("tab")
        assert app.prompt.text == "see .fresh"  # freshline's own data is never offered


async def test_ctrl_c_clears_the_input_then_quits(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("h", "i")
        await pilot.press("ctrl+c")
        assert app.prompt.text == "" and app.is_running
        assert "Ctrl-C again" in str(app.query_one("#activity", Static).content)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


async def test_typing_after_ctrl_c_disarms_the_quit(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+c", "a", "ctrl+c")
        await pilot.pause()
        assert app.is_running and app.prompt.text == ""


async def test_a_rejected_command_is_cleared_with_the_error_shown(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "/frobnicate now")
        assert "unknown command /frobnicate" in transcript(app)
        assert app.prompt.text == ""
        await submit(pilot, "/sync")
        assert "usage: /sync REV" in transcript(app) and app.prompt.text == ""


async def test_after_a_conflict_stop_a_command_below_keeps_the_message(
    code: SessionManager, tmp_path: Path
) -> None:
    async with a_conflict_ahead(code, tmp_path, "merged") as (app, pilot):
        await submit(pilot, "carry on\nwith care")
        assert "conflict stop" in transcript(app)
        assert app.prompt.text == "carry on\nwith care"
        app.prompt.move_cursor(app.prompt.document.end)
        await pilot.press("ctrl+j", *"/sync feature --with-conflicts", "enter")
        await settle(pilot)
        assert "conflicts recorded:" in transcript(app)
        assert app.prompt.text == "carry on\nwith care"  # the message stays for the resend
        await pilot.press("ctrl+c")  # clear it, run a command: the message comes back
        await submit(pilot, "/status")
        assert app.prompt.text == "carry on\nwith care"
        await pilot.press("enter")
        await settle(pilot)
        assert "model › merged" in transcript(app) and app.prompt.text == ""


async def test_a_message_starting_with_a_path_is_not_a_command(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "look at this\n/etc/hosts")
        assert "you › look at this" in transcript(app)
        assert "unknown command" not in transcript(app)


# --- what the model was told ----------------------------------------------------------


async def test_each_message_says_what_the_model_was_told(notes: SessionManager) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        write(notes.config.root, "notes/b.md", "# B\n")
        write(notes.config.root, "notes/a.md", "# A changed\n")
        await submit(pilot, "what changed?")
        await submit(pilot, "and now?")
        lines = transcript(app).splitlines()
        told = [line.strip() for line in lines if line.strip().startswith("↳")]
        assert told == ["↳ the project manifest", "↳ 1 created, 1 modified", "↳ nothing new"]
        assert "<project_context_updates" not in transcript(app)
        second = [w for w in app.query(".told")][1]
        await pilot.click(second)
        await pilot.pause()
        assert "<project_context_updates" in transcript(app)  # the click shows the blocks
        await submit(pilot, "/updates last")
        assert "updates given with your last message ↳ nothing new" in transcript(app)


async def test_a_refresh_is_told_with_its_target_and_paths(
    code: SessionManager, tmp_path: Path
) -> None:
    s = code.new("code", mode="isolated", target="feature").id
    app = ChatApp(code, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "hello")
        write(tmp_path / "teammate", "src/b.py", "y = 2\n")
        git(tmp_path / "teammate", "add", "-A")
        git(tmp_path / "teammate", "commit", "--quiet", "-m", "b")
        await submit(pilot, "news?")
        assert "↳ refreshed from feature (1 path)" in transcript(app)


async def test_a_resumed_chat_tells_what_earlier_messages_carried(notes: SessionManager) -> None:
    s = notes.new("notes").id
    async with ChatApp(notes, s, get_backend("echo")).run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
        write(notes.config.root, "notes/b.md", "# B\n")
        await submit(pilot, "second")
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = transcript(app)
        assert "↳ the project manifest" in text
        assert "↳ what changed (epoch 0 → 1)" in text


async def test_seen_a_resumed_chat_told_epochs_of_question_marks(notes: SessionManager) -> None:
    """Seen: a resumed chat showed `what changed (epoch ? → ?)` under a first message that
    carried the manifest alone (whose instructions name the updates block)."""
    s = notes.new("notes").id
    async with ChatApp(notes, s, get_backend("echo")).run_test(size=SIZE) as pilot:
        await submit(pilot, "first")
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        told = [line.strip() for line in transcript(app).splitlines()
                if line.strip().startswith("↳")]
        assert told == ["↳ the project manifest"]


async def test_seen_the_line_after_a_sync_with_conflicts_names_them(
    code: SessionManager, tmp_path: Path
) -> None:
    """Seen: after `/sync main --with-conflicts` the next message's line said only
    `refreshed from main (1 path)`, though its block listed the conflict too."""
    async with a_conflict_ahead(code, tmp_path, "ok") as (app, pilot):
        await submit(pilot, "/sync feature --with-conflicts")
        await submit(pilot, "resolve it")
        assert "↳ refreshed from feature (1 path, 1 conflict)" in transcript(app)


# --- header, status bar ---------------------------------------------------------------


async def test_the_header_names_session_project_model_and_workspace(
    notes: SessionManager,
) -> None:
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        header = str(app.query_one("#header", Static).content)
        assert f"session {s}" in header and "project notes" in header
        assert "model echo" in header and str(notes.config.root.name) in header


async def test_document_counts_are_live_failed_included(notes: SessionManager) -> None:
    write(notes.config.root, "notes/broken.docx", "not a zip at all")
    s = notes.new("notes").id
    app = ChatApp(notes, s, get_backend("echo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "docs 1 failed" in status_bar(app)
        write(notes.config.root, "notes/page.html", "<html><body><p>hi</p></body></html>")
        await submit(pilot, "a page")
        for _ in range(200):  # the send converts in the background; the bar follows
            await pilot.pause(0.05)
            if "1 ready" in status_bar(app):
                break
        assert "docs 1 ready, 1 failed" in status_bar(app)


BAR_GOLDEN = Path(__file__).parent / "golden" / "chat_status_bar_80.svg"


class BarHarness(App[None]):
    """Only the status bar, 80 columns wide, for its snapshot."""

    CSS = "StatusBar { height: auto; padding: 0 1; }"

    def __init__(self, status: Status) -> None:
        super().__init__()
        self.bar_status = status

    def compose(self) -> ComposeResult:
        yield StatusBar("")

    def on_mount(self) -> None:
        self.query_one(StatusBar).status = self.bar_status


async def test_the_bar_fits_80_columns_and_keeps_the_target_state() -> None:
    docs = {"ready": 12, "pending": 3, "failed": 1}
    status = Status("3f2a9c1b0d4e", "research-notes", "isolated", "active", 123, 45, docs,
                    True, "refs/heads/feature/search-ranking", True)
    app = BarHarness(status)
    async with app.run_test(size=(80, 3)) as pilot:
        await pilot.pause()
        line = Text.from_markup(str(app.query_one(StatusBar).content)).plain
        assert len(line) <= 78 and "\n" not in line
        assert "feature/search-ranking moved" in line and "behind" in line
        assert "12✓ 3… 1✗" in line  # abbreviated, not dropped
        svg = app.export_screenshot(title="status bar")
    if os.environ.get("FRESHLINE_UPDATE_GOLDEN"):
        BAR_GOLDEN.write_text(svg, encoding="utf-8")
    assert svg == BAR_GOLDEN.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", [40, 60, 80, 100, 160])
@given(epoch=st.integers(0, 10**6), cursor=st.none() | st.integers(0, 10**6),
       counts=st.dictionaries(st.sampled_from(["ready", "stale", "pending", "failed"]),
                              st.integers(1, 10**4)),
       target=st.none() | st.text("abc/-", min_size=1, max_size=30), moved=st.booleans())
def test_the_bar_never_loses_the_target_state(
    width: int, epoch: int, cursor: int | None, counts: dict[str, int], target: str | None,
    moved: bool,
) -> None:
    status = Status("s", "proj", "isolated", "active", epoch, cursor, counts, False,
                    target, moved)
    line = Text.from_markup(status.line(width)).plain
    if target:
        assert f"{short_ref(target)} {'moved' if moved else 'up to date'}" in line
    assert ("behind" in line) == status.behind
