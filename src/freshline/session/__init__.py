"""Sessions: turns, cursors, holds, resume (DESIGN section 7).

Names are imported on first use: the hook imports this package on every prompt of another
agent, and decides whether it has anything to deliver before it needs the manager.
"""

from __future__ import annotations

from freshline.lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's start-up)
if TYPE_CHECKING:
    from freshline.session.manager import SessionManager
    from freshline.session.turn import PreparedTurn, Staged

_EXPORTS = {
    "PreparedTurn": "freshline.session.turn",
    "SessionManager": "freshline.session.manager",
    "Staged": "freshline.session.turn",
}

__all__ = ["PreparedTurn", "SessionManager", "Staged"]

__getattr__ = exports(__name__, _EXPORTS)
