"""`freshline mcp install codex`: the `[mcp_servers.freshline]` table in Codex CLI's
config.toml, everything else in the file kept byte for byte; idempotent; `--uninstall`;
for the project (required, in the workspace's .codex/config.toml) or for the user (not
required); one owner per conversation with the Codex hook; bad input refused whole. In
this process (Codex itself starts the installed server in tests/integration/test_codex.py)."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli.root import app
from freshline.interfaces.mcp.install import FORWARDED, merge, server_entry
from tests.conftest import Workspace

THEIRS = '''# my settings
model = "gpt-5"  # the default

[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]

[projects."/home/u/code"]
trust_level = "trusted"
'''
runner = CliRunner()


@pytest.fixture
def notes(ws: Workspace) -> Workspace:
    ws.write("notes/a.md", "# A\n")
    ws.configure({"notes": {"include": ["notes"]}})
    return ws


def freshline(notes: Workspace, *args: str) -> tuple[int, dict[str, Any] | str]:
    done = runner.invoke(app, ["-w", str(notes.root), *args, "--json"])
    try:
        return done.exit_code, json.loads(done.stdout)
    except ValueError:
        return done.exit_code, done.output


def test_install_adds_the_server_and_keeps_the_rest(notes: Workspace, tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(THEIRS, encoding="utf-8")
    code, report = freshline(notes, "mcp", "install", "codex", "--config", str(path))
    assert code == 0 and isinstance(report, dict) and report["changed"]
    text = path.read_text(encoding="utf-8")
    assert text.startswith(THEIRS[:THEIRS.index("[projects")])  # kept as it was, comments too
    assert text.endswith("\"XDG_CACHE_HOME\"]\n\n" + THEIRS[THEIRS.index("[projects"):])
    table = tomllib.loads(text)["mcp_servers"]
    assert set(table) == {"docs", "freshline"}
    ours = table["freshline"]
    # Codex's own config serves every folder: required, a deleted workspace stops them all
    assert ours["required"] is False and ours["default_tools_approval_mode"] == "approve"
    assert ours["env_vars"] == list(FORWARDED)
    assert report["scope"] == "user" and report["required"] is False
    assert Path(ours["command"]).is_absolute()
    assert ours["args"][-3:] == ["--workspace", str(notes.root), "mcp"]
    assert freshline(notes, "mcp", "install", "codex", "--config", str(path))[1]["changed"] is False  # type: ignore[index]
    code, report = freshline(notes, "mcp", "install", "codex", "--config", str(path),
                             "--uninstall")
    assert code == 0 and path.read_text(encoding="utf-8") == THEIRS


def test_the_user_scope_s_config_is_codex_home(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    code, report = freshline(notes, "mcp", "install", "codex", "--scope", "user")
    assert code == 0 and isinstance(report, dict)
    assert report["config"] == str(tmp_path / "codex-home" / "config.toml")
    assert report["required"] is False and report["to_trust"] is None
    freshline(notes, "mcp", "install", "codex", "--scope", "user", "--uninstall")
    assert tomllib.loads((tmp_path / "codex-home" / "config.toml").read_text()) == {}


def test_the_default_installs_for_the_project_required_and_says_about_trust(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen: the install wrote a global `required` server; with its workspace deleted,
    Codex would not start in any folder. For the project, only this workspace needs it."""
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    code, report = freshline(notes, "mcp", "install", "codex")
    assert code == 0 and isinstance(report, dict)
    path = notes.root / ".codex" / "config.toml"
    assert report["config"] == str(path) and report["scope"] == "project"
    assert tomllib.loads(path.read_text())["mcp_servers"]["freshline"]["required"] is True
    assert not (home / "config.toml").exists()
    assert f'[projects."{notes.root}"] trust_level' in str(report["to_trust"])
    home.mkdir()
    (home / "config.toml").write_text(f'[projects."{notes.root}"]\ntrust_level = "trusted"\n')
    code, report = freshline(notes, "mcp", "install", "codex")
    assert report["changed"] is False and report["to_trust"] is None  # type: ignore[index]
    done = runner.invoke(app, ["-w", str(notes.root), "mcp", "install", "codex"])
    assert "for this project, required" in done.stdout and "trust" not in done.stdout


def test_a_project_install_removes_an_earlier_global_one_for_this_workspace(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    home.mkdir()
    earlier = server_entry(notes.root, ["/old/freshline"])  # as installs used to: required
    import tomlkit

    (home / "config.toml").write_text(THEIRS + tomlkit.dumps({"mcp_servers": {
        "freshline": earlier}}), encoding="utf-8")
    code, report = freshline(notes, "mcp", "install", "codex")
    assert code == 0 and report["removed_from"] == str(home / "config.toml")  # type: ignore[index]
    assert "freshline" not in tomllib.loads((home / "config.toml").read_text())["mcp_servers"]
    other = server_entry(tmp_path / "elsewhere", ["/old/freshline"])  # another workspace's
    (home / "config.toml").write_text(tomlkit.dumps({"mcp_servers": {"freshline": other}}))
    code, report = freshline(notes, "mcp", "install", "codex")
    assert report["removed_from"] is None  # type: ignore[index]
    assert "freshline" in tomllib.loads((home / "config.toml").read_text())["mcp_servers"]


@pytest.mark.parametrize(("args", "message"), [
    (["--scope", "everywhere"], "--scope must be project or user"),
    (["--scope", "project", "--config", "/tmp/x.toml"], "--config names Codex's own config"),
])
def test_bad_scopes_are_refused(notes: Workspace, args: list[str], message: str) -> None:
    code, said = freshline(notes, "mcp", "install", "codex", *args)
    assert code == 2 and message in str(said)
    assert not (notes.root / ".codex").exists()


def test_merge_replaces_an_earlier_entry() -> None:
    import tomlkit

    old = tomlkit.parse('[mcp_servers.freshline]\ncommand = "/old/freshline"\nenv = {A = "1"}\n')
    entry = server_entry(Path("/w"), ["/new/freshline"])
    assert tomllib.loads(tomlkit.dumps(merge(old, entry)))["mcp_servers"]["freshline"] == entry
    assert tomlkit.dumps(merge(old, None)) == ""


def test_one_owner_the_hook_or_the_server(
    notes: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert freshline(notes, "hook", "install", "codex")[0] == 0
    code, said = freshline(notes, "mcp", "install", "codex")
    assert code == 2 and "hook is installed" in str(said) and "--uninstall" in str(said)
    assert not (tmp_path / "home" / ".codex" / "config.toml").exists()
    freshline(notes, "hook", "install", "codex", "--uninstall")
    assert freshline(notes, "mcp", "install", "codex")[0] == 0
    code, said = freshline(notes, "hook", "install", "codex")
    assert code == 2 and "MCP server is installed" in str(said)
    assert not (notes.root / ".codex" / "hooks.json").exists()
    freshline(notes, "mcp", "install", "codex", "--uninstall")
    assert freshline(notes, "mcp", "install", "codex", "--scope", "user")[0] == 0
    code, said = freshline(notes, "hook", "install", "codex")
    assert code == 2 and "--uninstall --scope user" in str(said)


@pytest.mark.parametrize(("content", "message"), [
    ("model = \n", "is not valid TOML"),
    ("mcp_servers = 3\n", "mcp_servers is not a table"),
    (b"\xff\xfe", "is not UTF-8"),
])
def test_bad_config_is_one_line_exit_2_and_left_alone(
    notes: Workspace, tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "config.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    before = path.read_bytes()
    code, said = freshline(notes, "mcp", "install", "codex", "--config", str(path))
    assert code == 2 and message in str(said) and path.read_bytes() == before


def test_an_unknown_client_is_refused(notes: Workspace) -> None:
    code, said = freshline(notes, "mcp", "install", "cursor")
    assert code == 2 and "no MCP install for client 'cursor'" in str(said)


def test_the_entry_runs_this_freshline() -> None:
    entry = server_entry(Path("/w"), ["/opt/py", "-m", "freshline"])
    assert shlex.join([entry["command"], *entry["args"]]) == \
        "/opt/py -m freshline --workspace /w mcp"
