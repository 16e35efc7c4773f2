"""`freshline watch` itself: the process that watches a workspace until it is stopped.

Without typer, click or rich (the autowatch starts it through the fast path, so it is up
sooner): it takes the watch lock, leaves its record (`tracker/registry.py`), answers on the
socket, logs each batch and converts changed documents; the first conversion loads the
session layer, after the watcher is up.
"""

from __future__ import annotations

import signal
import sys
from concurrent.futures import Future

from freshline.interfaces import watchsock
from freshline.interfaces.cli.answers import change_dict, change_line
from freshline.interfaces.cli.output import fail, say, warn
from freshline.interfaces.text import plural

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from freshline.config import Config
    from freshline.materialize import MaterializeResult
    from freshline.session import SessionManager
    from freshline.tracker import FlushResult


def run(cfg: Config, quiet: bool, idle_exit: int | None) -> int:
    """Watch until stopped: Ctrl-C, SIGTERM (`--stop`), the idle time, the workspace's
    folder gone, or an error that is not one batch's (raised; its reason stays in the
    watcher's record for the next command). Returns the exit code: 2 when another process
    watches the workspace."""
    from freshline.tracker import registry
    from freshline.tracker.watcher import Watcher
    from freshline.tracker.watchlock import WatchLock, holder

    lock = WatchLock(cfg.root)
    if not lock.acquire():
        pid = holder(cfg.root)
        return fail(f"a watcher is already running on {cfg.root}" + (f" (pid {pid})" if pid
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
    # Until its first full scan is done, questions are sent back to their clients: answered
    # here they would run beside that scan, and keep the watcher from coming up.
    serving = watchsock.serve(str(cfg.root), on_request=watcher.request,
                              ready=watcher.up.is_set)
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
            watchsock.close(str(cfg.root), serving)
        for manager in made:
            manager.close()
        registry.finished(cfg.root, reason)
        lock.release()
    if watcher.gone():
        say(f"{cfg.root} is gone: stopped watching")
    elif watcher.idle():
        say(f"no request for {plural(idle_exit or 0, 'second')}: stopped watching")
    return 0


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
