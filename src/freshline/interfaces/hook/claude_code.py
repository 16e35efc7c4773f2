"""Claude Code's hooks (2.1), translated for the engine: the first hook adapter.

Claude Code runs the hook with one JSON object on stdin: `hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and per event `source` (SessionStart: startup, resume, clear,
compact), `prompt`, `tool_name`/`tool_input`/`tool_response` (PostToolUse). It reads
`{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}` from stdout and
gives the context to the model; over 10,000 characters it shows the model a 2 KB preview
instead (`[delivery] hook` is capped at 9,000 when the config loads). Its project folder
is `$CLAUDE_PROJECT_DIR`; its transcript is read with
`session.transcripts.claude_code.CLAUDE_CODE`.

The read ledger follows `Read` (a read) and `Write`, `Edit`, `MultiEdit`, `NotebookEdit`
(writes), by `file_path` (`notebook_path` for NotebookEdit), as PostToolUse reports them.

It posts UserPromptSubmit, PostToolUse and SessionEnd to the service's URL (`http` hooks,
the same JSON both ways), with a command standing in beside the prompt's; the URL carries
this user's secret, so the entries go to the project's `.claude/settings.local.json`,
which Claude Code keeps out of version control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.interfaces.hook import payload
from freshline.interfaces.hook.protocol import Adapter, Call, ToolUse
from freshline.session.evidence import Moment
from freshline.session.transcripts.claude_code import CLAUDE_CODE
from freshline.store import LedgerKind

EVENTS = {
    "SessionStart": Moment.START,  # a session starts, resumes, or was cleared/compacted
    "UserPromptSubmit": Moment.PROMPT,  # the user sent a prompt
    "PostToolUse": Moment.TOOL,  # a tool ran (what it read and wrote: the read ledger)
    "SessionEnd": Moment.END,  # the session ended: freshline's session closes
}
CONTEXT_LOST = frozenset({"clear", "compact"})  # SessionStart sources: the context is gone
TOOLS = {
    "Read": LedgerKind.READ,
    "Write": LedgerKind.WRITE,
    "Edit": LedgerKind.WRITE,
    "MultiEdit": LedgerKind.WRITE,
    "NotebookEdit": LedgerKind.WRITE,
}
MATCHER = "|".join(TOOLS)  # the PostToolUse matcher in .claude/settings.json
# Posted to the service's URL (Claude Code 2.1.63 and later): no process per event.
# SessionStart cannot be (Claude Code skips http hooks there): it stays a command, which
# also starts the service. A prompt must be answered even when the service is gone, so a
# command stands in beside its post; a tool's record or a session's end missed while the
# service is away costs no change told (a process on every tool call would cost more).
HTTP_EVENTS = ("UserPromptSubmit", "PostToolUse", "SessionEnd")
STAND_IN_EVENTS = ("UserPromptSubmit",)


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    return payload.parse(text, EVENTS, tool_use, CONTEXT_LOST)


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a PostToolUse payload; UsageError when it names none."""
    return payload.file_tool(data, TOOLS, "file_path", "notebook_path")


ADAPTER = Adapter(
    name="claude-code",
    parse=parse,
    output=payload.output,
    encoding=Encoding.JSON_ASCII,
    output_limit=10_000,
    transcript=CLAUDE_CODE,
    project_dir_env="CLAUDE_PROJECT_DIR",
    settings=Path(".claude") / "settings.json",
    events=tuple(EVENTS),
    matchers={"PostToolUse": MATCHER},
    http_events=HTTP_EVENTS,
    stand_in_events=STAND_IN_EVENTS,
    private_settings=Path(".claude") / "settings.local.json",
)
