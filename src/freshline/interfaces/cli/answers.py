"""What the hot commands answer, as data and as lines for people: the same whoever
computes it, this process (no service) or the service over its socket
(`service/requests.py`), so every path prints the same thing. Module-level imports stay
within the standard library's basics (the hot commands import this on their fast path).
"""

from __future__ import annotations

import os
import time

from freshline.interfaces.text import columns, plural
from freshline.printable import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

    from freshline.config import Config, ProjectConfig
    from freshline.session import SessionManager
    from freshline.store import SessionRecord
    from freshline.store.records import Change, ChangeGroup
    from freshline.tracker import ChangesSince, Tracker


def load(workspace: str | os.PathLike[str] | None) -> Config:
    """The config of the workspace a command means (`--workspace`, else found from the cwd)."""
    from pathlib import Path

    from freshline.config import find_workspace, load_config

    return load_config(find_workspace(Path.cwd(), Path(workspace) if workspace else None))


# --- project list -------------------------------------------------------------------------


def project_dict(p: ProjectConfig) -> dict[str, Any]:
    """A project's definition as JSON-able data."""
    return {
        "name": p.name,
        "include": list(p.include),
        "exclude": list(p.exclude),
        "mode": p.mode.value,
        "allow_secrets": list(p.allow_secrets),
        "signature": p.signature,
    }


def projects_lines(data: list[dict[str, Any]]) -> list[str]:
    """The projects (as `project_dict` gives them) for people: a table, or how to add one."""
    if not data:
        return ["no projects yet: add one with `freshline project add NAME --include PATTERN`"]
    rows = [[p["name"], p["mode"], ", ".join(p["include"]), ", ".join(p["exclude"]) or "-"]
            for p in data]
    return columns(["project", "mode", "include", "exclude"], rows)


# --- status -------------------------------------------------------------------------------


def status_data(
    tracker: Tracker, counts: dict[str, Any] | None = None, watched: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per-project epochs, files and documents by state, the last full scan, the watcher,
    where the store is (a URL without its password), the files secrets were withheld from;
    the index flushed first, so nothing is stale. `counts` keeps each project's files
    between calls (the service's: counted again only when its epoch or scope moved);
    `watched` is the service's view of the workspace (None: no service answers)."""
    from freshline.interfaces.cli.watchers import watcher_data
    from freshline.materialize import SnapshotStore, census, is_document
    from freshline.tracker.flushscan import LAST_FULL_SCAN

    tracker.flush()
    store = tracker.store
    states = store.project_states()
    last = store.meta_get(LAST_FULL_SCAN)
    snapshots = SnapshotStore(tracker.config.data_dir)
    kept = {} if counts is None else counts
    projects = {}
    for name, project in tracker.config.projects.items():
        state = states.get(name)
        epoch = state.epoch if state else 0
        key = (epoch, project.signature)
        if kept.get(name, (None,))[0] != key:
            files = tracker.files_in_scope(name)
            kept[name] = (key, len(files), [e for e in files if is_document(e.path)])
        _key, count, documents = kept[name]
        projects[name] = {
            "epoch": epoch,
            "compacted_through": state.compacted_through if state else 0,
            "files": count,
            "documents": dict(sorted(census(snapshots, tracker.root, documents).items())),
        }
    return {
        "workspace": str(tracker.root),
        "store": store.location,
        "watcher": watcher_data(watched),
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
    if not withheld:
        return []
    files = "1 file" if len(withheld) == 1 else f"{len(withheld)} files"
    lines = [f"secrets withheld from {files} (a false positive: add a "
             "'freshline: allow-secret' comment, or the path to [security] allow_secrets_in):"]
    for w in withheld:
        kinds = ", ".join(dict.fromkeys(w["kinds"]))
        lines.append(f"  {shown(w['path'])}: {len(w['kinds'])} ({kinds})")
    return lines


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
    first, last = g["first_epoch"], g["last_epoch"]
    span = f"epoch {first}" if first == last else f"epochs {first}–{last}"
    if g["entry"] is not None:
        return f"{'counted':<9} {change_line(g['entry'])} ({span})"
    counts = ", ".join(f"{n} {kind}" for kind, n in g["counts"].items())
    return f"{'counted':<9} {shown(g['folder'] or '.')}/: {counts} ({span})"


def change_line(c: dict[str, Any]) -> str:
    """A change (as `change_dict` gives it) as one line for people: odd file names escaped
    (`printable.shown`), a HEAD move as what it did."""
    if c["kind"] == "git":
        d = c["detail"] or {}
        moved = f"{str(d.get('from', ''))[:7] or '(no commit)'} → {str(d.get('to', ''))[:7]}"
        return f"{'git':<9} HEAD moved {moved} by {d.get('operation')}: {d.get('count')} paths"
    if c["kind"] == "config":
        return f"{'config':<9} {config_text(c['detail'] or {})}"
    if c["kind"] == "converter":
        d = c["detail"] or {}
        older = ", ".join(map(str, d.get("older", ())))
        return (f"converter {d.get('converter')} {older} → {d.get('version')}: "
                f"{d.get('count')} snapshots made again as read")
    if c["old_path"] is not None:
        return f"{c['kind']:<9} {shown(c['old_path'])} → {shown(c['path'])}"
    if c["kind"] in ("entered", "left"):  # a file that crossed the scope's edge: say why
        from freshline.tracker.reasons import reason_text

        why = reason_text(c["detail"])
        return f"{c['kind']:<9} {shown(c['path'])}" + (f" ({why})" if why else "")
    return f"{c['kind']:<9} {shown(c['path'])}"


# A scope change's parts, as the tracker's `config` detail keys them, in words.
_SCOPE_WORDS = (
    ("include_added", "now included"), ("include_removed", "no longer included"),
    ("exclude_added", "now excluded"), ("exclude_removed", "no longer excluded"),
    ("ignore_added", "now ignored"), ("ignore_removed", "no longer ignored"),
    ("allow_secrets_added", "secrets now allowed"),
    ("allow_secrets_removed", "secrets no longer allowed"),
    ("ignore_files", "ignore rules changed in"),
)


def config_text(detail: dict[str, Any]) -> str:
    """What a `config` change changed in the project's scope: its patterns, the ignore
    files whose rules changed, its mode."""
    parts = [f"{words} {', '.join(shown(str(v)) for v in detail[key])}"
             for key, words in _SCOPE_WORDS if detail.get(key)]
    mode = detail.get("mode")
    if isinstance(mode, dict):
        parts.append(f"mode {mode.get('from') or 'unset'} → {mode.get('to') or 'unset'}")
    return "; ".join(parts) or "the project's scope changed"


def news_data(answer: ChangesSince) -> dict[str, Any]:
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


def news_lines(data: dict[str, Any]) -> list[str]:
    """`news_data` for people: what the log no longer reaches, the counts, the changes."""
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
            name: news_data(news) for name, news in take_news(tracker, result).items()
        },
    }


def scan_lines(data: dict[str, Any]) -> list[str]:
    """`scan_data` for people: per project its epochs and changes, then the count."""
    lines = []
    for name, news in data["projects"].items():
        lines.append(f"{name}: epoch {news['since']} → {news['epoch']}")
        lines += ["  " + line for line in news_lines(news)]
    if data["full"]:
        lines.append(f"{plural(data['scanned'], 'file')} scanned")
    else:
        lines.append(f"{plural(data['scanned'], 'changed path')} checked (the watcher saw "
                     "the rest)")
    if not data["projects"]:
        lines[-1] += "; nothing changed since the last scan"
    return lines


# --- changes ------------------------------------------------------------------------------


def changes_data(tracker: Tracker, project: str, since: int) -> dict[str, Any]:
    """What changed in `project` after epoch `since` (`news_data`), the index flushed
    first; UsageError for an epoch the project never had."""
    from freshline.errors import UsageError

    tracker.flush()
    epoch = tracker.epoch(project)
    if not 0 <= since <= epoch:
        raise UsageError(f"--since {since}: project {project} has epochs 0 to {epoch}")
    return news_data(tracker.changes_since(project, since))


def changes_lines(data: dict[str, Any]) -> list[str]:
    """`changes_data` for people: `news_lines`, then the epochs."""
    return [*news_lines(data), f"{data['project']}: epoch {data['since']} → {data['epoch']}"]


# --- updates ------------------------------------------------------------------------------


def updates_data(m: SessionManager, session: str) -> dict[str, Any]:
    """What the next send of `session` would deliver, at its budget (delivers and moves
    nothing); ConflictStop or SyncRequired when it would stop."""
    from freshline.context import Channel

    return {"session": session, "blocks": m.preview(session, Channel.SEND)}


def updates_lines(data: dict[str, Any]) -> list[str]:
    """`updates` for people: the blocks the next send would deliver."""
    return [data["blocks"] or "nothing new"]


# --- session list -------------------------------------------------------------------------

# A session's state in a user's words (the store's `landing` is a session never sent to).
STATE_WORDS = {"landing": "new", "active": "active", "closed": "closed"}
HOOK = "hook"  # the channel of the agents whose hooks call freshline (`Channel.HOOK`)


def session_dict(s: SessionRecord) -> dict[str, Any]:
    """A session as JSON-able data (the manifest text left out)."""
    return {
        "id": s.id,
        "project": s.project,
        "state": s.state.value,
        "mode": s.mode,
        "cursor": s.cursor,
        "manifest_epoch": s.manifest_epoch,
        "channel": s.channel,
        "agent": agent_of(s),
        "title": s.title,
        "created_at": s.created_at,
        "resumed_at": s.resumed_at,
        "last_active_at": s.last_active,
        "pending_documents": s.pending_docs,
        "announced_failures": sorted(s.announced_failures),
        "target": s.target,
        "agent_session": agent_session(s),
    }


def agent_of(s: SessionRecord) -> str:
    """Who talks in the session: the agent whose hook opened it (claude-code, gemini-cli,
    codex), else its channel (chat, send, mcp, acp, pull)."""
    agent = (s.external_id or "").partition(":")[0]
    return agent if s.channel == HOOK and agent else s.channel


def agent_session(s: SessionRecord) -> str | None:
    """The other agent's session a hook's session is pinned to, in words ("codex 7eac…"),
    or None (MCP sessions' ids are freshline's own)."""
    agent, _, theirs = (s.external_id or "").partition(":")
    return f"{agent} {theirs}" if s.channel == HOOK and theirs else None


def sessions_data(m: SessionManager) -> list[dict[str, Any]]:
    """Every session, the one used last at the end, each with its conversation's size
    (sessions left idle past `[sessions] idle_close` are closed first)."""
    from freshline.session.lifecycle import close_idle

    m.reload_config()
    close_idle(m)
    sessions = sorted(m.sessions(), key=lambda s: (s.last_active, s.id))
    sizes = {r.conversation: m.conversations.size(r.conversation) for r in m.conversations.refs()}
    return [session_dict(s) | {"size_bytes": sizes.get(s.id)} for s in sessions]


def sessions_lines(data: list[dict[str, Any]]) -> list[str]:
    """`sessions_data` for people: a table, or how to open the first session."""
    if not data:
        return ["no sessions yet: open one with `freshline session new --project NAME`"]
    # A session pinned to another agent's has no message of its own: that session names it.
    rows = [[s["id"], s["project"], s.get("agent", s["channel"]),
             STATE_WORDS.get(s["state"], s["state"]), told(s["cursor"]),
             when(s["created_at"]), when(s["last_active_at"]),
             "-" if s["size_bytes"] is None else human_bytes(s["size_bytes"]),
             shown(s["title"] or s["agent_session"] or "-")] for s in data]
    headers = ["id", "project", "agent", "state", "told up to", "opened", "last used",
               "size", "title"]
    return columns(headers, rows)


def human_bytes(size: int) -> str:
    """`size` bytes as people read them: 512 B, 3.4 kB, 12.0 MB."""
    if size < 1000:
        return f"{size} B"
    value, unit = size / 1000, "kB"
    for bigger in ("MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.1f} {unit}"


def told(cursor: int | None) -> str:
    """How far a session's agent was told: `epoch N`, or `nothing yet`."""
    return "nothing yet" if cursor is None else f"epoch {cursor}"


def when(stamp: float | None) -> str:
    """A time as people read it: today's as 14:05, older ones with the date."""
    if stamp is None:
        return "never"
    local = time.localtime(stamp)
    same_day = time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d")
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", local)
