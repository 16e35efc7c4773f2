"""The terminal chat (`freshline chat`), built on textual (imported on first use: the CLI
and the demo use the chat's plain modules without loading textual)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from freshline.lazy import exports

if TYPE_CHECKING:
    from freshline.interfaces.tui.app import ChatApp
    from freshline.interfaces.tui.opening import open_session, run_chat

__all__ = ["ChatApp", "open_session", "run_chat"]

_EXPORTS = {
    "ChatApp": "freshline.interfaces.tui.app",
    "open_session": "freshline.interfaces.tui.opening",
    "run_chat": "freshline.interfaces.tui.opening",
}

__getattr__ = exports(__name__, _EXPORTS)
