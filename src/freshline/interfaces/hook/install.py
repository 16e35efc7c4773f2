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

A client that posts hooks to a URL (`Adapter.http_events`: Claude Code's) gets, on those
events, an `http` hook to the service (`service/secret.py`: loopback, this user's secret
in the path) and beside it a command that stands in when the service cannot answer (a
prompt must be answered, and a shell's window, a tool's record and a turn's end are what
checkpoints and rewinds go by, whatever happened to the service): a shell line that
checks the pid in `hooks.pid` and, when no service answers http hooks, runs the hook with
`--fallback` (which starts the service), run by `/bin/sh` in exec form (`args`, Claude
Code 2.1.139 and later: the shell Claude Code runs a command through cost a prompt 20 ms
more). Its first event (SessionStart) stays the command. The secret keeps these entries
out of a shared file: in the project scope they go to `Adapter.private_settings`, and
any left in the shared one go.

`merge` and `unmerge` are pure functions of the settings' JSON (a `"hooks"` table of
event → groups of commands, the shape Claude Code's and its followers' settings share).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.compiled import compile_package
from freshline.errors import UsageError
from freshline.interfaces.hook.protocol import Adapter
from freshline.interfaces.service.secret import PREFIX
from freshline.paths import shown
from freshline.program import executable

HTTP_TIMEOUT_S = 30  # an http hook's time limit (Claude Code's default is ten minutes)
SHELL = "/bin/sh"  # runs the stand-in, spawned directly (no user shell, no profile)


class Scope(StrEnum):
    """Which of the agent's settings files to write."""

    PROJECT = "project"  # <workspace>/<its settings>: sessions started there
    USER = "user"  # ~/<its settings>: every session of this user


@dataclass(frozen=True)
class HttpHooks:
    """The http hook of a client that posts its events, and the command standing in."""

    url: str
    fallback: str


def settings_path(adapter: Adapter, scope: Scope, root: Path, private: bool = False) -> Path:
    """The agent's settings file of `scope` (the project's is the workspace root's; with
    `private`, the one it keeps out of version control, if it has one)."""
    if scope is Scope.USER:
        return Path.home() / adapter.settings
    return root / (adapter.private_settings if private and adapter.private_settings
                   else adapter.settings)


def hook_command(
    adapter: Adapter, root: Path, project: str | None = None, program: list[str] | None = None
) -> str:
    """The shell command the agent runs for every event."""
    words = [*(program or executable()), "--workspace", str(root), "hook", adapter.name]
    if project is not None:
        words += ["--project", project]
    return shlex.join(words)


def fallback_command(command: str, pid_file: str) -> str:
    """The shell line standing in for the http hooks: nothing while the process whose pid
    `pid_file` holds is alive (the service answering them), else `command --fallback`.

    Shell builtins only (a process costs a millisecond on every event). A killed service
    leaves its pid file; until its parent reaps it, it is a zombie that `kill -0` still
    finds, so where /proc says a process's state, a zombie (Z) counts as gone."""
    quoted = shlex.quote(pid_file)
    return (f'p=; s=; read -r p 2>/dev/null < {quoted}; [ -n "$p" ] && kill -0 "$p" '
            '2>/dev/null && s=R && while read -r k v _; do [ "$k" = State: ] && s=$v && '
            'break; done 2>/dev/null < "/proc/$p/status"; case "$s" in ""|Z|X) '
            f"exec {command} --fallback;; esac")


def is_ours(adapter: Adapter, entry: Any) -> bool:
    """Whether a hook entry is freshline's (installed by any version, from any path)."""
    if not isinstance(entry, dict):
        return False
    url = entry.get("url")
    if entry.get("type") == "http" and isinstance(url, str):
        return PREFIX in url and f"/hook/{adapter.name}?" in url
    words = [entry.get("command"), *(entry.get("args") or [])]
    command = " ".join(w for w in words if isinstance(w, str))
    return f"hook {adapter.name}" in command and "freshline" in command


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


def merge(adapter: Adapter, settings: dict[str, Any], command: str,
          http: HttpHooks | None = None) -> dict[str, Any]:
    """`settings` with freshline's hook on every event it answers (replacing any earlier
    freshline entry): the command, or on the client's http events, with `http`, the http
    hook and the command standing in for it."""
    out = unmerge(adapter, settings)
    hooks = dict(out.get("hooks") or {})
    for event in adapter.events:
        groups = hooks.get(event)
        entries: list[dict[str, Any]] = [
            {**adapter.entry_for(event), "type": "command", "command": command}]
        if http is not None and event in adapter.http_events:
            entries = [{"type": "http", "url": http.url, "timeout": HTTP_TIMEOUT_S},
                       {"type": "command", "command": SHELL, "args": ["-c", http.fallback]}]
        entry: dict[str, Any] = {"hooks": entries}
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
    url: str | None = None  # the http hooks' URL, for a client that posts its events
    cleared: Path | None = None  # a shared settings file freshline's entries left


def install(
    adapter: Adapter,
    root: Path,
    scope: Scope,
    project: str | None = None,
    uninstall: bool = False,
    commands_only: bool = False,
) -> Installed:
    """Install (or remove) the agent's hook of workspace `root` in its settings file of
    `scope`: the private one for a client that posts to the service, the shared one with
    `commands_only` (a command on every event, for a client too old to post). freshline's
    entries in the other file go."""
    posting = bool(adapter.http_events) and not (commands_only or uninstall)
    path = settings_path(adapter, scope, root, posting)
    command = None if uninstall else hook_command(adapter, root, project)
    http = http_hooks(adapter, root, project, command) if posting and command else None
    changed = _rewrite(path, lambda s: unmerge(adapter, s) if command is None
                       else merge(adapter, s, command, http))
    other = settings_path(adapter, scope, root, not posting)
    cleared = other if other != path and _rewrite(
        other, lambda s: unmerge(adapter, s)) else None
    if scope is Scope.PROJECT:
        keep_extras(adapter, root, keep=command is not None)
    if command is not None:
        compile_package()  # the hook starts from bytecode even under PYTHONDONTWRITEBYTECODE
    return Installed(path, command, changed, http.url if http else None, cleared)


def http_hooks(adapter: Adapter, root: Path, project: str | None, command: str) -> HttpHooks:
    """The http hook of this user's service for the workspace, and its stand-in."""
    from freshline.interfaces.service import secret
    from freshline.interfaces.serviceclient import HOOKS_PID_NAME, runtime_dir

    url = secret.ensure().url(adapter.name, root, project)
    return HttpHooks(url, fallback_command(command, os.path.join(runtime_dir(), HOOKS_PID_NAME)))


def _rewrite(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """Apply `change` to a settings file (removed when left empty); whether it changed."""
    if not path.exists() and change({}) == {}:
        return False
    before = read_settings(path)
    after = change(before)
    if after == before:
        return False
    if not after and path.exists():
        remove_settings(path)
    else:
        write_settings(path, after)
    return True


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
