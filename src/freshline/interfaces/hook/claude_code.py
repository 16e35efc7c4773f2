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
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.errors import UsageError
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


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"hook payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("hook payload is not a JSON object")
    event = data.get("hook_event_name")
    if not isinstance(event, str) or event not in EVENTS:
        raise UsageError(f"unsupported hook event {event!r}")
    session_id, cwd = data.get("session_id"), data.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        raise UsageError("hook payload has no session_id")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise UsageError("hook payload has no absolute cwd")
    transcript = data.get("transcript_path")
    moment = EVENTS[event]
    return Call(
        event=event,
        moment=moment,
        agent_session=session_id,
        cwd=Path(cwd),
        transcript=Path(transcript) if isinstance(transcript, str)
        and os.path.isabs(transcript) else None,
        lost_context=moment is Moment.START and data.get("source") in CONTEXT_LOST,
        tool=tool_use(data) if moment is Moment.TOOL else None,
    )


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a PostToolUse payload; UsageError when it names none."""
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise UsageError("PostToolUse payload has no tool_name")
    given = data.get("tool_input")
    fields = given if isinstance(given, dict) else {}
    path = fields.get("file_path") or fields.get("notebook_path")
    path = path if isinstance(path, str) else ""
    response = data.get("tool_response")
    failed = isinstance(response, dict) and bool(response.get("error"))
    return ToolUse(path, TOOLS.get(name) if path and not failed else None)


def output(call: Call, blocks: str) -> str:
    """The line the hook prints: the blocks as additional context (ASCII-only JSON, so no
    locale can garble it)."""
    context = {"hookEventName": call.event, "additionalContext": blocks}
    return json.dumps({"hookSpecificOutput": context}) + "\n"


ADAPTER = Adapter(
    name="claude-code",
    parse=parse,
    output=output,
    encoding=Encoding.JSON_ASCII,
    output_limit=10_000,
    transcript=CLAUDE_CODE,
    project_dir_env="CLAUDE_PROJECT_DIR",
    settings=Path(".claude") / "settings.json",
    events=tuple(EVENTS),
    matchers={"PostToolUse": MATCHER},
)
