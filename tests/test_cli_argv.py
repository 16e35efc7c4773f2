"""The command line's words before typer: the workspace option anywhere, the hot commands,
and the fast path, which must not load typer, click or rich."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from freshline.interfaces.cli import helptext
from freshline.interfaces.cli.argv import (
    CHANGES,
    PROJECT,
    PROJECTS,
    SCAN,
    SESSIONS,
    STATUS,
    UPDATES,
    VERSION,
    HotCall,
    hoist_workspace,
    hot_command,
    normal_order,
    option_value,
    service_run,
    split_workspace,
    valueless_workspace,
    wants_json,
)

from .conftest import Workspace

HOOK_CLAUDE = "hook claude-code"
WORD = st.sampled_from(["status", "scan", "--json", "-w", "--workspace", "--workspace=x",
                        "-wx", "x", "--", "send", "hi"])


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
        (["acp", "-w", "--", "cat"], ["acp", "-w", "--", "cat"]),  # `--` is not a value
    ],
)
def test_hoist_workspace(args: list[str], hoisted: list[str]) -> None:
    assert hoist_workspace(args) == hoisted


@pytest.mark.parametrize(
    ("args", "ordered"),
    [
        (["--json", "status"], ["status", "--json"]),
        (["-w", "x", "--json", "session", "list"], ["-w", "x", "session", "list", "--json"]),
        (["--json", "status", "-w", "x"], ["-w", "x", "status", "--json"]),
        (["--json", "send", "s", "--", "hi"], ["send", "s", "--json", "--", "hi"]),
        (["--json"], ["--json"]),  # no command: the parser reports it
        (["--json", "--", "x"], ["--json", "--", "x"]),
        (["status", "--json"], ["status", "--json"]),
        (["send", "s", "--", "--json"], ["send", "s", "--", "--json"]),
    ],
)
def test_normal_order_moves_json_after_the_command(args: list[str], ordered: list[str]) -> None:
    assert normal_order(args) == ordered


@given(st.lists(WORD, max_size=12))
def test_normal_order_moves_words_never_adds_or_drops_them(args: list[str]) -> None:
    ordered = normal_order(args)
    assert sorted(ordered) == sorted(args)
    assert normal_order(ordered) == ordered  # idempotent
    assert wants_json(ordered) == wants_json(args)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["status", "-w"], "-w"),
        (["status", "--workspace"], "--workspace"),
        (["acp", "-w", "--", "cat"], "-w"),
        (["status", "-w", "x"], None),
        (["send", "s", "--", "-w"], None),
        ([], None),
    ],
)
def test_valueless_workspace(args: list[str], flag: str | None) -> None:
    assert valueless_workspace(args) == flag




@given(st.lists(WORD, max_size=12))
def test_hoisting_moves_words_never_adds_or_drops_them(args: list[str]) -> None:
    hoisted = hoist_workspace(args)
    assert sorted(hoisted) == sorted(args)
    workspace, rest = split_workspace(args)
    assert [w for w in rest if w not in ("-w", "--workspace")] == [
        w for w in normal_order(rest) if w not in ("-w", "--workspace")
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
        (["--json", "status"], (STATUS, None, frozenset({"--json"}), ())),
        (["project", "list"], (PROJECTS, None, frozenset(), ())),
        (["project", "list", "--json", "-w", "/w"], (PROJECTS, "/w", frozenset({"--json"}), ())),
        (["project", "list", "extra"], None),
        (["status", "-w"], None),  # no value: typer says so, in one line
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


def freshline(*args: str, cwd: Path, stdin: str = "", env: dict[str, str] | None = None
              ) -> subprocess.CompletedProcess[str]:
    code = ("import sys, freshline.interfaces.cli as cli\n"
            "try:\n    cli.main()\nfinally:\n"
            "    heavy = sorted(m for m in ('typer', 'click', 'rich', 'textual', 'openai',\n"
            "        'anthropic', 'mcp', 'freshline.session.manager') if m in sys.modules)\n"
            "    sys.stderr.write('LOADED ' + ' '.join(heavy) + '\\n')\n")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def loaded(done: subprocess.CompletedProcess[str]) -> str:
    return done.stderr.rsplit("LOADED", 1)[1].strip()


@pytest.fixture
def small(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def test_the_hot_commands_load_no_front_end(small: Workspace) -> None:
    for args in (["--version"], ["status"], ["status", "--json"], ["--json", "status"],
                 ["scan", "--json"]):
        done = freshline(*args, cwd=small.root)
        assert done.returncode == 0, done.stderr
        assert loaded(done) == "", args
    assert json.loads(freshline("status", "--json", cwd=small.root).stdout)["projects"]


def test_project_list_loads_no_front_end_and_prints_what_typer_did(small: Workspace) -> None:
    """Seen: `project list` took 16-27 times an empty Python's start-up (typer's)."""
    from typer.testing import CliRunner

    from freshline.interfaces.cli import app

    for flags in ([], ["--json"]):
        done = freshline("project", "list", *flags, cwd=small.root)
        assert done.returncode == 0 and loaded(done) == "", done.stderr
        slow = CliRunner().invoke(app, ["-w", str(small.root), "project", "list", *flags])
        assert done.stdout == slow.stdout
    assert done.stdout.startswith("[") and '"name": "notes"' in done.stdout


def test_help_is_typer_s_then_kept(small: Workspace, tmp_path: Path) -> None:
    """Seen: `--help` took 16-27 times an empty Python's start-up (typer's)."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "80"}
    first = freshline("project", "add", "--help", cwd=small.root, env=env)
    assert first.returncode == 0 and "typer" in loaded(first)
    assert first.stdout.startswith("Usage: freshline project add [OPTIONS]")
    again = freshline("-w", "x", "project", "add", "--help", cwd=small.root, env=env)
    assert again.returncode == 0 and loaded(again) == "" and again.stdout == first.stdout
    unknown = freshline("nosuch", "--help", cwd=small.root, env=env)
    assert unknown.returncode == 2 and "typer" in loaded(unknown)
    argument = freshline("updates", "s1", "--help", cwd=small.root, env=env)
    assert argument.returncode == 0 and argument.stdout.startswith("Usage: freshline updates")
    kept = json.loads((tmp_path / "cache" / "freshline" / "help.json").read_text())["texts"]
    assert list(kept) == ["80 project add"]  # by width; not an error, nor `updates s1`


@pytest.mark.parametrize(("columns", "width"), [("80", 80), ("200", 80), ("60", 60)])
def test_help_is_kept_per_width(
    monkeypatch: pytest.MonkeyPatch, columns: str, width: int
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert helptext._width() == width


def test_the_help_s_key_follows_every_source_file(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    source = tmp_path / "pkg" / "a.py"
    source.write_text("x = 1\n")
    before = list(helptext._sources(str(tmp_path)))
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "pkg" / "notes.txt").write_text("not a source\n")
    assert list(helptext._sources(str(tmp_path))) == before
    source.write_text("x = 2\n")
    os.utime(source, ns=(0, 0))
    assert list(helptext._sources(str(tmp_path))) != before


@pytest.mark.parametrize(("words", "path"), [
    (["--help"], ()), (["project", "add", "--help"], ("project", "add")),
    (["project", "--json", "--help"], None), (["project"], None), ([], None),
    (["--help", "status"], None),
])
def test_the_help_asked_for(words: list[str], path: tuple[str, ...] | None) -> None:
    assert helptext.asked(words) == path


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
