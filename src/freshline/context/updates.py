"""The updates block: what changed in a project since the session's cursor.

Wire format (wire-only: the model sees it, the visible transcript does not)::

    <project_context_updates project="research" from_epoch="3" to_epoch="5">
    Changes to the project since your last turn: paths only, never contents. Re-read ...
    This conversation was closed for a while: the project may have changed ...  (resumed)
    The change log was compacted, ... re-enumerate the project ...              (compacted)
    Scope changed:
    - now included: tag #paper
    - no longer included: file type *.txt
    - no longer excluded: folder /home/u/vault/Drafts/
    - mode: live → isolated
    Newly in scope:
    - /home/u/vault/Drafts/idea.md
    Refreshed from main (1a2b3c4 → 5d6e7f8); paths it changed:
    - /home/u/vault/src/app.py
    Conflicts left by the refresh from main (resolve them before relying on these files):
    - /home/u/vault/src/db.py (content: remove the conflict markers)
    - /home/u/vault/CHANGES.rst (modify/delete: no conflict markers; delete it, or ...)
    Created:
    - /home/u/vault/new.md
    - /home/u/vault/b.pdf (converting: read the raw file for now; the snapshot follows ...)
    Modified:
    - /home/u/vault/a.pdf (converted: read the snapshot /home/u/vault/.freshline/...)
    Deleted:
    - /home/u/vault/c.pdf (the old snapshot /home/u/... is invalid; do not cite it)
    Renamed:
    - /home/u/vault/Drafts/ → /home/u/vault/Ideas/
    - /home/u/vault/Drafts/a.md → /home/u/vault/Ideas/a.md
    - /home/u/vault/old.md → /home/u/vault/new name.md
    Snapshots ready since an earlier turn (read these instead of the raw files):
    - /home/u/vault/b.pdf → /home/u/vault/.freshline/snapshots/b.md
    Documents that failed to convert:
    - /home/u/vault/d.pdf (conversion failed: encrypted)
    Snapshots no longer valid (do not cite them):
    - /home/u/vault/.freshline/snapshots/e.md (was the snapshot of /home/u/vault/e.pdf)
    </project_context_updates>

A path a scope change brought in is logged as `created` too; it is named once, under
"Newly in scope", and only while the changes still hold it as created (a path that came in
and then went is not named). A document among the changes carries its state in parentheses
(`UpdatesInput.documents`, looked up by path; a rename also looks up its old path, whose
snapshot is then invalid).
A compacted log replaces every log-derived section (scope, refresh, path changes) with one
line; the document sections, which come from the session's own sets, stay. Entries are
sorted and deduplicated; scope changes and refreshes keep their order. Each group shows at
most `cap` entries and then `… and K more`. `render_updates` returns None when there is
nothing to say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from freshline.store.records import Change, ChangeKind

from . import phrases
from .model import ConfigChange, DocumentInfo, Refresh, UpdatesInput
from .wire import ARROW, section, short_commit, show, show_text, tag

_GROUPS = (
    (ChangeKind.CREATED, "Created:"),
    (ChangeKind.MODIFIED, "Modified:"),
    (ChangeKind.DELETED, "Deleted:"),
    (ChangeKind.RENAMED, "Renamed:"),
)
_PATTERN_LABELS = {
    "include_added": "now included",
    "include_removed": "no longer included",
    "exclude_added": "now excluded",
    "exclude_removed": "no longer excluded",
    "ignore_added": "now ignored in the whole workspace",
    "ignore_removed": "no longer ignored in the whole workspace",
}


class _View:
    """One rendering: the input plus its documents by path."""

    def __init__(self, u: UpdatesInput) -> None:
        self.u = u
        self.docs: Mapping[str, DocumentInfo] = {d.path: d for d in u.documents}

    def section(self, heading: str, entries: Iterable[tuple[str, str]]) -> list[str]:
        """A capped group of (sort key, text) entries, sorted by path and deduplicated."""
        texts = dict.fromkeys(text for _, text in sorted(set(entries)))
        return section(heading, list(texts), self.u.cap)

    def entry(self, path: str) -> tuple[str, str]:
        """A path in the project, with its document state if it is a document."""
        doc = self.docs.get(path)
        note = phrases.state_note(self.u.root, doc) if doc else None
        return path, phrases.annotated(show(self.u.root, path), [note])

    def gone(self, path: str) -> str | None:
        """The invalid-snapshot warning for a path that left, if it had a snapshot."""
        doc = self.docs.get(path)
        return phrases.invalid(self.u.root, doc.snapshot) if doc and doc.snapshot else None


def render_updates(u: UpdatesInput) -> str | None:
    """The `<project_context_updates>` block for `u`, or None when there is nothing to say."""
    view = _View(u)
    body: list[str] = []
    if u.resumed:
        body.append(phrases.RESUMED)
    if u.compacted:
        body.append(phrases.COMPACTED)
    else:
        scope_lines, claimed = _scope_changes(view)
        body.extend(scope_lines)
        for refresh in u.refreshed:
            body.extend(_refresh(view, refresh))
        unclaimed = [c for c in u.changes
                     if not (c.kind is ChangeKind.CREATED and c.path in claimed)]
        body.extend(_changes(view, unclaimed))
    body.extend(_documents(view))
    if not body:
        return None
    attributes = [("project", u.project), ("from_epoch", u.from_epoch),
                  ("to_epoch", u.to_epoch)]
    return tag("project_context_updates", attributes, [phrases.UPDATES_INSTRUCTION, *body])


def _changes(view: _View, changes: Iterable[Change]) -> list[str]:
    render: dict[ChangeKind, Callable[[Change], tuple[str, str]]] = {
        ChangeKind.CREATED: lambda c: view.entry(c.path),
        ChangeKind.MODIFIED: lambda c: view.entry(c.path),
        ChangeKind.DELETED: lambda c: _deleted(view, c),
        ChangeKind.RENAMED: lambda c: _renamed(view, c),
    }
    lines: list[str] = []
    for kind, heading in _GROUPS:
        lines.extend(view.section(heading, (render[kind](c) for c in changes if c.kind is kind)))
    return lines


def _deleted(view: _View, change: Change) -> tuple[str, str]:
    return change.path, phrases.annotated(show(view.u.root, change.path), [view.gone(change.path)])


def _renamed(view: _View, change: Change) -> tuple[str, str]:
    old = change.old_path or ""
    # the tracker marks a folder moved as a whole once, beside an entry per file in it
    shown = phrases.folder if (change.detail or {}).get("folder") else show
    moved = f"{shown(view.u.root, old)}{ARROW}{shown(view.u.root, change.path)}"
    doc = view.docs.get(change.path)
    now = phrases.state_note(view.u.root, doc) if doc else None
    return old, phrases.annotated(moved, [view.gone(old), now])


def _scope_changes(view: _View) -> tuple[list[str], set[str]]:
    """Each scope change with the paths it brought in, and those paths (claimed once)."""
    created = {c.path for c in view.u.changes if c.kind is ChangeKind.CREATED}
    lines: list[str] = []
    claimed: set[str] = set()
    for config in view.u.config:
        brought = [p for p in config.newly_included if p in created and p not in claimed]
        claimed.update(brought)
        lines.extend(_config(view, config, brought))
    return lines, claimed


def _config(view: _View, config: ConfigChange, brought: list[str]) -> list[str]:
    entries = [
        f"{label}: {phrases.source(view.u.root, src)}"
        for name, label in _PATTERN_LABELS.items()
        for src in phrases.sorted_sources(getattr(config, name))
    ]
    if config.mode_from != config.mode_to:
        entries.append(f"mode: {_mode(config.mode_from)}{ARROW}{_mode(config.mode_to)}")
    # not view.section: the order above (include before exclude) reads better than sorted
    changed = section("Scope changed:", entries, view.u.cap) or ["Scope changed."]
    return changed + view.section("Newly in scope:", map(view.entry, brought))


def _mode(mode: str | None) -> str:
    return show_text(mode) if mode else "unset"


def _refresh(view: _View, refresh: Refresh) -> list[str]:
    target = show_text(refresh.target, 120) or "the checkout target"
    span = f"{short_commit(refresh.from_commit)}{ARROW}{short_commit(refresh.to_commit)}"
    head = f"Refreshed from {target} ({span})"
    lines = view.section(f"{head}; paths it changed:", map(view.entry, refresh.paths))
    kinds = dict(refresh.conflict_kinds)
    conflicts = view.section(
        f"Conflicts left by the refresh from {target} "
        "(resolve them before relying on these files):",
        ((path, phrases.annotated(show(view.u.root, path),
                                  [phrases.conflict(kinds.get(path))]))
         for path in refresh.conflicts),
    )
    return (lines or [f"{head}; no paths in this project changed."]) + conflicts


def _documents(view: _View) -> list[str]:
    u = view.u
    return [
        *view.section(
            "Snapshots ready since an earlier turn (read these instead of the raw files):",
            ((d.path, phrases.pointer(u.root, d)) for d in u.ready_documents),
        ),
        *view.section(
            "Documents that failed to convert:",
            ((d.path, phrases.annotated(show(u.root, d.path), [phrases.failure(d)]))
             for d in u.failed_documents),
        ),
        *view.section(
            "Snapshots no longer valid (do not cite them):",
            ((path, f"{show(u.root, snap)} (was the snapshot of {show(u.root, path)})")
             for path, snap in u.invalid_snapshots),
        ),
    ]
