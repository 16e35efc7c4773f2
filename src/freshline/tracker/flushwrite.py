"""What a flush writes under the write lock: its scan's result into the index and meta,
and each project's share of the batch into its change log (one epoch per project)."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from freshline.config import Config
from freshline.scope import Scope
from freshline.store import Store
from freshline.store.records import Change, ChangeKind, IndexEntry
from freshline.tracker import changelog
from freshline.tracker.changelog import ProjectDelta
from freshline.tracker.coalesce import coalesce_sets
from freshline.tracker.facts import observed_with_facts, stand_in
from freshline.tracker.flushscan import GIT_HEAD, IGNORE_RULES, LAST_FULL_SCAN, Work
from freshline.tracker.listing import LISTED_AT, UNHASHED_META
from freshline.tracker.observed import Observed
from freshline.tracker.patterns import ignore_patterns
from freshline.tracker.projectstates import config_changes
from freshline.tracker.scoping import scope_batch, scope_move

if TYPE_CHECKING:
    from freshline.tracker.scan import ScanResult


def apply(store: Store, config: Config, work: Work) -> dict[str, ProjectDelta]:
    """Write a scan's result and log it per project (inside the write lock): what each
    project that changed logged."""
    result = work.result
    assert result.ignore is not None  # set by a full scan, or by the hinted one
    ignore = result.ignore
    if work.full:
        store.meta_set(LAST_FULL_SCAN, str(time.time()))
        store.meta_set(IGNORE_RULES, json.dumps(ignore_patterns(ignore)))
    if work.head is not None and work.head != work.head_before:
        store.meta_set(GIT_HEAD, work.head)
    if config.projects.keys() & store.project_states().keys():
        created = [o.new for o in result.observed if o.kind is ChangeKind.CREATED and o.new]
        known = stand_in(result.observed, result.put)
        observed = observed_with_facts(result.observed, known)
    else:  # every project is new (a first flush): none logs this batch, nothing to judge
        created, known, observed = [], _as_it_is, []
    scope_changes, new = config_changes(store, config.projects, ignore, created, known)
    store.index_put(result.put, result.sketches)
    store.index_delete(result.remove)
    _note_unread(store, result)
    out: dict[str, ProjectDelta] = {}
    moved = _head_moved(store, work, observed)
    for name, project in config.projects.items():
        if name in new:  # its starting point is the index after this flush: epoch 0
            continue
        batch = scope_batch(observed, result.folders, project.scope)
        batch += moved(project.scope)
        changes = coalesce_sets([scope_changes.get(name, []), batch])
        if changes:
            out[name] = _log(store, config, name, changes)
    return out


def _note_unread(store: Store, result: ScanResult) -> None:
    """Keep the store's word on whether some entry is listed but not read yet."""
    if result.listed_at is not None:
        store.meta_set(LISTED_AT, str(result.listed_at))
    if any(not e.hashed for e in result.put):
        store.meta_set(UNHASHED_META, "1")
    elif result.listed_read:  # each one listed was read, or left the index
        store.meta_set(UNHASHED_META, "0")


def _head_moved(
    store: Store, work: Work, observed: list[Observed]
) -> Callable[[Scope], list[Change]]:
    """The `git` entry a project gets for this flush's HEAD move (none without one).

    A path the move touched is judged by its entry now and before the flush; one this
    flush did not see (a watcher logged it earlier) is looked up in the index."""
    move = work.move
    if move is None:
        return lambda _scope: []
    now = {e.path: e for e in work.result.put}
    before = {o.old.path: o.old for o in observed if o.old is not None}

    @functools.cache  # asked once per project
    def facts(path: str) -> list[IndexEntry]:
        found = [e for e in (now.get(path), before.get(path)) if e is not None]
        if not found:
            entry = store.index_get(path)
            found = [entry] if entry is not None else []
        return found

    return lambda scope: scope_move(move, scope, facts)


def _log(store: Store, config: Config, name: str, changes: list[Change]) -> ProjectDelta:
    state = store.project_state(name)
    assert state is not None
    return changelog.append(store, state, changes, config.workspace.change_log_cap)


def _as_it_is(entry: IndexEntry) -> IndexEntry:
    return entry
