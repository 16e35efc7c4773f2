"""`freshline scan`, `watch`, `status` and `changes`: the tracker from the command line."""

from __future__ import annotations

import signal
import time
from collections import Counter
from concurrent.futures import Future
from dataclasses import asdict
from typing import Any

import typer
from rich.table import Table

from freshline.context.model import GitOperation
from freshline.context.phrases import git_operation
from freshline.errors import UsageError
from freshline.interfaces.cli.common import JsonOption, config, console, emit, err_console
from freshline.materialize import (
    MaterializeResult,
    SnapshotStore,
    is_document,
    probe,
)
from freshline.paths import shown
from freshline.session import SessionManager
from freshline.store.records import Change, ChangeKind
from freshline.tracker import FlushResult, Tracker
from freshline.tracker.hints import watcher_alive
from freshline.tracker.tracker import LAST_FULL_SCAN
from freshline.tracker.watcher import Watcher


def change_dict(c: Change) -> dict[str, Any]:
    """A change as JSON-able data."""
    d = asdict(c)
    d["kind"] = c.kind.value
    return d


def change_line(c: Change) -> str:
    """A change as one line for people (odd file names escaped, see `paths.shown`)."""
    if c.kind is ChangeKind.GIT:
        line = git_operation(GitOperation.from_detail(c.detail), None)
        return f"{c.kind.value:<9} {line}"
    if c.old_path is not None:
        return f"{c.kind.value:<9} {shown(c.old_path)} → {shown(c.path)}"
    return f"{c.kind.value:<9} {shown(c.path)}"


def flush_dict(result: FlushResult) -> dict[str, Any]:
    """A flush's outcome as JSON-able data."""
    return {
        "full": result.full,
        "scanned": result.scanned,
        "warnings": result.warnings,
        "projects": {
            name: {"epoch": d.epoch, "changes": [change_dict(c) for c in d.changes]}
            for name, d in result.projects.items()
        },
    }


def scan(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Scan the whole workspace now and log what changed, per project.

    Example: freshline scan --json
    """
    result = Tracker(config(ctx)).scan()

    def human() -> None:
        for name, delta in result.projects.items():
            console.print(f"[bold]{name}[/bold] → epoch {delta.epoch}")
            for c in delta.changes:
                console.print("  " + change_line(c), markup=False)
        for w in result.warnings:
            console.print(f"[yellow]warning:[/yellow] {w}")
        console.print(f"[dim]{result.scanned} files scanned[/dim]")

    emit(flush_dict(result), as_json, human)


def watch(ctx: typer.Context) -> None:
    """Watch the workspace, log changes as they happen and convert changed documents,
    until interrupted (Ctrl-C).

    Example: freshline watch &
    """
    cfg = config(ctx)
    sessions = SessionManager(cfg)

    def report(result: FlushResult) -> None:
        for name, delta in result.projects.items():
            console.print(f"{name} → epoch {delta.epoch} ({len(delta.changes)} changes)")
        for run in sessions.convert_changed(result):
            run.add_done_callback(_report_failure)

    def warn(exc: Exception) -> None:
        err_console.print(f"[yellow]warning:[/yellow] {exc} (still watching)")

    watcher = Watcher(cfg, on_flush=report, on_error=warn)
    signal.signal(signal.SIGTERM, lambda *_: watcher.stop())
    console.print(f"watching {cfg.root} (Ctrl-C to stop)")
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        sessions.close()


def _report_failure(run: Future[MaterializeResult]) -> None:
    error = run.exception() if not run.cancelled() else None
    if error is not None:
        err_console.print(f"[red]conversion run failed:[/red] {error}")


def status_data(tracker: Tracker) -> dict[str, Any]:
    """Per-project epochs and sizes, the last full scan and whether a watcher is alive."""
    store = tracker.store
    states = store.project_states()
    last = store.meta_get(LAST_FULL_SCAN)
    projects = {}
    snapshots = SnapshotStore(tracker.config.data_dir)
    for name in tracker.config.projects:
        state = states.get(name)
        files = tracker.files_in_scope(name)
        documents = Counter(
            probe(snapshots, tracker.root, e.path, e).status.value
            for e in files
            if is_document(e.path)
        )
        projects[name] = {
            "epoch": state.epoch if state else 0,
            "compacted_through": state.compacted_through if state else 0,
            "files": len(files),
            "documents": dict(sorted(documents.items())),
        }
    return {
        "workspace": str(tracker.root),
        "watcher_alive": watcher_alive(store),
        "last_full_scan": float(last) if last else None,
        "projects": projects,
    }


def status(ctx: typer.Context, as_json: bool = JsonOption) -> None:
    """Show each project's epoch, compaction point, files, documents by status, and the watcher.

    Example: freshline status
    """
    data = status_data(Tracker(config(ctx)))

    def human() -> None:
        table = Table("project", "epoch", "compacted through", "files", "documents")
        for name, p in data["projects"].items():
            docs = ", ".join(f"{n} {k}" for k, n in p["documents"].items()) or "-"
            row = (str(p["epoch"]), str(p["compacted_through"]), str(p["files"]), docs)
            table.add_row(name, *row)
        console.print(table)
        last = data["last_full_scan"]
        ago = f"{time.time() - last:.0f} s ago" if last else "never"
        alive = "alive" if data["watcher_alive"] else "not running"
        console.print(f"last full scan: {ago}; watcher: {alive}")

    emit(data, as_json, human)


def changes(
    ctx: typer.Context,
    project: str,
    since: int = typer.Option(0, "--since", help="Report changes after this epoch."),
    as_json: bool = JsonOption,
) -> None:
    """Show what changed in PROJECT after epoch N (coalesced), or that the log was compacted.

    Example: freshline changes research --since 3
    """
    tracker = Tracker(config(ctx))
    epoch = tracker.epoch(project)
    if not 0 <= since <= epoch:
        raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
    answer = tracker.changes_since(project, since)
    data = {
        "project": project,
        "since": since,
        "epoch": answer.epoch,
        "compacted": answer.compacted,
        "changes": [change_dict(c) for c in answer.changes],
    }

    def human() -> None:
        if answer.compacted:
            console.print(f"the log no longer reaches epoch {since}: re-enumerate {project}")
        for c in answer.changes:
            console.print(change_line(c), markup=False)
        console.print(f"[dim]{project}: epoch {since} → {answer.epoch}[/dim]")

    emit(data, as_json, human)
