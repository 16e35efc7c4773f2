"""The `openai:MODEL` backend: any OpenAI-compatible chat-completions server (OpenAI, Ollama,
vLLM, llama.cpp) through the official SDK.

Streams by default, assembling tool-call fragments by index. The SDK's own retries are
off: 429 and 5xx answers are retried by `retry.with_retries` (bounded, with jitter), other
failures surface at once as a BackendError.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import openai

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
KEY_ENV = "OPENAI_API_KEY"


def wire_message(message: Message) -> dict[str, Any]:
    """One message in the chat-completions shape."""
    if message.role is Role.TOOL:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    wire: dict[str, Any] = {"role": message.role.value, "content": message.content}
    if message.tool_calls:
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    return wire


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    """One tool as a function definition."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def parse_arguments(raw: str | None, name: str) -> dict[str, Any]:
    """A tool call's JSON arguments; an empty string means none."""
    try:
        value = json.loads(raw) if raw and raw.strip() else {}
    except ValueError as exc:
        raise BackendMalformed(f"openai: tool call {name!r} has invalid JSON arguments") from exc
    if not isinstance(value, dict):
        raise BackendMalformed(f"openai: tool call {name!r} arguments are not an object")
    return value


class OpenAIBackend(RetryingBackend):
    """Chat completions with tools, streamed."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        stream: bool = True,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = check_base_url("openai", setting(base_url, "OPENAI_BASE_URL"))
        self.retry = retry or RetryPolicy()
        key = api_key_for("openai", setting(api_key, KEY_ENV), "OPENAI_API_KEY",
                          self.base_url)
        self.stream = stream
        self.client = openai.OpenAI(
            api_key=key, base_url=self.base_url, timeout=timeout, max_retries=0
        )
        self.where = str(self.client.base_url).rstrip("/")

    def attempt(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], on_text: TextCallback | None
    ) -> AssistantReply:
        """Send the history and tools once; return the model's text and tool calls."""
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [wire_message(message) for message in messages],
        }
        if tools:
            request["tools"] = [wire_tool(spec) for spec in tools]
        try:
            if not self.stream:
                return self._reply(self.client.chat.completions.create(**request), on_text)
            chunks = self.client.chat.completions.create(**request, stream=True)
            with chunks:
                return _assemble(chunks, on_text, self.where)
        except (openai.OpenAIError, ValueError) as exc:
            raise translate_sdk_error(exc, openai, "openai", self.where, KEY_ENV) from exc

    def _reply(self, completion: Any, on_text: TextCallback | None) -> AssistantReply:
        if not getattr(completion, "choices", None):
            raise BackendMalformed(f"openai: malformed answer from {self.where}: no choices")
        message = completion.choices[0].message
        text = message.content or ""
        calls = tuple(
            ToolCall(call.id, call.function.name,
                     parse_arguments(call.function.arguments, call.function.name))
            for call in message.tool_calls or ()
        )
        if on_text is not None and text:
            on_text(text)
        return AssistantReply(text, calls)

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()


def _assemble(chunks: Iterable[Any], on_text: TextCallback | None, where: str) -> AssistantReply:
    """Join streamed deltas: text in order, tool calls by their index."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finished = False
    for chunk in chunks:
        for choice in chunk.choices or ():
            finished = finished or choice.finish_reason is not None
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
                if on_text is not None:
                    on_text(delta.content)
            for part in delta.tool_calls or ():
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] = call["name"] or part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
    if not finished:
        raise BackendMalformed(f"openai: malformed answer from {where}: "
                               "the stream ended before the answer was complete")
    tool_calls = tuple(
        ToolCall(call["id"] or f"call_{index}", call["name"],
                 parse_arguments(call["arguments"], call["name"]))
        for index, call in sorted(calls.items())
    )
    return AssistantReply("".join(text), tool_calls)
