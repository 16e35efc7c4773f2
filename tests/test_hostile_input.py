"""Hostile input from the command line and the config: option-like names, odd session ids,
deep TOML and out-of-range numbers each get one line and exit 2, and change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from freshline.config import load_config
from freshline.errors import ConfigError, UsageError
from freshline.interfaces.cli import app
from freshline.session import SessionManager

from .conftest import Workspace, git

runner = CliRunner()


def cli(root: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--workspace", str(root), *args])
    return result.exit_code, result.output


def refs(root: Path) -> str:
    return git(root, "for-each-ref", "--format=%(refname) %(objectname)")


OPTION_LIKE = ["--output=x", "-x", "--all", "--git-dir=/tmp/elsewhere", "-h", "--", "-"]


@pytest.mark.parametrize("branch", [*OPTION_LIKE, "@{-1}", "a..b", "a b", "x.lock", "a\0b", ""])
def test_publish_refuses_branch_names_git_would_not_take(
    code: tuple[SessionManager, Path], branch: str
) -> None:
    manager, root = code
    s = manager.new("code")
    git(root, "checkout", "--quiet", "-b", "other")
    git(root, "checkout", "--quiet", "main")  # so @{-1} would name a real branch
    before = refs(root)
    exit_code, output = cli(root, "publish", s.id, f"--branch={branch}")
    assert exit_code == 2, output
    assert output.startswith("error: invalid branch name") and output.count("\n") == 1
    assert refs(root) == before


def test_publish_takes_an_ordinary_branch_name(code: tuple[SessionManager, Path]) -> None:
    manager, root = code
    s = manager.new("code")
    assert cli(root, "publish", s.id, "--branch", "agent/work")[0] == 0
    assert "refs/heads/agent/work" in refs(root)


@pytest.mark.parametrize("rev", [*OPTION_LIKE, "--output=/tmp/freshline-hostile", "main\0"])
def test_sync_and_target_take_revisions_as_data(
    code: tuple[SessionManager, Path], rev: str
) -> None:
    manager, root = code
    s = manager.new("code")
    before = refs(root)
    exit_code, output = cli(root, "sync", s.id, "--", rev)
    assert exit_code == 2 and output.startswith("error: unknown rev") and output.count("\n") == 1
    exit_code, output = cli(root, "session", "new", "--project", "code", f"--target={rev}")
    assert exit_code == 2 and output.startswith("error: unknown rev")
    assert refs(root) == before
    assert not Path("/tmp/freshline-hostile").exists()


def test_a_branch_with_an_option_like_name_is_still_a_revision(
    code: tuple[SessionManager, Path],
) -> None:
    manager, root = code
    s = manager.new("code")
    git(root, "update-ref", "refs/heads/--all", "HEAD")  # made by git itself, not by us
    exit_code, output = cli(root, "sync", s.id, "--", "--all")
    assert exit_code == 0 and "already merged" in output


@pytest.mark.parametrize("session", ["ab\0c", "a\nb", "../x", "a b", "x" * 200, "é", "x/y"])
@pytest.mark.parametrize("command", [
    ["log"], ["diff"], ["send", "{}", "hi"], ["updates"], ["session", "show"], ["session", "close"],
    ["session", "resume"], ["sync", "{}", "main"], ["publish", "{}", "--branch", "b"],
])
def test_odd_session_ids_are_one_line_exit_2(
    code: tuple[SessionManager, Path], session: str, command: list[str]
) -> None:
    _, root = code
    args = [a.format(session) for a in command] if "{}" in command else [*command, session]
    exit_code, output = cli(root, *args)
    assert exit_code == 2, output
    assert output.startswith("error: invalid") and output.count("\n") == 1 and "\0" not in output


def test_the_library_checks_session_ids_before_sql(code: tuple[SessionManager, Path]) -> None:
    manager, _ = code
    with pytest.raises(UsageError, match=r"invalid session id 'a\\x00b'"):
        manager.get("a\0b")
    for odd in ("-x", "--all", "", ".", "a..b"):
        with pytest.raises(UsageError, match="invalid session id"):
            manager.get(odd)


# --- the config -------------------------------------------------------------------------------

DEEP = 100_000
HOSTILE_TOML = [
    "x = " + "[" * DEEP + "]" * DEEP,
    "x = " + "{a = " * DEEP + "1" + "}" * DEEP,
    "[workspace]\nignore = " + "[" * DEEP + "]" * DEEP,
    "[projects.p]\ninclude = [" + "[" * 5 + '"a"' + "]" * 5 + "]",
    "[" + ".".join(["a"] * 5000) + "]",
    "[projects.p.include.deeper]\nx = 1",
]


@pytest.mark.parametrize("text", HOSTILE_TOML, ids=range(len(HOSTILE_TOML)))
def test_deep_or_overnested_toml_is_one_line_exit_2(ws: Workspace, text: str) -> None:
    ws.configure({})
    (ws.root / "freshline.toml").write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(ws.root)
    assert str(info.value).startswith("freshline.toml: ") and "\n" not in str(info.value)
    for command in (["status"], ["project", "add", "q", "--include", "x"]):
        exit_code, output = cli(ws.root, *command)
        assert exit_code == 2 and output.startswith("error: freshline.toml: ")
        assert output.count("\n") == 1
    assert (ws.root / "freshline.toml").read_text() == text + "\n"


@pytest.mark.parametrize(("key", "value"), [
    ("materialize_timeout_s", 9223372036854775807),  # seen: OverflowError in every conversion
    ("materialize_memory_mb", 1 << 50),  # seen: every worker killed
    ("workers", 10_000),
    ("debounce_ms", 10**12),
    ("full_scan_interval", 10**12),
    ("change_log_cap", 10**12),
    ("materialize_timeout_s", 0),
])
def test_numbers_out_of_range_are_refused(ws: Workspace, key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"freshline.toml: workspace.{key}: must be between"):
        ws.configure({}, **{key: value})


def test_the_largest_accepted_numbers_still_work(ws: Workspace) -> None:
    ws.write("notes/a.html", "<p>hello there</p>")
    ws.configure({"p": {"include": ["notes"]}}, materialize_timeout_s=86_400,
                 materialize_memory_mb=1 << 20, workers=64)
    manager = SessionManager(ws.config())
    try:
        result = manager.materialize("p")
    finally:
        manager.close()
    assert result.failures == {} and "notes/a.html" in result.snapshots
