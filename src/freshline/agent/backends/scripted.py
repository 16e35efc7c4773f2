"""The `scripted:FILE` backend: plays a JSON script, so tests and the demo drive real tool use
offline.

Format::

    {"turns": [
        [{"say": "Let me look."},
         {"tool": "read", "args": {"path": "notes/a.md"}},
         {"say": "Fixing the typo."},
         {"tool": "edit", "args": {"path": "notes/a.md", "old": "teh", "new": "the"}},
         {"say": "Done."}],
        [{"fail": "rate_limit"}],
        [{"say": "Second try worked."}]
    ]}

Each human message plays the next turn: the one after the human messages already in the
conversation, so a `freshline send` (a new process each time) goes on where the
conversation is; or, when later, the one after the turn this backend played last (a failed
turn records nothing, yet the chat's next message plays the next turn). A turn is a list
of steps, each an object with one key: `say` (text), `tool` (a tool name, with optional
`args`), or `fail` (raise the backend error of that kind: auth, rate_limit, network,
malformed). Steps group into model replies: the text said before a run of tool calls goes
out with those calls; their results come back; the next reply starts after them (so a
`fail` after a tool call fails the next model call).
When the turns run out, the backend says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshline.agent.backends.base import Backend
from freshline.agent.errors import (
    BackendAuthError,
    BackendError,
    BackendMalformed,
    BackendRateLimited,
    BackendUnreachable,
)
from freshline.agent.messages import (
    AssistantReply,
    Message,
    Role,
    TextCallback,
    ToolCall,
    ToolSpec,
)
from freshline.errors import UsageError

FAILURES: dict[str, type[BackendError]] = {
    "auth": BackendAuthError,
    "rate_limit": BackendRateLimited,
    "network": BackendUnreachable,
    "malformed": BackendMalformed,
}


@dataclass(frozen=True)
class Step:
    """One step of a scripted turn: exactly one of say, tool or fail is set."""

    say: str | None = None
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    fail: str | None = None


def _parse_step(raw: object, where: str) -> Step:
    if not isinstance(raw, dict):
        raise UsageError(f"{where}: a step must be an object")
    kinds = [key for key in ("say", "tool", "fail") if key in raw]
    if len(kinds) != 1 or set(raw) - {"say", "tool", "fail", "args"}:
        raise UsageError(f"{where}: a step needs exactly one of say, tool, fail (and tool args)")
    value, args = raw[kinds[0]], raw.get("args", {})
    if not isinstance(value, str) or not isinstance(args, dict):
        raise UsageError(f"{where}: {kinds[0]} must be a string and args an object")
    if kinds[0] == "fail" and value not in FAILURES:
        raise UsageError(f"{where}: fail must be one of {', '.join(FAILURES)}")
    if "args" in raw and kinds[0] != "tool":
        raise UsageError(f"{where}: only a tool step takes args")
    return Step(**{kinds[0]: value}, args=args)


def load_script(path: Path) -> list[list[Step]]:
    """Read and validate a script file; a bad file is a UsageError naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"scripted: cannot read {path}: {exc.strerror}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"scripted: {path} is not valid JSON: {exc}") from exc
    turns = data.get("turns") if isinstance(data, dict) else None
    if not isinstance(turns, list) or not all(isinstance(turn, list) for turn in turns):
        raise UsageError(f'scripted: {path} must hold {{"turns": [[step, ...], ...]}}')
    return [
        [_parse_step(step, f"scripted: {path} turn {t + 1} step {s + 1}")
         for s, step in enumerate(turn)]
        for t, turn in enumerate(turns)
    ]


class ScriptedBackend(Backend):
    """Plays a script one turn per human message, one reply per group of steps."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"scripted:{self.path}"
        self.turns = load_script(self.path)
        self._turn = -1
        self._pos = 0
        self._calls = 0

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_text: TextCallback | None = None,
    ) -> AssistantReply:
        """Play the next group of steps of the current turn (a new turn after a user message:
        see the module docstring)."""
        if not messages or messages[-1].role is not Role.TOOL:
            before = sum(1 for m in messages if m.role is Role.USER) - 1
            self._turn, self._pos, self._calls = max(self._turn + 1, before), 0, 0
        if self._turn >= len(self.turns):
            reply = AssistantReply(
                f"scripted: no more turns in {self.path.name} (played {len(self.turns)})"
            )
        else:
            reply = self._next_reply(self.turns[self._turn])
        if on_text is not None and reply.text:
            on_text(reply.text)
        return reply

    def _next_reply(self, steps: list[Step]) -> AssistantReply:
        said: list[str] = []
        calls: list[ToolCall] = []
        while self._pos < len(steps):
            step = steps[self._pos]
            if step.tool is None and calls:
                break  # this step belongs to the reply after the tool results
            self._pos += 1
            if step.fail is not None:
                raise FAILURES[step.fail](f"scripted: step fails on purpose ({step.fail})")
            if step.say is not None:
                said.append(step.say)
            else:
                self._calls += 1
                call_id = f"call_{self._turn + 1}_{self._calls}"
                calls.append(ToolCall(call_id, step.tool or "", dict(step.args)))
        return AssistantReply("\n".join(said), tuple(calls))
