"""Codex CLI's hooks (0.171), translated for the engine.

Codex runs hooks from `~/.codex/hooks.json` or `<project>/.codex/hooks.json` with Claude
Code's payload and output shapes (`payload.py`); timeouts are in seconds. Each hook's
additional context reaches the model as a `developer` message of its own. It runs only
hooks a person trusted (per hook, by the hash of its entry: `/hooks` in the Codex TUI),
and a project's hooks only in a trusted project (`[projects."<path>"] trust_level =
"trusted"` in `~/.codex/config.toml`); untrusted hooks silently do not run. Its transcript
is read with `session.transcripts.codex.CODEX`; it sets no project folder variable.

Output limit: context over 2,500 tokens, counted as 4 bytes each (9,017 bytes arrived
whole, 10,017 did not), is replaced by a head-and-tail excerpt the transcript marks as
truncated. 9,000 characters counted as ASCII-only JSON are never more bytes than that.

The read ledger follows `apply_patch` (Codex's one editing tool: the files its patch adds
or updates are writes); Codex reads files through the shell, which names no file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from freshline.context import Encoding
from freshline.interfaces.hook import payload
from freshline.interfaces.hook.protocol import Adapter, Call, ToolUse
from freshline.session.evidence import Moment, texts
from freshline.session.transcripts.codex import CODEX
from freshline.store import LedgerKind

EVENTS = {
    "SessionStart": Moment.START,  # a session starts or resumes
    "UserPromptSubmit": Moment.PROMPT,  # the user sent a prompt
    "PostToolUse": Moment.TOOL,  # a tool ran (the files a patch wrote: the read ledger)
    "SessionEnd": Moment.END,  # the thread ended: freshline's session closes
}
CONTEXT_LOST = frozenset({"clear", "compact"})  # SessionStart sources: the context is gone
PATCHED = re.compile(r"^\*\*\* (?:Add|Update) File: (.+)$", re.M)  # apply_patch's headers
TRUST = ("Codex runs only hooks you trust: open `codex` in {root} and trust freshline's "
         "hooks with /hooks (project hooks also need the project trusted: "
         "[projects.\"{root}\"] trust_level = \"trusted\" in ~/.codex/config.toml)")


def parse(text: str) -> Call:
    """Read the hook's JSON payload; UsageError when it is not one freshline reads."""
    return payload.parse(text, EVENTS, tool_use, CONTEXT_LOST)


def tool_use(data: dict[str, Any]) -> ToolUse:
    """The tool of a PostToolUse payload: the first file an `apply_patch` added or
    updated; UsageError when it names no tool."""
    _name, fields, failed = payload.tool_fields(data)
    found = (m.group(1).strip() for t in texts(fields) for m in PATCHED.finditer(t))
    path = next(found, "")
    return ToolUse(path, LedgerKind.WRITE if path and not failed else None)


ADAPTER = Adapter(
    name="codex",
    parse=parse,
    output=payload.output,
    encoding=Encoding.JSON_ASCII,
    output_limit=9_000,
    transcript=CODEX,
    project_dir_env=None,
    settings=Path(".codex") / "hooks.json",
    events=tuple(EVENTS),
    matchers={"PostToolUse": "*"},
    entry={"timeout": 60},
    how_to_trust=TRUST,
)
