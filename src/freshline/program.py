"""How this freshline is run again from anywhere: the absolute command a hook is installed
with, and the one a block names for the agent to run (its shell may have no freshline on
PATH, and may stand in any directory)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path


def executable() -> list[str]:
    """The running freshline, as an absolute command: its console script when that is
    what runs, else this Python with `-m freshline`."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "freshline" and script.is_file():
        return [str(script.resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "freshline"]


def as_typed() -> tuple[str, bool]:
    """How a person runs this freshline from a shell here, and whether that is by name:
    `freshline` when PATH finds this very program, else its absolute command."""
    words = executable()
    found = shutil.which("freshline")
    if found is not None and Path(found).resolve() == Path(words[0]).resolve():
        return "freshline", True
    return shlex.join(words), False


def workspace_command(root: Path | str) -> tuple[str, ...]:
    """The words that run freshline on the workspace at `root` from any directory."""
    return (*executable(), "--workspace", str(root))
