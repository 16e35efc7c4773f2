"""Running the matrix: every scenario observed three ways, each compared with the truth.

Modes: `watcher` (a watcher runs; the flush after the scenario trusts its hints),
`fresh` (a full scan in a process that never scanned the tree before) and `warm` (a full
scan by a tracker that scanned the tree before, its caches warm). Each mode gets its own
copy of every scenario, built by the scenario's setup, so all three start from the same
tree; the truth is computed per copy from snapshots taken before and after the change.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from freshline.config import load_config
from freshline.store.records import Change
from freshline.tracker import Tracker
from freshline.tracker.hints import cookie_sync, watcher_alive
from freshline.tracker.watcher import Watcher

from .scenarios import SCENARIOS, Scenario, Tree
from .truth import Snapshot, expected_changes, snapshot

PROJECT = "all"
CONFIG = '[workspace]\ndebounce_ms = 50\n\n[projects.all]\ninclude = ["**"]\n'
WAIT_S = 60.0  # for a watcher to start or catch up, however loaded the machine
_FRESH_SCAN = """
import sys
from pathlib import Path
from freshline.config import load_config
from freshline.tracker import Tracker
for root in sys.argv[1:]:
    Tracker(load_config(Path(root))).scan()
"""


class Mode(StrEnum):
    """How a scenario's changes are observed."""

    WATCHER = "watcher"  # a watcher runs; the flush uses its hints
    FRESH = "fresh"  # a full scan in a process that never scanned before
    WARM = "warm"  # a full scan in a process that scanned before


class Status(StrEnum):
    """The verdict of one scenario in one mode."""

    OK = "ok"  # exactly the truth
    DIFFERS = "differs"  # changes missing or reported that did not happen
    ERROR = "error"  # the run itself failed
    SKIPPED = "skipped"  # needs git, which is not installed


@dataclass
class Outcome:
    """One cell of the matrix."""

    scenario: str
    mode: Mode
    status: Status
    missing: list[Change] = field(default_factory=list)  # true, but not reported
    extra: list[Change] = field(default_factory=list)  # reported, but not true
    error: str | None = None
    note: str | None = None  # how the mode fell short of its purpose, even when right


@dataclass
class _Case:
    """One scenario's copy for one mode, until its changes are read back."""

    scenario: Scenario
    root: Path
    tree: Tree = field(init=False)
    epoch: int = 0
    before: Snapshot = field(default_factory=Snapshot)
    after: Snapshot = field(default_factory=Snapshot)
    got: list[Change] = field(default_factory=list)
    error: str | None = None
    note: str | None = None


def run_matrix(
    base: Path,
    scenarios: Iterable[Scenario] = SCENARIOS,
    modes: Iterable[Mode] = tuple(Mode),
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run `scenarios` in every mode under `base` (an empty directory); one outcome each."""
    chosen = list(scenarios)
    have_git = shutil.which("git") is not None
    runnable = [s for s in chosen if have_git or not s.needs_git]
    outcomes = []
    for mode in modes:
        cases = [_Case(s, base / mode.value / str(i)) for i, s in enumerate(runnable)]
        _RUNNERS[mode](cases)
        for case in cases:
            outcomes.append(_judge(case, mode))
        outcomes += [Outcome(s.name, mode, Status.SKIPPED) for s in chosen if s not in runnable]
        if on_outcome is not None:
            for outcome in outcomes[-len(chosen):]:
                on_outcome(outcome)
    return outcomes


def _prepare(case: _Case) -> Path:
    """Build the case's tree, right before it is first scanned (a scenario may depend on
    the scan coming soon after its last write)."""
    case.root.mkdir(parents=True)
    (case.root / "freshline.toml").write_text(CONFIG, encoding="utf-8")
    (case.root / ".freshline").mkdir()
    case.tree = Tree(case.root)
    case.scenario.setup(case.tree)
    return case.root


def _act(case: _Case, tracker: Tracker) -> None:
    case.epoch = tracker.epoch(PROJECT)
    case.before = snapshot(case.root)
    case.scenario.act(case.tree)
    case.after = snapshot(case.root)


def _guard(run: Callable[[_Case], None], case: _Case) -> None:
    try:
        run(case)
    except Exception as exc:  # a cell that fails says why; the others still run
        case.error = f"{type(exc).__name__}: {exc}"


def _warm(cases: list[_Case]) -> None:
    def run(case: _Case) -> None:
        tracker = _scanned(_prepare(case))
        tracker.scan()  # its caches now hold the tree
        _act(case, tracker)
        tracker.scan()
        case.got = tracker.changes_since(PROJECT, case.epoch).changes

    for case in cases:
        _guard(run, case)


def _fresh(cases: list[_Case]) -> None:
    for case in cases:
        _guard(lambda c: _act(c, _scanned(_prepare(c))), case)
    ready = [c for c in cases if c.error is None]
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_SCAN, *(str(c.root) for c in ready)],
        capture_output=True, text=True, check=False,
    )
    for case in ready:
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            case.error = f"the scanning process failed: {lines[-1] if lines else done.returncode}"
        else:
            tracker = Tracker(load_config(case.root))
            case.got = tracker.changes_since(PROJECT, case.epoch).changes


def _scanned(root: Path) -> Tracker:
    tracker = Tracker(load_config(root))
    tracker.scan()
    return tracker


def _watching(cases: list[_Case]) -> None:
    for case in cases:
        _guard(_watch_one, case)


def _watch_one(case: _Case) -> None:
    root = _prepare(case)
    tracker = Tracker(load_config(root))
    running = _Running(root)
    try:
        case.epoch = tracker.epoch(PROJECT)
        case.before = snapshot(root)
        if case.scenario.offline:
            running.stop()
        case.scenario.act(case.tree)
        if case.scenario.offline:
            running = _Running(root)  # its first full scan finds what happened meanwhile
        case.after = snapshot(root)
        if not cookie_sync(root, timeout=WAIT_S):
            raise RuntimeError("the watcher did not catch up")
        if tracker.flush().full:
            case.note = "the watcher lost events; the flush scanned everything"
        case.got = tracker.changes_since(PROJECT, case.epoch).changes
    finally:
        running.stop()


class _Running:
    """A watcher of its own in this process, started and trusted (its first full scan
    done)."""

    def __init__(self, root: Path) -> None:
        self.watcher = Watcher(load_config(root))
        self.watcher.start()
        if not (self.watcher.up.wait(WAIT_S) and watcher_alive(self.watcher.tracker.store)):
            self.stop()
            raise RuntimeError("the watcher did not start")

    def stop(self) -> None:
        self.watcher.close()


_RUNNERS: dict[Mode, Callable[[list[_Case]], None]] = {
    Mode.WATCHER: _watching,
    Mode.FRESH: _fresh,
    Mode.WARM: _warm,
}


def _key(change: Change) -> tuple[str, str, str, str]:
    detail = dict(change.detail or {})
    if isinstance(detail.get("paths"), list):
        detail["paths"] = sorted(detail["paths"])
    return change.kind.value, change.path, change.old_path or "", json.dumps(detail, sort_keys=True)


def _judge(case: _Case, mode: Mode) -> Outcome:
    name = case.scenario.name
    if case.error is not None:
        return Outcome(name, mode, Status.ERROR, error=case.error)
    truth = expected_changes(case.before, case.after, case.root, case.scenario.git_operation)
    want, got = {_key(c): c for c in truth}, {_key(c): c for c in case.got}
    missing = [c for k, c in want.items() if k not in got]
    extra = [c for k, c in got.items() if k not in want]
    status = Status.OK if not missing and not extra else Status.DIFFERS
    return Outcome(name, mode, status, missing, extra, note=case.note)
