"""`freshline watch`: run the workspace's watcher, stop it (`--stop`), or list every
watcher of this user (`--list`)."""

from __future__ import annotations

import signal
import sys
from concurrent.futures import Future
from typing import TYPE_CHECKING

import typer

from freshline.errors import UsageError
from freshline.interfaces import watchsock
from freshline.interfaces.cli.common import JsonOption, config, emit, exit_with, workspace_root
from freshline.interfaces.cli.fast import change_dict, change_line
from freshline.interfaces.cli.output import say, warn
from freshline.interfaces.cli.watchers import listing_data, listing_lines
from freshline.interfaces.text import plural

if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.materialize import MaterializeResult
    from freshline.session import SessionManager
    from freshline.tracker import FlushResult


def watch(
    ctx: typer.Context,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Log only warnings and errors."),
    idle_exit: int = typer.Option(
        None, "--idle-exit", min=1, metavar="SECONDS",
        help="Exit after this many seconds without a request (the autowatch uses it).",
    ),
    stop: bool = typer.Option(False, "--stop", help="Stop this workspace's watcher."),
    list_all: bool = typer.Option(
        False, "--list", help="List every watcher of yours on this machine."),
    as_json: bool = JsonOption,
) -> None:
    """Watch the workspace, log what changes and convert changed documents, until Ctrl-C.

    Each batch's changed paths and each converted document get a line (--quiet: only
    problems). One watcher per workspace: a second one exits 2. --stop stops the
    workspace's watcher (the next command that flushes starts a new one, unless autowatch
    is off); --list shows every running watcher: workspace, pid, uptime, store, last error.

    Example: freshline watch --list
    """
    if stop and list_all:
        raise UsageError("give --stop or --list, not both")
    if list_all:
        from freshline.tracker.registry import listing

        rows = listing_data(listing())

        def human() -> None:
            for line in listing_lines(rows):
                say(line)

        emit(rows, as_json, human)
    elif stop:
        _stop(ctx, as_json)
    elif as_json:
        raise UsageError("--json goes with --list or --stop")
    else:
        _run(config(ctx), quiet, idle_exit)


def _stop(ctx: typer.Context, as_json: bool) -> None:
    """Stop the workspace's watcher and wait until it has let go of the workspace."""
    from freshline.tracker.autowatch import stop
    from freshline.tracker.watchlock import holder

    root = workspace_root(ctx)
    pid = holder(root)
    if pid is not None and not stop(root):
        exit_with(f"the watcher of {root} (pid {pid}) did not stop; stop it with "
                  f"`kill {pid}`", 1, as_json)
    data = {"workspace": str(root), "stopped": pid}

    def human() -> None:
        say(f"stopped the watcher of {root} (pid {pid})" if pid is not None
            else f"no watcher is running on {root}")

    emit(data, as_json, human)


def _run(cfg: Config, quiet: bool, idle_exit: int | None) -> None:
    """Watch until stopped: Ctrl-C, SIGTERM (`--stop`), the idle time, or an error that
    is not one batch's (its reason stays in the watcher's record for the next command)."""
    from freshline.tracker import registry
    from freshline.tracker.watcher import Watcher
    from freshline.tracker.watchlock import WatchLock, holder

    lock = WatchLock(cfg.root)
    if not lock.acquire():
        pid = holder(cfg.root)
        exit_with(f"a watcher is already running on {cfg.root}" + (f" (pid {pid})" if pid
                  else ""), 2, False)
    made: list[SessionManager] = []  # made at the first conversion: the watcher is up first

    def sessions() -> SessionManager:
        if not made:
            from freshline import session

            made.append(session.SessionManager(cfg))
        return made[0]

    def report(result: FlushResult) -> None:
        if not quiet:
            for line in batch_lines(result):
                say(line)
        _follow(sessions().convert_changed(result), quiet)

    def noted(exc: Exception) -> None:
        warn(f"{exc} (still watching)")
        registry.note_error(cfg.root, str(exc))

    watcher = Watcher(cfg, on_flush=report, on_error=noted, idle_exit_s=idle_exit,
                      on_config=lambda _config: _follow(sessions().convert_pending(), quiet))
    registry.started(cfg.root, watcher.tracker.store.location)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a log, as it goes
    signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    serving = watchsock.serve(str(cfg.root), on_request=watcher.request)
    if not quiet:
        say(f"watching {cfg.root} (Ctrl-C to stop)")
    reason: str | None = None
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        reason = str(exc)
        raise
    finally:
        if serving is not None:
            watchsock.close(str(cfg.root), serving[0])
        for manager in made:
            manager.close()
        registry.finished(cfg.root, reason)
        lock.release()
    if watcher.idle():
        say(f"no request for {plural(idle_exit or 0, 'second')}: stopped watching")


def batch_lines(result: FlushResult) -> list[str]:
    """What one flush logged, for the watch log: per project, its epoch and each path."""
    lines = []
    for name, delta in result.projects.items():
        lines.append(f"{name} → epoch {delta.epoch} ({plural(len(delta.changes), 'change')})")
        lines += ["  " + change_line(change_dict(c)) for c in delta.changes]
    return lines


def _follow(runs: list[Future[MaterializeResult]], quiet: bool) -> None:
    """Log each conversion run as it ends."""
    for run in runs:
        run.add_done_callback(lambda done: _report_run(done, quiet))


def _report_run(run: Future[MaterializeResult], quiet: bool) -> None:
    error = run.exception() if not run.cancelled() else None
    if error is not None:
        warn(f"conversion run failed: {error}")
        return
    if run.cancelled():
        return
    result = run.result()
    if not quiet:
        for path in result.converted:
            say(f"converted {path}")
    for path, reason in sorted(result.failures.items()):
        warn(f"cannot convert {path}: {reason}")
