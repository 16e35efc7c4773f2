"""Library records as one line each, for the CLI, the chat and the demo alike."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING

from freshline.interfaces.text import clip

if TYPE_CHECKING:
    from freshline.agent.messages import TurnEvent
    from freshline.conversation import Event


def event_line(event: Event, width: int = 60) -> str:
    """One transcript event: commit, author, tool or merge, the content on one line, clipped."""
    tag = event.tool or ("merge" if event.merged else "")
    commit = (event.commit or "")[:10]
    return f"{commit} {event.author.value:<9} {tag:<6} {clip(event.content, width)}".rstrip()


def tool_lines(events: Iterable[TurnEvent], width: int = 60) -> list[str]:
    """One line per tool call of a turn (see `tool_line`)."""
    return [line for line in (tool_line(e, width) for e in events) if line is not None]


def tool_line(event: TurnEvent, width: int = 60) -> str | None:
    """A tool call on one line: the tool, its arguments and its result (a refusal says
    why), clipped; None for an event that is not a tool call."""
    name = event.extra.get("tool")
    if event.author.value != "tool" or not name:
        return None
    args = json.dumps(event.extra.get("args", {}), ensure_ascii=False)
    return f"tool {name} {clip(args, width)} → {clip(event.content, width)}"
