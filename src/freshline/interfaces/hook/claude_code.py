"""Claude Code's hooks (2.1), translated for the engine: the first hook adapter.

Claude Code runs the hook with one JSON object on stdin: `hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and per event `source` (SessionStart: startup, resume, clear,
compact), `prompt`, `tool_name`/`tool_input`/`tool_use_id` (PreToolUse; PostToolUse adds
`tool_response`). `/compact` (and auto-compaction) fires no UserPromptSubmit: the
SessionStart with source `compact` after it says the context was summarized. It reads
`{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}` from stdout and
gives the context to the model; over 10,000 characters it shows the model a 2 KB preview
instead (`[delivery] hook` is capped at 9,000 when the config loads). Its project folder
is `$CLAUDE_PROJECT_DIR`; its transcript is read with
`session.transcripts.claude_code.CLAUDE_CODE`.

The read ledger follows `Read` (a read) and `Write`, `Edit`, `MultiEdit`, `NotebookEdit`
(writes), by `file_path` (`notebook_path` for NotebookEdit), as PostToolUse reports them.
`Bash` names no file: what changed in the project between its PreToolUse and its
PostToolUse is its write. `Stop` ends the prompt's turn (a rewind waits for it).

It posts every event but SessionStart to the service's URL (`http` hooks, the same JSON
both ways), with a command standing in beside each post; the URL carries this user's
secret, so the entries go to the project's `.claude/settings.local.json`, which Claude
Code keeps out of version control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.interfaces.hook import payload
from freshline.interfaces.hook.protocol import Adapter, Call, Lost, ToolUse
from freshline.session.evidence import Moment
from freshline.session.transcripts.claude_code import CLAUDE_CODE
from freshline.store import LedgerKind

EVENTS = {
    "SessionStart": Moment.START,  # a session starts, resumes, or was cleared/compacted
    "UserPromptSubmit": Moment.PROMPT,  # the user sent a prompt: its checkpoint
    "PreToolUse": Moment.TOOL,  # a shell starts (its window opens)
    "PostToolUse": Moment.TOOL,  # a tool ran (what it read and wrote: the read ledger)
    "Stop": Moment.STOP,  # the answer to the prompt is done: its turn ends
    "SessionEnd": Moment.END,  # the session ended: freshline's session closes
}
TOOL_START = "PreToolUse"
CONTEXT_LOST = {"clear": Lost.CLEARED, "compact": Lost.COMPACTED}  # SessionStart sources
TOOLS = {
    "Read": LedgerKind.READ,
    "Write": LedgerKind.WRITE,
    "Edit": LedgerKind.WRITE,
    "MultiEdit": LedgerKind.WRITE,
    "NotebookEdit": LedgerKind.WRITE,
}
SHELLS = frozenset({"Bash"})  # tools that name no file: their window is theirs
MATCHER = "|".join([*TOOLS, *SHELLS])  # the PostToolUse matcher in .claude/settings.json
REWIND = ("Claude Code keeps this conversation's transcript: rewind it there with /rewind "
          "(or Esc twice) and restore the conversation")
# Posted to the service's URL (Claude Code 2.1.63 and later): no Python process per
# event. SessionStart cannot be (Claude Code skips http hooks there): it stays a command,
# which also starts the service. Beside each post, a few shell builtins stand in for a
# service that is gone (`install.fallback_command`).
HTTP_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd")


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    return payload.parse(text, EVENTS, tool_use, CONTEXT_LOST, {TOOL_START})


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a PreToolUse or PostToolUse payload; UsageError when it names none."""
    return payload.file_tool(data, TOOLS, "file_path", "notebook_path", shells=SHELLS)


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
    matchers={"PreToolUse": "|".join(SHELLS), "PostToolUse": MATCHER},
    rewind_hint=REWIND,
    http_events=HTTP_EVENTS,
    private_settings=Path(".claude") / "settings.local.json",
)
