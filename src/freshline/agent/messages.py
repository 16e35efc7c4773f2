"""The records a turn is made of: messages to the model, its replies, tool calls and results,
and the events a turn leaves behind for the conversation to record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TextCallback = Callable[[str], None]
"""Receives each chunk of assistant text as it streams in."""


class Role(StrEnum):
    """Who a message to the model is from."""

    SYSTEM = "system"  # instructions ahead of the conversation
    USER = "user"  # the human (with the wire-only context blocks)
    ASSISTANT = "assistant"  # the model: text and tool calls
    TOOL = "tool"  # the result of one tool call, fed back to the model


class Author(StrEnum):
    """Who a turn event is attributed to in the conversation."""

    ASSISTANT = "assistant"  # text the model said (with the tool calls it made)
    TOOL = "tool"  # one tool call and its result
    SYSTEM = "system"  # a note from freshline itself, such as the tool-loop limit


@dataclass(frozen=True)
class ToolCall:
    """A tool the model asked to run."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The call as plain JSON data."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ToolResult:
    """What running a tool call gave back."""

    call_id: str
    name: str
    content: str
    is_error: bool = False
    changed: tuple[str, ...] = ()  # workspace-relative paths the tool wrote
    mode_changes: dict[str, str] = field(default_factory=dict)  # path -> "100755"/"100644"


@dataclass(frozen=True)
class Message:
    """One message sent to the model."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()  # assistant messages only
    tool_call_id: str | None = None  # tool messages only
    is_error: bool = False  # tool messages only: the tool failed

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(Role.SYSTEM, content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(Role.USER, content)

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        """The message that feeds a tool result back to the model."""
        return cls(Role.TOOL, result.content, tool_call_id=result.call_id, is_error=result.is_error)


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class AssistantReply:
    """One answer of the model: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    def as_message(self) -> Message:
        """The reply as it goes back into the history."""
        return Message(Role.ASSISTANT, self.text, tool_calls=self.tool_calls)


@dataclass(frozen=True)
class TurnEvent:
    """One thing that happened in a turn, to be recorded as a conversation commit."""

    author: Author
    content: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnResult:
    """A completed turn: the final text, the events to record, the messages to keep."""

    text: str
    events: list[TurnEvent]
    messages: list[Message]  # assistant and tool messages this turn added to the history
    hit_limit: bool = False  # the tool loop stopped at its iteration limit
