"""What a new user meets before the first command: the license the project carries, and
how `freshline` gets onto PATH (`make install`)."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_project_carries_the_apache_license() -> None:
    """Seen: no license, so nobody might legally use it."""
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (project["license"], project["license-files"]) == ("Apache-2.0", ["LICENSE"])
    assert importlib.metadata.metadata("freshline")["License-Expression"] == "Apache-2.0"
    assert "[Apache License, Version 2.0](LICENSE)" in (ROOT / "README.md").read_text()


def tools(folder: Path, *names: str) -> Path:
    """A folder for PATH holding only `names`: links to this machine's programs, or, for
    pipx and uv, a program that must never run (`make -n` only names it)."""
    folder.mkdir()
    for name in names:
        real = shutil.which(name)
        if name in ("pipx", "uv") or real is None:
            (folder / name).write_text("#!/bin/sh\nexit 99\n")
            (folder / name).chmod(0o755)
        else:
            (folder / name).symlink_to(real)
    return folder


def make(path: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`make` in the checkout with only `path` on PATH (`.venv` taken as built)."""
    env = {"PATH": str(path), "HOME": str(home)}
    return subprocess.run([shutil.which("make") or "make", "-o", ".venv/bin/freshline", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


def test_make_install_links_freshline_onto_path(tmp_path: Path) -> None:
    """Seen: the Quick start never said how to run `freshline` (command not found)."""
    path = tools(tmp_path / "tools", "mkdir", "ln")
    bindir = tmp_path / "home" / ".local" / "bin"
    done = make(path, tmp_path / "home", "install")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == (
        f"freshline is installed in {bindir}, which is not on your PATH: add "
        f"'export PATH=\"{bindir}:$PATH\"' to your shell's profile")
    version = subprocess.run(["freshline", "--version"], capture_output=True, text=True,
                             env={**os.environ, "PATH": f"{bindir}:/usr/bin:/bin"})
    assert version.stdout.startswith("freshline ")
    again = make(Path(f"{bindir}:{path}"), tmp_path / "home", "install")
    assert again.stdout.splitlines()[-1] == f"freshline is on your PATH: {bindir}/freshline"


@pytest.mark.parametrize(("present", "command"), [
    (("pipx", "uv"), "pipx install --force --editable ."),
    (("uv",), "uv tool install --force --editable ."),
])
def test_make_install_prefers_pipx_then_uv(
    tmp_path: Path, present: tuple[str, ...], command: str
) -> None:
    path = tools(tmp_path / "tools", *present)
    done = make(path, tmp_path, "-n", "install")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"{path}/{command}"
