"""Replaying a conversation to a model: its earlier turns as messages, kept lean.

The model APIs keep no state, so every request carries the conversation so far: each user
message as the model received it (context blocks included), each reply of the assistant
with the tool calls it made, and their results. A long conversation reads the same files
again and again; a `read` whose result a later read of the same path superseded (the later
one shows at least the same lines) is replayed as one line, "[superseded by the read at
turn 5]", so the history carries each file's content once: at its latest read.

Pure: a function of the recorded events (`freshline.conversation.Event`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from freshline.agent.messages import Message, Role, ToolCall
from freshline.conversation import Author, Event

READ = "read"


@dataclass(frozen=True)
class _Span:
    """The lines a read showed: from `start`, to `end` (None: to the end of the file)."""

    path: str  # absolute, normalized
    start: int
    end: int | None

    def covers(self, other: _Span) -> bool:
        if self.path != other.path or self.start > other.start:
            return False
        return self.end is None or (other.end is not None and other.end <= self.end)


def _line(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _span(event: Event, root: str) -> _Span | None:
    """What a read event showed, or None for any other event."""
    args = event.args if isinstance(event.args, dict) else {}
    path = args.get("path")
    if event.author is not Author.TOOL or event.tool != READ or not isinstance(path, str):
        return None
    full = posixpath.normpath(posixpath.join(root, path))  # an absolute path stays itself
    return _Span(full, _line(args.get("start")) or 1, _line(args.get("end")))


def superseded(events: Sequence[Event], root: str) -> dict[int, int]:
    """For each read event (by index) that a later read covers: the turn of the latest
    read covering it. Turns count the user events, from 1."""
    reads: list[tuple[int, int, _Span]] = []  # (index, turn, span), in order
    turn = 0
    for index, event in enumerate(events):
        if event.author is Author.USER:
            turn += 1
        span = _span(event, root)
        if span is not None:
            reads.append((index, turn, span))
    out: dict[int, int] = {}
    for i, (index, _, span) in enumerate(reads):
        later = [t for _, t, s in reads[i + 1 :] if s.covers(span)]
        if later:
            out[index] = later[-1]
    return out


def replay(events: Sequence[Event], root: str) -> list[Message]:
    """Earlier turns as the model saw them, oldest first: user messages with their blocks,
    assistant replies with their tool calls, the tools' results (superseded reads as one
    line). `root` is the directory relative tool paths were given against."""
    shortened = superseded(events, root)
    out: list[Message] = []
    reply: Event | None = None
    results: list[tuple[int, Event]] = []

    def flush() -> None:
        nonlocal reply
        calls = [ToolCall(f"replay_{len(out)}_{k}", e.tool or "",
                          e.args if isinstance(e.args, dict) else {})
                 for k, (_, e) in enumerate(results)]
        text = reply.content if reply is not None else ""
        if text or calls:
            out.append(Message(Role.ASSISTANT, text, tool_calls=tuple(calls)))
        for call, (index, e) in zip(calls, results, strict=True):
            turn = shortened.get(index)
            content = e.content if turn is None else f"[superseded by the read at turn {turn}]"
            out.append(Message(Role.TOOL, content, tool_call_id=call.id))
        reply = None
        results.clear()

    for index, event in enumerate(events):
        if event.author is Author.TOOL:
            results.append((index, event))
            continue
        flush()
        if event.author is Author.USER:
            out.append(Message(Role.USER, event.wire or event.content))
        elif event.author is Author.ASSISTANT:
            reply = event
    flush()
    return out
