"""Who watches what: each watcher's record in its workspace, and a registry per user.

`freshline watch` writes `.freshline/watcher.json` once it holds the watch lock (its pid,
when it started, the store it serves), notes there the last error it survived, removes it
when it stops as asked (Ctrl-C, `watch --stop`, idle time) and leaves the reason there
when an error stops it. A record whose pid no longer holds the lock belongs to a watcher
that stopped unexpectedly: the command that starts the next one says why, once
(`obituary`), and `status` shows it meanwhile.

So that `freshline watch --list` finds every watcher of this user on this machine, each
also leaves a pointer (workspace and pid) in `$XDG_RUNTIME_DIR/freshline/watchers/` (else
`$XDG_CACHE_HOME` or `~/.cache`); pointers whose watcher is gone are dropped as they are
found. Nothing here is trusted for correctness: readers still go by the lock and the
heartbeat.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from freshline.paths import DATA_DIR
from freshline.tracker.watchlock import holder

RECORD_NAME = "watcher.json"
STARTING_NAME = "watch.starting"  # the pid of a watcher started, not yet holding the lock
STARTING_TTL_S = 30.0  # a start older than this failed (or the pid is another process now)
REGISTRY = "freshline/watchers"


@dataclass(frozen=True)
class WatcherRecord:
    """What a watcher says about itself."""

    workspace: str
    pid: int
    started: float  # seconds since the epoch
    store: str  # where it writes: the store's location as `status` shows it
    last_error: str | None = None  # the last error it survived (a batch, a conversion)
    stopped: str | None = None  # why it stopped, when an error stopped it


class WatcherState(enum.Enum):
    """A workspace's watcher, as a command sees it."""

    RUNNING = "running"  # its heartbeat is fresh: flushes trust its hints
    STARTING = "starting"  # it holds the lock, but its first full scan is not done
    STOPPED = "not running"  # nobody holds the lock


def record_path(root: Path) -> Path:
    """The record of the workspace's watcher."""
    return Path(root) / DATA_DIR / RECORD_NAME


def read_record(root: Path) -> WatcherRecord | None:
    """The workspace's watcher record, or None (none, or unreadable)."""
    return _parse(_read_json(record_path(root)))


def started(root: Path, store: str) -> WatcherRecord:
    """Record that this process watches `root` now, serving `store`."""
    record = WatcherRecord(str(root), os.getpid(), time.time(), store)
    try:  # best effort (a full disk, a read-only home): the watcher works all the same
        _write_json(record_path(root), asdict(record))
        (Path(root) / DATA_DIR / STARTING_NAME).unlink(missing_ok=True)
        _write_json(_pointer(root), {"workspace": str(root), "pid": record.pid})
    except OSError:
        pass
    return record


def note_error(root: Path, message: str) -> None:
    """Keep `message` as this watcher's last error (best effort)."""
    record = read_record(root)
    if record is not None and record.pid == os.getpid():
        try:
            _write_json(record_path(root), asdict(replace(record, last_error=message)))
        except OSError:
            pass


def finished(root: Path, reason: str | None = None) -> None:
    """This watcher stops: as asked (no `reason`: its record goes), or because of an error
    (`reason` stays in its record for the next command to tell). Best effort."""
    try:
        _pointer(root).unlink(missing_ok=True)
    except OSError:
        pass
    path = record_path(root)
    record = read_record(root)
    if record is None or record.pid != os.getpid():
        return
    try:
        if reason is None:
            path.unlink(missing_ok=True)
        else:
            _write_json(path, asdict(replace(record, stopped=reason)))
    except OSError:
        pass


def state(root: Path, alive: bool) -> tuple[WatcherState, int | None, WatcherRecord | None]:
    """The workspace's watcher (`alive`: its heartbeat is fresh), its pid and its record;
    a stopped one's record says why it stopped, if it did not stop as asked."""
    pid = holder(root)
    record = read_record(root)
    if pid is None:
        pid = starter(root)
        if pid is None:
            return WatcherState.STOPPED, None, record
        return WatcherState.STARTING, pid, None
    if record is None or (pid and record.pid != pid):
        record = None  # the lock's new holder has not written its record yet
    return (WatcherState.RUNNING if alive else WatcherState.STARTING), pid, record


def starting(root: Path, pid: int) -> None:
    """Note that process `pid` was started to watch `root` (it has not taken the lock yet:
    Python is still loading it)."""
    path = Path(root) / DATA_DIR / STARTING_NAME
    path.write_text(f"{pid}\n", encoding="utf-8")


def starter(root: Path) -> int | None:
    """The pid of a watcher started a moment ago that has not taken the lock yet, if it
    is still alive."""
    path = Path(root) / DATA_DIR / STARTING_NAME
    try:
        text = path.read_text(encoding="utf-8").strip()
        fresh = time.time() - path.stat().st_mtime < STARTING_TTL_S
    except (OSError, ValueError):
        return None
    if not (fresh and text.isdigit()):
        return None
    try:
        os.kill(int(text), 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # alive, another user's
        pass
    return int(text)


def obituary(root: Path) -> str | None:
    """Why the workspace's last watcher stopped, when it stopped unexpectedly and nobody
    was told yet; the record is taken, so the reason is told once."""
    record = read_record(root)
    if record is None or holder(root) == record.pid:
        return None
    claimed = record_path(root).with_name(f"{RECORD_NAME}.{os.getpid()}")
    try:
        os.rename(record_path(root), claimed)  # of two commands, one tells
    except OSError:
        return None
    claimed.unlink(missing_ok=True)
    return stopped_because(record)


def stopped_because(record: WatcherRecord) -> str:
    """Why a watcher that is gone stopped, in words."""
    if record.stopped:
        return record.stopped
    said = f"; its last error: {record.last_error}" if record.last_error else ""
    return f"it ended without a word (killed, or the machine restarted){said}"


def listing() -> list[WatcherRecord]:
    """Every running watcher of this user, by workspace; pointers to watchers that are
    gone (or unreadable) are removed."""
    try:
        pointers = sorted(registry_dir().glob("*.json"))
    except OSError:
        return []
    found = []
    for pointer in pointers:
        data = _read_json(pointer)
        workspace, pid = (data.get("workspace"), data.get("pid")) if data else (None, None)
        if not isinstance(workspace, str) or not isinstance(pid, int) or (
                holder(Path(workspace)) != pid):
            pointer.unlink(missing_ok=True)
            continue
        record = read_record(Path(workspace))
        if record is None or record.pid != pid:
            record = WatcherRecord(workspace, pid, 0.0, "")
        found.append(record)
    return sorted(found, key=lambda r: r.workspace)


def registry_dir() -> Path:
    """Where this user's watchers leave their pointers."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / REGISTRY
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / REGISTRY


def pointer_key(root: Path) -> str:
    """The name of a workspace's pointer in the registry (without `.json`)."""
    return hashlib.sha1(os.fsencode(str(root))).hexdigest()[:16]


def _pointer(root: Path) -> Path:
    return registry_dir() / f"{pointer_key(root)}.json"


def _parse(data: dict[str, object] | None) -> WatcherRecord | None:
    if data is None:
        return None
    try:
        record = WatcherRecord(**data)  # type: ignore[arg-type]
    except TypeError:
        return None
    ok = isinstance(record.pid, int) and isinstance(record.started, (int, float))
    return record if ok else None


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, object]) -> None:
    """Write whole or not at all: a reader never sees half a record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)
