"""The agent runtime: model backends, the confined tools, and the tool loop of one turn.

    backend = get_backend("scripted:demo.json")
    toolbox = Toolbox(worktree, ToolMode.ISOLATED)
    result = run_turn(backend, [Message.user("fix the typo")], toolbox)
    for event in result.events: ...  # the caller records these as conversation commits

Layer 5: it knows nothing of sessions; the session and the interfaces drive it.
"""

from __future__ import annotations

from freshline.agent.backends import Backend, backend_names, get_backend, register_backend
from freshline.agent.errors import (
    BackendAuthError,
    BackendError,
    BackendMalformed,
    BackendRateLimited,
    BackendUnreachable,
)
from freshline.agent.loop import run_turn
from freshline.agent.messages import (
    AssistantReply,
    Author,
    Message,
    Role,
    TextCallback,
    ToolCall,
    ToolResult,
    ToolSpec,
    TurnEvent,
    TurnResult,
)
from freshline.agent.tools import DocumentLookup, Toolbox, ToolMode

__all__ = [
    "AssistantReply",
    "Author",
    "Backend",
    "BackendAuthError",
    "BackendError",
    "BackendMalformed",
    "BackendRateLimited",
    "BackendUnreachable",
    "DocumentLookup",
    "Message",
    "Role",
    "TextCallback",
    "ToolCall",
    "ToolMode",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "TurnEvent",
    "TurnResult",
    "backend_names",
    "get_backend",
    "register_backend",
    "run_turn",
]
