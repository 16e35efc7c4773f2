"""Codex CLI's transcript (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`), as
0.171 writes it.

JSON lines of `{"type": …, "payload": …}`; what went to the model is a `response_item`.
Each hook's additional context is a `message` of role `developer` whose metadata names
its kind `hooks.additional_context`; the model's answers are `assistant` messages (or
tool calls). Context over Codex's limit for hook output (2,500 tokens, counted as 4 bytes
each: between 9,017 and 10,017 bytes) is replaced by a message starting "Warning:
truncated output" that keeps the head and tail and drops the middle: a token found only
in such a message was not delivered, so those messages record hook output but never
count as given.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from freshline.session.evidence import TranscriptFormat, texts

HOOK_KIND = "hooks.additional_context"
TRUNCATED = "Warning: truncated output"
ANSWERS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


def _item(entry: dict[str, Any]) -> dict[str, Any]:
    """The model item a `response_item` line holds ({} for any other line)."""
    payload = entry.get("payload")
    if entry.get("type") == "response_item" and isinstance(payload, dict):
        return payload
    return {}


def _from_hook(item: dict[str, Any]) -> bool:
    """A `developer` message holding a hook's additional context."""
    if item.get("type") != "message" or item.get("role") != "developer":
        return False
    meta = item.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    return isinstance(kinds, list) and HOOK_KIND in kinds


class CodexTranscript(TranscriptFormat):
    """Codex CLI's JSON-lines rollout."""

    name = "Codex CLI"
    markers = (b'"assistant"', HOOK_KIND.encode(), b'_call"')

    def given(self, entry: dict[str, Any]) -> Iterable[str]:
        """Hook context the model was given whole (truncated output is not)."""
        item = _item(entry)
        if _from_hook(item):
            yield from (t for t in texts(item.get("content")) if not t.startswith(TRUNCATED))

    def answered(self, entry: dict[str, Any]) -> bool:
        """An assistant message or a tool call of the model's."""
        item = _item(entry)
        return item.get("role") == "assistant" or item.get("type") in ANSWERS

    def hook_output(self, entry: dict[str, Any]) -> bool:
        """A hook's developer message, truncated or not."""
        return _from_hook(_item(entry))


CODEX = CodexTranscript()
