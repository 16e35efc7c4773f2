"""The state of one document's snapshot, found cheaply: an index entry, a stat of the
source, a snapshot's first line and a marker file. No document is parsed."""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.materialize.converters import converter_for
from freshline.materialize.snapshots import FailureMarker, SnapshotHeader, SnapshotStore
from freshline.store.records import IndexEntry
from freshline.tracker.hashing import blob_of


class DocStatus(StrEnum):
    """Where a document's snapshot stands against the live file."""

    READY = "ready"  # the snapshot was made from the live file's exact content
    STALE = "stale"  # a snapshot of an older version exists: usable, but out of date
    PENDING = "pending"  # no snapshot yet and no failure recorded for this version
    FAILED = "failed"  # the live version failed to convert for good (the marker matches)
    DELETED = "deleted"  # the source no longer exists; any old snapshot is invalid


@dataclass(frozen=True)
class Probe:
    """A document's status, the snapshot a reader may use, and why it failed."""

    path: str  # workspace-relative source path
    status: DocStatus
    snapshot: Path | None = None  # a usable snapshot (ready or stale), if any
    reason: str | None = None  # the failure reason when status is FAILED
    retry_at: float | None = None  # pending after a transient failure: not tried before then
    # READY from a snapshot an older version of the converter made (this version): usable
    # as it is, and made again when the document is next read (`Materializer.for_reading`).
    older: str | None = None


def probe(store: SnapshotStore, root: Path, path: str, entry: IndexEntry | None) -> Probe:
    """Compare the live fingerprint (from `entry`) with the snapshot's and the marker's.

    `entry` is the document's index entry; None means the index does not have it (yet).
    A snapshot of the live content that an older version of the converter made is ready,
    with `older` set: an improved converter redoes a document when it is next read, not
    every document at once. A marker counts only for the converter version that wrote it.
    """
    if not os.path.lexists(root / path):
        return Probe(path, DocStatus.DELETED)
    blob = functools.cache(lambda: _fingerprint(root, path, entry))  # asked only if needed
    made_by = _converter_key(path)
    header = store.read_header(path)
    snapshot = store.snapshot_path(path) if header is not None else None
    current = header is not None and header.fingerprint == blob()
    if current and header is not None and _key(header) == made_by:
        return Probe(path, DocStatus.READY, snapshot)
    marker = store.read_marker(path)
    failed = marker is not None and (marker.fingerprint, _key(marker)) == (blob(), made_by)
    if current and header is not None and made_by is not None and header.converter == made_by[0]:
        # Made again when read, unless this version already failed on it for good.
        again = not failed or (marker is not None and marker.retry_at is not None)
        return Probe(path, DocStatus.READY, snapshot, older=header.version if again else None)
    waiting = DocStatus.STALE if snapshot else DocStatus.PENDING
    if failed and marker is not None:
        if marker.retry_at is not None:  # transient: still to do, once the backoff is over
            return Probe(path, waiting, snapshot, retry_at=marker.retry_at)
        return Probe(path, DocStatus.FAILED, snapshot, marker.reason)
    return Probe(path, waiting, snapshot)


def _fingerprint(root: Path, path: str, entry: IndexEntry | None) -> str | None:
    """The live file's blob id: the index's, or the file's own for an entry listed but not
    read yet (`tracker/listing.py`); None when the index lacks it or it cannot be read."""
    if entry is None or entry.hashed:
        return entry.blob if entry is not None else None
    try:
        return blob_of(root / path)
    except OSError:
        return None


def _converter_key(path: str) -> tuple[str, str] | None:
    converter = converter_for(path)
    return (converter.name, converter.version) if converter is not None else None


def _key(record: SnapshotHeader | FailureMarker) -> tuple[str, str]:
    return (record.converter, record.version)


def census(store: SnapshotStore, root: Path, entries: Iterable[IndexEntry]) -> dict[str, int]:
    """How many of the documents among `entries` are in each state (states with none are
    left out), probed now: a conversion that finished counts as ready at once."""
    counts = Counter(
        probe(store, root, e.path, e).status.value for e in entries if converter_for(e.path)
    )
    return {state.value: counts[state.value] for state in DocStatus if counts[state.value]}


@dataclass(frozen=True)
class Upgrade:
    """Snapshots of one converter made by its other versions: the new version makes each
    again as its document is next read."""

    converter: str
    older: tuple[str, ...]  # the versions that made them, sorted
    version: str  # the converter's version now
    count: int  # documents whose snapshot another version made

    def __post_init__(self) -> None:
        object.__setattr__(self, "older", tuple(str(v) for v in self.older))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> Upgrade:
        """Read a `converter` change's detail (see `detail`)."""
        data = dict(detail or {})
        return cls(str(data.get("converter", "")), tuple(data.get("older", ())),
                   str(data.get("version", "")), int(data.get("count", 0)))

    def detail(self) -> dict[str, Any]:
        """The change-log detail of this upgrade: converter, older, version, count."""
        return {"converter": self.converter, "older": list(self.older),
                "version": self.version, "count": self.count}


def upgrades(headers: Iterable[SnapshotHeader]) -> list[Upgrade]:
    """The converters whose other versions made snapshots among `headers`."""
    found: dict[str, tuple[set[str], str, int]] = {}
    for header in headers:
        converter = converter_for(header.source)
        if converter is None or header.converter != converter.name:
            continue
        if header.version != converter.version:
            older, _, count = found.get(converter.name, (set(), converter.version, 0))
            found[converter.name] = (older | {header.version}, converter.version, count + 1)
    return [Upgrade(name, tuple(sorted(older)), version, count)
            for name, (older, version, count) in sorted(found.items())]
