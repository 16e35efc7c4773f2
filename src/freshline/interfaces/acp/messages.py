"""The few ACP messages the proxy reads or rewrites, as pure functions of their JSON.

Everything else passes through as it came. The proxy works on the raw JSON-RPC params
(dicts), not on the SDK's models: a model drops the fields it does not know, and the
proxy must hand every field of a newer client or agent on unchanged. The SDK's schema
models are used only to build the one content block freshline adds and to read tool
calls.

- `with_context` puts freshline's text block first in a `session/prompt`'s prompt. The
  block is annotated for the assistant (`audience: ["assistant"]`): the user never wrote
  it, and a client that honours annotations never shows it as theirs.
- `acknowledges` is the acknowledgement rule: the agent took a prompt when it streamed
  output for it, or answered it with any stop reason but a refusal or a cancellation.
- `without_context` keeps the user's transcript the user's own text: an agent that
  replays a loaded session (`user_message_chunk`) replays freshline's block too, and the
  proxy leaves it out.
- `with_mcp_server` gives the agent freshline's MCP server with a session (its paging
  tools are what a rolled-up block names), unless the client already gave one by that name.
- `ToolReads` follows tool calls the agent reports with `kind: "read"` and file
  locations: once one completes, its files were read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JsonObject = dict[str, Any]


class Method(StrEnum):
    """The ACP methods the proxy looks into (every other method only passes through)."""

    SESSION_NEW = "session/new"  # client → agent: a new session (its id is in the answer)
    SESSION_LOAD = "session/load"  # client → agent: reopen a session, replaying it
    SESSION_RESUME = "session/resume"  # client → agent: reopen a session, no replay
    SESSION_FORK = "session/fork"  # client → agent: a new session from an old one
    SESSION_CLOSE = "session/close"  # client → agent: the session ends
    SESSION_PROMPT = "session/prompt"  # client → agent: a user turn
    SESSION_CANCEL = "session/cancel"  # client → agent: stop the prompt running
    SESSION_UPDATE = "session/update"  # agent → client: streamed output and state
    READ_TEXT_FILE = "fs/read_text_file"  # agent → client: read a file
    WRITE_TEXT_FILE = "fs/write_text_file"  # agent → client: write a file


# Methods whose answer names a session freshline opens (or reopens) a session for.
OPENS_NEW = frozenset({Method.SESSION_NEW, Method.SESSION_FORK})
OPENS_AGAIN = frozenset({Method.SESSION_LOAD, Method.SESSION_RESUME})

# `session/update` kinds that show the agent working on the prompt. Others (available
# commands, mode, config, title, usage) an agent may send at any time, prompt or not.
_OUTPUT = frozenset({
    "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
    "plan", "plan_update",
})
_USER_CHUNK = "user_message_chunk"

# Stop reasons that do not show the prompt was taken (the agent declined or was stopped).
_NOT_TAKEN = frozenset({"refusal", "cancelled"})

# One or more freshline blocks at the start of a text. Workspace strings inside a block are
# escaped (`context/wire.py`), so the first closing tag of its name is its end.
_BLOCKS = re.compile(
    r"\A\s*(?:<(project_context(?:_updates)?)(?:\s[^>]*)?>.*?</\1>\s*)+", re.DOTALL
)


def context_block(text: str) -> JsonObject:
    """The content block freshline adds to a prompt: `text`, meant for the assistant."""
    return {"type": "text", "text": text, "annotations": {"audience": ["assistant"]}}


def with_context(params: Mapping[str, Any], text: str) -> JsonObject:
    """A `session/prompt`'s params with freshline's block first in its prompt (the rest,
    the user's own blocks included, as it was)."""
    prompt = params.get("prompt")
    blocks = list(prompt) if isinstance(prompt, list) else []
    return {**params, "prompt": [context_block(text), *blocks]}


def prompt_text(params: Any) -> str:
    """The user's words in a `session/prompt`: its text blocks, one after another."""
    prompt = params.get("prompt") if isinstance(params, Mapping) else None
    blocks = prompt if isinstance(prompt, list) else []
    return "\n".join(b["text"] for b in blocks
                     if isinstance(b, Mapping) and b.get("type") == "text"
                     and isinstance(b.get("text"), str))


def stdio_server(name: str, words: Sequence[str], env: Mapping[str, str]) -> JsonObject:
    """An ACP `McpServerStdio`: the command `words` (its first an absolute path) run with
    `env` set."""
    return {"name": name, "command": words[0], "args": list(words[1:]),
            "env": [{"name": key, "value": value} for key, value in env.items()]}


def with_mcp_server(params: Any, server: Mapping[str, Any]) -> Any:
    """A session's params (`session/new`, `load`, `resume`, `fork`) with `server` last in
    its `mcpServers`; as they were when a server of that name is there already (names
    are unique in a session) or they are not an object."""
    if not isinstance(params, Mapping):
        return params
    given = params.get("mcpServers")
    servers = list(given) if isinstance(given, list) else []
    if any(isinstance(s, Mapping) and s.get("name") == server["name"] for s in servers):
        return params
    return {**params, "mcpServers": [*servers, dict(server)]}


def session_of(params: Any) -> str | None:
    """The `sessionId` of a request's or notification's params, if it names one."""
    if isinstance(params, Mapping):
        value = params.get("sessionId")
        if isinstance(value, str) and value:
            return value
    return None


def update_of(params: Any) -> JsonObject | None:
    """The `update` object of a `session/update`'s params."""
    update = params.get("update") if isinstance(params, Mapping) else None
    return update if isinstance(update, dict) else None


def is_output(update: Mapping[str, Any]) -> bool:
    """Whether a `session/update` shows the agent answering the prompt."""
    return update.get("sessionUpdate") in _OUTPUT


def stop_reason(result: Any) -> str | None:
    """The `stopReason` of a `session/prompt` answer (None when it has none)."""
    value = result.get("stopReason") if isinstance(result, Mapping) else None
    return value if isinstance(value, str) else None


def acknowledges(stop: str | None) -> bool:
    """Whether an answer with this stop reason, given before any output, shows the agent
    took the prompt: any stop reason but a refusal or a cancellation (none: no answer)."""
    return stop is not None and stop not in _NOT_TAKEN


def strip_blocks(text: str) -> str:
    """`text` without the freshline blocks it starts with (as it was when it has none)."""
    found = _BLOCKS.match(text)
    return text[found.end():] if found else text


def without_context(params: Mapping[str, Any]) -> JsonObject | None:
    """A `session/update`'s params with freshline's blocks taken out of a replayed user
    message; None when nothing of the user's is left (the update is not passed on).
    Anything else is returned as it was."""
    update = update_of(params)
    if update is None or update.get("sessionUpdate") != _USER_CHUNK:
        return dict(params)
    content = update.get("content")
    if not isinstance(content, dict) or content.get("type") != "text":
        return dict(params)
    text = content.get("text")
    if not isinstance(text, str):
        return dict(params)
    rest = strip_blocks(text)
    if rest == text:
        return dict(params)
    if not rest:
        return None
    return {**params, "update": {**update, "content": {**content, "text": rest}}}


@dataclass
class _Call:
    kind: str | None = None
    paths: list[str] = field(default_factory=list)


@dataclass
class ToolReads:
    """The tool calls of one session, followed through their updates: which files a
    completed `read` call read (a call's kind and locations may come in any update)."""

    calls: dict[str, _Call] = field(default_factory=dict)

    def see(self, update: Mapping[str, Any]) -> list[str]:
        """Follow one `tool_call`/`tool_call_update`; the absolute paths it shows were
        read (a `read` call that just completed), else []."""
        if update.get("sessionUpdate") not in ("tool_call", "tool_call_update"):
            return []
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            return []
        call = self.calls.setdefault(call_id, _Call())
        kind = update.get("kind")
        if isinstance(kind, str):
            call.kind = kind
        locations = update.get("locations")
        if isinstance(locations, list):
            call.paths = [p for p in (_location(x) for x in locations) if p]
        status = update.get("status")
        if status in ("completed", "failed"):
            del self.calls[call_id]
            if status == "completed" and call.kind == "read":
                return call.paths
        return []


def _location(value: Any) -> str | None:
    """A tool call location's path (`{"path": …, "line"?: …}`), None if it is not one."""
    path = value.get("path") if isinstance(value, Mapping) else None
    return path if isinstance(path, str) and path else None


def whole_file(params: Any) -> tuple[Any, int | None, int | None]:
    """An `fs/read_text_file` request asking for the whole file, and the `line` and
    `limit` it asked for: the proxy scans a file whole for secrets (a range cut out of a
    key block does not look like one) and cuts the range itself."""
    if not isinstance(params, Mapping):
        return params, None, None
    line, limit = params.get("line"), params.get("limit")
    line = line if isinstance(line, int) and not isinstance(line, bool) else None
    limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    rest = {k: v for k, v in params.items() if k not in ("line", "limit")}
    return rest, line, limit


def line_range(text: str, line: int | None, limit: int | None) -> str:
    """Lines `line` (1-based; None: the first) onwards of `text`, at most `limit` of them,
    as an ACP client answers a ranged read."""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = None if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])
