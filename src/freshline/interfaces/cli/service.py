"""`freshline service`: the per-user service that watches every workspace used.

`status`, `stop`, `restart`, `install` (a unit for the system's service manager) and
`run` (the service itself, as commands and units start it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import typer

from freshline.interfaces.cli.common import JsonOption, emit, exit_with
from freshline.interfaces.cli.output import say, say_all
from freshline.interfaces.cli.watchers import listing_lines
from freshline.interfaces.text import duration

service_app = typer.Typer(help="The per-user service that watches every workspace you use.")
READY_WAIT_S = 30.0


def facts() -> dict[str, Any] | None:
    """The running service's own state and its workspaces, or None."""
    from freshline.interfaces import serviceclient

    answer = serviceclient.ask({"op": "ping"}, timeout=10)
    if answer is None:
        return None
    listed = serviceclient.ask({"op": "list"}, timeout=10)
    return dict(answer["data"]) | {"watching": listed["data"] if listed else []}


def status_lines(data: dict[str, Any] | None, pid: int | None) -> list[str]:
    """`service status` for people."""
    if data is None:
        if pid:
            return [f"service: running (pid {pid}) but not answering (another version of "
                    "freshline?); `freshline service restart` starts this one"]
        return ["service: not running (the next command that needs it starts it)"]
    http = (f"http hooks on 127.0.0.1:{data['port']}" if data["http"]
            else f"http hooks not answered (port {data['port']} taken)")
    lines = [f"service: running (pid {data['pid']}, freshline {data['version']}, "
             f"up {duration(data['uptime_s'])})", http,
             f"notifications: {data['notifier']}", f"log: {data['log']}"]
    return lines + listing_lines(data["watching"])


@service_app.command("status")
def status(as_json: bool = JsonOption) -> None:
    """Show whether the service runs, its pid, uptime, port and every workspace it watches.

    Example: freshline service status
    """
    from freshline.interfaces.autostart import running

    data = facts()
    pid = running()
    emit({"running": pid is not None, "answering": data is not None, "service": data},
         as_json, lambda: say_all(status_lines(data, pid)))


@service_app.command("stop")
def stop(as_json: bool = JsonOption) -> None:
    """Stop the service (the next command that needs it starts it again).

    Example: freshline service stop
    """
    pid = _stopped(as_json)
    emit({"stopped": pid}, as_json, lambda: say(
        f"stopped the service (pid {pid})" if pid else "the service was not running"))


@service_app.command("restart")
def restart(as_json: bool = JsonOption) -> None:
    """Stop the service and start it again with this freshline, watching what it watched.

    Example: freshline service restart
    """
    from freshline.interfaces import autostart

    stopped = _stopped(as_json)
    autostart.spawn([])
    data = _wait_until_answering()
    if data is None:
        exit_with("the service did not come up; see its log: "
                  f"{_log_path()}", 1, as_json)
    emit({"stopped": stopped, "service": data}, as_json,
         lambda: say(f"restarted the service (pid {data['pid']})"))


def _stopped(as_json: bool) -> int | None:
    """Stop the service; its pid (None: none ran). One that will not stop ends the
    command, named."""
    from freshline.interfaces import autostart

    try:
        return autostart.stop()
    except TimeoutError as exc:
        exit_with(str(exc), 1, as_json)


def _wait_until_answering() -> dict[str, Any] | None:
    deadline = time.monotonic() + READY_WAIT_S
    while time.monotonic() < deadline:
        data = facts()
        if data is not None:
            return data
        time.sleep(0.05)
    return None


def _log_path() -> Path:
    from freshline.interfaces.service.places import log_path

    return log_path()


@service_app.command("install")
def install(
    uninstall: bool = typer.Option(False, "--uninstall", help="Remove the unit instead."),
    as_json: bool = JsonOption,
) -> None:
    """Write a systemd user unit (a launchd agent on macOS) that starts the service at login.

    Example: freshline service install
    """
    from freshline.interfaces.service.units import unit
    from freshline.program import executable

    made = unit([*executable(), "service", "run"])
    if uninstall:
        existed = made.path.exists()
        made.path.unlink(missing_ok=True)
        emit({"path": str(made.path), "removed": existed}, as_json, lambda: say(
            f"removed {made.path}" if existed else f"{made.path} was not there"))
        return
    from freshline.interfaces.hook.install import write_whole

    write_whole(made.path, made.text)
    emit({"path": str(made.path), "enable": made.enable}, as_json, lambda: say_all(
        [f"wrote {made.path}", f"start it now and at every login with: {made.enable}"]))


@service_app.command("run", hidden=True)
def run(
    watch: list[Path] = typer.Option(  # noqa: B008 - typer's way to declare an option
        [], "--watch", help="Watch this workspace too (as well as every one it watched)."),
) -> None:
    """Run the service in the foreground until stopped (commands and units start it).

    Example: freshline service run
    """
    from freshline.interfaces.service.daemon import run as run_service

    code = run_service([p.resolve() for p in watch])
    if code:
        raise typer.Exit(code)
