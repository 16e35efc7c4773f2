"""Claude Code's transcript (`~/.claude/projects/<folder>/<session>.jsonl`), as 2.1 writes it.

What the model was given as hook context is an `attachment` entry of type
`hook_additional_context` (older versions inline it into the `user` message); the
model's answers are `assistant` entries. A hook's failure is a `hook_non_blocking_error`
attachment quoting its stdout: it records hook output (the client keeps it) but never
counts as given.

Context over Claude Code's 10,000-character limit is saved to a file and the model is
given a 2 KB preview inside `<persisted-output>…</persisted-output>` (the block's own
closing tag cut off): a token found only in such a preview was not delivered, so preview
sections are left out of what counts as given.

The Agent SDK inside `@zed-industries/claude-code-acp` (Claude Code 2.1.44) writes only a
`progress` entry when a hook runs and no attachment at all: such a transcript records no
hook output, and proves nothing either way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from freshline.session.evidence import TranscriptFormat, texts

CONTEXT_ATTACHMENT = "hook_additional_context"
_PREVIEW = re.compile(r"<persisted-output>.*?(?:</persisted-output>|\Z)", re.S)


class ClaudeCodeTranscript(TranscriptFormat):
    """Claude Code's JSON-lines transcript."""

    name = "Claude Code"
    markers = (b'"assistant"', b'"hook_')

    def given(self, entry: dict[str, Any]) -> Iterable[str]:
        """Hook context the model was given, and user messages, less previews."""
        kind, attachment = entry.get("type"), entry.get("attachment")
        if kind == "attachment" and isinstance(attachment, dict):
            if attachment.get("type") == CONTEXT_ATTACHMENT:
                yield from (_PREVIEW.sub("", t) for t in texts(attachment.get("content")))
        elif kind == "user":
            message = entry.get("message")
            if isinstance(message, dict):
                yield from (_PREVIEW.sub("", t) for t in texts(message.get("content")))

    def answered(self, entry: dict[str, Any]) -> bool:
        """An `assistant` entry."""
        return entry.get("type") == "assistant"

    def hook_output(self, entry: dict[str, Any]) -> bool:
        """An attachment of a hook's (`hook_additional_context`, `hook_…_error`, …)."""
        attachment = entry.get("attachment")
        return (entry.get("type") == "attachment" and isinstance(attachment, dict)
                and str(attachment.get("type", "")).startswith("hook_"))


CLAUDE_CODE = ClaudeCodeTranscript()
