"""The conversation commands end to end: send exit codes 3 and 4, sync, diff, log, publish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app

from .conftest import git

runner = CliRunner()


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
    edit = {"tool": "edit", "args": {"path": "src/a.py", "old": "a = 1", "new": "a = 2"}}
    session, model = open_session(repo, tmp_path, [edit, {"say": "done"}], [{"say": "ok"}])
    code, out, err = cli(repo, "send", session, "change a", "--model", model, "--json")
    assert code == 0, err
    commit(repo, "src/a.py", "a = 3\n", "teammate edits the same line")
    log_before = cli(repo, "log", session, "--json")[1]
    code, out, _err = cli(repo, "send", session, "next", "--model", model, "--json")
    assert code == 3
    assert json.loads(out) == {
        "session": session, "accepted": False, "sent": False, "conflicts": ["src/a.py"],
        "error": "merging main conflicts in 1 path", "exit": 3,
    }
    assert cli(repo, "log", session, "--json")[1] == log_before  # nothing recorded
    code, out, err = cli(repo, "sync", session, "main", "--with-conflicts", "--json")
    assert code == 0, err
    assert json.loads(out)["merged"]["conflicts"] == ["src/a.py"]
    code, _out, err = cli(repo, "publish", session, "--branch", "agent/work")
    assert code == 2 and "conflict" in err
    assert "a = 2" in cli(repo, "diff", session)[1]
    last = json.loads(cli(repo, "log", session, "--json")[1])[-1]
    assert last["sync"]["conflicts"] == ["src/a.py"]


def test_rewritten_target_is_exit_4_and_sync_answers_it(repo: Path, tmp_path: Path) -> None:
    session, model = open_session(repo, tmp_path, [{"say": "one"}], [{"say": "two"}])
    commit(repo, "src/b.py", "b = 1\n", "upstream")
    assert cli(repo, "send", session, "first", "--model", model)[0] == 0
    git(repo, "reset", "--quiet", "--hard", "HEAD~1")
    commit(repo, "src/c.py", "c = 1\n", "rewritten history")
    code, _out, err = cli(repo, "send", session, "second", "--model", model)
    assert code == 4 and "sync" in err
    assert cli(repo, "sync", session, "main")[0] == 0
    code, out, err = cli(repo, "send", session, "second", "--model", model, "--json")
    assert code == 0, err
    assert json.loads(out)["accepted"]
