"""The terminal chat (`freshline chat`), built on textual."""

from __future__ import annotations

from freshline.interfaces.tui.app import ChatApp, open_session, run_chat

__all__ = ["ChatApp", "open_session", "run_chat"]
