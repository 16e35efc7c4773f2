"""The records the store keeps and returns: index entries and changes.

They live at the lowest layer so that the store, the tracker and everything above share
one definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class FileKind(StrEnum):
    """What an index entry is."""

    FILE = "file"  # a regular file, identified by its git blob id
    LINK = "link"  # a symbolic link, recorded (its target's blob id) and never followed


class ChangeKind(StrEnum):
    """The kinds of change the change log holds."""

    CREATED = "created"  # a path entered the project (new file, rename into scope)
    MODIFIED = "modified"  # content changed in place (or deleted and recreated)
    DELETED = "deleted"  # a path left the project (removed, rename out of scope)
    RENAMED = "renamed"  # moved within the project; old_path says from where
    CONFIG = "config"  # the project's patterns or mode changed; detail says how
    COMPACTED = "compacted"  # older log rows were dropped: re-enumerate the project
    REFRESHED = "refreshed"  # a conversation merged its checkout target; detail names it
    GIT = "git"  # HEAD moved (checkout, merge, ...); detail: operation, from, to, paths, count
    REWOUND = "rewound"  # a conversation was rewound to a turn; detail: mode, prompt, paths


UNHASHED = ""  # the blob of an entry listed but not read yet (`tracker/listing.py`)


@dataclass(frozen=True)
class IndexEntry:
    """One file as last scanned."""

    path: str  # workspace-relative POSIX path
    kind: FileKind
    size: int
    mtime_ns: int
    inode: int
    dev: int
    blob: str  # git blob id (hex sha1) of the content, or of the link target; or UNHASHED
    mode: int = 0o100644  # git file mode: 100644, 100755 or 120000
    tags: tuple[str, ...] = ()
    properties: dict[str, Any] = field(default_factory=dict)
    # False: a note whose tags and properties were never read (no scope asked for them
    # when it was scanned); `tags` and `properties` are then empty and say nothing.
    parsed: bool = True

    @property
    def hashed(self) -> bool:
        """Whether `blob` names the content (False: listed by its stat, not read yet)."""
        return self.blob != UNHASHED


@dataclass(frozen=True)
class Change:
    """One coalesced fact about one path, or a project-level entry."""

    kind: ChangeKind
    path: str
    old_path: str | None = None
    detail: dict[str, Any] | None = None


@dataclass(frozen=True)
class LoggedChange:
    """A change as read back from a project's change log."""

    epoch: int
    change: Change
