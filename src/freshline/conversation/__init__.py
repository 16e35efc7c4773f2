"""Conversations in git: events as commits, per-turn trees, refresh, sync, publish.

`Conversations(workspace_root)` is the entry point; see DESIGN.md section 8.
"""

from __future__ import annotations

from freshline.conversation.conflicts import Conflict, ConflictKind
from freshline.conversation.conversations import Conversations
from freshline.conversation.events import Author, Event, Mode, Refresh, Root
from freshline.conversation.git import Git
from freshline.conversation.repository import repository_for
from freshline.conversation.trees import LiveDelta
from freshline.conversation.turns import PendingTurn, abandon_turn, commit_turn

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
