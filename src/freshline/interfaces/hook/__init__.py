"""Hooks: freshline inside agents that run commands on their own events.

    process.py      the hook as a process: read the payload, answer, print, follow up
    core.py         `answer()`: the whole behaviour, one in-process call, every agent
    protocol.py     the adapter contract (`Adapter`, `Call`, `HookOptions`)
    payload.py      the payload and output shape Claude Code set and others follow
    claude_code.py  Claude Code's adapter: events, payload, output, tools, limits
    gemini_cli.py   Gemini CLI's adapter (the manifest with the first prompt, not at start)
    codex.py        Codex CLI's adapter (a 9,000 limit; hooks run once a person trusts them)
    install.py      `hook install`: the hook merged into an agent's settings file

A new agent is one adapter module here (its events mapped to engine moments, its payload,
its output JSON, its output limit, its settings file) named in `AGENTS`, plus its
transcript format in `session/transcripts/` when its transcript records hook context.
Agents are imported only when named: the hook runs on every prompt.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up cost)
if TYPE_CHECKING:
    from freshline.interfaces.hook.protocol import Adapter
    from freshline.store import SessionRecord

AGENTS = {  # name → its adapter
    "claude-code": "freshline.interfaces.hook.claude_code",
    "gemini-cli": "freshline.interfaces.hook.gemini_cli",
    "codex": "freshline.interfaces.hook.codex",
}


def adapter(name: str) -> Adapter:
    """The hook adapter of agent `name` (UsageError when there is none)."""
    module = AGENTS.get(name)
    if module is None:
        from freshline.errors import UsageError

        known = ", ".join(sorted(AGENTS))
        raise UsageError(f"no hook for agent '{name}' (there are hooks for: {known})")
    found: Adapter = importlib.import_module(module).ADAPTER
    return found


def transcript_hint(s: SessionRecord) -> str:
    """How a person rewinds the transcript of another agent's session: in that agent
    (its adapter's `rewind_hint`), or through the ACP client that runs it."""
    agent = (s.external_id or "").partition(":")[0]
    if agent in AGENTS:
        return adapter(agent).rewind_hint
    return "its agent keeps it: rewind it there (through the client that runs it)"
