"""The inputs of the two context blocks: plain frozen records, built by the session layer.

Paths in these records are workspace-relative POSIX strings (snapshots may also be given
absolute, inside the workspace); the renderers make them absolute. Sequences may be passed
as any iterable and are stored as tuples; patterns may be passed as raw strings and are
classified with `Source.parse`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, TypeVar

from freshline.errors import FreshlineError
from freshline.store.records import Change, ChangeKind

from .wire import normalize_root

T = TypeVar("T")

PATH_KINDS = frozenset(
    {ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED}
)


class DocState(StrEnum):
    """What a document's snapshot is worth right now (the materializer's probe result)."""

    READY = "ready"  # the snapshot matches the live file: read the snapshot
    STALE = "stale"  # an older snapshot exists; a newer conversion is due
    PENDING = "pending"  # not converted yet
    FAILED = "failed"  # conversion failed for the live content; reason says why
    DELETED = "deleted"  # the source is gone: any snapshot of it is invalid


class SourceKind(StrEnum):
    """The kinds of include or exclude pattern (DESIGN section 3)."""

    FOLDER = "folder"  # `A/B`: the folder and everything below it
    GLOB = "glob"  # `notes/**/*.md`
    EXTENSION = "file type"  # `*.pdf`, anywhere in the workspace
    TAG = "tag"  # `#paper`
    NOTE = "note"  # `[[Title]]`
    PROPERTY = "property"  # `[status:active]`


_NOTE = re.compile(r"\[\[.+\]\]")
_PROPERTY = re.compile(r"\[[^\[\]:]+:[^\[\]]*\]")
_EXTENSION = re.compile(r"\*\.[^/*?\[]+")


@dataclass(frozen=True)
class Source:
    """One include or exclude pattern with its kind."""

    kind: SourceKind
    pattern: str

    @classmethod
    def parse(cls, pattern: str) -> Source:
        """Classify a raw pattern the way DESIGN section 3 does."""
        if pattern.startswith("#"):
            kind = SourceKind.TAG
        elif _NOTE.fullmatch(pattern):
            kind = SourceKind.NOTE
        elif _PROPERTY.fullmatch(pattern):
            kind = SourceKind.PROPERTY
        elif _EXTENSION.fullmatch(pattern):
            kind = SourceKind.EXTENSION
        elif any(ch in pattern for ch in "*?["):
            kind = SourceKind.GLOB
        else:
            kind = SourceKind.FOLDER
        return cls(kind, pattern)


@dataclass(frozen=True)
class DocumentInfo:
    """A convertible document: its state and, when it has one, its snapshot or failure."""

    path: str
    state: DocState
    snapshot: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        # accept any enum (e.g. the materializer's) or string with the same values
        _set(self, "state", DocState(getattr(self.state, "value", self.state)))
        if self.state is DocState.READY and not self.snapshot:
            raise FreshlineError(f"a ready document needs a snapshot: {self.path}")


@dataclass(frozen=True)
class ConfigChange:
    """A change of a project's scope: patterns in and out, mode, and the files it brought in."""

    added: tuple[Source, ...] = ()  # include patterns added
    removed: tuple[Source, ...] = ()  # include patterns removed
    exclude_added: tuple[Source, ...] = ()
    exclude_removed: tuple[Source, ...] = ()
    mode_from: str | None = None
    mode_to: str | None = None
    newly_included: tuple[str, ...] = ()  # paths now in scope because of this change

    def __post_init__(self) -> None:
        for name in ("added", "removed", "exclude_added", "exclude_removed"):
            _set(self, name, _tuple(getattr(self, name), _source))
        _set(self, "newly_included", _tuple(self.newly_included, str))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> ConfigChange:
        """Read a `config` change's detail: keys named like the fields, all optional."""
        return cls(**_known(cls, detail))


@dataclass(frozen=True)
class Refresh:
    """A conversation merged its checkout target: which commits, which paths it changed."""

    target: str
    from_commit: str
    to_commit: str
    paths: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # paths left with conflict markers (sync with conflicts)

    def __post_init__(self) -> None:
        _set(self, "paths", _tuple(self.paths, str))
        _set(self, "conflicts", _tuple(self.conflicts, str))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> Refresh:
        """Read a `refreshed` change's detail: target, from, to, paths, conflicts."""
        data = dict(detail or {})
        return cls(
            target=str(data.get("target", "")),
            from_commit=str(data.get("from", "")),
            to_commit=str(data.get("to", "")),
            paths=data.get("paths", ()),
            conflicts=data.get("conflicts", ()),
        )


@dataclass(frozen=True)
class ManifestInput:
    """Everything `render_manifest` shows."""

    project: str
    root: str  # the workspace root, an absolute POSIX path
    epoch: int
    mode: str = "live"
    include: tuple[Source, ...] = ()
    exclude: tuple[Source, ...] = ()
    files: tuple[str, ...] | None = None  # the project's files, when the caller has them
    documents: tuple[DocumentInfo, ...] = ()
    resumed: bool = False
    list_files_max: int = 50  # list the files only when there are at most this many
    cap: int = 200  # entry lines in all, over every section

    def __post_init__(self) -> None:
        _set(self, "root", normalize_root(self.root))
        _set(self, "include", _tuple(self.include, _source))
        _set(self, "exclude", _tuple(self.exclude, _source))
        if self.files is not None:
            _set(self, "files", _tuple(self.files, str))
        _set(self, "documents", _tuple(self.documents, _document))


@dataclass(frozen=True)
class UpdatesInput:
    """Everything `render_updates` shows; `changes` holds path changes only."""

    project: str
    root: str
    from_epoch: int
    to_epoch: int
    changes: tuple[Change, ...] = ()  # coalesced and scoped by the caller
    documents: tuple[DocumentInfo, ...] = ()  # document paths among the changes, by path
    ready_documents: tuple[DocumentInfo, ...] = ()  # ready since announced as in progress
    failed_documents: tuple[DocumentInfo, ...] = ()  # newly failed, to announce once
    invalid_snapshots: tuple[tuple[str, str], ...] = ()  # (source path, snapshot)
    compacted: bool = False
    config: tuple[ConfigChange, ...] = ()  # in the order they happened
    refreshed: tuple[Refresh, ...] = ()  # in the order they happened
    resumed: bool = False
    cap: int = 100  # entry lines per group

    def __post_init__(self) -> None:
        _set(self, "root", normalize_root(self.root))
        _set(self, "changes", _tuple(self.changes, _path_change))
        for name in ("documents", "failed_documents"):
            _set(self, name, _tuple(getattr(self, name), _document))
        _set(self, "ready_documents", _tuple(self.ready_documents, _with_snapshot))
        _set(self, "invalid_snapshots", _tuple(self.invalid_snapshots, _pair))
        _set(self, "config", _tuple(self.config, _config))
        _set(self, "refreshed", _tuple(self.refreshed, _refresh))

    @classmethod
    def from_changes(
        cls, project: str, root: str, from_epoch: int, to_epoch: int,
        changes: Iterable[Change], **rest: Any,
    ) -> UpdatesInput:
        """Build from a change-log slice: `config`, `refreshed` and `compacted` rows are
        read into their own fields, the path changes kept as they are."""
        kept, config, refreshed, compacted = [], [], [], False
        for change in changes:
            if change.kind is ChangeKind.CONFIG:
                config.append(ConfigChange.from_detail(change.detail))
            elif change.kind is ChangeKind.REFRESHED:
                refreshed.append(Refresh.from_detail(change.detail))
            elif change.kind is ChangeKind.COMPACTED:
                compacted = True
            else:
                kept.append(change)
        return cls(
            project, root, from_epoch, to_epoch, changes=tuple(kept),
            config=tuple(config), refreshed=tuple(refreshed), compacted=compacted, **rest,
        )


def _set(record: object, name: str, value: object) -> None:
    object.__setattr__(record, name, value)  # frozen records normalize once, at birth


def _tuple(items: Iterable[Any], convert: Callable[[Any], T]) -> tuple[T, ...]:
    return tuple(convert(item) for item in items)


def _source(item: Source | str) -> Source:
    return item if isinstance(item, Source) else Source.parse(item)


def _document(item: DocumentInfo) -> DocumentInfo:
    if not isinstance(item, DocumentInfo):
        raise FreshlineError(f"expected a DocumentInfo, got {item!r}")
    return item


def _with_snapshot(item: DocumentInfo) -> DocumentInfo:
    if not _document(item).snapshot:
        raise FreshlineError(f"a ready document needs a snapshot: {item.path}")
    return item


def _pair(item: Iterable[str]) -> tuple[str, str]:
    path, snapshot = item
    return (str(path), str(snapshot))


def _path_change(change: Change) -> Change:
    if change.kind not in PATH_KINDS:
        raise FreshlineError(f"not a path change (use UpdatesInput.from_changes): {change}")
    if change.kind is ChangeKind.RENAMED and not change.old_path:
        raise FreshlineError(f"a rename needs its old path: {change.path}")
    return change


def _config(item: ConfigChange | Mapping[str, Any]) -> ConfigChange:
    return item if isinstance(item, ConfigChange) else ConfigChange.from_detail(item)


def _refresh(item: Refresh | Mapping[str, Any]) -> Refresh:
    return item if isinstance(item, Refresh) else Refresh.from_detail(item)


def _known(cls: type, detail: Mapping[str, Any] | None) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in (detail or {}).items() if key in names}
