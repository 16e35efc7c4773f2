"""Sessions: turns, cursors, holds, resume (DESIGN section 7)."""

from __future__ import annotations

from freshline.session.manager import SessionManager
from freshline.session.turn import PreparedTurn, Staged

__all__ = ["PreparedTurn", "SessionManager", "Staged"]
