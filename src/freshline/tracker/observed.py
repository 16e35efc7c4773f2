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
        """Whether the content differs between the two sides (a rename may also edit):
        the bytes, the kind (file or link) or the executable bit."""
        return (
            self.old is not None
            and self.new is not None
            and content_of(self.old) != content_of(self.new)
        )


def content_of(e: IndexEntry) -> tuple[str, str, int]:
    """What a change of content is measured on: blob id, kind and git mode."""
    return e.blob, e.kind.value, e.mode


@dataclass(frozen=True)
class FolderRename:
    """A directory moved as a whole: every entry under `old` now sits under `new`."""

    old: str
    new: str
