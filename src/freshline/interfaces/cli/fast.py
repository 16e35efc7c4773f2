"""The hot commands, without typer, click or rich: `--version`, `status`, `scan` and
`hook claude-code` start in a few times an empty Python's start-up, and the watcher the
autowatch starts (`watch --quiet --idle-exit N`, `daemon.py`) is up sooner.

`run(argv)` runs one when `argv` is in its plain form (`argv.hot_command`), else returns
None and the typer app parses it. With a watcher running, `status`, `scan` and a hook call
with nothing to deliver are answered by the watcher (`watchclient` asks it), and this
process loads no more than the standard library; otherwise, and whenever the watcher
cannot answer, the command does the work itself. The typer commands call the same bodies,
so every path prints the same thing. Module-level imports stay within the standard
library's basics.
"""

from __future__ import annotations

import os
import sys
import time

from freshline.errors import FreshlineError
from freshline.interfaces.cli import argv as words
from freshline.interfaces.cli.output import emit, fail, machine_failure, say, warn
from freshline.interfaces.text import columns, plural

AGENT = "claude-code"  # the one hook agent on the fast path
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"  # its `Adapter.project_dir_env` (not imported: start-up)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from freshline.config import Config
    from freshline.store.records import Change, ChangeGroup
    from freshline.tracker import ChangesSince, Tracker


def run(argv: Sequence[str]) -> int | None:
    """Run a hot command and return its exit code; None when typer should handle `argv`."""
    call = words.hot_command(argv)
    if call is None:
        return None
    command, workspace, flags = call
    as_json = words.JSON in flags
    idle = words.option_value(flags, words.IDLE_EXIT)
    if idle is not None and not (idle.isdigit() and int(idle) >= 1):
        return None  # typer says what is wrong with it
    try:
        if command == words.VERSION:
            say(version_line())
        elif command == words.STATUS:
            status(workspace, as_json)
        elif command == words.SCAN:
            scan(workspace, as_json, full="--full" in flags)
        elif command == words.WATCH:
            from freshline.interfaces.cli import daemon

            return daemon.run(load(workspace), words.QUIET in flags, int(idle) if idle else None)
        else:
            return hook(workspace, words.option_value(flags, words.PROJECT))
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


def version_line() -> str:
    """`freshline X.Y.Z`."""
    from freshline import __version__

    return f"freshline {__version__}"


def load(workspace: str | os.PathLike[str] | None) -> Config:
    """The config of the workspace a command means (`--workspace`, else found from the cwd)."""
    from pathlib import Path

    from freshline.config import find_workspace, load_config

    return load_config(find_workspace(Path.cwd(), Path(workspace) if workspace else None))


def _watcher(workspace: str | None, request: dict[str, Any]) -> Any:
    """The running watcher's answer, or None (then the command does the work itself)."""
    from freshline.interfaces import watchclient

    root = watchclient.workspace_root(workspace, os.getcwd())
    return watchclient.ask(root, request) if root else None


# --- status -------------------------------------------------------------------------------


def status_data(tracker: Tracker) -> dict[str, Any]:
    """Per-project epochs, files and documents by state, the last full scan, the watcher,
    where the store is (a URL without its password), the files secrets were withheld from."""
    from freshline.interfaces.cli.watchers import watcher_data
    from freshline.materialize import SnapshotStore, census
    from freshline.tracker.hints import watcher_alive
    from freshline.tracker.registry import state
    from freshline.tracker.tracker import LAST_FULL_SCAN

    store = tracker.store
    states = store.project_states()
    last = store.meta_get(LAST_FULL_SCAN)
    snapshots = SnapshotStore(tracker.config.data_dir)
    projects = {}
    for name in tracker.config.projects:
        project = states.get(name)
        files = tracker.files_in_scope(name)
        projects[name] = {
            "epoch": project.epoch if project else 0,
            "compacted_through": project.compacted_through if project else 0,
            "files": len(files),
            "documents": dict(sorted(census(snapshots, tracker.root, files).items())),
        }
    watching, pid, record = state(tracker.root, watcher_alive(store))
    return {
        "workspace": str(tracker.root),
        "store": store.location,
        "watcher": watcher_data(watching, record, pid),
        "last_full_scan": float(last) if last else None,
        "projects": projects,
        "withheld": [{"path": w.path, "kinds": list(w.kinds)} for w in store.withheld_current()],
    }


def status_lines(data: dict[str, Any]) -> list[str]:
    """`status_data` for people: a table of projects, then the scan, the watcher, the store."""
    from freshline.interfaces.cli.watchers import watcher_line

    rows = []
    for name, p in data["projects"].items():
        docs = ", ".join(f"{n} {k}" for k, n in p["documents"].items()) or "-"
        rows.append([name, str(p["epoch"]), str(p["compacted_through"]), str(p["files"]), docs])
    header = ["project", "epoch", "compacted through", "files", "documents"]
    lines = columns(header, rows) if rows else [
        "no projects yet: add one with `freshline project add NAME --include PATTERN`"]
    last = data["last_full_scan"]
    ago = f"{time.time() - last:.0f} s ago" if last else "never"
    return [*lines, f"last full scan: {ago}", watcher_line(data["watcher"], data["store"]),
            f"store: {data['store']}", *withheld_lines(data.get("withheld", []))]


def withheld_lines(withheld: list[dict[str, Any]]) -> list[str]:
    """The files secrets were withheld from, and how to allow a false positive."""
    from freshline.paths import shown

    if not withheld:
        return []
    files = "1 file" if len(withheld) == 1 else f"{len(withheld)} files"
    lines = [f"secrets withheld from {files} (a false positive: add a "
             "'freshline: allow-secret' comment, or the path to [security] allow_secrets_in):"]
    for w in withheld:
        kinds = ", ".join(dict.fromkeys(w["kinds"]))
        lines.append(f"  {shown(w['path'])}: {len(w['kinds'])} ({kinds})")
    return lines


def status(workspace: str | os.PathLike[str] | None, as_json: bool) -> None:
    """`freshline status`: each project's state and the watcher's (asked of the watcher
    when one runs)."""
    answer = _watcher(str(workspace) if workspace else None, {"op": "status"})
    if answer is not None:
        data = answer["data"]
    else:
        from freshline.tracker import Tracker

        data = status_data(Tracker(load(workspace)))
    def human() -> None:
        for line in status_lines(data):
            say(line)

    emit(data, as_json, human)


# --- scan ---------------------------------------------------------------------------------


def change_dict(c: Change) -> dict[str, Any]:
    """A change as JSON-able data."""
    return {"kind": c.kind.value, "path": c.path, "old_path": c.old_path, "detail": c.detail}


def group_dict(g: ChangeGroup) -> dict[str, Any]:
    """Earlier changes the log keeps only as a count, as JSON-able data."""
    entry = change_dict(g.entry) if g.entry is not None else None
    return {"first_epoch": g.first_epoch, "last_epoch": g.last_epoch, "folder": g.folder,
            "counts": g.counts, "entry": entry}


def group_line(g: dict[str, Any]) -> str:
    """A count of earlier changes (as `group_dict` gives it) as one line for people."""
    from freshline.paths import shown

    first, last = g["first_epoch"], g["last_epoch"]
    span = f"epoch {first}" if first == last else f"epochs {first}–{last}"
    if g["entry"] is not None:
        return f"{'counted':<9} {change_line(g['entry'])} ({span})"
    counts = ", ".join(f"{n} {kind}" for kind, n in g["counts"].items())
    return f"{'counted':<9} {shown(g['folder'] or '.')}/: {counts} ({span})"


def change_line(c: dict[str, Any]) -> str:
    """A change (as `change_dict` gives it) as one line for people: odd file names escaped
    (`paths.shown`), a HEAD move as what it did."""
    from freshline.paths import shown

    if c["kind"] == "git":
        d = c["detail"] or {}
        moved = f"{str(d.get('from', ''))[:7] or '(no commit)'} → {str(d.get('to', ''))[:7]}"
        return f"{'git':<9} HEAD moved {moved} by {d.get('operation')}: {d.get('count')} paths"
    if c["old_path"] is not None:
        return f"{c['kind']:<9} {shown(c['old_path'])} → {shown(c['path'])}"
    if c["kind"] in ("entered", "left"):  # a file that crossed the scope's edge: say why
        from freshline.tracker.reasons import reason_text

        why = reason_text(c["detail"])
        return f"{c['kind']:<9} {shown(c['path'])}" + (f" ({why})" if why else "")
    return f"{c['kind']:<9} {shown(c['path'])}"


def changes_data(answer: ChangesSince) -> dict[str, Any]:
    """What changed in a project after an epoch, as JSON-able data: the changes the log
    lists, and those it keeps only as counts."""
    return {
        "project": answer.project,
        "since": answer.since,
        "epoch": answer.epoch,
        "compacted": answer.compacted,
        "forgotten": answer.forgotten,
        "counted": [group_dict(g) for g in answer.folded],
        "changes": [change_dict(c) for c in answer.changes],
    }


def changes_lines(data: dict[str, Any]) -> list[str]:
    """`changes_data` for people: what the log no longer reaches, the counts, the changes."""
    project, since = data["project"], data["since"]
    lines = []
    if data["forgotten"]:
        lines.append(f"the log no longer reaches epoch {since}: list {project} with "
                     f"`freshline project files {project}`")
    lines += [group_line(g) for g in data["counted"]]
    return lines + [change_line(c) for c in data["changes"]]


def scan_data(tracker: Tracker, full: bool = False) -> dict[str, Any]:
    """Flush, then per project what changed since the last `scan` (`tracker.reports`), as
    JSON-able data; the same with a watcher running (it asks the watcher) or without."""
    from freshline.tracker.reports import take_news

    result = tracker.flush(full=full)
    return {
        "full": result.full,
        "scanned": result.scanned,
        "warnings": result.warnings,
        "projects": {
            name: changes_data(news) for name, news in take_news(tracker, result).items()
        },
    }


def scan_lines(data: dict[str, Any]) -> list[str]:
    """`scan_data` for people: per project its epochs and changes, then the count."""
    lines = []
    for name, news in data["projects"].items():
        lines.append(f"{name}: epoch {news['since']} → {news['epoch']}")
        lines += ["  " + line for line in changes_lines(news)]
    if data["full"]:
        lines.append(f"{plural(data['scanned'], 'file')} scanned")
    else:
        lines.append(f"{plural(data['scanned'], 'changed path')} checked (the watcher saw "
                     "the rest)")
    if not data["projects"]:
        lines[-1] += "; nothing changed since the last scan"
    return lines


def scan(workspace: str | os.PathLike[str] | None, as_json: bool, full: bool = False) -> None:
    """`freshline scan`: bring the index up to date and print what changed in each project
    since the last scan."""
    # A full walk is long whoever does it: this process does it, rather than wait on the
    # watcher past the answer's time limit and then do it again.
    answer = None if full else _watcher(str(workspace) if workspace else None, {"op": "scan"})
    if answer is not None:
        data = answer["data"]
    else:
        from freshline.tracker import Tracker
        from freshline.tracker.autowatch import ensure

        cfg = load(workspace)
        tracker = Tracker(cfg)
        ensure(cfg, tracker.store)
        data = scan_data(tracker, full)

    def human() -> None:
        for line in scan_lines(data):
            say(line)
        for w in data["warnings"]:
            warn(w)

    emit(data, as_json, human)


# --- the hook -----------------------------------------------------------------------------


def hook(workspace: str | None = None, project: str | None = None) -> int:
    """`freshline hook claude-code`: nothing to print inside an agent another channel runs
    or when the watcher says nothing is due, else the hook itself (`hook.process`, which
    never fails the prompt)."""
    import io
    import json

    from freshline.interfaces import watchclient
    from freshline.session.owners import OWNER_ENV

    if os.environ.get(OWNER_ENV):
        return 0  # another channel delivers to this agent (`hook.core.answer` says so too)
    text = sys.stdin.read()
    try:
        cwd = json.loads(text).get("cwd")
    except (ValueError, AttributeError):
        cwd = None
    # The watcher of the workspace the hook will use (`session.pinning.workspace_for`):
    # `--workspace`, else the one holding Claude's project folder, else the cwd's.
    starts = [p for p in (os.environ.get(PROJECT_DIR_ENV), cwd)
              if isinstance(p, str) and os.path.isabs(p)]
    roots = (watchclient.workspace_root(workspace, start) for start in starts)
    root = next((r for r in roots if r), None)
    if root is not None:
        request = {"op": "due", "agent": AGENT, "payload": text}
        answer = watchclient.ask(root, request)
        if answer is not None and answer.get("due") is False:
            return 0
    from pathlib import Path

    from freshline.interfaces.hook import adapter
    from freshline.interfaces.hook.process import run
    from freshline.interfaces.hook.protocol import HookOptions

    claude = adapter(AGENT)
    options = HookOptions.from_env(claude, Path(workspace) if workspace else None, project)
    return run(claude, io.StringIO(text), sys.stdout, options)
