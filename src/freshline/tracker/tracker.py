"""The tracker: flush the workspace into the index, and log what changed per project.

The index in the store is the truth; watchers only hint which paths to look at. A flush
scans first, then takes the store's write lock (`BEGIN IMMEDIATE`) to write, re-scanning
under the lock only if another connection wrote meanwhile; so two processes flushing at
once are serialized, each change is logged once, and nobody waits behind a scan.

This module holds that protocol and the queries; what a flush finds out before the lock
is in `flushscan.py`, what it writes under it in `flushwrite.py` and `projectstates.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import (
    DATA_DIR,
    Config,
    config_stamp,
    load_config,
    unknown_project,
)
from freshline.killpoint import checkpoint
from freshline.store import ProjectState, Store
from freshline.store.db import encode_path
from freshline.store.meta import Hints
from freshline.store.records import Change, IndexEntry
from freshline.tracker import changelog, flushwrite
from freshline.tracker.changelog import ChangesSince, ProjectDelta
from freshline.tracker.flushscan import FlushScan, Work
from freshline.tracker.hints import sync_with_watcher, watcher_alive
from freshline.tracker.scoping import in_scope

if TYPE_CHECKING:  # the scanner (markdown parsing, hashing) loads with the first scan:
    from freshline.tracker.scan import Memo  # `status` only reads the index


@dataclass
class FlushResult:
    """The outcome of one flush."""

    full: bool
    scanned: int
    projects: dict[str, ProjectDelta] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


_NO_HINTS = Hints([], ())


def _everything(_hints: Hints) -> None:
    return None


def _hinted(hints: Hints) -> list[str]:
    return hints.paths


class Tracker:
    """Flushes one workspace into its store and answers change-log queries."""

    def __init__(self, config: Config, store: Store | None = None) -> None:
        self.config = config
        self.root = Path(config.root)
        self.store = store or Store(self.root / DATA_DIR, config.store_url,
                                     config.store.pool_size)
        self._stamp = config_stamp(config.path)
        # The whole index as a flush of an empty one wrote it, in the index's order, valid
        # while its connection's data_version stays (nobody else wrote): a listing right
        # after (a hook's first manifest) reads no row.
        self._written: tuple[object, int, list[IndexEntry]] | None = None

    def reload_config(self) -> Config:
        """Re-read freshline.toml if it changed on disk (ConfigError if it is now broken).

        Every flush does this first: a process flushing with an outdated config would log
        changes against scopes nobody has any more.
        """
        stamp = config_stamp(self.config.path)
        if stamp != self._stamp:
            self.config = load_config(self.root)
            self._stamp = stamp
        return self.config

    # -- writing -------------------------------------------------------------------------

    def flush(self, full: bool = False, sync: bool = True, defer: bool = False) -> FlushResult:
        """Bring the index up to date and log changes: hinted paths if a watcher is alive,
        else (or with `full`) the whole workspace.

        `sync=False` trusts the hints already stored without asking the watcher to catch
        up first: the watcher itself flushes that way after writing a batch of hints.
        `defer=True` (a caller that needs paths, not blobs) fills an empty index from a
        listing and leaves entries never read unread while their stat holds
        (`tracker/listing.py`); any other flush reads them first.
        """
        self.reload_config()
        live = not full and watcher_alive(self.store)
        if live and sync:
            live = self.synced()
        return self._flush(_hinted if live else _everything, take_hints=True, defer=defer)

    def synced(self) -> bool:
        """Whether a live watcher has stored hints for every change made before this call
        (its cookie came back): a flush that reads the hints afterwards covers them.
        A watcher that did not answer in time, or stopped trusting its own hints while
        it answered (it could not store them), is trusted for nothing."""
        return (watcher_alive(self.store) and sync_with_watcher(self.root, self.store)
                and watcher_alive(self.store))

    def scan(self, paths: Iterable[str] | None = None) -> FlushResult:
        """Scan the whole workspace, or only `paths` and their subtrees, and log changes."""
        self.reload_config()
        if paths is None:
            return self._flush(_everything, take_hints=True)
        wanted = list(paths)
        return self._flush(lambda _hints: wanted, take_hints=False)

    def _flush(
        self, paths_of: Callable[[Hints], list[str] | None], take_hints: bool,
        defer: bool = False,
    ) -> FlushResult:
        """Walk, hash and parse notes before taking the write lock, so writers in other
        processes (a send accepting its turn) never wait behind a scan and no note is
        parsed inside a write transaction. If another connection wrote meanwhile (a hint,
        another flush) the scan is redone under the lock, where nothing can move; a hinted
        one reuses what its first pass hashed while the file's stat is unchanged.

        `paths_of(hints)` names the paths to scan (None: everything) from the hints
        pending; with `take_hints` the flush consumes the hints it read (it covers them:
        one stored meanwhile waits for the next flush); `defer` as in `flush`.
        """
        memo: Memo = {}
        prepare = FlushScan(self.root, self.config, self.store).prepare
        self._written = None
        version = self.store.data_version()
        hints = self.store.hints_pending() if take_hints else _NO_HINTS
        paths = paths_of(hints)
        work = prepare(paths, memo, defer)
        if paths == [] and self._nothing_to_write(work):
            return FlushResult(full=False, scanned=0)
        with self.store.write():
            if self.store.data_version() != version:
                hints = self.store.hints_pending() if take_hints else _NO_HINTS
                work = prepare(paths_of(hints), memo, defer)
            self.store.hints_drop(hints.rows)
            if work.result.from_empty:  # the index's order: its b-tree fills page by page
                work.result.put.sort(key=_stored_order)
            out = self._apply(work)
            checkpoint("flush:write")  # killed here, the transaction dies with its process
            version = self.store.data_version()  # nobody else commits before this ends
        if work.result.from_empty:
            self._written = (self.store.db.conn, version, work.result.put)
        return out

    def _nothing_to_write(self, work: Work) -> bool:
        """Whether a flush of no path writes nothing: no scan was due, HEAD stayed, and
        every project has its state. Then it takes no write lock: under load, most
        requests' flushes find the hints already taken by the watcher's or another's."""
        if work.full or work.head != work.head_before:
            return False
        return set(self.config.projects) <= set(work.states)

    def _apply(self, work: Work) -> FlushResult:
        """Write a scan's result and log it per project (inside the write lock)."""
        projects = flushwrite.apply(self.store, self.config, work)
        return FlushResult(full=work.full, scanned=work.result.scanned, projects=projects,
                           warnings=work.result.warnings)

    # -- reading -------------------------------------------------------------------------

    def _state(self, project: str) -> ProjectState:
        state = self.store.project_state(project)
        if state is None:
            if project not in self.config.projects:
                raise unknown_project(project, self.config.projects)
            return ProjectState(project, 0, 0, "", {})
        return state

    def epoch(self, project: str) -> int:
        """The project's current epoch (0 before its first flush)."""
        return self._state(project).epoch

    def changes_since(self, project: str, since: int, undone: bool = False) -> ChangesSince:
        """The net changes after epoch `since`: those the log lists, and (when it was
        compacted past `since`) the older ones counted; or, when not even the counts reach
        back that far, a `forgotten` answer (the reader needs a fresh listing). With
        `undone`, a change undone since is kept (for listings of index entries)."""
        state, entries = self.store.log_with_state(project, since)  # one statement
        answer = changelog.since_read(state, since, entries, undone) if state else None
        if answer is not None:
            return answer
        with self.store.read():  # state and rows from one snapshot: no compaction between
            return changelog.since(self.store, self._state(project), since, undone)

    def logged_since(self, project: str, since: int) -> tuple[int, list[Change] | None]:
        """The project's epoch now, and the changes logged after epoch `since` as logged
        (not coalesced), read at once; None for the changes when the log no longer lists
        every one of them. For a caller that only asks what kinds of paths changed: one
        statement, where `changes_since` may need a snapshot of several."""
        state, entries = self.store.log_with_state(project, since)
        if state is None:
            return self._state(project).epoch, []
        if since < max(state.compacted_through, state.forgotten_through) or since > state.epoch:
            return state.epoch, None
        return state.epoch, [e.change for e in entries]

    def files_in_scope(self, project: str) -> list[IndexEntry]:
        """The indexed files a project includes now, in path order.

        A note stored unparsed (no flush has run since the config began to ask for tags)
        is judged by its tags and properties as they are on disk now."""
        scope = self.config.project(project).scope
        written = self._written
        kept = None
        if written is not None and written[:2] == (self.store.db.conn, self.store.data_version()):
            kept = written[2]
        if not scope.needs_facts:  # the path decides: no entry is built for another's file
            if kept is not None:
                return [e for e in kept if scope.matches_path(e.path)]
            return list(self.store.index_iter(scope.matches_path))
        entries = kept if kept is not None else self.store.index_iter()
        return [e for e in map(self._read_facts, entries) if in_scope(scope, e)]

    def _read_facts(self, entry: IndexEntry) -> IndexEntry:
        if entry.parsed:
            return entry
        from freshline.access import file_facts

        facts = file_facts(self.root, entry.path)
        return replace(entry, tags=tuple(sorted(facts.tags)),
                       properties=dict(facts.properties), parsed=True)


def _stored_order(entry: IndexEntry) -> bytes:
    """The index's order: by the stored path's bytes."""
    return encode_path(entry.path)
