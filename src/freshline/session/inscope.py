"""The in-scope index entries of each project, kept up to date from the change log.

A live conversation records the project's files on every turn. Listing them from the index
walks the whole workspace (`Tracker.files_in_scope`), so a send would cost O(workspace).
This cache lists them once, then applies the project's coalesced changes since the epoch
it was built at: a turn costs O(project + changes). A scope change, a compacted log or a
new signature rebuilds it from the index.
"""

from __future__ import annotations

from dataclasses import dataclass

from freshline.config import Config
from freshline.store.records import ChangeKind, IndexEntry
from freshline.tracker import Tracker
from freshline.tracker.scoping import in_scope

_REBUILD = (ChangeKind.CONFIG, ChangeKind.COMPACTED)


@dataclass
class _Listing:
    signature: str
    epoch: int
    entries: dict[str, IndexEntry]


class InScope:
    """`entries(project)`: what `Tracker.files_in_scope` returns, without a full walk."""

    def __init__(self, config: Config, tracker: Tracker) -> None:
        self.config = config
        self.tracker = tracker
        self._listings: dict[str, _Listing] = {}

    def entries(self, project: str) -> list[IndexEntry]:
        """The project's indexed files now, in path order (call after a flush)."""
        signature = self.config.project(project).signature
        epoch = self.tracker.epoch(project)
        listing = self._listings.get(project)
        if listing is None or listing.signature != signature or not self._catch_up(listing,
                                                                                    project,
                                                                                    epoch):
            found = self.tracker.files_in_scope(project)
            listing = _Listing(signature, epoch, {e.path: e for e in found})
            self._listings[project] = listing
        return [listing.entries[p] for p in sorted(listing.entries)]

    def _catch_up(self, listing: _Listing, project: str, epoch: int) -> bool:
        """Apply the changes since the listing's epoch; False when it must be rebuilt."""
        if listing.epoch == epoch:
            return True
        answer = self.tracker.changes_since(project, listing.epoch)
        if answer.compacted or any(c.kind in _REBUILD for c in answer.changes):
            return False
        scope = self.config.project(project).scope
        for change in answer.changes:
            if change.old_path is not None:
                listing.entries.pop(change.old_path, None)
            if change.kind is ChangeKind.DELETED or (change.detail or {}).get("folder"):
                listing.entries.pop(change.path, None)
                continue
            entry = self.tracker.store.index_get(change.path)
            if in_scope(scope, entry):
                assert entry is not None
                listing.entries[change.path] = entry
            else:
                listing.entries.pop(change.path, None)
        listing.epoch = answer.epoch
        return True
