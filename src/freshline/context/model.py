"""The inputs of the two context blocks: plain frozen records, built by the session layer.

Paths in these records are workspace-relative POSIX strings (snapshots may also be given
absolute, inside the workspace); the renderers make them absolute. Sequences may be passed
as any iterable and are stored as tuples; patterns may be passed as raw strings and are
parsed with `freshline.scope.parse_pattern`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, TypeVar

from freshline.errors import ConfigError, FreshlineError
from freshline.materialize.status import DocStatus, Upgrade
from freshline.scope import Pattern, parse_pattern
from freshline.store.records import Change, ChangeGroup, ChangeKind

from .wire import normalize_root

T = TypeVar("T")

PATH_KINDS = frozenset({
    ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED,
    ChangeKind.ENTERED, ChangeKind.LEFT,
})


@dataclass(frozen=True)
class DocumentInfo:
    """A convertible document: its state and, when it has one, its snapshot or failure."""

    path: str
    state: DocStatus
    snapshot: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        # accept the status's string value too (as stored or sent as JSON)
        _set(self, "state", DocStatus(getattr(self.state, "value", self.state)))
        if self.state is DocStatus.READY and not self.snapshot:
            raise FreshlineError(f"a ready document needs a snapshot: {self.path}")


@dataclass(frozen=True)
class ConfigChange:
    """A change of a project's scope: patterns in and out, mode, and the files it brought in."""

    include_added: tuple[Pattern, ...] = ()
    include_removed: tuple[Pattern, ...] = ()
    exclude_added: tuple[Pattern, ...] = ()
    exclude_removed: tuple[Pattern, ...] = ()
    ignore_added: tuple[Pattern, ...] = ()  # `[workspace] ignore` applies to every project
    ignore_removed: tuple[Pattern, ...] = ()
    mode_from: str | None = None
    mode_to: str | None = None
    newly_included: tuple[str, ...] = ()  # paths it brought in (also `created` changes)
    ignore_files: tuple[str, ...] = ()  # files whose ignore rules changed (.gitignore, ...)

    def __post_init__(self) -> None:
        for name in PATTERN_FIELDS:
            _set(self, name, _tuple(getattr(self, name), _pattern))
        _set(self, "newly_included", _tuple(self.newly_included, str))
        _set(self, "ignore_files", _tuple(self.ignore_files, str))
        _set(self, "mode_from", _mode(self.mode_from))
        _set(self, "mode_to", _mode(self.mode_to))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> ConfigChange:
        """Read the tracker's `config` detail: keys named like the fields, all optional,
        the mode as `{"mode": {"from": ..., "to": ...}}` (other keys are ignored)."""
        data = _known(cls, detail)
        mode = (detail or {}).get("mode")
        if isinstance(mode, Mapping):
            data.update(mode_from=mode.get("from"), mode_to=mode.get("to"))
        return cls(**data)


PATTERN_FIELDS = (
    "include_added", "include_removed", "exclude_added", "exclude_removed",
    "ignore_added", "ignore_removed",
)


@dataclass(frozen=True)
class Refresh:
    """A conversation merged its checkout target: which commits, which paths it changed."""

    target: str
    from_commit: str
    to_commit: str
    paths: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # paths a sync left in conflict (sync with conflicts)
    conflict_kinds: tuple[tuple[str, str], ...] = ()  # (path, kind) e.g. "modify/delete"

    def __post_init__(self) -> None:
        _set(self, "paths", _tuple(self.paths, str))
        _set(self, "conflicts", _tuple(self.conflicts, str))
        kinds = self.conflict_kinds
        _set(self, "conflict_kinds", _tuple(
            kinds.items() if isinstance(kinds, Mapping) else kinds, _pair))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> Refresh:
        """Read a `refreshed` change's detail: target, from, to, paths, conflicts and
        `conflict_kinds` ({path: kind})."""
        data = dict(detail or {})
        return cls(
            target=str(data.get("target", "")),
            from_commit=str(data.get("from", "")),
            to_commit=str(data.get("to", "")),
            paths=data.get("paths", ()),
            conflicts=data.get("conflicts", ()),
            conflict_kinds=data.get("conflict_kinds", ()),
        )


@dataclass(frozen=True)
class Rewound:
    """The conversation was rewound to where one of its turns began: its files, its
    transcript or both went back; `paths` differ from what the agent last saw."""

    files: bool
    transcript: bool
    prompt: str = ""  # the message that turn began with (its first line)
    paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "paths", _tuple(self.paths, str))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> Rewound:
        """Read a `rewound` change's detail: mode (code, conversation, both), prompt, paths."""
        data = dict(detail or {})
        mode = str(data.get("mode", "both"))
        return cls(mode != "conversation", mode != "code", str(data.get("prompt", "")),
                   data.get("paths", ()))


@dataclass(frozen=True)
class GitOperation:
    """HEAD moved in the workspace's checkout: by which operation, between which commits,
    and the paths in this project whose entry the move changed (the tracker logs each of
    those paths as a change too)."""

    operation: str  # checkout, merge, pull, reset, rebase, commit, cherry-pick, stash, other
    from_commit: str  # "" when there was no HEAD before
    to_commit: str
    paths: tuple[str, ...] = ()
    count: int = -1  # how many paths; -1: len(paths)

    def __post_init__(self) -> None:
        _set(self, "paths", _tuple(self.paths, str))
        if self.count < 0:
            _set(self, "count", len(self.paths))

    @classmethod
    def from_detail(cls, detail: Mapping[str, Any] | None) -> GitOperation:
        """Read a `git` change's detail: operation, from, to, paths, count."""
        data = dict(detail or {})
        paths = data.get("paths", ())
        return cls(
            operation=str(data.get("operation", "other")),
            from_commit=str(data.get("from", "")),
            to_commit=str(data.get("to", "")),
            paths=paths,
            count=int(data.get("count", len(paths))),
        )


class SourceKind(StrEnum):
    """Who changed a path, as far as freshline can prove it (never a guessed author)."""

    SESSION = "session"  # another freshline session's tool wrote exactly this content
    GIT = "git"  # a git operation moved HEAD (the tracker's typed entry lists the path)
    REFRESH = "refresh"  # the conversation merged its checkout target (a refresh or sync)
    OUTSIDE = "outside"  # none of these: outside freshline, author unknown


@dataclass(frozen=True)
class Source:
    """Where a change came from. `name` is the session id (SESSION), the operation
    (GIT: checkout, merge, ...) or the target (REFRESH); `agent` the session's agent
    (claude-code, mcp, freshline); the commits say where HEAD or the target moved."""

    kind: SourceKind
    name: str = ""
    agent: str = ""
    from_commit: str = ""
    to_commit: str = ""

    def __post_init__(self) -> None:
        _set(self, "kind", SourceKind(getattr(self.kind, "value", self.kind)))


_STALE_KINDS = (ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED, ChangeKind.LEFT)


@dataclass(frozen=True)
class StaleRead:
    """A file the agent read (or its tool wrote) whose content changed since: at `turn`,
    and how (MODIFIED, DELETED, RENAMED to `new_path`, or LEFT the project: hidden by an
    ignore rule or moved out, where the index no longer sees it), by `source`."""

    path: str
    turn: int
    change: ChangeKind
    source: Source = field(default_factory=lambda: Source(SourceKind.OUTSIDE))
    wrote: bool = False  # the agent's last look at it was its own write, not a read
    new_path: str | None = None  # RENAMED: where it went

    def __post_init__(self) -> None:
        if self.change not in _STALE_KINDS:
            raise FreshlineError(f"a stale read is modified, deleted, renamed or left: {self}")
        if (self.change is ChangeKind.RENAMED) != bool(self.new_path):
            raise FreshlineError(f"a renamed stale read needs its new path, only it: {self}")


@dataclass(frozen=True)
class FileGroup:
    """Files of a manifest already counted per folder (a stored manifest keeps its big
    file lists this way: see `compact_manifest`)."""

    folder: str  # workspace-relative ("" for the root)
    count: int


@dataclass(frozen=True)
class ManifestInput:
    """Everything `render_manifest` shows."""

    project: str
    root: str  # the workspace root, an absolute POSIX path
    epoch: int
    mode: str = "live"  # or the config's mode enum
    include: tuple[Pattern, ...] = ()
    exclude: tuple[Pattern, ...] = ()
    files: tuple[str, ...] | None = None  # the project's files, when the caller has them
    documents: tuple[DocumentInfo, ...] = ()
    resumed: bool = False
    forked: str = ""  # a fork's first manifest: the conversation it continues, and where
    list_files_max: int = 50  # file lines at most: past that, files are counted per folder
    file_groups: tuple[FileGroup, ...] = ()  # files counted per folder (with `files` set)
    pattern_files: tuple[str, ...] = ()  # files that folder patterns name, when grouped

    def __post_init__(self) -> None:
        _set(self, "root", normalize_root(self.root))
        _set(self, "mode", _mode(self.mode))
        _set(self, "include", _tuple(self.include, _pattern))
        _set(self, "exclude", _tuple(self.exclude, _pattern))
        if self.files is not None:
            _set(self, "files", _tuple(self.files, str))
        _set(self, "documents", _tuple(self.documents, _document))
        _set(self, "file_groups", _tuple(self.file_groups, _file_group))
        _set(self, "pattern_files", _tuple(self.pattern_files, str))


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
    # The log no longer reaches `from_epoch`, not even as counts: nothing from it can be
    # told (a fresh manifest goes with the block).
    compacted: bool = False
    folded: tuple[ChangeGroup, ...] = ()  # earlier changes the log keeps only as counts
    config: tuple[ConfigChange, ...] = ()  # in the order they happened
    refreshed: tuple[Refresh, ...] = ()  # in the order they happened
    git: tuple[GitOperation, ...] = ()  # HEAD moves, in the order they happened
    resumed: bool = False
    stale: tuple[StaleRead, ...] = ()  # files the agent read that changed since (listed first)
    writers: tuple[tuple[str, Source], ...] = ()  # changed paths another session wrote
    rewound: tuple[Rewound, ...] = ()  # rewinds of the conversation, in the order they happened
    upgraded: tuple[Upgrade, ...] = ()  # converters whose new version re-makes snapshots

    def __post_init__(self) -> None:
        _set(self, "root", normalize_root(self.root))
        _set(self, "changes", _tuple(self.changes, _path_change))
        for name in ("documents", "failed_documents"):
            _set(self, name, _tuple(getattr(self, name), _document))
        _set(self, "ready_documents", _tuple(self.ready_documents, _with_snapshot))
        _set(self, "invalid_snapshots", _tuple(self.invalid_snapshots, _pair))
        _set(self, "config", _tuple(self.config, _config))
        _set(self, "refreshed", _tuple(self.refreshed, _refresh))
        _set(self, "git", _tuple(self.git, _git))
        _set(self, "stale", _tuple(self.stale, _stale))
        _set(self, "writers", _tuple(self.writers, _writer))
        _set(self, "folded", _tuple(self.folded, _group))
        _set(self, "rewound", _tuple(self.rewound, _rewound))
        _set(self, "upgraded", _tuple(self.upgraded, _upgrade))

    @classmethod
    def from_changes(
        cls, project: str, root: str, from_epoch: int, to_epoch: int,
        changes: Iterable[Change], **rest: Any,
    ) -> UpdatesInput:
        """Build from a change-log slice: `config`, `refreshed`, `git`, `compacted`,
        `rewound` and `converter` rows are read into their own fields, the path changes
        kept as they are."""
        kept: list[Change] = []
        rewound: list[Rewound] = []
        config: list[ConfigChange] = []
        refreshed: list[Refresh] = []
        git: list[GitOperation] = []
        upgraded: list[Upgrade] = []
        compacted = False
        for change in changes:
            if change.kind is ChangeKind.CONFIG:
                config.append(ConfigChange.from_detail(change.detail))
            elif change.kind is ChangeKind.REFRESHED:
                refreshed.append(Refresh.from_detail(change.detail))
            elif change.kind is ChangeKind.GIT:
                git.append(GitOperation.from_detail(change.detail))
            elif change.kind is ChangeKind.COMPACTED:
                compacted = True
            elif change.kind is ChangeKind.REWOUND:
                rewound.append(Rewound.from_detail(change.detail))
            elif change.kind is ChangeKind.CONVERTER:
                upgraded.append(Upgrade.from_detail(change.detail))
            else:
                kept.append(change)
        return cls(
            project, root, from_epoch, to_epoch, changes=tuple(kept), config=tuple(config),
            refreshed=tuple(refreshed), git=tuple(git), compacted=compacted,
            rewound=tuple(rewound), upgraded=tuple(upgraded), **rest,
        )


def _set(record: object, name: str, value: object) -> None:
    object.__setattr__(record, name, value)  # frozen records normalize once, at birth


def _tuple(items: Iterable[Any], convert: Callable[[Any], T]) -> tuple[T, ...]:
    return tuple(convert(item) for item in items)


def _mode(mode: object) -> str | None:
    # a mode may come as the config's enum; the wire wants its value
    return None if mode is None else str(getattr(mode, "value", mode))


def _pattern(item: Pattern | str) -> Pattern:
    if isinstance(item, Pattern):
        return item
    try:
        return parse_pattern(item)
    except ValueError as exc:
        raise ConfigError(f"bad pattern {item!r}: {exc}") from None


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


def _rewound(item: Rewound | Mapping[str, Any]) -> Rewound:
    return item if isinstance(item, Rewound) else Rewound.from_detail(item)


def _upgrade(item: Upgrade | Mapping[str, Any]) -> Upgrade:
    return item if isinstance(item, Upgrade) else Upgrade.from_detail(item)


def _git(item: GitOperation | Mapping[str, Any]) -> GitOperation:
    return item if isinstance(item, GitOperation) else GitOperation.from_detail(item)


def _stale(item: StaleRead) -> StaleRead:
    if not isinstance(item, StaleRead):
        raise FreshlineError(f"expected a StaleRead, got {item!r}")
    return item


def _writer(item: Iterable[Any]) -> tuple[str, Source]:
    path, source = item
    if not isinstance(source, Source):
        raise FreshlineError(f"expected a Source, got {source!r}")
    return (str(path), source)


def _group(item: ChangeGroup) -> ChangeGroup:
    if not isinstance(item, ChangeGroup):
        raise FreshlineError(f"expected a ChangeGroup, got {item!r}")
    return item


def _file_group(item: FileGroup | Iterable[Any]) -> FileGroup:
    if isinstance(item, FileGroup):
        return item
    folder, n = item
    return FileGroup(str(folder), int(n))


def _known(cls: type, detail: Mapping[str, Any] | None) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in (detail or {}).items() if key in names}
