"""Gemini CLI's hooks (0.61), translated for the engine.

Gemini CLI runs project hooks from `.gemini/settings.json` (on by default; it warns that
project hooks were found) with Claude Code's payload and output shapes (`payload.py`),
under its own event names: `BeforeAgent` after the prompt, before planning (its context
reaches the model as a `<hook_context>` part after the prompt), `AfterTool` (appended to
the tool's result), `SessionEnd`. Timeouts are in milliseconds. Its project folder is
`$GEMINI_PROJECT_DIR`; its transcript is read with
`session.transcripts.gemini_cli.GEMINI_CLI`. No limit on hook output was seen (200,000
characters reached the model whole), so the `hook` budget alone bounds it. Gemini CLI
gives the model `<` and `>` of hook context as `&lt;` and `&gt;` (the blocks' tags arrive
escaped, their delivery tokens intact).

`SessionStart` is not answered: when a SessionStart hook returns context, `--resume`
drops every earlier user prompt from the history Gemini CLI sends the model (0.61; the
history comes back whole without it). The manifest goes out with the first `BeforeAgent`
instead, which also tells a resumed session what changed while it was away.

The read ledger follows `read_file` (a read), `write_file` and `replace` (writes), by
`file_path` (`absolute_path` in older versions), as AfterTool reports them.
`run_shell_command` names no file: what changed in the project between its BeforeTool and
its AfterTool is its write (Gemini gives a tool call no id: the two are tied by the tool's
name and input). `AfterAgent` ends the prompt's turn. `/compress` fires `PreCompress` with
trigger `manual` (the hook is registered for that trigger only: Gemini fires it with
`auto` before every turn, compressed or not).

Gemini CLI shows its model every file of a folder it lists (`list_directory`) unless an
ignore file hides it: `hook install` adds `.freshline` to the workspace's `.geminiignore`,
which Gemini reads whatever its settings say (0.61 builds the file service its tools use
before it reads `context.fileFiltering.customIgnoreFilePaths`, so that setting hides
nothing from them), and freshline's own folder stays out of sight.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.interfaces.hook import payload
from freshline.interfaces.hook.protocol import Adapter, Call, Extra, Lost, ToolUse
from freshline.session.evidence import Moment
from freshline.session.transcripts.gemini_cli import GEMINI_CLI
from freshline.store import LedgerKind

EVENTS = {
    "BeforeAgent": Moment.PROMPT,  # the user sent a prompt (the first one opens the session)
    "BeforeTool": Moment.TOOL,  # a shell starts (its window opens)
    "AfterTool": Moment.TOOL,  # a tool ran (what it read and wrote: the read ledger)
    "AfterAgent": Moment.STOP,  # the answer to the prompt is done: its turn ends
    "PreCompress": Moment.COMPACT,  # /compress summarizes the conversation
    "SessionEnd": Moment.END,  # the session ended: freshline's session closes
}
TOOL_START = "BeforeTool"
COMPRESSED = {"manual": Lost.COMPACTED}  # PreCompress triggers that do compress
TOOLS = {
    "read_file": LedgerKind.READ,
    "write_file": LedgerKind.WRITE,
    "replace": LedgerKind.WRITE,
}
SHELLS = frozenset({"run_shell_command"})  # tools that name no file: their window is theirs
NO_LIMIT = 10_000_000  # none seen: the `hook` budget is the bound
HIDE_FRESHLINE = Extra(Path(".geminiignore"), ".freshline")  # out of Gemini's listings
REWIND = "Gemini CLI keeps this conversation's transcript: rewind it there with /rewind"


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    return payload.parse(text, EVENTS, tool_use, COMPRESSED, {TOOL_START})


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a BeforeTool or AfterTool payload; UsageError when it names none."""
    return payload.file_tool(data, TOOLS, "file_path", "absolute_path", shells=SHELLS)


ADAPTER = Adapter(
    name="gemini-cli",
    parse=parse,
    output=payload.output,
    encoding=Encoding.JSON_ASCII,
    output_limit=NO_LIMIT,
    transcript=GEMINI_CLI,
    project_dir_env="GEMINI_PROJECT_DIR",
    settings=Path(".gemini") / "settings.json",
    events=tuple(EVENTS),
    matchers={"BeforeAgent": "*", "BeforeTool": "|".join(SHELLS),
              "AfterTool": "|".join([*TOOLS, *SHELLS]), "AfterAgent": "*",
              "PreCompress": "manual", "SessionEnd": "*"},
    entry={"name": "freshline", "timeout": 60_000},
    rewind_hint=REWIND,
    extras=(HIDE_FRESHLINE,),
)
