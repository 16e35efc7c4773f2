"""What `scan` tells its caller: per project, what changed since the last `scan`.

A running watcher logs changes as they happen, so the flush a `scan` runs seldom has
anything left to log. So `scan` reports what the change log holds after the epoch the last
scan reported (kept per project in the store's meta), coalesced as `changes_since` does:
what a scan without a watcher would have found. A project gets its mark when it is first
logged (epoch 0) or, from a store older than the marks, when a watcher starts; until then
a scan reports what its own flush logged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.tracker.projectstates import mark_key

if TYPE_CHECKING:
    from freshline.tracker.changelog import ChangesSince
    from freshline.tracker.tracker import FlushResult, Tracker


def take_news(tracker: Tracker, result: FlushResult) -> dict[str, ChangesSince]:
    """Per project with news since the last scan (after `result`, this scan's flush),
    what changed; each project's mark moves to the epoch reported, so of two scans at once
    each reports its own span."""
    news: dict[str, ChangesSince] = {}
    states = tracker.store.project_states()
    for name in tracker.config.projects:
        state = states.get(name)
        if state is None:
            continue
        delta = result.projects.get(name)
        answer = _take(tracker, name, delta.epoch - 1 if delta is not None else state.epoch)
        if answer is not None and (answer.changes or answer.compacted):
            news[name] = answer
    return news


def _take(tracker: Tracker, project: str, unmarked: int) -> ChangesSince | None:
    """The changes after the project's mark (`unmarked`: where to start without one), the
    mark moved past them by compare-and-set; None when another scan took them all."""
    store = tracker.store
    while True:
        mark = store.meta_get(mark_key(project))
        since = int(mark) if mark is not None and mark.isdigit() else unmarked
        answer = tracker.changes_since(project, since)
        if answer.epoch == since:  # (a mark ahead of the log, a store restored: compacted)
            return None
        with store.write():
            if store.meta_get(mark_key(project)) == mark:
                store.meta_set(mark_key(project), str(answer.epoch))
                return answer


def mark_unmarked(tracker: Tracker) -> None:
    """Mark each logged project that has no scan mark at its epoch now: a watcher starting
    on an older store makes the next scan report what changed since it started."""
    store = tracker.store
    missing = {name: state.epoch for name, state in store.project_states().items()
               if store.meta_get(mark_key(name)) is None}
    if missing:
        with store.write():
            for name, epoch in missing.items():
                store.meta_set(mark_key(name), str(epoch))
