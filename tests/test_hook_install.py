"""`freshline hook install claude-code`: merging into Claude Code's settings (pure), and
the command on a real workspace (the real Claude Code runs it in
tests/integration/test_claude_code.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces.hook.claude_code import ADAPTER, MATCHER
from freshline.interfaces.hook.install import hook_command
from freshline.interfaces.hook.install import is_ours as is_ours_for
from freshline.interfaces.hook.install import merge as merge_for
from freshline.interfaces.hook.install import unmerge as unmerge_for
from freshline.tracker.autowatch import stop as stop_watcher
from freshline.tracker.watchlock import holder as watcher_of
from tests.conftest import Workspace, wait_for

COMMAND = "/opt/fl/bin/freshline --workspace /w hook claude-code"
EVENTS = ADAPTER.events


def merge(settings: dict[str, Any], command: str) -> dict[str, Any]:
    return merge_for(ADAPTER, settings, command)


def unmerge(settings: dict[str, Any]) -> dict[str, Any]:
    return unmerge_for(ADAPTER, settings)


def is_ours(entry: Any) -> bool:
    return is_ours_for(ADAPTER, entry)
THEIRS = {"type": "command", "command": "echo hi"}


def freshline(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "freshline", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_merge_adds_the_hook_for_each_event_and_keeps_the_rest() -> None:
    settings = {"model": "x", "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [THEIRS]}],
                                        "Stop": [{"hooks": [THEIRS]}]}}
    merged = merge(settings, COMMAND)
    assert merged["model"] == "x" and merged["hooks"]["Stop"][0] == {"hooks": [THEIRS]}
    for event in EVENTS:
        ours = [h for g in merged["hooks"][event] for h in g["hooks"] if is_ours(h)]
        assert ours == [{"type": "command", "command": COMMAND}]
    assert merged["hooks"]["PostToolUse"][0] == {"matcher": "Bash", "hooks": [THEIRS]}
    assert settings["hooks"]["PostToolUse"] == [{"matcher": "Bash", "hooks": [THEIRS]}]
    # PostToolUse runs the hook only for the tools freshline follows, PreToolUse only for
    # the shell (its window opens)
    assert merged["hooks"]["PostToolUse"][1]["matcher"] == MATCHER
    assert merged["hooks"]["PreToolUse"][0]["matcher"] == "Bash"
    assert all("matcher" not in g
               for e in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd")
               for g in merged["hooks"][e][-1:])


def test_merge_replaces_an_older_install_and_unmerge_removes_only_ours() -> None:
    old = merge({}, "freshline hook claude-code")  # an install from PATH, before this one
    old["hooks"]["SessionStart"][0]["hooks"].append(THEIRS)
    merged = merge(old, COMMAND)
    commands = [h["command"] for g in merged["hooks"]["SessionStart"] for h in g["hooks"]]
    assert commands == ["echo hi", COMMAND]
    assert unmerge(merged) == {"hooks": {"SessionStart": [{"hooks": [THEIRS]}]}}
    assert unmerge(merge({"a": 1}, COMMAND)) == {"a": 1}


_ENTRY = st.sampled_from([THEIRS, {"type": "command", "command": "freshline hook claude-code"},
                          {"type": "command"}, "junk"])
_GROUP = st.fixed_dictionaries({"hooks": st.lists(_ENTRY, max_size=3)},
                               optional={"matcher": st.sampled_from(["", "Bash"])})
_SETTINGS = st.fixed_dictionaries(
    {}, optional={"hooks": st.dictionaries(st.sampled_from([*EVENTS, "Stop"]),
                                           st.lists(_GROUP, max_size=3)),
                  "model": st.text(max_size=3)})


@given(_SETTINGS)
def test_merge_is_idempotent_and_unmerge_inverts_it(settings: dict[str, Any]) -> None:
    once = merge(settings, COMMAND)
    assert merge(once, COMMAND) == once
    assert unmerge(once) == unmerge(settings)
    assert unmerge(unmerge(settings)) == unmerge(settings)
    assert not any(is_ours(h) for gs in unmerge(once).get("hooks", {}).values()
                   for g in gs if isinstance(g, dict) for h in g.get("hooks", []))


def test_the_command_is_absolute_and_quoted(tmp_path: Path) -> None:
    root = tmp_path / "my vault"
    command = hook_command(ADAPTER, root, "my notes", ["/x y/python", "-m", "freshline"])
    assert shlex.split(command) == ["/x y/python", "-m", "freshline", "--workspace", str(root),
                                    "hook", "claude-code", "--project", "my notes"]


# --- the command ------------------------------------------------------------------------------


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"p": {"include": ["notes"]}})
    return ws


def settings_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_install_writes_a_hook_that_runs_from_anywhere(notes: Workspace, tmp_path: Path) -> None:
    claude_settings = notes.root / ".claude" / "settings.json"
    claude_settings.parent.mkdir()
    claude_settings.write_text('{"permissions": {"allow": ["Bash"]}}\n', encoding="utf-8")
    done = freshline("hook", "install", "claude-code", "--json", cwd=notes.root / "notes")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["settings"] == str(claude_settings) and report["changed"]
    settings = settings_of(claude_settings)
    assert settings["permissions"] == {"allow": ["Bash"]}
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    words = shlex.split(command)
    assert os.path.isabs(words[0]) and words[words.index("--workspace") + 1] == str(notes.root)
    # The command as Claude Code runs it: through a shell, from elsewhere, with a PATH
    # that does not hold freshline.
    payload = json.dumps({"session_id": "s1", "cwd": str(notes.root / "notes"),
                          "hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    try:
        ran = subprocess.run(["/bin/sh", "-c", command], input=payload, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60,
                             env={"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin"})
    finally:  # outside the test's environment, the hook starts a watcher as for a user
        wait_for(lambda: watcher_of(notes.root) is not None)
        assert stop_watcher(notes.root)
    assert ran.returncode == 0, ran.stderr
    assert "notes/a.md" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    again = freshline("hook", "install", "claude-code", "--json", cwd=notes.root)
    assert json.loads(again.stdout)["changed"] is False
    assert settings_of(claude_settings) == settings


def test_uninstall_removes_only_freshline(notes: Workspace) -> None:
    path = notes.root / ".claude" / "settings.json"
    assert freshline("hook", "install", "claude-code", cwd=notes.root).returncode == 0
    data = settings_of(path)
    data["hooks"]["Stop"] = [{"hooks": [THEIRS]}]
    path.write_text(json.dumps(data), encoding="utf-8")
    done = freshline("hook", "install", "claude-code", "--uninstall", cwd=notes.root)
    assert done.returncode == 0 and "removed freshline's hook" in done.stdout
    assert settings_of(path) == {"hooks": {"Stop": [{"hooks": [THEIRS]}]}}


def test_uninstall_removes_a_settings_file_left_holding_nothing(notes: Workspace) -> None:
    """Seen (issue 33): `--uninstall` left `{}` in a `.claude/settings.json` it had created."""
    folder = notes.root / ".claude"
    assert freshline("hook", "install", "claude-code", cwd=notes.root).returncode == 0
    done = freshline("hook", "install", "claude-code", "--uninstall", cwd=notes.root)
    assert done.returncode == 0 and "removed freshline's hook" in done.stdout
    assert not (folder / "settings.json").exists() and not folder.exists()
    folder.mkdir()
    (folder / "agents.md").write_text("mine\n", encoding="utf-8")
    for extra in ([], ["--uninstall"]):
        assert freshline("hook", "install", "claude-code", *extra, cwd=notes.root).returncode == 0
    assert not (folder / "settings.json").exists()
    assert (folder / "agents.md").read_text(encoding="utf-8") == "mine\n"  # theirs stays


def test_user_scope_and_project_option(notes: Workspace) -> None:
    done = freshline("--workspace", str(notes.root), "hook", "install", "claude-code",
                     "--scope", "user", "--project", "p", "--json")
    assert done.returncode == 0, done.stderr
    path = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert json.loads(done.stdout)["settings"] == str(path)
    command = settings_of(path)["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    assert shlex.split(command)[-2:] == ["--project", "p"]


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["claude-code"], "{not json", "is not valid JSON"),
        (["claude-code"], "[1]", "does not hold a JSON object"),
        (["claude-code"], '{"hooks": []}', '"hooks" is not a JSON object'),
        (["cursor"], None, "no hook for agent 'cursor'"),
        (["claude-code", "--scope", "team"], None, "--scope must be project or user"),
        (["claude-code", "--project", "nope"], None, "unknown project 'nope'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(
    notes: Workspace, args: list[str], content: str | None, message: str
) -> None:
    path = notes.root / ".claude" / "settings.json"
    if content is not None:
        path.parent.mkdir()
        path.write_text(content, encoding="utf-8")
    done = freshline("hook", "install", *args, cwd=notes.root)
    assert done.returncode == 2 and message in done.stderr
    assert done.stderr.count("\n") == 1
    assert (path.read_text(encoding="utf-8") if path.exists() else None) == content
