"""The tracker: flush the workspace into the index, and log what changed per project.

The index in the store is the truth; watchers only hint which paths to look at. A flush
takes the store's write lock first (`BEGIN IMMEDIATE`), then reads the index, scans and
writes, so two processes flushing at once are serialized and each change is logged once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import (
    DATA_DIR,
    Config,
    ProjectConfig,
    config_stamp,
    load_config,
    unknown_project,
)
from freshline.ignore import GITIGNORE, IgnoreRules, IgnoreState, load_rules
from freshline.scope import Scope, canonical
from freshline.store import ProjectState, Store
from freshline.store.records import Change, ChangeKind, IndexEntry
from freshline.tracker.coalesce import coalesce
from freshline.tracker.hints import cookie_sync, watcher_alive
from freshline.tracker.scoping import in_scope, scope_batch

if TYPE_CHECKING:  # the scanner (markdown parsing, hashing) loads with the first scan:
    from freshline.tracker.scan import ScanResult  # `status` only reads the index

LAST_FULL_SCAN = "tracker.last_full_scan"
IGNORE_RULES = "tracker.ignore_rules"  # the ignore rules the last full scan walked by
REMOVED: dict[str, object] = {"removed": True}  # the patterns of a project taken out of the config


@dataclass(frozen=True)
class ProjectDelta:
    """What one flush logged for one project."""

    project: str
    epoch: int
    changes: list[Change]


@dataclass
class FlushResult:
    """The outcome of one flush."""

    full: bool
    scanned: int
    projects: dict[str, ProjectDelta] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ChangesSince:
    """The answer to "what changed in this project since epoch N?"."""

    project: str
    since: int
    epoch: int  # the project's epoch now: what a reader is caught up to after this
    compacted: bool  # the log no longer reaches back to `since`: re-enumerate
    changes: list[Change]  # coalesced; empty when compacted


def patterns_of(project: ProjectConfig, ignore: IgnoreState) -> dict[str, object]:
    """The normalized patterns a project's log state remembers, with the ignore rules
    (an ignore file that changes is a config change)."""
    patterns: dict[str, object] = {
        "include": canonical(project.include),
        "exclude": canonical(project.exclude),
        "mode": project.mode.value,
        **_ignore_patterns(ignore),
    }
    if project.allow_secrets:  # absent when empty, as states written before it had it
        patterns["allow_secrets"] = sorted(project.allow_secrets)
    return patterns


def _ignore_patterns(ignore: IgnoreState) -> dict[str, object]:
    patterns: dict[str, object] = {"ignore": sorted(ignore.ignore)}
    rules = ignore.rules_json()
    if rules:  # left out when there are none, as before ignore files were read
        patterns["ignore_rules"] = rules
    return patterns


def _ignore_of(patterns: dict[str, object]) -> IgnoreState:
    ignore, rules = patterns.get("ignore", []), patterns.get("ignore_rules")
    assert isinstance(ignore, list) and (rules is None or isinstance(rules, dict))
    return IgnoreState.from_json(ignore, rules)


def _scope_of(patterns: dict[str, object]) -> Scope:
    include, exclude = patterns["include"], patterns["exclude"]
    allowed = patterns.get("allow_secrets", [])
    assert isinstance(include, list) and isinstance(exclude, list) and isinstance(allowed, list)
    ignore = _ignore_of(patterns)
    return Scope.from_strings(include, exclude, ignore.ignore, allowed, ignore.rules())


class Tracker:
    """Flushes one workspace into its store and answers change-log queries."""

    def __init__(self, config: Config, store: Store | None = None) -> None:
        self.config = config
        self.root = Path(config.root)
        self.store = store or Store(self.root / DATA_DIR)
        self._stamp = config_stamp(config.path)

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

    def flush(self, full: bool = False, sync: bool = True) -> FlushResult:
        """Bring the index up to date and log changes: hinted paths if a watcher is alive,
        else (or with `full`) the whole workspace.

        `sync=False` trusts the hints already stored without asking the watcher to catch
        up first: the watcher itself flushes that way after writing a batch of hints.
        """
        self.reload_config()
        live = not full and watcher_alive(self.store)
        if live and sync and not cookie_sync(self.root, self.store):
            live = False  # the watcher did not answer in time: trust nothing
        if not live:
            return self._full_flush()
        with self.store.write():
            return self._flush_locked(self.store.hints_take())

    def scan(self, paths: Iterable[str] | None = None) -> FlushResult:
        """Scan the whole workspace, or only `paths` and their subtrees, and log changes."""
        self.reload_config()
        if paths is None:
            return self._full_flush()
        with self.store.write():
            return self._flush_locked(list(paths))

    def _full_flush(self) -> FlushResult:
        """Walk and hash before taking the write lock, so writers in other processes (a
        send accepting its turn) do not wait behind a long scan; if one wrote meanwhile,
        the scan is redone under the lock, where nothing can move."""
        version = self.store.data_version()
        result = self._scan(None)
        with self.store.write():
            self.store.hints_take()  # a full scan covers them all
            if self.store.data_version() != version:
                result = self._scan(None)
            return self._apply(result, full=True)

    def _flush_locked(self, paths: list[str]) -> FlushResult:
        """Scan the hinted paths by the rules the last full scan walked by (with the files
        above the root read again); a changed rule means a full scan."""
        rules = load_rules(self.root, self.config.workspace.ignore_settings)
        ignore = self._ignore_now(rules)
        if "" in paths or ignore is None or self._patterns_moved(ignore):
            return self._apply(self._scan(None, rules), full=True)
        result = self._scan(paths, ignore.rules())
        if result.changed(GITIGNORE):  # a .gitignore's rules reach past the hinted paths
            return self._apply(self._scan(None, rules), full=True)
        result.ignore = ignore
        return self._apply(result, full=False)

    def _scan(self, paths: list[str] | None, rules: IgnoreRules | None = None) -> ScanResult:
        from freshline.tracker.scan import Scanner, ScanResult, full_scan, targeted_scan

        rules = rules or load_rules(self.root, self.config.workspace.ignore_settings)
        scanner = Scanner(self.root, self.store, rules)
        if paths is None:
            return full_scan(scanner)
        return targeted_scan(scanner, paths) if paths else ScanResult()

    def _ignore_now(self, rules: IgnoreRules) -> IgnoreState | None:
        """The ignore rules as they stand, each folder's .gitignore as the last full scan
        read it (a changed one is seen by the scan that finds it changed); None before
        the first full scan."""
        known = self.store.meta_get(IGNORE_RULES)
        if known is None:
            return None
        nested = tuple(f for f in _ignore_of(json.loads(known)).files if not f.outer)
        return replace(rules.state(), files=rules.outer + nested)

    def _apply(self, result: ScanResult, full: bool) -> FlushResult:
        """Write a scan's result and log it per project (inside the write lock)."""
        assert result.ignore is not None  # set by a full scan, or by the flush
        ignore = result.ignore
        if full:
            self.store.meta_set(LAST_FULL_SCAN, str(time.time()))
            self.store.meta_set(IGNORE_RULES, json.dumps(_ignore_patterns(ignore)))
        created = [o.new for o in result.observed if o.kind is ChangeKind.CREATED and o.new]
        config_changes, new = self._config_changes(ignore, created)
        self.store.index_put(result.put)
        self.store.index_delete(result.remove)
        out = FlushResult(full=full, scanned=result.scanned, warnings=result.warnings)
        for name, project in self.config.projects.items():
            if name in new:  # its starting point is the index after this flush: epoch 0
                continue
            batch = scope_batch(result.observed, result.folders, project.scope)
            changes = coalesce(config_changes.get(name, []) + batch)
            if changes:
                out.projects[name] = self._log(name, changes)
        return out

    def _patterns_moved(self, ignore: IgnoreState) -> bool:
        """Whether a project's patterns changed since the last flush: then only a full scan
        is sure to find files that, say, an ignore entry kept out of the index."""
        states = self.store.project_states()
        return any(
            name in states and states[name].patterns != patterns_of(project, ignore)
            for name, project in self.config.projects.items()
        )

    def _log(self, name: str, changes: list[Change]) -> ProjectDelta:
        state = self.store.project_state(name)
        assert state is not None
        epoch = state.epoch + 1
        self.store.log_append(name, epoch, changes)
        through = self.store.log_compact(name, self.config.workspace.change_log_cap)
        compacted = through if through is not None else state.compacted_through
        self.store.project_put(
            ProjectState(name, epoch, compacted, state.signature, state.patterns)
        )
        return ProjectDelta(name, epoch, changes)

    def _config_changes(
        self, ignore: IgnoreState, created: list[IndexEntry]
    ) -> tuple[dict[str, list[Change]], set[str]]:
        """Bring each project's remembered patterns up to date: the changes of those whose
        patterns moved, and the names of projects seen for the first time.

        Runs before the batch is applied, so old and new scopes are compared on the same
        (pre-batch) facts; the batch's own changes follow and coalesce with these.
        `created` are the batch's new files: among them, those an old ignore rule kept out.
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
            elif state.patterns == REMOVED:
                # Back after a removal: nobody logged what happened meanwhile, so its epoch
                # goes on (a reader's cursor stays meaningful) and every earlier reader is
                # told to re-enumerate.
                epoch = state.epoch + 1
                self.store.project_put(
                    ProjectState(name, epoch, epoch, project.signature, patterns)
                )
            elif state.patterns != patterns:
                self.store.project_put(
                    replace(state, signature=project.signature, patterns=patterns)
                )
                out[name] = self._scope_shift(state.patterns, patterns, created)
        return out, new

    def _scope_shift(
        self, old: dict[str, object], new: dict[str, object], created: list[IndexEntry]
    ) -> list[Change]:
        before, after = _scope_of(old), _scope_of(new)
        entered: list[str] = []
        left: list[str] = []
        fresh = {e.path for e in created}  # new in this batch: they cannot have left
        for entry in chain(self.store.index_iter(), created):
            was, now = in_scope(before, entry), in_scope(after, entry)
            if now and not was:
                entered.append(entry.path)
            elif was and not now and entry.path not in fresh:
                left.append(entry.path)
        detail = _pattern_diff(old, new)
        detail["newly_included"] = sorted(entered)
        detail["no_longer_included"] = left
        config = Change(ChangeKind.CONFIG, "", detail=detail)
        return [
            config,
            *(Change(ChangeKind.CREATED, p) for p in entered),
            *(Change(ChangeKind.DELETED, p) for p in left),
        ]

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

    def changes_since(self, project: str, since: int) -> ChangesSince:
        """Coalesced changes after epoch `since`, or a compacted marker if the log was cut."""
        with self.store.read():  # state and rows from one snapshot: no compaction between
            state = self._state(project)
            if since < state.compacted_through or since > state.epoch:
                return ChangesSince(project, since, state.epoch, True, [])
            entries = self.store.log_read(project, since)
        return ChangesSince(
            project, since, state.epoch, False, coalesce(e.change for e in entries)
        )

    def files_in_scope(self, project: str) -> list[IndexEntry]:
        """The indexed files a project includes now, in path order."""
        scope = self.config.project(project).scope
        return [e for e in self.store.index_iter() if in_scope(scope, e)]


def _pattern_diff(old: dict[str, object], new: dict[str, object]) -> dict[str, object]:
    """What changed between two pattern sets, keyed as the updates block reads it."""

    def as_set(d: dict[str, object], key: str) -> set[str]:
        value = d.get(key, [])
        return set(value) if isinstance(value, list) else set()

    detail: dict[str, object] = {}
    for key in ("include", "exclude", "ignore", "allow_secrets"):
        added, removed = as_set(new, key) - as_set(old, key), as_set(old, key) - as_set(new, key)
        if added:
            detail[f"{key}_added"] = sorted(added)
        if removed:
            detail[f"{key}_removed"] = sorted(removed)
    files = _ignore_of(old).changed_files(_ignore_of(new))
    if files:
        detail["ignore_files"] = files
    if old.get("mode") != new.get("mode"):
        detail["mode"] = {"from": old.get("mode"), "to": new.get("mode")}
    return detail
