"""A client's tool that read or wrote a file, for the read ledger (hooks' PostToolUse).

The hook learns after the fact which file a tool of its agent read or wrote; the file's
content right after the tool ran (as a git blob id) is what the agent saw or made, so it
goes into the session's read ledger: its own writes are then not announced back, and a
later change to a file it read is announced first. Only files the session's project may
show its agent count (`access.open_reached` with the workspace's rules, the file hashed
from what was opened): nothing outside the workspace, no secret, no internal or ignored
file.

The common call finds nothing outstanding and records with the tracker's store alone, no
session manager loaded (`quick_session`); a delivery still outstanding, or a session not
opened yet, needs the engine first (then `record_tool_use`).
"""

from __future__ import annotations

from pathlib import Path

from freshline.access import AccessDenied, open_reached
from freshline.beneath import Kind
from freshline.session.ledger import Ledger
from freshline.session.provenance import ABSENT
from freshline.session.rules import workspace_rules
from freshline.store import DeliveryState, LedgerKind, SessionRecord
from freshline.tracker import Tracker
from freshline.tracker.hashing import blob_id_fd


def quick_session(tracker: Tracker, external_id: str) -> SessionRecord | None:
    """The session bound to `external_id` when nothing of it is outstanding (None: the
    engine must settle first, or there is no such session yet)."""
    s = tracker.store.session_by_external(external_id)
    if s is None or tracker.store.deliveries_of(s.id, DeliveryState.OUTSTANDING):
        return None
    return s


def record_tool_use(
    tracker: Tracker, s: SessionRecord, cwd: Path, path: str, kind: LedgerKind
) -> bool:
    """Record that the session's agent read (or wrote) the file at `path` (absolute, or
    relative to the agent's `cwd`), as it is now (a write that left no file: deleted it).
    False when there was nothing to record: a file outside the workspace or the project's
    reach, or a read of no file any more."""
    config = tracker.config
    try:
        with open_reached(config.root, str(cwd / path), workspace_rules(config, s.project)) \
                as target:
            if target.kind is Kind.MISSING and kind is LedgerKind.WRITE:
                blob = ABSENT  # the tool deleted it (a patch's Delete File)
            elif target.kind is not Kind.FILE:
                return False
            else:
                blob = blob_id_fd(target.fd)
    except (AccessDenied, OSError):
        return False
    Ledger(tracker.store).record(s.id, target.rel, blob, kind)
    return True
