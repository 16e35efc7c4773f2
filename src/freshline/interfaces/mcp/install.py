"""`freshline mcp install codex`: freshline as an MCP server in Codex CLI's config.toml.

Codex CLI reads its MCP servers from `[mcp_servers.<name>]` in `$CODEX_HOME/config.toml`
(`~/.codex/config.toml` by default). The entry names the running freshline by its absolute
path and the workspace (`--workspace`), marks the server `required` (Codex waits for a
required server at start-up; an optional one that is slow to start has no tools in the
session) and approves its tools (`default_tools_approval_mode = "approve"`: under
`approval_policy = "never"` Codex refuses tools that need approval). The file is edited
with tomlkit, so everything else in it (comments, order, other servers) stays as it was;
installing again replaces freshline's table (idempotent), `--uninstall` removes it.

One owner per conversation: the Codex hook and the MCP server would both tell the same
conversation the same changes, so installing one refuses while the other is installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import Table

from freshline.errors import UsageError
from freshline.interfaces.hook import adapter
from freshline.interfaces.hook.install import (
    Scope,
    is_ours,
    read_settings,
    write_whole,
)
from freshline.interfaces.hook.install import settings_path as hook_settings
from freshline.paths import shown
from freshline.program import executable

SERVER = "freshline"  # the table's name: [mcp_servers.freshline]
STARTUP_TIMEOUT_S = 60  # a first start scans the workspace


def codex_config() -> Path:
    """Codex's config file: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


def server_entry(root: Path, program: list[str] | None = None) -> dict[str, Any]:
    """The `[mcp_servers.freshline]` table serving the workspace at `root`."""
    command, *args = program or executable()
    return {"command": command, "args": [*args, "--workspace", str(root), "mcp"],
            "startup_timeout_sec": STARTUP_TIMEOUT_S, "required": True,
            "default_tools_approval_mode": "approve"}


def read_config(path: Path) -> tomlkit.TOMLDocument:
    """The config as an editable document (empty when there is none); UsageError when it
    is not TOML, or its `mcp_servers` is not a table, so nothing is overwritten."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except UnicodeDecodeError:
        raise UsageError(shown(f"{path} is not UTF-8 text; fix or move it first")) from None
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise UsageError(shown(f"{path} is not valid TOML ({exc}); fix it first")) from None
    if "mcp_servers" in doc and not isinstance(doc["mcp_servers"], dict):
        raise UsageError(shown(f"{path}: mcp_servers is not a table; fix it first"))
    return doc


def installed_in(path: Path) -> bool:
    """Whether the Codex config at `path` has freshline's MCP server."""
    servers = read_config(path).get("mcp_servers")
    return isinstance(servers, dict) and SERVER in servers


def merge(doc: tomlkit.TOMLDocument, entry: dict[str, Any] | None) -> tomlkit.TOMLDocument:
    """A copy of `doc` with freshline's server set to `entry` (None: removed; a
    `mcp_servers` table left empty goes too)."""
    out = tomlkit.parse(tomlkit.dumps(doc))
    servers = out.get("mcp_servers")
    if entry is not None:
        if not isinstance(servers, Table):
            servers = out["mcp_servers"] = tomlkit.table(is_super_table=True)
        table = tomlkit.table()
        table.update(entry)
        table.add(tomlkit.nl())  # a blank line before whatever table follows
        servers[SERVER] = table
    elif isinstance(servers, dict) and SERVER in servers:
        del servers[SERVER]
        if not servers:
            del out["mcp_servers"]
    return out


@dataclass(frozen=True)
class Installed:
    """What `install_codex` did."""

    path: Path
    entry: dict[str, Any] | None  # None after an uninstall
    changed: bool


def install_codex(root: Path, path: Path | None = None, uninstall: bool = False) -> Installed:
    """Install (or remove) freshline's MCP server for the workspace at `root` in the Codex
    config at `path` (default: `codex_config()`)."""
    path = path or codex_config()
    before = read_config(path)
    entry = None if uninstall else server_entry(root)
    if entry is not None:
        refuse_with_hook(root)
    after = merge(before, entry)
    changed = tomlkit.dumps(after) != tomlkit.dumps(before)
    if changed:
        write_whole(path, tomlkit.dumps(after))
    return Installed(path, entry, changed)


def hook_files(root: Path) -> list[Path]:
    """The Codex hook files of the workspace's sessions that hold freshline's hook."""
    codex = adapter("codex")
    places = [hook_settings(codex, scope, root) for scope in Scope]
    return [p for p in places if _has_hook(p)]


def _has_hook(path: Path) -> bool:
    hooks = read_settings(path).get("hooks") or {}
    codex = adapter("codex")
    return any(is_ours(codex, h) for groups in hooks.values() if isinstance(groups, list)
               for g in groups if isinstance(g, dict) for h in g.get("hooks") or [])


def refuse_with_hook(root: Path) -> None:
    """UsageError while freshline's Codex hook is installed: it already delivers."""
    found = hook_files(root)
    if found:
        raise UsageError(shown(
            f"freshline's Codex hook is installed in {found[0]} and already tells Codex what "
            "changed; remove it first (freshline hook install codex --uninstall"
            f"{'' if found[0].is_relative_to(root) else ' --scope user'})"))


def refuse_with_server(path: Path | None = None) -> None:
    """UsageError while freshline's MCP server is in the Codex config: it delivers."""
    path = path or codex_config()
    if installed_in(path):
        raise UsageError(shown(
            f"freshline's MCP server is installed in {path} and already tells Codex what "
            "changed; remove it first (freshline mcp install codex --uninstall)"))
