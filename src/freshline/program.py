"""How this freshline is run again from anywhere: the absolute command a hook is installed
with, and the one a block names for the agent to run (its shell may have no freshline on
PATH, and may stand in any directory)."""

from __future__ import annotations

import sys
from pathlib import Path


def executable() -> list[str]:
    """The running freshline, as an absolute command: its console script when that is
    what runs, else this Python with `-m freshline`."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "freshline" and script.is_file():
        return [str(script.resolve())]
    return [str(Path(sys.executable).absolute()), "-m", "freshline"]


def workspace_command(root: Path | str) -> tuple[str, ...]:
    """The words that run freshline on the workspace at `root` from any directory."""
    return (*executable(), "--workspace", str(root))
