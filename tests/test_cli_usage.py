"""Usage errors, wherever they are made (the root's words or a command's): one line on
standard error, exit 2, nothing on standard output but the JSON object under `--json`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from freshline.interfaces.cli import app

from .conftest import Workspace

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["status", "-w"],
         "error: option -w needs a value: the workspace's folder (see `freshline --help`)"),
        (["status", "--workspace"], "error: option --workspace needs a value"),
        (["--bogus", "status"], "error: No such option: --bogus (see `freshline --help`)"),
        (["status", "--bogus"], "error: No such option: --bogus (see `freshline status --help`)"),
        (["changes", "p", "--channel", "telegram"],
         "error: --channel telegram: not a channel (hook, mcp, chat, send, acp)"),
        (["project", "files", "p", "--channel", "telegram"],
         "error: --channel telegram: not a channel"),
        (["session", "list", "--project"],
         "error: No such option: --project (see `freshline session list --help`)"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(
    two_projects: Workspace, monkeypatch: pytest.MonkeyPatch, args: list[str], line: str
) -> None:
    monkeypatch.chdir(two_projects.root)
    done = runner.invoke(app, args)
    assert done.exit_code == 2 and done.stdout == ""
    assert done.stderr.startswith(line) and len(done.stderr.splitlines()) == 1, done.stderr
    with_json = runner.invoke(app, [*args, "--json"])
    assert with_json.exit_code == 2 and len(with_json.stderr.splitlines()) == 1
    assert json.loads(with_json.stdout)["exit"] == 2


def test_json_before_the_command_is_the_command_s(two_projects: Workspace) -> None:
    """Seen: `freshline --json status` gave a 3-line usage error."""
    done = runner.invoke(app, ["--json", "-w", str(two_projects.root), "status"])
    assert done.exit_code == 0, done.stderr
    assert set(json.loads(done.stdout)["projects"]) == {"p", "q"}
