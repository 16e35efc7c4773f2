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

    CREATED = "created"  # a new path in the project (new file, rename into scope)
    MODIFIED = "modified"  # content changed in place (or deleted and recreated)
    DELETED = "deleted"  # a path gone from the project (removed, rename out of scope)
    RENAMED = "renamed"  # moved within the project; old_path says from where
    CONFIG = "config"  # the project's patterns or mode changed; detail says how
    COMPACTED = "compacted"  # no detail: the log no longer reaches back (a fresh manifest)
    REFRESHED = "refreshed"  # a conversation merged its checkout target; detail names it
    GIT = "git"  # HEAD moved (checkout, merge, ...); detail: operation, from, to, paths, count
    REWOUND = "rewound"  # a conversation was rewound to a turn; detail: mode, prompt, paths
    ENTERED = "entered"  # a file already there began to match the scope; detail: why
    LEFT = "left"  # a file still there stopped matching the scope; detail: why
    # A converter's new version makes the project's snapshots that an older one made again,
    # each as its document is next read; detail: converter, older, version, count.
    CONVERTER = "converter"


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
    # The content the path (a rename: its old path) had before the change, as
    # `content_key` writes it; None when there was none or it is not known. Comparing it
    # with the content now tells a change that was undone (`tracker.coalesce.net`).
    before: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class LoggedChange:
    """A change as read back from a project's change log."""

    epoch: int
    change: Change


def content_key(mode: int, blob: str) -> str:
    """What a change of content is measured on, as one string: the git mode (which also
    tells a link from a file) and the blob id."""
    return f"{mode:o} {blob}"


def entry_content(entry: IndexEntry) -> str | None:
    """An index entry's `content_key`; None for one listed, not read (its content is
    unknown: nothing can be found equal to it)."""
    return content_key(entry.mode, entry.blob) if entry.hashed else None


@dataclass(frozen=True)
class ChangeGroup:
    """Changes the log no longer lists one by one (compaction dropped them), counted: the
    path changes of one folder by kind, or one project-level entry (a HEAD move, a scope
    change) without its list of paths. `first_epoch`..`last_epoch` is the span of epochs
    the count covers."""

    first_epoch: int
    last_epoch: int
    folder: str = ""  # workspace-relative; "" the root (and for an entry)
    counts: dict[str, int] = field(default_factory=dict)  # by change kind
    entry: Change | None = None
