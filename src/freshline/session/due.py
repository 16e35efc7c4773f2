"""Whether a session has anything to be told, decided from its record and the project's
epoch alone (no session manager, context blocks, conversation or materializer loaded).

The hook runs on every prompt of another agent, and most prompts come with nothing new:
this answers those cheaply. It is conservative: when it says "nothing", preparing a turn
would deliver no block; anything it cannot rule out counts as due.
"""

from __future__ import annotations

from freshline.store import SessionRecord, SessionState


def nothing_due(session: SessionRecord, epoch: int) -> bool:
    """True when an active session has been told everything up to the project's `epoch`,
    owes no manifest, and waits for no document to finish converting."""
    return (
        session.state is SessionState.ACTIVE
        and not session.needs_manifest
        and not session.pending_docs
        and session.cursor == epoch
    )
