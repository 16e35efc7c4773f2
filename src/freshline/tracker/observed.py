"""What one scan observed, before it is scoped to projects."""

from __future__ import annotations

from dataclasses import dataclass

from freshline.store.records import ChangeKind, IndexEntry


@dataclass(frozen=True)
class Observed:
    """One path-level change with both sides: the index entry before and the fresh one."""

    kind: ChangeKind  # created, modified, deleted or renamed
    old: IndexEntry | None  # None for created
    new: IndexEntry | None  # None for deleted

    @property
    def content_changed(self) -> bool:
        """Whether the bytes differ between the two sides (a rename may also edit)."""
        return self.old is not None and self.new is not None and self.old.blob != self.new.blob


@dataclass(frozen=True)
class FolderRename:
    """A directory moved as a whole: every entry under `old` now sits under `new`."""

    old: str
    new: str
