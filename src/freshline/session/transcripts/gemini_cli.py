"""Gemini CLI's transcript (`~/.gemini/tmp/<project>/chats/session-….jsonl`), as 0.61 writes it.

JSON lines: a header, `$set` records (the first sets the whole `messages` list, later ones
update fields), and one line per message: `{"type": "user", "content": [parts…]}` for
what went to the model with the prompt, `{"type": "gemini", …}` for the model's answers.
Hook context reaches the model inside the user message's parts, wrapped in
`<hook_context>…</hook_context>` (BeforeAgent's as a part of its own after the prompt,
SessionStart's glued to the prompt's front); `displayContent` is what the terminal showed
and proves nothing. No size limit was seen: 200,000 characters arrived whole. The `<` and
`>` inside hook context are recorded (and sent) as `&lt;` and `&gt;`; the tokens freshline
looks for are hex digits, unchanged.

A hook that timed out leaves nothing in the transcript; a transcript whose user messages
never carry `<hook_context>` records no hook output and proves nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from freshline.session.evidence import TranscriptFormat, texts

HOOK_CONTEXT = "<hook_context>"


def _messages(entry: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """The messages a line holds: itself, or those a `$set` record sets."""
    changes = entry.get("$set")
    if isinstance(changes, dict):
        listed = changes.get("messages")
        if isinstance(listed, list):
            yield from (m for m in listed if isinstance(m, dict))
    else:
        yield entry


def _user_texts(entry: dict[str, Any]) -> Iterable[str]:
    for message in _messages(entry):
        if message.get("type") == "user":
            yield from texts(message.get("content"))


class GeminiCliTranscript(TranscriptFormat):
    """Gemini CLI's JSON-lines chat record."""

    name = "Gemini CLI"
    markers = (b'"gemini"', HOOK_CONTEXT.encode())

    def given(self, entry: dict[str, Any]) -> Iterable[str]:
        """What user messages sent the model, hook context included."""
        return _user_texts(entry)

    def answered(self, entry: dict[str, Any]) -> bool:
        """A `gemini` message (the model's answer)."""
        return any(m.get("type") == "gemini" for m in _messages(entry))

    def hook_output(self, entry: dict[str, Any]) -> bool:
        """A user message carrying a `<hook_context>` part."""
        return any(HOOK_CONTEXT in t for t in _user_texts(entry))


GEMINI_CLI = GeminiCliTranscript()
