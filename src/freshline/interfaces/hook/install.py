"""`freshline hook install <agent>`: write the hook into the agent's settings file.

The hook command names the running executable by its absolute path (Claude Code runs
hooks with a PATH of its own, where `freshline` may be missing: the hook would then fail
with exit 127 and nothing logged) and the workspace (`--workspace`), so it works from any
directory. It is registered for the events its adapter names (`Adapter.events`; an event
with a matcher, such as Claude Code's PostToolUse, only for the tools the read ledger
follows; an entry's fields per event where the client wants them, such as Codex's
SessionEnd timeout), and in the project scope its lines in the workspace's files
(`Adapter.extras`: `.freshline` in Gemini CLI's `.geminiignore`). Installing merges into
the settings file, keeping everything else in it;
installing again replaces freshline's entries (idempotent); `--uninstall` removes them and
nothing else, and a settings file left holding nothing goes (its folder too, when empty).

`merge` and `unmerge` are pure functions of the settings' JSON (a `"hooks"` table of
event → groups of commands, the shape Claude Code's and its followers' settings share).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.compiled import compile_package
from freshline.errors import UsageError
from freshline.interfaces.hook.protocol import Adapter
from freshline.paths import shown
from freshline.program import executable


class Scope(StrEnum):
    """Which of the agent's settings files to write."""

    PROJECT = "project"  # <workspace>/<its settings>: sessions started there
    USER = "user"  # ~/<its settings>: every session of this user


def settings_path(adapter: Adapter, scope: Scope, root: Path) -> Path:
    """The agent's settings file of `scope` (the project's is the workspace root's)."""
    base = Path.home() if scope is Scope.USER else root
    return base / adapter.settings


def hook_command(
    adapter: Adapter, root: Path, project: str | None = None, program: list[str] | None = None
) -> str:
    """The shell command the agent runs for every event."""
    words = [*(program or executable()), "--workspace", str(root), "hook", adapter.name]
    if project is not None:
        words += ["--project", project]
    return shlex.join(words)


def is_ours(adapter: Adapter, entry: Any) -> bool:
    """Whether a hook entry is freshline's (installed by any version, from any path)."""
    command = entry.get("command") if isinstance(entry, dict) else None
    mark = f"hook {adapter.name}"
    return isinstance(command, str) and mark in command and "freshline" in command


def unmerge(adapter: Adapter, settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` without freshline's hook entries (groups and events left empty go)."""
    out = dict(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    kept: dict[str, Any] = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        left = [_without_ours(adapter, g) for g in groups]
        left = [g for g in left if g is not None]
        if left:
            kept[event] = left
    if kept:
        out["hooks"] = kept
    else:
        del out["hooks"]
    return out


def _without_ours(adapter: Adapter, group: Any) -> Any:
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    entries = [e for e in group["hooks"] if not is_ours(adapter, e)]
    return {**group, "hooks": entries} if entries else None


def merge(adapter: Adapter, settings: dict[str, Any], command: str) -> dict[str, Any]:
    """`settings` with freshline's hook on every event it answers (replacing any earlier
    freshline entry)."""
    out = unmerge(adapter, settings)
    hooks = dict(out.get("hooks") or {})
    for event in adapter.events:
        groups = hooks.get(event)
        hook = {**adapter.entry_for(event), "type": "command", "command": command}
        entry: dict[str, Any] = {"hooks": [hook]}
        if event in adapter.matchers:
            entry = {"matcher": adapter.matchers[event], **entry}
        hooks[event] = [*(groups if isinstance(groups, list) else []), entry]
    out["hooks"] = hooks
    return out


def read_settings(path: Path) -> dict[str, Any]:
    """A settings file's JSON object ({} when there is none yet); UsageError when it is
    not one, so nothing is overwritten."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError:
        raise UsageError(shown(f"{path} is not UTF-8 text; fix or move it first")) from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise UsageError(shown(f"{path} is not valid JSON ({exc}); fix or move it first")) from None
    if not isinstance(data, dict):
        raise UsageError(shown(f"{path} does not hold a JSON object; fix or move it first"))
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise UsageError(shown(f"{path}: \"hooks\" is not a JSON object; fix it first"))
    return data


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write the settings whole or not at all."""
    write_whole(path, json.dumps(settings, indent=2, ensure_ascii=False) + "\n")


def write_whole(path: Path, text: str) -> None:
    """Write an agent's settings file whole or not at all (a new file renamed over the
    old, with the old one's mode)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o7777)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Installed:
    """What `install` did."""

    path: Path
    command: str | None  # None after an uninstall
    changed: bool


def install(
    adapter: Adapter,
    root: Path,
    scope: Scope,
    project: str | None = None,
    uninstall: bool = False,
) -> Installed:
    """Install (or remove) the agent's hook of workspace `root` in its settings file of
    `scope`."""
    path = settings_path(adapter, scope, root)
    before = read_settings(path)
    command = None if uninstall else hook_command(adapter, root, project)
    after = unmerge(adapter, before) if command is None else merge(adapter, before, command)
    changed = after != before
    if scope is Scope.PROJECT:
        keep_extras(adapter, root, keep=command is not None)
    if changed and not after and path.exists():
        remove_settings(path)
    elif changed:
        write_settings(path, after)
    if command is not None:
        compile_package()  # the hook starts from bytecode even under PYTHONDONTWRITEBYTECODE
    return Installed(path, command, changed)


def keep_extras(adapter: Adapter, root: Path, keep: bool) -> None:
    """Keep the adapter's lines in the workspace's files (`Adapter.extras`), or take them
    out on uninstall (a file left empty goes)."""
    for extra in adapter.extras:
        path = root / extra.file
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        mine = extra.line in lines
        if keep and not mine:
            write_whole(path, "\n".join([*lines, extra.line]) + "\n")
        elif not keep and mine:
            rest = [line for line in lines if line != extra.line]
            if rest:
                write_whole(path, "\n".join(rest) + "\n")
            else:
                path.unlink()


def remove_settings(path: Path) -> None:
    """Remove a settings file left holding nothing, and its folder when that is empty
    (`.claude/` as a fresh install made it)."""
    path.unlink()
    try:
        path.parent.rmdir()
    except OSError:
        pass  # the folder holds more of the agent's (or the user's) files
