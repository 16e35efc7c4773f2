"""A workspace as the service watches it, as data and as lines for people: `status`,
`watch --list` and `service status`.

Standard library only, so the fast `status` prints the service's answer with it.
"""

from __future__ import annotations

import time

from freshline.interfaces.text import columns, duration
from freshline.printable import shown

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from typing import Any

NOT_RUNNING = "not running"  # no service answered


def watcher_data(watched: dict[str, Any] | None, now: float | None = None) -> dict[str, Any]:
    """The service's view of a workspace (`Watched.view`, None when no service answered)
    as `status` shows it: its state, the service's pid, since when, the store, its last
    error."""
    if watched is None:
        return {"state": NOT_RUNNING, "pid": None, "started": None, "uptime_s": None,
                "store": None, "last_error": None}
    now = time.time() if now is None else now
    started = watched.get("started")
    return {"state": watched["state"], "pid": watched.get("pid"), "started": started,
            "uptime_s": round(max(0.0, now - started), 1) if started else None,
            "store": watched.get("store"), "last_error": watched.get("error")}


def watcher_line(data: dict[str, Any], store: str | None = None) -> str:
    """`watcher: watching (service pid 4242, up 5 min)` and what else there is to say:
    the store it writes to when it is not `store`, its last error."""
    facts = []
    if data["pid"]:
        facts.append(f"service pid {data['pid']}")
    if data["uptime_s"] is not None:
        facts.append(f"up {duration(data['uptime_s'])}")
    if data["store"] and store and data["store"] != store:
        facts.append(f"writing to {data['store']}")
    line = f"watcher: {data['state']}" + (f" ({', '.join(facts)})" if facts else "")
    if data["last_error"]:
        line += f"; last error: {shown(data['last_error'])}"
    return line


def listing_lines(rows: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """`watch --list` for people: a table of the workspaces the service watches, or a
    sentence when it watches none."""
    if not rows:
        return ["the service watches no workspace"]
    table = []
    for row in rows:
        data = watcher_data(row, now)
        up = duration(data["uptime_s"]) if data["uptime_s"] is not None else "?"
        table.append([shown(row["workspace"]), data["state"], up, shown(data["store"] or "?"),
                      shown(data["last_error"] or "-")])
    return columns(["workspace", "state", "up", "store", "last error"], table)
