"""Conversations in git: events as commits, per-turn trees, refresh, sync, publish.

`Conversations(workspace_root)` is the entry point; see DESIGN.md section 8.

Names are imported on first use: a session that records no conversation (a hook's, an MCP
client's) never needs git, and the session layer imports this package for every turn.
"""

from __future__ import annotations

from freshline.lazy import exports

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the hook's start-up)
if TYPE_CHECKING:
    from freshline.conversation.conflicts import Conflict, ConflictKind
    from freshline.conversation.conversations import Conversations
    from freshline.conversation.events import Author, Event, Mode, Refresh, Root
    from freshline.conversation.git import Git
    from freshline.conversation.repository import repository_for
    from freshline.conversation.trees import LiveDelta
    from freshline.conversation.turns import PendingTurn, abandon_turn, commit_turn

_EXPORTS = {
    "Author": "freshline.conversation.events",
    "Conflict": "freshline.conversation.conflicts",
    "ConflictKind": "freshline.conversation.conflicts",
    "Conversations": "freshline.conversation.conversations",
    "Event": "freshline.conversation.events",
    "Git": "freshline.conversation.git",
    "LiveDelta": "freshline.conversation.trees",
    "Mode": "freshline.conversation.events",
    "PendingTurn": "freshline.conversation.turns",
    "Refresh": "freshline.conversation.events",
    "Root": "freshline.conversation.events",
    "abandon_turn": "freshline.conversation.turns",
    "commit_turn": "freshline.conversation.turns",
    "repository_for": "freshline.conversation.repository",
}

__all__ = [
    "Author",
    "Conflict",
    "ConflictKind",
    "Conversations",
    "Event",
    "Git",
    "LiveDelta",
    "Mode",
    "PendingTurn",
    "Refresh",
    "Root",
    "abandon_turn",
    "commit_turn",
    "repository_for",
]

__getattr__ = exports(__name__, _EXPORTS)
