"""The command line's words before typer: the workspace option anywhere, the hot commands,
and the fast path, which must not load typer, click or rich."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces.cli.argv import (
    CHANGES,
    PROJECT,
    SCAN,
    SESSIONS,
    STATUS,
    UPDATES,
    VERSION,
    HotCall,
    hoist_workspace,
    hot_command,
    option_value,
    service_run,
    split_workspace,
    wants_json,
)

from .conftest import Workspace

HOOK_CLAUDE = "hook claude-code"


@pytest.mark.parametrize(
    ("args", "hoisted"),
    [
        ([], []),
        (["status"], ["status"]),
        (["status", "--workspace", "w"], ["--workspace", "w", "status"]),
        (["status", "-w", "w", "--json"], ["-w", "w", "status", "--json"]),
        (["project", "add", "p", "--workspace=w"], ["--workspace=w", "project", "add", "p"]),
        (["status", "-ww"], ["-ww", "status"]),
        (["-w", "a", "status", "-w", "b"], ["-w", "a", "-w", "b", "status"]),
        (["status", "--workspace"], ["status", "--workspace"]),  # no value: click says so
        (["send", "s", "--", "-w", "x"], ["send", "s", "--", "-w", "x"]),
        (["send", "s", "--workspace is a flag"], ["send", "s", "--workspace is a flag"]),
    ],
)
def test_hoist_workspace(args: list[str], hoisted: list[str]) -> None:
    assert hoist_workspace(args) == hoisted


WORD = st.sampled_from(["status", "scan", "--json", "-w", "--workspace", "--workspace=x",
                        "-wx", "x", "--", "send", "hi"])


@given(st.lists(WORD, max_size=12))
def test_hoisting_moves_words_never_adds_or_drops_them(args: list[str]) -> None:
    hoisted = hoist_workspace(args)
    assert sorted(hoisted) == sorted(args)
    workspace, rest = split_workspace(args)
    assert [w for w in rest if w not in ("-w", "--workspace")] == [
        w for w in hoist_workspace(rest) if w not in ("-w", "--workspace")
    ]
    assert hoist_workspace(hoisted) == hoisted  # idempotent


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (["--version"], (VERSION, None, frozenset(), ())),
        (["status"], (STATUS, None, frozenset(), ())),
        (["status", "--json", "-w", "/x"], (STATUS, "/x", frozenset({"--json"}), ())),
        (["--workspace=/y", "scan", "--full"], (SCAN, "/y", frozenset({"--full"}), ())),
        (["hook", "claude-code"], (HOOK_CLAUDE, None, frozenset(), ())),
        (["hook", "gemini-cli", "-p", "q"],
         ("hook gemini-cli", None, frozenset({"--project=q"}), ())),
        (["hook", "codex"], ("hook codex", None, frozenset(), ())),
        (["hook", "cursor"], None),
        (["-w", "/w", "hook", "claude-code", "--project", "my notes"],
         (HOOK_CLAUDE, "/w", frozenset({"--project=my notes"}), ())),
        (["hook", "claude-code", "-p", "q"], (HOOK_CLAUDE, None, frozenset({"--project=q"}), ())),
        (["hook", "claude-code", "--project=q"],
         (HOOK_CLAUDE, None, frozenset({"--project=q"}), ())),
        (["hook", "claude-code", "--project"], None),  # no value: typer says so
        (["hook", "claude-code", "-p=q"], None),  # click's value would be "=q"
        (["hook", "claude-code", "-p", "a", "--project", "b"], None),
        (["status", "--project", "q"], None),
        (["hook", "claude-code", "--fallback", "-p", "q"],
         (HOOK_CLAUDE, None, frozenset({"--fallback", "--project=q"}), ())),
        (["hook", "claude-code", "--fallback=1"], None),
        (["watch"], None),
        (["watch", "--list", "--json"], None),
        (["status", "--help"], None),
        (["status", "extra"], None),
        (["scan", "--quiet"], None),
        (["hook"], None),
        (["send", "s", "hi"], None),
        ([], None),
        (["changes", "p", "--since", "3", "--json"],
         (CHANGES, None, frozenset({"--since=3", "--json"}), ("p",))),
        (["changes", "--since=3"], None),  # no project: typer says so
        (["updates", "s1"], (UPDATES, None, frozenset(), ("s1",))),
        (["updates", "s1", "s2"], None),
        (["session", "list", "--json"], (SESSIONS, None, frozenset({"--json"}), ())),
        (["session", "list", "notes"], None),
        (["session", "show", "s1"], None),
    ],
)
def test_hot_command(argv: list[str], call: HotCall | None) -> None:
    assert hot_command(argv) == call


@pytest.mark.parametrize(
    ("argv", "roots"),
    [
        (["service", "run"], []),
        (["service", "run", "--watch", "/a", "--watch=/b"], ["/a", "/b"]),
        (["service", "run", "--watch"], None),  # no value: typer says so
        (["service", "run", "--watch="], None),
        (["service", "run", "--verbose"], None),
        (["service", "status"], None),
        (["-w", "/w", "service", "run"], None),
        ([], None),
    ],
)
def test_the_service_as_commands_start_it(argv: list[str], roots: list[str] | None) -> None:
    assert service_run(argv) == roots


def test_option_value_reads_a_joined_option() -> None:
    assert option_value(frozenset({"--project=a=b"}), PROJECT) == "a=b"
    assert option_value(frozenset({"--json"}), PROJECT) is None


def test_wants_json_stops_at_the_double_dash() -> None:
    assert wants_json(["status", "--json"])
    assert not wants_json(["send", "s", "--", "--json"])


# --- whole processes ------------------------------------------------------------------


def freshline(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    code = ("import sys, freshline.interfaces.cli as cli\n"
            "try:\n    cli.main()\nfinally:\n"
            "    heavy = sorted(m for m in ('typer', 'click', 'rich', 'textual', 'openai',\n"
            "        'anthropic', 'mcp', 'freshline.session.manager') if m in sys.modules)\n"
            "    sys.stderr.write('LOADED ' + ' '.join(heavy) + '\\n')\n")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def loaded(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.rsplit("LOADED", 1)[1].strip()


@pytest.fixture
def small(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def test_the_hot_commands_load_no_front_end(small: Workspace) -> None:
    for args in (["--version"], ["status"], ["status", "--json"], ["scan", "--json"]):
        done = freshline(*args, cwd=small.root)
        assert done.returncode == 0, done.stderr
        assert loaded(done) == "", args
    assert json.loads(freshline("status", "--json", cwd=small.root).stdout)["projects"]


def test_the_service_as_commands_start_it_loads_no_front_end(small: Workspace) -> None:
    """It is up sooner without typer: a second one is refused from the fast path."""
    from .conftest import serving

    with serving():
        done = freshline("service", "run", "--watch", str(small.root), cwd=small.root)
    assert done.returncode == 2 and "the service is already running" in done.stderr
    assert not {"typer", "click", "rich"} & set(loaded(done).split())


@pytest.mark.parametrize(("agent", "event"), [("claude-code", "UserPromptSubmit"),
                                               ("gemini-cli", "BeforeAgent")])
def test_the_hook_with_nothing_to_say_loads_no_front_end(
    small: Workspace, agent: str, event: str
) -> None:
    payload = json.dumps({"hook_event_name": event, "session_id": "c1",
                          "cwd": str(small.root / "notes"), "prompt": "hi"})
    first = freshline("hook", agent, cwd=small.root, stdin=payload)
    assert first.returncode == 0 and "hookSpecificOutput" in first.stdout
    again = freshline("hook", agent, cwd=small.root, stdin=payload)
    assert (again.returncode, again.stdout) == (0, "")
    assert "typer" not in loaded(again) and "rich" not in loaded(again)


def test_both_paths_print_the_same(small: Workspace) -> None:
    from typer.testing import CliRunner

    from freshline.interfaces.cli import app

    fast = freshline("status", cwd=small.root).stdout
    slow = CliRunner().invoke(app, ["--workspace", str(small.root), "status"]).stdout
    assert fast.splitlines()[:2] == slow.splitlines()[:2]


def test_an_error_in_the_fast_path_is_reported_the_same_way(tmp_path: Path) -> None:
    done = freshline("status", "--json", cwd=tmp_path)
    assert done.returncode == 2
    assert json.loads(done.stdout)["exit"] == 2 and "no freshline.toml" in done.stderr
