"""`freshline scan`, `watch`, `status` and `changes`: the tracker from the command line."""

from __future__ import annotations

import signal
import sys
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

import typer

from freshline.interfaces import watchsock
from freshline.interfaces.cli import fast
from freshline.interfaces.cli.common import (
    JsonOption,
    config,
    emit,
    exit_with,
    manager,
    state,
)
from freshline.interfaces.cli.fast import change_dict, change_line, group_dict, group_line
from freshline.interfaces.cli.output import say, warn
from freshline.interfaces.cli.pages import page_budget, print_page
from freshline.interfaces.text import plural

if TYPE_CHECKING:
    from freshline.context import Budget
    from freshline.materialize import MaterializeResult
    from freshline.tracker import FlushResult


def scan(
    ctx: typer.Context,
    full: bool = typer.Option(False, "--full", help="Walk the whole workspace even when a "
                              "watcher runs."),
    as_json: bool = JsonOption,
) -> None:
    """Bring the index up to date now and log what changed, per project.

    With a live watcher only the paths it saw change are checked; --full walks everything.

    Example: freshline scan --json
    """
    fast.scan(state(ctx).workspace, as_json, full)


def watch(
    ctx: typer.Context,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Log only warnings and errors."),
    idle_exit: int = typer.Option(
        None, "--idle-exit", min=1, metavar="SECONDS",
        help="Exit after this many seconds without a request (the autowatch uses it).",
    ),
) -> None:
    """Watch the workspace, log what changes and convert changed documents, until Ctrl-C.

    Each batch's changed paths and each converted document get a line (--quiet: only
    problems). One watcher per workspace: a second one exits 2.

    Example: freshline watch &
    """
    from freshline.session import SessionManager
    from freshline.tracker.autowatch import WatchLock, holder
    from freshline.tracker.watcher import Watcher

    cfg = config(ctx)
    lock = WatchLock(cfg.root)
    if not lock.acquire():
        pid = holder(cfg.root)
        exit_with(f"a watcher is already running on {cfg.root}" + (f" (pid {pid})" if pid
                  else ""), 2, False)
    sessions = SessionManager(cfg)

    def report(result: FlushResult) -> None:
        if not quiet:
            for line in batch_lines(result):
                say(line)
        for run in sessions.convert_changed(result):
            run.add_done_callback(lambda done: _report_run(done, quiet))

    def warn_on(exc: Exception) -> None:
        warn(f"{exc} (still watching)")

    watcher = Watcher(cfg, on_flush=report, on_error=warn_on, idle_exit_s=idle_exit)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a log, as it goes
    signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    serving = watchsock.serve(str(cfg.root))
    if not quiet:
        say(f"watching {cfg.root} (Ctrl-C to stop)")
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        if serving is not None:
            watchsock.close(str(cfg.root), serving[0])
        sessions.close()
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


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Show each project's epoch, compaction point, files, documents by status, and the watcher.

    Example: freshline status
    """
    fast.status(state(ctx).workspace, as_json)


def changes(
    ctx: typer.Context,
    project: str,
    since: int = typer.Option(0, "--since", help="Report changes after this epoch."),
    page: int = typer.Option(None, "--page", min=1, help="Print this page of the list, "
                             "as the updates block words it (from 1)."),
    channel: str = typer.Option("send", "--channel", help="Size pages for this delivery "
                                "channel's budget (hook, mcp, chat, send, acp)."),
    as_json: bool = JsonOption,
) -> None:
    """Show what changed in PROJECT after epoch N (the net changes), whole or a page at a time.

    A rolled-up block names the exact command, with --page: each page fits the channel's
    budget and names the next. Older changes the log keeps only as counts are shown as
    counts.

    Example: freshline changes research --since 3 --page 1
    """
    from freshline.errors import UsageError

    cfg = config(ctx)
    if page is not None:
        _changes_page(ctx, project, since, page, page_budget(cfg, channel, as_json, project),
                      as_json)
        return
    from freshline.tracker import Tracker

    tracker = Tracker(cfg)
    epoch = tracker.epoch(project)
    if not 0 <= since <= epoch:
        raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
    answer = tracker.changes_since(project, since)
    data: dict[str, Any] = {
        "project": project,
        "since": since,
        "epoch": answer.epoch,
        "compacted": answer.compacted,
        "forgotten": answer.forgotten,
        "counted": [group_dict(g) for g in answer.folded],
        "changes": [change_dict(c) for c in answer.changes],
    }

    def human() -> None:
        if answer.forgotten:
            say(f"the log no longer reaches epoch {since}: list {project} with "
                f"`freshline project files {project}`")
        for g in data["counted"]:
            say(group_line(g))
        for c in data["changes"]:
            say(change_line(c))
        say(f"{project}: epoch {since} → {answer.epoch}")

    emit(data, as_json, human)


def _changes_page(
    ctx: typer.Context, project: str, since: int, page: int, budget: Budget, as_json: bool
) -> None:
    from freshline.errors import UsageError
    from freshline.session.delivery import project_changes_page

    with manager(ctx) as m:
        m.tracker.flush()
        epoch = m.tracker.epoch(project)
        if not 0 <= since <= epoch:
            raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
        print_page(project_changes_page(m, project, since, page, budget), as_json)
