"""`freshline hook install gemini-cli|codex`: each client's settings file, its entry fields
(Gemini's name and timeout in milliseconds, Codex's timeout in seconds), idempotent, the
user scope, `--uninstall`, and the line saying how to trust Codex's hooks. Run in this
process (the real clients run the installed hooks in tests/integration/)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli.root import app
from freshline.interfaces.hook import adapter
from freshline.interfaces.hook.install import Scope, install
from tests.conftest import Workspace

THEIRS = {"type": "command", "command": "echo hi"}


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def ours(settings: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for g in settings["hooks"][event] for h in g["hooks"] if "freshline" in h["command"]]


def test_gemini_cli_hook_goes_into_gemini_settings(notes: Workspace) -> None:
    path = notes.write(".gemini/settings.json", json.dumps(
        {"model": {"name": "x"}, "hooks": {"BeforeAgent": [{"matcher": "*", "hooks": [THEIRS]}]}}))
    done = install(adapter("gemini-cli"), notes.root, Scope.PROJECT, "notes")
    assert done.changed and done.path == path and done.command is not None
    settings = json.loads(path.read_text())
    assert settings["model"] == {"name": "x"}
    assert set(settings["hooks"]) == {"BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent",
                                      "PreCompress", "SessionEnd"}  # no SessionStart
    assert settings["hooks"]["BeforeAgent"][0] == {"matcher": "*", "hooks": [THEIRS]}
    entry = ours(settings, "BeforeAgent")
    assert entry == [{"name": "freshline", "timeout": 60_000, "type": "command",
                      "command": done.command}]
    words = shlex.split(done.command)
    assert Path(words[0]).is_absolute() and words[-4:] == ["hook", "gemini-cli", "--project",
                                                           "notes"]
    assert str(notes.root) in words
    assert settings["hooks"]["AfterTool"][0]["matcher"] == (
        "read_file|write_file|replace|run_shell_command")
    assert settings["hooks"]["BeforeTool"][0]["matcher"] == "run_shell_command"
    assert settings["hooks"]["PreCompress"][0]["matcher"] == "manual"  # auto: every turn
    # Gemini CLI's listings hide freshline's folder: a line in the workspace's .geminiignore
    ignore = notes.root / ".geminiignore"
    assert ignore.read_text() == ".freshline\n"
    assert not install(adapter("gemini-cli"), notes.root, Scope.PROJECT, "notes").changed
    gone = install(adapter("gemini-cli"), notes.root, Scope.PROJECT, uninstall=True)
    assert gone.changed and json.loads(path.read_text()) == {
        "model": {"name": "x"}, "hooks": {"BeforeAgent": [{"matcher": "*", "hooks": [THEIRS]}]}}
    assert not ignore.exists()


def test_codex_hook_in_the_user_hooks_file(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    done = install(adapter("codex"), notes.root, Scope.USER)
    path = tmp_path / "home" / ".codex" / "hooks.json"
    assert done.path == path
    settings = json.loads(path.read_text())
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit", "PreToolUse",
                                      "PostToolUse", "Stop", "SessionEnd"}
    assert ours(settings, "UserPromptSubmit") == [{"timeout": 60, "type": "command",
                                                   "command": done.command}]
    # Codex clamps a SessionEnd hook's timeout to 3 s (and warns on every run)
    assert ours(settings, "SessionEnd")[0]["timeout"] == 3
    # only the tools freshline follows (every tool's PostToolUse ran the hook before)
    assert settings["hooks"]["PostToolUse"][0]["matcher"] == "Bash|apply_patch"
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "Bash|apply_patch"
    install(adapter("codex"), notes.root, Scope.USER, uninstall=True)
    assert not path.exists() and not path.parent.exists()  # a file left empty goes


def test_codex_install_says_how_to_trust_the_hooks(notes: Workspace) -> None:
    runner = CliRunner()
    done = runner.invoke(app, ["-w", str(notes.root), "hook", "install", "codex", "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["settings"] == str(notes.root / ".codex" / "hooks.json")
    assert "/hooks" in report["to_trust"] and f'[projects."{notes.root}"]' in report["to_trust"]
    human = runner.invoke(app, ["-w", str(notes.root), "hook", "install", "codex"])
    assert "(unchanged)" in human.output and "trust_level" in human.output
    gone = runner.invoke(app, ["-w", str(notes.root), "hook", "install", "codex", "--uninstall",
                               "--json"])
    assert json.loads(gone.output)["to_trust"] is None
    assert not (notes.root / ".codex").exists()


def test_gemini_install_needs_no_trust_step(notes: Workspace) -> None:
    done = CliRunner().invoke(app, ["-w", str(notes.root), "hook", "install", "gemini-cli",
                                    "--json"])
    assert done.exit_code == 0 and json.loads(done.output)["to_trust"] is None



def test_the_geminiignore_line_is_kept_once_beside_the_users_own(notes: Workspace) -> None:
    ignore = notes.write(".geminiignore", "build/\n*.log")
    gemini = adapter("gemini-cli")
    for _ in range(2):
        install(gemini, notes.root, Scope.PROJECT)
    assert ignore.read_text() == "build/\n*.log\n.freshline\n"
    install(gemini, notes.root, Scope.PROJECT, uninstall=True)
    assert ignore.read_text() == "build/\n*.log\n"
