"""Each project's remembered state brought up to its config, inside a flush's write lock.

A project seen for the first time starts at epoch 0; one gone from the config is marked
removed; one back after a removal goes on at a new epoch; one whose patterns moved logs
the shift of its scope: a `config` change and the files that entered or left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from itertools import chain

from freshline.config import ProjectConfig
from freshline.ignore import IgnoreState
from freshline.store import ProjectState, Store
from freshline.store.records import Change, ChangeKind, IndexEntry, entry_content
from freshline.tracker.patterns import REMOVED, pattern_diff, patterns_of, scope_of
from freshline.tracker.reasons import why
from freshline.tracker.scoping import facts, in_scope

SCAN_MARK = "scan.reported."  # + project: the epoch the last `scan` reported up to


def mark_key(project: str) -> str:
    """The meta key of a project's scan mark (`reports.py` reads and moves it)."""
    return SCAN_MARK + project


def config_changes(
    store: Store,
    projects: Mapping[str, ProjectConfig],
    ignore: IgnoreState,
    created: list[IndexEntry],
    known: Callable[[IndexEntry], IndexEntry],
) -> tuple[dict[str, list[Change]], set[str]]:
    """Bring each project's remembered patterns up to date: the changes of those whose
    patterns moved, and the names of projects seen for the first time.

    Runs before the batch is applied, so old and new scopes are compared on the same
    (pre-batch) facts; the batch's own changes follow and coalesce with these.
    `created` are the batch's new files: among them, those an old ignore rule kept out.
    `known` gives an entry stored unparsed its facts (`tracker.facts.stand_in`).
    """
    states = store.project_states()
    for name in states.keys() - projects.keys():
        if states[name].patterns != REMOVED:
            store.project_put(replace(states[name], patterns=REMOVED))
    out: dict[str, list[Change]] = {}
    new: set[str] = set()
    for name, project in projects.items():
        patterns = patterns_of(project, ignore)
        state = states.get(name)
        if state is None:
            new.add(name)
            store.project_put(ProjectState(name, 0, 0, project.signature, patterns))
            store.meta_set(mark_key(name), "0")  # a scan reports all it ever logs
        elif state.patterns == REMOVED:
            # Back after a removal: nobody logged what happened meanwhile, so its epoch
            # goes on (a reader's cursor stays meaningful) and every earlier reader is
            # told to re-enumerate.
            epoch = state.epoch + 1
            store.project_put(ProjectState(name, epoch, epoch, project.signature, patterns, epoch))
        elif state.patterns != patterns:
            store.project_put(replace(state, signature=project.signature, patterns=patterns))
            out[name] = _scope_shift(store, state.patterns, patterns, created, known)
    return out, new


def _scope_shift(
    store: Store,
    old: dict[str, object],
    new: dict[str, object],
    created: list[IndexEntry],
    known: Callable[[IndexEntry], IndexEntry],
) -> list[Change]:
    before, after = scope_of(old), scope_of(new)
    entered: list[Change] = []
    left: list[Change] = []
    fresh = {e.path for e in created}  # new in this batch: they cannot have left
    for entry in chain(map(known, store.index_iter()), created):
        was, now = in_scope(before, entry), in_scope(after, entry)
        if was == now or (was and entry.path in fresh):
            continue
        seen = facts(entry)
        reason = why(before, after, seen, seen)
        if now:
            entered.append(Change(ChangeKind.ENTERED, entry.path, detail=reason))
        else:
            content = entry_content(entry)
            left.append(Change(ChangeKind.LEFT, entry.path, detail=reason, before=content))
    detail = pattern_diff(old, new)
    detail["newly_included"] = sorted(c.path for c in entered)
    detail["no_longer_included"] = [c.path for c in left]
    return [Change(ChangeKind.CONFIG, "", detail=detail), *entered, *left]
