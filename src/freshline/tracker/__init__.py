"""The tracker: scans, renames, coalescing, per-project epochs and change log, watching.

Exports load on first use, so that a conversion worker importing `tracker.hashing` does
not pay for the store and the scanner.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy exports below resolve to, for type checkers
    from freshline.tracker.coalesce import coalesce
    from freshline.tracker.tracker import ChangesSince, FlushResult, ProjectDelta, Tracker

_EXPORTS = {
    "ChangesSince": "freshline.tracker.tracker",
    "FlushResult": "freshline.tracker.tracker",
    "ProjectDelta": "freshline.tracker.tracker",
    "Tracker": "freshline.tracker.tracker",
    "coalesce": "freshline.tracker.coalesce",
}

__all__ = ["ChangesSince", "FlushResult", "ProjectDelta", "Tracker", "coalesce"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'freshline.tracker' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
