"""`freshline selftest`: the differential proof that the tracker tells only the truth.

Every scenario of the matrix (`scenarios.py`) is built and changed on a real file system,
observed three ways (`matrix.py`: watcher and hinted flush, full scan in a fresh process,
full scan in a warm one) and compared with the truth computed from snapshots alone
(`truth.py`). The test suite runs the same matrix; users run it on their own file system
(bind mounts, network drives and synced folders behave differently).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from freshline.paths import shown
from freshline.store.records import Change

from .matrix import Mode, Outcome, Status, run_matrix
from .scenarios import SCENARIOS, Scenario

DETAIL_LINES = 10  # changes shown per failing cell

__all__ = ["SCENARIOS", "Mode", "Outcome", "Scenario", "Status", "outcome_dict", "render",
           "run_selftest"]


def run_selftest(
    directory: Path,
    scenarios: Iterable[Scenario] = SCENARIOS,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run the matrix in a temporary directory inside `directory`, removed afterwards."""
    work = Path(tempfile.mkdtemp(prefix=".freshline-selftest-", dir=directory))
    try:
        return run_matrix(work.resolve(), scenarios, tuple(Mode), on_outcome)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def render(outcomes: list[Outcome]) -> list[str]:
    """The scenario × mode table, then what each failing cell got wrong."""
    modes = list(Mode)
    names = list(dict.fromkeys(o.scenario for o in outcomes))
    cells = {(o.scenario, o.mode): o for o in outcomes}
    width = max(len("scenario"), *(len(n) for n in names))
    lines = [f"{'scenario':<{width}}  " + "  ".join(f"{m.value:<8}" for m in modes)]
    for name in names:
        row = [cells[name, m].status.value if (name, m) in cells else "-" for m in modes]
        lines.append(f"{name:<{width}}  " + "  ".join(f"{v:<8}" for v in row))
    for o in outcomes:
        if o.status in (Status.DIFFERS, Status.ERROR) or o.note:
            lines.append(f"{o.scenario} ({o.mode.value}):")
            lines += [f"  {label}: {shown(text)}" for label, text in
                      (("note", o.note), ("error", o.error)) if text]
            lines += _capped("missing", o.missing) + _capped("not true", o.extra)
    return lines


def _capped(label: str, changes: list[Change]) -> list[str]:
    lines = [f"  {label}: {_line(c)}" for c in changes[:DETAIL_LINES]]
    if len(changes) > DETAIL_LINES:
        lines.append(f"  … and {len(changes) - DETAIL_LINES} more {label}")
    return lines


def _line(c: Change) -> str:
    if c.detail and "operation" in c.detail:
        return f"{c.kind.value} {c.detail['operation']} ({c.detail.get('count')} paths)"
    old = f"{shown(c.old_path)} → " if c.old_path is not None else ""
    return f"{c.kind.value} {old}{shown(c.path)}"


def outcome_dict(o: Outcome) -> dict[str, Any]:
    """An outcome as JSON-able data."""
    return {
        "scenario": o.scenario,
        "mode": o.mode.value,
        "status": o.status.value,
        "missing": [_line(c) for c in o.missing],
        "not_true": [_line(c) for c in o.extra],
        "error": o.error,
        "note": o.note,
    }
