"""The `anthropic:MODEL` backend: the Anthropic messages API through the official SDK.

System messages become the `system` parameter; tool results travel as `tool_result` blocks
in a user message (consecutive same-role messages are merged, as the API expects). Streams
by default; the SDK's own retries are off: 429 and 5xx answers are retried by
`retry.with_retries` (bounded, with jitter), other failures surface at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anthropic

from freshline.agent.backends.base import (
    RetryingBackend,
    api_key_for,
    check_base_url,
    setting,
    translate_sdk_error,
)
from freshline.agent.backends.retry import RetryPolicy
from freshline.agent.errors import BackendMalformed
from freshline.agent.messages import (
    AssistantReply,
    Message,
    Role,
    TextCallback,
    ToolCall,
    ToolSpec,
)

DEFAULT_TIMEOUT = 120.0
KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role is Role.TOOL:
        return [{
            "type": "tool_result", "tool_use_id": message.tool_call_id,
            "content": message.content, "is_error": message.is_error,
        }]
    # the API refuses empty text blocks, so a tool-calls-only reply carries none
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": message.content}] if message.content else []
    )
    blocks += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    ]
    return blocks


def wire_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the alternating user/assistant messages of a history."""
    system = "\n\n".join(m.content for m in messages if m.role is Role.SYSTEM)
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return system, wire


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    """One tool definition."""
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


class AnthropicBackend(RetryingBackend):
    """Messages with tools, streamed."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        retry: RetryPolicy | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.base_url = check_base_url("anthropic", setting(base_url, "ANTHROPIC_BASE_URL"))
        self.retry = retry or RetryPolicy()
        key = api_key_for("anthropic", setting(api_key, KEY_ENV),
                          "ANTHROPIC_API_KEY", self.base_url)
        self.stream = stream
        self.max_tokens = max_tokens
        self.client = anthropic.Anthropic(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self.where = str(self.client.base_url).rstrip("/")

    def attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_text: TextCallback | None
    ) -> AssistantReply:
        """Send the history and tools once; return the model's text and tool calls."""
        system, wire = wire_messages(messages)
        request: dict[str, Any] = {
            "model": self.model, "max_tokens": self.max_tokens, "messages": wire,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [wire_tool(spec) for spec in tools]
        try:
            if not self.stream:
                reply = self._reply(self.client.messages.create(**request))
                if on_text is not None and reply.text:
                    on_text(reply.text)
                return reply
            with self.client.messages.stream(**request) as events:
                complete = False
                for event in events:
                    if event.type == "text" and on_text is not None:
                        on_text(event.text)
                    complete = complete or event.type == "message_stop"
                if not complete:
                    raise BackendMalformed(f"anthropic: malformed answer from {self.where}: "
                                           "the stream ended before the message was complete")
                return self._reply(events.get_final_message())
        except (anthropic.AnthropicError, ValueError) as exc:
            raise translate_sdk_error(exc, anthropic, "anthropic", self.where, KEY_ENV) from exc

    def _reply(self, message: Any) -> AssistantReply:
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            raise BackendMalformed(f"anthropic: malformed answer from {self.where}: no content")
        text = "".join(block.text for block in content if block.type == "text")
        calls = []
        for block in content:
            if block.type != "tool_use":
                continue
            if not isinstance(block.input, dict):
                raise BackendMalformed(f"anthropic: tool {block.name!r} input is not an object")
            calls.append(ToolCall(block.id, block.name, dict(block.input)))
        return AssistantReply(text, tuple(calls))

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()
