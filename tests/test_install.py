"""What a new user meets before the first command: the license the project carries, and
how `freshline` gets onto PATH (`make install`)."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

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
