"""`freshline service install`: the service started at login by the system's own manager.

On Linux a systemd user unit, `~/.config/systemd/user/freshline.service`; on macOS a
launchd agent, `~/Library/LaunchAgents/dev.freshline.service.plist`. Either runs
`freshline service run` with this freshline, restarts it when it fails, and leaves it
stopped when it was stopped as asked (`service stop`) or found another one running (exit
2: the one a command started first). Enabling it is the system's command, printed by
`install`. Commands still start the service themselves without it: the unit only starts
it sooner. `render_*` are pure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from freshline.interfaces.service.places import config_dir

UNIT_NAME = "freshline.service"
LABEL = "dev.freshline.service"
DESCRIPTION = "freshline: keeps AI agents' conversations fresh about the files they work on"


@dataclass(frozen=True)
class Unit:
    """A unit file and how to turn it on."""

    path: Path
    text: str
    enable: str  # the command that starts it now and at every login


def render_systemd(command: list[str]) -> str:
    """A systemd user unit running `command`."""
    quoted = " ".join(_systemd_word(w) for w in command)
    return (f"[Unit]\nDescription={DESCRIPTION}\n\n"
            f"[Service]\nExecStart={quoted}\nRestart=on-failure\nRestartPreventExitStatus=2\n\n"
            "[Install]\nWantedBy=default.target\n")


def render_launchd(command: list[str]) -> str:
    """A launchd agent running `command`."""
    arguments = "".join(f"    <string>{escape(w)}</string>\n" for w in command)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
            '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
            '<plist version="1.0">\n<dict>\n'
            f"  <key>Label</key>\n  <string>{LABEL}</string>\n"
            f"  <key>ProgramArguments</key>\n  <array>\n{arguments}  </array>\n"
            "  <key>RunAtLoad</key>\n  <true/>\n"
            "  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n"
            "  </dict>\n</dict>\n</plist>\n")


def _systemd_word(word: str) -> str:
    """A word of ExecStart= as systemd reads it (quoted when it holds a space, `%`
    doubled: systemd expands specifiers)."""
    word = word.replace("%", "%%")
    if any(c in word for c in ' \t"\\') or not word:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def unit(command: list[str], platform: str = sys.platform) -> Unit:
    """The unit of this system for `command`."""
    if platform == "darwin":
        path = Path.home() / "Library" / "LaunchAgents" / f"{LABEL}.plist"
        return Unit(path, render_launchd(command), f"launchctl load -w {path}")
    path = config_dir().parent / "systemd" / "user" / UNIT_NAME
    return Unit(path, render_systemd(command), f"systemctl --user enable --now {UNIT_NAME}")
