"""Coalescing: the net effect of a sequence of changes (pure, set semantics).

The result is a set to be applied all at once against the state before the sequence:
every `renamed` reads its old path from that state, so the order of the result does
not matter (it is sorted by path for stable output).

create+modify = create; create+delete = nothing; delete+create = modify (a replace);
rename A→B then B→C = A→C; rename A→B then delete B = delete A;
modify+rename = rename plus modified. Project-level entries (config, compacted,
refreshed) and folder-rename entries are kept, in order, after the path changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from freshline.store.records import Change, ChangeKind

_PATH_KINDS = {ChangeKind.CREATED, ChangeKind.MODIFIED, ChangeKind.DELETED, ChangeKind.RENAMED}


@dataclass
class _Fate:
    origin: str | None  # the path this content had before the sequence; None if created in it
    modified: bool = False


def is_folder_rename(change: Change) -> bool:
    """Whether a change is the summary entry of a whole folder moved."""
    return change.kind is ChangeKind.RENAMED and bool(change.detail and change.detail.get("folder"))


def coalesce(changes: Iterable[Change]) -> list[Change]:
    """The net changes of `changes` applied in order, sorted by path."""
    live: dict[str, _Fate] = {}
    gone: set[str] = set()
    others: list[Change] = []
    for c in changes:
        if c.kind not in _PATH_KINDS or is_folder_rename(c):
            if c not in others:
                others.append(c)
            continue
        _apply(c, live, gone)
    return _result(live, gone) + others


def _take(path: str, live: dict[str, _Fate]) -> _Fate:
    return live.pop(path, None) or _Fate(origin=path)


def _apply(c: Change, live: dict[str, _Fate], gone: set[str]) -> None:
    if c.kind is ChangeKind.CREATED:
        if c.path in gone:  # deleted earlier in the sequence: a replace
            gone.discard(c.path)
            live[c.path] = _Fate(origin=c.path, modified=True)
        elif c.path not in live:
            live[c.path] = _Fate(origin=None)
    elif c.kind is ChangeKind.MODIFIED:
        live.setdefault(c.path, _Fate(origin=c.path)).modified = True
    elif c.kind is ChangeKind.DELETED:
        fate = _take(c.path, live)
        if fate.origin is not None:
            gone.add(fate.origin)
    else:
        assert c.old_path is not None
        fate = _take(c.old_path, live)
        replaced = live.pop(c.path, None)
        if replaced is not None and replaced.origin is not None:
            gone.add(replaced.origin)
        live[c.path] = fate


def _result(live: dict[str, _Fate], gone: set[str]) -> list[Change]:
    # A path both gone and live was overwritten: the live fate describes it.
    out = [Change(ChangeKind.DELETED, origin) for origin in gone - live.keys()]
    for path, fate in live.items():
        if fate.origin is None:
            kind = ChangeKind.MODIFIED if path in gone else ChangeKind.CREATED
            out.append(Change(kind, path))
            continue
        if fate.origin != path:
            out.append(Change(ChangeKind.RENAMED, path, old_path=fate.origin))
        if fate.modified:
            out.append(Change(ChangeKind.MODIFIED, path))
    return sorted(out, key=lambda c: (c.path, c.kind.value))
