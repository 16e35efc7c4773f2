"""The Claude Code hook's part in the read ledger: which tool ran on which file.

A `PostToolUse` hook (matcher `Read|Write|Edit|MultiEdit|NotebookEdit`) gets the tool's
name, its input (`file_path`, or `notebook_path` for NotebookEdit) and its response.
`Read` is a read; the others wrote the file. The hook records the file's content as it is
right after the tool ran (`hooks.record_tool_use`): a write is then recognised as
Claude's own on the next prompt and not announced back, and a later change to a file
Claude read is announced first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from freshline.errors import UsageError
from freshline.store import LedgerKind

# Claude Code's tools the ledger follows, and what each did to its file.
TOOLS = {
    "Read": LedgerKind.READ,
    "Write": LedgerKind.WRITE,
    "Edit": LedgerKind.WRITE,
    "MultiEdit": LedgerKind.WRITE,
    "NotebookEdit": LedgerKind.WRITE,
}
MATCHER = "|".join(TOOLS)  # the PostToolUse matcher for .claude/settings.json


@dataclass(frozen=True)
class ToolUse:
    """A tool Claude Code ran, and the file it named ("" when it named none)."""

    name: str
    path: str  # as given: absolute, or relative to the hook's cwd
    failed: bool = False  # its response reports an error (NotebookEdit's `error`)

    @property
    def kind(self) -> LedgerKind | None:
        """What the tool did to its file, for the ledger; None for a tool it ignores, one
        that named no file, or one that failed (it showed or wrote nothing)."""
        return TOOLS.get(self.name) if self.path and not self.failed else None


def tool_use(data: Mapping[str, Any]) -> ToolUse:
    """The tool of a PostToolUse payload; UsageError when it names none."""
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise UsageError("PostToolUse payload has no tool_name")
    given = data.get("tool_input")
    fields = given if isinstance(given, dict) else {}
    path = fields.get("file_path") or fields.get("notebook_path")
    response = data.get("tool_response")
    failed = isinstance(response, dict) and bool(response.get("error"))
    return ToolUse(name, path if isinstance(path, str) else "", failed)
