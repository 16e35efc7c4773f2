"""Delivery budgets: how many characters a channel may carry, counted the way it delivers.

A channel does not always deliver the blocks as they are: the Claude Code hook prints them
inside a JSON object (with `\\uXXXX` for every character outside ASCII), an MCP tool
returns them inside a JSON text. A `Meter` counts what the channel really delivers for a
text: a fixed envelope plus the text as the channel encodes it. Blocks are rendered so
that `budget.meter.cost(text) <= budget.chars`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum


class Channel(StrEnum):
    """How blocks reach an agent; each has its own budget (`[delivery]` in freshline.toml)."""

    HOOK = "hook"  # a Claude Code hook's additional context
    MCP = "mcp"  # an MCP tool result
    CHAT = "chat"  # freshline's own chat
    SEND = "send"  # `freshline send` and the library's `send`
    ACP = "acp"  # the ACP proxy


class Encoding(StrEnum):
    """How a channel writes the text it carries."""

    PLAIN = "plain"  # as it is
    JSON = "json"  # as a JSON string, non-ASCII characters as they are
    JSON_ASCII = "json-ascii"  # as a JSON string, non-ASCII characters as \\uXXXX


@dataclass(frozen=True)
class Meter:
    """What a channel delivers for a text: `overhead` characters of envelope (a JSON
    object around it, with the text's quotes) plus the text in the channel's encoding."""

    overhead: int = 0
    encoding: Encoding = Encoding.PLAIN

    def size(self, text: str) -> int:
        """The characters `text` itself takes on this channel (no envelope). For these
        encodings it is additive: size(a + b) == size(a) + size(b)."""
        if self.encoding is Encoding.PLAIN:
            return len(text)
        return len(json.dumps(text, ensure_ascii=self.encoding is Encoding.JSON_ASCII)) - 2

    def cost(self, text: str) -> int:
        """The characters the channel delivers for `text`, envelope included."""
        return self.overhead + self.size(text)

    @classmethod
    def around(cls, envelope: str, encoding: Encoding) -> Meter:
        """The meter of a channel that delivers the text inside `envelope`: the envelope
        as delivered for an empty text (its `""` included)."""
        return cls(len(envelope), encoding)


@dataclass(frozen=True)
class Budget:
    """A delivery's budget: at most `chars` characters as `meter` counts them.

    `channel` and `session` say how the agent gets back what a roll-up folded (the
    channel's paging tool or command, named in the block's last line); `command` is how
    a command reaches this workspace from any directory (the absolute executable and
    `--workspace`, as the channel's own process was started), for channels whose agent
    has no freshline tool. `delivery` is the delivery's token, written in each block's
    opening tag (so it is counted too).
    """

    chars: int
    channel: Channel = Channel.SEND
    meter: Meter = field(default_factory=Meter)
    session: str | None = None
    delivery: str | None = None
    command: tuple[str, ...] = ()

    def tagged(self) -> list[tuple[str, object]]:
        """The attributes a block's opening tag gains from this budget (its token)."""
        return [("delivery", self.delivery)] if self.delivery else []

    def fits(self, text: str) -> bool:
        """Whether `text` fits this budget."""
        return self.meter.cost(text) <= self.chars
