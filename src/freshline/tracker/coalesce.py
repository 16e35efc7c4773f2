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
`modified` target, never as a silent overwrite. A scope transition behaves like the
change it stands for: `entered` like a creation, `left` like a deletion (entered+left =
nothing; left+entered = modify). Project-level entries (config, compacted, refreshed,
git) are kept in order after the path changes, and the steps of one HEAD move (a rebase
a watcher saw commit by commit) are one move; folder-rename summaries are chained (A→B
then B→C is A→C) and kept while files moved with them.

Each result keeps the content its path (a rename: its old path) had at the start
(`Change.before`). What was undone is found by `net`, which compares that with the
content now, for the paths `net_lookups` names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from freshline.store.records import Change, ChangeKind
from freshline.tracker.reasons import Why

C, M, D, R = ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED
ENTERED, LEFT, GIT = ChangeKind.ENTERED, ChangeKind.LEFT, ChangeKind.GIT
_PATH_KINDS = {C, M, D, R, ENTERED, LEFT}
_ARRIVING = {C: D, ENTERED: LEFT}  # each arrival and the departure it cancels into a modify
_DEPARTING = {D: C, LEFT: ENTERED}


@dataclass
class _Fate:
    origin: str | None  # the path this content had before the sequence; None if created in it
    modified: bool = False
    before: str | None = None  # the origin's content before the sequence, when known
    why: dict[str, Any] | None = None  # why it entered (live) or left (gone) the scope
    transition: bool = False  # entered (live) or left (gone) the scope: it exists outside


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


def repeated_paths(changes: Iterable[Change]) -> set[str]:
    """The paths a span's logged changes changed more than once (a rename changes both
    of its paths)."""
    touched = Counter(p for c in changes for p in (c.path, c.old_path) if p)
    return {p for p, n in touched.items() if n > 1}


def net_lookups(changes: Iterable[Change], repeated: Collection[str]) -> list[str]:
    """The paths whose content now `net` needs: the modified ones among `repeated` (the
    paths the span changed more than once: one change alone cannot have been undone) or
    renamed there (their history lies on the paths they came from), and those that left
    the scope (which may be gone since)."""
    changes = list(changes)
    moved = {c.path for c in changes if c.kind is R}
    return [c.path for c in changes if _followed(c)
            or (c.kind is M and c.before is not None
                and (c.path in repeated or c.path in moved))]


def _followed(c: Change) -> bool:
    """Whether `c` left the scope where the index still sees the file (a tag, a property,
    a pattern): the index holds no ignored path, and a file moved out is elsewhere, so a
    file hidden by an ignore rule or moved out stays told as having left."""
    why = (c.detail or {}).get("why")
    return c.kind is LEFT and why not in (Why.IGNORED, Why.MOVED)


def net(changes: list[Change], now: Mapping[str, str]) -> list[Change]:
    """`changes` (coalesced) without what was undone: a modification whose path holds
    the content it had at the start (`now`: the content of the paths `net_lookups`
    named; one missing there is gone), and a path that left the scope and is gone since
    is deleted (where the index can see it: `_followed`). HEAD moves keep only the paths
    still told."""
    out: list[Change] = []
    for c in changes:
        if c.kind is M and c.before is not None and now.get(c.path) == c.before:
            continue
        if _followed(c) and c.path not in now:
            c = Change(D, c.path, before=c.before)
        out.append(c)
    told = {p for c in out if c.kind in _PATH_KINDS for p in (c.path, c.old_path) if p}
    return [_git_told(c, told) if c.kind is GIT else c for c in out]


def _git_told(c: Change, told: set[str]) -> Change:
    detail = dict(c.detail or {})
    paths = [p for p in detail.get("paths", ()) if p in told]
    if len(paths) == len(detail.get("paths", ())):
        return c
    return replace(c, detail={**detail, "paths": paths, "count": len(paths)})


@dataclass
class _Net:
    live: dict[str, _Fate] = field(default_factory=dict)  # touched paths that exist now
    gone: dict[str, _Fate] = field(default_factory=dict)  # original paths whose content is lost
    folders: list[Change] = field(default_factory=list)
    others: list[Change] = field(default_factory=list)

    def fate(self, path: str, before: str | None) -> _Fate:
        """What a rename moves from `path`: the content there now. A path told gone
        earlier in the sequence and renamed in a later set had only left the scope (a
        config change, judged before the batch that then moved the file): it moves on."""
        known = self.live.get(path)
        if known is not None:
            return known
        lost = self.gone.pop(path, None)
        if lost is not None:
            return _Fate(lost.origin, lost.modified, lost.before)
        return _Fate(origin=path, before=before)

    def apply(self, changes: list[Change]) -> None:
        """Apply one set: renames read the state before it; then deletions, renames
        landing, creations, and modifications of the paths as they are after it."""
        by_kind: dict[ChangeKind, list[Change]] = {kind: [] for kind in _PATH_KINDS}
        for c in changes:
            if is_folder_rename(c):
                self._chain_folder(c)
            elif c.kind in _PATH_KINDS:
                by_kind[c.kind].append(c)
            else:
                self._other(c)
        moving = [(c.path, self.fate(c.old_path or "", c.before)) for c in by_kind[R]]
        for c in by_kind[R]:
            self.live.pop(c.old_path or "", None)
        for c in (*by_kind[D], *by_kind[LEFT]):
            fate = self.live.pop(c.path, None) or _Fate(c.path, before=c.before)
            self._lose(fate, c)
        for path, fate in moving:
            replaced = self.live.pop(path, None)
            if replaced is not None:
                self._lose(replaced)
            self.live[path] = fate
        for c in (*by_kind[C], *by_kind[ENTERED]):
            self._create(c)
        for c in by_kind[M]:
            self.live.setdefault(c.path, _Fate(c.path, before=c.before)).modified = True

    def _lose(self, fate: _Fate, cause: Change | None = None) -> None:
        fate.transition = cause is not None and cause.kind is LEFT
        fate.why = cause.detail if fate.transition and cause is not None else None
        if fate.origin is not None:
            self.gone[fate.origin] = fate

    def _create(self, c: Change) -> None:
        path = c.path
        if path in self.live:  # already there: its content changed
            self.live[path].modified = True
        elif path in self.gone:  # its original was lost in the sequence: a replace
            self.live[path] = _Fate(path, True, self.gone.pop(path).before)
        else:
            why = c.detail if c.kind is ENTERED else None
            self.live[path] = _Fate(origin=None, why=why, transition=c.kind is ENTERED)

    def _other(self, c: Change) -> None:
        last = self.others[-1] if self.others else None
        if c.kind is GIT and last is not None and last.kind is GIT and _follows(last, c):
            self.others[-1] = _joined(last, c)
        elif c not in self.others:
            self.others.append(c)

    def _chain_folder(self, c: Change) -> None:
        for i, earlier in enumerate(self.folders):
            if earlier.path == c.old_path:
                self.folders[i] = Change(R, c.path, earlier.old_path, earlier.detail)
                return
        self.folders.append(c)

    def result(self) -> list[Change]:
        out: dict[tuple[str, ChangeKind], Change] = {}

        def add(kind: ChangeKind, path: str, fate: _Fate, old: str | None = None) -> None:
            undo = _ARRIVING.get(kind) or _DEPARTING.get(kind)
            if undo is not None and (path, undo) in out:  # told gone and there: modified
                del out[path, undo]
                kind = M
            if kind is D and (path, M) in out:  # a path re-read is not gone
                return
            if kind is M:
                out.pop((path, D), None)
            detail = fate.why if kind in (ENTERED, LEFT) else None
            before = fate.before
            if kind is M and before is None and path in self.gone:
                # Something arrived where the reader's file was lost: `net` finds it undone
                # if it holds the reader's content.
                before = self.gone[path].before
            out[path, kind] = Change(kind, path, old, detail, before)

        for origin, lost in self.gone.items():
            if origin not in self.live:
                add(LEFT if lost.transition else D, origin, lost)
        replaced = self._replaced()
        for path, fate in self.live.items():
            if fate.origin is None:
                arrived = ENTERED if fate.transition else C
                add(M if path in self.gone else arrived, path, fate)
            elif fate.origin != path and path in replaced:
                # Moved onto a path the reader still knew: the reader must drop the old
                # path and re-read the target, whose earlier content is gone.
                add(D, fate.origin, fate)
                add(M, path, _Fate(path))
            elif fate.origin != path:
                add(R, path, fate, fate.origin)
                if fate.modified:
                    add(M, path, fate)
            elif fate.modified:
                add(M, path, fate)
        paths = sorted(out.values(), key=lambda c: (c.path, c.kind.value))
        return paths + self._kept_folders(paths) + self.others

    def _replaced(self) -> set[str]:
        """Paths the reader knew whose content is told gone: lost, or moved onto such a
        path (told `deleted` old + `modified` target), so that a rename onto one of
        these is told the same way in turn."""
        replaced = set(self.gone)
        moved = [(p, f.origin) for p, f in self.live.items() if f.origin not in (None, p)]
        grew = True
        while grew:
            grew = False
            for path, origin in moved:
                if path in replaced and origin not in replaced:
                    replaced.add(origin or "")
                    grew = True
        return replaced

    def _kept_folders(self, paths: list[Change]) -> list[Change]:
        """Folder summaries whose moves still stand: old ≠ new and files moved with them."""
        moves = [(c.old_path or "", c.path) for c in paths if c.kind is R]
        return [
            f
            for f in self.folders
            if f.old_path != f.path
            and any(_under(old, f.old_path or "") and _under(new, f.path) for old, new in moves)
        ]


def _follows(first: Change, then: Change) -> bool:
    """Whether HEAD move `then` continues `first`: the same operation (a rebase's steps,
    seen by a watcher one by one), from where it ended."""
    a, b = first.detail or {}, then.detail or {}
    return bool(a.get("to")) and a.get("to") == b.get("from") and \
        a.get("operation") == b.get("operation")


def _joined(first: Change, then: Change) -> Change:
    """Two steps of one HEAD move as one: from the first's start to the second's end,
    over the paths either changed."""
    a, b = first.detail or {}, then.detail or {}
    paths = sorted({*a.get("paths", ()), *b.get("paths", ())})
    return Change(GIT, "", detail={**b, "from": a.get("from"), "paths": paths,
                                   "count": len(paths)})


def _under(path: str, folder: str) -> bool:
    return path.startswith(folder + "/")
