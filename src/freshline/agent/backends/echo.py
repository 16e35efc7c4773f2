"""The `echo` backend: offline and deterministic, it acknowledges what it received.

It names the context blocks the last user message carried and quotes the human's words, so
a person (or a test) can see exactly what reached the model. It never calls tools.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from freshline.agent.backends.base import Backend
from freshline.agent.messages import AssistantReply, Message, Role, TextCallback, ToolSpec

_BLOCK = re.compile(r"<(project_context(?:_updates)?)\b[^>]*>.*?</\1>", re.DOTALL)
_QUOTE_LIMIT = 80


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _QUOTE_LIMIT else flat[: _QUOTE_LIMIT - 1] + "…"


def acknowledge(message: str) -> str:
    """The echo backend's reply to one user message."""
    blocks = [match.group(1) for match in _BLOCK.finditer(message)]
    words = _BLOCK.sub("", message)
    return (
        f"echo: received {len(message)} chars; blocks: {', '.join(blocks) or 'none'}; "
        f"message: '{_quote(words)}'"
    )


class EchoBackend(Backend):
    """Replies with an acknowledgement of the last user message."""

    name = "echo"

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        """Acknowledge the latest user message (or say there is none)."""
        users = [message for message in messages if message.role is Role.USER]
        text = acknowledge(users[-1].content) if users else "echo: no message received"
        if on_text is not None:
            on_text(text)
        return AssistantReply(text)
