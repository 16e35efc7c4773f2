"""The tracker: scans, renames, coalescing, per-project epochs and change log, watching."""

from __future__ import annotations

from freshline.tracker.coalesce import coalesce
from freshline.tracker.tracker import ChangesSince, FlushResult, ProjectDelta, Tracker

__all__ = ["ChangesSince", "FlushResult", "ProjectDelta", "Tracker", "coalesce"]
