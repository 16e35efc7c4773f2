"""The in-scope index entries of each project, kept up to date from the change log.

A live conversation records the project's files on every turn. Listing them reads the whole
index (`Tracker.files_in_scope`), so a send would cost O(workspace).
This cache lists them once, then applies the project's coalesced changes since the epoch
it was built at: a turn costs O(project + changes). `since()` gives those changes alone,
so a turn that knows the epoch of its previous tree costs O(changes). A scope change, a
compacted log or a new signature rebuilds from the index. Threads share the cache (the
HTTP server's calls run at once): a listing is caught up and copied out under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from freshline.config import Config
from freshline.store.records import Change, ChangeKind, IndexEntry
from freshline.tracker import Tracker
from freshline.tracker.scoping import in_scope

_REBUILD = (ChangeKind.CONFIG, ChangeKind.COMPACTED)


@dataclass
class _Listing:
    signature: str
    epoch: int
    entries: dict[str, IndexEntry]


@dataclass
class ScopeDelta:
    """How a project's in-scope files changed after an epoch, as of `epoch`."""

    epoch: int  # the epoch the changes reach (entries may be newer still)
    changed: dict[str, IndexEntry] = field(default_factory=dict)  # entered or modified
    removed: set[str] = field(default_factory=set)  # left the scope or deleted


class InScope:
    """`entries(project)`: what `Tracker.files_in_scope` returns, without a full walk."""

    def __init__(self, config: Config, tracker: Tracker) -> None:
        self.config = config
        self.tracker = tracker
        self._listings: dict[str, _Listing] = {}
        self._lock = threading.Lock()

    def entries(self, project: str) -> list[IndexEntry]:
        """The project's indexed files now, in path order (call after a flush)."""
        signature = self.config.project(project).signature
        epoch = self.tracker.epoch(project)
        with self._lock:
            listing = self._listings.get(project)
            fresh = listing is not None and listing.signature == signature
            if listing is None or not fresh or not self._catch_up(listing, project, epoch):
                found = self.tracker.files_in_scope(project)
                listing = _Listing(signature, epoch, {e.path: e for e in found})
                # Entries listed, not read, are read later without a change to catch up on.
                if all(e.hashed for e in found):
                    self._listings[project] = listing
            return [listing.entries[p] for p in sorted(listing.entries)]

    def since(self, project: str, epoch: int) -> ScopeDelta | None:
        """What changed among the project's in-scope files after `epoch`; None when only a
        full listing can tell (a scope change, a compacted log, an epoch it never had)."""
        # Every path touched, undone or not: an undone change still moved its entry's stat.
        answer = self.tracker.changes_since(project, epoch, undone=True)
        if answer.compacted or any(c.kind in _REBUILD for c in answer.changes):
            return None
        delta = ScopeDelta(answer.epoch)
        for path, entry in self._updates(project, answer.changes):
            if entry is None:
                delta.changed.pop(path, None)
                delta.removed.add(path)
            else:
                delta.removed.discard(path)
                delta.changed[path] = entry
        return delta

    def _catch_up(self, listing: _Listing, project: str, epoch: int) -> bool:
        """Apply the changes since the listing's epoch; False when it must be rebuilt."""
        if listing.epoch == epoch:
            return True
        delta = self.since(project, listing.epoch)
        if delta is None:
            return False
        for path in delta.removed:
            listing.entries.pop(path, None)
        listing.entries.update(delta.changed)
        listing.epoch = delta.epoch
        return True

    def _updates(
        self, project: str, changes: Sequence[Change]
    ) -> Iterator[tuple[str, IndexEntry | None]]:
        """(path, its in-scope entry now or None) for each path the changes touch: first
        the old paths of renames, then each change's path (coalesced changes are a set: a
        path a rename left may have been created again, `renamed b → c` beside `created
        b`, and the creation must win whatever the order)."""
        scope = self.config.project(project).scope
        per_file = [c for c in changes if c.path and not (c.detail or {}).get("folder")]
        for change in per_file:  # (project-level entries and folder summaries left out)
            if change.old_path is not None:
                yield change.old_path, None
        for change in per_file:
            entry = None
            if change.kind is not ChangeKind.DELETED:
                entry = self.tracker.store.index_get(change.path)
            yield change.path, entry if in_scope(scope, entry) else None
