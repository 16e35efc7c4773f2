"""What a flush finds out before it takes the write lock: which scan will do (the hinted
paths alone, or the whole workspace), its result, and where HEAD went.

None of it writes: the flush runs it before `BEGIN IMMEDIATE`, and again under the lock
only if another connection wrote meanwhile (`tracker.tracker`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from freshline.config import Config
from freshline.errors import GitError
from freshline.ignore import GITIGNORE, IgnoreRules, IgnoreState, load_rules
from freshline.store import ProjectState, Store
from freshline.tracker.facts import needs_facts
from freshline.tracker.gitmoves import HeadMove, git_dir, head_move, read_head
from freshline.tracker.listing import LISTED_AT, UNHASHED_META
from freshline.tracker.patterns import ignore_of, patterns_need_facts, patterns_of

if TYPE_CHECKING:  # the scanner (markdown parsing, hashing) loads with the first scan:
    from freshline.tracker.scan import Memo, ScanResult  # `status` only reads the index

LAST_FULL_SCAN = "tracker.last_full_scan"
IGNORE_RULES = "tracker.ignore_rules"  # the ignore rules the last full scan walked by
GIT_HEAD = "tracker.git_head"  # the commit HEAD named at the last flush ("" before any)


@dataclass
class Work:
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


@dataclass(frozen=True)
class FlushScan:
    """The scan of one flush of the workspace at `root`, by `config`, into `store`."""

    root: Path
    config: Config
    store: Store

    def prepare(self, paths: list[str] | None, memo: Memo, defer: bool) -> Work:
        """Everything a flush finds out before it writes: the scan and where HEAD went."""
        stored = _Stored(self.store.project_states(),
                         self.store.meta_many((UNHASHED_META, LISTED_AT, IGNORE_RULES, GIT_HEAD)))
        result, full = self._scan(paths, memo, defer, stored)
        work = Work(result, full=full, head=None, states=stored.states)
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

        ignore = _ignore_now(rules, stored.facts.get(IGNORE_RULES))
        if "" in paths or ignore is None or self._patterns_moved(ignore, stored.states):
            return None
        scanner = Scanner(self.root, self.store, ignore.rules(), memo, parse, listed_at=listed_at)
        result = targeted_scan(scanner, paths) if paths else ScanResult()
        if result.changed(GITIGNORE):  # a .gitignore's rules reach past the hinted paths
            return None
        result.ignore = ignore
        return result

    def _patterns_moved(self, ignore: IgnoreState, states: dict[str, ProjectState]) -> bool:
        """Whether a project's patterns changed since the last flush (`states`): then only
        a full scan is sure to find files that, say, an ignore entry kept out of the index."""
        return any(
            name in states and states[name].patterns != patterns_of(project, ignore)
            for name, project in self.config.projects.items()
        )


def _ignore_now(rules: IgnoreRules, known: str | None) -> IgnoreState | None:
    """The ignore rules as they stand, each folder's .gitignore as the last full scan
    read it (`known`, as stored: a changed one is seen by the scan that finds it
    changed); None before the first full scan."""
    if known is None:
        return None
    nested = tuple(f for f in ignore_of(json.loads(known)).files if not f.outer)
    return replace(rules.state(), files=rules.outer + nested)
