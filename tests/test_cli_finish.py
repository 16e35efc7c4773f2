"""The command line's finish: flags anywhere, errors one way, messages people can read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app
from freshline.session import SessionManager
from freshline.tracker import Tracker
from freshline.tracker.hashing import blob_id_bytes

from .conftest import Workspace, git
from .fake_model_servers import FakeModelServer, FakeReply, closed_port
from .test_cli import as_json as ok_json
from .test_cli import run

runner = CliRunner()


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    assert runner.invoke(app, ["init", str(ws.root)]).exit_code == 0
    ws.write("notes/a.md", "# A\n")
    assert run(ws, "project", "add", "notes", "--include", "notes")[0] == 0
    return ws


def new_session(ws: Workspace) -> str:
    return str(ok_json(ws, "session", "new", "--project", "notes")["id"])  # type: ignore[index]


# --- the workspace option, before or after the command ------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["status", "--workspace", "{root}", "--json"],
        ["status", "--json", "-w", "{root}"],
        ["project", "list", "--workspace={root}", "--json"],
        ["--workspace", "/nonexistent", "status", "--json", "-w", "{root}"],  # the last wins
    ],
)
def test_the_workspace_option_goes_before_or_after_the_command(
    notes: Workspace, args: list[str]
) -> None:
    result = runner.invoke(app, [a.format(root=notes.root) for a in args])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)


def test_the_mcp_help_example_works(notes: Workspace) -> None:
    result = runner.invoke(app, ["mcp", "--workspace", str(notes.root), "--help"])
    assert result.exit_code == 0 and "Serve the workspace" in result.stdout


# --- errors: one line, and JSON under --json ----------------------------------------------


def test_every_error_under_json_is_a_json_object_too(notes: Workspace) -> None:
    session = new_session(notes)
    assert run(notes, "session", "close", session)[0] == 0
    code, out, err = run(notes, "send", session, "hello", "--json")
    assert code == 2
    assert json.loads(out) == {"error": f"session '{session}' is closed; run `freshline "
                               f"session resume {session}`", "exit": 2}
    assert err.startswith("error: session") and len(err.strip().splitlines()) == 1
    code, out, err = run(notes, "status", "--json", "--bogus")
    assert code == 2 and json.loads(out)["exit"] == 2
    assert "No such option: --bogus" in err and "freshline status --help" in err
    code, out, _err = run(notes, "project", "show", "nope", "--json")
    assert code == 2 and "unknown project 'nope'" in json.loads(out)["error"]


def test_sync_required_exit_4_is_json_too(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    ws = Workspace(root)
    ws.write("src/a.py", "a = 1\n")
    assert runner.invoke(app, ["init", str(root)]).exit_code == 0
    run(ws, "project", "add", "code", "--include", "src", "--mode", "isolated")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "start")
    session = str(ok_json(ws, "session", "new", "--project", "code")["id"])  # type: ignore[index]
    ws.write("src/b.py", "b = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "upstream")
    assert run(ws, "send", session, "first")[0] == 0
    git(root, "reset", "--quiet", "--hard", "HEAD~1")
    ws.write("src/c.py", "c = 1\n")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "rewritten history")
    code, out, err = run(ws, "send", session, "again", "--json")
    assert code == 4, err
    assert json.loads(out)["exit"] == 4 and err.startswith("error:")


def test_unknown_session_is_one_message_everywhere(notes: Workspace) -> None:
    commands = [["send", "nope", "hi"], ["updates", "nope"], ["log", "nope"], ["diff", "nope"],
                ["sync", "nope", "main"], ["publish", "nope", "--branch", "x"],
                ["session", "show", "nope"], ["session", "resume", "nope"],
                ["session", "close", "nope"]]
    for args in commands:
        code, _out, err = run(notes, *args)
        assert (code, err.strip()) == (2, "error: unknown session 'nope' (see `freshline "
                                          "session list`)"), args


def test_an_unknown_project_suggests_the_closest_name(notes: Workspace) -> None:
    code, _out, err = run(notes, "project", "show", "noets")
    assert code == 2 and "unknown project 'noets' (did you mean 'notes'?)" in err
    code, _out, err = run(notes, "changes", "zzz")
    assert code == 2 and "unknown project 'zzz'" in err and "did you mean" not in err


# --- send -----------------------------------------------------------------------------


@pytest.mark.parametrize("message", ["", "   ", "\n"])
def test_send_refuses_an_empty_message(notes: Workspace, message: str) -> None:
    session = new_session(notes)
    code, _out, err = run(notes, "send", session, message)
    assert code == 2 and "the message is empty" in err
    assert ok_json(notes, "log", session)[-1]["author"] == "system"  # type: ignore[index]


def test_send_dash_reads_the_message_from_standard_input(notes: Workspace) -> None:
    session = new_session(notes)
    long = "line one\n" + "x" * 300_000 + "\nlast line\n"
    code, out, err = run(notes, "send", session, "-", "--json", stdin=long)
    assert code == 0, err
    assert json.loads(out)["wire_prompt"].endswith("x" * 10 + "\nlast line")
    code, _out, err = run(notes, "send", session, "-", stdin="")
    assert code == 2 and "standard input was empty" in err


# --- model backends: their own exit code, precise messages, retries ----------------------


EXIT_BACKEND = 5


@pytest.mark.parametrize(
    ("model", "base_url", "message"),
    [
        ("openai:m", None, "openai: no API key: set OPENAI_API_KEY"),
        ("anthropic:m", None, "anthropic: no API key: set ANTHROPIC_API_KEY"),
        ("openai:m", "localhost:8080", "openai: bad base URL 'localhost:8080'"),
        ("openai:m", "http://", "openai: bad base URL 'http://'"),
        ("openai:m", "http://127.0.0.1:{closed}/v1", "openai: cannot reach http://127.0.0.1:"),
    ],
)
def test_backend_failures_have_their_own_exit_code(
    notes: Workspace, model: str, base_url: str | None, message: str
) -> None:
    session = new_session(notes)
    args = ["send", session, "hi", "--model", model]
    if base_url:
        args += ["--base-url", base_url.format(closed=closed_port())]
    code, out, err = run(notes, *args, "--json")
    assert code == EXIT_BACKEND, err
    assert message in err and len(err.strip().splitlines()) == 1
    assert json.loads(out)["exit"] == EXIT_BACKEND


def test_a_refused_key_says_so(notes: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    session = new_session(notes)
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with FakeModelServer(api_key="right") as server:
        code, _out, err = run(notes, "send", session, "hi", "--model", "openai:m",
                              "--base-url", server.openai_url)
    assert code == EXIT_BACKEND
    assert "authentication failed (HTTP 401)" in err and "check OPENAI_API_KEY" in err


def retrying_config(ws: Workspace, retries: int) -> None:
    path = ws.root / "freshline.toml"
    path.write_text(path.read_text().replace(
        "[model]\n", f"[model]\nretries = {retries}\nretry_wait_s = 0.01\n"))


def test_429_and_5xx_are_retried_with_backoff_then_reported(notes: Workspace) -> None:
    session = new_session(notes)
    retrying_config(notes, 2)
    with FakeModelServer() as server:
        server.queue(FakeReply(status=429), FakeReply(status=503), FakeReply(text="at last"))
        code, out, err = run(notes, "send", session, "hi", "--model", "openai:m",
                             "--base-url", server.openai_url, "--json")
        assert code == 0, err
        assert json.loads(out)["response"] == "at last" and len(server.requests) == 3
        server.queue(FakeReply(status=500), FakeReply(status=502), FakeReply(status=500))
        code, _out, err = run(notes, "send", session, "again", "--model", "openai:m",
                              "--base-url", server.openai_url)
    assert code == EXIT_BACKEND
    assert "server error (HTTP 500)" in err and "(after 2 retries)" in err


def test_model_default_and_base_url_come_from_the_config(notes: Workspace) -> None:
    session = new_session(notes)
    with FakeModelServer() as server:
        path = notes.root / "freshline.toml"
        path.write_text(path.read_text().replace(
            "[model]\n", f'[model]\ndefault = "openai:local"\nbase_url = "{server.openai_url}"\n'))
        server.queue(FakeReply(text="from the local server"))
        code, out, err = run(notes, "send", session, "hi", "--json")
        assert code == 0, err
        assert json.loads(out)["response"] == "from the local server"
        assert server.requests[0].body["model"] == "local"
    code, out, _err = run(notes, "send", session, "hi", "--model", "echo", "--json")
    assert code == 0 and json.loads(out)["response"].startswith("echo:")


# --- projects ---------------------------------------------------------------------------


BRACKETED = ["[status:active]", "[[Reading List]]", "Inbox/[ab].md", "#paper"]


def test_project_list_and_show_print_bracketed_patterns_literally(notes: Workspace) -> None:
    args = ["project", "add", "odd"]
    for pattern in BRACKETED:
        args += ["--include", pattern]
    assert run(notes, *args)[0] == 0
    _code, listed, _err = run(notes, "project", "list")
    _code, shown, _err = run(notes, "project", "show", "odd")
    for pattern in BRACKETED:
        assert pattern in listed and pattern in shown


def test_project_add_says_how_many_files_match_and_warns_at_zero(notes: Workspace) -> None:
    notes.write("papers/x.pdf", "%PDF")
    code, out, err = run(notes, "project", "add", "papers", "--include", "*.pdf")
    assert code == 0 and "added project papers: 1 file matches now" in out and err == ""
    code, out, err = run(notes, "project", "add", "empty", "--include", "nothing/here")
    assert code == 0 and "0 files match now" in out
    assert "warning: no file matches empty yet" in err


def test_project_rm_keeps_the_other_projects_comments(notes: Workspace) -> None:
    path = notes.root / "freshline.toml"
    path.write_text(
        "[workspace]\n\n# the notes\n[projects.a]\ninclude = ['notes']\n\n"
        "# papers: keep forever\n# (really)\n[projects.b]\ninclude = ['papers']\n\n"
        "# code last\n[projects.c]\ninclude = ['src']  # the sources\n")
    assert run(notes, "project", "rm", "a")[0] == 0
    text = path.read_text()
    assert "# papers: keep forever\n# (really)\n[projects.b]" in text
    assert "# the notes" not in text
    assert run(notes, "project", "rm", "c")[0] == 0
    text = path.read_text()
    assert "# papers: keep forever" in text and "# code last" not in text
    assert "[projects.c]" not in text


# --- init inside a workspace --------------------------------------------------------------


def test_init_inside_a_workspace_refuses_unless_nested(notes: Workspace) -> None:
    inner = notes.root / "notes" / "inner"
    result = runner.invoke(app, ["init", str(inner)])
    assert result.exit_code == 2
    assert f"inside the workspace {notes.root}" in result.stderr and "--nested" in result.stderr
    assert not inner.exists()
    assert runner.invoke(app, ["init", str(inner), "--nested"]).exit_code == 0
    (inner / "note.md").write_text("inner note")
    Tracker(notes.config()).scan()
    paths = [e.path for e in Tracker(notes.config()).files_in_scope("notes")]
    assert "notes/inner/note.md" in paths
    assert not [p for p in paths if "freshline.toml" in p or ".freshline" in p]


# --- session show, diff, log, plurals ------------------------------------------------------


def test_session_show_reads_as_prose(notes: Workspace) -> None:
    session = new_session(notes)
    _code, out, _err = run(notes, "session", "show", session)
    assert f"Session {session} on project notes (live), new" in out
    assert "The next send delivers the project manifest (built at epoch 0)." in out
    for raw in ("None", "[]", "{}", "cursor:", "created_at"):
        assert raw not in out
    assert not re.search(r"\d+\.\d{3,}", out)  # no raw timestamps
    run(notes, "send", session, "hi")
    notes.write("notes/b.md", "b")
    run(notes, "scan")
    _code, out, _err = run(notes, "session", "show", session)
    assert "told everything up to epoch 0" in out and "delivers 1 epoch of changes" in out


def test_diff_has_json(notes: Workspace) -> None:
    session = new_session(notes)
    data = ok_json(notes, "diff", session)
    assert data == {"session": session, "head": data["head"], "patch": "",  # type: ignore[index]
                    "conflicts": [], "live": {"first_turn": 0, "last_turn": 0, "changes": []}}


def test_a_live_diff_is_empty_and_says_what_the_workspace_did(notes: Workspace) -> None:
    """Seen: `diff` on a live session showed the user's own edits as the conversation's
    own work, though a live agent cannot write."""
    session = new_session(notes)
    run(notes, "send", session, "one")
    other = new_session(notes)  # (an unused session of the project is handed out again)
    notes.write("notes/a.md", "# A, edited by hand\n")
    written = b"# B, by another session's tool\n"
    notes.write("notes/b.md", written.decode())
    manager = SessionManager(notes.config())
    try:
        manager.tracker.flush()
        manager.record_write(other, "notes/b.md", blob_id_bytes(written))
    finally:
        manager.close()
    run(notes, "send", session, "two")
    code, out, err = run(notes, "diff", session)
    assert code == 0 and out == ""
    assert err.splitlines() == [
        f"no changes of its own: session {session} is live, its agent only reads your "
        "workspace",
        "between turn 1 and turn 2 the workspace changed in 2 paths:",
        "  notes/a.md (changed outside freshline)",
        f"  notes/b.md (written by session {other})",
    ]
    live = ok_json(notes, "diff", session)["live"]  # type: ignore[index]
    assert live["changes"] == [{"path": "notes/a.md", "by": "outside", "name": ""},
                               {"path": "notes/b.md", "by": "session", "name": other}]


def test_log_is_one_line_per_event(notes: Workspace) -> None:
    session = new_session(notes)
    run(notes, "send", session, "first line\nsecond line")
    _code, out, _err = run(notes, "log", session)
    lines = out.strip().splitlines()
    assert len(lines) == len(ok_json(notes, "log", session)) == 3  # type: ignore[arg-type]
    assert "user" in lines[1] and "first line second line" in lines[1]


def test_counts_are_in_the_right_plural(notes: Workspace) -> None:
    _code, out, _err = run(notes, "scan")
    assert "1 file scanned" in out
    _code, out, _err = run(notes, "project", "files", "notes")
    assert out.strip().endswith("\n1 file") or out.strip() == "notes/a.md\n1 file"


# --- chat and completion -------------------------------------------------------------------


def test_chat_refuses_without_a_terminal_and_leaves_no_session(notes: Workspace) -> None:
    code, _out, err = run(notes, "chat", "--project", "notes")
    assert code == 2 and "chat needs a terminal" in err
    assert ok_json(notes, "session", "list") == []


def test_the_version(notes: Workspace) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and re.fullmatch(r"freshline \d+\.\d+\.\d+\n", result.stdout)


def test_install_completion_and_complete(tmp_path: Path) -> None:
    # The shell named, not detected from the process tree (typer's own switch for tests):
    # a run whose parents hold no shell got `Shell None is not supported`.
    env = {**os.environ, "HOME": str(tmp_path), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    done = subprocess.run([sys.executable, "-m", "freshline", "--install-completion", "bash"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "freshline.sh"
    assert "_FRESHLINE_COMPLETE" in script.read_text()
    assert str(script) in (tmp_path / ".bashrc").read_text()
    asked = subprocess.run([sys.executable, "-m", "freshline"], capture_output=True, text=True,
                           timeout=60, env=env | {"_FRESHLINE_COMPLETE": "complete_bash",
                                                  "COMP_WORDS": "freshline project s",
                                                  "COMP_CWORD": "2"})
    assert asked.stdout.split() == ["show"]
