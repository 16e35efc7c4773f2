"""A converter's new version, told once per project in one line.

A new version of a converter (the PDF one's version 2 writes Markdown with headings) makes
each old snapshot again as its document is next read (`Materializer.for_reading`), not
all at once. Agents that read the old snapshots must know that their lines moved: the
first time a process looks at a project (its first turn, or a watcher's start) it reads
the first line of each snapshot of the project's documents, and for each converter whose
older versions made some it logs one `converter` entry in the project's change log:
every session of the project hears it once, on its next turn, however many documents it
covers. The meta key `converters.told.<project>` keeps the versions already told, so a
document never read again is not told twice.
"""

from __future__ import annotations

import json
from typing import Protocol

from freshline.config import Config
from freshline.materialize import Materializer, upgrades
from freshline.store import Change, ChangeKind, Store
from freshline.tracker.changelog import append
from freshline.tracker.scoping import in_scope


class _Base(Protocol):
    """What of a `SessionBase` this needs (the base calls this module)."""

    config: Config
    store: Store
    materializer: Materializer
    upgrades_checked: set[str]


def told_key(project: str) -> str:
    """The meta key of the converter versions a project's sessions were told about."""
    return f"converters.told.{project}"


def announce_upgrades(base: _Base, project: str) -> None:
    """Log the project's converter upgrades not told yet (once per process and project;
    call after a flush, outside a store transaction)."""
    if project in base.upgrades_checked:
        return
    base.upgrades_checked.add(project)
    # The snapshots, not the project's files: a process's first turn never lists a
    # project for this (its cost follows the documents, not the workspace).
    scope = base.config.project(project).scope
    found = upgrades(h for h in base.materializer.store.headers()
                     if in_scope(scope, base.store.index_get(h.source)))
    if not found:
        return
    key = told_key(project)
    with base.store.write():
        told: dict[str, str] = json.loads(base.store.meta_get(key) or "{}")
        new = [u for u in found if told.get(u.converter) != u.version]
        state = base.store.project_state(project)
        if not new or state is None:
            return
        entries = [Change(ChangeKind.CONVERTER, "", detail=u.detail()) for u in new]
        append(base.store, state, entries, base.config.workspace.change_log_cap)
        told.update({u.converter: u.version for u in new})
        base.store.meta_set(key, json.dumps(told, sort_keys=True))
