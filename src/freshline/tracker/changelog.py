"""Per-project epochs and the change log: appending a flush's changes (compacting past the
cap), and answering "what changed since epoch N?" with the net changes.

Both run against the store; the deciding is done by pure functions: `coalesce` (the net
effect of a span), `compaction` (what the dropped rows become).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import groupby

from freshline.store import ProjectState, Store
from freshline.store.records import Change, ChangeGroup, LoggedChange
from freshline.tracker.coalesce import coalesce_sets, net, net_lookups, repeated_paths
from freshline.tracker.compaction import fold, group_cap, merged, per_run


@dataclass(frozen=True)
class ProjectDelta:
    """What one flush logged for one project."""

    project: str
    epoch: int
    changes: list[Change]


@dataclass(frozen=True)
class ChangesSince:
    """The answer to "what changed in this project since epoch N?"."""

    project: str
    since: int
    epoch: int  # the project's epoch now: what a reader is caught up to after this
    compacted: bool  # the log no longer lists every change after `since`
    changes: list[Change]  # coalesced and net; with `compacted`, those the log still holds
    # With `compacted`: the older changes, counted per folder and HEAD move (their epochs
    # said), unless `forgotten`: not even those reach back to `since`.
    folded: list[ChangeGroup] = field(default_factory=list)
    forgotten: bool = False


def append(store: Store, state: ProjectState, changes: list[Change], cap: int) -> ProjectDelta:
    """Log `changes` as the project's next epoch and compact past `cap` rows: the rows
    dropped are kept as counts (`compaction.fold`), and the oldest counts past their own
    cap are dropped in turn (call inside `store.write()`)."""
    epoch = state.epoch + 1
    state = replace(state, epoch=epoch)
    store.project_put(state)
    store.log_append(state.name, epoch, changes)
    dropped = store.log_drop(state.name, cap, keep=epoch)
    if dropped:
        store.groups_append(state.name, fold(dropped, per_run(cap)))
        forgotten = store.groups_trim(state.name, group_cap(cap))
        state = replace(state, compacted_through=dropped[-1].epoch,
                        forgotten_through=max(forgotten or 0, state.forgotten_through))
        store.project_put(state)
    return ProjectDelta(state.name, epoch, changes)


def since(store: Store, state: ProjectState, epoch: int, undone: bool = False) -> ChangesSince:
    """The net changes after `epoch` (call inside `store.read()`, one snapshot: no
    compaction between the state and the rows); with `undone`, what was undone stays in
    (a listing of index entries must see every path whose entry moved)."""
    if epoch < state.forgotten_through or epoch > state.epoch:
        return ChangesSince(state.name, epoch, state.epoch, True, [], forgotten=True)
    changes, lookups = _coalesced(store.log_read(state.name, epoch), undone)
    if not undone:
        changes = net(changes, store.index_contents(lookups))
    compacted = epoch < state.compacted_through
    folded = merged(store.groups_read(state.name, epoch)) if compacted else []
    return ChangesSince(state.name, epoch, state.epoch, compacted, changes, folded)


def since_read(
    state: ProjectState, epoch: int, entries: list[LoggedChange], undone: bool = False
) -> ChangesSince | None:
    """`since` from the state and the rows after `epoch` read at once, when it needs no
    other read: None when the log was compacted past `epoch` (its counts are needed) or
    a path changed back and forth (its content now is)."""
    if epoch < state.forgotten_through or epoch > state.epoch:
        return ChangesSince(state.name, epoch, state.epoch, True, [], forgotten=True)
    if epoch < state.compacted_through:
        return None
    changes, lookups = _coalesced(entries, undone)
    if lookups:
        return None
    return ChangesSince(state.name, epoch, state.epoch, False,
                        changes if undone else net(changes, {}))


def _coalesced(entries: list[LoggedChange], undone: bool) -> tuple[list[Change], list[str]]:
    """The span's changes coalesced, and the paths whose content now tells which of them
    were undone (none asked `undone`)."""
    # Each epoch's rows are one set (renames read the state before it), not a sequence.
    epochs = groupby(entries, key=lambda e: e.epoch)
    changes = coalesce_sets([e.change for e in rows] for _, rows in epochs)
    if undone:
        return changes, []
    return changes, net_lookups(changes, repeated_paths(e.change for e in entries))
