"""`freshline hook install claude-code`: merging into Claude Code's settings (pure), and
the command on a real workspace: the http hooks to the service with their stand-in
command, and the command at SessionStart (the real Claude Code runs them in
tests/integration/test_claude_code.py)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces import autostart, serviceclient
from freshline.interfaces.hook.claude_code import ADAPTER, HTTP_EVENTS, MATCHER
from freshline.interfaces.hook.install import HttpHooks, fallback_command, hook_command
from freshline.interfaces.hook.install import is_ours as is_ours_for
from freshline.interfaces.hook.install import merge as merge_for
from freshline.interfaces.hook.install import unmerge as unmerge_for
from freshline.interfaces.service import secret
from tests.conftest import Workspace, process_state, wait_for

COMMAND = "/opt/fl/bin/freshline --workspace /w hook claude-code"
EVENTS = ADAPTER.events


URL = ("http://127.0.0.1:4000/freshline/" + "ab" * 32 + "/hook/claude-code"
       "?workspace=%2Fw")
HTTP = HttpHooks(URL, fallback_command(COMMAND, "/run/user/1/freshline/hooks.pid"))


def merge(settings: dict[str, Any], command: str,
          http: HttpHooks | None = None) -> dict[str, Any]:
    return merge_for(ADAPTER, settings, command, http)


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


def test_with_http_hooks_every_event_posts_to_the_service_and_the_start_stays_a_command(
) -> None:
    merged = merge({}, COMMAND, HTTP)["hooks"]
    assert merged["SessionStart"] == [{"hooks": [{"type": "command", "command": COMMAND}]}]
    assert set(HTTP_EVENTS) == set(merged) - {"SessionStart"}
    for event in HTTP_EVENTS:  # each with its stand-in, for a service that is gone
        [group] = merged[event]
        assert group["hooks"] == [
            {"type": "http", "url": URL, "timeout": 30},
            {"type": "command", "command": "/bin/sh", "args": ["-c", HTTP.fallback]}]
        assert all(is_ours(h) for h in group["hooks"])
    assert merged["PostToolUse"][0]["matcher"] == MATCHER
    assert unmerge(merge(merge({}, COMMAND, HTTP), COMMAND)) == {}
    assert not is_ours({"type": "http", "url": "http://127.0.0.1:1/hook/claude-code?x"})
    assert not is_ours({"type": "http", "url": URL.replace("claude-code", "codex")})


def test_the_stand_in_runs_the_hook_only_when_no_service_answers_http_hooks(
    tmp_path: Path
) -> None:
    pid_file = tmp_path / "hooks.pid"
    line = fallback_command("echo ran", str(pid_file))

    def ran() -> str:
        return subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True,
                              check=True).stdout

    assert ran() == "ran --fallback\n"  # no pid file: no service answers them
    pid_file.write_text(f"{os.getpid()}\n")
    assert ran() == ""  # a live process answers them
    zombie = subprocess.Popen(["true"])
    wait_for(lambda: process_state(zombie.pid) == "Z")
    pid_file.write_text(f"{zombie.pid}\n")
    assert ran() == "ran --fallback\n"  # killed, not reaped yet: `kill -0` still finds it
    zombie.wait()
    assert ran() == "ran --fallback\n"  # reaped: its pid file is left behind
    pid_file.write_text("")
    assert ran() == "ran --fallback\n"


@given(_SETTINGS, st.booleans())
def test_merge_is_idempotent_and_unmerge_inverts_it(settings: dict[str, Any],
                                                     http: bool) -> None:
    once = merge(settings, COMMAND, HTTP if http else None)
    assert merge(once, COMMAND, HTTP if http else None) == once
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


def as_a_user_runs(command: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A hook command as Claude Code runs it: through a shell, from elsewhere, with a PATH
    that does not hold freshline, outside the tests (a service it starts is a user's, of
    this test's user)."""
    keep = ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME")
    env = {k: os.environ[k] for k in keep} | {"PATH": "/usr/bin:/bin"}
    return subprocess.run(["/bin/sh", "-c", command], input=stdin, cwd=cwd,
                          capture_output=True, text=True, timeout=60, env=env)


def context_of(printed: str) -> str:
    text: str = json.loads(printed)["hookSpecificOutput"]["additionalContext"]
    return text


def test_install_writes_http_hooks_to_the_service_and_a_command_that_runs_from_anywhere(
    notes: Workspace, tmp_path: Path
) -> None:
    shared = notes.root / ".claude" / "settings.json"
    shared.parent.mkdir()
    old = merge({"permissions": {"allow": ["Bash"]}}, "/old/freshline hook claude-code")
    shared.write_text(json.dumps(old), encoding="utf-8")  # an install of the command hooks
    done = freshline("hook", "install", "claude-code", "--json", cwd=notes.root / "notes")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    private = notes.root / ".claude" / "settings.local.json"
    assert report["settings"] == str(private) and report["changed"]
    assert report["moved_from"] == str(shared)
    assert settings_of(shared) == {"permissions": {"allow": ["Bash"]}}  # ours left it
    address = secret.load()
    assert address is not None
    assert os.stat(secret.hooks_path()).st_mode & 0o777 == 0o600
    hooks = settings_of(private)["hooks"]
    [start] = hooks["SessionStart"][0]["hooks"]
    words = shlex.split(start["command"])
    assert os.path.isabs(words[0]) and words[words.index("--workspace") + 1] == str(notes.root)
    http, stand_in = hooks["UserPromptSubmit"][0]["hooks"]
    assert http["url"] == report["url"] == address.url("claude-code", notes.root)
    assert (stand_in["command"], stand_in["args"][0]) == ("/bin/sh", "-c")
    assert stand_in["args"][1] == fallback_command(start["command"], os.path.join(
        serviceclient.runtime_dir(), serviceclient.HOOKS_PID_NAME))
    payload = json.dumps({"session_id": "s1", "cwd": str(notes.root / "notes"),
                          "hook_event_name": "SessionStart", "source": "startup"})
    try:  # no service yet: the start answers itself, then starts the service
        ran = as_a_user_runs(start["command"], payload, tmp_path)
        assert ran.returncode == 0, ran.stderr
        assert "notes/a.md" in context_of(ran.stdout)
        wait_for(lambda: os.path.exists(os.path.join(serviceclient.runtime_dir(),
                                                     serviceclient.HOOKS_PID_NAME)))
        prompt = payload.replace("SessionStart", "UserPromptSubmit")
        assert as_a_user_runs(stand_in["args"][1], prompt, tmp_path).stdout == ""
    finally:
        autostart.stop()
    notes.write("notes/b.md", "# B\n")
    told = as_a_user_runs(stand_in["args"][1], prompt, tmp_path)  # no service: it stands in
    assert "notes/b.md" in context_of(told.stdout)
    wait_for(autostart.running, "the service the stand-in started again")
    autostart.stop()
    again = freshline("hook", "install", "claude-code", "--json", cwd=notes.root)
    assert json.loads(again.stdout)["changed"] is False


def test_uninstall_removes_only_freshline(notes: Workspace) -> None:
    path = notes.root / ".claude" / "settings.local.json"
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
    assert not (folder / "settings.local.json").exists() and not folder.exists()
    folder.mkdir()
    (folder / "agents.md").write_text("mine\n", encoding="utf-8")
    for extra in ([], ["--uninstall"]):
        assert freshline("hook", "install", "claude-code", *extra, cwd=notes.root).returncode == 0
    assert not (folder / "settings.local.json").exists()
    assert (folder / "agents.md").read_text(encoding="utf-8") == "mine\n"  # theirs stays


def test_user_scope_and_project_option(notes: Workspace) -> None:
    done = freshline("--workspace", str(notes.root), "hook", "install", "claude-code",
                     "--scope", "user", "--project", "p", "--json")
    assert done.returncode == 0, done.stderr
    path = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    assert json.loads(done.stdout)["settings"] == str(path)
    command = settings_of(path)["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    assert shlex.split(command)[-2:] == ["--project", "p"]
    url = settings_of(path)["hooks"]["SessionEnd"][0]["hooks"][0]["url"]
    assert url.endswith(f"?workspace={quote(str(notes.root), safe='')}&project=p")


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
    path = notes.root / ".claude" / "settings.local.json"
    if content is not None:
        path.parent.mkdir()
        path.write_text(content, encoding="utf-8")
    done = freshline("hook", "install", *args, cwd=notes.root)
    assert done.returncode == 2 and message in done.stderr
    assert done.stderr.count("\n") == 1
    assert (path.read_text(encoding="utf-8") if path.exists() else None) == content


def test_command_hooks_for_a_claude_code_too_old_to_post(notes: Workspace) -> None:
    """Claude Code before 2.1.63 (the Agent SDK inside claude-code-acp bundles 2.1.44)
    refuses a settings file holding an http hook: every hook is lost. `--command-hooks`
    writes the command on every event, in the shared file, and leaves the private one."""
    assert freshline("hook", "install", "claude-code", cwd=notes.root).returncode == 0
    done = freshline("hook", "install", "claude-code", "--command-hooks", "--json",
                     cwd=notes.root)
    report = json.loads(done.stdout)
    shared = notes.root / ".claude" / "settings.json"
    assert report["settings"] == str(shared) and report["url"] is None
    assert report["moved_from"] == str(notes.root / ".claude" / "settings.local.json")
    assert not (notes.root / ".claude" / "settings.local.json").exists()
    hooks = settings_of(shared)["hooks"]
    assert {h["type"] for groups in hooks.values() for g in groups for h in g["hooks"]} == {
        "command"}
    assert set(hooks) == set(EVENTS)
