"""Coalescing: the net effect of changes (pure, set semantics).

A flush logs a *set* of changes, each relative to the state before the flush: every
`renamed` reads its old path from that state, so two renames may swap two paths. The
result of coalescing is such a set too, sorted by path for stable output. A span of
epochs is therefore a sequence of sets, and `coalesce_sets` applies them set by set;
`coalesce` is the special case of one change per step.

Rules: create+modify = create; create+delete = nothing; delete+create = modify (a
replace); rename A→B then B→C = A→C; rename A→B then delete B = delete A; a content
change and a rename are both reported, whatever the order they came in. A rename onto a
path the reader still knew (deleted, then renamed over) is told as `deleted` old +
`modified` target, never as a silent overwrite. Project-level entries (config,
compacted, refreshed, git) are kept in order after the path changes; folder-rename
summaries are chained (A→B then B→C is A→C) and kept while files moved with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from freshline.store.records import Change, ChangeKind

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
_PATH_KINDS = {C, M, D, R}


@dataclass
class _Fate:
    origin: str | None  # the path this content had before the sequence; None if created in it
    modified: bool = False


def is_folder_rename(change: Change) -> bool:
    """Whether a change is the summary entry of a whole folder moved."""
    return change.kind is R and bool(change.detail and change.detail.get("folder"))


def coalesce(changes: Iterable[Change]) -> list[Change]:
    """The net changes of `changes` applied one after another, as a set sorted by path."""
    return coalesce_sets([c] for c in changes)


def coalesce_sets(sets: Iterable[Iterable[Change]]) -> list[Change]:
    """The net changes of a sequence of change sets, each applied at once (as one flush
    logged it), as one set sorted by path: path changes, then project-level entries."""
    net = _Net()
    for changes in sets:
        net.apply(list(changes))
    return net.result()


@dataclass
class _Net:
    live: dict[str, _Fate] = field(default_factory=dict)  # touched paths that exist now
    gone: set[str] = field(default_factory=set)  # original paths whose content is lost
    folders: list[Change] = field(default_factory=list)
    others: list[Change] = field(default_factory=list)

    def fate(self, path: str) -> _Fate:
        return self.live.get(path) or _Fate(origin=path)

    def apply(self, changes: list[Change]) -> None:
        """Apply one set: renames read the state before it; then deletions, renames
        landing, creations, and modifications of the paths as they are after it."""
        by_kind: dict[ChangeKind, list[Change]] = {kind: [] for kind in _PATH_KINDS}
        for c in changes:
            if is_folder_rename(c):
                self._chain_folder(c)
            elif c.kind in _PATH_KINDS:
                by_kind[c.kind].append(c)
            elif c not in self.others:
                self.others.append(c)
        moving = [(c.path, self.fate(c.old_path or "")) for c in by_kind[R]]
        for c in by_kind[R]:
            self.live.pop(c.old_path or "", None)
        for c in by_kind[D]:
            self._lose(self.live.pop(c.path, _Fate(origin=c.path)))
        for path, fate in moving:
            replaced = self.live.pop(path, None)
            if replaced is not None:
                self._lose(replaced)
            self.live[path] = fate
        for c in by_kind[C]:
            self._create(c.path)
        for c in by_kind[M]:
            self.live.setdefault(c.path, _Fate(origin=c.path)).modified = True

    def _lose(self, fate: _Fate) -> None:
        if fate.origin is not None:
            self.gone.add(fate.origin)

    def _create(self, path: str) -> None:
        if path in self.live:  # already there: its content changed
            self.live[path].modified = True
        elif path in self.gone:  # its original was deleted in the sequence: a replace
            self.gone.discard(path)
            self.live[path] = _Fate(origin=path, modified=True)
        else:
            self.live[path] = _Fate(origin=None)

    def _chain_folder(self, c: Change) -> None:
        for i, earlier in enumerate(self.folders):
            if earlier.path == c.old_path:
                self.folders[i] = Change(R, c.path, earlier.old_path, earlier.detail)
                return
        self.folders.append(c)

    def result(self) -> list[Change]:
        out: dict[tuple[str, ChangeKind], Change] = {}

        def add(kind: ChangeKind, path: str, old: str | None = None) -> None:
            if kind is C and (path, D) in out:  # a path told deleted and created: modified
                del out[path, D]
                kind = M
            elif kind is D and (path, C) in out:
                del out[path, C]
                kind = M
            out[path, kind] = Change(kind, path, old)

        for origin in self.gone - self.live.keys():
            add(D, origin)
        for path, fate in self.live.items():
            if fate.origin is None:
                add(M if path in self.gone else C, path)
            elif fate.origin != path and path in self.gone:
                # Moved onto a path the reader still knew: the reader must drop the old
                # path and re-read the target, whose earlier content is gone.
                add(D, fate.origin)
                add(M, path)
            elif fate.origin != path:
                add(R, path, fate.origin)
                if fate.modified:
                    add(M, path)
            elif fate.modified:
                add(M, path)
        paths = sorted(out.values(), key=lambda c: (c.path, c.kind.value))
        return paths + self._kept_folders(paths) + self.others

    def _kept_folders(self, paths: list[Change]) -> list[Change]:
        """Folder summaries whose moves still stand: old ≠ new and files moved with them."""
        moves = [(c.old_path or "", c.path) for c in paths if c.kind is R]
        return [
            f
            for f in self.folders
            if f.old_path != f.path
            and any(_under(old, f.old_path or "") and _under(new, f.path) for old, new in moves)
        ]


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder + "/")
