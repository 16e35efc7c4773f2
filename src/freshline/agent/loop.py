"""The tool loop of one turn: ask the model, run the tools it calls, feed the results back,
until it answers without tools or the iteration limit is reached.

The loop takes plain inputs (a backend, the history, a toolbox) and returns a TurnResult;
recording events and advancing cursors belong to the caller, which does so only when
`run_turn` returned. A backend error propagates unchanged, so a failed turn leaves nothing
half-recorded. (Files a tool already wrote in an isolated worktree stay written; the caller
decides whether to keep them.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from freshline.agent.backends.base import Backend
from freshline.agent.messages import (
    AssistantReply,
    Author,
    Message,
    TextCallback,
    ToolCall,
    ToolResult,
    TurnEvent,
    TurnResult,
)
from freshline.agent.tools import Toolbox
from freshline.errors import UsageError

DEFAULT_MAX_ITERATIONS = 8

EventCallback = Callable[[TurnEvent], None]
"""Receives each event as it happens, for display only: a turn that later fails is not
recorded, whatever was shown."""


def assistant_event(reply: AssistantReply) -> TurnEvent:
    """The event for one model reply: its text, and the tool calls it made."""
    calls = [call.as_dict() for call in reply.tool_calls]
    return TurnEvent(Author.ASSISTANT, reply.text, {"tool_calls": calls} if calls else {})


def tool_event(call: ToolCall, result: ToolResult) -> TurnEvent:
    """The event for one tool call: the result as content; in extra the call as `tool`,
    `args` and `call_id` (the conversation Event's field names), `is_error`, and when files
    changed, `changed` and `mode_changes` (paths)."""
    extra: dict[str, object] = {
        "tool": call.name, "args": call.arguments, "call_id": call.id,
        "is_error": result.is_error,
    }
    if result.changed:
        extra["changed"] = list(result.changed)
    if result.mode_changes:
        extra["mode_changes"] = sorted(result.mode_changes)
    return TurnEvent(Author.TOOL, result.content, extra)


def _no_tools(call: ToolCall) -> ToolResult:
    return ToolResult(call.id, call.name, f"{call.name}: no tools are available", is_error=True)


def run_turn(
    backend: Backend,
    messages: Sequence[Message],
    toolbox: Toolbox | None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    on_text: TextCallback | None = None,
    on_event: EventCallback | None = None,
) -> TurnResult:
    """Run one turn: `messages` is the history ending with the new user message.

    Returns the final text, the events to record, and the messages to append to the history.
    Raises whatever BackendError the backend raises; nothing is returned half-done.
    """
    if max_iterations < 1:
        raise UsageError("the tool loop needs at least one iteration")
    specs = toolbox.specs() if toolbox is not None else []
    run = toolbox.run if toolbox is not None else _no_tools
    added: list[Message] = []
    events: list[TurnEvent] = []

    def record(event: TurnEvent) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    for _ in range(max_iterations):
        reply = backend.complete([*messages, *added], specs, on_text)
        added.append(reply.as_message())
        record(assistant_event(reply))
        if not reply.tool_calls:
            return TurnResult(reply.text, events, added)
        for call in reply.tool_calls:
            result = run(call)
            added.append(Message.tool(result))
            record(tool_event(call, result))
    note = (f"[stopped after {max_iterations} model calls: the tool-loop limit; "
            "the last tool results were not answered]")
    record(TurnEvent(Author.SYSTEM, note, {"limit": max_iterations}))
    return TurnResult(note, events, added, hit_limit=True)
