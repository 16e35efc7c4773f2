"""The chat's widgets: transcript lines, the dim line of what the model was told, the
status bar, and the header's words (textual's `Static`s; the app arranges them)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.text import Text
from textual import events
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from freshline.interfaces.tui.status import Status


class Entry(Static):
    """One line or block of the transcript."""


class Told(Static):
    """The dim line under a message: what the model was told; a click shows the blocks."""

    def __init__(self, line: str, blocks: str) -> None:
        super().__init__(Text(line, "dim"), classes="told")
        self.line = line
        self.blocks = blocks
        self.expanded = False

    def on_click(self) -> None:
        """Show or hide the blocks the model received with the message."""
        self.toggle()

    def toggle(self) -> None:
        """Expand to the blocks, or fold back to the line."""
        self.expanded = not self.expanded and bool(self.blocks)
        text = Text(self.line, "dim")
        if self.expanded:
            text.append("\n" + self.blocks, "dim italic")
        self.update(text)


class Transcript(VerticalScroll, can_focus=False):
    """The conversation so far; never takes the focus from the input (a click on a line
    expands it and typing goes on)."""


class StatusBar(Static):
    """The status bar: refitted to its width whenever the status or the size changes."""

    status: reactive[Status | None] = reactive(None, layout=True)

    def watch_status(self) -> None:
        self._refit()

    def on_resize(self, _event: events.Resize) -> None:
        """Fit the bar again for the new width."""
        self._refit()

    def _refit(self) -> None:
        if self.status is not None:
            width = self.size.width - 2 if self.size.width else 78  # padding 0 1
            self.update(self.status.line(max(width, 20)))


def plain(widget: Static) -> str:
    """A widget's content as plain text (panels rendered at a fixed width)."""
    import io

    from rich.console import Console

    out = io.StringIO()
    Console(width=100, color_system=None, file=out).print(widget.content)
    return out.getvalue().rstrip()


def header_line(session: str, project: str, model: str, root: Path) -> str:
    """The header: session, project, model and workspace (home shortened to ~)."""
    home = str(Path.home())
    where = str(root)
    if where == home or where.startswith(home + os.sep):
        where = "~" + where[len(home):]
    return f"freshline · session {session} · project {project} · model {model} · {where}"
