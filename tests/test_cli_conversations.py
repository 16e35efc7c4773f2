"""The conversation commands end to end: send exit codes 3 and 4, sync, diff, log, publish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.agent.backends import get_backend
from freshline.agent.runtime import send
from freshline.config import load_config
from freshline.interfaces.cli import app
from freshline.interfaces.tui import commands
from freshline.session import SessionManager

from .conftest import git

runner = CliRunner()
README = Path(__file__).resolve().parents[1] / "README.md"


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["--workspace", str(root), *args])
    return result.exit_code, result.stdout, result.stderr


def commit(root: Path, rel: str, text: str, message: str) -> None:
    (root / rel).write_text(text)
    git(root, "add", rel)
    git(root, "commit", "--quiet", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "--quiet", "--initial-branch=main")
    (root / "src").mkdir()
    commit(root, "src/a.py", "a = 1\n", "start")
    assert cli(root, "init", str(root))[0] == 0
    assert cli(root, "project", "add", "code", "--include", "src", "--mode", "isolated")[0] == 0
    return root


def open_session(root: Path, tmp_path: Path, *turns: list[dict[str, object]]) -> tuple[str, str]:
    code, out, err = cli(root, "session", "new", "--project", "code", "--json")
    assert code == 0, err
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": list(turns)}))
    return json.loads(out)["id"], f"scripted:{script}"


def test_refresh_conflict_exit_3_then_sync_and_publish(repo: Path, tmp_path: Path) -> None:
    read = {"tool": "read", "args": {"path": "src/a.py"}}  # tools write only what was read
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}}
    session, model = open_session(repo, tmp_path, [read, edit, {"say": "done"}], [{"say": "ok"}])
    code, out, err = cli(repo, "send", session, "change a", "--model", model, "--json")
    assert code == 0, err
    commit(repo, "src/a.py", "a = 3\n", "teammate edits the same line")
    log_before = cli(repo, "log", session, "--json")[1]
    code, out, _err = cli(repo, "send", session, "next", "--model", model, "--json")
    assert code == 3
    assert json.loads(out) == {
        "session": session, "accepted": False, "sent": False, "stopped": "conflict",
        "message": "merging main conflicts in 1 path: content: src/a.py",
        "conflicts": [{"path": "src/a.py", "kind": "content"}],
        "error": "merging main conflicts in 1 path: content: src/a.py", "exit": 3,
    }
    code, _out, err = cli(repo, "send", session, "next", "--model", model)
    assert code == 3 and "content: src/a.py" in err and "conflict (content): src/a.py" in err
    assert cli(repo, "log", session, "--json")[1] == log_before  # nothing recorded
    code, out, err = cli(repo, "sync", session, "main", "--with-conflicts", "--json")
    assert code == 0, err
    conflicts = [{"kind": "content", "paths": ["src/a.py"]}]
    assert json.loads(out)["merged"]["conflicts"] == conflicts
    code, _out, err = cli(repo, "publish", session, "--branch", "agent/work")
    assert code == 3 and "unresolved conflicts (content: src/a.py)" in err
    code, out, err = cli(repo, "diff", session)
    assert "a = 2" in out and "unresolved conflict (content): src/a.py" in err
    assert json.loads(cli(repo, "diff", session, "--json")[1])["conflicts"] == conflicts
    last = json.loads(cli(repo, "log", session, "--json")[1])[-1]
    assert last["sync"]["conflicts"] == conflicts


def test_rewritten_target_is_exit_4_and_sync_answers_it(repo: Path, tmp_path: Path) -> None:
    session, model = open_session(repo, tmp_path, [{"say": "one"}], [{"say": "two"}])
    commit(repo, "src/b.py", "b = 1\n", "upstream")
    assert cli(repo, "send", session, "first", "--model", model)[0] == 0
    git(repo, "reset", "--quiet", "--hard", "HEAD~1")
    commit(repo, "src/c.py", "c = 1\n", "rewritten history")
    code, _out, err = cli(repo, "send", session, "second", "--model", model)
    assert code == 4 and "sync" in err
    code, out, _err = cli(repo, "send", session, "second", "--model", model, "--json")
    assert code == 4 and json.loads(out)["stopped"] == "sync_required"
    assert cli(repo, "sync", session, "main")[0] == 0
    code, out, err = cli(repo, "send", session, "second", "--model", model, "--json")
    assert code == 0, err
    assert json.loads(out)["accepted"]


def upstream_commits(root: Path, count: int) -> None:
    """`count` commits on main, each adding src/up/<i>.py (fast-import: no checkout)."""
    lines = []
    for i in range(count):
        start = [f"from {git(root, 'rev-parse', 'main')}"] if i == 0 else []
        body = f"u = {i}\n"
        lines += ["commit refs/heads/main", f"committer t <t@t> {1700000000 + i} +0000",
                  "data 2", "up", *start, f"M 100644 inline src/up/{i}.py",
                  f"data {len(body)}", body]
    git(root, "fast-import", "--quiet", input="\n".join(lines).encode())
    git(root, "reset", "--quiet", "--hard")  # the checkout follows its branch


def test_seen_updates_tells_the_truth_about_the_next_send(repo: Path, tmp_path: Path) -> None:
    """Seen: `updates` said "nothing new" when the target had moved 80 commits, when the
    next send would stop on a conflict (exit 3), and when a sync was required (exit 4)."""
    read = {"tool": "read", "args": {"path": "src/a.py"}}  # tools write only what was read
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}}
    session, model = open_session(repo, tmp_path, [read, edit, {"say": "done"}],
                                  [{"say": "ok"}])
    assert cli(repo, "send", session, "change a", "--model", model)[0] == 0
    upstream_commits(repo, 80)
    head = git(repo, "rev-parse", f"refs/freshline/conversations/{session}")

    code, out, err = cli(repo, "updates", session)
    assert code == 0, err
    assert "Refreshed from main (" in out and "/src/up/79.py" in out
    code, out, _err = cli(repo, "updates", session, "--json")
    preview = json.loads(out)["blocks"]
    assert code == 0 and preview.count("/src/up/") == 80
    assert git(repo, "rev-parse", f"refs/freshline/conversations/{session}") == head
    worktree = repo / ".freshline" / "worktrees" / session
    assert not (worktree / "src/up/0.py").exists()  # the preview moved nothing
    code, out, err = cli(repo, "send", session, "next", "--model", model, "--json")
    assert code == 0, err
    assert json.loads(out)["wire_prompt"].startswith(preview)

    commit(repo, "src/a.py", "a = 3\n", "teammate edits the same line")
    code, out, err = cli(repo, "updates", session)
    assert code == 3 and "conflict (content): src/a.py" in err and out == ""
    code, out, _err = cli(repo, "updates", session, "--json")
    assert code == 3 and json.loads(out) == {
        "session": session, "blocks": None, "stopped": "conflict",
        "message": "merging main conflicts in 1 path: content: src/a.py",
        "conflicts": [{"path": "src/a.py", "kind": "content"}],
        "error": "merging main conflicts in 1 path: content: src/a.py", "exit": 3,
    }

    git(repo, "reset", "--quiet", "--hard", "HEAD~81")
    commit(repo, "src/c.py", "c = 1\n", "rewritten history")
    code, out, err = cli(repo, "updates", session)
    assert code == 4 and "sync" in err
    code, out, _err = cli(repo, "updates", session, "--json")
    assert code == 4 and json.loads(out)["stopped"] == "sync_required"


def test_seen_chat_updates_command_tells_the_truth(repo: Path, tmp_path: Path) -> None:
    session, _model = open_session(repo, tmp_path, [{"say": "ok"}])
    manager = SessionManager(load_config(repo))
    try:
        updates = commands.Invocation(commands.Command.UPDATES)
        upstream_commits(repo, 3)
        reply = commands.run(manager, session, updates)
        assert not reply.error and "/src/up/2.py" in reply.body
        send(manager, session, "refresh", get_backend("echo"))
        worktree = manager.conversations.worktree(session)
        (worktree / "src/a.py").write_text("a = 'agent'\n")
        commit(repo, "src/a.py", "a = 'teammate'\n", "conflicting")
        reply = commands.run(manager, session, updates)
        assert reply.error and "src/a.py (content)" in reply.body
        git(repo, "reset", "--quiet", "--hard", "HEAD~4")
        commit(repo, "src/c.py", "c = 1\n", "rewritten history")
        reply = commands.run(manager, session, updates)
        assert reply.error and "sync is required" in reply.title
    finally:
        manager.close()


def test_seen_modify_delete_conflicts_are_named_by_kind_and_block_publish(
    repo: Path, tmp_path: Path
) -> None:
    """Seen: the agent edits two files, upstream deletes both; `sync --with-conflicts`
    reported markers that were not there and `publish` exited 0 with both files back."""
    (repo / "src/tests").mkdir()
    commit(repo, "src/CHANGES.rst", "changes\n", "changes")
    commit(repo, "src/tests/test_utils.py", "t = 1\n", "tests")
    edits = [{"tool": "read", "args": {"path": "src/CHANGES.rst"}},
             {"tool": "read", "args": {"path": "src/tests/test_utils.py"}},
             {"tool": "edit", "args": {"path": "src/CHANGES.rst", "old": "changes",
                                       "new": "changes, edited"}},
             {"tool": "edit", "args": {"path": "src/tests/test_utils.py", "old": "t = 1",
                                       "new": "t = 2"}},
             {"say": "edited both"}]
    resolve = [{"tool": "delete", "args": {"path": "src/CHANGES.rst"}},
               {"tool": "write", "args": {"path": "src/tests/test_utils.py",
                                          "content": "t = 2\n"}},
               {"say": "resolved"}]
    session, model = open_session(repo, tmp_path, edits, resolve)
    assert cli(repo, "send", session, "edit both", "--model", model)[0] == 0
    git(repo, "rm", "--quiet", "src/CHANGES.rst", "src/tests/test_utils.py")
    git(repo, "commit", "--quiet", "-m", "upstream deletes both")

    code, out, err = cli(repo, "sync", session, "main", "--with-conflicts")
    assert code == 0, err
    assert "conflict (modify/delete): src/CHANGES.rst" in out and "markers" not in out
    assert "conflict (modify/delete): src/tests/test_utils.py" in out
    code, _out, err = cli(repo, "publish", session, "--branch", "agent/x")
    assert code == 3
    assert "modify/delete: src/CHANGES.rst, src/tests/test_utils.py" in err
    assert git(repo, "branch", "--list", "agent/x") == ""
    assert "unresolved conflict (modify/delete): src/CHANGES.rst" in cli(repo, "diff", session)[2]

    code, out, err = cli(repo, "send", session, "resolve", "--model", model)
    assert code == 0, err
    code, out, err = cli(repo, "publish", session, "--branch", "agent/x", "--json")
    assert code == 0, err
    published = json.loads(out)["commit"]
    assert git(repo, "ls-tree", "-r", "--name-only", published).split() == [
        "src/a.py", "src/tests/test_utils.py"]


def conflicted(repo: Path, tmp_path: Path) -> tuple[str, str]:
    """A session whose agent changed src/a.py, and a teammate's commit on main that changed
    the same line: the next send stops on a content conflict."""
    read = {"tool": "read", "args": {"path": "src/a.py"}}  # tools write only what was read
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}}
    session, model = open_session(repo, tmp_path, [read, edit, {"say": "done"}],
                                  [{"say": "resolved"}])
    assert cli(repo, "send", session, "change a", "--model", model)[0] == 0
    commit(repo, "src/a.py", "a = 3\n", "teammate edits the same line")
    return session, model


def test_seen_the_conflict_hint_names_the_command_that_resolves_it(
    repo: Path, tmp_path: Path
) -> None:
    """Seen: `send` and `updates` said "the message was not sent; resolve with `freshline
    sync`" (`updates` sends nothing), and `freshline sync S main` failed the same way."""
    session, model = conflicted(repo, tmp_path)
    error = "error: merging main conflicts in 1 path: content: src/a.py\n"
    hint = (f"resolve with `freshline sync {session} main --with-conflicts` (records the "
            "conflicts for the agent to resolve)\n")
    listed = "  conflict (content): src/a.py\n"
    code, out, err = cli(repo, "send", session, "next", "--model", model)
    assert (code, out, err) == (3, "", f"{error}{listed}the message was not sent; {hint}")
    assert err.replace(session, "3f2a9c1b7d4e") in README.read_text()  # the README shows it
    code, out, err = cli(repo, "updates", session)
    assert (code, out, err) == (3, "", f"{error}{listed}the next send will stop; {hint}")
    code, out, err = cli(repo, "sync", session, "main")
    assert (code, out, err) == (3, "", f"{error}{listed}nothing was merged; {hint}")
    code, out, err = cli(repo, "sync", session, "main", "--with-conflicts")
    assert code == 0, err
    code, out, err = cli(repo, "send", session, "resolve it", "--model", model, "--json")
    assert code == 0, err


def test_seen_a_sync_required_hint_names_the_session(repo: Path, tmp_path: Path) -> None:
    session, model = open_session(repo, tmp_path, [{"say": "one"}])
    commit(repo, "src/b.py", "b = 1\n", "upstream")
    assert cli(repo, "send", session, "first", "--model", model)[0] == 0
    last = git(repo, "rev-parse", "main")[:12]
    git(repo, "reset", "--quiet", "--hard", "HEAD~1")
    commit(repo, "src/c.py", "c = 1\n", "rewritten history")
    code, _out, err = cli(repo, "updates", session)
    assert code == 4 and err == (
        f"error: target main no longer descends from the last refresh {last}: "
        f"run `freshline sync {session} REV` to choose what to merge\n"
        "the next send will stop\n")


def test_seen_scripted_sends_play_the_turn_after_those_recorded(
    repo: Path, tmp_path: Path
) -> None:
    """Seen: each `send --model scripted:FILE` is a new process, and every one played the
    script's turn 1."""
    session, model = open_session(repo, tmp_path, [{"say": "one"}], [{"say": "two"}])
    said = [json.loads(cli(repo, "send", session, message, "--model", model, "--json")[1])
            for message in ("first", "second", "third")]
    assert [s["response"] for s in said] == [
        "one", "two", "scripted: no more turns in script.json (played 2)"]


def test_seen_send_prints_each_text_on_its_line_and_each_tool_call(
    repo: Path, tmp_path: Path
) -> None:
    """Seen: `send` ran the model's texts together (`Let me look.I added…`) and never
    mentioned its tool calls, one of them refused."""
    steps = [{"say": "Let me look."}, {"tool": "read", "args": {"path": "src/a.py"}},
             {"tool": "read", "args": {"path": "../etc/passwd"}},
             {"say": "I read it."}]
    session, model = open_session(repo, tmp_path, steps)
    code, out, err = cli(repo, "send", session, "look", "--model", model)
    assert code == 0, err
    assert out == (
        "Let me look.\n"
        '  tool read {"path": "src/a.py"} → a = 1\n'
        '  tool read {"path": "../etc/passwd"} → read: ../etc/passwd: \'..\' escapes the '
        "workspace; refused\n"
        "I read it.\n")
    refused = out.splitlines()[2].strip()
    assert f"`{refused}`" in " ".join(README.read_text().split())


def test_seen_a_ref_is_named_one_way_in_blocks(repo: Path, tmp_path: Path) -> None:
    """Seen: `Refreshed from refs/heads/main (…)` on an automatic refresh, `Refreshed from
    main (…)` after `sync`."""
    session, model = open_session(repo, tmp_path, [{"say": "one"}])
    assert cli(repo, "send", session, "first", "--model", model)[0] == 0
    commit(repo, "src/b.py", "b = 1\n", "upstream")
    refreshed = cli(repo, "updates", session)[1]
    assert cli(repo, "sync", session, "main")[0] == 0
    synced = cli(repo, "updates", session)[1]
    assert "Refreshed from main (" in refreshed and "Refreshed from main (" in synced
    assert "refs/heads" not in refreshed + synced
