"""`freshline mcp install codex`: freshline as an MCP server in Codex CLI's config.toml.

Codex CLI reads its MCP servers from `[mcp_servers.<name>]` in the user's
`$CODEX_HOME/config.toml` (`~/.codex/config.toml` by default) and, in a project it trusts,
in the project's `.codex/config.toml`. The entry names the running freshline by its
absolute path and the workspace (`--workspace`) and approves its tools
(`default_tools_approval_mode = "approve"`: under `approval_policy = "never"` Codex refuses
tools that need approval). Where it goes decides whether it is `required` (Codex waits for
a required server at start-up, and will not start without it):

- `project` (the default): the workspace's `.codex/config.toml`, required. Only Codex
  started in this workspace reads it, and a workspace deleted takes it along, so no other
  folder can be stopped by it. Codex reads it only while it trusts the project: the
  install says whether it does, and how to trust it.
- `user`: Codex's own config.toml, not required: every folder reads it, and a required
  server whose workspace was deleted would stop Codex in all of them (with a handshake
  error that does not say why). Codex may then start a turn before the server is up
  (its tools come with the next).

Installing for the project removes an entry of an earlier install that served this same
workspace from the user's config. The file is edited with tomlkit, so everything else in
it (comments, order, other servers) stays as it was; installing again replaces
freshline's table (idempotent), `--uninstall` removes it.

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
from freshline.interfaces.serviceclient import RUNTIME_ENV
from freshline.paths import shown
from freshline.program import executable

SERVER = "freshline"  # the table's name: [mcp_servers.freshline]
STARTUP_TIMEOUT_S = 60  # a first start scans the workspace


def codex_config() -> Path:
    """Codex's config file: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`."""
    home = os.environ.get("CODEX_HOME")
    return (Path(home) if home else Path.home() / ".codex") / "config.toml"


def config_of(scope: Scope, root: Path) -> Path:
    """Where an install of `scope` goes: the workspace's `.codex/config.toml`, or Codex's
    own (`codex_config()`)."""
    return root / ".codex" / "config.toml" if scope is Scope.PROJECT else codex_config()


# Codex starts a server with a short list of variables: without these the server looked
# for the service in another runtime folder than the user's commands and started a second
# (and read another state and config folder, where the user had set one).
FORWARDED = ("XDG_RUNTIME_DIR", RUNTIME_ENV, "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")


def server_entry(
    root: Path, program: list[str] | None = None, required: bool = True
) -> dict[str, Any]:
    """The `[mcp_servers.freshline]` table serving the workspace at `root` (`required`:
    Codex waits for it at start-up, and will not start without it)."""
    command, *args = program or executable()
    return {"command": command, "args": [*args, "--workspace", str(root), "mcp"],
            "startup_timeout_sec": STARTUP_TIMEOUT_S, "required": required,
            "default_tools_approval_mode": "approve", "env_vars": list(FORWARDED)}


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
    return _ours(read_config(path)) is not None


def _ours(doc: tomlkit.TOMLDocument) -> dict[str, Any] | None:
    servers = doc.get("mcp_servers")
    entry = servers.get(SERVER) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def serves(doc: tomlkit.TOMLDocument, root: Path) -> bool:
    """Whether freshline's entry in `doc` serves the workspace at `root`."""
    args = (_ours(doc) or {}).get("args") or []
    return any(a == "--workspace" and i + 1 < len(args) and args[i + 1] == str(root)
               for i, a in enumerate(args))


def trusted(root: Path, path: Path | None = None) -> bool:
    """Whether Codex trusts the project at `root` (or a folder above it), as its own
    config at `path` (default: `codex_config()`) says; a config it cannot read: no."""
    try:
        projects = read_config(path or codex_config()).get("projects")
    except UsageError:
        return False
    if not isinstance(projects, dict):
        return False
    return any(isinstance(projects.get(str(p)), dict)
               and projects[str(p)].get("trust_level") == "trusted"
               for p in (root, *root.parents))


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
    scope: Scope
    entry: dict[str, Any] | None  # None after an uninstall
    changed: bool
    trusted: bool  # Codex trusts the workspace (a project install is read only then)
    dropped: Path | None = None  # an earlier install for this workspace removed from there


def install_codex(
    root: Path, scope: Scope = Scope.PROJECT, path: Path | None = None,
    uninstall: bool = False,
) -> Installed:
    """Install (or remove) freshline's MCP server for the workspace at `root`: for the
    project (required) or for the user (not required), in the Codex config at `path`
    (default: `config_of(scope, root)`). UsageError, and nothing written, for a config
    that is not TOML or an installed Codex hook."""
    path = path or config_of(scope, root)
    before = read_config(path)
    entry = None if uninstall else server_entry(root, required=scope is Scope.PROJECT)
    if entry is not None:
        refuse_with_hook(root)
    user = codex_config()
    earlier = scope is Scope.PROJECT and path != user and serves(read_config(user), root)
    changed = _write(path, before, merge(before, entry))
    if earlier:  # a required entry for this workspace would stop Codex everywhere if it went
        _write(user, read_config(user), merge(read_config(user), None))
    return Installed(path, scope, entry, changed or earlier, trusted(root),
                     user if earlier else None)


def _write(path: Path, before: tomlkit.TOMLDocument, after: tomlkit.TOMLDocument) -> bool:
    """Write `after` over `path` whole when it differs from `before`; whether it did."""
    changed = tomlkit.dumps(after) != tomlkit.dumps(before)
    if changed:
        write_whole(path, tomlkit.dumps(after))
    return changed


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


def refuse_with_server(root: Path) -> None:
    """UsageError while freshline's MCP server is in Codex's config or the workspace's:
    it delivers."""
    for scope in Scope:
        path = config_of(scope, root)
        if installed_in(path):
            flag = " --scope user" if scope is Scope.USER else ""
            raise UsageError(shown(
                f"freshline's MCP server is installed in {path} and already tells Codex what "
                f"changed; remove it first (freshline mcp install codex --uninstall{flag})"))
