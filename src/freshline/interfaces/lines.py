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
    """One line per tool call of a turn: the tool, its arguments and its result, clipped."""
    lines = []
    for event in events:
        name = event.extra.get("tool")
        if event.author.value == "tool" and name:
            args = json.dumps(event.extra.get("args", {}), ensure_ascii=False)
            lines.append(f"tool {name} {clip(args, width)} → {clip(event.content, width)}")
    return lines
