"""What Claude Code hands the hook, and how the hook was set up.

Claude Code runs the hook with one JSON object on stdin (`hook_event_name`, `session_id`,
`transcript_path`, `cwd`, and per event `source`, `prompt`, `tool_name`, …): `parse_payload`
reads the fields freshline uses. `HookOptions` are the command's `--workspace` and
`--project` with Claude's project folder (`$CLAUDE_PROJECT_DIR`). A Claude session's
freshline session is found by `external_id`, whatever the `cwd`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from freshline.errors import UsageError
from freshline.interfaces.hook_ledger import ToolUse, tool_use

AGENT = "claude-code"
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"


class HookEvent(StrEnum):
    """The Claude Code hook events freshline answers."""

    SESSION_START = "SessionStart"  # a session starts, resumes, or was cleared/compacted
    USER_PROMPT_SUBMIT = "UserPromptSubmit"  # the user sent a prompt
    POST_TOOL_USE = "PostToolUse"  # a tool ran (what it read and wrote: the read ledger)
    SESSION_END = "SessionEnd"  # the session ended: freshline's session closes


# The events whose output Claude Code gives the model as context before a request.
DELIVERING = frozenset({HookEvent.SESSION_START, HookEvent.USER_PROMPT_SUBMIT})
# SessionStart sources after which the agent no longer holds the manifest.
CONTEXT_LOST = frozenset({"clear", "compact"})


@dataclass(frozen=True)
class HookInput:
    """The fields of Claude Code's hook payload that freshline uses."""

    event: HookEvent
    session_id: str
    cwd: Path
    source: str | None = None  # SessionStart only: startup, resume, clear or compact
    transcript: Path | None = None  # the session's transcript (JSON lines), if named
    tool: ToolUse | None = None  # PostToolUse only: the tool that ran, on which file


@dataclass(frozen=True)
class HookOptions:
    """How the hook was set up: `--workspace`, `--project`, `$CLAUDE_PROJECT_DIR`."""

    workspace: Path | None = None
    project: str | None = None
    project_dir: Path | None = None

    @classmethod
    def from_env(cls, workspace: Path | None = None, project: str | None = None) -> HookOptions:
        """The options given, with Claude's project folder from the environment."""
        folder = os.environ.get(PROJECT_DIR_ENV)
        return cls(workspace, project, Path(folder) if folder and os.path.isabs(folder) else None)


def parse_payload(text: str) -> HookInput:
    """Read the hook's JSON payload; raises UsageError when it is not one freshline reads."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"hook payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("hook payload is not a JSON object")
    try:
        event = HookEvent(str(data.get("hook_event_name")))
    except ValueError:
        raise UsageError(f"unsupported hook event {data.get('hook_event_name')!r}") from None
    session_id, cwd = data.get("session_id"), data.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        raise UsageError("hook payload has no session_id")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise UsageError("hook payload has no absolute cwd")
    transcript = data.get("transcript_path")
    source = data.get("source")
    return HookInput(
        event,
        session_id,
        Path(cwd),
        source if isinstance(source, str) else None,
        Path(transcript) if isinstance(transcript, str) and os.path.isabs(transcript) else None,
        tool_use(data) if event is HookEvent.POST_TOOL_USE else None,
    )


def external_id(claude_session: str) -> str:
    """The external id of the freshline session pinned to a Claude Code session."""
    return f"{AGENT}:{claude_session}"


def starts(payload: HookInput, options: HookOptions) -> list[Path]:
    """Where to look for the workspace and the project, most stable first: Claude's
    project folder does not follow the agent's `cd`."""
    return [p for p in (options.project_dir, payload.cwd) if p is not None]
