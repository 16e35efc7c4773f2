"""The chat's input: a multi-line text area where Enter sends.

Shift+Enter or Ctrl+J start a new line and a paste keeps all its lines; Up on the first
line and Down on the last walk the history; Tab completes a slash command or a workspace
path (the choices are announced when several fit).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from freshline.interfaces.tui.commands import Command
from freshline.interfaces.tui.editing import (
    Completion,
    History,
    complete_command,
    complete_path,
    last_word,
)
from freshline.paths import is_internal

NEWLINE_KEYS = frozenset({"shift+enter", "ctrl+j"})


class PromptArea(TextArea):
    """Where the human types; posts `Submitted` on Enter and `Completed` on a Tab with
    several choices."""

    @dataclass
    class Submitted(Message):
        """Enter was pressed: the whole text, as typed."""

        prompt: PromptArea
        value: str

    @dataclass
    class Completed(Message):
        """Tab found several choices (the common part was inserted)."""

        options: tuple[str, ...]

    def __init__(self, root: Path, history: History, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
                         **kwargs)  # type: ignore[arg-type]
        self.root = root
        self.sent = history

    async def _on_key(self, event: events.Key) -> None:
        handled = True
        if event.key == "enter":
            self.post_message(self.Submitted(self, self.text))
        elif event.key in NEWLINE_KEYS:
            self.insert("\n")
        elif event.key == "up" and self.cursor_location[0] == 0:
            self._recall(self.sent.back(self.text))
        elif event.key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            self._recall(self.sent.forward())
        elif event.key == "tab":
            self._complete()
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
        else:
            await super()._on_key(event)

    def _recall(self, entry: str | None) -> None:
        if entry is not None:
            self.load_text(entry)
            self.move_cursor(self.document.end)

    def _complete(self) -> None:
        row, column = self.cursor_location
        before = self.document[row][:column]
        word = last_word(before)
        if not word:
            return
        found: Completion | None
        if word.startswith("/") and before == word and row == 0:
            found = complete_command(word, (c.value for c in Command))
        else:
            found = complete_path(word, self._listing)
        if found is None:
            return
        self.replace(found.text, (row, column - len(word)), (row, column))
        if found.options:
            self.post_message(self.Completed(found.options))

    def _listing(self, folder: str) -> list[tuple[str, bool]]:
        """A workspace folder's entries that may be named to the agent (no internal ones)."""
        with os.scandir(self.root / folder) as entries:
            return [(e.name, e.is_dir()) for e in entries
                    if not is_internal(f"{folder}/{e.name}" if folder else e.name)]
