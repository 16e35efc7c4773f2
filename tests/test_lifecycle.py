"""Sessions people can find and remove: list fields, `chat --continue`, `session rm`,
`gc`, and idle hook/MCP/ACP sessions closing by themselves."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import parse_duration
from freshline.context import Channel
from freshline.conversation.storage import disk_usage
from freshline.errors import ConfigError, NotFoundError, SessionBusy, UsageError
from freshline.interfaces.cli import app
from freshline.interfaces.tui import open_session
from freshline.session import SessionManager, lifecycle
from freshline.store import LedgerEntry, LedgerKind, SessionState, Store
from freshline.store.schema import MIGRATIONS
from freshline.store.sessions import TITLE_CHARS, session_title
from freshline.store.sqlite import DB_NAME

from .conftest import StoreBackend, Workspace, git, turn_running

runner = CliRunner()
PRIVATE = Path(".freshline") / "conversations.git"
DAY = 86_400


def cli(ws: Workspace, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(ws.root), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def notes(ws: Workspace, backend: StoreBackend) -> Workspace:
    ws.configure({"notes": {"include": ["notes"]}, "other": {"include": ["other"]}})
    for i in range(60):
        ws.write(f"notes/d{i % 6}/n{i}.md", f"note {i}\n" + os.urandom(1500).hex())
    ws.write("other/o.md", "o\n")
    return ws


def chat_session(m: SessionManager, message: str, project: str = "notes") -> str:
    sid = m.new(project, channel=Channel.CHAT).id
    send(m, sid, message, get_backend("echo"))
    return sid


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and modification time."""
    state = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            info = path.lstat()
            state[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return state


# --- finding sessions ---------------------------------------------------------------------


def test_list_shows_channel_times_title_and_size(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        sid = chat_session(m, "  What changed\nin my notes?  ")
        hook = m.new("notes", external_id="claude-code:notes:x", channel=Channel.HOOK).id
    finally:
        m.close()
    code, out, err = cli(notes, "session", "list", "--json")
    assert code == 0, err
    rows = {row["id"]: row for row in json.loads(out)}
    assert rows[sid]["channel"] == "chat" and rows[hook]["channel"] == "hook"
    assert rows[sid]["title"] == "What changed"
    assert rows[sid]["created_at"] <= rows[sid]["last_active_at"] <= time.time()
    assert rows[sid]["size_bytes"] > 0 and rows[hook]["size_bytes"] is None
    assert [r["id"] for r in json.loads(out)][-1] == hook  # used last, listed last
    code, out, _ = cli(notes, "session", "list")
    assert code == 0 and "What" in out and "chat" in out and "claude-code" in out


def test_chat_continue_resumes_the_chat_session_used_last(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        with pytest.raises(UsageError, match="no chat session"):
            open_session(m, None, None, resume_last=True)
        older = chat_session(m, "first")
        newer = chat_session(m, "second")
        other = chat_session(m, "elsewhere", project="other")
        m.new("notes", external_id="mcp:1", channel=Channel.MCP)  # not a chat session
        send(m, older, "again", get_backend("echo"))
        assert open_session(m, "notes", None, resume_last=True) == older
        assert open_session(m, None, None, resume_last=True) == older
        assert open_session(m, "other", None, resume_last=True) == other
        assert newer != older
        with pytest.raises(UsageError, match="--continue or --session, not both"):
            open_session(m, None, newer, resume_last=True)
    finally:
        m.close()


@pytest.mark.parametrize(
    ("message", "title"),
    [("", None), ("\n  \n", None), ("hi", "hi"), ("a\tb\n c", "a b"), ("x" * 61, "x" * 59 + "…"),
     ("x" * 60, "x" * 60), ("bad \udcff name", "bad ? name")],
)
def test_titles(message: str, title: str | None) -> None:
    assert session_title(message) == title


@given(st.text())
def test_a_title_is_one_short_line(message: str) -> None:
    title = session_title(message)
    assert title is None or ("\n" not in title and 0 < len(title) <= TITLE_CHARS)


# --- idle sessions close ------------------------------------------------------------------


def test_idle_hook_mcp_and_acp_sessions_close_chat_sessions_do_not(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        chat = chat_session(m, "keep me")
        others = [m.new("notes", external_id=f"{c}:1", channel=c).id
                  for c in (Channel.HOOK, Channel.MCP, Channel.ACP)]
        assert lifecycle.close_idle(m, now=time.time() + 6 * DAY) == []
        closed = lifecycle.close_idle(m, now=time.time() + 8 * DAY)
        assert sorted(s.id for s in closed) == sorted(others)
        assert {m.get(i).state for i in others} == {SessionState.CLOSED}
        assert m.get(chat).state is SessionState.ACTIVE
    finally:
        m.close()


def test_idle_close_follows_the_setting_and_zero_never_closes(notes: Workspace) -> None:
    config = notes.root / "freshline.toml"
    config.write_text(config.read_text() + '[sessions]\nidle_close = "1h"\n')
    m = SessionManager(notes.config())
    try:
        hook = m.new("notes", external_id="h:1", channel=Channel.HOOK).id
        assert [s.id for s in lifecycle.close_idle(m, now=time.time() + 7200)] == [hook]
        config.write_text(config.read_text().replace('"1h"', "0"))
        m.reload_config()
        m.resume(hook)
        assert lifecycle.close_idle(m, now=time.time() + 400 * DAY) == []
    finally:
        m.close()


@pytest.mark.parametrize(
    ("table", "message"),
    [('[sessions]\nidle_close = "soon"', "sessions.idle_close: not a duration"),
     ("[sessions]\nidle_close = true", "sessions.idle_close: expected a duration"),
     ("[sessions]\nidle_close = -1", "sessions.idle_close: not a duration"),
     ("[conversations]\nmax_blob_mb = 0", "conversations.max_blob_mb: must be between"),
     ('[conversations]\nmax_blob_mb = "big"', "conversations.max_blob_mb: expected an integer"),
     ("[conversations]\ncap = 1", "conversations.cap: unknown key")],
)
def test_bad_settings_are_one_line_errors(notes: Workspace, table: str, message: str) -> None:
    config = notes.root / "freshline.toml"
    config.write_text(config.read_text() + table + "\n")
    with pytest.raises(ConfigError, match=message):
        notes.config()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("45", 45), ("45s", 45), ("90m", 5400), ("12h", 43200), ("30d", 30 * DAY),
     ("2w", 14 * DAY), (" 7D ", 7 * DAY)],
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "d", "1.5d", "-1d", "1y", "1 d x", "99999d"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


# --- session rm ---------------------------------------------------------------------------


def test_rm_archive_writes_a_bundle_git_verifies_then_removes(notes: Workspace,
                                                              tmp_path: Path) -> None:
    m = SessionManager(notes.config())
    try:
        sid = chat_session(m, "remember this")
        keep = chat_session(m, "keep")
    finally:
        m.close()
    private = notes.root / PRIVATE
    head = git(private, "rev-parse", f"refs/freshline/conversations/{sid}")
    bundle = tmp_path / "old.bundle"
    code, out, err = cli(notes, "session", "rm", sid, "--archive", str(bundle))
    assert code == 0, err
    assert f"removed {sid}" in out
    git(private, "bundle", "verify", "--quiet", str(bundle))
    assert git(private, "for-each-ref", "--format=%(refname)") == \
        f"refs/freshline/conversations/{keep}"
    restored = tmp_path / "restored.git"
    git(tmp_path, "init", "-q", "--bare", str(restored))
    git(restored, "fetch", "-q", str(bundle), "refs/freshline/*:refs/freshline/*")
    assert git(restored, "rev-parse", f"refs/freshline/conversations/{sid}") == head
    assert "remember this" in git(restored, "log", "--format=%B", head)
    code, _, err = cli(notes, "session", "show", sid)
    assert code == 2 and "unknown session" in err


def test_rm_refuses_without_changing_anything(notes: Workspace, tmp_path: Path) -> None:
    m = SessionManager(notes.config())
    try:
        sid = chat_session(m, "one")
        hook = m.new("notes", external_id="h:1", channel=Channel.HOOK).id
        with pytest.raises(NotFoundError):
            lifecycle.remove(m, [sid, "feedfacecafe"])
        with pytest.raises(UsageError, match="nothing to archive"):
            lifecycle.remove(m, [hook], archive=tmp_path / "x.bundle")
        (tmp_path / "taken.bundle").write_text("mine")
        with pytest.raises(UsageError, match="exists"):
            lifecycle.remove(m, [sid], archive=tmp_path / "taken.bundle")
        assert (tmp_path / "taken.bundle").read_text() == "mine"
        with turn_running(m, sid), pytest.raises(SessionBusy):
            lifecycle.remove(m, [sid, hook])
        assert m.get(sid) and m.get(hook) and m.conversations.exists(sid)
        m.store.ledger_put([LedgerEntry(sid, "notes/d0/n0.md", LedgerKind.READ, "a" * 40, 1)])
        lifecycle.remove(m, [sid, hook])
        assert m.sessions() == [] and not m.conversations.exists(sid)
        assert m.store.ledger_of(sid) == []
        assert not (notes.root / ".freshline" / "turns" / f"{sid}.lock").exists()
    finally:
        m.close()
    code, _, err = cli(notes, "session", "rm", "not an id")
    assert code == 2 and err.count("\n") == 1


def test_rm_removes_an_isolated_sessions_worktree(code_ws: Path) -> None:
    m = SessionManager(Workspace(code_ws).config())
    try:
        sid = m.new("code", channel=Channel.SEND).id
        worktree = m.conversations.worktree(sid)
        assert worktree.is_dir()
        lifecycle.remove(m, [sid])
        assert not worktree.exists()
        assert "freshline" not in git(code_ws, "worktree", "list")
        assert git(code_ws, "for-each-ref", "refs/freshline") == ""
    finally:
        m.close()


@pytest.fixture
def code_ws(tmp_path: Path) -> Path:
    ws = Workspace(tmp_path / "repo")
    ws.root.mkdir()
    ws.configure({"code": {"include": ["src"], "mode": "isolated"}})
    ws.write("src/a.py", "a = 1\n")
    git(ws.root, "init", "-q", "--initial-branch=main")
    git(ws.root, "add", "src")
    git(ws.root, "commit", "-q", "-m", "start")
    return ws.root


# --- gc -----------------------------------------------------------------------------------


def test_gc_dry_run_changes_nothing(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        sid = chat_session(m, "old")
        m.close_session(sid)
        landing = m.new("notes", external_id="h:1", channel=Channel.HOOK).id  # never used
    finally:
        m.close()
    (notes.root / ".freshline" / "snapshots").mkdir(exist_ok=True)
    (notes.root / ".freshline" / "snapshots" / "gone-0123456789.md").write_text("stale")
    before = tree_state(notes.root / ".freshline")
    code, out, err = cli(notes, "gc", "--older-than", "0", "--dry-run", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert sorted(report["sessions"]) == sorted([sid, landing])
    assert report["dry_run"] and report["bytes_freed"] == 0
    assert report["documents"]
    assert tree_state(notes.root / ".freshline") == before


def test_seen_gc_dry_run_with_nothing_to_do_said_nothing_changed(notes: Workspace) -> None:
    """Seen: `gc --dry-run` said `nothing changed` (say `nothing to remove`)."""
    nothing = r"nothing to remove; freshline's data takes \S+ k?B\n"
    code, out, err = cli(notes, "gc", "--dry-run")
    assert code == 0, err
    assert re.fullmatch(nothing, out), out
    # A real run may still free what the store's own compaction (or git's gc) gave back.
    code, out, err = cli(notes, "gc")
    assert code == 0, err
    assert re.fullmatch(nothing + r"|freed \S+ k?B \(\S+ k?B → \S+ k?B\)\n", out), out


def test_gc_after_rm_frees_the_space_of_what_went(notes: Workspace) -> None:
    data = notes.root / ".freshline"
    m = SessionManager(notes.config())
    try:
        keep = chat_session(m, "keep")
        git(data / "conversations.git", "gc", "-q")  # settle into one pack, as gc would
        baseline = disk_usage(data)
        for i in range(3):
            notes.write(f"notes/d0/new{i}.md", os.urandom(20_000).hex())
            chat_session(m, f"gone {i}")
        grown = disk_usage(data)
        gone = [s.id for s in m.sessions() if s.id != keep]
        lifecycle.remove(m, gone)
    finally:
        m.close()
    code, out, err = cli(notes, "gc", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["bytes_freed"] > 0
    after = disk_usage(data)
    assert after - baseline <= 0.1 * (grown - baseline) + 16_384, (baseline, grown, after)
    fsck = git(data / "conversations.git", "fsck", "--connectivity-only")
    assert "missing" not in fsck
    assert git(data / "conversations.git", "for-each-ref", "--format=%(refname:lstrip=3)") == keep


def test_gc_removes_old_closed_sessions_and_orphans_only(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        closed = chat_session(m, "closed")
        m.close_session(closed)
        active = chat_session(m, "active")
        landing = m.new("other", channel=Channel.CHAT).id
        hook = m.new("notes", external_id="h:1", channel=Channel.HOOK).id
        orphan = chat_session(m, "orphan")
        m.store.session_delete([orphan])  # its conversation outlived its session
        stray = notes.root / ".freshline" / "worktrees" / "deadbeef0000"
        stray.mkdir(parents=True)
        soon = lifecycle.collect(m, older_than=30 * DAY)
        assert soon.sessions == [] and soon.conversations == [] and soon.worktrees == []
        later = lifecycle.collect(m, older_than=30 * DAY, now=time.time() + 31 * DAY)
        assert sorted(later.sessions) == sorted([closed, landing, hook])
        assert later.closed == [hook]
        assert later.conversations == [orphan] and later.worktrees == ["deadbeef0000"]
        assert [s.id for s in m.sessions()] == [active]
        assert m.conversations.refs()[0].conversation == active and not stray.exists()
    finally:
        m.close()


def test_gc_never_prunes_what_a_kept_or_unfinished_turn_needs(notes: Workspace) -> None:
    m = SessionManager(notes.config())
    try:
        keep = chat_session(m, "keep")
        gone = chat_session(m, "gone")
        notes.write("notes/d1/fresh.md", "written after both")
        turn = m.prepare(keep, "in flight")  # its tree is written, not yet recorded
        lifecycle.remove(m, [gone])
        lifecycle.collect(m, older_than=0)
        turn.record([])
        turn.accept()
        send(m, keep, "after", get_backend("echo"))
        head = m.conversations.head(keep)
    finally:
        m.close()
    private = notes.root / PRIVATE
    assert "missing" not in git(private, "fsck", "--connectivity-only", "--no-dangling")
    assert git(private, "cat-file", "blob", f"{head}:notes/d1/fresh.md") == "written after both"
    assert git(private, "for-each-ref", "refs/freshline/pending") == ""


def test_gc_bad_age_is_a_usage_error(notes: Workspace) -> None:
    code, _, err = cli(notes, "gc", "--older-than", "soon")
    assert code == 2 and "--older-than" in err and err.count("\n") == 1


def test_sessions_stored_before_channels_are_told_apart_by_their_external_id(
    tmp_path: Path,
) -> None:
    names = [name for name, _ in MIGRATIONS]
    mine = names.index("sessions: the channel that opened them, last activity, a title")
    conn = sqlite3.connect(tmp_path / DB_NAME)
    for number, (_name, sql) in enumerate(MIGRATIONS[:mine], start=1):
        conn.executescript(sql + f"; PRAGMA user_version = {number};")
    columns = "id, project, state, mode, created_at, resumed_at, manifest_epoch, dirty_key, " \
        "manifest, needs_manifest, resumed, external_id"
    for sid, external, resumed in [("a1", None, None), ("b2", "mcp:9f", 50.0),
                                   ("c3", "claude-code:notes:x", None)]:
        conn.execute(f"INSERT INTO sessions ({columns}) VALUES (?, 'notes', 'active', 'live', "
                     "10.0, ?, 0, 'k', '{}', 0, 0, ?)", (sid, resumed, external))
    conn.commit()
    conn.close()
    sessions = {s.id: s for s in Store(tmp_path).session_list()}
    assert {i: s.channel for i, s in sessions.items()} == {"a1": "send", "b2": "mcp", "c3": "hook"}
    assert sessions["b2"].last_active == 50.0 and sessions["a1"].last_active == 10.0
    assert sessions["a1"].records_conversation and not sessions["c3"].records_conversation
