"""A workspace's watcher as data and as lines for people: `status` and `watch --list`.

Standard library only, so the fast `status` prints the watcher's answer with it; the
tracker's registry is loaded by what reads the records.
"""

from __future__ import annotations

import time

from freshline.interfaces.text import columns, duration
from freshline.printable import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

    from freshline.tracker.registry import WatcherRecord, WatcherState


def watcher_data(
    state: WatcherState, record: WatcherRecord | None, pid: int | None, now: float | None = None
) -> dict[str, Any]:
    """A watcher as JSON-able data: its state, pid, start, uptime, store, last error, and
    for one that stopped unasked, why."""
    from freshline.tracker.registry import WatcherState, stopped_because

    now = time.time() if now is None else now
    running = state is not WatcherState.STOPPED
    data: dict[str, Any] = {"state": state.value, "pid": pid if running else None,
                            "started": None, "uptime_s": None, "store": None,
                            "last_error": None, "stopped": None}
    if record is None:
        return data
    if running:
        known = record.started > 0  # (a pointer whose record is gone says only its pid)
        data |= {"pid": record.pid, "started": record.started if known else None,
                 "store": record.store or None, "last_error": record.last_error,
                 "uptime_s": round(max(0.0, now - record.started), 1) if known else None}
    else:
        data["stopped"] = stopped_because(record)
    return data


def watcher_line(data: dict[str, Any], store: str | None = None) -> str:
    """`watcher: running (pid 4242, up 5 min)` and what else there is to say: the store it
    writes to when it is not `store`, its last error, or why it had stopped."""
    facts = []
    if data["pid"]:
        facts.append(f"pid {data['pid']}")
    if data["uptime_s"] is not None:
        facts.append(f"up {duration(data['uptime_s'])}")
    if data["store"] and store and data["store"] != store:
        facts.append(f"writing to {data['store']}")
    line = f"watcher: {data['state']}" + (f" ({', '.join(facts)})" if facts else "")
    if data["last_error"]:
        line += f"; last error: {shown(data['last_error'])}"
    if data["stopped"]:
        line += f"; it had stopped: {shown(data['stopped'])}"
    return line


def listing_data(records: list[WatcherRecord], now: float | None = None) -> list[dict[str, Any]]:
    """`watch --list` as data: each running watcher with its workspace."""
    from freshline.tracker.registry import WatcherState

    return [{"workspace": r.workspace}
            | watcher_data(WatcherState.RUNNING, r, r.pid, now) for r in records]


def listing_lines(rows: list[dict[str, Any]]) -> list[str]:
    """`watch --list` for people: a table, or a sentence when no watcher runs."""
    if not rows:
        return ["no watcher is running"]
    table = [[shown(r["workspace"]), str(r["pid"]),
              duration(r["uptime_s"]) if r["started"] else "?", shown(r["store"] or "?"),
              shown(r["last_error"] or "-")] for r in rows]
    return columns(["workspace", "pid", "up", "store", "last error"], table)
