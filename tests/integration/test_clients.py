"""The suite installs its own clients, and says in one line when it cannot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.clients import CACHE, EVERY_CLIENT, require_node


@pytest.mark.parametrize("missing", ["node", "npm"])
def test_without_node_or_npm_the_suite_fails_in_one_line(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in {"node", "npm"} - {missing}:
        (bin_dir / tool).write_text("#!/bin/sh\n", encoding="utf-8")
        (bin_dir / tool).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(pytest.fail.Exception) as failed:
        require_node()
    message = str(failed.value)
    assert message == f"the real-client tests need Node.js and npm on PATH: {missing} not found"
    assert failed.value.pytrace is False


def test_the_makefiles_installer_without_node_exits_1_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "tests.integration.clients"],
                          cwd=CACHE.parents[1], env={"PATH": str(tmp_path)},
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == ("clients: the real-client tests need Node.js and npm on PATH: "
                           "node not found\n")


def test_clients_are_pinned_and_installed_inside_the_repository() -> None:
    for client in EVERY_CLIENT:
        assert client.version.count(".") == 2 and client.version[0].isdigit()
        assert client.folder.is_relative_to(CACHE)
    ignored = (CACHE.parents[1] / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".cache/" in ignored
