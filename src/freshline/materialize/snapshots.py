"""The snapshot store: `<data_dir>/snapshots/<id>.md` and `<id>.failed.json` beside it.

`<id>` is derived from the source path alone (a readable slug plus a short hash), so the
pointer an agent was given stays valid when the document is re-converted. A snapshot's
first line is an HTML comment holding a JSON header (source path, fingerprint = git blob
id, converter, version, time); reading it back reads that line only. Files are written
to a temp file and renamed into place, so a reader never sees half a snapshot. They are
not fsynced: snapshots are derived data, and a torn one fails its header check and is
converted again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

HEADER_START = "<!-- freshline-snapshot "
HEADER_END = " -->"
SNAPSHOT_SUFFIX = ".md"
MARKER_SUFFIX = ".failed.json"
TEMP_MAX_AGE_S = 3600  # a temp file older than this was left by a killed writer


@dataclass(frozen=True)
class SnapshotHeader:
    """What a snapshot was made from."""

    source: str  # workspace-relative path of the document
    fingerprint: str  # git blob id of the document's bytes that were converted
    converter: str
    version: str
    converted_at: str  # ISO-8601 UTC


@dataclass(frozen=True)
class FailureMarker:
    """A conversion that failed for one exact version of a document."""

    source: str
    fingerprint: str  # honoured only while the live file still has this blob id
    reason: str
    converter: str
    version: str
    failed_at: str  # ISO-8601 UTC
    # A transient failure (a full disk, a killed or timed-out worker) is tried again from
    # this time (seconds since the epoch); None: the document itself failed, for good.
    retry_at: float | None = None
    attempts: int = 1  # failed conversions of this fingerprint in a row


def snapshot_id(path: str) -> str:
    """The stable file stem for a source path: a readable slug and a hash of the path."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", path).strip("-.")[:80] or "document"
    digest = hashlib.sha1(path.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{slug}-{digest[:10]}"


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string with seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class SnapshotStore:
    """Reads and writes snapshots and failure markers under `<data_dir>/snapshots/`."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / "snapshots"

    def snapshot_path(self, source: str) -> Path:
        """Where the snapshot of `source` lives (whether or not it exists)."""
        return self.directory / (snapshot_id(source) + SNAPSHOT_SUFFIX)

    def marker_path(self, source: str) -> Path:
        """Where the failure marker of `source` lives (whether or not it exists)."""
        return self.directory / (snapshot_id(source) + MARKER_SUFFIX)

    def read_header(self, source: str) -> SnapshotHeader | None:
        """The header of the snapshot of `source`, or None if absent or unreadable."""
        return self.header_at(self.snapshot_path(source))

    def source_of(self, snapshot: Path) -> str | None:
        """The source path of the snapshot file at `snapshot`, when it is one of this store's
        snapshots and its header names a source whose snapshot it is; else None."""
        if snapshot.parent != self.directory:
            return None
        header = self.header_at(snapshot)
        if header is None or self.snapshot_path(header.source) != snapshot:
            return None
        return header.source

    @staticmethod
    def header_at(snapshot: Path) -> SnapshotHeader | None:
        """The header of the snapshot file at `snapshot`, or None if absent or unreadable."""
        try:
            # Not through a link, and never waiting on a FIFO put in its place.
            fd = os.open(snapshot, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            with open(fd, encoding="utf-8") as handle:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return None
                line = handle.readline(65536)
        except (OSError, UnicodeDecodeError):
            return None
        if not (line.startswith(HEADER_START) and line.rstrip("\n").endswith(HEADER_END)):
            return None
        body = line.rstrip("\n")[len(HEADER_START) : -len(HEADER_END)]
        return _load(SnapshotHeader, body)

    def headers(self) -> Iterator[SnapshotHeader]:
        """The header of every snapshot in the store (each file's first line only)."""
        for entry in self._entries():
            if entry.name.endswith(SNAPSHOT_SUFFIX):
                header = self.header_at(entry)
                if header is not None:
                    yield header

    def read_marker(self, source: str) -> FailureMarker | None:
        """The failure marker of `source`, or None if absent or unreadable."""
        try:
            body = self.marker_path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return _load(FailureMarker, body)

    def write_snapshot(self, header: SnapshotHeader, text: str) -> Path:
        """Write the snapshot of `header.source` atomically and return its path."""
        target = self.snapshot_path(header.source)
        self._write_atomic(target, f"{HEADER_START}{_dump(header)}{HEADER_END}\n\n{text}")
        return target

    def write_marker(self, marker: FailureMarker) -> bool:
        """Write a failure marker; best effort: False if it could not be written."""
        try:
            self._write_atomic(self.marker_path(marker.source), _dump(marker) + "\n")
        except OSError:
            return False
        return True

    def clear_marker(self, source: str) -> None:
        """Remove the failure marker of `source`, if there is one."""
        with contextlib.suppress(OSError):
            self.marker_path(source).unlink(missing_ok=True)

    def prune(self, keep: Iterable[str], dry_run: bool = False) -> list[Path]:
        """Remove snapshots and markers of every source not in `keep`; return what went
        (`dry_run`: what would go)."""
        wanted = {snapshot_id(source) for source in keep}
        obsolete = [entry for entry in self._entries() if _obsolete(entry, wanted)]
        if dry_run:
            return obsolete
        removed = []
        for entry in obsolete:
            with contextlib.suppress(OSError):
                entry.unlink()
                removed.append(entry)
        return removed

    def _entries(self) -> list[Path]:
        try:
            return [p for p in self.directory.iterdir() if p.is_file()]
        except FileNotFoundError:
            return []

    def _write_atomic(self, target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            temp.write_text(text, encoding="utf-8", errors="replace")
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise


_Record = TypeVar("_Record", "SnapshotHeader", "FailureMarker")


def _obsolete(entry: Path, wanted: set[str]) -> bool:
    name = entry.name
    if name.endswith(".tmp"):
        with contextlib.suppress(OSError):
            return time.time() - entry.stat().st_mtime > TEMP_MAX_AGE_S
        return False
    for suffix in (MARKER_SUFFIX, SNAPSHOT_SUFFIX):
        if name.endswith(suffix):
            return name.removesuffix(suffix) not in wanted
    return False


def _dump(record: SnapshotHeader | FailureMarker) -> str:
    # ASCII only, so undecodable path bytes survive; ">" escaped so no value can close
    # the HTML comment the header lives in.
    return json.dumps(asdict(record)).replace(">", "\\u003e")


def _load(kind: type[_Record], body: str) -> _Record | None:
    try:
        return kind(**json.loads(body))
    except (ValueError, TypeError):
        return None
