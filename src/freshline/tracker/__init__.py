"""The tracker: scans, renames, coalescing, per-project epochs and change log, watching.

Exports load on first use, so that a conversion worker importing `tracker.hashing` does
not pay for the store and the scanner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.lazy import exports

if TYPE_CHECKING:  # what the lazy exports below resolve to, for type checkers
    from freshline.tracker.changelog import ChangesSince, ProjectDelta
    from freshline.tracker.coalesce import coalesce
    from freshline.tracker.tracker import FlushResult, Tracker

_EXPORTS = {
    "ChangesSince": "freshline.tracker.changelog",
    "FlushResult": "freshline.tracker.tracker",
    "ProjectDelta": "freshline.tracker.changelog",
    "Tracker": "freshline.tracker.tracker",
    "coalesce": "freshline.tracker.coalesce",
}

__all__ = ["ChangesSince", "FlushResult", "ProjectDelta", "Tracker", "coalesce"]


__getattr__ = exports(__name__, _EXPORTS)
