"""How `freshline send` prints a turn as it happens, as the chat shows it: the model's
text as it streams, each reply ending its own line, and one dim line per tool call
(refused ones too) and per note from freshline (the tool-loop limit)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from freshline.interfaces.cli.output import dim
from freshline.interfaces.lines import tool_line

if TYPE_CHECKING:
    from freshline.agent.messages import TurnEvent

INDENT = "  "  # tool calls and notes stand under the text that made them


class TurnPrinter:
    """Give `text` to the backend's `on_text` and `event` to the send's `on_event`."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self._streamed = ""  # text of the reply under way, printed as it came

    def text(self, chunk: str) -> None:
        """A chunk of the model's text: printed at once."""
        self._write(chunk)
        self._streamed += chunk

    def event(self, e: TurnEvent) -> None:
        """A reply ended (its line ends; printed whole if nothing streamed), or a tool
        call or a note happened (one dim line)."""
        kind = e.author.value
        if kind == "assistant":
            if not self._streamed and e.content:
                self.text(e.content)
            self._end_line()
            self._streamed = ""
            return
        line = tool_line(e) if kind == "tool" else e.content
        if line:
            self._write(dim(INDENT + line, self.out) + "\n")

    def _end_line(self) -> None:
        if self._streamed and not self._streamed.endswith("\n"):
            self._write("\n")

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
