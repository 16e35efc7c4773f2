"""The tracker: flush the workspace into the index, and log what changed per project.

The index in the store is the truth; watchers only hint which paths to look at. A flush
scans first, then takes the store's write lock (`BEGIN IMMEDIATE`) to write, re-scanning
under the lock only if another connection wrote meanwhile; so two processes flushing at
once are serialized, each change is logged once, and nobody waits behind a scan.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import (
    DATA_DIR,
    Config,
    config_stamp,
    load_config,
    unknown_project,
)
from freshline.errors import GitError
from freshline.ignore import GITIGNORE, IgnoreRules, IgnoreState, load_rules
from freshline.killpoint import checkpoint
from freshline.scope import Scope
from freshline.store import ProjectState, Store
from freshline.store.db import encode_path
from freshline.store.meta import Hints
from freshline.store.records import Change, ChangeKind, IndexEntry, entry_content
from freshline.tracker import changelog
from freshline.tracker.changelog import ChangesSince, ProjectDelta
from freshline.tracker.coalesce import coalesce_sets
from freshline.tracker.facts import needs_facts, observed_with_facts, stand_in
from freshline.tracker.gitmoves import HeadMove, git_dir, head_move, read_head
from freshline.tracker.hints import sync_with_watcher, watcher_alive
from freshline.tracker.listing import LISTED_AT, UNHASHED_META
from freshline.tracker.observed import Observed
from freshline.tracker.patterns import (
    REMOVED,
    ignore_of,
    ignore_patterns,
    pattern_diff,
    patterns_need_facts,
    patterns_of,
    scope_of,
)
from freshline.tracker.reasons import why
from freshline.tracker.scoping import facts, in_scope, scope_batch, scope_move

if TYPE_CHECKING:  # the scanner (markdown parsing, hashing) loads with the first scan:
    from freshline.tracker.scan import Memo, ScanResult  # `status` only reads the index

LAST_FULL_SCAN = "tracker.last_full_scan"
IGNORE_RULES = "tracker.ignore_rules"  # the ignore rules the last full scan walked by
GIT_HEAD = "tracker.git_head"  # the commit HEAD named at the last flush ("" before any)
SCAN_MARK = "scan.reported."  # + project: the epoch the last `scan` reported up to


def mark_key(project: str) -> str:
    """The meta key of a project's scan mark (`reports.py` reads and moves it)."""
    return SCAN_MARK + project


@dataclass
class FlushResult:
    """The outcome of one flush."""

    full: bool
    scanned: int
    projects: dict[str, ProjectDelta] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Work:
    """What a flush found out before taking the write lock."""

    result: ScanResult
    full: bool
    head: str | None  # the commit HEAD names; None when the workspace is no git checkout
    head_before: str | None = None  # as the last flush recorded it (None: never)
    move: HeadMove | None = None
    states: dict[str, ProjectState] = field(default_factory=dict)  # as the scan read them


@dataclass(frozen=True)
class _Stored:
    """What a flush's scan reads of the store, read once: the projects' states and the
    facts it keeps in `meta`."""

    states: dict[str, ProjectState]
    facts: dict[str, str]


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
        self._written = None
        version = self.store.data_version()
        hints = self.store.hints_pending() if take_hints else _NO_HINTS
        paths = paths_of(hints)
        work = self._prepare(paths, memo, defer)
        if paths == [] and self._nothing_to_write(work):
            return FlushResult(full=False, scanned=0)
        with self.store.write():
            if self.store.data_version() != version:
                hints = self.store.hints_pending() if take_hints else _NO_HINTS
                work = self._prepare(paths_of(hints), memo, defer)
            self.store.hints_drop(hints.rows)
            if work.result.from_empty:  # the index's order: its b-tree fills page by page
                work.result.put.sort(key=_stored_order)
            out = self._apply(work)
            checkpoint("flush:write")  # killed here, the transaction dies with its process
            version = self.store.data_version()  # nobody else commits before this ends
        if work.result.from_empty:
            self._written = (self.store.db.conn, version, work.result.put)
        return out

    def _nothing_to_write(self, work: _Work) -> bool:
        """Whether a flush of no path writes nothing: no scan was due, HEAD stayed, and
        every project has its state. Then it takes no write lock: under load, most
        requests' flushes find the hints already taken by the watcher's or another's."""
        if work.full or work.head != work.head_before:
            return False
        return set(self.config.projects) <= set(work.states)

    def _prepare(self, paths: list[str] | None, memo: Memo, defer: bool) -> _Work:
        """Everything a flush finds out before it writes: the scan and where HEAD went."""
        stored = _Stored(self.store.project_states(),
                         self.store.meta_many((UNHASHED_META, LISTED_AT, IGNORE_RULES, GIT_HEAD)))
        result, full = self._scan(paths, memo, defer, stored)
        work = _Work(result, full=full, head=None, states=stored.states)
        gitdir = git_dir(self.root)
        if gitdir is None:
            return work
        work.head = read_head(gitdir)
        work.head_before = stored.facts.get(GIT_HEAD)
        if work.head_before is not None and work.head_before != work.head:
            try:
                work.move = head_move(gitdir, work.head_before, work.head)
            except GitError as exc:
                work.result.warnings.append(f"HEAD moved but its paths are unknown: {exc}")
        return work

    def _scan(
        self, paths: list[str] | None, memo: Memo, defer: bool, stored: _Stored
    ) -> tuple[ScanResult, bool]:
        """The scan of `paths` (None: everything), and whether it had to be a full one.

        Notes are parsed while a scope on either side of the flush needs their tags or
        properties; the first flush whose config needs them is a full scan that reads the
        notes stored unparsed again (`tracker.facts`). Entries listed but never read are
        read by a full scan unless the flush may `defer`; an empty index that may defer
        is filled from a listing (`tracker.listing`)."""
        from freshline.tracker.scan import Scanner, full_scan

        rules = load_rules(self.root, self.config.workspace.ignore_settings)
        now = needs_facts(p.scope for p in self.config.projects.values())
        before = any(patterns_need_facts(s.patterns) for s in stored.states.values())
        parse = now or before
        unread = stored.facts.get(UNHASHED_META) == "1"
        read = unread and (parse or not defer)
        listed_at = int(stored.facts.get(LISTED_AT) or 0) if unread else 0
        if paths is not None and (before or not now) and not read:
            hinted = self._hinted_scan(paths, rules, memo, parse, stored, listed_at)
            if hinted is not None:
                return hinted, False
        # A full scan keeps no memo (its redo, rare, hashes again): 100k files would weigh.
        reparse = self.store.index_unparsed() if parse else []
        listed = self.store.index_unhashed() if read else None
        listing = defer and not parse and self.store.index_empty()
        scanner = Scanner(self.root, self.store, rules, parse=parse, listing=listing,
                          listed_at=listed_at)
        return full_scan(scanner, reparse, listed), True

    def _hinted_scan(
        self,
        paths: list[str],
        rules: IgnoreRules,
        memo: Memo,
        parse: bool,
        stored: _Stored,
        listed_at: int,
    ) -> ScanResult | None:
        """The scan of `paths` alone, by the ignore rules the last full scan walked by (with
        the files above the root read again); None when only a full scan will do (a rule
        changed, or the patterns did). `listed_at` as the store keeps it."""
        from freshline.tracker.scan import Scanner, ScanResult, targeted_scan

        ignore = self._ignore_now(rules, stored.facts.get(IGNORE_RULES))
        if "" in paths or ignore is None or self._patterns_moved(ignore, stored.states):
            return None
        scanner = Scanner(self.root, self.store, ignore.rules(), memo, parse, listed_at=listed_at)
        result = targeted_scan(scanner, paths) if paths else ScanResult()
        if result.changed(GITIGNORE):  # a .gitignore's rules reach past the hinted paths
            return None
        result.ignore = ignore
        return result

    @staticmethod
    def _ignore_now(rules: IgnoreRules, known: str | None) -> IgnoreState | None:
        """The ignore rules as they stand, each folder's .gitignore as the last full scan
        read it (`known`, as stored: a changed one is seen by the scan that finds it
        changed); None before the first full scan."""
        if known is None:
            return None
        nested = tuple(f for f in ignore_of(json.loads(known)).files if not f.outer)
        return replace(rules.state(), files=rules.outer + nested)

    def _apply(self, work: _Work) -> FlushResult:
        """Write a scan's result and log it per project (inside the write lock)."""
        result = work.result
        assert result.ignore is not None  # set by a full scan, or by the hinted one
        ignore = result.ignore
        if work.full:
            self.store.meta_set(LAST_FULL_SCAN, str(time.time()))
            self.store.meta_set(IGNORE_RULES, json.dumps(ignore_patterns(ignore)))
        if work.head is not None and work.head != work.head_before:
            self.store.meta_set(GIT_HEAD, work.head)
        if self.config.projects.keys() & self.store.project_states().keys():
            created = [o.new for o in result.observed if o.kind is ChangeKind.CREATED and o.new]
            known = stand_in(result.observed, result.put)
            observed = observed_with_facts(result.observed, known)
        else:  # every project is new (a first flush): none logs this batch, nothing to judge
            created, known, observed = [], _as_it_is, []
        config_changes, new = self._config_changes(ignore, created, known)
        self.store.index_put(result.put, result.sketches)
        self.store.index_delete(result.remove)
        self._note_unread(result)
        out = FlushResult(full=work.full, scanned=result.scanned, warnings=result.warnings)
        moved = self._head_moved(work, observed)
        for name, project in self.config.projects.items():
            if name in new:  # its starting point is the index after this flush: epoch 0
                continue
            batch = scope_batch(observed, result.folders, project.scope)
            batch += moved(project.scope)
            changes = coalesce_sets([config_changes.get(name, []), batch])
            if changes:
                out.projects[name] = self._log(name, changes)
        return out

    def _note_unread(self, result: ScanResult) -> None:
        """Keep the store's word on whether some entry is listed but not read yet."""
        if result.listed_at is not None:
            self.store.meta_set(LISTED_AT, str(result.listed_at))
        if any(not e.hashed for e in result.put):
            self.store.meta_set(UNHASHED_META, "1")
        elif result.listed_read:  # each one listed was read, or left the index
            self.store.meta_set(UNHASHED_META, "0")

    def _head_moved(
        self, work: _Work, observed: list[Observed]
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
                entry = self.store.index_get(path)
                found = [entry] if entry is not None else []
            return found

        return lambda scope: scope_move(move, scope, facts)

    def _patterns_moved(self, ignore: IgnoreState, states: dict[str, ProjectState]) -> bool:
        """Whether a project's patterns changed since the last flush (`states`): then only
        a full scan is sure to find files that, say, an ignore entry kept out of the index."""
        return any(
            name in states and states[name].patterns != patterns_of(project, ignore)
            for name, project in self.config.projects.items()
        )

    def _log(self, name: str, changes: list[Change]) -> ProjectDelta:
        state = self.store.project_state(name)
        assert state is not None
        return changelog.append(self.store, state, changes, self.config.workspace.change_log_cap)

    def _config_changes(
        self,
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
        states = self.store.project_states()
        for name in states.keys() - self.config.projects.keys():
            if states[name].patterns != REMOVED:
                self.store.project_put(replace(states[name], patterns=REMOVED))
        out: dict[str, list[Change]] = {}
        new: set[str] = set()
        for name, project in self.config.projects.items():
            patterns = patterns_of(project, ignore)
            state = states.get(name)
            if state is None:
                new.add(name)
                self.store.project_put(ProjectState(name, 0, 0, project.signature, patterns))
                self.store.meta_set(mark_key(name), "0")  # a scan reports all it ever logs
            elif state.patterns == REMOVED:
                # Back after a removal: nobody logged what happened meanwhile, so its epoch
                # goes on (a reader's cursor stays meaningful) and every earlier reader is
                # told to re-enumerate.
                epoch = state.epoch + 1
                self.store.project_put(
                    ProjectState(name, epoch, epoch, project.signature, patterns, epoch)
                )
            elif state.patterns != patterns:
                self.store.project_put(
                    replace(state, signature=project.signature, patterns=patterns)
                )
                out[name] = self._scope_shift(state.patterns, patterns, created, known)
        return out, new

    def _scope_shift(
        self,
        old: dict[str, object],
        new: dict[str, object],
        created: list[IndexEntry],
        known: Callable[[IndexEntry], IndexEntry],
    ) -> list[Change]:
        before, after = scope_of(old), scope_of(new)
        entered: list[Change] = []
        left: list[Change] = []
        fresh = {e.path for e in created}  # new in this batch: they cannot have left
        for entry in chain(map(known, self.store.index_iter()), created):
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


def _as_it_is(entry: IndexEntry) -> IndexEntry:
    return entry


def _stored_order(entry: IndexEntry) -> bytes:
    """The index's order: by the stored path's bytes."""
    return encode_path(entry.path)
