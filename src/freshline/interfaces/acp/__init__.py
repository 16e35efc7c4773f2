"""`freshline acp -- AGENT…`: freshline for any Agent Client Protocol client.

An ACP client (Zed, JetBrains, Neovim plugins, obsidian-copilot…) starts `freshline acp`
as its agent; the proxy starts the real agent and passes every message between them,
adding what freshline knows: the manifest on a session's first prompt, the updates on
every later one, acknowledged only once the agent took them (`proxy.py`), and the read
ledger fed from the agent's file reads and writes through the client (`desk.py`). The
messages it reads or rewrites are pure functions of their JSON (`messages.py`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from freshline.config import find_workspace, load_config
from freshline.errors import UsageError, WorkspaceError
from freshline.interfaces.acp.desk import Desk
from freshline.interfaces.acp.proxy import Proxy
from freshline.interfaces.acp.rpc import stdio_streams

__all__ = ["Desk", "Proxy", "check_command", "check_streams", "run_acp"]


def check_command(command: Sequence[str], workspace: Path | None, project: str | None) -> None:
    """Refuse, before anything starts, what cannot work: no agent command, one not found,
    a `workspace` that is not one, a `project` it does not have (UsageError and kin). A
    `project` with no `workspace` is checked against the cwd's workspace, if there is
    one (the sessions' own, from their cwd, are checked as they open)."""
    if not command:
        raise UsageError("give the agent to start after `--`: freshline acp -- AGENT [ARGS...]")
    if shutil.which(command[0]) is None:
        raise UsageError(f"agent command not found: {command[0]}")
    if workspace is None and project is not None:
        try:
            workspace = find_workspace(Path.cwd())
        except WorkspaceError:
            return
    if workspace is not None:
        config = load_config(find_workspace(Path.cwd(), workspace))
        if project is not None:
            config.project(project)


def check_streams(streams: Sequence[tuple[str, TextIO]] = ()) -> None:
    """Refuse standard streams an ACP client cannot be on (UsageError): asyncio speaks
    over pipes, sockets and terminals only, and a client always starts the proxy on
    pipes; `freshline acp -- agent > out.txt` is not one."""
    for name, stream in streams or (("input", sys.stdin), ("output", sys.stdout)):
        try:
            mode = os.fstat(stream.fileno()).st_mode
        except (AttributeError, OSError, ValueError):
            continue  # no descriptor (an embedding's stream): the loop says what it can
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            what = "a directory" if stat.S_ISDIR(mode) else "a file"
            raise UsageError(f"standard {name} is {what}: freshline acp talks to an ACP "
                             "client over pipes (let the client start it)")


def run_acp(
    command: Sequence[str], workspace: Path | None = None, project: str | None = None
) -> int:
    """Proxy this process's stdin/stdout (the client) to the agent `command` until either
    side hangs up; the agent's exit status when it ended first, else 0."""
    check_command(command, workspace, project)
    check_streams()
    root = find_workspace(Path.cwd(), workspace) if workspace is not None else None
    return asyncio.run(_serve(Desk(root, project), command))


async def _serve(desk: Desk, command: Sequence[str]) -> int:
    reader, writer = await stdio_streams()
    return await Proxy(desk).serve(reader, writer, command)
