"""Where the service keeps what outlives it: this user's state and config folders.

The socket, lock and record live in the runtime folder (`serviceclient.runtime_dir`),
which a reboot empties. What must survive it lives here:

    ${XDG_STATE_HOME:-~/.local/state}/freshline/workspaces.json   every workspace used
    ${XDG_STATE_HOME:-~/.local/state}/freshline/service.log       what the service did
    ${XDG_CONFIG_HOME:-~/.config}/freshline/hooks.json            the http hooks' port
                                                                  and secret (0600)
"""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """This user's freshline state folder (not made here)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "freshline"


def config_dir() -> Path:
    """This user's freshline config folder (not made here)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "freshline"


def log_path() -> Path:
    """The service's log."""
    return state_dir() / "service.log"


def registry_path() -> Path:
    """The list of workspaces the service watches again when it starts."""
    return state_dir() / "workspaces.json"


def hooks_path() -> Path:
    """The http hooks' port and secret."""
    return config_dir() / "hooks.json"


def write_private(path: Path, text: str) -> None:
    """Write `path` whole or not at all, readable by this user alone (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
