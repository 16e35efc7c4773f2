"""A loopback stand-in for the Anthropic Messages API, as the Claude Code CLI calls it.

Claude Code posts `/v1/messages?beta=true` with `stream: true` and reads server-sent
events; it also counts tokens (`/v1/messages/count_tokens`) and, for `/compact`, asks for
a summary. The stub answers every request from a `Responder` (the request body in, a
`FakeReply` out: text or tool calls) and streams it as the API does: it is the fake
model server of `tests/fake_model_servers.py` with a responder that also writes the
summaries `/compact` asks for.

    with AnthropicStub(responder) as stub:
        env = {"ANTHROPIC_BASE_URL": stub.url, ...}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fake_model_servers import ANTHROPIC_PATH, FakeModelServer, FakeReply, Responder

SUMMARY_ASK = "create a detailed summary of the conversation"
SUMMARY = ("<analysis>The user greeted me.</analysis>\n"
           "<summary>The user said hello; I answered.</summary>")


def last_user_text(body: dict[str, Any]) -> str:
    """Every text of the request's last message (the turn being asked), joined."""
    return message_text(body["messages"][-1])


def message_text(message: dict[str, Any]) -> str:
    """The texts of one message, tool results included, joined by newlines."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content or []:
        if part.get("type") == "text":
            parts.append(part["text"])
        elif part.get("type") == "tool_result":
            inner = part.get("content")
            parts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(parts)


def all_text(body: dict[str, Any]) -> str:
    """Every text of every message of a request."""
    return "\n".join(message_text(m) for m in body["messages"])


def is_summary_request(body: dict[str, Any]) -> bool:
    """Whether this is Claude Code asking for a summary (`/compact`)."""
    return SUMMARY_ASK in last_user_text(body)


def answered_tool(body: dict[str, Any]) -> bool:
    """Whether the request carries the result of a tool call (the turn's second leg)."""
    content = body["messages"][-1].get("content")
    return isinstance(content, list) and any(p.get("type") == "tool_result" for p in content)


@dataclass
class Seen:
    """One conversation request the stub answered."""

    body: dict[str, Any]

    @property
    def last(self) -> str:
        """The text of its last message."""
        return last_user_text(self.body)

    @property
    def text(self) -> str:
        """The text of all its messages."""
        return all_text(self.body)


def plain(_body: dict[str, Any]) -> FakeReply:
    """The default responder: a short text answer."""
    return FakeReply(text="Noted.")


class AnthropicStub(FakeModelServer):
    """The stub server; `seen` lists the conversation requests, oldest first (not the
    token counts, not the summaries `/compact` asks for)."""

    def __init__(self, responder: Responder = plain) -> None:
        def answer(body: dict[str, Any]) -> FakeReply:
            return FakeReply(text=SUMMARY) if is_summary_request(body) else responder(body)

        super().__init__(responder=answer)

    @property
    def seen(self) -> list[Seen]:
        """The conversation requests so far."""
        return [Seen(r.body) for r in list(self.requests)
                if r.path == ANTHROPIC_PATH and not is_summary_request(r.body)]

    def since(self, count: int) -> list[Seen]:
        """The conversation requests after the first `count`."""
        return self.seen[count:]

    def __enter__(self) -> AnthropicStub:
        super().__enter__()
        return self
