"""The chat's picker of the last turns, which `/rewind` without a turn opens."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from freshline.interfaces.tui.commands import Invocation


class TurnPicker(OptionList):
    """The last turns to rewind to, the latest selected: Enter picks, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, turns: list[tuple[str, str]], invocation: Invocation) -> None:
        super().__init__(*(Option(f"turn {n}  {text}", id=n) for n, text in turns),
                         id="picker")
        self.invocation = invocation

    def on_mount(self) -> None:
        self.highlighted = self.option_count - 1

    def action_cancel(self) -> None:
        """Close the picker; nothing is rewound."""
        self.remove()
        self.app.query_one("#prompt").focus()
