"""Scoping (pure): what one batch of observations means to one project.

Each side is matched on its own: the old path with the facts the index had, the new path
with its fresh facts. A rename out of scope is the old path leaving the project (the file
is still there; where it went is not the project's to tell), a rename into scope is a
creation of the new one; a note that gained a tag entered a tag project (and one that
gained an excluded tag left it: the file is still there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from freshline.scope import FileFacts, Scope
from freshline.store.records import Change, ChangeKind, IndexEntry, entry_content
from freshline.tracker.gitmoves import HeadMove
from freshline.tracker.observed import FolderRename, Observed
from freshline.tracker.reasons import Why, why


def facts(entry: IndexEntry) -> FileFacts:
    """The facts scope matching needs, from an index entry."""
    return FileFacts(entry.path, frozenset(entry.tags), entry.properties)


def in_scope(scope: Scope, entry: IndexEntry | None) -> bool:
    """Whether an entry (or nothing) is in a project's scope."""
    return entry is not None and scope.matches(facts(entry))


def scope_observed(o: Observed, scope: Scope) -> list[Change]:
    """The project-level changes one observation makes, each with the content its path
    had before (`Change.before`). A file that stays where it is and crosses the scope's
    edge (its tags or properties changed) entered or left the project, with the reason."""
    was, now = in_scope(scope, o.old), in_scope(scope, o.new)
    if not was and not now:
        return []
    before = entry_content(o.old) if o.old is not None else None
    stays = o.old is not None and o.new is not None and o.old.path == o.new.path
    if was and not now:
        assert o.old is not None
        if stays:
            assert o.new is not None
            reason = why(scope, scope, facts(o.old), facts(o.new))
            return [Change(ChangeKind.LEFT, o.old.path, detail=reason, before=before)]
        if o.new is not None:  # moved out: still there, somewhere the project must not name
            moved = {"why": Why.MOVED.value}
            return [Change(ChangeKind.LEFT, o.old.path, detail=moved, before=before)]
        return [Change(ChangeKind.DELETED, o.old.path, before=before)]
    assert o.new is not None
    if now and not was:
        if stays:
            assert o.old is not None
            reason = why(scope, scope, facts(o.old), facts(o.new))
            return [Change(ChangeKind.ENTERED, o.new.path, detail=reason)]
        return [Change(ChangeKind.CREATED, o.new.path)]
    if o.kind is ChangeKind.RENAMED:
        assert o.old is not None
        out = [Change(ChangeKind.RENAMED, o.new.path, old_path=o.old.path, before=before)]
        if o.content_changed:
            out.append(Change(ChangeKind.MODIFIED, o.new.path, before=before))
        return out
    return [Change(o.kind, o.new.path, before=before)]


def scope_batch(
    observed: Iterable[Observed], folders: Iterable[FolderRename], scope: Scope
) -> list[Change]:
    """Every change a batch makes to a project, folder renames summarized once each: one
    set, every change relative to the state before the batch."""
    changes = [c for o in observed for c in scope_observed(o, scope)]
    renamed = [c for c in changes if c.kind is ChangeKind.RENAMED]
    for f in folders:
        if any(c.old_path and c.old_path.startswith(f.old + "/") for c in renamed):
            folder = Change(ChangeKind.RENAMED, f.new, old_path=f.old, detail={"folder": True})
            changes.append(folder)
    return changes


def scope_move(
    move: HeadMove, scope: Scope, facts: Callable[[str], list[IndexEntry]]
) -> list[Change]:
    """The `git` entry a HEAD move makes in a project: the paths it changed there, each
    judged by what is known of it (its entry now or before), else by its path alone.
    Nothing when the move changed no path of the project."""
    paths = sorted(p for p in move.paths if _touches(scope, p, facts(p)))
    if not paths:
        return []
    detail = {
        "operation": move.operation,
        "from": move.old,
        "to": move.new,
        "paths": paths,
        "count": len(paths),
    }
    return [Change(ChangeKind.GIT, "", detail=detail)]


def _touches(scope: Scope, path: str, known: list[IndexEntry]) -> bool:
    return any(in_scope(scope, e) for e in known) if known else scope.matches_path(path)
