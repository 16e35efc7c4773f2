"""What a turn says about documents, worked out from probes (I/O shell around the blocks).

A session carries two sets between turns: documents announced as in progress (to point
at their snapshot once ready) and failures already announced (path → fingerprint, so a
failure is told once). This module decides, for one turn, what to tell and how the sets
change; the changes are staged and applied only when the prompt is accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from freshline.context import DocumentInfo
from freshline.materialize import DocStatus, Materializer, Probe, is_document
from freshline.store.records import Change, ChangeKind, IndexEntry

IN_PROGRESS = (DocStatus.PENDING, DocStatus.STALE)
# Changes after which a document is (still) in the project, to be probed again.
_ARRIVED = (ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.RENAMED, ChangeKind.ENTERED)


@dataclass
class DocumentNews:
    """The document parts of one updates block, and the staged set changes."""

    documents: list[DocumentInfo] = field(default_factory=list)  # changed documents
    ready: list[DocumentInfo] = field(default_factory=list)  # pending → ready since
    failed: list[DocumentInfo] = field(default_factory=list)  # newly failed
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (source, old snapshot)
    pending: set[str] = field(default_factory=set)  # the pending set after acceptance
    failures: dict[str, str] = field(default_factory=dict)  # announced failures after


def info(p: Probe) -> DocumentInfo:
    """A probe as the blocks' record."""
    snapshot = str(p.snapshot) if p.snapshot is not None else None
    return DocumentInfo(p.path, p.status, snapshot, p.reason)


class DocumentDesk:
    """Probes documents for one session turn."""

    def __init__(self, materializer: Materializer, entry: Callable[[str], IndexEntry | None]):
        self.materializer = materializer
        self.entry = entry

    def probe(self, path: str) -> Probe:
        """The live status of one document."""
        return self.materializer.probe(path, self.entry(path))

    def _old_snapshot(self, path: str) -> str | None:
        snap: Path = self.materializer.store.snapshot_path(path)
        return str(snap) if snap.exists() else None

    def news(
        self,
        changes: Iterable[Change],
        pending: Iterable[str],
        failures: dict[str, str],
        in_scope: Callable[[str], bool],
    ) -> DocumentNews:
        """What to say about changed and carried documents, and the sets afterwards."""
        out = DocumentNews(
            pending={p for p in pending if in_scope(p)},
            failures={p: f for p, f in failures.items() if in_scope(p)},
        )
        changed: set[str] = set()
        for c in changes:
            self._changed(c, out, changed)
        for path in sorted(out.pending - changed):
            self._carried(path, out)
        return out

    def _changed(self, c: Change, out: DocumentNews, changed: set[str]) -> None:
        gone = [c.path] if c.kind in (ChangeKind.DELETED, ChangeKind.LEFT) else []
        if c.kind is ChangeKind.RENAMED and c.old_path is not None:
            gone.append(c.old_path)
        for path in gone:
            if is_document(path):
                changed.add(path)
                out.pending.discard(path)
                out.failures.pop(path, None)
                snapshot = self._old_snapshot(path)
                if snapshot:
                    out.invalid.append((path, snapshot))
        if c.kind in _ARRIVED and is_document(c.path):
            if c.path in changed:
                return
            changed.add(c.path)
            p = self.probe(c.path)
            out.documents.append(info(p))
            self._track(p, out)

    def _track(self, p: Probe, out: DocumentNews) -> None:
        if p.status in IN_PROGRESS:
            out.pending.add(p.path)
        else:
            out.pending.discard(p.path)
        if p.status is DocStatus.FAILED:
            entry = self.entry(p.path)
            out.failures[p.path] = entry.blob if entry else ""

    def _carried(self, path: str, out: DocumentNews) -> None:
        p = self.probe(path)
        if p.status is DocStatus.READY:
            out.ready.append(info(p))
        elif p.status is DocStatus.FAILED:
            entry = self.entry(path)
            fingerprint = entry.blob if entry else ""
            if out.failures.get(path) != fingerprint:
                out.failed.append(info(p))
            out.failures[path] = fingerprint
        if p.status not in IN_PROGRESS:
            out.pending.discard(path)
