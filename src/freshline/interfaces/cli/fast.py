"""The hot commands, without typer, click or rich: `--version`, `status`, `scan` and
`hook <agent>` start in a few times an empty Python's start-up, and the service as
commands start it (`service run --watch ROOT…`) is up sooner.

`run(argv)` runs one when `argv` is in its plain form (`argv.hot_command`), else returns
None and the typer app parses it. With the service running, `status`, `scan`, `changes`,
`updates`, `session list` and every hook call are answered by the service (`serviceclient`
asks it; `service/requests.py` answers, flushing first), and this process loads no more
than the standard library; otherwise, and whenever the service cannot answer, the command
does the work itself (flushing too, so the answer is the same) and has the service
started for the next one. The typer commands call the same bodies (`answers.py`), so
every path prints the same thing. `mcp` answers its client's first questions while the
MCP SDK loads (`mcp/front.py`). Module-level imports stay within the standard library's
basics.
"""

from __future__ import annotations

import os
import sys

from freshline.errors import FreshlineError
from freshline.interfaces.cli import argv as words
from freshline.interfaces.cli.answers import (
    changes_lines,
    load,
    project_dict,
    projects_lines,
    scan_data,
    scan_lines,
    sessions_lines,
    status_data,
    status_lines,
    updates_lines,
)
from freshline.interfaces.cli.output import emit, fail, machine_failure, say, say_all, warn

# Each hook agent's `Adapter.project_dir_env` (the adapters are not imported: start-up).
PROJECT_DIR_ENVS = {"claude-code": "CLAUDE_PROJECT_DIR", "gemini-cli": "GEMINI_PROJECT_DIR"}
OWNER_ENV = "FRESHLINE_OWNER"  # `session.owners.OWNER_ENV` (not imported: start-up)
# What the service needs of a hook's environment besides the agent's project folder:
# where to log (what `hook.process.hook_log_path` reads; not imported: start-up).
HOOK_ENV = ("FRESHLINE_HOOK_LOG", "XDG_CACHE_HOME", "HOME")

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from freshline.config import Config


def run(argv: Sequence[str]) -> int | None:
    """Run a hot command and return its exit code; None when typer should handle `argv`."""
    roots = words.service_run(argv)
    if roots is not None:
        from pathlib import Path

        from freshline.interfaces.service.daemon import run as run_service

        return run_service([Path(root).resolve() for root in roots])
    call = words.hot_command(argv)
    if call is None:
        return kept_help(argv)
    command, workspace, flags, args = call
    as_json = words.JSON in flags
    if command in (words.CHANGES, words.UPDATES, words.SESSIONS):
        return asked(command, workspace, flags, args)
    try:
        if command == words.VERSION:
            say(version_line())
        elif command == words.STATUS:
            status(workspace, as_json)
        elif command == words.PROJECTS:
            projects(workspace, as_json)
        elif command == words.SCAN:
            scan(workspace, as_json, full="--full" in flags)
        elif command == words.MCP:
            from freshline.interfaces.mcp import front

            return front.serve(workspace)
        else:
            agent = command.split()[1]
            return hook(agent, workspace, words.option_value(flags, words.PROJECT),
                        words.FALLBACK in flags)
    except FreshlineError as exc:
        return fail(str(exc), exc.exit_code, as_json)
    except OSError as exc:
        return fail(machine_failure(exc), 1, as_json)
    except Exception as exc:
        import sqlite3

        if isinstance(exc, sqlite3.Error):
            return fail(machine_failure(exc), 1, as_json)
        raise
    return 0


def kept_help(argv: Sequence[str]) -> int | None:
    """`--help` as typer printed it last time (`helptext`); None when none is kept."""
    from freshline.interfaces.cli import helptext

    path = helptext.asked(words.split_workspace(argv)[1])
    text = helptext.cached(path) if path is not None else None
    if text is None:
        return None
    sys.stdout.write(text)
    return 0


def version_line() -> str:
    """`freshline X.Y.Z`."""
    from freshline import __version__

    return f"freshline {__version__}"


def _service(workspace: str | None, request: dict[str, Any]) -> Any:
    """The service's answer about the workspace the command means, or None (then the
    command does the work itself)."""
    from freshline.interfaces import serviceclient

    root = serviceclient.workspace_root(workspace, os.getcwd())
    return serviceclient.ask(request | {"root": root}) if root else None


def started(cfg: Config) -> None:
    """Have the service started for the next command (done after this one's work: a
    service starting beside it would walk and hash the workspace at the same time)."""
    from freshline.interfaces.cli.autostart import watch

    watch(cfg)


def asked(command: str, workspace: str | None, flags: frozenset[str], args: tuple[str, ...]
          ) -> int | None:
    """`changes P [--since N]`, `updates SESSION` or `session list` answered by the
    service; None (the typer command does it, and says what is wrong) when the service
    does not answer."""
    request: dict[str, Any]
    if command == words.CHANGES:
        since = words.option_value(flags, words.SINCE) or "0"
        if not since.isdigit():
            return None
        request = {"op": "changes", "project": args[0], "since": int(since)}
        render: Callable[[Any], list[str]] = changes_lines
    elif command == words.UPDATES:
        request, render = {"op": "updates", "session": args[0]}, updates_lines
    else:
        request, render = {"op": "sessions"}, sessions_lines
    answer = _service(workspace, request)
    if answer is None:
        return None
    data = answer["data"]
    emit(data, words.JSON in flags, lambda: say_all(render(data)))
    return 0


# --- project list -------------------------------------------------------------------------


def projects(workspace: str | os.PathLike[str] | None, as_json: bool) -> None:
    """`freshline project list`: the projects freshline.toml defines."""
    data = [project_dict(p) for p in load(workspace).projects.values()]
    emit(data, as_json, lambda: say_all(projects_lines(data)))


# --- status -------------------------------------------------------------------------------


def status(workspace: str | os.PathLike[str] | None, as_json: bool) -> None:
    """`freshline status`: each project's state and the watcher's (asked of the service
    when it runs)."""
    answer = _service(str(workspace) if workspace else None, {"op": "status"})
    if answer is not None:
        data = answer["data"]
    else:
        from freshline.tracker import Tracker

        cfg = load(workspace)
        data = status_data(Tracker(cfg))
        started(cfg)

    emit(data, as_json, lambda: say_all(status_lines(data)))


# --- scan ---------------------------------------------------------------------------------


def scan(workspace: str | os.PathLike[str] | None, as_json: bool, full: bool = False) -> None:
    """`freshline scan`: bring the index up to date and print what changed in each project
    since the last scan."""
    # A full walk is long whoever does it: this process does it, rather than wait on the
    # service past the answer's time limit and then do it again.
    answer = None if full else _service(str(workspace) if workspace else None, {"op": "scan"})
    if answer is not None:
        data = answer["data"]
    else:
        from freshline.tracker import Tracker

        cfg = load(workspace)
        data = scan_data(Tracker(cfg), full)
        started(cfg)

    def human() -> None:
        say_all(scan_lines(data))
        for w in data["warnings"]:
            warn(w)

    emit(data, as_json, human)


# --- the hook -----------------------------------------------------------------------------


def hook(agent: str, workspace: str | None = None, project: str | None = None,
         fallback: bool = False) -> int:
    """`freshline hook <agent>`: nothing to print inside an agent another channel runs;
    else the service answers the call (`service/hooks.py`), or, with none to ask, the
    hook does it itself (`hook.process`, which has the service started and never fails
    the prompt). With `fallback` (standing in for http hooks) a service that answers
    them has it print nothing."""
    if os.environ.get(OWNER_ENV):
        return 0  # another channel delivers to this agent (`hook.core.answer` says so too)
    text = sys.stdin.read()
    answer = _hook_served(agent, text, workspace, project, fallback)
    if answer is not None:
        sys.stdout.write(answer)
        sys.stdout.flush()
        return 0
    import io
    from pathlib import Path

    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.process import run
    from freshline.interfaces.hook.protocol import HookOptions

    chosen = adapter(agent)
    options = HookOptions.from_env(chosen, Path(workspace) if workspace else None, project)
    return run(chosen, io.StringIO(text), sys.stdout, options)


def _hook_served(agent: str, text: str, workspace: str | None, project: str | None,
                 fallback: bool) -> str | None:
    """The service's answer to a hook call, or None when no service answers."""
    from freshline.interfaces import serviceclient

    project_dir_env = PROJECT_DIR_ENVS.get(agent)
    names = (project_dir_env, *HOOK_ENV) if project_dir_env else HOOK_ENV
    env = {k: v for k in names if (v := os.environ.get(k)) is not None}
    request = {"op": "hook", "agent": agent, "payload": text, "env": env, "project": project,
               "workspace": os.path.abspath(workspace) if workspace else None,
               "fallback": fallback}
    answer = serviceclient.ask(request)
    return str(answer["text"]) if answer is not None else None
