"""The payload and output shape Claude Code's hooks set and Gemini CLI's and Codex CLI's
follow: one JSON object on stdin with `hook_event_name`, `session_id`, `transcript_path`,
`cwd` (and per event `source`, `prompt`, `tool_name`/`tool_input`/`tool_response`), and
`{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}` on stdout.

Each adapter brings what differs: its event names, the SessionStart sources after which
the agent lost its context, its tool-start event, its shell tools (a shell names no file:
what changed while it ran is its), and how a tool's payload names the files it read or
wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from freshline.errors import UsageError
from freshline.interfaces.hook.protocol import Call, Lost, Phase, ToolUse
from freshline.session.evidence import Moment
from freshline.store import LedgerKind

_LOSING = (Moment.START, Moment.COMPACT)  # the moments whose source or trigger may say the
#                                          agent lost its context
ToolReader = Callable[[dict[str, Any]], ToolUse]  # a tool event's payload → its tool


def parse(
    text: str,
    events: Mapping[str, Moment],
    tool: ToolReader,
    lost: Mapping[str, Lost] | None = None,
    starts: Collection[str] = (),
) -> Call:
    """Read a hook's JSON payload; UsageError when it is not one freshline reads.
    `events`: the client's event names freshline answers; `lost`: the START sources (and
    COMPACT triggers) after which the agent's context is gone, and how; `starts`: the
    events a tool's start is."""
    data = _object(text)
    event = data.get("hook_event_name")
    if not isinstance(event, str) or event not in events:
        raise UsageError(f"unsupported hook event {event!r}")
    session_id, cwd = data.get("session_id"), data.get("cwd")
    if not isinstance(session_id, str) or not session_id:
        raise UsageError("hook payload has no session_id")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise UsageError("hook payload has no absolute cwd")
    transcript, prompt = data.get("transcript_path"), data.get("prompt")
    moment = events[event]
    why = data.get("source") if moment is Moment.START else data.get("trigger")
    used = tool(data) if moment is Moment.TOOL else None
    if used is not None and event in starts:
        used = replace(used, phase=Phase.START)
    return Call(
        event=event,
        moment=moment,
        agent_session=session_id,
        cwd=Path(cwd),
        transcript=Path(transcript) if isinstance(transcript, str)
        and os.path.isabs(transcript) else None,
        lost=(lost or {}).get(str(why)) if moment in _LOSING else None,
        tool=used,
        prompt=prompt if moment is Moment.PROMPT and isinstance(prompt, str) else None,
    )


def _object(text: str) -> dict[str, Any]:
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"hook payload is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError("hook payload is not a JSON object")
    return data


def tool_fields(data: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """A tool event's tool name, its input (a JSON object, else {}) and whether it
    failed (its response carries an `error`); UsageError when it names no tool."""
    name = data.get("tool_name")
    if not isinstance(name, str) or not name:
        raise UsageError(f"{data.get('hook_event_name')} payload has no tool_name")
    given = data.get("tool_input")
    response = data.get("tool_response")
    failed = isinstance(response, dict) and bool(response.get("error"))
    return name, given if isinstance(given, dict) else {}, failed


def call_key(data: dict[str, Any]) -> str:
    """What ties a tool's end to its start: the call's id, else (a client that gives
    none) its name and input."""
    given = data.get("tool_use_id")
    if isinstance(given, str) and given:
        return given
    same = json.dumps([data.get("tool_name"), data.get("tool_input")], sort_keys=True)
    return hashlib.sha1(same.encode()).hexdigest()[:16]


def file_tool(
    data: dict[str, Any], tools: Mapping[str, LedgerKind], *keys: str,
    shells: Collection[str] = (),
) -> ToolUse:
    """A tool event's tool: a shell (one of `shells`) runs in a window of its own;
    another names its file under one of `keys` (the first given) and does to it what
    `tools` says, if it is one of them and did not fail."""
    name, fields, failed = tool_fields(data)
    if name in shells:
        return ToolUse((), None, window=call_key(data))
    path = first_string(fields, *keys)
    return ToolUse((path,) if path else (), tools.get(name) if path and not failed else None)


def first_string(fields: dict[str, Any], *keys: str) -> str:
    """The first of `keys` whose value is a non-empty string ("" when none is)."""
    for key in keys:
        value = fields.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def output(call: Call, blocks: str) -> str:
    """The line the hook prints: the blocks as additional context (ASCII-only JSON, so no
    locale can garble it)."""
    context = {"hookEventName": call.event, "additionalContext": blocks}
    return json.dumps({"hookSpecificOutput": context}) + "\n"
